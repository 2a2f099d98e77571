"""Which tokens --max-features should keep: --select frequency, chi2 and mi at equal sizes.

    python scripts/feature_selection.py [--shared ../shared/data] [--sizes 2000,10000,30000] > docs/feature_selection.md
    python scripts/feature_selection.py --corpus DIR ...   # one labelled directory instead

5-fold cross-validation (seed 0, default options otherwise, calibration on, as `nbtext cv`) of
each criterion keeping each number of tokens, on spamassassin-2002 and fortune-lang; the first
row of each corpus keeps every token, for reference.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nbtext.batch.chunks import default_jobs  # noqa: E402
from nbtext.batch.train import count_corpus, cross_validate  # noqa: E402
from nbtext.read import label_directory  # noqa: E402
from nbtext.report import aggregate  # noqa: E402
from nbtext.settings import CRITERIA, DecisionOptions, FeatureOptions, ModelSettings, TokenizerSettings  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--corpus", type=Path, default=None, help="one labelled directory instead of the two")
    ap.add_argument("--sizes", default="2000,10000,30000")
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    corpora = ({args.corpus.name: args.corpus} if args.corpus else
               {name: args.shared / name for name in ("spamassassin-2002", "fortune-lang")})
    started = time.time()
    print(f"# --max-features: which tokens to keep ({args.folds}-fold cross-validation)\n")
    print("Produced by `python scripts/feature_selection.py > docs/feature_selection.md` (seed 0, default "
          "options otherwise, calibration on, as `nbtext cv`).\n")
    print("| corpus | tokens kept | --select | accuracy | macro-F1 | ham FPR | log-loss |")
    print("|---|---|---|---|---|---|---|")
    tok = TokenizerSettings()
    for name, path in corpora.items():
        X, y, vocab = count_corpus(label_directory(str(path)), tok, n_jobs=default_jobs())
        runs = [(f"all {X.shape[1]:,}", "(none)", FeatureOptions())]
        runs += [(f"{k:,}", c, FeatureOptions(max_features=k, select=c)) for k in sizes for c in CRITERIA]
        for kept, criterion, feats in runs:
            folds = cross_validate(X, y, vocab, tok, ModelSettings(), feats, DecisionOptions(), args.folds, 0)
            m = aggregate(folds, 0)["mean"]
            fpr = f"{m['false_positive_rate']:.4f}" if "false_positive_rate" in m else ""
            print(f"| {name} | {kept} | {criterion} | {m['accuracy']:.4f} | {m['macro_f1']:.4f} | {fpr} | "
                  f"{m['log_loss']:.4f} |", flush=True)
        print(f"  {name}: done ({time.time() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
