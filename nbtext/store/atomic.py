"""Writing a model file atomically, and the lock that serializes writers of one model.

A file is written to a temporary file in the same directory, fsynced and renamed over the old
one, so readers and crashes see either the old model or the new one.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from ..errors import NbtextError


@contextlib.contextmanager
def locked(path: str) -> Iterator[None]:
    """An exclusive lock beside the model, so concurrent learn/merge runs lose no counts."""
    import fcntl

    try:
        fd = open(path + ".lock", "a")
    except OSError as e:
        raise NbtextError(f"{path}.lock: cannot create lock file: {e.strerror}") from None
    with fd:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)


def _remove_stale_temporaries(directory: str, base: str) -> None:
    """Temporary files of writers that were killed (kill -9 leaves them behind)."""
    import glob

    for tmp in glob.glob(os.path.join(glob.escape(directory), f".{glob.escape(base)}.*.tmp")):
        pid = tmp[len(os.path.join(directory, f".{base}.")):-len(".tmp")]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        except PermissionError:
            pass  # alive, and someone else's


def save(model, path: str) -> None:
    """Write a Model atomically: a temporary file in the same directory, fsync, rename over."""
    from .codec import encode_pieces

    write_atomically(encode_pieces(model), path)


def write_atomically(pieces: list, path: str) -> None:
    """Write the pieces (bytes) as the file at path: a temporary file in the same directory,
    fsync, rename over."""
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    tmp = os.path.join(directory, f".{base}.{os.getpid()}.tmp")
    _remove_stale_temporaries(directory, base)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileNotFoundError:
        raise NbtextError(f"{path}: directory {directory} does not exist") from None
    except OSError as e:
        raise NbtextError(f"{path}: cannot write model file: {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            for piece in pieces:
                f.write(piece)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise NbtextError(f"{path}: cannot write model file: {e.strerror or e}") from None
        raise
    try:
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass  # some filesystems cannot fsync a directory; the rename is still atomic
