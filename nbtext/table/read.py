"""The table input edge: a CSV or TSV file with a header row becomes chunks of typed columns.

A table is read a chunk of rows at a time (``TableOptions.chunk_rows``), so a file larger than
memory trains in bounded memory. Column types: given (``categorical``, ``numeric``, or the
variant: categorical or gaussian makes every feature column that kind), else a column whose
every value parses as a finite number is numeric: training types the columns by the first block
of rows and checks the rest (nbtext.table.model.train_table reads the file again, typed by
infer_kinds over all of it, when a column turns out otherwise; stdin is spooled to a temporary
file so that it can be read twice). A cell that is empty, ``NA`` or ``?`` is missing, and
skipped in training and scoring. Every bad table is an NbtextError naming the file, the line
(FILE:LINE, as text line files are named) and the column.
"""
from __future__ import annotations

import io
import os
from collections.abc import Iterator

import numpy as np

from ..errors import BAD_NAME_CHAR, NbtextError
from ..read import EXTENSIONS, MAX_DOCUMENT_BYTES, _Input, _label_chars
from ..record import Record
from ..settings import MISSING_VALUES

CATEGORICAL, NUMERIC = "categorical", "numeric"
_MISSING = frozenset(MISSING_VALUES)


class Retype(Exception):
    """A column typed by the first block of rows turned out otherwise: train again, typed by all."""


class TableOptions(Record):
    """How to read a table: its format (None: by extension, .tsv/.tab is TSV, else CSV), the
    label column, the feature columns (None: every other column) and forced column types."""

    format: str | None = None
    label_column: str = "label"
    columns: tuple | None = None
    categorical: tuple = ()
    numeric: tuple = ()
    chunk_rows: int = 1 << 13  # (65,536 rows took 168 MiB peak to 8,192 rows' 53, and no less time)

    def __post_init__(self):
        both = sorted(set(self.categorical) & set(self.numeric))
        if both:
            raise NbtextError(f"column {both[0]!r} is given as both categorical and numeric")
        if not isinstance(self.chunk_rows, int) or self.chunk_rows < 1:
            raise NbtextError(f"chunk_rows must be a whole number of at least 1, got {self.chunk_rows!r}")


def split_names(value: str | None) -> tuple:
    """COL,COL,... as a tuple of names (None or empty: none)."""
    return tuple(n.strip() for n in value.split(",") if n.strip()) if value else ()


def table_format(path: str, fmt: str | None) -> str:
    if fmt in ("csv", "tsv"):
        return fmt
    name = path[:-3] if path.endswith(".gz") else path
    return "tsv" if EXTENSIONS.get(os.path.splitext(name)[1].lower()) == "tsv" else "csv"


MAX_QUOTED = 1 << 20  # characters a quoted CSV field may run on past the end of a block of lines
# A table's width, and the characters of a block of rows: a cell is a Python string (about 60
# bytes), and the statistics cost as much again per column, so a block of rows of a gzip bomb
# of a million columns would hold billions of them.
MAX_COLUMNS = 100_000
BLOCK_CHARS = 1 << 22


def _capped_lines(text, path: str, sep: str, n: int = 0) -> Iterator[str]:
    """The lines of a text stream, each at most MAX_DOCUMENT_BYTES characters (a file with no
    line break was read whole into one line, its size unchecked) and MAX_COLUMNS cells (a
    separator inside quotes counts too: no table has a field of 100,000 of them). (``n``: lines
    before the stream, as numbered in errors.)"""
    while True:
        line = text.readline(MAX_DOCUMENT_BYTES)
        if not line:
            return
        n += 1
        if len(line) == MAX_DOCUMENT_BYTES and not line.endswith(("\n", "\r")):
            raise NbtextError(f"{path}:{n}: a line longer than {MAX_DOCUMENT_BYTES:,} characters: not a table")
        if line.count(sep) >= MAX_COLUMNS:
            raise NbtextError(f"{path}:{n}: more than {MAX_COLUMNS:,} columns: not a table nbtext reads")
        yield line


class _Bounded(io.RawIOBase):
    """The first ``left`` bytes of a binary stream."""

    def __init__(self, stream, left: int):
        self._stream, self._left = stream, left

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self._stream.read(min(len(b), self._left)) if self._left > 0 else b""
        self._left -= len(data)
        b[:len(data)] = data
        return len(data)


def _lines_up_to(source: Iterator[str], size: int) -> list[str]:
    """The next lines of source: ``size`` of them, or fewer once they hold BLOCK_CHARS."""
    chunk, chars = [], 0
    for line in source:
        chunk.append(line)
        chars += len(line)
        if len(chunk) >= size or chars >= BLOCK_CHARS:
            break
    return chunk


def raw_blocks(path: str, fmt: str | None, size: int = 1 << 16, stdin=None, start: int = 0,
               length: int | None = None, before: int = 0) -> Iterator[tuple[list[int], list[list[str]]]]:
    """(line numbers, records) of a CSV/TSV file, ``size`` lines at a time (fewer when they
    hold BLOCK_CHARS characters), blank lines left out; the header is the first record. Text is
    UTF-8 (a byte-order mark dropped, bytes that are
    not UTF-8 replaced). Lines without a quote are split at the separator (each is one record);
    a block with quotes goes through the csv module, extended to the line that closes a quoted
    field left open at its end. A byte range of the file (a cluster's partition): ``length``
    bytes from ``start``, a line's start, with ``before`` lines before it (its first record is
    then no header)."""
    import csv

    with _Input(path, stdin, offset=start) as inp:
        stream = inp.stream if length is None else io.BufferedReader(_Bounded(inp.stream, length), 1 << 16)
        text = io.TextIOWrapper(stream, encoding="utf-8" if start else "utf-8-sig", errors="replace", newline="")
        tsv = table_format(path, fmt) == "tsv"
        sep = "\t" if tsv else ","
        n = before
        source = _capped_lines(text, path, sep, before)
        try:
            while True:
                chunk = _lines_up_to(source, size)
                if not chunk:
                    return
                joined = "" if tsv else "".join(chunk)
                if '"' in joined:
                    quotes, extra = joined.count('"'), 0
                    while quotes % 2:
                        line = next(source, "")
                        if not line:
                            break
                        chunk.append(line)
                        quotes += line.count('"')
                        extra += len(line)
                        if extra > MAX_QUOTED:
                            raise NbtextError(f"{path}:{n + len(chunk)}: bad CSV (a quoted field runs on for "
                                              f"more than {MAX_QUOTED} characters: is a quote left open?)")
                    joined = ""
                    reader = csv.reader(chunk)
                    lines, rows = [], []
                    start = 0
                    try:
                        for row in reader:  # (a record is named by the line it starts on)
                            if row and (row[0].strip() or (len(row) > 1 and any(c.strip() for c in row))):
                                lines.append(n + start + 1)
                                rows.append(row)
                            start = reader.line_num
                    except csv.Error as e:
                        raise NbtextError(f"{path}:{n + start + 1}: bad CSV ({e})") from None
                    if quotes % 2:
                        raise NbtextError(f"{path}:{lines[-1] if lines else n + 1}: bad CSV (a quote opened "
                                          "in this record is never closed)")
                else:
                    rows = [ln.rstrip("\r\n").split(sep) for ln in chunk]
                    lines = list(range(n + 1, n + 1 + len(chunk)))
                    if not all(map(str.strip, chunk)):
                        keep = [i for i, ln in enumerate(chunk) if ln.strip()]
                        rows, lines = [rows[i] for i in keep], [lines[i] for i in keep]
                n += len(chunk)
                del chunk, joined  # (only the records stay while the block is used)
                yield lines, rows
        except inp.errors as e:
            raise inp.error(e) from None


class Header:
    """A table's header: the label column's place, the feature columns' places and names."""

    def __init__(self, path: str, names: list[str], opts: TableOptions, labelled: bool = True,
                 features: list[str] | None = None):
        # (a column without a name, as pandas writes its index, is named by its number)
        self.path, self.names = path, [n.strip() or str(i) for i, n in enumerate(names, 1)]
        self.index = {}  # (a dict: a column found by name in constant time, whatever the width)
        for i, n in enumerate(self.names):
            if n in self.index:
                raise NbtextError(f"{path}:1: column {n!r} appears twice in the header")
            self.index[n] = i
        self.label = self.find(opts.label_column, "label") if labelled else None
        if features is not None:  # a model's columns: each must be here (the label need not)
            self.features = [self.find(c, "feature") for c in features]
        elif opts.columns:
            self.features = [self.find(c, "feature") for c in opts.columns]
        else:
            self.features = [i for i in range(len(self.names)) if i != self.label]
        if features is None:  # (training: these names go into the model file and its output)
            for i in (*([self.label] if labelled else []), *self.features):
                if BAD_NAME_CHAR.search(self.names[i]):
                    raise NbtextError(f"{path}:1: column name {self.names[i]!r} holds a control character")
        if self.label in self.features:
            raise NbtextError(f"{path}: column {self.names[self.label]!r} is the label; it cannot be a feature too")
        if not self.features:
            raise NbtextError(f"{path}: no feature columns: the only column is the label "
                              f"{self.names[self.label]!r}")
        feature_names = set(self.feature_names)
        for c in (*opts.categorical, *opts.numeric):
            if c not in feature_names:
                raise NbtextError(f"{path}: --categorical/--numeric column {c!r} is not a feature column "
                                  f"(feature columns: {', '.join(self.feature_names)})")

    @property
    def feature_names(self) -> list[str]:
        return [self.names[i] for i in self.features]

    def find(self, name: str, what: str) -> int:
        if name in self.index:
            return self.index[name]
        if name.isdigit() and 1 <= int(name) <= len(self.names):
            return int(name) - 1
        raise NbtextError(f"{self.path}: no {what} column {name!r} (columns: {', '.join(self.names)})")


Blocks = Iterator[tuple[list[int], list[list[str]]]]


def open_table(path: str, opts: TableOptions, labelled: bool = True, features: list[str] | None = None,
               stdin=None, part=None, fallback_label: str | None = None) -> tuple[Header, Blocks]:
    """A table's header and the blocks of records under it (the file opened once: a pipe can
    be read only once). ``part``: (start, length, lines before, the header's cells) of a byte
    range of the file (raw_blocks), a cluster's partition; one after the first is given the
    file's header. ``fallback_label``: the label column when the header has no
    ``opts.label_column``."""
    import itertools

    start, length, before, names = part or (0, None, 0, None)
    blocks = raw_blocks(path, opts.format, opts.chunk_rows, stdin, start, length, before)
    if start:
        return Header(path, names, opts, labelled, features), blocks
    for lines, rows in blocks:
        if rows:
            if fallback_label and opts.label_column not in [c.strip() for c in rows[0]]:
                opts = TableOptions(format=opts.format, label_column=fallback_label, chunk_rows=opts.chunk_rows)
            return Header(path, rows[0], opts, labelled, features), itertools.chain([(lines[1:], rows[1:])], blocks)
    raise NbtextError(f"{path}: empty table (no header row)")


class Frame:
    """A chunk of rows, parsed: line numbers, row numbers (1 = the first row after the header),
    labels (None when not read), each categorical column's cells (None: missing) and the numeric
    columns as an (n, p) array (NaN: missing)."""

    def __init__(self, lines: list[int], rows: np.ndarray, labels: list[str] | None, cat: list[list],
                 num: np.ndarray):
        self.lines, self.rows, self.labels, self.cat, self.num = lines, rows, labels, cat, num

    def __len__(self) -> int:
        return len(self.lines)


def parse_numbers(cells, path: str, lines: list[int], column: str) -> np.ndarray:
    """Cells as float64, NaN where missing; a cell that is not a finite number is an error
    naming its line and column."""
    try:
        a = np.array(cells, dtype=np.float64)
    except ValueError:
        a = np.empty(len(cells))
        for i, c in enumerate(cells):
            s = c.strip()
            if s in _MISSING:
                a[i] = np.nan
                continue
            try:
                a[i] = float(s)
            except ValueError:
                raise NbtextError(f"{path}:{lines[i]}: column {column!r}: {s[:40]!r} is not a number "
                                  "(the column is numeric)") from None
    if not np.isfinite(a).all():
        bad = np.flatnonzero(np.isinf(a))
        if len(bad):
            raise NbtextError(f"{path}:{lines[bad[0]]}: column {column!r}: {cells[bad[0]].strip()!r} "
                              "is not a finite number")
    return a


def is_number(cell: str) -> bool:
    s = cell.strip()
    if s in _MISSING:
        return True
    try:
        return np.isfinite(float(s))
    except ValueError:
        return False


def category(cell: str):
    s = cell.strip()
    return None if s in _MISSING else s


def ragged(path: str, width: int, lines: list[int], cells) -> None:
    """Refuse a block whose records are not all ``width`` cells wide, naming the first that is not."""
    if cells and (len(cells[0]) != width or len(set(map(len, cells))) > 1):
        for n, row in zip(lines, cells):
            if len(row) != width:
                raise NbtextError(f"{path}:{n}: expected {width} columns, found {len(row)} (a ragged row)")


def frames(header: Header, blocks: Blocks, kinds: list[str], chunk_rows: int, labelled: bool = True,
           provisional: set = frozenset(), first_row: int = 1) -> Iterator[Frame]:
    """A Frame per block of records, every row checked (its width, its label). A numeric column
    of ``provisional`` (feature positions) that holds a cell that is not a finite number raises
    Retype instead of an error. (``first_row``: the first record's row
    number, for a byte range of a table.)"""
    path, width = header.path, len(header.names)
    cat_idx = [i for i, k in zip(header.features, kinds) if k == CATEGORICAL]
    num_idx = [i for i, k in zip(header.features, kinds) if k == NUMERIC]
    label_name = header.names[header.label] if header.label is not None else None
    start = first_row
    checked: dict = {}
    for lines, cells in blocks:
        if not cells:
            continue
        ragged(path, width, lines, cells)
        cols = list(zip(*cells))
        del cells
        labels = None
        if labelled:
            raw = cols[header.label]
            for n, cell in zip(lines, raw):  # (each label checked once, at its first line)
                if cell in checked:
                    continue
                label = cell.strip()
                if label in _MISSING:
                    raise NbtextError(f"{path}:{n}: column {label_name!r}: the label is missing")
                checked[cell] = _label_chars(label, f"{path}:{n}: column {label_name!r}")
            labels = list(map(checked.__getitem__, raw))
        cat = [[category(c) for c in cols[i]] for i in cat_idx]
        num = np.empty((len(lines), len(num_idx)))
        for j, i in enumerate(num_idx):
            try:
                num[:, j] = parse_numbers(cols[i], path, lines, header.names[i])
            except NbtextError:
                if header.features.index(i) in provisional:
                    raise Retype() from None
                raise
        yield Frame(lines, np.arange(start, start + len(lines)), labels, cat, num)
        start += len(lines)


def infer_kinds(header: Header, blocks: Blocks, opts: TableOptions, variant: str) -> list[str]:
    """Each feature column's type: forced by the variant or --categorical/--numeric, else
    numeric when every value in the file parses as a finite number (and one does), read a
    block of rows at a time (every row's width is checked here too)."""
    kinds = forced_kinds(header, opts, variant)
    undecided = [j for j, k in enumerate(kinds) if k is None]
    return typed(kinds, number_flags(header, blocks, undecided)) if undecided else kinds


def forced_kinds(header: Header, opts: TableOptions, variant: str) -> list:
    """Each feature column's type when the variant or --categorical/--numeric decide it, else None."""
    forced = {n: CATEGORICAL for n in opts.categorical}
    forced.update({n: NUMERIC for n in opts.numeric})
    default = {"categorical": CATEGORICAL, "gaussian": NUMERIC}.get(variant)
    return [forced.get(n, default) for n in header.feature_names]


def typed(kinds: list, flags: dict) -> list[str]:
    """The undecided columns (None) typed by their flags {column: (all numbers, one seen)}:
    numeric when every value is a number and one is there."""
    return [k if k is not None else NUMERIC if all(flags[j]) else CATEGORICAL for j, k in enumerate(kinds)]


def number_flags(header: Header, blocks: Blocks, undecided: list[int]) -> dict:
    """{column: (every value a finite number or missing, some value not missing)} of the feature
    columns ``undecided``, over the blocks (every row's width is checked too). Flags of parts of
    a table join by AND and OR (a cluster's partitions: nbtext.batch.cluster)."""
    ok, seen = dict.fromkeys(undecided, True), dict.fromkeys(undecided, False)
    undecided = list(undecided)
    width = len(header.names)
    for lines, chunk in blocks:
        ragged(header.path, width, lines, chunk)
        if not undecided or not chunk:
            continue
        cols = list(zip(*chunk))
        for j in list(undecided):
            cells = cols[header.features[j]]
            try:
                a = np.array(cells, dtype=np.float64)
                good = not np.isinf(a).any()
                seen[j] = seen[j] or not np.isnan(a).all()
            except ValueError:
                good = all(map(is_number, cells))
                seen[j] = seen[j] or any(c.strip() not in _MISSING for c in cells)
            if not good:
                ok[j] = False
                undecided.remove(j)
    return {j: (ok[j], seen[j]) for j in ok}


class Spooled:
    """stdin, or a file that is not a regular file (a pipe: `<(...)`, /dev/stdin), copied to a
    temporary file, so that it can be read more than once (typing, then training; training,
    then cross-validation): read again, a pipe was empty ("empty table")."""

    def __init__(self, path: str = "-"):
        import shutil
        import sys
        import tempfile

        from ..read import _os_error

        if path == "-" and sys.stdin is None:
            raise NbtextError("-: standard input is closed")
        self.file = tempfile.TemporaryFile()
        try:
            if path == "-":
                shutil.copyfileobj(sys.stdin.buffer, self.file, 1 << 20)
            else:
                with open(path, "rb") as f:
                    shutil.copyfileobj(f, self.file, 1 << 20)
        except OSError as e:
            self.file.close()
            raise _os_error(path, e) from None

    def stream(self):
        self.file.seek(0)
        return self.file


def spooled(sources: list[str]):
    """stream(path): a fresh stream of each source that cannot be read twice (stdin, a pipe),
    spooled once; None for a regular file (opened again each time)."""
    import stat

    copies = {}
    for p in dict.fromkeys(sources):
        try:
            regular = p != "-" and stat.S_ISREG(os.stat(p).st_mode)
        except OSError:
            regular = True  # (the reader reports it)
        if not regular:
            copies[p] = Spooled(p)
    return lambda p: copies[p].stream() if p in copies else None
