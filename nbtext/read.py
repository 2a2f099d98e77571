"""Reading inputs: the edge where files and streams become Documents.

Labelled sources (train, eval, cv): label directories, ``--label LABEL PATH``, line files
(TSV, CSV, JSONL, fastText), stdin. Inputs to score (predict, classify): files, directories,
mbox, Maildir, MH, line files with ``lines=True``, stdin. Everything is yielded lazily, in a
stable order (names sorted), so memory stays bounded and output order is reproducible.
gzip-compressed files are read transparently, whatever their name, and decompressed as they are
read: line files line by line (a line is yielded as soon as it is read, so a pipe is answered
line by line), a single document up to MAX_DOCUMENT_BYTES.

Input files come from strangers: a bad file is a NbtextError naming it (FILE:LINE where there
is a line), never a traceback; with ``on_error`` the entry points report it and go on with the
next file. Directory walks enter no directory twice (symlink loops end).
"""
from __future__ import annotations

import io
import itertools
import os
import re
import stat
import sys
from collections.abc import Iterator

from .errors import BAD_NAME_CHAR, NbtextError
from .record import Record
from .text.words import decode_text

TYPE_CHECKING = False  # importing typing would cost `nbtext classify` 10-20 ms
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO

    OnError = Callable[[NbtextError], object] | None  # told of each file that cannot be read

EXTENSIONS = {".tsv": "tsv", ".tab": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
              ".ft": "fasttext", ".fasttext": "fasttext"}

# The most bytes read of one document (a message file, stdin read as one document, one message
# of an mbox; after decompression): the rest is left unread. Without a cap a 1 MB gzip of zeros
# (or /dev/zero, or an endless pipe) is held whole: 1 GB of zeros took 2 GB. Mail servers refuse
# messages far smaller (25-50 MB), and the first 64 MiB of a document say what it is about; 64 MiB
# keeps tests/test_bad_input.py's 50 MB message whole. A line of a line file longer than this is
# refused (cutting it would break its syntax).
MAX_DOCUMENT_BYTES = 64 << 20

_CHUNK = 1 << 20  # bytes asked of a stream at a time
_FIRST = 1 << 16  # bytes asked of a regular file first: a file shorter than this is read whole
_BOM = b"\xef\xbb\xbf"


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


# -- streams from paths -----------------------------------------------------------------

def _os_error(path: str, e: OSError) -> NbtextError:
    reason = {FileNotFoundError: "no such file or directory", PermissionError: "permission denied",
              IsADirectoryError: "is a directory"}.get(type(e), e.strerror or str(e))
    return NbtextError(f"{path}: {reason}")


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n and not n % (1 << 20) else f"{n} bytes"


def gunzip_if_needed(data: bytes, path: str) -> bytes:
    """``data`` decompressed if it is gzip (whole, in memory: readers use _Input, which streams)."""
    if data[:2] == b"\x1f\x8b":
        import gzip
        import zlib

        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise NbtextError(f"{path}: broken gzip data ({e})") from None
    return data


class _Prefixed(io.RawIOBase):
    """A stream with the bytes already read from it (``head``) put back in front. A read returns
    what the stream has at hand (read1), so that lines from a pipe are read as they arrive."""

    def __init__(self, head: bytes, stream):
        self._head, self._stream = head, stream
        self._read = getattr(stream, "read1", stream.read)

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self._head:
            data, self._head = self._head[:len(b)], self._head[len(b):]
        else:
            data = self._read(len(b))
        b[:len(data)] = data
        return len(data)


class _Input:
    """A file or stdin ("-") as a binary stream, decompressed as it is read when it starts with
    gzip's magic bytes. read(n) and readline(limit) raise NbtextError naming the path."""

    def __init__(self, path: str, stdin: BinaryIO | None = None, offset: int = 0):
        """``offset``: start there (a file's byte range: never gzip). ``stdin``: the stream to read
        in place of stdin, or of the file ``path`` names (a copy of a pipe read before)."""
        self.path, self._file, self.gzip = path, None, False
        if path == "-" or stdin is not None:
            if stdin is None:
                if sys.stdin is None:
                    raise NbtextError("-: standard input is closed")
                stdin = sys.stdin.buffer
            raw = stdin
        else:
            try:
                raw = self._file = open(path, "rb", buffering=0)
                if offset:
                    raw.seek(offset)
            except OSError as e:
                self.close()
                raise _os_error(path, e) from None
        self._whole: bytes | None = None  # a small regular file, read whole at once
        self._raw = raw
        try:
            if self._file is not None and not offset and stat.S_ISREG(os.fstat(raw.fileno()).st_mode):
                # One read for a small file (a message a file: most of a mail corpus), which
                # then needs no buffered reader: spamassassin-2002's 3,250 files were read in
                # 0.16-0.19 s through it, 0.035 s by plain reads. A short read of a regular
                # file is its end; of a pipe or device it is not, so they take the general path.
                head = raw.read(_FIRST)
                if len(head) < _FIRST and head[:2] != b"\x1f\x8b":
                    self._whole, self.errors, self._buffered = head, OSError, None
                    return
            else:
                head = raw.read(1)
                if head == b"\x1f" and not offset:
                    head += raw.read(1)
        except OSError as e:
            self.close()
            raise _os_error(path, e) from None
        src = _Prefixed(head, raw)
        if head[:2] == b"\x1f\x8b":
            import gzip
            import zlib

            self.gzip, self.errors = True, (OSError, EOFError, zlib.error)
            self._buffered = gzip.GzipFile(fileobj=src, mode="rb")
        else:
            self.errors = OSError
            self._buffered = io.BufferedReader(src, 1 << 16)

    def read(self, n: int) -> bytes:
        if self._whole is not None and len(self._whole) <= n:
            data, self._whole = self._whole, b""
            return data
        try:
            return self.stream.read(n)
        except self.errors as e:
            raise self.error(e) from None

    def readline(self, limit: int) -> bytes:
        try:
            return self.stream.readline(limit)
        except self.errors as e:
            raise self.error(e) from None

    @property
    def stream(self):
        """The input as a buffered (or gzip) stream: a small file's is made when first needed,
        holding what is left of it, then whatever the file may have grown by since."""
        if self._buffered is None:
            self._buffered = io.BufferedReader(_Prefixed(self._whole or b"", self._raw), 1 << 16)
            self._whole = None
        return self._buffered

    def error(self, e: Exception) -> NbtextError:
        if self.gzip and not (isinstance(e, OSError) and e.errno is not None):
            return NbtextError(f"{self.path}: broken gzip data ({e})")
        return _os_error(self.path, e)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def __enter__(self) -> _Input:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _read_upto(inp: _Input, limit: int | None) -> bytes:
    """What is left of inp, at most ``limit`` bytes (None: all), never holding more."""
    want = _CHUNK if limit is None else min(_CHUNK, limit)
    data = inp.read(want)
    if len(data) < want or (limit is not None and len(data) >= limit):
        return data  # a short read is the end (reads of a BufferedReader or GzipFile fill up)
    buf, size = io.BytesIO(), len(data)
    buf.write(data)
    while limit is None or size < limit:
        data = inp.read(_CHUNK if limit is None else min(_CHUNK, limit - size))
        if not data:
            break
        buf.write(data)
        size += len(data)
    return buf.getvalue()  # no copy: BytesIO hands over its buffer


def read_bytes(path: str, stdin: BinaryIO | None = None, limit: int | None = None) -> bytes:
    """The bytes of a file or of stdin ("-"), decompressed if gzip: all of them, or at most
    ``limit`` (MAX_DOCUMENT_BYTES for a document to score; None for a whole file)."""
    with _Input(path, stdin) as inp:
        return _read_upto(inp, limit)


MAX_DUMP_LINE = 1 << 30  # (a dump's settings line holds the ledger: 35 bytes a document trained on)


def dump_lines(path: str) -> Iterator[str]:
    """The lines of a text dump (a file, stdin "-", gzip), read as they are used, without their
    line ends: the first at most 64 bytes (a magic line: /dev/zero, or a stranger's file of
    gigabytes, was read whole before its first line was checked), the others at most
    MAX_DUMP_LINE; UTF-8, bytes that are not replaced."""
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


# -- mail -------------------------------------------------------------------------------

# An mbox From_ line: "From SENDER DATE", DATE as asctime writes it ("Fri Jul  8 12:08:34 2011"),
# with or without seconds, maybe with a zone before the year, maybe more after it. Each part is
# bounded by the next, so a match is linear in the line's length.
_FROM_LINE = re.compile(
    rb"From \S+[ \t]+(?i:mon|tue|wed|thu|fri|sat|sun)[ \t]+"
    rb"(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[ \t]+\d{1,2}[ \t]+\d{1,2}:\d\d(?::\d\d)?"
    rb"[ \t]+(?:[A-Za-z]{3,5}[ \t]+)?\d{4}(?!\S)")
_QUOTED_FROM = re.compile(rb">+From ")  # mboxrd: a body line ">From ", ">>From " ... lost one ">"
_QUOTED_FROM_LINES = re.compile(rb"(?:\A|(?<=[\r\n]))>(?=>*From )")
_LINE_SPACE = b" \t\x0b\x0c"  # whitespace that does not end a line (bytes.splitlines cuts at \r, \n)


def _blank_line_before(data: bytes, pos: int) -> bool:
    """Whether the line that ends just before ``pos`` (a line start, pos > 0) is blank."""
    end = pos - 2 if data[pos - 2:pos] == b"\r\n" else pos - 1
    while end > 0:
        start = max(0, end - 4096)
        text = data[start:end].rstrip(_LINE_SPACE)
        if text:
            return text[-1:] in (b"\r", b"\n")
        end = start
    return True


def _has_separator(data: bytes) -> bool:
    """Whether a From_ line after a blank line starts a second message (lines as splitlines).
    (Most files hold "From " only in their first line: looked for first, without the regex.)"""
    if data.find(b"From ", 1) < 0:
        return False
    for m in _FROM_LINE.finditer(data):
        pos = m.start()
        if pos and data[pos - 1] in b"\r\n" and _blank_line_before(data, pos):
            return True
    return False


def is_mbox(data: bytes) -> bool:
    """An mbox of several messages: a From_ line first, and another after a blank line."""
    return _FROM_LINE.match(data) is not None and _has_separator(data)


def split_mbox(data: bytes, path: str) -> Iterator[Document]:
    """mbox messages, id FILE:LINE of their From_ line; ">From " quoting undone (mboxrd).
    (Data that holds one message is one document: all of it.)"""
    return _mbox_documents(path, io.BytesIO(data))


class _Chained:
    """readline() from bytes already read, then from the stream they were read from."""

    def __init__(self, head: bytes, inp: _Input):
        self._head, self._inp = io.BytesIO(head), inp

    def readline(self, limit: int) -> bytes:
        if self._head is not None:
            line = self._head.readline(limit)
            if line:
                return line
            self._head = None
        return self._inp.readline(limit)


def _line_pieces(src) -> Iterator[bytes]:
    """src's bytes cut where bytes.splitlines cuts them (after \\n, \\r\\n, a lone \\r), each line
    with its end, read as they come; a line longer than _CHUNK comes in pieces (the first piece
    of a line is whole or at least _CHUNK long)."""
    carry = b""
    while True:
        more = src.readline(_CHUNK)
        chunk = carry + more if carry else more
        if not chunk:
            return
        parts = chunk.splitlines(True) if b"\r" in chunk else [chunk]
        last = parts.pop()
        yield from parts
        if more and (last[-1:] == b"\r" or (last[-1:] != b"\n" and len(last) < _CHUNK)):
            carry = last  # a "\r" whose "\n" may come next, or a short piece of a line cut short
        else:
            carry = b""
            yield last


def _unquote(body: bytes) -> bytes:
    return _QUOTED_FROM_LINES.sub(b"", body) if b">From " in body else body


def _mbox_documents(path: str, src, before: int | None = None) -> Iterator[Document]:
    """The messages in src (readline()), whose first line is a From_ line: an mbox when another
    From_ line follows a blank line (each message without its From_ line, quoting undone, id
    FILE:LINE), else one document (all of it). At most MAX_DOCUMENT_BYTES of each is kept.
    ``before``: src is a byte range of an mbox file (mbox_starts), ``before`` lines before it."""
    cap = MAX_DOCUMENT_BYTES
    first, first_size = [], 0  # the first line, kept for a file that holds one message
    buf, size = io.BytesIO(), 0  # the current message, after its From_ line
    mbox = bool(before)  # a second From_ line seen: the file is an mbox (a later range's is)
    n = -1 if before is None else before - 1  # the current line's index (as in data.splitlines())
    start = before or 0  # the index of the current message's From_ line
    blank = False      # the current line is blank, so far
    at_start = True    # the next piece starts a line
    for piece in _line_pieces(src):
        if at_start:
            n += 1
            prev_blank, blank = blank, True
            if n and prev_blank and _FROM_LINE.match(piece):
                body = buf.getvalue()
                buf = None
                yield Document(f"{path}:{start + 1}", body if mbox else _unquote(body))
                body = first = None
                mbox, start, buf, size = True, n, io.BytesIO(), 0
            elif mbox and piece[:1] == b">" and _QUOTED_FROM.match(piece):
                piece = piece[1:]
        at_start = piece[-1:] in (b"\n", b"\r")
        if blank and not piece.isspace():
            blank = False
        if n == start:  # a From_ line
            if n == 0 and first_size < cap:
                first.append(piece[:cap - first_size])
                first_size += len(first[-1])
            continue
        if size >= cap:
            continue
        if size + len(piece) > cap:
            piece = piece[:cap - size]
        buf.write(piece)
        size += len(piece)
    if mbox:
        yield Document(f"{path}:{start + 1}", buf.getvalue())
    elif before is not None:  # the first range, of one message: as the next From_ line yields it
        yield Document(f"{path}:{start + 1}", _unquote(buf.getvalue()))
    else:  # one message: from its first line on, at most the cap
        body = buf.getvalue()
        buf = None
        yield Document(path, b"".join(first) + body[:cap - first_size])


class _Bounded:
    """readline() of at most ``size`` bytes of a stream."""

    def __init__(self, inp: _Input, size: int):
        self._inp, self._left = inp, size

    def readline(self, limit: int) -> bytes:
        if self._left <= 0:
            return b""
        line = self._inp.readline(min(limit, self._left))
        self._left -= len(line)
        return line


def mbox_starts(path: str, every: int) -> list[int]:
    """Where messages of an mbox file start, about ``every`` bytes apart (0 first): each the
    first From_ line after a blank line from a cut on, as _mbox_documents cuts messages, so that
    byte ranges between them (mbox_range_documents) hold whole messages. [0] for a file that
    _file_documents would not split there (not starting with a From_ line, gzip, one message)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
            if _FROM_LINE.match(head) is None:
                return [0]
            size = os.fstat(f.fileno()).st_size
            starts = [0]
            for cut in range(every, size, every):
                if cut > starts[-1]:
                    at = _separator_at(f, cut, size)
                    if at is None:
                        break
                    if at > starts[-1]:
                        starts.append(at)
            return starts
    except OSError:
        return [0]  # (the reader reports it)


def _separator_at(f, cut: int, size: int, back: int = 1 << 16, window: int = 1 << 20) -> int | None:
    """The offset of the first From_ line after a blank line at or after ``cut`` (a line's start,
    the line before it seen from up to ``back`` bytes before), or None. Read ``window`` bytes
    at a time, each window starting ``back`` bytes before where the last one's search ended (the
    window doubled: a message of gigabytes was read whole into memory, and scanned again each
    time), and a From_ line taken only when the window holds 4 KiB after its start, or the
    file's end."""
    while True:
        b = min(back, cut)
        f.seek(cut - b)
        data = f.read(b + window)
        at_end = cut - b + len(data) >= size
        end = len(data) if at_end else max(b + 1, len(data) - 4096)
        for m in _FROM_LINE.finditer(data, b):
            pos = m.start()
            if pos >= end:
                break
            if data[pos - 1] in b"\r\n" and _blank_line_before(data, pos):
                return cut - b + pos
        if at_end:
            return None
        cut = cut - b + end


def mbox_range_documents(path: str, start: int, size: int, before: int) -> Iterator[Document]:
    """The messages of an mbox file's byte range from ``start`` (one of mbox_starts), ``size``
    bytes, ``before`` lines (as bytes.splitlines counts them) before it: as the whole file's."""
    with _Input(path, offset=start) as inp:
        yield from _mbox_documents(path, _Bounded(inp, size), before)


def count_line_ends(path: str, start: int, size: int) -> int:
    """Lines (as bytes.splitlines counts them: \\n, \\r\\n, a lone \\r) that end in a byte range."""
    n, left, last = 0, size, b""
    with open(path, "rb") as f:
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


def _file_documents(path: str) -> Iterator[Document]:
    """One message file, or the messages of an mbox file."""
    data = _small_file(path)
    if data is not None and _one_message(data := data[:MAX_DOCUMENT_BYTES]):
        yield Document(path, data)  # (the common case: as below, without _Input's machinery)
        return
    with _Input(path) as inp:
        data = _read_upto(inp, MAX_DOCUMENT_BYTES)
        if _one_message(data):
            # one message, even with an mbox-style From_ line (as SpamAssassin's corpus)
            yield Document(path, data)
            return
        src = _Chained(data, inp)  # an mbox (or a file too long to tell yet): read it line by line
        del data
        yield from _mbox_documents(path, src)


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def _one_message(data: bytes) -> bool:
    """Whether a file's first MAX_DOCUMENT_BYTES (all of it, when shorter) are one message, even
    with an mbox-style From_ line (as SpamAssassin's corpus), rather than an mbox (or a file
    too long to tell yet) to read line by line."""
    return _FROM_LINE.match(data) is None or (len(data) < MAX_DOCUMENT_BYTES and not _has_separator(data))


def _small_file(path: str) -> bytes | None:
    """A regular file shorter than _FIRST that is not gzip, read as _Input reads one (whole, in
    one read), with five system calls and no file object: a mail corpus is mostly such files
    (spamassassin-2002's 3,250 were read in 33 ms through _Input, 29 ms so). None for anything
    else, an error included: _Input then reads it, and reports the error, as ever."""
    try:  # (a regular file alone is opened here: a FIFO opened, closed and opened again by
        if not stat.S_ISREG(os.stat(path).st_mode):  # _Input lost its writer's data, or hung)
            return None
        fd = os.open(path, _READ_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.read(fd, _FIRST)
    except OSError:
        return None
    finally:
        os.close(fd)
    return head if len(head) < _FIRST and head[:2] != b"\x1f\x8b" else None


def _one_document(path: str, stdin: BinaryIO | None = None) -> Iterator[Document]:
    with _Input(path, stdin) as inp:
        yield Document(path, _read_upto(inp, MAX_DOCUMENT_BYTES))


def is_maildir(path: str) -> bool:
    return os.path.isdir(os.path.join(path, "cur")) and os.path.isdir(os.path.join(path, "new"))


def is_mh(path: str) -> bool:
    return os.path.isfile(os.path.join(path, ".mh_sequences"))


def _listdir(path: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(path) if not n.startswith("."))
    except OSError as e:
        raise _os_error(path, e) from None


def _entries(path: str) -> tuple[list[str], bytes]:
    """The names _listdir lists, in its order, and each one's kind (a byte): 1 a directory, 2 a
    regular file, 0 anything else, 255 not known yet (a symbolic link, or a file system whose
    directory entries do not say): _kind_of stats it as it is taken. From the directory's own
    entry types (os.scandir): no stat a plain file, where one each took 7.5 ms of train's
    parent on spamassassin-2002's 3,250 files. Read through the directory's descriptor (the
    entries' paths are their names: no path string made an entry), and kept as a list of
    names and one byte string: a directory's entries as (name, path, kind) held 7 MB of train's
    parent through the run at 16 copies of spamassassin-2002 (52,000 links)."""
    kinds: dict[str, int] = {}
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as e:
        raise _os_error(path, e) from None
    try:
        with os.scandir(fd) as it:
            for e in it:
                if e.name.startswith("."):
                    continue
                try:
                    kinds[e.name] = (255 if e.is_symlink() else 1 if e.is_dir(follow_symlinks=False)
                                     else 2 if e.is_file(follow_symlinks=False) else 0)
                except OSError:
                    kinds[e.name] = 255
    except OSError as e:
        raise _os_error(path, e) from None
    finally:
        os.close(fd)
    names = sorted(kinds)
    return names, bytes(kinds[n] for n in names)


def _taken_entries(top: str, names: list[str], kinds: bytes) -> Iterator[tuple[str, bool, bool]]:
    """_walk_files's (path, one message, is a directory) of a plain directory's entries, each
    path made, and a link stat'ed, as the walk takes it; what is neither passed by."""
    for name, kind in zip(names, kinds):
        p = os.path.join(top, name)
        what = _kind_of(p, kind)
        if what:
            yield p, False, what == "dir"


def _kind_of(path: str, kind: int) -> str | None:
    """"dir" or "file" (symbolic links followed), None for anything else or what cannot be
    stat'ed: an _entries kind, stat'ed where it is not known."""
    if kind == 255:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        kind = 1 if stat.S_ISDIR(st.st_mode) else 2 if stat.S_ISREG(st.st_mode) else 0
    return "dir" if kind == 1 else "file" if kind == 2 else None


def _report(error: NbtextError, on_error: OnError) -> None:
    if on_error is None:
        raise error
    on_error(error)


def _guarded(docs: Iterator[Document], on_error: OnError) -> Iterator[Document]:
    """docs; with on_error, an error reading them is reported there and ends them."""
    if on_error is None:
        return docs
    return _reporting(docs, on_error)


def _reporting(docs: Iterator[Document], on_error) -> Iterator[Document]:
    try:
        yield from docs
    except NbtextError as e:
        on_error(e)


def _maildir_files(path: str) -> Iterator[tuple[str, bool, bool]]:
    for sub in ("cur", "new"):
        d = os.path.join(path, sub)
        for name, kind in zip(*_entries(d)):
            p = os.path.join(d, name)
            if _kind_of(p, kind) == "file":
                yield p, True, False


def _walk(top: str, seen: set, on_error: OnError) -> Iterator[Document]:
    """Every document below top: a file (one message, or an mbox of many), a Maildir, an MH
    folder, a plain directory walked in name order. A directory already entered (its device and
    inode in ``seen``) is not entered again: symlink loops end."""
    for path, single in _walk_files(top, seen, on_error):
        yield from _listed_documents(path, single, on_error)


def _listed_documents(path: str, single: bool, on_error: OnError) -> Iterator[Document]:
    """file_documents of a file a walk listed: one gone since its directory was listed (a live
    Maildir's message moved or deleted meanwhile) is passed by, as the walk's stat of each
    entry as it took it used to pass it by (it now reads the entries' kinds from the listing:
    _entries). Looked for only when reading it fails."""
    docs = _one_document(path) if single else _file_documents(path)
    try:
        first = next(docs, None)
    except NbtextError as e:
        if not os.path.lexists(path):
            return iter(())
        _report(e, on_error)
        return iter(())
    return _guarded(itertools.chain([first], docs), on_error) if first is not None else iter(())


def file_documents(path: str, single: bool, on_error: OnError = None) -> Iterator[Document]:
    """The documents of one file the walk found (``single``: a Maildir's file, one message)."""
    return _guarded(_one_document(path) if single else _file_documents(path), on_error)


def _walk_files(top: str, seen: set, on_error: OnError) -> Iterator[tuple[str, bool]]:
    """The files _walk reads, in its order: (path, one message)."""
    stack = [iter([(top, False, None)])]  # iterators of (path, one message: a Maildir's
    # file, whether it is a directory: None when not yet known)
    while stack:
        try:
            entry = next(stack[-1], None)
        except NbtextError as e:  # a Maildir's cur/ or new/ that cannot be listed
            stack.pop()
            _report(e, on_error)
            continue
        if entry is None:
            stack.pop()
            continue
        path, single, is_dir = entry
        if single or not (os.path.isdir(path) if is_dir is None else is_dir):
            yield path, single
            continue
        try:
            st = os.stat(path)
        except OSError as e:
            if not (is_dir and isinstance(e, FileNotFoundError)):  # (a listed directory gone since:
                _report(_os_error(path, e), on_error)                # passed by, see _listed_documents)
            continue
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        if is_maildir(path):
            stack.append(_maildir_files(path))
            continue
        try:
            names, kinds = _entries(path)
        except NbtextError as e:
            _report(e, on_error)
            continue
        if is_mh(path):
            kind_of = dict(zip(names, kinds))
            names = sorted((n for n in names if n.isdigit()), key=int)
            kinds = bytes(kind_of[n] for n in names)
        stack.append(_taken_entries(path, names, kinds))


def mail_folder_files(path: str, on_error: OnError = None) -> Iterator[tuple[str, bool]]:
    """The files mail_folder_documents reads (not "-"), in its order: (path, one message)."""
    if not os.path.exists(path):
        _report(NbtextError(f"{path}: no such file or directory"), on_error)
        return
    yield from _walk_files(path, set(), on_error)


def mail_folder_documents(path: str, on_error: OnError = None) -> Iterator[Document]:
    """Every document below a path: a file (one message, or an mbox of many), a Maildir,
    an MH folder, or a plain directory walked recursively. Hidden names are skipped; no
    directory is entered twice. A single document is read up to MAX_DOCUMENT_BYTES.
    ``on_error``: a file that cannot be read is reported there (and the walk goes on)."""
    if path == "-":
        yield from _guarded(_one_document("-"), on_error)
        return
    if not os.path.exists(path):
        _report(NbtextError(f"{path}: no such file or directory"), on_error)
        return
    yield from _walk(path, set(), on_error)


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


def _short_repr(value) -> str:
    r = repr(value)
    return r if len(r) <= 60 else r[:57] + "..."


def _label_chars(label: str, where: str) -> str:
    if BAD_NAME_CHAR.search(label):
        raise NbtextError(f"{where}: bad label {_short_repr(label)}: a label cannot hold control "
                          f"characters (tab, newline, NUL, ...) or invalid Unicode")
    return label


def _line_label(label, where: str) -> str:
    """The label of a line: a string or an integer (JSON gives either; a finite float is kept as
    written, as before), stripped, not empty, without control characters."""
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
            parts = text.split()
            labels = [p[9:] for p in parts if p.startswith("__label__")]
            if labelled and not labels:
                raise NbtextError(f"{where}: no __label__ on this line")
            label = labels[0] if labels else None
            text = " ".join(p for p in parts if not p.startswith("__label__"))
        if labelled:
            label = _label_of(label, where, checked)
        yield Document(where, text, label)


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


# -- the two entry points -------------------------------------------------------------

def check_distinct(paths: list[str]) -> None:
    """Refuse labelled inputs of which one is another, or inside another (a folder listed twice,
    a label directory beside its corpus): their documents would be counted twice while the
    model's ledger lists each once, so `learn --forget` could take out only one of the two."""
    given: dict[str, str] = {}
    for path in paths:
        if path == "-":
            continue
        real = os.path.realpath(path)
        if real in given:
            raise NbtextError(f"{path}: given twice (also as {given[real]}); its documents would be "
                              "counted twice (and a model's ledger lists each once)")
        given[real] = path
    for real, path in given.items():
        up = os.path.dirname(real)
        while up != real:
            if up in given:
                raise NbtextError(f"{path}: inside {given[up]}, also given; its documents would be "
                                  "counted twice (and a model's ledger lists each once)")
            real, up = up, os.path.dirname(up)


def labelled_documents(sources: list[str], labelled: list[tuple[str, str]], opts: LineOptions,
                       stdin: BinaryIO | None = None, on_error: OnError = None,
                       deferred: bool = False) -> Iterator[Document | FileRef]:
    """Documents with labels from positional sources and ``--label LABEL PATH`` pairs.
    ``on_error``: a file that cannot be read or decoded is reported there, and reading goes
    on with the next file (None: the error is raised). ``deferred``: a label directory's
    small files come as FileRefs, read by whoever counts them (FileRef.read)."""
    for src in sources:
        if src == "-" or (os.path.exists(src) and not os.path.isdir(src)):
            yield from _guarded(line_documents(src, opts, labelled=True, stdin=stdin), on_error)
        elif os.path.isdir(src):
            yield from label_directory(src, on_error, deferred)
        else:
            _report(NbtextError(f"{src}: no such file or directory"), on_error)
    for label, path in labelled:
        _label_chars(label, "--label")
        docs = _one_document("-", stdin) if path == "-" else mail_folder_documents(path, on_error)
        for doc in _guarded(docs, on_error):
            doc.label = label
            yield doc


def label_directory(path: str, on_error: OnError = None, deferred: bool = False) -> Iterator[Document | FileRef]:
    """The documents below each label directory PATH/LABEL, labelled LABEL (``deferred``: a
    file of at most FileRef.LARGEST bytes that is not gzip as a FileRef, not read here)."""
    for file, single, label in label_directory_files(path, on_error):
        size = _plainly_readable(file) if deferred else None
        if size == _GONE:  # (gone since its directory was listed: passed by, see _listed_documents)
            continue
        if size is not None and size <= FileRef.LARGEST:
            yield FileRef(file, single, label, size, on_error)
            continue
        for doc in _listed_documents(file, single, on_error):
            doc.label = label
            yield doc


_GONE = -1  # (_plainly_readable: no such file any more)


def _plainly_readable(path: str) -> int | None:
    """The size of a regular file that opens and does not start with gzip's magic bytes, else
    None, or _GONE where there is no such file any more (its size from the open file: the walk
    stats no file). A FileRef's
    documents are held together, and a small gzip can hold a huge mbox (a 264 KB one, 45 MB of
    messages, took train to 1.6 GB instead of 200 MB), so gzip is read here, a message at a
    time, as before; so is a file that cannot be opened, whose error is then reported in the
    walk's order. Opened without waiting (a FIFO put in its place since the walk must not hang
    this); 3 system calls a file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return _GONE
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        return st.st_size if stat.S_ISREG(st.st_mode) and os.read(fd, 2) != b"\x1f\x8b" else None
    except OSError:
        return None
    finally:
        os.close(fd)


class FileRef:
    """A file a walk found, to be read where its documents are counted: train's forked workers
    read their own chunks' files (nbtext.batch.chunks.counted), so that the parent, which has
    the reduce to do, neither reads them nor sends their bytes. Its path, whether it is one
    message (a Maildir's file), the label its documents get, its size when the walk took it,
    and where an error reading it is reported (kept in this process: not pickled)."""

    __slots__ = ("path", "single", "label", "size", "on_error")
    # An mbox is read whole by the reader of a FileRef: only files this small, and not gzip
    # (_plainly_readable), are deferred; a larger one is read in the parent, message by
    # message, as before. (A file that grows, or turns into gzip, between the walk and its
    # reading is read whole all the same.)
    LARGEST = 1 << 20

    def __init__(self, path: str, single: bool, label: str | None, size: int, on_error: OnError = None):
        self.path, self.single, self.label, self.size, self.on_error = path, single, label, size, on_error

    def __reduce__(self):
        return FileRef, (self.path, self.single, self.label, self.size)

    def read(self) -> tuple[list[Document], list[NbtextError]]:
        """The file's documents, and the errors reading it (reported, not raised: the caller
        hands them to report() in the process that made the FileRef)."""
        errors: list[NbtextError] = []
        docs = list(file_documents(self.path, self.single, errors.append))
        for doc in docs:
            doc.label = self.label
        return docs, errors

    def report(self, error: NbtextError) -> None:
        """An error read() returned, reported as the walk would have: raised without on_error."""
        _report(error, self.on_error)


def label_directory_files(path: str, on_error: OnError = None) -> Iterator[tuple[str, bool, str]]:
    """The files label_directory reads, in its order: (path, one message, label); each one's
    documents are file_documents(path, one message) (a cluster's workers read them)."""
    try:
        labels = [n for n in _listdir(path) if os.path.isdir(os.path.join(path, n))]
        if not labels:
            raise NbtextError(
                f"{path}: no label directories in it (expected {path}/LABEL/... such as "
                f"{path}/spam and {path}/ham; or use --label LABEL {path})")
        st = os.stat(path)
    except OSError as e:
        _report(_os_error(path, e), on_error)
        return
    except NbtextError as e:
        _report(e, on_error)
        return
    for label in labels:
        d = os.path.join(path, label)
        try:
            _label_chars(label, d)
        except NbtextError as e:
            _report(e, on_error)
            continue
        # a walk per label, that never enters the corpus directory again (a link to ..)
        for file, single in _walk_files(d, {(st.st_dev, st.st_ino)}, on_error):
            yield file, single, label


def line_files_named(inputs: list[str]) -> list[tuple[str, str]]:
    """(path, format) of the regular files among inputs whose names say they are line files
    (.tsv, .csv, .jsonl, ...): without --lines or --input-format each is one document, which
    predict says on stderr (their lines are not what a user meant to score as one)."""
    named = []
    for path in inputs:
        name = path[:-3] if path.endswith(".gz") else path
        fmt = EXTENSIONS.get(os.path.splitext(name)[1].lower())
        if fmt and path != "-" and os.path.isfile(path):
            named.append((path, fmt))
    return named


def input_documents(inputs: list[str], lines: bool = False, input_format: str | None = None,
                    opts: LineOptions = LineOptions(), stdin: BinaryIO | None = None,
                    on_error: OnError = None) -> Iterator[Document]:
    """Documents to score. ``lines``: every line of each input is a document (FILE:LINE);
    ``input_format``: read inputs as line files of that format (jsonl: the text field).
    ``on_error``: a file that cannot be read or decoded is reported there, and reading goes
    on with the next file (None: the error is raised)."""
    for path in inputs:
        if lines or input_format:
            line_opts = LineOptions(input_format or "lines", opts.label_column, opts.text_column)
            yield from _guarded(line_documents(path, line_opts, labelled=False, stdin=stdin), on_error)
        elif path == "-":
            yield from _guarded(_one_document("-", stdin), on_error)
        else:
            yield from mail_folder_documents(path, on_error)
