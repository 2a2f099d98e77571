"""Where train's parent process spends its CPU, from a perf profile: each sample of the parent's
threads (the main one, the pool's result reader and its task feeder; not the forked workers)
put in the first group whose functions are on its stack.

    nbtext train CORPUS -o M -q &  P=$!;  sleep 1
    perf record -F 149 --call-graph dwarf,32768 -p $P -o perf.data   # (Ctrl-C once train ends)
    perf script -F comm,pid,tid,ip,sym,dso -i perf.data > perf.txt
    python scripts/perf_parent.py perf.txt

perf's native stacks name no Python function: the groups are C functions (the kernel's, numpy's,
CPython's), so a share under "numpy" is numpy's work for any caller; cProfile of the same run names
the Python callers (docs/bench.md). Prints a Markdown table of the groups' shares of the samples.
"""
from __future__ import annotations

import collections
import re
import sys

# (group, a pattern of function names on the stack), the first that matches taking the sample.
MAIN = [
    ("calibration and the decision layer (after counting)", r"kernel_svm_pass|kernel_rows_dot|kernel_front_code"),
    ("the fold of appended sums (settle_sums)", r"kernel_settle_sums"),
    ("key index: rebuilt as it doubles (ki_fill)", r"\bki_fill\b"),
    ("key index: a chunk's lookups and new tokens (KeyIndex_extend)", r"KeyIndex_extend"),
    ("calibration's sample rows onto ids (move_rows)", r"kernel_move_rows"),
    ("reading and parsing the input's lines", r"split_whitespace|_PyUnicode_JoinArray|unicode_decode_utf8|_io_FileIO_read|"
                                             r"_bufferedreader|fastsearch"),
    ("numpy (indexing, temporaries, conversions)", r"_multiarray_umath"),
]
READER = r"_pickle_loads|_Py_read|_io_BytesIO|_PyBytes_Resize|os_readv"
FEEDER = r"_pickle_dumps|_Pickler|_Py_write"


def samples(lines):
    """(pid, thread id, ["function (library)", leaf first]) of each sample of `perf script`'s output."""
    ids, frames = None, []
    for line in lines:
        if line and not line[0].isspace():
            if ids is not None:
                yield (*ids, frames)
            ids, frames = line.split()[1].split("/"), []
        elif line.strip():
            frames.append(line.split(None, 1)[1].strip())
    if ids is not None:
        yield (*ids, frames)


def main() -> int:
    with open(sys.argv[1], errors="replace") as f:
        got = list(samples(f))
    parent = min(int(pid) for pid, *_ in got)  # (perf -p the parent: the workers are its children)
    groups, threads = collections.Counter(), set()
    for pid, tid, frames in got:
        if int(pid) != parent:
            continue
        stack = " ".join(frames)
        if tid == pid:
            group = next((name for name, rx in MAIN if re.search(rx, stack)), "other (the interpreter, the allocator, the system)")
        elif re.search(READER, stack):
            group = "receiving results (the pool's reader thread)"
        elif re.search(FEEDER, stack):
            group = "sending tasks (the pool's feeder thread)"
        else:
            group = "the parent's other threads"
        threads.add(tid)
        groups[group] += 1
    total = sum(groups.values())
    print(f"{total} samples of the parent's threads ({len(threads)})")
    print("| group | samples | share |")
    print("| --- | ---: | ---: |")
    for name, n in groups.most_common():
        print(f"| {name} | {n} | {100 * n / total:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
