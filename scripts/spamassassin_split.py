"""nbtext and bogofilter side by side on spamassassin-2002: the 80/20 split and k-fold CV.

    python scripts/spamassassin_split.py [--shared ../shared/data] [--folds 5] [nbtext train options...]

Split: trains both on the 2,600 training messages and scores the 650 test messages listed in
splits/spamassassin-2002.test; prints accuracy, ham false positives and missed spam for each,
and wall times; and, as a best case, the fewest errors of any threshold that calls no test ham
spam, picked in hindsight on the test scores themselves (issue 3 asks for no ham false positive:
this shows whether any threshold on a system's ranking could give it). bogofilter (Debian package
`bogofilter`) is skipped with a note when absent.
bogofilter's verdict is its spamicity against 0.5 (its "unsure" band resolved by the score),
which is how the reference figures in shared/data/README.md count it (99.38%, 0 FP, 4 FN).
Both systems' scores are read as they print them: nbtext's P(spam) from predict's rows (6
decimals), bogofilter's spamicity from its X-Bogosity header (`-v`: spamicity=, 6 decimals). On
those, the split also shows each system's ROC-AUC (roc_auc: ties count one half, so scores printed
alike rank alike) and how many test messages each printed at exactly 1.000000 and 0.000000, the
ties that cost a ranking (issue 19).

Cross-validation (--folds K, 0 for none): `nbtext cv --folds K --seed 0` on the whole corpus, and
bogofilter trained and scored on exactly the same folds (nbtext's own reading order and
stratified_folds), so issue 4's targets (99.5% accuracy, ham FPR at most 0.2%) can be read
against the reference tool. Figures are pooled over the folds: errors over all 3,250 messages.
nbtext's come from `nbtext cv --predictions`. The last columns are a best case for each system:
the fewest errors of any threshold on its out-of-fold scores that keeps ham FPR within 0.2%,
picked in hindsight on those same scores (no filter could pick it so), which shows whether any
operating point of the system reaches issue 4's targets.
"""
from __future__ import annotations

import argparse
import bisect
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_FPR = 0.002  # issue 4's target for the ham false-positive rate in 5-fold CV


def materialize(shared: Path, out: Path) -> tuple[Path, Path]:
    test = set((shared / "splits" / "spamassassin-2002.test").read_text().split())
    corpus = shared / "spamassassin-2002"
    for label in ("ham", "spam"):
        for f in sorted((corpus / label).iterdir()):
            part = "test" if f"{label}/{f.name}" in test else "train"
            dest = out / part / label
            dest.mkdir(parents=True, exist_ok=True)
            (dest / f.name).symlink_to(f)
    return out / "train", out / "test"


def mbox(files: list[Path], path: Path):
    """bogofilter's -M reads mbox; write one with From_ lines and >From quoting."""
    with open(path, "wb") as out:
        for f in files:
            data = f.read_bytes()
            if data.startswith(b"From "):
                data = data.split(b"\n", 1)[1]
            out.write(b"From nbtext@localhost Thu Jan  1 00:00:00 2002\n")
            for line in data.splitlines(keepends=True):
                out.write(b">" + line if line.lstrip(b">").startswith(b"From ") else line)
            out.write(b"\n")


def tally(rows) -> tuple[dict, dict]:
    """(each true class's P(spam) scores, each true class's errors) of nbtext's verdicts, given
    as (true label, label, probability of that label) rows: predict's and cv --predictions'.
    P(spam) is as printed: the row's 6 decimals, or one minus them (exact in 6 decimals too)."""
    p_spam: dict = {"ham": [], "spam": []}
    wrong: dict = {"ham": 0, "spam": 0}
    for true, label, p in rows:
        p_spam[true].append(float(p) if label == "spam" else round(1 - float(p), 6))
        wrong[true] += label != true  # the model's own verdict (its threshold, if trained with one)
    return p_spam, wrong


def run_nbtext(train: Path, test: Path, tmp: Path, extra: list[str]) -> dict:
    nb = [sys.executable, "-m", "nbtext"]
    model = tmp / "sa.nbm"
    t0 = time.perf_counter()
    subprocess.run(nb + ["train", str(train), "-o", str(model), "-q", *extra], check=True)
    t1 = time.perf_counter()
    out = subprocess.run(nb + ["predict", "-m", str(model), str(test)], check=True, capture_output=True,
                         text=True).stdout
    t2 = time.perf_counter()
    lines = [line.rsplit("\t", 2) for line in out.splitlines()]
    p_spam, wrong = tally((Path(path).parent.name, label, p) for path, label, p in lines)
    return {"system": " ".join(["nbtext", *extra]), "accuracy": 1 - (wrong["ham"] + wrong["spam"]) / len(lines),
            "ham_fp": wrong["ham"], "spam_fn": wrong["spam"],
            "best": fewest_errors(p_spam["ham"], p_spam["spam"], 0), "n": len(lines),
            "train_s": t1 - t0, "score_s": t2 - t1, "model_bytes": model.stat().st_size,
            **ranking(p_spam["ham"], p_spam["spam"])}


def bogofilter_scores(bogo: str, spam: list[Path], ham: list[Path], test: list[Path], tmp: Path
                      ) -> tuple[dict, float, float, int]:
    """Train a fresh wordlist in tmp on spam and ham, score test: ({path: spamicity as its
    X-Bogosity header prints it}, train seconds, score seconds, wordlist bytes)."""
    db = tmp / "bogo"
    db.mkdir()
    mbox(spam, tmp / "spam.mbox")
    mbox(ham, tmp / "ham.mbox")
    t0 = time.perf_counter()
    subprocess.run([bogo, "-d", str(db), "-s", "-M", "-I", str(tmp / "spam.mbox")], check=True)
    subprocess.run([bogo, "-d", str(db), "-n", "-M", "-I", str(tmp / "ham.mbox")], check=True)
    t1 = time.perf_counter()
    listing = "".join(f"{f}\n" for f in test)
    out = subprocess.run([bogo, "-d", str(db), "-v", "-b"], input=listing, capture_output=True,
                         text=True, check=False).stdout
    t2 = time.perf_counter()
    scores = {}
    for line in out.splitlines():  # PATH X-Bogosity: Spam, tests=bogofilter, spamicity=0.999998, version=…
        path, header = line.split(" X-Bogosity: ", 1)
        scores[path] = float(re.search(r"spamicity=([0-9.]+)", header).group(1))
    return scores, t1 - t0, t2 - t1, sum(p.stat().st_size for p in db.iterdir())


def run_bogofilter(train: Path, test: Path, tmp: Path) -> dict | None:
    bogo = shutil.which("bogofilter")
    if not bogo:
        return None
    files = sorted((test / "ham").iterdir()) + sorted((test / "spam").iterdir())
    scores, train_s, score_s, wordlist = bogofilter_scores(
        bogo, sorted((train / "spam").iterdir()), sorted((train / "ham").iterdir()), files, tmp)
    ham, spam = ([scores[str(f)] for f in files if f.parent.name == want] for want in ("ham", "spam"))
    fp, fn = sum(p >= 0.5 for p in ham), sum(p < 0.5 for p in spam)
    return {"system": "bogofilter", "accuracy": 1 - (fp + fn) / len(files), "ham_fp": fp,
            "spam_fn": fn, "best": fewest_errors(ham, spam, 0), "n": len(files),
            "train_s": train_s, "score_s": score_s, "model_bytes": wordlist, **ranking(ham, spam)}


def roc_auc(ham: list[float], spam: list[float]) -> float:
    """ROC-AUC of spam scores: the chance that a random spam scores above a random ham, a tie
    counting one half (Mann-Whitney U from average ranks)."""
    from scipy.stats import rankdata

    ranks = rankdata([*spam, *ham])  # ("average": tied scores share their mean rank)
    return float((ranks[:len(spam)].sum() - len(spam) * (len(spam) + 1) / 2) / (len(spam) * len(ham)))


def ranking(ham: list[float], spam: list[float]) -> dict:
    """A system's ranking from its printed spam scores: its ROC-AUC and how many messages it
    printed at exactly 1 and 0 (which rank as ties)."""
    scores = [*ham, *spam]
    return {"auc": roc_auc(ham, spam), "at_one": sum(p == 1.0 for p in scores),
            "at_zero": sum(p == 0.0 for p in scores)}


def fewest_errors(ham: list[float], spam: list[float], max_fp: int) -> int:
    """The fewest errors any threshold on these spam scores makes while calling at most max_fp
    ham spam: a best case, since the threshold is picked on the very scores it is judged on."""
    ham_sorted, spam_sorted = sorted(ham), sorted(spam)
    best = len(spam)  # threshold above every score: no ham called spam, every spam missed
    for t in set(ham) | set(spam):
        fp = len(ham) - bisect.bisect_left(ham_sorted, t)
        if fp <= max_fp:
            best = min(best, fp + bisect.bisect_left(spam_sorted, t))
    return best


def pooled(system: str, ham: list[float], spam: list[float], fp: int, fn: int) -> dict:
    """Figures over all folds from the verdicts' errors and each document's out-of-fold spam score."""
    return {"system": system, "ham_fp": fp, "spam_fn": fn, "ham": len(ham), "n": len(ham) + len(spam),
            "best": fewest_errors(ham, spam, int(MAX_FPR * len(ham))), **ranking(ham, spam)}


def cv_nbtext(corpus: Path, folds: int, extra: list[str], tmp: Path) -> dict:
    rows = tmp / "cv.tsv"
    subprocess.run([sys.executable, "-m", "nbtext", "cv", str(corpus), "--folds", str(folds), "--seed", "0",
                    "--predictions", str(rows), "-q", *extra], check=True, stdout=subprocess.DEVNULL)
    lines = [line.rsplit("\t", 4) for line in rows.read_text().splitlines()]
    p_spam, wrong = tally((true, label, p) for _, label, p, true, _ in lines)
    return pooled(" ".join(["nbtext", *extra]), p_spam["ham"], p_spam["spam"], wrong["ham"], wrong["spam"])


def cv_bogofilter(corpus: Path, folds: int, tmp: Path) -> dict | None:
    """bogofilter on the folds `nbtext cv --seed 0` uses: the same reading order, the same
    stratified shuffle."""
    bogo = shutil.which("bogofilter")
    if not bogo:
        return None
    sys.path.insert(0, str(ROOT))
    import numpy as np
    from nbtext.nb.calibrate import stratified_folds
    from nbtext.read import label_directory

    docs = [(Path(d.id), d.label) for d in label_directory(str(corpus))]
    fold = stratified_folds(np.array([label for _, label in docs]), folds, 0)
    spamicity: dict = {}
    for k in range(folds):
        train = [(f, label) for (f, label), i in zip(docs, fold) if i != k]
        test = [f for (f, _), i in zip(docs, fold) if i == k]
        (tmp / str(k)).mkdir(parents=True)
        spamicity.update(bogofilter_scores(bogo, [f for f, label in train if label == "spam"],
                                           [f for f, label in train if label == "ham"], test, tmp / str(k))[0])
    ham, spam = ([spamicity[str(f)] for f, label in docs if label == want] for want in ("ham", "spam"))
    return pooled("bogofilter", ham, spam, sum(p >= 0.5 for p in ham), sum(p < 0.5 for p in spam))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--folds", type=int, default=5, help="k of the cross-validation (0: split only)")
    args, extra = ap.parse_known_args()
    if not (args.shared / "spamassassin-2002").is_dir():
        sys.exit(f"{args.shared}/spamassassin-2002 not found (pass --shared)")
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        train, test = materialize(args.shared, tmp / "split")
        try:
            rows = [run_nbtext(train, test, tmp, extra), run_bogofilter(train, test, tmp)]
            corpus = args.shared / "spamassassin-2002"
            cv_rows = ([cv_nbtext(corpus, args.folds, extra, tmp), cv_bogofilter(corpus, args.folds, tmp / "cv")]
                       if args.folds else [])
        except subprocess.CalledProcessError as e:  # its own error is already on stderr
            sys.exit(f"{Path(e.cmd[0]).name} {' '.join(map(str, e.cmd[1:3]))} failed (exit {e.returncode})")
    print("80/20 split (splits/spamassassin-2002.test):\n")
    print("| system | accuracy | ham FP | spam FN | best threshold in hindsight, no ham FP: errors "
          "| its accuracy | ROC-AUC from printed P(spam) | printed 1.000000 / 0.000000 "
          "| train s | score 650 s | model bytes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r is None:
            print("| bogofilter | (not installed: apt-get install bogofilter) | | | | | | | | | |")
            continue
        print(f"| {r['system']} | {r['accuracy']:.2%} | {r['ham_fp']} | {r['spam_fn']} | {r['best']} | "
              f"{1 - r['best'] / r['n']:.2%} | {r['auc']:.6f} | {r['at_one']} / {r['at_zero']} | "
              f"{r['train_s']:.2f} | {r['score_s']:.2f} | {r['model_bytes']:,} |")
    if cv_rows:
        print(f"\n{args.folds}-fold cross-validation, seed 0, the same folds for both (pooled over folds):\n")
        print(f"| system | accuracy | ham FPR | ham FP | spam FN | best threshold in hindsight, ham FPR "
              f"<= {MAX_FPR:.1%}: errors | its accuracy | ROC-AUC from printed P(spam) | "
              f"printed 1.000000 / 0.000000 |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in cv_rows:
            if r is not None:
                print(f"| {r['system']} | {1 - (r['ham_fp'] + r['spam_fn']) / r['n']:.2%} | "
                      f"{r['ham_fp'] / r['ham']:.2%} | {r['ham_fp']} | {r['spam_fn']} | {r['best']} | "
                      f"{1 - r['best'] / r['n']:.2%} | {r['auc']:.6f} | {r['at_one']} / {r['at_zero']} |")
        print("\n(The last two columns are a best case: the threshold is picked on the very out-of-fold "
              "scores it is judged on, as no filter could pick it.)")


if __name__ == "__main__":
    main()
