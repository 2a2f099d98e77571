"""Memory policy for batch work, in one place: how train keeps its peak resident memory flat as
the corpus grows (docs/bench.md has the figures). Each function is a no-op where glibc or Linux
is absent; none changes a number, only where memory lives."""
from __future__ import annotations

import os
import sys


def map_large_arrays(threshold: int = 1 << 20, keep: int = 8 << 20) -> None:
    """glibc maps each block of ``threshold`` bytes or more on its own, so that freeing it gives
    it back at once (by default the threshold rises to the largest block freed so far, and freed
    arrays then stay resident as holes in the heap); up to ``keep`` free bytes stay at the
    heap's top for the next chunk's arrays."""
    import ctypes

    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(M_MMAP_THRESHOLD, threshold)
        libc.mallopt(M_TRIM_THRESHOLD, keep)
    except (OSError, AttributeError, TypeError):
        pass


def hold_freed_memory(size: int = 32 << 20) -> None:
    """In a worker process that lives for many tasks (counting's chunks, calibration's folds):
    blocks under ``size`` come from the heap, and what a task frees stays there for the next
    one. A fold's temporaries are a few arrays as long as the vocabulary, a chunk's its counter's
    tables, rows, sums and their pickled copy; under the parent's threshold (map_large_arrays,
    inherited at the fork) each was new pages to map, fault in and zero, in every task. (32 MiB:
    the most mallopt(3) takes for a mapping threshold on 64 bits.)"""
    map_large_arrays(size, size)


def release_free_memory() -> None:
    """Return the C heap's free pages to the system (glibc's malloc_trim): streaming leaves the
    heap full of holes where chunks were, which would otherwise stay in the peak."""
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError, TypeError):
        pass


class withheld_from_forks:
    """Within, a forked process gets no mapping of these buffers' whole pages but the first
    (madvise MADV_DONTFORK; MADV_DOFORK again on leaving): for children forked for work that
    never reads them (calibration's fold workers and the vocabulary), whose RSS would otherwise
    count those pages. A read of them there ends the child with SIGSEGV (the pool's
    WorkerError), never a wrong number; the first page, where an object's header or the
    allocator's bookkeeping may lie, is kept, and the child never frees them (it ends with
    os._exit). Buffers are anything that exports one; a strided view is passed by; one that does
    not ends the withholding there, and what was withheld is given back on leaving, however the
    block ends."""

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
