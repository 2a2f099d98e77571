"""Worker processes forked from the parent, for the map over chunks (nbtext.batch.chunks) and
calibration's folds (nbtext.batch.train.FoldWorkers): the standard library's
ProcessPoolExecutor with the fork start method.

Why forked rather than joblib's loky: a loky worker is a new interpreter that imports joblib,
numpy and nbtext before its first chunk, while the parent waits and the two compete for the
cores (docs/bench.md). A forked worker has the parent's imports and objects already (the
function it runs is given at the fork, never pickled) and answers its first chunk at once.
Loky stays where forking is not safe (nbtext.batch.chunks.fork_safe): other than Linux, or a
library caller's process with threads of its own.

Tasks and results are pickled between a process and its own forked copies, over pipes that no
other process holds, as multiprocessing does; no file is ever unpickled (model files are data,
nbtext.store). A result's arrays travel beside its pickle, each read straight into an array of
its own (_result_queue), where multiprocessing's receive copies each byte three times more (a
buffer per read, the message, the unpickler's bytes): on the parent's serial path (docs/bench.md).

A worker ignores Ctrl-C and SIGTERM's handler of the parent's (the parent stops the pool), ends
with its parent (``on_fork``: batch.chunks.watch_parent) and its garbage collector leaves the
parent's objects alone (gc.freeze: a finalizer of the parent's, a temporary file's, must not run
in a copy).
"""
from __future__ import annotations

import os
import pickle
import signal
import struct
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from ..errors import NbtextError


class WorkerError(NbtextError):
    """A worker process ended without answering (killed, or out of memory)."""


# Tasks out per worker before the first result is read. Results are given out in input order, so
# a chunk slower than its neighbours holds up the others' results: 4 keeps the workers busy while
# the parent reduces (docs/bench.md). Past AHEAD_ALWAYS a worker, tasks go out only while those
# out hold under AHEAD_BYTES (``size``): a walk's chunks are file references (small), but an
# mbox's or stdin's carry their documents' bytes, which stay at 2 a worker.
AHEAD = 4
AHEAD_ALWAYS = 2
AHEAD_BYTES = 4 << 20

_run: Callable | None = None  # (in a worker: the function its tasks are given to)


def _start(fn: Callable, on_fork: Callable | None, told: int) -> None:
    """A worker's first act: keep fn, say its pid on the ``told`` pipe, leave signals to the parent."""
    import gc

    global _run
    _run = fn
    gc.freeze()  # (the parent's objects are never this process's garbage to finalize)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # (the parent's handler raises, to clean up)
    os.write(told, os.getpid().to_bytes(4, "little"))
    if on_fork:
        on_fork()


def _result_queue(ctx):
    """The pool's result queue: multiprocessing's SimpleQueue (which ProcessPoolExecutor asks its
    context for), each message framed so that the parent copies a result's arrays once. A worker
    pickles the result with protocol 5, its contiguous buffers (numpy's arrays) out of band, and
    writes the frame (_HEAD: the pickle's bytes and the number of buffers, then each buffer's
    size; the pickle; the buffers) under the queue's write lock; the parent's reader (the
    executor's thread, which calls recv) reads each buffer into an array of its own and unpickles
    with them: no array shares memory with another, so one kept keeps no other's bytes. Only the
    pool's own processes hold this pipe."""
    from multiprocessing.queues import SimpleQueue

    class Queue(SimpleQueue):
        def put(self, obj):  # (in a worker)
            _send(self._writer.fileno(), self._wlock, obj)

    q = Queue(ctx=ctx)
    q._reader.recv = lambda: _receive(q._reader.fileno())
    return q


class _Context:
    """The fork context, but for the result queue it makes (_result_queue)."""

    def __init__(self):
        import multiprocessing

        self._ctx = multiprocessing.get_context("fork")

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    def SimpleQueue(self):
        return _result_queue(self._ctx)


_HEAD = struct.Struct("<QI")  # a frame's pickle bytes and its buffers (each size then as <Q)


def _send(fd: int, lock, obj) -> None:
    """obj framed (_result_queue) onto the pipe fd, under ``lock`` (None: no other writer)."""
    from multiprocessing.reduction import ForkingPickler

    buffers, body = [], _Sink()
    ForkingPickler(body, 5, True, buffers.append).dump(obj)  # (its __init__ takes no keywords)
    raws = [b.raw() for b in buffers]
    pieces = [_HEAD.pack(body.size, len(raws)) + struct.pack(f"<{len(raws)}Q", *(r.nbytes for r in raws)),
              *body.parts, *raws]
    if lock is None:
        _write_all(fd, pieces)
    else:
        with lock:
            _write_all(fd, pieces)


class _Sink:
    """A file the pickler writes to, keeping the pieces (joined by the system call, not here)."""

    def __init__(self):
        self.parts, self.size = [], 0

    def write(self, b) -> int:
        self.parts.append(b)
        self.size += len(b)
        return len(b)


def _write_all(fd: int, pieces: list) -> None:
    views = [memoryview(p).cast("B") for p in pieces if len(p)]
    while views:
        n = os.writev(fd, views[:512])  # (IOV_MAX is 1024 on Linux)
        while n:
            if n >= len(views[0]):
                n -= len(views.pop(0))
            else:
                views[0], n = views[0][n:], 0


def _receive(fd: int):
    """The next frame's object (_result_queue); EOFError at the end of the pipe, as Connection.recv."""
    import numpy as np
    from multiprocessing.reduction import ForkingPickler

    size, n = _HEAD.unpack(_read(fd, bytearray(_HEAD.size), first=True))
    sizes = struct.unpack(f"<{n}Q", _read(fd, bytearray(8 * n)))
    body = _read(fd, bytearray(size))
    return ForkingPickler.loads(body, buffers=[_read(fd, np.empty(s, dtype=np.uint8)) for s in sizes])


def _read(fd: int, into, first: bool = False):
    """``into`` filled from the pipe fd."""
    view, got = memoryview(into).cast("B"), 0
    while got < len(view):
        n = os.readv(fd, [view[got:]])
        if not n:
            raise EOFError if first and not got else OSError("got end of file during message")
        got += n
    return into


def _call(task):
    try:
        return _run(task)
    except Exception as e:  # (sent to the parent, which raises it)
        if _pickles(e):
            raise
        text = f"{type(e).__name__}: {e}"
    raise RuntimeError(text)  # (one that does not pickle, as its text; raised here: without it as context)


def _pickles(e: Exception) -> bool:
    try:
        pickle.dumps(e)
        return True
    except Exception:
        return False


def _fork_all(executor) -> None:
    """Every worker forked now, before the executor starts its thread, where the executor would
    fork them one at a time as tasks find none idle (CPython 3.9.0-3.9.12 and 3.10.0-3.10.4,
    before gh-90622; they lack _safe_to_dynamically_spawn_children): the pids awaited at the
    start would then never all come, and later workers would be forked from a parent with threads."""
    if getattr(executor, "_safe_to_dynamically_spawn_children", True):
        for _ in range(executor._max_workers):
            executor._adjust_process_count()  # (none idle yet: each call forks one)


class ForkedWorkers:
    """``n_jobs`` worker processes forked at once, each computing fn(task) for the tasks that
    ``map`` sends it; ``on_fork`` runs in each right after it is forked. Closing (or leaving
    the ``with``) ends them."""

    def __init__(self, fn: Callable, n_jobs: int, on_fork: Callable | None = None):
        from concurrent.futures import ProcessPoolExecutor

        out, told = os.pipe()
        try:
            self.executor = ProcessPoolExecutor(n_jobs, mp_context=_Context(),
                                                initializer=_start, initargs=(fn, on_fork, told))
            self.n_jobs, self.pids = n_jobs, []
            # The fork start method forks every worker at the first task: here, so that they are
            # forked within the caller's window (Ctrl-C ignored, buffers withheld).
            _fork_all(self.executor)
            self.executor.submit(int).result()
            for _ in range(n_jobs):
                self.pids.append(int.from_bytes(os.read(out, 4), "little"))
        except BaseException:
            if hasattr(self, "executor"):
                self.close()
            raise
        finally:
            os.close(out)
            os.close(told)

    def submit(self, task):
        """fn(task)'s future; WorkerError where a worker has died already (the pool is broken)."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            return self.executor.submit(_call, task)
        except BrokenProcessPool:
            raise self._died() from None

    def map(self, tasks: Iterable, ahead: int = AHEAD, idle: Callable[[], object] | None = None,
            size: Callable[[object], int] | None = None) -> Iterator:
        """fn(task) for each task, in order; ``idle``, when given, is called once, the first time
        every task is sent and a result is awaited: this process's own work meanwhile.
        ``size``: a task's bytes (for AHEAD_BYTES), else every task is small."""
        tasks, pending, held = iter(tasks), deque(), 0
        exhausted = False
        while True:
            while not exhausted and len(pending) < ahead * self.n_jobs and \
                    (len(pending) < AHEAD_ALWAYS * self.n_jobs or held < AHEAD_BYTES):
                task = next(tasks, _END)
                if task is _END:
                    exhausted = True
                    break
                n = size(task) if size else 0
                pending.append((self.submit(task), n))
                held += n
            if not pending:
                return
            if exhausted and idle is not None:
                idle, work = None, idle
                work()
            future, n = pending.popleft()
            held -= n
            yield self.result(future)

    def result(self, future):
        """A task's result; its error raised here; a worker that died named."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            return future.result()
        except BrokenProcessPool:
            raise self._died() from None

    def _died(self) -> WorkerError:
        return WorkerError(f"a worker process ({', '.join(map(str, self.pids))}) ended without "
                           f"answering (killed, or out of memory)")

    def close(self) -> None:
        """End the workers and reap them: the tasks not started are cancelled, those running
        finish (a chunk's or a fold's work). They are not killed: a worker killed while it
        writes a result leaves part of it in the result pipe, whose reader (the executor's
        thread) then waits for the rest for ever, and so does the join at shutdown and at exit."""
        self.pids = []
        self.executor.shutdown(wait=True, cancel_futures=True)  # (its thread joined, the workers reaped)

    def __enter__(self) -> "ForkedWorkers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_END = object()
