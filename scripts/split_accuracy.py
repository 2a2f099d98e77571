"""nbtext's defaults on each development corpus's 80/20 split, beside scikit-learn's on the same split.

    python scripts/split_accuracy.py [--shared ../shared/data] [--corpora NAME...] [nbtext train options...]

For each corpus, the test files are those listed in ../shared/data/splits/NAME.test, the rest are
the training set (the same split as the reference figures in ../shared/data/README.md). nbtext:
`nbtext train` on the training folders, `nbtext predict` on the test folder, accuracy and
macro-F1 of its verdicts. scikit-learn (when installed): CountVectorizer + MultinomialNB,
CountVectorizer + ComplementNB and TF-IDF (sublinear tf) + LinearSVC over scikit-learn's own
tokens (the README's reference systems), fitted and scored on the same files.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ("spamassassin-2002", "fortune-lang", "debian-sections")


def materialize(shared: Path, name: str, out: Path) -> tuple[Path, Path]:
    test = set((shared / "splits" / f"{name}.test").read_text().split())
    corpus = shared / name
    for label_dir in sorted(p for p in corpus.iterdir() if p.is_dir()):
        for f in sorted(label_dir.iterdir()):
            part = "test" if f"{label_dir.name}/{f.name}" in test else "train"
            dest = out / part / label_dir.name
            dest.mkdir(parents=True, exist_ok=True)
            (dest / f.name).symlink_to(f)
    return out / "train", out / "test"


def macro_f1(true: list, pred: list) -> float:
    f1s = []
    for c in sorted(set(true)):
        tp = sum(t == c and p == c for t, p in zip(true, pred))
        fp = sum(t != c and p == c for t, p in zip(true, pred))
        fn = sum(t == c and p != c for t, p in zip(true, pred))
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return float(np.mean(f1s))


def nbtext_row(train: Path, test: Path, tmp: Path, extra: list[str]) -> dict:
    nb = [sys.executable, "-m", "nbtext"]
    model = tmp / "m.nbm"
    t0 = time.perf_counter()
    subprocess.run(nb + ["train", str(train), "-o", str(model), "-q", *extra], check=True)
    out = subprocess.run(nb + ["predict", "-m", str(model), str(test)], check=True, capture_output=True,
                         text=True).stdout
    seconds = time.perf_counter() - t0
    true, pred = [], []
    for line in out.splitlines():
        doc, label, _ = line.split("\t")
        true.append(Path(doc).parent.name)
        pred.append(label)
    info = subprocess.run(nb + ["info", "-m", str(model), "--format", "json", "--top", "0"], check=True,
                          capture_output=True, text=True).stdout
    variant = json.loads(info)["model"]["variant"]
    return {"accuracy": float(np.mean([t == p for t, p in zip(true, pred)])), "macro_f1": macro_f1(true, pred),
            "n": len(true), "seconds": seconds, "variant": variant}


def files(folder: Path) -> tuple[list[bytes], list[str]]:
    paths = sorted(p for p in folder.rglob("*") if p.is_file())
    return [p.read_bytes() for p in paths], [p.parent.name for p in paths]


def sklearn_rows(train: Path, test: Path) -> list[tuple[str, dict]]:
    try:
        from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
        from sklearn.naive_bayes import ComplementNB, MultinomialNB
        from sklearn.svm import LinearSVC
    except ImportError:
        return []
    Xtr, ytr = files(train)
    Xte, yte = files(test)
    rows = []
    for name, vec, clf in (("scikit-learn CountVectorizer + MultinomialNB", CountVectorizer, MultinomialNB),
                           ("scikit-learn CountVectorizer + ComplementNB", CountVectorizer, ComplementNB),
                           ("scikit-learn TF-IDF (sublinear tf) + LinearSVC", TfidfVectorizer, LinearSVC)):
        v = vec(decode_error="replace", **({"sublinear_tf": True} if vec is TfidfVectorizer else {}))
        pred = list(clf().fit(v.fit_transform(Xtr), ytr).predict(v.transform(Xte)))
        rows.append((name, {"accuracy": float(np.mean([t == p for t, p in zip(yte, pred)])),
                            "macro_f1": macro_f1(yte, pred), "n": len(yte)}))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--corpora", nargs="*", default=list(CORPORA))
    args, extra = ap.parse_known_args()
    print("# Accuracy on the 80/20 splits\n")
    print(f"`python scripts/split_accuracy.py{' ' + ' '.join(extra) if extra else ''}`: nbtext "
          f"{'with ' + ' '.join(extra) if extra else 'with its defaults'}, and scikit-learn's reference "
          "systems, trained and scored on the same files.\n")
    print("| corpus | system | test documents | accuracy | macro-F1 |")
    print("|---|---|---|---|---|")
    for name in args.corpora:
        with tempfile.TemporaryDirectory() as tmp:
            train, test = materialize(args.shared, name, Path(tmp))
            r = nbtext_row(train, test, Path(tmp), extra)
            print(f"| {name} | nbtext ({r['variant']}) | {r['n']} | {r['accuracy']:.4f} | {r['macro_f1']:.4f} |",
                  flush=True)
            for system, s in sklearn_rows(train, test):
                print(f"| {name} | {system} | {s['n']} | {s['accuracy']:.4f} | {s['macro_f1']:.4f} |", flush=True)


if __name__ == "__main__":
    main()
