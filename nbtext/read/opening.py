"""Opening inputs: the one way a path (a regular file, a FIFO, a device) or stdin is opened and
read, gzip decompressed as it is read, a document read up to MAX_DOCUMENT_BYTES, and an OSError
turned into a NbtextError naming the path."""
from __future__ import annotations

import errno
import io
import os
import stat
import sys
from collections.abc import Iterator

from ..errors import NbtextError
from .document import Document

TYPE_CHECKING = False  # (typing is not imported: `nbtext classify` imports this module)
if TYPE_CHECKING:
    from typing import BinaryIO

# The most bytes read of one document (a message file, stdin read as one document, one message
# of an mbox; after decompression): the rest is left unread, so that a small gzip of zeros,
# /dev/zero or an endless pipe is not held whole. Mail servers refuse far smaller messages, and
# the first 64 MiB of a document say what it is about; tests/test_bad_input.py's 50 MB message is
# kept whole. A line of a line file longer than this is refused (cutting it would break its syntax).
MAX_DOCUMENT_BYTES = 64 << 20

_CHUNK = 1 << 20  # bytes asked of a stream at a time
_FIRST = 1 << 16  # bytes asked of a regular file first: a file shorter than this is read whole


def _os_error(path: str, e: OSError) -> NbtextError:
    reason = {FileNotFoundError: "no such file or directory", PermissionError: "permission denied",
              IsADirectoryError: "is a directory"}.get(type(e), e.strerror or str(e))
    return NbtextError(f"{path}: {reason}")


GZIP_MAGIC = b"\x1f\x8b"
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def _open(path: str, wait: bool = True) -> tuple[int, os.stat_result]:
    """``path`` opened for reading: its descriptor, and its fstat. Every path the readers read
    is opened here. ``wait=False``: a FIFO without a writer is not waited for (a walk's probe
    must not hang on one). A directory raises IsADirectoryError, as open() does; anything else
    that cannot be opened, OSError as os.open raises it."""
    fd = os.open(path, _READ_FLAGS if wait else _READ_FLAGS | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def open_file(path: str) -> BinaryIO:
    """``path`` opened as open(path, "rb") opens it, for reading its byte ranges (seek, read)."""
    return open(_open(path)[0], "rb")


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
        self.path, self._fd, self._file, self.gzip = path, None, None, False
        self._whole: bytes | None = None  # a small regular file, read whole at once
        if path == "-" or stdin is not None:
            if stdin is None:
                if sys.stdin is None:
                    raise NbtextError("-: standard input is closed")
                stdin = sys.stdin.buffer
        head = None
        try:
            if stdin is not None:
                raw = stdin
            else:
                self._fd, st = _open(path)
                if offset:
                    os.lseek(self._fd, offset, os.SEEK_SET)
                elif stat.S_ISREG(st.st_mode):
                    # One read for a small file (a message a file: most of a mail corpus), which
                    # then needs no file object and no buffered reader. A short read of a regular
                    # file is its end; of a pipe or device it is not, so they take the general path.
                    head = os.read(self._fd, _FIRST)
                    if len(head) < _FIRST and head[:2] != GZIP_MAGIC:
                        self._whole, self.errors, self._buffered = head, OSError, None
                        return
                raw = self._opened()
            if head is None:
                head = raw.read(1)
                if head == b"\x1f" and not offset:
                    head += raw.read(1)
        except OSError as e:
            self.close()
            raise _os_error(path, e) from None
        src = _Prefixed(head, raw)
        if head[:2] == GZIP_MAGIC:
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
            self._buffered = io.BufferedReader(_Prefixed(self._whole or b"", self._opened()), 1 << 16)
            self._whole = None
        return self._buffered

    def _opened(self) -> io.FileIO:
        """The open file as an unbuffered file object, made when first needed."""
        if self._file is None:
            self._file = io.FileIO(self._fd, "rb")  # (which closes the descriptor from now on)
        return self._file

    def error(self, e: Exception) -> NbtextError:
        if self.gzip and not (isinstance(e, OSError) and e.errno is not None):
            return NbtextError(f"{self.path}: broken gzip data ({e})")
        return _os_error(self.path, e)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        elif self._fd is not None:
            os.close(self._fd)
        self._fd = None

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


_GONE = -1  # (_plainly_readable: no such file any more)


def _plainly_readable(path: str) -> int | None:
    """The size of a regular file that opens and does not start with gzip's magic bytes, else
    None, or _GONE where there is no such file any more (its size from the open file: the walk
    stats no file). A FileRef's
    documents are held together, and a small gzip can hold a huge mbox, so gzip is read in
    the walk's process, a message at a time; so is a file that cannot be opened, whose error is
    then reported in the walk's order. Opened without waiting (a FIFO put in its place since the walk must not hang
    this); 3 system calls a file."""
    try:
        fd, st = _open(path, wait=False)
    except FileNotFoundError:
        return _GONE
    except (OSError, ValueError):
        return None
    try:
        return st.st_size if stat.S_ISREG(st.st_mode) and os.read(fd, 2) != GZIP_MAGIC else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _one_document(path: str, stdin: BinaryIO | None = None) -> Iterator[Document]:
    with _Input(path, stdin) as inp:
        yield Document(path, _read_upto(inp, MAX_DOCUMENT_BYTES))
