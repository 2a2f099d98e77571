"""The process edge: how a run of `nbtext` ends, and process-wide settings only a command sets.

Both command lines (nbtext.cli with click, nbtext.quick without it) end through ``finish``:
a user error is one line `nbtext: error: ...` and status 1 (3 for `classify --exit-code`), a
reader that left (`| head`) ends quietly with status 0, Ctrl-C with `nbtext: interrupted` and
130, and an unexpected failure is reported without a traceback. Importing this module is free.
"""
from __future__ import annotations

import gc
import os
import sys

from .errors import NbtextError, SettingError, shown


def error_line(message: str) -> None:
    """The one line of a failure, on stderr (nowhere when stderr is closed: never on stdout),
    with whatever in it came from a file made visible (``shown``)."""
    if sys.stderr is not None:
        try:
            print(f"nbtext: error: {shown(message)}", file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass


def printable_streams() -> None:
    """Have stdout and stderr write what their encoding cannot hold as \\xNN or \\uNNNN: with
    PYTHONIOENCODING=ascii (or any encoding short of Unicode), cv's "±", a class name "spám"
    from a stranger's model or a header's text was an internal error halfway through the
    output."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):  # (closed, or not a text file)
            pass


def stdout():
    """Standard output, for a command whose output is its answer: refused when it is closed
    (`>&-`), so that such a run does not end with status 0 having said nothing."""
    if sys.stdout is None:
        from .errors import NbtextError

        raise NbtextError("standard output is closed: nowhere to write the answer")
    return sys.stdout


FLAGS = {"ngram_max": "--ngrams", "char_ngram_min": "--char-ngrams", "char_ngram_max": "--char-ngrams",
         "mode": "--email/--text/--auto"}


def flag_of(param: str) -> str:
    """The command-line flag that sets a library parameter (nbtext.settings), for messages."""
    return FLAGS.get(param, "--" + param.replace("_", "-"))


class Reported(Exception):
    """A failure already reported on stderr, line by line (inputs that could not be read): the
    run ends with the status of a user error and nothing more is said."""


class ReaderLeft(Exception):
    """The reader of our output went away (EPIPE), carried past click, which would exit 1."""


def finish(body, error_status: int = 1, name_of=flag_of) -> int:
    """Run body() and return the process's exit status. ``error_status`` is the status of a user
    error (or a callable, asked when the error happens); ``name_of`` names a setting in
    messages (by default, the flag that sets it)."""
    status = error_status if callable(error_status) else (lambda: error_status)
    try:
        return body() or 0
    except SettingError as e:
        error_line(e.worded(name_of))
        return status()
    except Reported:
        return status()
    except NbtextError as e:
        error_line(str(e))
        return status()
    except (BrokenPipeError, ReaderLeft):
        # The reader left: end quietly, as cat does; point stdout at /dev/null so the
        # interpreter's final flush cannot complain either. Where the exit status is the
        # answer (classify --exit-code: a user error there is 3, not 1), the answer was not
        # delivered, and that is an error.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 0 if status() == 1 else status()
    except Terminated:
        if sys.stderr is not None:
            print("\nnbtext: terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        if sys.stderr is not None:
            print("\nnbtext: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        error_line("out of memory")
        return status()
    except OSError as e:  # writing the output failed (a full disk: /dev/full); reading is read.py's
        error_line(f"{e.filename or 'output'}: {e.strerror or e}")
        return status()
    except Exception as e:  # the last line of defence: a bug, reported without a traceback
        if os.environ.get("NBTEXT_DEBUG"):
            raise
        error_line(f"internal error: {e.__class__.__name__}: {e} "
                   "(rerun with NBTEXT_DEBUG=1 for a traceback, and please report it)")
        return status()


def leave(code) -> None:
    """End this process with exit status ``code`` (a SystemExit's) as the interpreter would end
    it, without its teardown: the standard streams flushed, the exit handlers run (atexit:
    those of multiprocessing, joblib, Dask, weakref.finalize), the streams flushed again, then
    os._exit. The teardown frees every object the run made, one by one, when the system takes
    the process's memory back whole anyway: train's on spamassassin-2002 took 11-12 ms after the
    model was saved. Returns, and leaves the ending to the interpreter as before, where that
    would not be the same: a status that is not a number (printed by the interpreter), a
    thread other than daemon threads still running (the interpreter waits for it), or a
    stream that does not flush (the interpreter reports that, and ends with status 120).
    Only the entry point calls this, for a run of its own (nbtext.__main__)."""
    if code is not None and (not isinstance(code, int) or isinstance(code, bool)):
        return
    threading = sys.modules.get("threading")
    if threading is not None and any(t.is_alive() and not t.daemon and t is not threading.main_thread()
                                     for t in threading.enumerate()):
        return
    if not _flushed():
        return
    import atexit

    atexit._run_exitfuncs()  # (once: it unregisters them)
    if not _flushed():
        return
    os._exit(code or 0)


def _flushed() -> bool:
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):  # (a reader that left, a full disk, a closed stream)
        return False
    return True


def start_quietly() -> None:
    """The garbage collector off while the entry point starts (the imports and the reading of
    argv: objects made to last, with hardly a cycle among them), until the command starts
    (started()): its collections of them took 4-5 ms of every train's start-up, before any
    worker could start (spamassassin-2002: the workers forked 70.5 -> 66 ms in, medians of 8)."""
    global _quiet
    if gc.isenabled():
        gc.disable()
        _quiet = True


def started() -> None:
    """The command starts: what the start made is frozen (no collection walks it again: it
    lives as long as the process) and the collector is on, as start_quietly found it."""
    global _quiet
    if _quiet:
        _quiet = False
        gc.freeze()
        gc.enable()


_quiet = False


BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def single_threaded_blas() -> None:
    """Have NumPy's OpenBLAS start no threads of its own, unless the environment already says
    how many (any of BLAS_THREADS): called by the entry point before NumPy is imported, as
    OpenBLAS reads the variable once, when it is loaded. nbtext's parallel work is its worker
    processes (nbtext.batch.pool), one a core; a BLAS thread only competed with them. It is
    made when NumPy is imported and then waits for work by spinning: in train on
    spamassassin-2002 it took 47 ms of CPU in the first 0.1 s, while the workers were
    starting (perf: blas_thread_server), and the run's CPU went 0.906 -> 0.841 s, its wall
    0.545 -> 0.526 s (10 interleaved runs). No nbtext product is large enough for BLAS's
    threads to pay (the sparse products are the kernel's or scipy's, never BLAS), and a
    product's value does not depend on them. Worker processes inherit the variable.
    A library caller's process is left as it is: only the command line calls this."""
    if not any(os.environ.get(name) for name in BLAS_THREADS):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


def without_openssl() -> None:
    """Keep OpenSSL's libcrypto out of the process. numpy.random imports secrets, which imports
    hmac and hashlib, which load it (the _hashlib module) for hashes nbtext never makes (the
    ledger's BLAKE2 is CPython's own: operations.digest): 2.4 ms of train's parent, and 3.3 MiB
    of the RSS of it and of every worker forked after (libcrypto's pages touched as it loads),
    at every scale. With _hashlib absent, hashlib and hmac use CPython's built-in hashes (the
    same digests; hashlib's pbkdf2_hmac and scrypt, which nbtext never calls, are missing).
    Called by the entry point before anything imports numpy (where something already loaded
    it, nothing); a library caller's process is left as it is."""
    sys.modules.setdefault("_hashlib", None)


def map_large_arrays(threshold: int = 1 << 20, keep: int = 8 << 20) -> None:
    """Have glibc's malloc map every block of ``threshold`` bytes or more on its own, so that
    freeing it gives it back at once. By default the threshold rises to the largest block
    freed so far, and from then on arrays of that size came from the heap, where the ones
    freed stayed resident as holes (spamassassin-2002, train's peak RSS: 129-141 -> 124 MiB,
    for 0.25 s more system time in mapping pages).

    A threshold set so fixes the heap's trim threshold at its default too (128 KiB): the free
    space at the heap's top went back to the system on nearly every free, and the next
    chunk's arrays, smaller than ``threshold``, took new pages there again, each faulted in
    and zeroed. Up to ``keep`` bytes stay at the top instead, for the next chunk to reuse
    (release_free_memory still returns them at a phase's end): spamassassin-2002's counting,
    the parent's page faults 20,000-25,000 -> 14,000-14,500 and 0.54-0.57 -> 0.52-0.53 s, the
    peak RSS the same 86.7-86.9 MB (interleaved runs). Elsewhere than glibc nothing."""
    import ctypes

    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(M_MMAP_THRESHOLD, threshold)
        libc.mallopt(M_TRIM_THRESHOLD, keep)
    except (OSError, AttributeError, TypeError):
        pass


def hold_freed_memory(size: int = 32 << 20) -> None:
    """In a worker process that lives for a few tasks (calibration's folds): blocks under
    ``size`` come from the heap, and what is freed stays for the next task, which
    release_free_memory no longer gives back. A fold's temporaries, a few arrays as long as
    the vocabulary, were each new pages to fault in and zero (the parent maps blocks from
    1 MiB on their own, to keep its peak low: map_large_arrays). spamassassin-2002, 5 runs
    each, interleaved: calibration 0.19-0.20 -> 0.14-0.15 s, its workers' CPU 0.25-0.27 ->
    0.16-0.17 s, the peak RSS (the parent's) the same. (32 MiB: the most mallopt(3) takes for
    a mapping threshold on 64 bits.)"""
    global _holding
    _holding = True
    map_large_arrays(size, size)


_holding = False


def release_free_memory() -> None:
    """Return the C heap's free pages to the system (glibc's malloc_trim; elsewhere nothing).
    Streaming leaves the heap full of holes where chunks were, and numpy's next large arrays
    are mapped afresh rather than put in them, so the holes stayed in the peak RSS
    (spamassassin-2002: 154 -> 139 MiB; copied 16 times: 204 -> 160). About 10 ms a call:
    train calls it at phase ends and when its calibration sample is cut down. Nothing in a
    process that holds its freed memory (hold_freed_memory)."""
    import ctypes

    if _holding:
        return

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError, TypeError):
        pass


class withheld_from_forks:
    """Within, a forked process gets no mapping of these buffers' whole pages but the first
    (madvise MADV_DONTFORK; MADV_DOFORK again on leaving): for the children forked for work
    that never reads them. Their pages, shared with the parent, otherwise counted in each
    child's RSS: calibration's fold worker inherited the vocabulary and, when it fits on a
    sample, the model's counts, 16 MB of train's peak at 16 copies of spamassassin-2002. A
    read of them there ends the child with SIGSEGV (the pool's WorkerError), never a wrong
    number; the first page, where an object's header or the allocator's bookkeeping may
    lie, is kept, and the child never frees them (it ends with os._exit). Buffers are anything
    that exports one (arrays, bytes, memoryviews; a strided view is passed by); one that does
    not ends the withholding there, and what was withheld before it is given back on leaving,
    however the block ends. Elsewhere than Linux with glibc nothing."""
    # (a class, not contextlib's decorator: this module is on classify's path, which contextlib's
    # import would lengthen by 2 ms)

    def __init__(self, buffers):
        self.buffers, self.ranges, self.madvise = buffers, [], None  # ranges: (start, length) taken

    def __enter__(self):
        try:
            if not sys.platform.startswith("linux"):
                return self
            import ctypes

            import numpy as np

            madvise = ctypes.CDLL(None).madvise
            madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
            self.madvise, page = madvise, os.sysconf("SC_PAGE_SIZE")
            for buf in self.buffers:
                a = np.frombuffer(buf, dtype=np.uint8) if not isinstance(buf, np.ndarray) else buf
                if not a.flags.c_contiguous:  # (a strided view's bytes are not one span)
                    continue
                start = a.__array_interface__["data"][0]
                lo, hi = (start // page + 1) * page, (start + a.nbytes) // page * page
                if hi > lo and madvise(lo, hi - lo, _MADV_DONTFORK) == 0:
                    self.ranges.append((lo, hi - lo))
        except (OSError, AttributeError, TypeError, ValueError):
            pass  # (what was withheld stays so until the end; the rest is forked as ever)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        ranges, self.ranges = self.ranges, []
        for lo, size in ranges:  # (madvise is bound wherever a range was taken)
            self.madvise(lo, size, _MADV_DOFORK)


_MADV_DONTFORK, _MADV_DOFORK = 10, 11  # (Linux's numbers, on every architecture)


class FreeMemory:
    """What the command line hands train as ``release``: called, it returns the heap's free
    pages to the system (release_free_memory); its ``hold`` is what calibration's fold workers
    call as they start (hold_freed_memory), its ``withhold`` what they are forked within
    (withheld_from_forks). nbtext.batch, a layer below this module, takes
    both from the object it is given rather than import them."""

    def __call__(self) -> None:
        release_free_memory()

    @staticmethod
    def hold() -> None:
        hold_freed_memory()

    withhold = staticmethod(withheld_from_forks)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as an exception so that the run ends as after Ctrl-C: worker pools shut
    down and temporaries are removed (killed by the default handler, joblib's resource
    tracker warned of leaked semaphores)."""


def interrupts_to_main_thread() -> None:
    """Import numpy with Ctrl-C blocked, so that the threads its BLAS library starts (one per
    core, at import) keep it blocked and a Ctrl-C always reaches the main thread. While train
    starts its workers, the main thread holds Ctrl-C back (nbtext.batch.chunks.sigint_ignored):
    a BLAS thread took it meanwhile, and since it was ignored then, it was lost and train ran on.
    The commands that start workers call this first (they import numpy anyway); classify, which
    must start fast without numpy, never does."""
    import signal
    import sys

    if "numpy" in sys.modules:
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        import numpy  # noqa: F401
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def terminate_cleanly() -> None:
    """Make SIGTERM end the run through the process edge (status 143). Main thread only."""
    import signal

    def handler(signum, frame):
        raise Terminated()

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (a library caller's): leave it alone
        pass
