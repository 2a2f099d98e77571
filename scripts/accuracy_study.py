"""Issue 37's comparison: nbtext's default against the strongest linear baseline and bogofilter.

    nice python scripts/accuracy_study.py [--shared ../shared/data] [--folds 5]
           [--only debian-sections,...] [--no-bogofilter] [--systems NAME,...] [--strengths 4,6,8,12]

Every system is scored in the same stratified k folds (seed 0) as `nbtext cv`
(nbtext.nb.calibrate.stratified_folds), on the three development corpora:

- nbtext's default (all default options: calibration and the decision layer on), through
  cross_validate, as `nbtext cv`; and the same with --no-layer (the calibrated Naive Bayes alone);
- scikit-learn TF-IDF (sublinear tf) + LinearSVC on nbtext's default tokens, and on scikit-learn's
  own TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True) over the raw text (UTF-8, replace);
- bogofilter (spamassassin-2002 only): a fresh word list per fold, trained with `-s -B` / `-n -B`
  on the fold's training messages, the test messages scored with `-T -B` (spamicity; a message is
  spam where bogofilter says S);
- candidates on nbtext's counts, the decision layers
  issue 37 names: NBSVM (Wang and Manning 2012: binarized counts, or sublinear TF-IDF, times the
  class's NB log-count ratio r, then a linear SVM one-vs-rest; liblinear is the solver of this
  prototype), and Robinson-Fisher combination of the tokens whose
  Robinson probability is at least min_dev from 0.5 (bogofilter's ranking; two classes only).
- a probe: nbtext's default log-posteriors plus k times the NB-weighted SVM's decision values;
- with --strengths: nbtext's decision layer (nbtext.nb.layer) at each strength given, the grid
  its default strength was chosen on.

Accuracy and macro-F1 for every corpus; for spamassassin-2002 also the ROC-AUC of the printed
P(spam) (spamicity for bogofilter, the decision value for the linear models) and the ham FPR at
the model's own threshold. Figures are means over the folds. Each corpus is counted once; every
system on nbtext's tokens takes its fold's rows of that one matrix.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.stats import chi2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nbtext.batch.chunks import default_jobs  # noqa: E402
from nbtext.batch.train import count_corpus, cross_validate  # noqa: E402
from nbtext.nb.calibrate import stratified_folds  # noqa: E402
from nbtext.read import label_directory  # noqa: E402
from nbtext.read.walk import label_directory_files  # noqa: E402
from nbtext.report import aggregate  # noqa: E402
from nbtext.settings import DecisionOptions, FeatureOptions, ModelSettings, TokenizerSettings  # noqa: E402

CORPORA = ("debian-sections", "spamassassin-2002", "fortune-lang")


def corpus(path: Path):
    """nbtext's default-token count matrix, labels, vocabulary and file paths of a label directory."""
    tok = TokenizerSettings()
    X, y, vocab = count_corpus(label_directory(str(path)), tok, n_jobs=default_jobs())
    paths = [p for p, _single, _label in label_directory_files(str(path))]
    assert len(paths) == X.shape[0], "one document per file expected"
    return X, y, vocab, paths, tok


def roc_auc(pos_score: np.ndarray, is_pos: np.ndarray) -> float:
    """Mann-Whitney ROC-AUC, ties counted half."""
    from scipy.stats import rankdata
    r = rankdata(pos_score)
    n1 = is_pos.sum()
    n0 = len(is_pos) - n1
    return float((r[is_pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def figures(y_true, y_pred, spam_score=None, positive="spam", negative="ham") -> dict:
    classes = np.unique(y_true)
    f1 = []
    for c in classes:
        tp = np.sum((y_pred == c) & (y_true == c))
        p = tp / max(np.sum(y_pred == c), 1)
        r = tp / max(np.sum(y_true == c), 1)
        f1.append(0 if tp == 0 else 2 * p * r / (p + r))
    out = {"accuracy": float(np.mean(y_pred == y_true)), "macro_f1": float(np.mean(f1))}
    if negative in classes:
        ham = y_true == negative
        out["false_positive_rate"] = float(np.mean(y_pred[ham] != negative))
        if spam_score is not None:
            out["roc_auc"] = roc_auc(np.asarray(spam_score, float), y_true == positive)
    return out


def mean_of(per_fold: list[dict]) -> dict:
    return {k: float(np.mean([f[k] for f in per_fold])) for k in per_fold[0]}


# ---- candidates on the counts ----------------------------------------------------------------

def nbsvm(Xtr, ytr, Xte, tfidf: bool, C=1.0, alpha=1.0):
    """NBSVM decision values (one column per class, one-vs-rest) for the test rows: each class's
    features scaled by its NB log-count ratio r (from binarized counts, smoothing alpha), then a
    linear SVM (liblinear's, squared hinge, as a prototype of the solver nbtext would need).
    tfidf: the features are sublinear TF-IDF rows, L2-normalised after the scaling; else the
    binarized counts (Wang and Manning's; beta = 1, no interpolation)."""
    from sklearn.feature_extraction.text import TfidfTransformer
    from sklearn.preprocessing import normalize
    from sklearn.svm import LinearSVC
    classes = np.unique(ytr)
    Btr = (Xtr > 0).astype(np.float64)
    if tfidf:
        t = TfidfTransformer(sublinear_tf=True).fit(Xtr)
        Atr, Ate = t.transform(Xtr), t.transform(Xte)
    else:
        Atr, Ate = Btr, (Xte > 0).astype(np.float64)
    scores = np.empty((Xte.shape[0], len(classes)))
    for j, c in enumerate(classes):
        pos = ytr == c
        p = np.asarray(Btr[pos].sum(axis=0)).ravel() + alpha
        q = np.asarray(Btr[~pos].sum(axis=0)).ravel() + alpha
        R = sp.diags(np.log(p / p.sum()) - np.log(q / q.sum()))
        Z, Zt = Atr @ R, Ate @ R
        if tfidf:
            Z, Zt = normalize(Z), normalize(Zt)
        m = LinearSVC(C=C).fit(Z, pos)
        scores[:, j] = m.decision_function(Zt)
    return classes, scores


def nb_plus_svm(X, y, vocab, tok, tr, te, k: float):
    """nbtext's default model's log-posteriors plus k times the NB-weighted TF-IDF SVM's
    decision values: the two summed per class, the verdict their argmax."""
    from nbtext.batch.train import fit_matrix
    classes, s = nbsvm(X[tr], y[tr], X[te], True)
    model, keep = fit_matrix(X[tr], y[tr], vocab, tok, ModelSettings(), decisions=DecisionOptions(layer=False))
    lp = np.log(np.maximum(model.proba(X[te][:, keep]), np.finfo(float).tiny))
    return classes, lp[:, [model.classes.index(c) for c in classes]] + k * s


_LAYER_FITS: dict = {}


def nb_layer_strength(X, y, vocab, tok, tr, te, strength: float):
    """nbtext's default model (calibrated, without the layer) and the decision layer fitted as
    train fits it (nbtext.nb.layer.fit_layer on the training part: every document, as the
    5,000-document sample is on these corpora), scored with ``strength``: the strength grid.
    Each fold's fit is made once for every strength."""
    from nbtext.batch.train import fit_matrix
    from nbtext.features.rows import Rows
    from nbtext.nb.layer import fit_layer

    key = (id(X), int(np.flatnonzero(te)[0]), int(te.sum()))
    if key not in _LAYER_FITS:
        if any(k[0] != id(X) for k in _LAYER_FITS):  # (another corpus's)
            _LAYER_FITS.clear()
        model, keep = fit_matrix(X[tr], y[tr], vocab, tok, ModelSettings(), decisions=DecisionOptions(layer=False))
        classes = np.array(model.classes)
        layer = fit_layer(Rows.of(X[tr][:, keep]), np.searchsorted(classes, y[tr]), model.counts)
        Xte = Rows.of(X[te][:, keep])
        _LAYER_FITS[key] = (classes, model, layer, Xte, model.log_proba(Xte))
    classes, model, layer, Xte, logp = _LAYER_FITS[key]
    layer.strength = strength
    return classes, layer.log_proba(logp, Xte, model.counts)


def robinson_fisher(Xtr, ytr, Xte, positive="spam", s=1.0, x=0.5, min_dev=0.1):
    """Robinson-Fisher spamicity of the test rows (bogofilter's combination), from document
    frequencies per class: f(w) = (s x + n p(w)) / (s + n), p(w) = b/(b+g) with b and g the
    token's class-normalised document frequencies; only tokens with |f - 0.5| >= min_dev count."""
    Btr = (Xtr > 0).astype(np.float64)
    spam = ytr == positive
    nb = np.asarray(Btr[spam].sum(axis=0)).ravel()
    ng = np.asarray(Btr[~spam].sum(axis=0)).ravel()
    bf, gf = nb / max(spam.sum(), 1), ng / max((~spam).sum(), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        pw = np.where(bf + gf > 0, bf / (bf + gf), x)
    n = nb + ng
    fw = (s * x + n * pw) / (s + n)
    fw = np.clip(fw, 1e-6, 1 - 1e-6)
    keep = (np.abs(fw - 0.5) >= min_dev) & (n > 0)
    Bte = (Xte > 0).astype(np.float64)[:, keep]
    k = np.asarray(Bte.sum(axis=1)).ravel()
    ln_f, ln_1f = np.log(fw[keep]), np.log1p(-fw[keep])
    # Robinson's H is near 0 for a hammy message (its f are small), S near 0 for a spammy one
    H = chi2.sf(-2 * (Bte @ ln_f), 2 * np.maximum(k, 1))
    S = chi2.sf(-2 * (Bte @ ln_1f), 2 * np.maximum(k, 1))
    return np.where(k > 0, (1 + H - S) / 2, x)


# ---- baselines ------------------------------------------------------------------------------

def sklearn_svc(Xtr, ytr, Xte):
    from sklearn.feature_extraction.text import TfidfTransformer
    from sklearn.svm import LinearSVC
    t = TfidfTransformer(sublinear_tf=True).fit(Xtr)
    m = LinearSVC().fit(t.transform(Xtr), ytr)
    return m.classes_, m.decision_function(t.transform(Xte))


def sklearn_own(texts_tr, ytr, texts_te):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.svm import LinearSVC
    v = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit(texts_tr)
    m = LinearSVC().fit(v.transform(texts_tr), ytr)
    return m.classes_, m.decision_function(v.transform(texts_te))


def bogofilter(paths_tr, ytr, paths_te) -> tuple[np.ndarray, np.ndarray]:
    """bogofilter's spamicity and verdict (spam where it says S) per test message."""
    with tempfile.TemporaryDirectory(prefix="bogo-") as d:
        for flag, label in (("-s", "spam"), ("-n", "ham")):
            files = [p for p, lab in zip(paths_tr, ytr) if lab == label]
            for i in range(0, len(files), 500):
                subprocess.run(["bogofilter", "-d", d, flag, "-B", *files[i:i + 500]], check=True)
        # (its exit status is the last message's verdict, 0 spam 1 ham 2 unsure; 3 an error)
        run = subprocess.run(["bogofilter", "-d", d, "-T", "-B", *paths_te], capture_output=True, text=True)
        if run.returncode == 3:
            raise RuntimeError(f"bogofilter: {run.stderr.strip()}")
        out = run.stdout.splitlines()
    got = {line.rsplit(" ", 2)[0]: line.rsplit(" ", 2)[1:] for line in out}
    spamicity = np.array([float(got[p][1]) for p in paths_te])
    verdict = np.array(["spam" if got[p][0] == "S" else "ham" for p in paths_te])
    return spamicity, verdict


def cpu_seconds() -> float:
    """User + system CPU of this process and its waited-for children (bogofilter, workers)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def verdicts(classes, scores):
    if scores.ndim == 1:  # a binary LinearSVC: positive is classes[1]
        return classes[(scores > 0).astype(int)], scores
    return classes[scores.argmax(axis=1)], None


def spam_score(classes, scores):
    if scores.ndim == 1:
        return scores if classes[1] == "spam" else -scores
    spam = list(classes).index("spam")
    if scores.shape[1] == 2:  # (one-vs-rest's two columns: the margin of spam over ham)
        return scores[:, spam] - scores[:, 1 - spam]
    return scores[:, spam]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--only", default=",".join(CORPORA))
    ap.add_argument("--no-bogofilter", action="store_true")
    ap.add_argument("--systems", default="", help="comma-separated subset of system names")
    ap.add_argument("--strengths", default="", help="comma-separated decision layer strengths to score (a grid)")
    args = ap.parse_args()
    started = time.time()
    table: dict = {}
    for cname in args.only.split(","):
        X, y, vocab, paths, tok = corpus(args.shared / cname)
        fold = stratified_folds(y, args.folds, 0)
        texts = None
        systems = {}

        def nb_default(decisions=DecisionOptions()):
            folds = cross_validate(X, y, vocab, tok, ModelSettings(), FeatureOptions(), decisions, args.folds, 0)
            return aggregate(folds, 0)["mean"]
        systems["nbtext default (decision layer on)"] = nb_default
        systems["nbtext --no-layer"] = lambda: nb_default(DecisionOptions(layer=False))
        per_fold_systems = {
            "scikit-learn TF-IDF + LinearSVC, nbtext tokens": lambda tr, te: sklearn_svc(X[tr], y[tr], X[te]),
            "scikit-learn TfidfVectorizer(1-2, sublinear) + LinearSVC": None,
            "NBSVM, binarized counts x r (candidate)": lambda tr, te: nbsvm(X[tr], y[tr], X[te], False),
            "NB-weighted TF-IDF x r, L2 + LinearSVC (candidate)": lambda tr, te: nbsvm(X[tr], y[tr], X[te], True),
            "nbtext log P + 2 x NB-weighted SVM (probe)": lambda tr, te: nb_plus_svm(X, y, vocab, tok, tr, te, 2),
            "nbtext log P + 4 x NB-weighted SVM (probe)": lambda tr, te: nb_plus_svm(X, y, vocab, tok, tr, te, 4),
        }
        for k in filter(None, args.strengths.split(",")):
            per_fold_systems[f"nbtext, decision layer strength {k} (grid)"] = \
                lambda tr, te, k=float(k): nb_layer_strength(X, y, vocab, tok, tr, te, k)
        if "spam" in y:
            per_fold_systems["Robinson-Fisher s=1 x=0.5 min_dev=0.1 (candidate)"] = "rf"
            per_fold_systems["Robinson-Fisher s=0.0178 x=0.52 min_dev=0.375, bogofilter's (candidate)"] = "rf-bogo"
            if not args.no_bogofilter:
                per_fold_systems["bogofilter 1.2.5"] = "bogo"
        wanted = set(filter(None, args.systems.split(",")))
        for name, fn in [*systems.items(), *per_fold_systems.items()]:
            if wanted and not any(w in name for w in wanted):
                continue
            t0 = cpu_seconds()
            if name in systems:
                r = fn()
            else:
                per = []
                for f in range(args.folds):
                    tr, te = fold != f, fold == f
                    if fn == "bogo":
                        score, pred = bogofilter([p for p, t in zip(paths, tr) if t], y[tr],
                                                 [p for p, t in zip(paths, te) if t])
                    elif fn in ("rf", "rf-bogo"):
                        params = {} if fn == "rf" else dict(s=0.0178, x=0.52, min_dev=0.375)
                        score = robinson_fisher(X[tr], y[tr], X[te], **params)
                        pred = np.where(score >= 0.5, "spam", "ham")
                    else:
                        if fn is None:
                            if texts is None:
                                texts = [Path(p).read_bytes().decode("utf-8", "replace") for p in paths]
                            classes, sc = sklearn_own([texts[i] for i in np.flatnonzero(tr)], y[tr],
                                                      [texts[i] for i in np.flatnonzero(te)])
                        else:
                            classes, sc = fn(tr, te)
                        pred, _ = verdicts(classes, sc)
                        score = spam_score(classes, sc) if "spam" in y else None
                    per.append(figures(y[te], pred, score))
                r = mean_of(per)
            r["cpu_s"] = cpu_seconds() - t0
            table[(cname, name)] = r
            print(f"  {cname} {name}: {r} ({time.time() - started:.0f} s)", file=sys.stderr, flush=True)

    load = os.getloadavg()
    print(f"{args.folds}-fold stratified cross-validation, seed 0, same folds for every system "
          f"(load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}).\n")
    print("| corpus | system | accuracy | macro-F1 | ROC-AUC P(spam) | ham FPR | log-loss | CPU s (5 folds) |")
    print("|---|---|---|---|---|---|---|---|")
    for (cname, name), r in table.items():
        auc = f"{r['roc_auc']:.4f}" if "roc_auc" in r else ""
        fpr = f"{r['false_positive_rate']:.4f}" if "false_positive_rate" in r else ""
        loss = f"{r['log_loss']:.4f}" if "log_loss" in r else ""
        print(f"| {cname} | {name} | {r['accuracy']:.4f} | {r['macro_f1']:.4f} | {auc} | {fpr} | {loss} | "
              f"{r['cpu_s']:.0f} |")


if __name__ == "__main__":
    main()
