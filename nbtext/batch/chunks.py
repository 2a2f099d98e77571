"""Map over chunks of documents, on one core or several, in input order.

Chunks keep memory bounded (a corpus is never held whole: each chunk's counts are reduced into
the model and dropped) and give joblib's worker processes work big enough to be worth sending.
A worker counts its chunk against its own tokens (nbtext.features.counting.Batch); the parent
reduces, so the result is identical to counting on one core.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import signal
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from ..features.counting import Batch, count_documents
from ..read import Document, FileRef
from ..settings import TokenizerSettings

CHUNK = 400            # documents in a chunk at most
CHUNK_BYTES = 1 << 18  # and about this much input: chunks of similar cost keep both cores busy


def default_jobs() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, 8))


def chunks(docs: Iterable[Document | FileRef], size: int = CHUNK, max_bytes: int = CHUNK_BYTES
           ) -> Iterator[list[Document | FileRef]]:
    """Consecutive lists of at most ``size`` documents (or files not read yet) that stop once
    they hold ``max_bytes``: with a count alone, one chunk of long HTML mail can take as long
    as the rest of a corpus, while the other cores idle."""
    chunk, held = [], 0
    for d in docs:
        chunk.append(d)
        held += size_of(d)
        if len(chunk) >= size or held >= max_bytes:
            yield chunk
            chunk, held = [], 0
    if chunk:
        yield chunk


def size_of(item: Document | FileRef) -> int:
    """A document's bytes, or a file's not read yet (its size when the walk found it)."""
    return item.size if isinstance(item, FileRef) else len(item.data)


def read_chunk(items: list[Document | FileRef]) -> tuple[list[Document], list[tuple[int, Exception]]]:
    """A chunk's documents, its FileRefs read (read.FileRef.read), and the errors reading them
    as (the FileRef's place in the chunk, the error), for report_errors."""
    docs, errors = [], []
    for i, item in enumerate(items):
        if isinstance(item, FileRef):
            got, failed = item.read()
            docs += got
            errors += [(i, e) for e in failed]
        else:
            docs.append(item)
    return docs, errors


def report_errors(items: list[Document | FileRef], errors: list[tuple[int, Exception]]) -> None:
    """read_chunk's errors, each reported (or raised) by its FileRef, in the process that made it."""
    for i, e in errors:
        items[i].report(e)


def counted(docs: Iterable[Document | FileRef], settings: TokenizerSettings, n_jobs: int = 1,
            chunk_size: int = CHUNK, then: Callable[..., object] | None = None,
            plan: Callable[[list[Document | FileRef]], object] | None = None
            ) -> Iterator[tuple[list[Document], Batch]]:
    """(documents, their Batch) for consecutive chunks, in input order; with ``then``,
    (documents, then(documents, Batch)); with ``plan`` too, (documents, then(documents, Batch,
    plan(items))): plan is called here with each chunk's items, in input order, as the chunk is
    sent to be counted (ahead of the results given back), and what it returns goes with the chunk.

    Where the workers are forked, a chunk's FileRefs (read.FileRef: files a walk found, not read
    yet) are read by the worker that counts it, and ``then`` runs there too (the worker holds
    the parent's objects: predict's workers score their own chunks against the model, train's
    hash their documents for the ledger); the documents then come back without their bytes
    (``data`` is b""), and only what ``then`` made of them. Elsewhere both happen in the parent:
    the same functions, so the same numbers. Errors reading a FileRef are reported (or raised)
    in the parent, as it would have.
    Worker processes start only when there is more than one chunk of work. On one core no chunk
    is read ahead, so a document on a pipe is answered before the next one comes."""
    def finish(docs: list[Document], batch: Batch, planned):
        return batch if then is None else then(docs, batch) if plan is None else then(docs, batch, planned)

    def work(task: tuple) -> tuple:
        items, planned = task
        read, errors = read_chunk(items)
        return read, errors, finish(read, count_documents([d.data for d in read], settings), planned)

    def worker(task: tuple) -> tuple:  # (in a forked worker: the bytes stay there)
        read, errors, out = work(task)
        return [Document(d.id, b"", d.label) for d in read], errors, out

    def answered(items: list, result: tuple):
        read, errors, out = result
        report_errors(items, errors)
        return read, out

    # (items, what plan made of them): planned as each is taken to be sent, in input order
    parts = ((items, plan(items) if plan else None) for items in chunks(docs, chunk_size))
    if n_jobs == 1:
        for task in parts:
            yield answered(task[0], work(task))
        return
    first = next(parts, None)
    if first is None:
        return
    second = next(parts, None)
    rest = itertools.chain([first] + ([second] if second else []), parts)
    if second is None:
        for task in rest:
            yield answered(task[0], work(task))
        return
    if fork_safe():
        from .memory import hold_freed_memory
        from .pool import ForkedWorkers

        pending: deque = deque()

        def tasks():
            for task in rest:
                pending.append(task[0])
                yield task

        parent = os.getpid()
        with interrupts_held(loky=False):  # (the workers are forked with Ctrl-C ignored)
            # (a worker keeps what a chunk frees for the next: each chunk's arrays, megabytes,
            # were else new pages to map and fault in: docs/bench.md)
            pool = ForkedWorkers(worker, n_jobs, on_fork=lambda: (watch_parent(parent), hold_freed_memory()))
        with pool:
            for result in pool.map(tasks(), size=_held):
                yield answered(pending.popleft(), result)
        return
    for chunk, batch, planned in _loky_counted(rest, settings, n_jobs):
        yield chunk, finish(chunk, batch, planned)


def _held(task: tuple) -> int:
    """The documents' bytes a chunk carries to its worker (a file not read yet carries none)."""
    return sum(len(d.data) for d in task[0] if not isinstance(d, FileRef))


def known_count(items: list[Document | FileRef]) -> int | None:
    """How many documents a chunk holds, where that is known before it is read: None where it
    holds a file not read yet (read.FileRef: a mailbox holds any number)."""
    return None if any(isinstance(d, FileRef) for d in items) else len(items)


def fork_safe() -> bool:
    """Whether train's workers may be forked from this process (nbtext.batch.pool): on Linux,
    in a process with no thread but the main one (a thread holding a lock at the fork would
    leave it held forever in the copy; numpy's BLAS threads hold none a worker takes). Elsewhere
    joblib's loky starts fresh interpreters instead."""
    import sys
    import threading

    return (sys.platform.startswith("linux") and hasattr(os, "fork")
            and threading.active_count() == 1 and threading.current_thread() is threading.main_thread())


def _loky_counted(rest: Iterator[tuple[list, object]], settings: TokenizerSettings, n_jobs: int
                  ) -> Iterator[tuple[list[Document], Batch, object]]:
    """(documents, Batch, what was planned) of counted's (items, planned) tasks."""
    from joblib import Parallel, delayed, parallel_config

    pending: deque = deque()

    def tasks():
        for items, planned in rest:
            chunk, errors = read_chunk(items)  # (read here: a loky worker is not this process)
            report_errors(items, errors)
            pending.append((chunk, planned))
            yield delayed(count_in_worker)([d.data for d in chunk], settings)

    with contextlib.ExitStack() as stack:
        with interrupts_held():  # (the workers start here: they begin with Ctrl-C ignored)
            # Each worker watches its parent from its start, not from its first task: under load a
            # kill -9 can come before any task, and the workers would live on holding train's stderr.
            with parallel_config(backend="loky", initializer=watch_parent, initargs=(os.getpid(),)):
                par = stack.enter_context(Parallel(n_jobs=n_jobs, return_as="generator", pre_dispatch="2*n_jobs"))
                results = par(tasks())
        try:
            for result in results:
                chunk, planned = pending.popleft()
                yield chunk, result, planned
        finally:
            with warnings.catch_warnings():
                # A reader that left early (`| head`) cancels the rest: not worth a warning.
                warnings.filterwarnings("ignore", message=".*tasks which were still being processed")
                results.close()


@contextlib.contextmanager
def interrupts_held(loky: bool = True):
    """Ctrl-C ignored and SIGTERM held while worker processes are started.

    Ctrl-C: an ignored signal, unlike a
    handler, is kept across exec, and Python leaves it ignored, so a worker never has a Ctrl-C of
    its own (one while workers are still importing would print their tracebacks); the parent
    stops the pool. The main thread also blocks it meanwhile (Linux keeps a blocked signal
    pending rather than drop it as ignored), so that a Ctrl-C in the window is handled after it,
    mostly: one pressed in the window is sometimes still lost (traced as far as a pending Ctrl-C
    at the window's end that no handler then sees); a second press works.
    SIGTERM: where its handler is Python's (the command's, nbtext.process.terminate_cleanly,
    which raises), one that comes in the window is noted and handed to that handler at the
    window's end: raised meanwhile, it could be raised inside a fork's at-fork hooks, where
    Python prints it as an ignored exception and goes on, and the run would end as if never stopped.
    Only in the main thread (elsewhere signals are not ours)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # The resource trackers that starting the pool would start, started first: the standard
    # library's unblocks Ctrl-C after starting its process (SIG_UNBLOCK, not the mask it found),
    # which inside the window would leave Ctrl-C ignored and unblocked, and one pressed then lost.
    if loky:
        from multiprocessing import resource_tracker

        from joblib.externals.loky.backend import resource_tracker as loky_tracker

        resource_tracker.ensure_running()
        loky_tracker.ensure_running()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    terminate, held = signal.getsignal(signal.SIGTERM), []
    if callable(terminate):
        signal.signal(signal.SIGTERM, lambda signum, frame: held.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        if callable(terminate):
            signal.signal(signal.SIGTERM, terminate)
            if held:
                terminate(signal.SIGTERM, held[0])


def count_in_worker(datas: list, settings: TokenizerSettings) -> Batch:
    """count_documents in a worker process, which first makes sure it ends with its parent."""
    watch_parent()
    return count_documents(datas, settings)


_watching = False


def watch_parent(parent: int | None = None) -> None:
    """In a worker process: ignore Ctrl-C (the parent handles it and stops the pool; a worker's
    own KeyboardInterrupt would print tracebacks) and end as soon as the process that started it
    is gone (else a kill -9 of train leaves its workers running, holding memory and /dev/shm).
    ``parent``: the pid of the process that started this one, as it gave it: a worker whose
    parent died while it was still starting (kill -9 in the first half second) would otherwise
    take init for its parent and watch it forever. Once per process; never in the main process."""
    global _watching
    if _watching:
        return
    _watching = True
    import signal
    import threading
    import time

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid() if parent is None else parent

    def watch():
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="nbtext-parent-watch", daemon=True).start()

