"""Worker processes forked from the parent, for the map over chunks (nbtext.batch.chunks).

Why not joblib's loky here: a loky worker is a new interpreter that imports joblib, numpy and
nbtext before its first chunk, about 0.4 s on this machine's 2 cores, while the parent waits and
the two compete for the cores (spamassassin-2002: the first chunk came back 0.42 s after the
pool started, against 0.06 s on one core; the workers' start-up was a fifth of train's CPU).
A forked worker has the parent's imports already and answers its first chunk at once. Loky
stays where forking is not safe (nbtext.batch.chunks.fork_safe): other than Linux, or a library
caller's process with threads of its own.

The protocol is one socket pair a worker: the parent sends a chunk's documents (pickled), the
worker sends back ("ok", result) or ("error", exception). A reader thread in each worker takes
its tasks off the socket as they come, so the parent never blocks on a send while the worker
blocks sending it a result (each waiting for the other). At most ``ahead`` chunks are sent to a
worker before its results are read, and at most ``ahead`` times the workers' number of results
wait for an earlier one: memory stays bounded however long the input.

A worker watches its parent (batch.chunks.watch_parent) and ignores Ctrl-C, as loky's did;
it never runs the parent's cleanup (it ends with os._exit), and its garbage collector leaves
the parent's objects alone (gc.freeze: a finalizer of the parent's, a temporary file's, must
not run in a copy).
"""
from __future__ import annotations

import os
import pickle
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from ..errors import NbtextError


class WorkerError(NbtextError):
    """A worker process ended without answering (killed, or out of memory)."""


class ForkPool:
    """``n_jobs`` worker processes forked at once, each computing fn(task) for the tasks that
    ``map`` sends it; ``on_fork`` runs in each right after it is forked. Closing the pool (or
    leaving its ``with``) stops them."""

    def __init__(self, fn: Callable, n_jobs: int, on_fork: Callable | None = None):
        from multiprocessing.connection import Pipe

        self.fn, self.workers = fn, []  # (pid, the parent's end)
        try:
            for _ in range(n_jobs):
                ours, theirs = Pipe(duplex=True)
                pid = os.fork()
                if pid == 0:  # the worker: never returns
                    code = 1
                    try:
                        ours.close()
                        for _, conn in self.workers:
                            conn.close()
                        _serve(theirs, fn, on_fork)
                        code = 0
                    finally:
                        os._exit(code)
                theirs.close()
                self.workers.append((pid, ours))
        except BaseException:
            self.close()
            raise

    def map(self, tasks: Iterable, ahead: int = 2) -> Iterator:
        """fn(task) for each task, in order."""
        from multiprocessing.connection import wait

        return _dispatch(self.workers, iter(tasks), ahead, wait)

    def close(self) -> None:
        _stop(self.workers)
        self.workers = []

    def __enter__(self) -> "ForkPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _dispatch(workers, tasks: Iterator, ahead: int, wait) -> Iterator:
    conns = [conn for _, conn in workers]
    queued: list[deque] = [deque() for _ in workers]  # the task numbers each worker holds
    done: dict[int, object] = {}
    sent = given = 0  # tasks sent; results given out, in order
    exhausted = False
    while True:
        # Send while a worker holds fewer than `ahead` tasks and the results waiting on an
        # earlier one stay few.
        while not exhausted and sent - given < ahead * len(workers):
            w = min(range(len(workers)), key=lambda i: len(queued[i]))
            if len(queued[w]) >= ahead:
                break
            task = next(tasks, _END)
            if task is _END:
                exhausted = True
                break
            conns[w].send_bytes(pickle.dumps(task, pickle.HIGHEST_PROTOCOL))
            queued[w].append(sent)
            sent += 1
        if given in done:
            yield done.pop(given)
            given += 1
            continue
        if exhausted and given == sent:
            return
        for conn in wait([c for c, q in zip(conns, queued) if q]):
            w = conns.index(conn)
            try:
                status, value = pickle.loads(conn.recv_bytes())
            except (EOFError, OSError):
                pid = workers[w][0]
                raise WorkerError(f"worker process {pid} ended without answering{_how(pid)}") from None
            if status == "error":
                raise value
            done[queued[w].popleft()] = value


_END = object()


def _how(pid: int) -> str:
    """How a worker ended (" (killed by signal 9)"), once it has: else nothing."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return ""
    if done and os.WIFSIGNALED(status):
        return f" (killed by signal {os.WTERMSIG(status)})"
    return ""


def _serve(conn, fn: Callable, on_fork: Callable | None) -> None:
    """A worker's life: tasks taken off the socket by a reader thread, answered in order."""
    import gc
    import queue
    import threading

    gc.freeze()  # (the parent's objects are never this process's garbage to finalize)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # (the parent's handler raises, to clean up)
    if on_fork:
        on_fork()
    tasks: queue.SimpleQueue = queue.SimpleQueue()

    def read():
        try:
            while True:
                tasks.put(conn.recv_bytes())
        except (EOFError, OSError):
            tasks.put(None)  # the parent is done (or gone)

    threading.Thread(target=read, name="nbtext-tasks", daemon=True).start()
    while (data := tasks.get()) is not None:
        try:
            answer = ("ok", fn(pickle.loads(data)))
        except BaseException as e:  # (sent to the parent, which raises it)
            answer = ("error", e)
        try:
            out = pickle.dumps(answer, pickle.HIGHEST_PROTOCOL)
        except Exception:  # an exception that does not pickle: its text does
            out = pickle.dumps(("error", RuntimeError(f"{type(answer[1]).__name__}: {answer[1]}")))
        try:
            conn.send_bytes(out)
        except OSError:
            return  # the parent stopped reading: it is done


def _stop(workers) -> None:
    """End the workers: closed sockets end an idle one, SIGKILL a busy one; then reap them."""
    for pid, conn in workers:
        conn.close()
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid, _ in workers:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
