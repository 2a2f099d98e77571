"""Which objective to fit the calibration temperature by: log-loss or Brier score.

    python scripts/calibration_objective.py [--shared ../shared/data] > docs/calibration.md

For each corpus (the bundled sample, spamassassin-2002, fortune-lang), default options: the
5-fold out-of-fold joint log-likelihoods of every document (seed 0), a temperature fitted on a
random half of them by each objective, and log-loss, Brier score and expected calibration error
measured on the other half, next to no calibration (T = 1).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nbtext.batch.chunks import default_jobs  # noqa: E402
from nbtext.batch.train import count_corpus  # noqa: E402
from nbtext.nb.calibrate import brier_at, fit_temperature, log_loss_at, out_of_fold_jll, probabilities_at  # noqa: E402
from nbtext.read import label_directory  # noqa: E402
from nbtext.report import evaluate  # noqa: E402
from nbtext.settings import ModelSettings, TokenizerSettings  # noqa: E402


def rows(name: str, path: Path):
    X, y, _ = count_corpus(label_directory(str(path)), TokenizerSettings(), n_jobs=default_jobs())
    classes = sorted(set(y))
    t = np.searchsorted(classes, y)
    jll = out_of_fold_jll(X, y, classes, ModelSettings(), 5, 0)
    fit = np.random.default_rng(1).random(len(y)) < 0.5
    held = ~fit
    for objective, temperature in (("none (T = 1)", 1.0),
                                   ("log-loss", fit_temperature(jll[fit], t[fit], log_loss_at)),
                                   ("Brier score", fit_temperature(jll[fit], t[fit], brier_at))):
        p = probabilities_at(jll[held], temperature)
        r = evaluate(classes, y[held], [classes[i] for i in p.argmax(axis=1)], p)
        yield (f"| {name} | {objective} | {temperature:.3g} | {r['log_loss']:.4f} | "
               f"{r['brier']:.4f} | {r['ece']:.4f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    args = ap.parse_args()
    corpora = [("bundled sample", ROOT / "data" / "corpus")]
    corpora += [(c, args.shared / c) for c in ("spamassassin-2002", "fortune-lang") if (args.shared / c).is_dir()]
    print("# Calibration objective\n\n`python scripts/calibration_objective.py`: temperature fitted on "
          "a random half of the 5-fold out-of-fold scores, measured on the other half (default "
          "options, seed 0).\n")
    print("| corpus | T fitted by | T | log-loss | Brier | ECE |\n|---|---|---|---|---|---|")
    for name, path in corpora:
        for row in rows(name, path):
            print(row, flush=True)


if __name__ == "__main__":
    main()
