"""What each rule of the mail tokenizer is worth: every rule turned off in turn.

    python scripts/mail_ablation.py [--corpus ../shared/data/spamassassin-2002] [--folds 5] > docs/mail_ablation.md

Runs `nbtext cv` (default options, seed 0) on spamassassin-2002 (or --corpus) once with every rule on and
once per rule with `--mail-rules-off` naming it (see MAIL_RULES in nbtext/settings.py), plus the
over-long-word summary token, which is the --max-word-length option. The table gives accuracy,
ham false-positive rate and spam false-negative rate (means over folds) and the change in
accuracy against all rules on: a negative change is what the rule is worth.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nbtext.settings import MAIL_RULES as RULES, MAX_WORD_LENGTH  # noqa: E402


def cv(corpus: Path, folds: int, ablate: str = "", extra: tuple[str, ...] = ()) -> dict:
    out = subprocess.run([sys.executable, "-m", "nbtext", "cv", str(corpus), "--folds", str(folds),
                          "--seed", "0", "--format", "json", "-q", "--mail-rules-off", ablate, *extra],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"nbtext cv with --mail-rules-off {ablate!r} failed:\n{out.stderr}")
    return json.loads(out.stdout)["mean"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "data" / "spamassassin-2002")
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args()
    corpus = args.corpus
    if not corpus.is_dir():
        sys.exit(f"{corpus} not found (pass --corpus)")
    runs = [("(all rules on)", "every rule below", "", ())]
    runs += [(f"no {name}", text, name, ()) for name, text in RULES.items()]
    runs.append(("no skip", "summary token for words over 40 characters (off: kept up to the cap, "
                 f"{MAX_WORD_LENGTH} characters)", "", ("--max-word-length", str(MAX_WORD_LENGTH))))
    t0 = time.perf_counter()
    rows = [(name, text, cv(corpus, args.folds, ablate, extra)) for name, text, ablate, extra in runs]
    base = rows[0][2]["accuracy"]
    print(f"# Mail tokenizer ablation\n\n`python scripts/mail_ablation.py` ({args.folds}-fold "
          f"`nbtext cv` on {corpus.name}, seed 0, default options; "
          f"{time.perf_counter() - t0:.0f} s). Each row turns one rule off.\n")
    print("| run | rule | accuracy | ham FPR | spam FNR | log-loss | accuracy change |")
    print("|---|---|---|---|---|---|---|")
    for name, text, r in rows:
        print(f"| {name} | {text} | {r['accuracy']:.4f} | {r['false_positive_rate']:.4f} | "
              f"{r['false_negative_rate']:.4f} | {r['log_loss']:.4f} | {r['accuracy'] - base:+.4f} |")


if __name__ == "__main__":
    main()
