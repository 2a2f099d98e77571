"""The forked workers (nbtext.batch.pool, ProcessPoolExecutor with the fork start method) that counts train's, predict's and eval's chunks:
results in input order, a worker's error raised in the parent, a worker that dies named, no
deadlock when tasks and results are larger than a socket's buffer, workers gone when the pool
closes; and the loky path it replaces where forking is unsafe gives the same batches."""
from __future__ import annotations

import os
import subprocess
import sys
import signal
import threading

import numpy as np
import pytest

from nbtext.batch import chunks
from nbtext.batch.pool import ForkedWorkers, WorkerError
from nbtext.errors import NbtextError
from nbtext.features.kernel import compiled as compiled_kernel
from nbtext.read import Document
from nbtext.settings import TokenizerSettings

from conftest import DATA


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def pids_calling(monkeypatch, owner, name: str) -> list:
    """The pids of the calls to owner.name from now on, as this process sees them: a forked
    worker appends to its own copy of the list, so its calls leave no trace here."""
    where, original = [], getattr(owner, name)

    def recorded(*args, **kw):
        where.append(os.getpid())
        return original(*args, **kw)

    monkeypatch.setattr(owner, name, recorded)
    return where


@pytest.mark.slow
def test_results_come_in_input_order_from_every_worker():
    # uneven work: the early tasks are the long ones, so later results come back first
    def work(n):
        return n, os.getpid(), sum(range((40 - n) * 20_000))

    with ForkedWorkers(work, 3) as pool:
        out = list(pool.map(range(40), ahead=2))
        pids = list(pool.pids)
    assert [n for n, _, _ in out] == list(range(40))
    assert [s for _, _, s in out] == [sum(range((40 - n) * 20_000)) for n in range(40)]
    assert {p for _, p, _ in out} == set(pids) and os.getpid() not in pids
    assert all(gone(p) for p in pids)


def made(n: int):
    """Arrays of every layout a result holds (train's chunk sums: 16-bit and 32-bit numbers, keys,
    one flag a class), with others beside them."""
    a = np.arange(n * 12, dtype=np.int64).reshape(n, 12) * 7919 % 65521
    return {"c": a.astype(np.uint16), "f": np.asfortranarray(a.astype(np.float32)), "strided": a[::3, 1::2],
            "empty": a[:0], "scalar": np.float64(n) / 3, "zero-d": np.array(n), "flags": a[:, 0] % 2 == 0,
            "read-only": np.frombuffer(a.tobytes(), dtype=np.uint64), "objects": np.array(["x", n, None], dtype=object),
            "bytes": bytes(range(256)) * n, "nested": [(a[n // 2:], str(n))]}


def test_a_results_arrays_come_back_as_the_worker_made_them_each_with_memory_of_its_own():
    """Whatever layout a result's arrays have (C or Fortran order, strided, empty, read-only,
    0-d, of objects) and whatever is beside them, the parent gets them equal, in the same order
    (a strided one contiguous, as pickle makes it), writable where they were (read-only, as the
    kernel's counts are, where counting runs in the parent too), and none sharing memory with
    another (an array kept keeps no other's bytes)."""
    with ForkedWorkers(made, 2) as pool:
        got = list(pool.map([1, 5, 300]))
    for n, result in zip([1, 5, 300], got):
        want = made(n)
        assert result.keys() == want.keys()
        for name, a in want.items():
            b = result[name]
            if name == "nested":
                a, b = a[0][0], b[0][0]
                assert result["nested"][0][1] == str(n)
            if isinstance(a, np.ndarray):
                assert b.dtype == a.dtype and b.shape == a.shape and (b == a).all()
                assert b.flags.writeable == a.flags.writeable and b.flags.forc
                assert not a.flags.forc or (b.flags.c_contiguous, b.flags.f_contiguous) == \
                    (a.flags.c_contiguous, a.flags.f_contiguous)
            else:
                assert type(b) is type(a) and b == a
        arrays = [b for b in result.values() if isinstance(b, np.ndarray) and b.size]
        assert not any(np.shares_memory(x, y) for i, x in enumerate(arrays) for y in arrays[i + 1:])


def test_receiving_a_result_takes_its_size_in_memory_once():
    """A result's arrays are read from the pipe straight into their own memory: receiving 32 MB
    holds 32 MB in the parent, not the copies multiprocessing's receive makes (a buffer per read,
    the message's, the unpickler's bytes, the array's)."""
    import tracemalloc

    size = 32 << 20
    with ForkedWorkers(lambda n: np.full(n, 7, dtype=np.uint8), 2) as pool:
        tracemalloc.start()
        try:
            result = list(pool.map([size]))[0]
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert len(result) == size and result[-1] == 7
    assert peak < size * 1.25, peak / size


@pytest.mark.slow
def test_tasks_and_results_larger_than_a_socket_buffer_do_not_deadlock():
    # 4 MB each way, two tasks queued a worker: a worker answering while its parent sent it the
    # next task would each wait for the other, if the parent's sends waited
    def hung(signum, frame):
        raise AssertionError("the pool deadlocked")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        with ForkedWorkers(lambda b: b[::-1] + b, 2) as pool:
            blobs = [bytes([i]) * (2 << 20) for i in range(8)]
            assert list(pool.map(blobs)) == [b + b for b in blobs]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_the_parents_own_work_runs_once_while_the_workers_work():
    """map's ``idle`` (calibration's last tied fit, made here while the workers make the others):
    called once, in this process, once every task is out and a result is awaited;
    the results still come whole and in order. Its error is raised, and the workers end."""
    events = []

    def work(n):
        return n * n

    with ForkedWorkers(work, 2) as pool:  # (3 tasks, 2 a worker at most: all out at once, then idle)
        for value in pool.map(range(3), ahead=2, idle=lambda: events.append(("idle", os.getpid()))):
            events.append(value)
    assert events == [("idle", os.getpid()), 0, 1, 4]

    def failing():
        raise NbtextError("no room")

    pool = ForkedWorkers(work, 2)
    pids = list(pool.pids)
    with pytest.raises(NbtextError, match="^no room$"), pool:
        list(pool.map(range(3), idle=failing))
    assert all(gone(p) for p in pids)


def test_an_error_in_a_worker_is_raised_in_the_parent_and_ends_the_workers():
    def work(n):
        if n == 5:
            raise NbtextError(f"bad task {n}")
        return n

    pool = ForkedWorkers(work, 2)
    pids = list(pool.pids)
    with pytest.raises(NbtextError, match="^bad task 5$"):
        with pool:
            list(pool.map(range(10)))
    assert all(gone(p) for p in pids)


def test_an_error_that_does_not_pickle_still_says_what_it_was():
    class Local(Exception):  # (a local class: pickle cannot find it by name)
        pass

    def work(n):
        raise Local("no pickling me")

    with ForkedWorkers(work, 2) as pool, pytest.raises(RuntimeError, match="Local: no pickling me"):
        list(pool.map(range(3)))


def test_a_worker_that_dies_is_named_not_waited_for():
    def work(n):
        if n == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return n

    with ForkedWorkers(work, 2) as pool, pytest.raises(WorkerError, match=r"worker process \(\d+, \d+\) ended without answering"):
        list(pool.map(range(10)))


def test_a_task_sent_after_a_worker_died_is_refused_with_its_name():
    """Once the pool has seen a worker die, sending it the next task (map sends more as results
    come) says which workers, as a result awaited does, not the executor's BrokenProcessPool."""
    with ForkedWorkers(lambda n: n, 2) as pool:
        os.kill(pool.pids[0], signal.SIGKILL)
        for _ in range(1000):  # (the executor's thread marks the pool broken as it sees the death)
            if pool.executor._broken:
                break
            threading.Event().wait(0.01)
        assert pool.executor._broken
        with pytest.raises(WorkerError, match=r"worker process \(\d+, \d+\) ended without answering"):
            pool.submit(1)


def test_leaving_early_stops_the_workers():
    pool = ForkedWorkers(lambda n: n, 2)
    pids = list(pool.pids)
    results = pool.map(range(1000))
    assert next(results) == 0
    results.close()
    pool.close()
    assert all(gone(p) for p in pids)


def test_every_worker_is_forked_at_the_start_where_the_executor_forks_them_on_demand(monkeypatch):
    """CPython 3.9.0-3.9.12 and 3.10.0-3.10.4 fork a pool's worker only when a task finds none
    idle, as later versions do for any start method but fork: made so here by the context naming
    another. The pool still has all its workers at the start (their pids are awaited there), and
    each answers; none is left when it closes."""
    from nbtext.batch import pool as pool_module

    monkeypatch.setattr(pool_module._Context, "get_start_method", lambda self, allow_none=False: "forkserver",
                        raising=False)
    with ForkedWorkers(lambda n: (n, os.getpid()), 3) as pool:
        assert pool.executor._safe_to_dynamically_spawn_children  # (the on-demand executor)
        pids = list(pool.pids)
        assert len(set(pids)) == 3 and set(pool.executor._processes) == set(pids)
        assert [n for n, _ in pool.map(range(30))] == list(range(30))
    assert all(gone(p) for p in pids)


def test_forked_and_loky_workers_count_the_same_batches(monkeypatch, small_corpus):
    from nbtext.read import label_directory

    docs = list(label_directory(str(small_corpus)))
    s = TokenizerSettings()

    def run():
        return [(len(c), b.blob, b.keys.tolist(), b.rows.data.tolist(), b.rows.indices.tolist(), b.rows.indptr.tolist())
                for c, b in chunks.counted(iter(docs), s, n_jobs=2, chunk_size=7)]

    # (chosen here: once loky has run in a process, its threads stay, and fork_safe says no)
    monkeypatch.setattr(chunks, "fork_safe", lambda: True)
    forked = run()
    monkeypatch.setattr(chunks, "fork_safe", lambda: False)
    assert run() == forked == [(len(c), b.blob, b.keys.tolist(), b.rows.data.tolist(), b.rows.indices.tolist(),
                                b.rows.indptr.tolist()) for c, b in chunks.counted(iter(docs), s, n_jobs=1, chunk_size=7)]
    assert len(forked) > 4


def test_a_plan_is_made_in_input_order_as_each_chunk_is_sent_and_goes_with_it(monkeypatch, small_corpus):
    """counted's plan: called here once a chunk, in input order, before that chunk's result is
    given back (train draws calibration's keys so); its value reaches then with the chunk's
    documents, one process, forked workers and loky's alike."""
    from nbtext.read import label_directory

    docs = list(label_directory(str(small_corpus)))
    s = TokenizerSettings()

    def run(jobs):
        planned = []

        def plan(items):
            planned.append([d.id for d in items])
            return len(planned) - 1

        out = []
        for c, (ids, number) in chunks.counted(iter(docs), s, n_jobs=jobs, chunk_size=7, plan=plan,
                                               then=lambda d, b, number: ([x.id for x in d], number)):
            assert len(planned) > number  # (planned before its result came back)
            out.append((ids, number, [x.id for x in c]))
        assert [ids for ids, *_ in out] == planned and [n for _, n, _ in out] == list(range(len(planned)))
        assert all(ids == here for ids, _, here in out)
        return out

    serial = run(1)
    assert [i for ids, *_ in serial for i in ids] == [d.id for d in docs] and len(serial) > 4
    monkeypatch.setattr(chunks, "fork_safe", lambda: True)
    assert run(2) == serial
    monkeypatch.setattr(chunks, "fork_safe", lambda: False)
    assert run(2) == serial


def test_forked_workers_score_their_own_chunks_and_give_the_parents_numbers(monkeypatch, small_corpus, sample_model):
    """predict's scoring runs where a chunk was counted when the workers are forked (only the
    scores come back), in the parent otherwise: the same log-posteriors either way."""
    from nbtext import store
    from nbtext.batch.score import log_scored_batches
    from nbtext.read import label_directory

    docs = list(label_directory(str(small_corpus)))
    model = store.load(str(sample_model))
    where = pids_calling(monkeypatch, model, "log_proba")

    def run(jobs, batches=False):
        out = list(log_scored_batches(model, iter(docs), n_jobs=jobs, chunk_size=7, batches=batches))
        assert [d.id for c, *_ in out for d in c] == [d.id for d in docs]
        assert all((b is not None) == batches for _, b, *_ in out)
        return np.vstack([lp for *_, lp in out])

    serial = run(1)
    assert set(where) == {os.getpid()} and len(serial) == len(docs)
    monkeypatch.setattr(chunks, "fork_safe", lambda: True)
    where.clear()
    np.testing.assert_array_equal(run(2, batches=True), serial)
    assert os.getpid() not in where  # (the parent's list stayed empty: the workers scored)
    monkeypatch.setattr(chunks, "fork_safe", lambda: False)
    np.testing.assert_array_equal(run(2), serial)
    assert set(where) == {os.getpid()}


@pytest.mark.slow
def test_forked_workers_read_their_own_files_and_report_errors_in_the_parent(monkeypatch, tmp_path, small_corpus):
    """train's walk hands the workers FileRefs: each worker reads its chunk's files (an mbox among
    them splits there), and what comes back, in order, is what reading in the parent gives;
    a file that cannot be read is reported once, by the parent's on_error, or raised without one."""
    import shutil

    from nbtext.batch.train import _digests
    from nbtext.read import FileRef, LineOptions, labelled_documents

    corpus = tmp_path / "corpus"
    shutil.copytree(small_corpus, corpus)
    (corpus / "ham" / "zz-broken").write_bytes(b"\x1f\x8bnot gzip at all")
    (corpus / "spam" / "zz-mbox").write_bytes(b"From a@b Mon Jan  1 00:00:00 2024\nSubject: one\n\nbuy\n\n"
                                              b"From c@d Mon Jan  1 00:00:00 2024\nSubject: two\n\ncheap\n")
    s = TokenizerSettings()
    where = pids_calling(monkeypatch, FileRef, "read")

    def run(jobs, deferred=True):
        errors = []
        docs = labelled_documents([str(corpus)], [], LineOptions(), on_error=errors.append, deferred=deferred)
        out = [([(d.id, d.label) for d in c], b.blob, b.rows.data.tolist(), b.rows.indptr.tolist(), digests)
               for c, (b, digests) in chunks.counted(docs, s, n_jobs=jobs, chunk_size=7,
                                                             then=lambda d, b: (b, _digests(d)))]
        return out, [str(e) for e in errors]

    def per_document(result):  # (chunks of files and chunks of documents are cut differently)
        out, errors = result
        docs = [d for c in out for d in c[0]]
        sizes = [sum(c[2][a:b]) for c in out for a, b in zip(c[3], c[3][1:])]
        return docs, sizes, [h for c in out for h in c[4]], errors

    read_here = per_document(run(1, deferred=False))
    assert where == [] and read_here[3] == [f"{corpus}/ham/zz-broken: broken gzip data (Unknown compression method)"]
    assert read_here[0][-2:] == [(f"{corpus}/spam/zz-mbox:1", "spam"), (f"{corpus}/spam/zz-mbox:6", "spam")]
    serial = run(1)
    assert per_document(serial) == read_here and set(where) == {os.getpid()}
    monkeypatch.setattr(chunks, "fork_safe", lambda: True)
    where.clear()
    assert run(2) == serial and where == []  # (read in the workers: nothing in the parent's list)
    monkeypatch.setattr(chunks, "fork_safe", lambda: False)
    assert run(2) == serial and set(where) == {os.getpid()}
    monkeypatch.setattr(chunks, "fork_safe", lambda: True)
    docs = labelled_documents([str(corpus)], [], LineOptions(), deferred=True)
    with pytest.raises(NbtextError, match="zz-broken: broken gzip data"):
        list(chunks.counted(docs, s, n_jobs=2, chunk_size=7))


def test_a_process_with_threads_of_its_own_is_not_forked():
    import threading

    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert not chunks.fork_safe()
    finally:
        stop.set()
        t.join()


UNREAPED_PROBE = """
import os, sys
from nbtext.batch import pool as P
from nbtext.batch.train import train_model
from nbtext.errors import NbtextError
from nbtext.features.kernel import compiled as compiled_kernel
from nbtext.read import label_directory

forked, real = [], os.fork

def fork():
    pid = real()
    if pid:
        forked.append(pid)
    return pid

os.fork = fork
import nbtext.nb.calibrate as calibrate
fit = calibrate.fit_calibration
for fails in (False, True):  # (the second fails in its fits, once the folds' workers are done)
    def failing(*a):
        raise NbtextError("a fit that fails")
    calibrate.fit_calibration = failing if fails else fit
    forked.clear()
    try:
        train_model(label_directory(sys.argv[1], deferred=True), n_jobs=2)
    except NbtextError as e:
        assert fails and str(e) == "a fit that fails"
    left = []
    for pid in forked:
        try:
            os.waitpid(pid, os.WNOHANG)
            left.append(pid)  # (still this process's child)
        except ChildProcessError:
            pass
    print(len(forked), left)
from nbtext.read import Document
forked.clear()
one_class = [Document(d.id, d.data, "spam") for d in label_directory(sys.argv[1])]
try:  # (fails once counted: "need documents of at least two classes")
    train_model(one_class, n_jobs=2)
except NbtextError:
    pass
left = []
for pid in forked:
    try:
        os.waitpid(pid, os.WNOHANG)
        left.append(pid)
    except ChildProcessError:
        pass
print(len(forked), left)
"""


@pytest.mark.slow
def test_train_leaves_no_worker_unreaped():
    """train_model reaps its counting and calibration workers before it returns: none is left a
    zombie, whatever the run, also when a fit fails or when training fails once counted (in a
    process of its own: forking needs one without threads)."""
    r = subprocess.run([sys.executable, "-c", UNREAPED_PROBE, str(DATA / "corpus")], capture_output=True,
                       text=True, timeout=120)
    # (two workers to count, two for calibration's folds)
    assert r.stdout.splitlines() == ["4 []", "4 []", "2 []"], (r.stdout, r.stderr)


FOLD_WORKERS_PROBE = """
import os
from nbtext.batch import pool as P
from nbtext.batch.train import FoldWorkers
here = []
mapper = FoldWorkers(2)
print(mapper(lambda i: i * i, range(5)))
pids = mapper.starmap(os.getpid, [(), ()])
print(pids[0] != os.getpid(), pids[1] == os.getpid(), mapper.starmap(pow, [(2, 3), (3, 2), (4, 2)]))
mapper.close()
print(mapper.starmap(pow, [(2, 5), (5, 2)]))
"""


def test_calibrations_fold_workers_are_kept_for_the_fits():
    """FoldWorkers: the folds by a forked worker beside the parent's own work, then the same
    worker for starmap (calibration's fits of tied candidates: the first ones there, the last
    here meanwhile), in order; once closed, everything here (in a process of its own)."""
    r = subprocess.run([sys.executable, "-c", FOLD_WORKERS_PROBE], capture_output=True, text=True, timeout=60)
    assert r.stdout.splitlines() == ["[0, 1, 4, 9, 16]", "True True [8, 9, 16]", "[32, 25]"], r.stderr


def test_workers_get_four_small_tasks_ahead_but_big_ones_two():
    """ForkedWorkers.map sends up to AHEAD tasks a worker before reading its results (a walk's
    chunks of file references: the counting workers no longer wait on the parent), but past
    AHEAD_ALWAYS only while the tasks out hold under AHEAD_BYTES (``size``): chunks carrying
    documents' bytes (an mbox, stdin), which the caller holds until each is given out, stay at
    two a worker. Counted as the tasks taken before the first result is given out."""
    from nbtext.batch import pool

    for size, want in ((10, pool.AHEAD), (3 << 20, pool.AHEAD_ALWAYS)):
        taken = []

        def tasks():
            for i in range(8):
                taken.append(i)
                yield size

        with ForkedWorkers(int, 1) as p:
            results = p.map(tasks(), size=int)
            assert next(results) == size
            assert len(taken) == want, (size, taken)
            assert list(results) == [size] * 7
