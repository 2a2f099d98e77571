"""Tables: rows of categorical and numeric columns with a label column (CSV or TSV with a header).

`read` (the table input edge: header, column types, chunks of rows, missing values, errors
naming the row and column), `stats` (the state: per class, per column counts of values, and
Gaussian statistics merged exactly by Chan-Golub-LeVeque), `estimate` (probabilities derived
from the statistics in log space: categorical NB, Gaussian NB, shared and per-class covariances,
the linear view, the density) and `model` (a table model: columns, statistics, decision;
training a file a chunk at a time, scoring).
"""
from __future__ import annotations

import os


def is_table_run(kw: dict) -> bool:
    """Whether a train or cv run is about a table: when --variant is table, categorical or
    gaussian, when --columns, --categorical, --numeric or --covariance is given, or when every
    source is a CSV/TSV file whose header has the label column and no text column (a text line
    file needs one). (Here, not in nbtext.tablecli: asking costs no import of the table modules,
    1.7 ms of every text train's start.)"""
    from ..settings import TABLE_VARIANTS

    if kw.get("variant") in TABLE_VARIANTS or any(kw.get(k) for k in ("columns", "categorical", "numeric", "covariance")):
        return True
    sources = kw.get("sources") or ()
    if kw.get("label_paths") or not sources:
        return False
    return all(_looks_like_table(s, kw) for s in sources)


def _looks_like_table(path: str, kw: dict) -> bool:
    fmt = kw.get("line_format")
    name = path[:-3] if path.endswith(".gz") else path
    ext = os.path.splitext(name)[1].lower()
    if path == "-" or not os.path.isfile(path) or (fmt not in ("csv", "tsv") and ext not in (".csv", ".tsv", ".tab")):
        return False
    # Its header record alone (a block of one line, longer only while a quote is open). A header
    # that cannot be read is reported: the text reader fails on it as well, and falling back to
    # it said only "no documents found" (for a binary .csv), or named the wrong column.
    from .read import raw_blocks

    first = next((rows for _, rows in raw_blocks(path, fmt, 1) if rows), None)
    if first is None:
        return False
    header = [c.strip() for c in first[0]]
    return kw["label_column"] in header and kw["text_column"] not in header and len(header) >= 2
