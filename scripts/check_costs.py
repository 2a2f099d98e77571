"""What the model file checks cost: `nbtext classify` of one message and `store.load`, with the
working tree and with another revision, side by side, alternating, in one run.

    python scripts/check_costs.py --base REV MODEL MESSAGE [--runs 21]

REV is exported with `git archive` into a temporary directory (the working tree's compiled
kernel copied beside it, so that both use it); each measurement is a fresh process (classify's
whole cost is its start-up and its lookups), and what is reported is its CPU time (user +
system, from the kernel's accounting of the child), which other processes on the machine
disturb less than wall time. Prints the medians and their ratio.
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

ROOT = pathlib.Path(__file__).resolve().parent.parent
LOAD = "import sys; from nbtext import store; store.load(sys.argv[1])"


def cpu_of(cmd: list[str], env: dict) -> float:
    """The CPU seconds (user + system) of one run of cmd, which must succeed."""
    p = subprocess.Popen(cmd, env=env, cwd=tempfile.gettempdir(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        sys.exit(f"{' '.join(cmd)}: status {p.returncode}: {p.stderr.read().decode()}")
    return usage.ru_utime + usage.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True)
    ap.add_argument("model")
    ap.add_argument("message")
    ap.add_argument("--runs", type=int, default=21)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as base:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", a.base], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", base], input=archive, check=True)
        for so in (ROOT / "nbtext").glob("*.so"):
            shutil.copy(so, pathlib.Path(base) / "nbtext")
        trees = {a.base: base, "working tree": str(ROOT)}
        model, message = os.path.abspath(a.model), os.path.abspath(a.message)
        for what, cmd in (("classify", ["-m", "nbtext", "classify", "-m", model, message]),
                          ("store.load", ["-c", LOAD, model])):
            times = {name: [] for name in trees}
            for _ in range(a.runs):
                for name, src in trees.items():
                    times[name].append(cpu_of([sys.executable, *cmd], {**os.environ, "PYTHONPATH": src}))
            med = {name: statistics.median(t) for name, t in times.items()}
            print(f"{what}: " + ", ".join(f"{name} {m * 1000:.1f} ms" for name, m in med.items())
                  + f" (median CPU of {a.runs}); ratio {med['working tree'] / med[a.base]:.3f}")


if __name__ == "__main__":
    main()
