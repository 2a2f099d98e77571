"""`nbtext train -j N`, another revision against this working tree, side by side.

    python scripts/train_ab.py --base REV [--runs 5] [--jobs 2] [--copies 16] [--zipf-mb 40]

Two corpora: spamassassin-2002 copied --copies times (symbolic links: the same messages, so the
vocabulary stops growing), and a line file of --zipf-mb MB generated here (zipf_lines: Zipf word
frequencies over a large type space, 20 classes), whose vocabulary grows with the data as real
text's does. REV is exported as classify_ab.py exports it; each side trains each corpus in turn,
whole processes as the `nbtext` command starts, --runs rounds, interleaved. Prints each side's
median wall and CPU time (user + system of the process and its workers) and the ratios.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

from classify_ab import ROOT, export_base, timed_nbtext

SPAMASSASSIN = ROOT.parent / "shared" / "data" / "spamassassin-2002"


def zipf_lines(path: pathlib.Path, megabytes: float, classes: int = 20, seed: int = 1, exponent: float = 1.1,
               types: int = 3_000_000) -> None:
    """A TSV line file (label, text) of about ``megabytes``: documents of 20-300 words, each
    word's rank drawn from a Zipf law over ``types`` word types; a third of a document's words
    are its class's own (the rank drawn the same way, spelled with the class): the vocabulary
    keeps growing with the file, as a real corpus's does."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, types + 1) ** exponent
    cdf = np.cumsum(weights / weights.sum())
    target, written = int(megabytes * 1e6), 0
    with open(path, "w") as f:
        while written < target:
            ranks = np.searchsorted(cdf, rng.random(200_000))
            own = rng.random(len(ranks)) < 1 / 3
            lengths = rng.integers(20, 300, size=len(ranks) // 20)
            at = 0
            for n in lengths:
                label = int(rng.integers(classes))
                words = [f"c{label}x{r:x}" if o else f"w{r:x}" for r, o in zip(ranks[at:at + n].tolist(),
                                                                             own[at:at + n].tolist())]
                at += n
                line = f"class{label}\t{' '.join(words)}\n"
                f.write(line)
                written += len(line)
                if at >= len(ranks) or written >= target:
                    break


def copies(dest: pathlib.Path, n: int) -> None:
    """spamassassin-2002's messages n times over, as symbolic links, class by class."""
    for f in sorted(SPAMASSASSIN.rglob("*")):
        if f.is_file():
            for i in range(n):
                link = dest / f.parent.name / f"{i}-{f.name}"
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(f)


def run_once(src: pathlib.Path, corpus: str, jobs: int, cwd: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system, workers included) of one train process."""
    return timed_nbtext(src, ["train", corpus, "-j", str(jobs), "-q", "-o", os.path.join(cwd, "m.nbm")], cwd)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the revision to compare with")
    ap.add_argument("--runs", type=int, default=5, help="interleaved rounds")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--copies", type=int, default=16, help="copies of spamassassin-2002")
    ap.add_argument("--zipf-mb", type=float, default=40, help="size of the generated corpus")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nbtext-train-ab-") as tmp:
        t = pathlib.Path(tmp)
        base, here = t / "base", t / "here"
        base.mkdir()
        export_base(args.base, base)
        shutil.copytree(ROOT / "nbtext", here / "nbtext", ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(here / "nbtext")], check=True)
        corpora = {}
        if SPAMASSASSIN.is_dir() and args.copies:
            copies(t / "sa", args.copies)
            corpora[f"spamassassin-2002 x{args.copies}"] = str(t / "sa")
        if args.zipf_mb:
            zipf_lines(t / "zipf.tsv", args.zipf_mb)
            corpora[f"Zipf {args.zipf_mb:g} MB, 20 classes"] = str(t / "zipf.tsv")
        sides = {"base": base, "here": here}
        for corpus in corpora.values():  # (warm the page cache and the bytecode)
            for src in sides.values():
                run_once(src, corpus, args.jobs, tmp)
        times = {(c, s): [] for c in corpora for s in sides}
        for _ in range(args.runs):
            for c, corpus in corpora.items():
                for s, src in sides.items():
                    times[c, s].append(run_once(src, corpus, args.jobs, tmp))
    print(f"train -j {args.jobs}, median of {args.runs} interleaved rounds (load average at the end: "
          f"{os.getloadavg()[0]:.2f}):")
    for c in corpora:
        for i, what in enumerate(("wall", "CPU")):
            med = {s: statistics.median(x[i] for x in times[c, s]) for s in sides}
            print(f"  {c}: {what:<4} {args.base} {med['base']:.2f} s, working tree {med['here']:.2f} s, "
                  f"ratio {med['here'] / med['base']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
