"""Where train's (or predict's) wall time goes, phase by phase: each run is a fresh process
running the real command line, with its phases timed from inside (wall time, the parent's CPU
time, and its worker processes' CPU time, which the parent reaps at each phase's end).

    python scripts/phases.py train CORPUS [--runs 5] [-- TRAIN OPTIONS]
    python scripts/phases.py predict MODEL CORPUS [--runs 5]

Workers' CPU is counted in the phase that reaps them: train's counting workers are reaped as
counting ends, calibration's as its fits end.

Prints a markdown table of medians. The phases of train: start-up (the interpreter to the
command's first line: imports), counting (reading, tokenizing, counting and the reduce into
one vocabulary and counts), the model (feature selection, the model's arrays), calibration
(the internal folds and the fitted map: `_fit_on_folds`), saving. Of predict: start-up,
loading the model, scoring (reading, tokenizing, scoring, writing the rows)."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

# Runs in the measured process: wraps the phases' functions, then runs the command line.
PROBE = r'''
import json, os, resource, sys, time
t0 = time.perf_counter()

def now():
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter(), me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime

marks = [("start", now())]
from nbtext.process import single_threaded_blas
single_threaded_blas()  # (the entry point's process settings, before this probe imports numpy)
from nbtext.__main__ import main
from nbtext import store
from nbtext.batch import score, train

def marking(module, name, label):
    f = getattr(module, name)
    def wrapped(*a, **k):
        marks.append((label + ":start", now()))
        try:
            return f(*a, **k)
        finally:
            marks.append((label + ":end", now()))
    setattr(module, name, wrapped)

marking(train, "train_model", "train_model")
marking(train, "model_from_counts", "model")
marking(train, "_fit_on_folds", "calibration")
marking(store, "save", "save")
marking(store, "load", "load")
orig = score.log_scored_batches
def scoring(*a, **k):
    marks.append(("scoring:start", now()))
    yield from orig(*a, **k)
    marks.append(("scoring:end", now()))
score.log_scored_batches = scoring
sys.argv = ["nbtext"] + sys.argv[1:]
try:
    main()  # (the entry point's main, the command's own end: not run's, which would end the probe too)
except SystemExit as e:
    code = e.code
else:
    code = 0
marks.append(("end", now()))
with open(os.environ["NBTEXT_PHASES"], "w") as f:
    json.dump({"code": code, "marks": marks}, f)
sys.exit(code)
'''

TRAIN = [("start-up", "start", "train_model:start"), ("counting", "train_model:start", "model:start"),
         ("the model", "model:start", "model:end", "calibration"),
         ("calibration", "calibration:start", "calibration:end"), ("saving", "save:start", "save:end"),
         ("whole run", "start", "end")]
PREDICT = [("start-up", "start", "load:start"), ("loading the model", "load:start", "load:end"),
           ("scoring", "scoring:start", "scoring:end"), ("whole run", "start", "end")]


def one_run(args: list[str]) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = dict(os.environ, NBTEXT_PHASES=out.name)
        p = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        if p.returncode:
            raise SystemExit(f"phases: nbtext {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
        with open(out.name) as f:
            result = json.load(f)
    marks: dict = {}
    for name, value in result["marks"]:
        marks.setdefault(name, value)  # (the first start, the first end: phases run once)
    return marks


def spans(marks: dict, phases: list) -> dict:
    out = {}
    for name, a, b, *less in phases:
        if a not in marks or b not in marks:
            continue
        wall, cpu, kids = (marks[b][i] - marks[a][i] for i in range(3))
        for inner in less:  # (a phase that contains another: without it)
            s, e = marks.get(inner + ":start"), marks.get(inner + ":end")
            if s and e:
                wall, cpu, kids = wall - (e[0] - s[0]), cpu - (e[1] - s[1]), kids - (e[2] - s[2])
        out[name] = (wall, cpu, kids)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["train", "predict"])
    ap.add_argument("paths", nargs="+", help="train: CORPUS; predict: MODEL CORPUS")
    ap.add_argument("--runs", type=int, default=5)
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a, extra = ap.parse_args(argv[:cut]), argv[cut + 1:]  # (after --: more options for the command)
    with tempfile.TemporaryDirectory() as tmp:
        if a.command == "train":
            args, phases = ["train", a.paths[0], "-o", os.path.join(tmp, "m.nbm"), "-q", *extra], TRAIN
        else:
            args, phases = ["predict", "-m", a.paths[0], a.paths[1], "-q", *extra], PREDICT
        runs = [spans(one_run(args), phases) for _ in range(a.runs)]
    print(f"# nbtext {a.command}: where the time goes (medians of {a.runs} runs, seconds)\n")
    print(f"`python scripts/phases.py {a.command} {' '.join(a.paths)}`{' -- ' + ' '.join(extra) if extra else ''}; "
          f"{os.cpu_count()} cores. Workers' CPU: the processes the parent forked and reaped in the phase.\n")
    print("| phase | wall s | parent CPU s | workers' CPU s |")
    print("|---|---|---|---|")
    for name, *_ in phases:
        got = [r[name] for r in runs if name in r]
        if got:
            print(f"| {name} | " + " | ".join(f"{statistics.median(g[i] for g in got):.3f}" for i in range(3)) + " |")


if __name__ == "__main__":
    main()
