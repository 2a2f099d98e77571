"""Walks: the files below a path (a file, a Maildir, an MH folder, a plain directory walked in
name order, hidden names skipped, no directory entered twice: symlink loops end), each read as
one message or an mbox; label directories (PATH/LABEL/...); and FileRefs, a walk's small files
handed to the workers that count them, unread."""
from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Iterator

from ..errors import NbtextError
from .document import Document, _guarded, _label_chars, _report
from .mail import _file_documents, file_documents
from .opening import _GONE, _one_document, _os_error, _plainly_readable

TYPE_CHECKING = False  # (typing is not imported: `nbtext classify` imports this module)
if TYPE_CHECKING:
    from .document import OnError


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
    entry types (os.scandir): no stat a plain file, which would sit on train's serial path.
    Read through the directory's descriptor (the entries' paths are their names: no path
    string made an entry), and kept as a list of names and one byte string, the smallest form
    a large corpus's listing can be held in through the run."""
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
    Maildir's message moved or deleted meanwhile) is passed by, as one gone before the listing
    is (the walk reads the entries' kinds from the listing, _entries, and stats no file).
    Looked for only when reading it fails."""
    docs = _one_document(path) if single else _file_documents(path)
    try:
        first = next(docs, None)
    except NbtextError as e:
        if not os.path.lexists(path):
            return iter(())
        _report(e, on_error)
        return iter(())
    return _guarded(itertools.chain([first], docs), on_error) if first is not None else iter(())


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


class FileRef:
    """A file a walk found, to be read where its documents are counted: train's forked workers
    read their own chunks' files (nbtext.batch.chunks.counted), so that the parent, which has
    the reduce to do, neither reads them nor sends their bytes. Its path, whether it is one
    message (a Maildir's file), the label its documents get, its size when the walk took it,
    and where an error reading it is reported (kept in this process: not pickled)."""

    __slots__ = ("path", "single", "label", "size", "on_error")
    # An mbox is read whole by the reader of a FileRef: only files this small, and not gzip
    # (_plainly_readable), are deferred; a larger one is read in the parent, message by
    # message. (A file that grows, or turns into gzip, between the walk and its
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


def label_directory_files(path: str, on_error: OnError = None, first: bool = False
                          ) -> Iterator[tuple[str, bool, str]]:
    """The files label_directory reads, in its order: (path, one message, label); each one's
    documents are file_documents(path, one message) (a cluster's workers read them).
    ``first``: each label's first file alone (that the label has one)."""
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
            if first:
                break
