"""Worker processes forked from the parent, for the map over chunks (nbtext.batch.chunks).

Why not joblib's loky here: a loky worker is a new interpreter that imports joblib, numpy and
nbtext before its first chunk, while the parent waits and the two compete for the cores: its
first chunk comes back well after one core alone would have it, and the workers' start-up is
a large share of train's CPU (docs/bench.md). A forked worker has the parent's imports
already and answers its first chunk at once. Loky stays where forking is not safe
(nbtext.batch.chunks.fork_safe): other than Linux, or a library caller's process with threads
of its own.

The protocol is one socket pair a worker, each message its length (8 bytes) and a pickle: the
parent sends a chunk's documents, the worker sends back ("ok", result) or ("error", exception).
The parent never blocks on a send (it writes what the socket takes, and the rest when it can):
a parent blocked sending a worker its next chunk while the worker blocked sending it a result
would each wait for the other. At most ``ahead`` chunks are sent to a worker before its results
are read, and at most ``ahead`` times the workers' number of results wait for an earlier one:
memory stays bounded however long the input.

Pickle here is between a process and its own forked copies, over an anonymous socket pair that
no other process holds (socketpair, made before the fork): what is unpickled was pickled by
this same program a moment before (documents' bytes one way, Batches and exceptions the other),
as multiprocessing and joblib do. No file is ever unpickled: model files are data
(nbtext.store), and nothing a stranger wrote reaches these sockets except as bytes inside a
pickle nbtext made.

A worker watches its parent (batch.chunks.watch_parent) and ignores Ctrl-C, as loky's do;
it never runs the parent's cleanup (it ends with os._exit), and its garbage collector leaves
the parent's objects alone (gc.freeze: a finalizer of the parent's, a temporary file's, must
not run in a copy).
"""
from __future__ import annotations

import os
import pickle
import signal
import socket
import struct
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from ..errors import NbtextError


class WorkerError(NbtextError):
    """A worker process ended without answering (killed, or out of memory)."""


# Chunks sent to a worker before its results are read. Results are given out in input order, so
# a chunk slower than its neighbours holds up the others' results, and new chunks wait for them:
# with 2, the counting workers wait for work while the parent reduces between results on the
# same cores; 4 keeps them busy (measured faster for train, predict and the peak memory the same:
# docs/bench.md). Past AHEAD_ALWAYS a worker, tasks go out only while those out hold under
# AHEAD_BYTES pickled: a walk's chunks are file references (small), but an mbox's or stdin's
# carry their documents' bytes (a chunk of at least a 256 KiB, or one document of up to 64 MiB),
# which the caller holds until each is given out: those stay at 2 a worker.
AHEAD = 4
AHEAD_ALWAYS = 2
AHEAD_BYTES = 4 << 20


class ForkPool:
    """``n_jobs`` worker processes forked at once, each computing fn(task) for the tasks that
    ``map`` sends it; ``on_fork`` runs in each right after it is forked. Closing the pool (or
    leaving its ``with``) stops them."""

    def __init__(self, fn: Callable, n_jobs: int, on_fork: Callable | None = None):
        self.workers: list[_Worker] = []
        try:
            for _ in range(n_jobs):
                ours, theirs = socket.socketpair()
                for sock in (ours, theirs):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, BUFFER)
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, BUFFER)
                pid = os.fork()
                if pid == 0:  # the worker: never returns
                    code = 1
                    try:
                        ours.close()
                        for w in self.workers:
                            w.sock.close()
                        _serve(theirs, fn, on_fork)
                        code = 0
                    finally:
                        os._exit(code)
                theirs.close()
                self.workers.append(_Worker(pid, ours))
        except BaseException:
            self.close()
            raise

    def map(self, tasks: Iterable, ahead: int = AHEAD, idle: Callable[[], object] | None = None) -> Iterator:
        """fn(task) for each task, in order; ``idle``, when given, is called once, the first time
        every task is sent and a result is awaited: this process's own work meanwhile."""
        return _dispatch(self.workers, iter(tasks), ahead, idle)

    def close(self) -> None:
        """End the workers (SIGKILL: they hold nothing to clean up) and reap them."""
        for w in self.workers:
            w.sock.close()
            try:
                os.kill(w.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        pids, self.workers = [w.pid for w in self.workers], []
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass

    def __enter__(self) -> "ForkPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


HEADER = struct.Struct("<Q")  # a message's length
# What a socket holds each way (the system caps it: net.core.wmem_max). A worker sends its
# answer whole and only then takes its next task: with the default buffer a chunk's answer waits
# on the parent, busy with the reduce, to read it, and the worker idles (measured faster for
# counting and predict with this one: docs/bench.md).
BUFFER = 4 << 20


class _Worker:
    __slots__ = ("pid", "sock", "queued", "outbox")

    def __init__(self, pid: int, sock: socket.socket):
        self.pid, self.sock = pid, sock
        self.queued: deque[int] = deque()      # the numbers of the tasks it holds, in order
        self.outbox: deque[memoryview] = deque()  # what is still to be written to it

    def flush(self) -> None:
        """Write what the socket takes now, never waiting."""
        while self.outbox:
            try:
                sent = self.sock.send(self.outbox[0], socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                raise WorkerError(f"worker process {self.pid} ended without answering{_how(self.pid)}") from None
            if sent == len(self.outbox[0]):
                self.outbox.popleft()
            else:
                self.outbox[0] = self.outbox[0][sent:]

    def receive(self):
        """The worker's next answer (it sends each whole, so this waits only while it arrives)."""
        data = _recv_message(self.sock)
        if data is None:
            raise WorkerError(f"worker process {self.pid} ended without answering{_how(self.pid)}")
        return pickle.loads(data)


def _dispatch(workers: list[_Worker], tasks: Iterator, ahead: int, idle: Callable[[], object] | None = None
              ) -> Iterator:
    import selectors

    done: dict[int, object] = {}
    sent = given = 0  # tasks sent; results given out, in order
    sizes: dict[int, int] = {}  # each task out (sent, not given out yet): its pickle's bytes
    exhausted = False
    with selectors.DefaultSelector() as sel:
        registered: dict[_Worker, int] = {}
        while True:
            # Hand out tasks while a worker holds fewer than `ahead` and the results waiting on an
            # earlier one stay few; past AHEAD_ALWAYS a worker, only while the tasks out are
            # small (a walk's file references), so that chunks of documents' bytes held here
            # (their documents wait in the caller until given out) stay as few as ever.
            while not exhausted and sent - given < ahead * len(workers) and \
                    (sent - given < AHEAD_ALWAYS * len(workers) or sum(sizes.values()) < AHEAD_BYTES):
                w = min(workers, key=lambda w: len(w.queued))
                if len(w.queued) >= ahead:
                    break
                task = next(tasks, _END)
                if task is _END:
                    exhausted = True
                    break
                data = pickle.dumps(task, pickle.HIGHEST_PROTOCOL)
                w.outbox += (memoryview(HEADER.pack(len(data))), memoryview(data))
                w.queued.append(sent)
                sizes[sent] = len(data)
                sent += 1
                w.flush()
            if given in done:
                sizes.pop(given, None)
                status, value = done.pop(given)
                if status == "error":  # (in input order: what came before it is given out first)
                    raise value
                yield value
                given += 1
                continue
            if exhausted and given == sent:
                return
            if idle is not None and exhausted and not any(w.outbox for w in workers):
                idle, work = None, idle
                work()
                continue  # (results may have come meanwhile)
            for w in workers:
                events = (selectors.EVENT_READ if w.queued else 0) | (selectors.EVENT_WRITE if w.outbox else 0)
                if events != registered.get(w, 0):
                    if w in registered:
                        sel.unregister(w.sock)
                        del registered[w]
                    if events:
                        sel.register(w.sock, events, w)
                        registered[w] = events
            for key, events in sel.select():
                w = key.data
                if events & selectors.EVENT_WRITE:
                    w.flush()
                if events & selectors.EVENT_READ:
                    done[w.queued.popleft()] = w.receive()


_END = object()


def _recv_exact(sock: socket.socket, n: int) -> bytearray | None:
    """n bytes from the socket, or None at its end."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:])
        if not k:
            return None
        got += k
    return buf


def _recv_message(sock: socket.socket) -> bytearray | None:
    try:
        head = _recv_exact(sock, HEADER.size)
        return None if head is None else _recv_exact(sock, HEADER.unpack(head)[0])
    except (ConnectionError, OSError):
        return None


def _how(pid: int) -> str:
    """How a worker ended (" (killed by signal 9)"), once it has: else nothing."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return ""
    if done and os.WIFSIGNALED(status):
        return f" (killed by signal {os.WTERMSIG(status)})"
    return ""


def _serve(sock: socket.socket, fn: Callable, on_fork: Callable | None) -> None:
    """A worker's life: a task read, answered, and the next, until the parent closes."""
    import gc

    gc.freeze()  # (the parent's objects are never this process's garbage to finalize)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # (the parent's handler raises, to clean up)
    if on_fork:
        on_fork()
    while (data := _recv_message(sock)) is not None:
        try:
            answer = ("ok", fn(pickle.loads(data)))
        except BaseException as e:  # (sent to the parent, which raises it)
            answer = ("error", e)
        del data
        try:
            out = pickle.dumps(answer, pickle.HIGHEST_PROTOCOL)
        except Exception:  # an exception that does not pickle: its text does
            out = pickle.dumps(("error", RuntimeError(f"{type(answer[1]).__name__}: {answer[1]}")))
        del answer
        try:
            sock.sendall(HEADER.pack(len(out)))
            sock.sendall(out)
        except OSError:
            return  # the parent stopped reading: it is done
