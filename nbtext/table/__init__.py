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


def is_table_run(sources, asked: bool) -> bool:
    """Whether a train or cv run is about a table: when an option ``asked`` for one (--variant
    table, categorical or gaussian, --columns, --categorical, --numeric or --covariance), or when
    every source (an nbtext.options.Sources: no --label pairs) is a CSV/TSV file whose header has
    the label column and no text column (a text line file needs one). (Here, not in
    nbtext.tablecli: asking costs a text train no import of the table modules.)"""
    if asked:
        return True
    if sources.labelled or not sources.paths:
        return False
    return all(_looks_like_table(s, sources.line) for s in sources.paths)


def _looks_like_table(path: str, line) -> bool:
    fmt = line.format
    name = path[:-3] if path.endswith(".gz") else path
    ext = os.path.splitext(name)[1].lower()
    if path == "-" or not os.path.isfile(path) or (fmt not in ("csv", "tsv") and ext not in (".csv", ".tsv", ".tab")):
        return False
    # Its header record alone (a block of one line, longer only while a quote is open). A header
    # that cannot be read is reported: the text reader fails on it as well, and falling back to
    # it said only "no documents found" (for a binary .csv), or named the wrong column.
    from .read import raw_blocks

    first = next((rows for _, rows in raw_blocks(path, fmt, _LOOK) if rows), None)
    if first is None:
        return False
    header = [c.strip() for c in first[0]]
    table = line.label_column in header and line.text_column not in header and len(header) >= 2
    if table:
        _refuse_free_text(path, header, first[1:], line.label_column)
    return table


_LOOK = 256  # (rows read to tell a table from a text line file whose text column is not named)


def _refuse_free_text(path: str, header: list[str], rows: list[list[str]], label: str) -> None:
    """A table is taken for granted from its header alone (the label column, no text column),
    so a CSV of labelled messages whose text column has another name became a table model, each
    message one category (accuracy 0 on new ones): refused when a column's values in the first
    rows are mostly distinct and mostly of three words or more, naming the options that say
    which was meant."""
    for j, name in enumerate(header):
        if name == label:
            continue
        cells = [r[j] for r in rows if j < len(r) and r[j].strip()]
        wordy = sum(len(c.split(None, 2)) == 3 for c in cells)
        if len(cells) >= 2 and 2 * len(set(cells)) > len(cells) and 2 * wordy > len(cells):
            from ..errors import NbtextError

            raise NbtextError(
                f"{path}: column {name!r} looks like free text ({len(set(cells))} of the first {len(cells)} "
                f"values distinct, most of several words), which a table model reads as one category per "
                f"value: for a text model, give --text-column {name}; for a table anyway, --variant table")
