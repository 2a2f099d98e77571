"""Mail containers: a file that holds one message, or an mbox of many (From_ lines after a blank
line; mboxrd's ">From " quoting undone), read a line at a time with at most MAX_DOCUMENT_BYTES
of each message kept; and an mbox file's byte ranges of whole messages, for a cluster's workers."""
from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator

from .document import Document, _guarded
from .opening import MAX_DOCUMENT_BYTES, _CHUNK, _Input, _one_document, _read_upto, open_file

TYPE_CHECKING = False  # (typing is not imported: `nbtext classify` imports this module)
if TYPE_CHECKING:
    from .document import OnError

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
        with open_file(path) as f:
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
    at a time, each window starting ``back`` bytes before where the last one's search ended (a
    window of one size: memory stays bounded, and no byte is scanned twice over, however long a
    message is), and a From_ line taken only when the window holds 4 KiB after its start, or
    the file's end."""
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


def _file_documents(path: str) -> Iterator[Document]:
    """One message file, or the messages of an mbox file."""
    with _Input(path) as inp:
        data = _read_upto(inp, MAX_DOCUMENT_BYTES)
        if not _one_message(data):
            src = _Chained(data, inp)  # an mbox (or a file too long to tell yet): read it line by line
            del data
            yield from _mbox_documents(path, src)
            return
    # one message, even with an mbox-style From_ line (as SpamAssassin's corpus); its file closed
    yield Document(path, data)


def _one_message(data: bytes) -> bool:
    """Whether a file's first MAX_DOCUMENT_BYTES (all of it, when shorter) are one message, even
    with an mbox-style From_ line (as SpamAssassin's corpus), rather than an mbox (or a file
    too long to tell yet) to read line by line."""
    return _FROM_LINE.match(data) is None or (len(data) < MAX_DOCUMENT_BYTES and not _has_separator(data))


def file_documents(path: str, single: bool, on_error: OnError = None) -> Iterator[Document]:
    """The documents of one file the walk found (``single``: a Maildir's file, one message)."""
    return _guarded(_one_document(path) if single else _file_documents(path), on_error)
