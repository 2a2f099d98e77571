"""Line files: one document per line of a TSV, CSV, JSONL or fastText file (with its label, to
train; the text alone, to score), or per plain line; read as the lines come (a pipe is answered
line by line), a line longer than MAX_DOCUMENT_BYTES refused; their labels checked. And the
lines of a text dump (nbtext import)."""
from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator

from ..errors import NbtextError
from ..record import Record
from ..text.words import decode_text
from .document import Document, _label_chars, _short_repr
from .opening import MAX_DOCUMENT_BYTES, _CHUNK, _Input, open_file

TYPE_CHECKING = False  # (typing is not imported: `nbtext classify` imports this module)
if TYPE_CHECKING:
    from typing import BinaryIO

EXTENSIONS = {".tsv": "tsv", ".tab": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
              ".ft": "fasttext", ".fasttext": "fasttext"}
_BOM = b"\xef\xbb\xbf"


class LineOptions(Record):
    """How to read line files: the format (None: by extension, else sniffed) and columns."""

    format: str | None = None
    label_column: str = "label"
    text_column: str = "text"


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n and not n % (1 << 20) else f"{n} bytes"


def line_format(path: str, first_line: bytes, opts: LineOptions) -> str:
    if opts.format:
        return opts.format
    name = path[:-3] if path.endswith(".gz") else path
    ext = os.path.splitext(name)[1].lower()
    if ext in EXTENSIONS:
        return EXTENSIONS[ext]
    if first_line.startswith(b"__label__"):
        return "fasttext"
    if first_line.lstrip().startswith(b"{"):
        return "jsonl"
    if b"\t" in first_line:
        return "tsv"
    raise UnknownFormat(path)


class UnknownFormat(NbtextError):
    """A line file whose format neither its name nor its first line tells. The message names
    the option that gives it: --format, unless the command calls it otherwise (``worded``: eval
    and cv, whose --format chooses their output, call it --input-format)."""

    def __init__(self, path: str, flag: str = "--format"):
        self.path, self.flag = path, flag
        super().__init__(f"{path}: cannot tell its format (name it .tsv, .csv, .jsonl or .ft, or pass {flag})")

    def __reduce__(self):  # (raised in a worker process, it reaches the parent pickled)
        return type(self), (self.path, self.flag)

    def worded(self, flag: str) -> str:
        return str(UnknownFormat(self.path, flag))


def _lines(inp: _Input, path: str, n: int = 0, size: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(number, line with its "\\n") for each line of a line file, as it is read; a UTF-8
    byte-order mark at the start dropped. A line longer than MAX_DOCUMENT_BYTES is an error.
    A byte range of the file: ``n`` lines come before it, and its lines start in its first
    ``size`` bytes (inp opened at its start, a line's start)."""
    cap = MAX_DOCUMENT_BYTES
    limit = min(_CHUNK, cap + 1)
    readline = inp.stream.readline
    read = 0
    try:
        while size is None or read < size:
            line = readline(limit)
            if not line:
                return
            read += len(line)
            n += 1
            if len(line) == limit and line[-1:] != b"\n":
                buf, long = io.BytesIO(), len(line)
                buf.write(line)
                while line[-1:] != b"\n" and long <= cap + 1:
                    line = readline(limit)
                    if not line:
                        break
                    buf.write(line)
                    long += len(line)
                    read += len(line)
                line = buf.getvalue()
                if len(line) - line.endswith(b"\n") > cap:
                    raise NbtextError(f"{path}:{n}: line longer than {_size(cap)}")
            if n == 1 and line.startswith(_BOM):
                line = line[3:]  # a UTF-8 byte-order mark is not text
                if not line:
                    return
            yield n, line
    except inp.errors as e:
        raise inp.error(e) from None


def _column(row: dict | list, name: str, where: str, what: str):
    if isinstance(row, list):
        try:
            return row[int(name) - 1]
        except (ValueError, IndexError):
            raise NbtextError(f"{where}: no {what} column {name!r}") from None
    if name not in row:
        raise NbtextError(f"{where}: no {what} field {name!r} (name it with --{what}-column)")
    return row[name]


_SURROGATE = re.compile("[\ud800-\udfff]")


def _line_label(label, where: str) -> str:
    """The label of a line: a string or an integer (JSON gives either; a finite float is kept as
    written), stripped, not empty, without control characters."""
    if not isinstance(label, str):
        if label is None or isinstance(label, bool) or not isinstance(label, (int, float)) \
                or label != label or label in (float("inf"), float("-inf")):
            raise NbtextError(f"{where}: bad label {_short_repr(label)}: a label is a string or a number")
        label = str(label)
    label = label.strip()
    if not label:
        raise NbtextError(f"{where}: empty label")
    return _label_chars(label, where)


def _label_of(raw, where: str, checked: dict) -> str:
    """_line_label(raw), remembered in ``checked`` for a str or int: most lines repeat a label."""
    if type(raw) is str or type(raw) is int:
        label = checked.get(raw)
        if label is None:
            label = _line_label(raw, where)
            if len(checked) < 10000:
                checked[raw] = label
        return label
    return _line_label(raw, where)


def _text(value: str) -> str:
    """Text from JSON, lone surrogates (\\ud800, which no encoding can write) made U+FFFD."""
    return value if value.isascii() else _SURROGATE.sub("\ufffd", value)


def line_documents(path: str, opts: LineOptions, labelled: bool, stdin: BinaryIO | None = None
                   ) -> Iterator[Document]:
    """One document per line of a TSV/CSV/JSONL/fastText file (``labelled``: with a label),
    or per plain line (format "lines"). Ids are FILE:LINE. Lines are read as they come (a
    document is yielded as soon as its line is read), gzip decompressed as it is read."""
    with _Input(path, stdin) as inp:
        lines = _lines(inp, path)
        name = path[:-3] if path.endswith(".gz") else path
        if opts.format or os.path.splitext(name)[1].lower() in EXTENSIONS:
            fmt = "lines" if opts.format == "lines" else line_format(path, b"", opts)
        else:  # sniffed from the first non-empty line
            first = b""
            for n, raw in lines:
                if raw.strip():
                    first = raw
                    break
            fmt = line_format(path, first, opts)
            if first:
                import itertools

                lines = itertools.chain([(n, first)], lines)
        if fmt == "csv":
            yield from _csv_documents(path, lines, opts, labelled)
            return
        yield from _parsed_lines(path, lines, fmt, opts, labelled)


def line_file_format(path: str, opts: LineOptions) -> str:
    """The format line_documents reads a line file in ("lines" for plain lines)."""
    name = path[:-3] if path.endswith(".gz") else path
    if opts.format or os.path.splitext(name)[1].lower() in EXTENSIONS:
        return "lines" if opts.format == "lines" else line_format(path, b"", opts)
    with _Input(path) as inp:
        for _, raw in _lines(inp, path):
            if raw.strip():
                return line_format(path, raw, opts)
    return line_format(path, b"", opts)


def line_range_documents(path: str, fmt: str, opts: LineOptions, labelled: bool, start: int, size: int,
                         before: int) -> Iterator[Document]:
    """line_documents of the lines of a file (not gzip, not CSV: a CSV record may span lines)
    that start in its ``size`` bytes from ``start`` (a line's start), ``before`` lines before
    them: one large file read by many workers, each document as line_documents makes it."""
    with _Input(path, offset=start) as inp:
        yield from _parsed_lines(path, _lines(inp, path, before, size), fmt, opts, labelled)


def _parsed_lines(path: str, lines: Iterator[tuple[int, bytes]], fmt: str, opts: LineOptions,
                  labelled: bool) -> Iterator[Document]:
    checked = {}
    for n, raw in lines:
        raw = raw.rstrip(b"\r\n")
        if not raw.strip():
            continue
        where = f"{path}:{n}"
        text = decode_text(raw)
        label = None
        if fmt == "tsv":
            if labelled and "\t" not in text:
                raise NbtextError(f"{where}: expected LABEL<TAB>TEXT, found no tab")
            if "\t" in text:  # (to score, the text field alone: a label left in is read as evidence)
                label, text = text.split("\t", 1)
                if n == 1 and label.strip().lower() == "label":
                    continue  # a header row
                label = label if labelled else None
        elif fmt == "jsonl":
            import json

            try:
                row = json.loads(text)
            except RecursionError:
                raise NbtextError(f"{where}: not valid JSON (nested too deeply)") from None
            except ValueError as e:
                raise NbtextError(f"{where}: not valid JSON ({e})") from None
            if not isinstance(row, dict):
                raise NbtextError(f"{where}: expected a JSON object")
            text = _column(row, opts.text_column, where, "text")
            if labelled:
                label = _column(row, opts.label_column, where, "label")
            if not isinstance(text, str):
                raise NbtextError(f"{where}: the text field is not a string")
            text = _text(text)
        elif fmt == "fasttext":
            labels, text = fasttext_fields(text)
            if labelled and not labels:
                raise NbtextError(f"{where}: no __label__ on this line")
            label = labels[0] if labels else None
        if labelled:
            label = _label_of(label, where, checked)
        yield Document(where, text, label)


FASTTEXT_LABEL = "__label__"


def fasttext_fields(text: str) -> tuple[list[str], str]:
    """A fastText line's labels (its words that start with __label__, in order, without it) and
    its other words joined by single spaces. The labels lead the line nearly always: then the
    words after them are joined whole, with no Python loop over the words (a line of a large
    corpus has a hundred words or more, and the loop was most of train's reading)."""
    parts = text.split()
    lead = 0
    while lead < len(parts) and parts[lead].startswith(FASTTEXT_LABEL):
        lead += 1
    rest = " ".join(parts[lead:])
    if " " + FASTTEXT_LABEL in rest:  # (a label further on: the words one by one)
        return ([p[len(FASTTEXT_LABEL):] for p in parts if p.startswith(FASTTEXT_LABEL)],
                " ".join(p for p in parts if not p.startswith(FASTTEXT_LABEL)))
    return [p[len(FASTTEXT_LABEL):] for p in parts[:lead]], rest


_LONE_CR = re.compile(r"(?<=\r)(?!\n)")


def _csv_documents(path: str, lines: Iterator[tuple[int, bytes]], opts: LineOptions, labelled: bool
                   ) -> Iterator[Document]:
    import csv

    ended = []  # [True] once every line was read

    def texts() -> Iterator[str]:
        for _, raw in lines:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = decode_text(raw)
            if "\r" in text:  # a lone CR ends a line too, as in a file opened with newline=""
                yield from filter(None, _LONE_CR.split(text))
            else:
                yield text
        ended.append(True)

    reader = csv.reader(texts())

    def rows() -> Iterator[list[str]]:
        while True:
            start = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                end = reader.line_num
                if end > start:
                    raise NbtextError(f"{path}:{start}: bad CSV ({e}, in the record from line {start} "
                                      f"to line {end}: is a quote left open?)") from None
                raise NbtextError(f"{path}:{end}: bad CSV ({e})") from None
            if ended:  # the record ended with the file, not a line: its last field's quote is open
                field = row[-1] if row else ""
                breaks = field.count("\n") + field.count("\r") - field.count("\r\n")
                line = reader.line_num - breaks + (field[-1:] in ("\n", "\r"))
                raise NbtextError(f"{path}:{line}: bad CSV (the quote opened on this line is never "
                                  f"closed)")
            yield row

    records = rows()
    header = next(records, None)
    if header is None:
        return

    def col(name: str, what: str) -> int:
        if name in header:
            return header.index(name)
        if name.isdigit() and 1 <= int(name) <= len(header):
            return int(name) - 1
        raise NbtextError(f"{path}: no {what} column {name!r} (columns: {', '.join(header)}; a text model "
                          f"does not keep train's columns: name it with --{what}-column)")

    ti = col(opts.text_column, "text")
    li = col(opts.label_column, "label") if labelled else None
    checked = {}
    for row in records:
        where = f"{path}:{reader.line_num}"
        if not row:
            continue
        if max(ti, li or 0) >= len(row):
            raise NbtextError(f"{where}: expected {len(header)} columns, found {len(row)}")
        label = _label_of(row[li], where, checked) if li is not None else None
        yield Document(where, row[ti], label)


def count_line_ends(path: str, start: int, size: int) -> int:
    """Lines (as bytes.splitlines counts them: \\n, \\r\\n, a lone \\r) that end in a byte range."""
    n, left, last = 0, size, b""
    with open_file(path) as f:
        f.seek(start)
        while left > 0:
            block = f.read(min(left, 1 << 20))
            if not block:
                break
            n += block.count(b"\n") + block.count(b"\r") - block.count(b"\r\n")
            if last == b"\r" and block[:1] == b"\n":
                n -= 1  # (a \\r\\n cut between two blocks)
            last, left = block[-1:], left - len(block)
    return n


MAX_DUMP_LINE = 1 << 30  # (a dump's settings line holds the ledger: 35 bytes a document trained on)


def dump_lines(path: str) -> Iterator[str]:
    """The lines of a text dump (a file, stdin "-", gzip), read as they are used, without their
    line ends: the first at most 64 bytes (a magic line: /dev/zero, or a stranger's file of
    gigabytes, is refused from its first bytes), the others at most MAX_DUMP_LINE; UTF-8,
    bytes that are not replaced."""
    with _Input(path) as inp:
        limit, n = 64, 0
        while True:
            line = inp.readline(limit)
            if not line:
                return
            n += 1
            if len(line) == limit and not line.endswith(b"\n"):
                if n == 1:  # (not a dump: import_lines says so, naming the magic it wants)
                    yield line.decode("utf-8", "replace")
                    return
                raise NbtextError(f"{path}:{n}: a line longer than {limit:,} bytes: not an nbtext dump")
            yield line.rstrip(b"\r\n").decode("utf-8", "replace")
            limit = MAX_DUMP_LINE
