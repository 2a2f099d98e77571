"""`nbtext classify` of one message, another revision against this working tree, side by side.

    python scripts/classify_ab.py --base REV [--runs 21] [--message data/example-spam.eml]

REV's files are exported (git archive) to a temporary folder, with this tree's compiled kernel
copied in when REV's C sources are the same, and this tree's nbtext/ is copied beside them (one
file system for both); both are byte-compiled, as an install is. A model is
trained once on data/corpus by this tree; then the two trees classify the message in turn, whole
processes started as the `nbtext` command starts (nbtext.__main__.run), --runs times each.
Prints each side's median wall time and the ratio (this tree / REV).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
C_SOURCES = ["nbtext/_c", "nbtext/_kernel.c", "nbtext/_mail.c", "nbtext/_buf.h"]


def export_base(rev: str, dest: pathlib.Path) -> None:
    archive = subprocess.run(["git", "archive", rev, "nbtext"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    same_c = subprocess.run(["git", "diff", "--quiet", rev, "--", *C_SOURCES], cwd=ROOT).returncode == 0
    if same_c:
        for so in (ROOT / "nbtext").glob("_*.so"):
            shutil.copy2(so, dest / "nbtext" / so.name)
    else:
        print(f"note: {rev}'s C sources differ from this tree's; it runs without the compiled kernel",
              file=sys.stderr)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(dest / "nbtext")], check=True)


def run_once(src: pathlib.Path, model: str, message: str, cwd: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one classify process."""
    return timed_nbtext(src, ["classify", "-m", model, message], cwd)


def timed_nbtext(src: pathlib.Path, args: list[str], cwd: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system, its workers' included) of one `nbtext ARGS`
    process running the nbtext under ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, "-c", "from nbtext.__main__ import run; run()", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{args[0]}: {src}: {p.stderr.decode(errors='replace').strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the revision to compare with")
    ap.add_argument("--runs", type=int, default=21, help="whole-process runs of each side")
    ap.add_argument("--message", default=str(ROOT / "data" / "example-spam.eml"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nbtext-classify-ab-") as tmp:
        base, here = pathlib.Path(tmp) / "base", pathlib.Path(tmp) / "here"
        base.mkdir()
        export_base(args.base, base)
        shutil.copytree(ROOT / "nbtext", here / "nbtext", ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(here / "nbtext")], check=True)
        model = os.path.join(tmp, "m.nbm")
        subprocess.run([sys.executable, "-m", "nbtext", "train", str(ROOT / "data" / "corpus"), "-q", "-o", model],
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp, check=True)
        sides = {"base": base, "here": here}
        for src in sides.values():  # (warm the page cache and the bytecode)
            run_once(src, model, args.message, tmp)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
        for _ in range(args.runs):
            for name, src in sides.items():
                times[name].append(run_once(src, model, args.message, tmp))
    print(f"classify of {pathlib.Path(args.message).name}, median of {args.runs} interleaved runs each "
          "(CPU: user + system, steadier than wall time on a busy machine):")
    for i, what in enumerate(("wall", "CPU")):
        med = {name: statistics.median(t[i] for t in ts) for name, ts in times.items()}
        print(f"  {what:<4} {args.base} {med['base'] * 1000:.1f} ms, working tree {med['here'] * 1000:.1f} ms, "
              f"ratio {med['here'] / med['base']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
