"""Writing a model file atomically, and the lock that serializes writers of one model.

A file is written to a temporary file beside its real target (a symlink is followed: the link
stays and its target is updated), fsynced and renamed over the old one, so readers and crashes
see either the old model or the new one. Only a regular file is ever replaced (never a device,
a directory or a FIFO, whoever runs it), and the new file keeps the old one's permissions and,
where the writer may set them, its owner: a vocabulary holds words and addresses from private
mail.
"""
from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator

from ..errors import NbtextError


def target(path: str) -> str:
    """The file a write to ``path`` replaces: symlinks followed; refused when it exists and is
    not a regular file."""
    if not path:  # (realpath would make it the current directory)
        raise NbtextError("'': an empty file name names no file to write")
    real = os.path.realpath(path)
    try:
        st = os.stat(path)  # (the name given: /dev/stdout is a pipe, whatever realpath says)
    except FileNotFoundError:
        return real
    except OSError as e:
        raise NbtextError(f"{path}: cannot write: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise NbtextError(f"{path}: is {kind}; nbtext writes only regular files")
    return real


def check_target(path: str, inputs: list[str] = ()) -> str:
    """target(path), checked before any work: also refused when it is one of ``inputs`` or
    inside one of them (a model written into a label directory is read back as a document
    by the next run)."""
    real = target(path)
    for given in inputs:
        if given == "-":
            continue
        source = os.path.realpath(given)
        if real == source or real.startswith(source.rstrip(os.sep) + os.sep):
            where = "is" if real == source else "is inside"
            raise NbtextError(f"{path}: {where} the input {given}; write the model elsewhere")
    # (a temporary made and removed: a directory that cannot take the new file, read-only or
    # not ours, is refused here, not after the work when the model is saved)
    tmp, fd = _new_temporary(path, real, 0o600)
    os.close(fd)
    _unlink_quietly(tmp)
    return real


class Busy(NbtextError):
    """The model's lock was held by another process for longer than the caller would wait."""


@contextlib.contextmanager
def locked(path: str, wait: float | None = None) -> Iterator[None]:
    """An exclusive lock beside the model (beside its real file, so that every name of it takes
    the same lock), so concurrent learn/merge runs lose no counts. ``wait``: the seconds to
    wait for it at most, then Busy (the daemon's learns, which a client waits for); None: as
    long as it takes (the command line's, which its user can interrupt)."""
    import fcntl
    import time

    lock = target(path) + ".lock"
    try:  # (O_NONBLOCK: a FIFO put there must not hang the open; it is refused below)
        fd = os.fdopen(os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK, 0o600), "a")
    except OSError as e:
        raise NbtextError(f"{lock}: cannot open lock file: {e.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd.fileno()).st_mode):
        fd.close()
        raise NbtextError(f"{lock}: is not a regular file; cannot lock the model with it")
    with fd:
        if wait is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        else:  # (flock has no time limit: tried, then tried again a little later)
            deadline, pause = time.monotonic() + wait, 0.001
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise Busy(f"{lock}: held by another process for {wait:g} s; try again") from None
                    time.sleep(pause)
                    pause = min(pause * 2, 0.05)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)


def _temporary(directory: str, base: str, mode: int) -> tuple[str, int]:
    """A new temporary file beside the target, open for writing and flock-ed for as long as it
    is open: its name is unique (pid and random part, O_EXCL), so no stale file, even one left
    by a dead writer whose pid is now ours (pid 1 in every container), ever stands in its way;
    the lock is what tells the living writers' temporaries from the dead ones'."""
    import fcntl
    import secrets

    while True:
        tmp = os.path.join(directory, f".{base}.{os.getpid()}-{secrets.token_hex(8)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:  # (a cleaner may have taken it between the open and the lock: then take another)
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.path.samestat(os.fstat(fd), os.stat(tmp)):
                return tmp, fd
        except FileNotFoundError:
            pass
        except BaseException:
            os.close(fd)
            _unlink_quietly(tmp)
            raise
        os.close(fd)


def _new_temporary(path: str, real: str, mode: int) -> tuple[str, int]:
    """_temporary beside ``real``, the target of ``path``; a directory that cannot take it is
    refused, naming ``path``."""
    directory = os.path.dirname(real)
    try:
        return _temporary(directory, os.path.basename(real), mode)
    except OSError as e:
        if not os.path.isdir(directory):
            raise NbtextError(f"{path}: directory {directory} does not exist") from None
        raise NbtextError(f"{path}: cannot write: {e.strerror}") from None


def _remove_stale_temporaries(directory: str, base: str) -> None:
    """Temporary files of writers that were killed (kill -9 leaves them behind), removed only
    when provably stale: nobody holds its lock (a writer holds it until its rename, and the
    kernel drops it when the writer dies, whatever its pid became since). A temporary named by
    a pid alone (older nbtext, which did not lock it) is stale when that pid is gone."""
    import fcntl
    import glob

    prefix = os.path.join(directory, f".{base}.")
    for tmp in glob.glob(os.path.join(glob.escape(directory), f".{glob.escape(base)}.*.tmp")):
        name = tmp[len(prefix):-len(".tmp")]
        pid, _, unique = name.partition("-")
        if not pid.isdigit() or (unique and not unique.isalnum()):
            continue
        if not unique:
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                _unlink_quietly(tmp)
            except (PermissionError, OverflowError):
                pass  # alive, and someone else's
            continue
        try:  # (O_NONBLOCK, O_NOFOLLOW: only a regular file of ours, never a hang on a FIFO)
            fd = os.open(tmp, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its writer is alive
            try:
                if os.path.samestat(os.fstat(fd), os.stat(tmp)):
                    _unlink_quietly(tmp)
            except FileNotFoundError:
                pass
        finally:
            os.close(fd)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def save(model, path: str) -> None:
    """Write a Model atomically: a temporary file in the same directory, fsync, rename over."""
    from .codec import encode_pieces

    write_atomically(encode_pieces(model), path)


def write_atomically(pieces: list, path: str) -> None:
    """Write the pieces (bytes) as the file at path: a temporary file beside its real target,
    fsync, rename over; the old file's mode and owner kept (a new file: 0666 less the umask)."""
    real = target(path)
    directory, base = os.path.dirname(real), os.path.basename(real)
    try:
        old = os.stat(real)
    except FileNotFoundError:
        old = None
    _remove_stale_temporaries(directory, base)
    tmp, fd = _new_temporary(path, real, 0o666 if old is None else 0o600)
    try:  # (open, so locked, until renamed: an open temporary is never taken for a stale one)
        with os.fdopen(fd, "wb") as f:
            if old is not None:
                _keep_owner_and_mode(f.fileno(), old)
            for piece in pieces:
                f.write(piece)
            f.flush()
            os.fsync(f.fileno())
            os.replace(tmp, real)
    except BaseException as e:
        _unlink_quietly(tmp)
        if isinstance(e, OSError):
            raise NbtextError(f"{path}: cannot write: {e.strerror or e}") from None
        raise
    try:
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass  # some filesystems cannot fsync a directory; the rename is still atomic


def _keep_owner_and_mode(fd: int, old: os.stat_result) -> None:
    """Give the new file the old one's owner (where this process may) and permission bits."""
    if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.fchown(fd, old.st_uid, old.st_gid)
        except PermissionError:
            try:
                os.fchown(fd, -1, old.st_gid)  # a group the writer is in: at least that
            except PermissionError:
                pass  # not root: the file becomes the writer's, as any editor's save does
    os.fchmod(fd, stat.S_IMODE(old.st_mode))
