"""Predict's work in a worker, stage by stage, with two builds of the compiled kernel in one process.

    python scripts/predict_stages_ab.py MODEL LINES --other PATH/_kernel....so [--lines 5000] [--runs 6]

Predict's workers count a chunk of documents, put it onto the model's vocabulary and score it
(nbtext.batch.score). On a shared machine two whole runs differ by more than a change of a few
percent; here the model is loaded and prepared once, the first ``--lines`` lines of LINES are cut
into predict's chunks and put onto the vocabulary once, and then each chunk is counted (or scored)
with this environment's kernel (A) and with the other build (B, a kernel .so file, loaded as a
second copy of the module) in turn, the order alternating by run: the load of the machine falls on
both alike. Prints the CPU seconds of each side, min and median over the runs, and B / A of the
medians, per stage; each chunk's outputs of the two sides are checked to be equal bit for bit.
"""
from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import statistics
import sys
import time

import numpy as np

import nbtext
from nbtext import store
from nbtext.batch.chunks import CHUNK, chunks
from nbtext.features.counting import count_documents
from nbtext.features.implementation import KERNEL_ABI, compiled
from nbtext.read import Document


def other_kernel(path: str):
    """The kernel built at ``path``, as a module of its own (its types are not the installed one's)."""
    loader = importlib.machinery.ExtensionFileLoader("nbtext._kernel", path)
    spec = importlib.util.spec_from_file_location("nbtext._kernel", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    if getattr(module, "ABI", None) != KERNEL_ABI:  # (nbtext would run the Python path in its place)
        sys.exit(f"predict_stages_ab: {path} is built for kernel ABI {getattr(module, 'ABI', None)}, this nbtext's "
                 f"is {KERNEL_ABI}: build the other side from C sources of this ABI")
    return module


def use(kernel) -> None:
    """nbtext's kernel from now on (features.implementation imports it by name)."""
    sys.modules["nbtext._kernel"] = kernel
    nbtext._kernel = kernel


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("lines")
    ap.add_argument("--other", required=True, help="the other build's kernel (.so)")
    ap.add_argument("--lines", dest="n", type=int, default=5000, help="lines of LINES to take (default: %(default)s)")
    ap.add_argument("--runs", type=int, default=6)
    a = ap.parse_args()
    mine = compiled()
    if mine is None:
        sys.exit("predict_stages_ab: this environment has no compiled kernel")
    model = store.load(a.model)
    model.estimator.linear().prepare()
    if model.layer is not None:
        model.layer.prepare(model.counts)
    with open(a.lines, "rb") as f:
        docs = [Document(str(i), line.rstrip(b"\n"), None) for i, line in zip(range(a.n), f)]
    parts = [[d.data for d in c] for c in chunks(docs, CHUNK)]
    rows = [count_documents(c, model.tokenizer_settings).onto(model.vocab, grow=False) for c in parts]
    sides = {"A": mine, "B": other_kernel(a.other)}
    stages = {"count": lambda c, X: count_documents(c, model.tokenizer_settings).rows.data,
              "score": lambda c, X: model.log_proba(X)}
    for stage, work in stages.items():
        took = {name: [] for name in sides}
        for run in range(a.runs):
            cpu = dict.fromkeys(sides, 0.0)
            order = list(sides) if run % 2 == 0 else list(sides)[::-1]
            for c, X in zip(parts, rows):
                outs = {}
                for name in order:
                    use(sides[name])
                    start = time.process_time()
                    outs[name] = work(c, X)
                    cpu[name] += time.process_time() - start
                if not np.array_equal(outs["A"], outs["B"]):
                    sys.exit(f"predict_stages_ab: {stage}: the two kernels' outputs differ")
            use(mine)
            for name in sides:
                took[name].append(cpu[name])
        med = {name: statistics.median(v) for name, v in took.items()}
        print(f"{stage}: {len(parts)} chunks, {a.runs} runs; CPU s " +
              "  ".join(f"{name} min {min(took[name]):.3f} median {med[name]:.3f}" for name in sides) +
              f"  B/A {med['B'] / med['A']:.3f}")


if __name__ == "__main__":
    main()
