"""`make bench`'s commands at 1x, two checkouts side by side: train and predict on
spamassassin-2002 and classify of one message, whole processes, interleaved rounds.

    python scripts/bench_ab.py A B [--runs 7] [--corpus DIR] [--message FILE] [--lines FILE]

A and B are checkouts, each with its own .venv (`make .venv/.installed`), run as their `nbtext`
command. Each round runs the three commands for each side in turn (the order of the sides
alternates), each side training its own model. Prints per command each side's median wall time
and CPU time (user + system of the process and the workers it reaped), their B/A ratios, the
largest RSS, and the load average before and after (the machine may be shared: CPU time is the
steadier figure then). With --lines (issue 34's scale: a corpus from scripts/bench_scale.py),
predict scores that file's lines (`predict --lines`) instead of the corpus.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMMANDS = ("train", "predict", "classify")


def run(tree: str, args: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s with the reaped workers', peak RSS MiB) of one `nbtext ARGS` of ``tree``."""
    start = time.perf_counter()
    p = subprocess.Popen([os.path.join(tree, ".venv", "bin", "nbtext"), *args], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    if status:
        raise SystemExit(f"{tree}: nbtext {' '.join(args)}: {p.stderr.read().decode(errors='replace').strip()}")
    p.stderr.close()
    p.returncode = 0  # (reaped above)
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "data" / "spamassassin-2002"))
    ap.add_argument("--message", default=str(ROOT / "data" / "example-spam.eml"))
    ap.add_argument("--lines", help="predict these lines (--lines FILE) instead of the corpus")
    o = ap.parse_args()
    load_before = os.getloadavg()
    got: dict = {}
    with tempfile.TemporaryDirectory(prefix="nbtext-bench-ab-") as tmp:
        for r in range(o.runs):
            for side, tree in (("A", o.a), ("B", o.b))[::1 if r % 2 == 0 else -1]:
                model = os.path.join(tmp, f"{side}.nbm")
                for name, args in (("train", ["train", o.corpus, "-o", model, "-q"]),
                                   ("predict", ["predict", "-m", model, *(["--lines", o.lines, "-q"] if o.lines
                                                                          else [o.corpus])]),
                                   ("classify", ["classify", "-m", model, o.message])):
                    got.setdefault((name, side), []).append(run(tree, args))
    load_after = os.getloadavg()
    print(f"A = {o.a}, B = {o.b}; medians of {o.runs} interleaved rounds; "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after\n")
    print("| command | A wall s | B wall s | B/A wall | A CPU s | B CPU s | B/A CPU | RSS A / B MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in COMMANDS:
        a, b = got[(name, "A")], got[(name, "B")]
        wa, wb = (statistics.median(x[0] for x in s) for s in (a, b))
        ca, cb = (statistics.median(x[1] for x in s) for s in (a, b))
        ra, rb = (max(x[2] for x in s) for s in (a, b))
        print(f"| {name} | {wa:.3f} | {wb:.3f} | {wb / wa:.3f} | {ca:.3f} | {cb:.3f} | {cb / ca:.3f} | "
              f"{ra:.0f} / {rb:.0f} |")


if __name__ == "__main__":
    main()
