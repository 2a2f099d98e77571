"""Reading inputs: the edge where files and streams become Documents.

Labelled sources (train, eval, cv): label directories, ``--label LABEL PATH``, line files
(TSV, CSV, JSONL, fastText), stdin. Inputs to score (predict, classify): files, directories,
mbox, Maildir, MH, line files with ``lines=True``, stdin. Everything is yielded lazily, in a
stable order (names sorted), so memory stays bounded and output order is reproducible.
gzip-compressed files are read transparently, whatever their name.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator

TYPE_CHECKING = False  # importing typing would cost `nbtext classify` 10-20 ms
if TYPE_CHECKING:
    from typing import BinaryIO

from .errors import NbtextError
from .record import Record
from .text.words import decode_text

EXTENSIONS = {".tsv": "tsv", ".tab": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
              ".ft": "fasttext", ".fasttext": "fasttext"}


class Document:
    """One document: its id (a path, FILE:LINE, ...), its bytes or text, its label if known."""

    __slots__ = ("id", "data", "label")

    def __init__(self, id: str, data: bytes | str, label: str | None = None):
        self.id, self.data, self.label = id, data, label

    def __eq__(self, other):
        if not isinstance(other, Document):
            return NotImplemented
        return (self.id, self.data, self.label) == (other.id, other.data, other.label)

    __hash__ = None

    def __repr__(self) -> str:
        return f"Document(id={self.id!r}, label={self.label!r}, {len(self.data)} bytes)"


class LineOptions(Record):
    """How to read line files: the format (None: by extension, else sniffed) and columns."""

    format: str | None = None
    label_column: str = "label"
    text_column: str = "text"


# -- bytes from paths -------------------------------------------------------------------

def _os_error(path: str, e: OSError) -> NbtextError:
    reason = {FileNotFoundError: "no such file or directory", PermissionError: "permission denied",
              IsADirectoryError: "is a directory"}.get(type(e), e.strerror or str(e))
    return NbtextError(f"{path}: {reason}")


def gunzip_if_needed(data: bytes, path: str) -> bytes:
    if data[:2] == b"\x1f\x8b":
        import gzip
        import zlib

        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise NbtextError(f"{path}: broken gzip data ({e})") from None
    return data


def read_bytes(path: str, stdin: BinaryIO | None = None) -> bytes:
    if path == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        return gunzip_if_needed(stream.read(), "-")
    try:
        with open(path, "rb") as f:
            return gunzip_if_needed(f.read(), path)
    except OSError as e:
        raise _os_error(path, e) from None


def is_mbox(data: bytes) -> bool:
    """An mbox of several messages: a From_ line first, and another after a blank line."""
    return data.startswith(b"From ") and b"\n\nFrom " in data


def is_maildir(path: str) -> bool:
    return os.path.isdir(os.path.join(path, "cur")) and os.path.isdir(os.path.join(path, "new"))


def is_mh(path: str) -> bool:
    return os.path.isfile(os.path.join(path, ".mh_sequences"))


def split_mbox(data: bytes, path: str) -> Iterator[Document]:
    """mbox messages, id FILE:LINE of their From_ line; ">From " quoting undone (mboxrd)."""
    lines = data.splitlines(keepends=True)
    start = None
    prev_blank = True
    for n, line in enumerate(lines):
        if line.startswith(b"From ") and prev_blank:
            if start is not None:
                yield _mbox_message(lines, start, n, path)
            start = n
        prev_blank = line.strip() == b""
    if start is not None:
        yield _mbox_message(lines, start, len(lines), path)


def _mbox_message(lines: list[bytes], start: int, end: int, path: str) -> Document:
    body = []
    for line in lines[start + 1:end]:
        if line.startswith(b">") and line.lstrip(b">").startswith(b"From "):
            line = line[1:]
        body.append(line)
    return Document(f"{path}:{start + 1}", b"".join(body))


def _listdir(path: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(path) if not n.startswith("."))
    except OSError as e:
        raise _os_error(path, e) from None


def mail_folder_documents(path: str) -> Iterator[Document]:
    """Every document below a path: a file (one message, or an mbox of many), a Maildir,
    an MH folder, or a plain directory walked recursively. Hidden names are skipped."""
    if path == "-":
        yield Document("-", read_bytes("-"))
        return
    if not os.path.exists(path):
        raise NbtextError(f"{path}: no such file or directory")
    if not os.path.isdir(path):
        data = read_bytes(path)
        if is_mbox(data):
            yield from split_mbox(data, path)
        else:  # one message, even with an mbox-style "From " line (as SpamAssassin's corpus)
            yield Document(path, data)
        return
    if is_maildir(path):
        for sub in ("cur", "new"):
            d = os.path.join(path, sub)
            for name in _listdir(d):
                p = os.path.join(d, name)
                if os.path.isfile(p):
                    yield Document(p, read_bytes(p))
        return
    names = _listdir(path)
    if is_mh(path):
        names = sorted((n for n in names if n.isdigit()), key=int)
    for name in names:
        p = os.path.join(path, name)
        if os.path.isdir(p) or os.path.isfile(p):
            yield from mail_folder_documents(p)


# -- line files -----------------------------------------------------------------------

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
    raise NbtextError(
        f"{path}: cannot tell its format (name it .tsv, .csv, .jsonl or .ft, or pass --format)")


def _column(row: dict | list, name: str, where: str, what: str):
    if isinstance(row, list):
        try:
            return row[int(name) - 1]
        except (ValueError, IndexError):
            raise NbtextError(f"{where}: no {what} column {name!r}") from None
    if name not in row:
        raise NbtextError(f"{where}: no {what} field {name!r}")
    return row[name]


def line_documents(path: str, opts: LineOptions, labelled: bool, stdin: BinaryIO | None = None
                   ) -> Iterator[Document]:
    """One document per line of a TSV/CSV/JSONL/fastText file (``labelled``: with a label),
    or per plain line (format "lines"). Ids are FILE:LINE."""
    data = read_bytes(path, stdin)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # a UTF-8 byte-order mark is not text
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    first = next((ln for ln in lines if ln.strip()), b"")
    fmt = "lines" if opts.format == "lines" else line_format(path, first, opts)
    if fmt == "csv":
        yield from _csv_documents(path, data, opts, labelled)
        return
    for n, raw in enumerate(lines, 1):
        raw = raw.rstrip(b"\r")
        where = f"{path}:{n}"
        if not raw.strip():
            continue
        text = decode_text(raw)
        label = None
        if fmt == "tsv":
            if labelled:
                if "\t" not in text:
                    raise NbtextError(f"{where}: expected LABEL<TAB>TEXT, found no tab")
                label, text = text.split("\t", 1)
                if n == 1 and label.strip().lower() == "label":
                    continue  # a header row
        elif fmt == "jsonl":
            import json

            try:
                row = json.loads(text)
            except ValueError as e:
                raise NbtextError(f"{where}: not valid JSON ({e})") from None
            if not isinstance(row, dict):
                raise NbtextError(f"{where}: expected a JSON object")
            text = _column(row, opts.text_column, where, "text")
            if labelled:
                label = _column(row, opts.label_column, where, "label")
            if not isinstance(text, str):
                raise NbtextError(f"{where}: the text field is not a string")
        elif fmt == "fasttext":
            parts = text.split()
            labels = [p[9:] for p in parts if p.startswith("__label__")]
            if labelled and not labels:
                raise NbtextError(f"{where}: no __label__ on this line")
            label = labels[0] if labels else None
            text = " ".join(p for p in parts if not p.startswith("__label__"))
        if labelled:
            label = str(label).strip()
            if not label:
                raise NbtextError(f"{where}: empty label")
        yield Document(where, text, label)


def _csv_documents(path: str, data: bytes, opts: LineOptions, labelled: bool) -> Iterator[Document]:
    import csv
    import io

    reader = csv.reader(io.StringIO(decode_text(data), newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as e:
        raise NbtextError(f"{path}:1: bad CSV ({e})") from None

    def col(name: str, what: str) -> int:
        if name in header:
            return header.index(name)
        if name.isdigit() and 1 <= int(name) <= len(header):
            return int(name) - 1
        raise NbtextError(f"{path}: no {what} column {name!r} (columns: {', '.join(header)})")

    ti = col(opts.text_column, "text")
    li = col(opts.label_column, "label") if labelled else None
    try:
        for row in reader:
            where = f"{path}:{reader.line_num}"
            if not row:
                continue
            if max(ti, li or 0) >= len(row):
                raise NbtextError(f"{where}: expected {len(header)} columns, found {len(row)}")
            label = row[li].strip() if li is not None else None
            if labelled and not label:
                raise NbtextError(f"{where}: empty label")
            yield Document(where, row[ti], label)
    except csv.Error as e:
        raise NbtextError(f"{path}:{reader.line_num}: bad CSV ({e})") from None


# -- the two entry points -------------------------------------------------------------

def labelled_documents(sources: list[str], labelled: list[tuple[str, str]], opts: LineOptions,
                       stdin: BinaryIO | None = None) -> Iterator[Document]:
    """Documents with labels from positional sources and ``--label LABEL PATH`` pairs."""
    for src in sources:
        if src == "-" or (os.path.exists(src) and not os.path.isdir(src)):
            yield from line_documents(src, opts, labelled=True, stdin=stdin)
        elif os.path.isdir(src):
            yield from label_directory(src)
        else:
            raise NbtextError(f"{src}: no such file or directory")
    for label, path in labelled:
        if path == "-":
            yield Document("-", read_bytes("-", stdin), label)
            continue
        for doc in mail_folder_documents(path):
            doc.label = label
            yield doc


def label_directory(path: str) -> Iterator[Document]:
    labels = [n for n in _listdir(path) if os.path.isdir(os.path.join(path, n))]
    if not labels:
        raise NbtextError(
            f"{path}: no label directories in it (expected {path}/LABEL/... such as "
            f"{path}/spam and {path}/ham; or use --label LABEL {path})")
    for label in labels:
        for doc in mail_folder_documents(os.path.join(path, label)):
            doc.label = label
            yield doc


def input_documents(inputs: list[str], lines: bool = False, input_format: str | None = None,
                    opts: LineOptions = LineOptions(), stdin: BinaryIO | None = None
                    ) -> Iterator[Document]:
    """Documents to score. ``lines``: every line of each input is a document (FILE:LINE);
    ``input_format``: read inputs as line files of that format (jsonl: the text field)."""
    for path in inputs:
        if lines or input_format:
            line_opts = LineOptions(input_format or "lines", opts.label_column, opts.text_column)
            yield from line_documents(path, line_opts, labelled=False, stdin=stdin)
        elif path == "-":
            yield Document("-", read_bytes("-", stdin))
        else:
            yield from mail_folder_documents(path)
