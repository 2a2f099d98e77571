"""`nbtext train` of two installed builds side by side, the parent's CPU apart from its workers'.

    python scripts/train_parent_ab.py --base /work/main/.venv/bin/python --here .venv/bin/python \
        --runs 3 CORPUS [CORPUS ...]

Each side is a Python interpreter whose environment imports the nbtext to measure (a worktree's
.venv). Each round trains every corpus once per side, interleaved (base, here), with defaults
(`train FILE -o M -q`), in a process of its own that runs nbtext's entry point and, as it exits,
writes its own CPU time (getrusage of itself: the serial stage, which sets the wall time) and its
reaped workers' (getrusage of its children). Prints the medians, the peak RSS of the parent and its
page faults, and the ratios; ``--keep DIR`` keeps each side's last model of each corpus (to compare with cmp).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

# Run in the measured process: nbtext's command line, then its own and its children's usage written
# to the file named by the first argument (at exit: train's sys.exit included).
PROBE = """
import atexit, json, resource, sys
out = sys.argv.pop(1)
def said():
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "w") as f:
        json.dump({"parent": me.ru_utime + me.ru_stime, "workers": kids.ru_utime + kids.ru_stime,
                   "parent_sys": me.ru_stime, "rss": me.ru_maxrss * 1024, "faults": me.ru_minflt}, f)
atexit.register(said)
from nbtext.__main__ import run
run()
"""


def train(python: str, corpus: str, model: str, cwd: str) -> dict:
    """One train process: its wall time, its own CPU, its workers' CPU (seconds), its peak RSS."""
    usage = os.path.join(cwd, "usage.json")
    start = time.perf_counter()
    p = subprocess.run([python, "-c", PROBE, usage, "train", corpus, "-o", model, "-q"], cwd=cwd,
                       stdin=subprocess.DEVNULL, capture_output=True)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        raise SystemExit(f"{python}: train {corpus}: {p.stderr.decode(errors='replace').strip()}")
    with open(usage) as f:
        return {"wall": wall, **json.load(f)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the base side's python (its environment's nbtext)")
    ap.add_argument("--here", required=True, help="the measured side's python")
    ap.add_argument("--runs", type=int, default=3, help="interleaved rounds")
    ap.add_argument("--keep", help="a folder for each side's last model of each corpus")
    ap.add_argument("corpora", nargs="+")
    args = ap.parse_args()
    sides = {"base": os.path.abspath(args.base), "here": os.path.abspath(args.here)}
    times = {(c, s): [] for c in args.corpora for s in sides}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="nbtext-parent-ab-") as tmp:  # (cwd: not a worktree's nbtext)
        for _ in range(args.runs):
            for c in args.corpora:
                for s, python in sides.items():
                    model = os.path.join(args.keep or tmp, f"{s}-{pathlib.Path(c).stem}.nbm")
                    times[c, s].append(train(python, os.path.abspath(c), model, tmp))
                    loads.append(os.getloadavg()[0])
    print(f"train (defaults), median of {args.runs} interleaved rounds; load average (1 min) "
          f"{min(loads):.2f}-{max(loads):.2f}")
    print("| corpus | figure | base | here | here / base |")
    print("| --- | --- | ---: | ---: | ---: |")
    for c in args.corpora:
        for what, unit in (("wall", "s"), ("parent", "s CPU"), ("parent_sys", "s system"), ("workers", "s CPU"), ("rss", "MB"),
                           ("faults", "thousands")):
            med = {s: statistics.median(t[what] for t in times[c, s]) for s in sides}
            scale = 1e6 if what == "rss" else 1e3 if what == "faults" else 1
            print(f"| {pathlib.Path(c).name} | {what} ({unit}) | {med['base'] / scale:.2f} | "
                  f"{med['here'] / scale:.2f} | {med['here'] / med['base']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
