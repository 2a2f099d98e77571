"""Choose nbtext's defaults by cross-validation on the three development corpora.

    python scripts/choose_defaults.py [--shared ../shared/data] [--folds 5] > docs/defaults.md

Every combination of tokenizer setting and model variant is scored by the same stratified
k-fold cross-validation (seed 0) as `nbtext cv`, on ../shared/data/spamassassin-2002 (mail),
fortune-lang (languages) and debian-sections (topics). The table gives accuracy, macro-F1, ham
false-positive rate (spamassassin) and log-loss; the ranking column is the mean of the three
corpora's macro-F1, because one set of defaults (or one automatic rule, applied the same to every
corpus: the variant auto) must serve all. scikit-learn's MultinomialNB, ComplementNB and
TF-IDF + LinearSVC on the same folds, over nbtext's default tokens, are given for reference when
scikit-learn is installed.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nbtext.batch.chunks import default_jobs  # noqa: E402
from nbtext.batch.train import count_corpus, cross_validate  # noqa: E402
from nbtext.nb.calibrate import stratified_folds  # noqa: E402
from nbtext.read import label_directory  # noqa: E402
from nbtext.report import aggregate  # noqa: E402
from nbtext.settings import DecisionOptions, FeatureOptions, ModelSettings, TokenizerSettings  # noqa: E402

NO_CHARS = dict(char_ngram_min=0, char_ngram_max=0)
TOKENIZERS = {
    "words": TokenizerSettings(ngram_max=1, **NO_CHARS),
    "words+bigrams": TokenizerSettings(ngram_max=2, **NO_CHARS),
    "words+bigrams+char2-4 not on mail (default)": TokenizerSettings(),
}
DEFAULT_TOKENS = "words+bigrams+char2-4 not on mail (default)"
TWCNB = dict(tf=True, idf=True, length_norm=True, norm=True)
MODELS = {
    "auto a=0.03 (default)": ModelSettings("auto", 0.03),
    "multinomial a=0.1": ModelSettings("multinomial", 0.1),
    "multinomial a=0.03": ModelSettings("multinomial", 0.03),
    "complement a=0.03": ModelSettings("complement", 0.03),
    "complement a=0.1": ModelSettings("complement", 0.1),
    "complement a=0.3 tf+idf+length+norm": ModelSettings("complement", 0.3, **TWCNB),
    "bernoulli a=1": ModelSettings("bernoulli", 1.0),
}
assert TOKENIZERS[DEFAULT_TOKENS] == TokenizerSettings() and MODELS["auto a=0.03 (default)"] == ModelSettings()
CORPORA = {"spamassassin-2002": "SA", "fortune-lang": "fortune", "debian-sections": "debian"}


def sklearn_rows(X, y, folds: int) -> list[tuple[str, dict]]:
    try:
        from sklearn.feature_extraction.text import TfidfTransformer
        from sklearn.naive_bayes import ComplementNB, MultinomialNB
        from sklearn.svm import LinearSVC
        from sklearn.metrics import f1_score
    except ImportError:
        return []
    fold = stratified_folds(y, folds, 0)
    rows = []
    for name, make, tfidf in (("scikit-learn MultinomialNB", MultinomialNB, False),
                              ("scikit-learn ComplementNB", ComplementNB, False),
                              ("scikit-learn TF-IDF + LinearSVC", LinearSVC, True)):
        accs, f1s, fprs = [], [], []
        for f in range(folds):
            tr, te = fold != f, fold == f
            Xtr, Xte = X[tr], X[te]
            if tfidf:
                t = TfidfTransformer(sublinear_tf=True).fit(Xtr)
                Xtr, Xte = t.transform(Xtr), t.transform(Xte)
            p = make().fit(Xtr, y[tr]).predict(Xte)
            accs.append((p == y[te]).mean())
            f1s.append(f1_score(y[te], p, average="macro"))
            if "ham" in y:
                ham = y[te] == "ham"
                fprs.append((p[ham] != "ham").mean())
        r = {"accuracy": np.mean(accs), "macro_f1": np.mean(f1s)}
        if fprs:
            r["false_positive_rate"] = np.mean(fprs)
        rows.append((name, r))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args()
    corpora = {name: args.shared / name for name in CORPORA}
    results: dict = {}
    reference: dict = {}
    started = time.time()
    for cname, path in corpora.items():
        for tname, tok in TOKENIZERS.items():
            X, y, vocab = count_corpus(label_directory(str(path)), tok, n_jobs=default_jobs())
            if tname == DEFAULT_TOKENS:
                reference[cname] = sklearn_rows(X, y, args.folds)
            for mname, ms in MODELS.items():
                folds = cross_validate(X, y, vocab, tok, ms, FeatureOptions(), DecisionOptions(),
                                       args.folds, 0)
                results[(tname, mname, cname)] = aggregate(folds, 0)["mean"]
            print(f"  {cname} {tname}: done ({time.time() - started:.0f} s)", file=sys.stderr)

    print(f"# Defaults chosen by {args.folds}-fold cross-validation\n")
    print("Produced by `python scripts/choose_defaults.py > docs/defaults.md` (seed 0, stratified folds, "
          "calibration on, as `nbtext cv`). Rank: mean macro-F1 over the three corpora.\n")
    short = list(CORPORA.values())
    print("| tokens | model | SA accuracy | SA macro-F1 | SA ham FPR | SA log-loss | "
          + " | ".join(f"{c} accuracy | {c} macro-F1 | {c} log-loss" for c in short[1:]) + " | mean macro-F1 |")
    print("|---|---|---|---|---|---|" + "---|---|---|" * (len(short) - 1) + "---|")
    rows = []
    for tname in TOKENIZERS:
        for mname in MODELS:
            r = [results[(tname, mname, c)] for c in CORPORA]
            rows.append((float(np.mean([x["macro_f1"] for x in r])), tname, mname, r))
    for score, tname, mname, (sa, *others) in sorted(rows, key=lambda r: -r[0]):
        print(f"| {tname} | {mname} | {sa['accuracy']:.4f} | {sa['macro_f1']:.4f} | "
              f"{sa['false_positive_rate']:.4f} | {sa['log_loss']:.4f} | "
              + " | ".join(f"{o['accuracy']:.4f} | {o['macro_f1']:.4f} | {o['log_loss']:.4f}" for o in others)
              + f" | {score:.4f} |")
    if any(reference.values()):
        print("\nReference, same folds, nbtext's default tokens as the features:\n")
        print("| system | SA accuracy | SA macro-F1 | SA ham FPR | "
              + " | ".join(f"{c} accuracy | {c} macro-F1" for c in short[1:]) + " |")
        print("|---|---|---|---|" + "---|---|" * (len(short) - 1))
        for i, (name, sa) in enumerate(reference["spamassassin-2002"]):
            others = [reference[c][i][1] for c in list(CORPORA)[1:]]
            print(f"| {name} | {sa['accuracy']:.4f} | {sa['macro_f1']:.4f} | {sa['false_positive_rate']:.4f} | "
                  + " | ".join(f"{o['accuracy']:.4f} | {o['macro_f1']:.4f}" for o in others) + " |")


if __name__ == "__main__":
    main()
