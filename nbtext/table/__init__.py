"""Tables: rows of categorical and numeric columns with a label column (CSV or TSV with a header).

`read` (the table input edge: header, column types, chunks of rows, missing values, errors
naming the row and column), `stats` (the state: per class, per column counts of values, and
Gaussian statistics merged exactly by Chan-Golub-LeVeque), `estimate` (probabilities derived
from the statistics in log space: categorical NB, Gaussian NB, shared and per-class covariances,
the linear view, the density) and `model` (a table model: columns, statistics, decision;
training a file a chunk at a time, scoring).
"""
