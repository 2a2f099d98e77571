"""Which calibration map makes printed probabilities honest at the extremes and keeps ranking.

    python scripts/calibration_study.py [--shared ../shared/data] [--folds 5] > build/calibration_study.md

For each development corpus, 5-fold cross-validation as `nbtext cv` does it (seed 0, default
options): each outer fold's model is trained on the other folds, its calibration is fitted on
the internal out-of-fold scores of its own training documents (as train fits it), and applied to
the held-out fold. The scores are computed once per corpus (cached in build/); each candidate
map is then fitted and measured on the same scores. Measured on the held-out folds, pooled:
accuracy, log-loss, Brier score, the share printed as exactly 1.000000, the error rate among
documents printed with P(label) >= 0.999 and >= 0.99999 (as predict prints P: 6 decimals), and,
for two classes, ROC-AUC from the printed P(positive) (ties count one half).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nbtext.batch.train import count_corpus, fit_matrix  # noqa: E402
from nbtext.nb import calibrate as cal  # noqa: E402
from nbtext.nb.estimators import logsumexp_rows  # noqa: E402
from nbtext.read import label_directory  # noqa: E402
from nbtext.settings import DecisionOptions, FeatureOptions, ModelSettings, TokenizerSettings  # noqa: E402

CORPORA = ("spamassassin-2002", "fortune-lang", "debian-sections")


def scores(shared: Path, name: str, k: int, settings: ModelSettings, tag: str,
           tok: TokenizerSettings = TokenizerSettings(), cache_dir: Path = ROOT / "build") -> list[dict]:
    """Per outer fold: internal out-of-fold jll, lengths and labels; held-out jll, lengths, labels."""
    cache = cache_dir / f"calstudy-{name}-{tag}-{k}.npz"
    if cache.exists():
        z = np.load(cache, allow_pickle=False)
        return [{key[2:]: z[key] for key in z.files if key.startswith(f"{f}_")} for f in range(k)]
    X, y, vocab = count_corpus(label_directory(str(shared / name)), tok, n_jobs=2)
    folds = cal.stratified_folds(y, k, 0)
    out = []
    for f in range(k):
        test = folds == f
        model, keep = fit_matrix(X[~test], y[~test], vocab, tok, settings, FeatureOptions(),
                                 DecisionOptions(calibrate=False))
        Xtr, Xte = X[~test][:, keep], X[test][:, keep]
        ytr = y[~test]
        inner = cal.out_of_fold_jll(Xtr, ytr, model.classes, settings, k, 0, full=model.estimator)
        t_inner = np.searchsorted(model.classes, ytr)
        out.append(dict(inner=inner, inner_len=np.asarray(Xtr.sum(axis=1)).ravel(), inner_y=t_inner,
                        test=model.estimator.predict_joint_log_proba(Xte),
                        test_len=np.asarray(Xte.sum(axis=1)).ravel(),
                        test_y=np.searchsorted(model.classes, y[test]),
                        classes=np.asarray(model.classes)))
    cache.parent.mkdir(exist_ok=True)
    np.savez(cache, **{f"{f}_{key}": v for f, d in enumerate(out) for key, v in d.items()})
    return out


# -- candidate maps: each fits on (jll, lengths, truth) and returns log-posteriors for new rows ----
def softmax_log(z):
    return z - logsumexp_rows(z)[:, None]


def brier(logp, t):
    p = np.exp(logp)
    p[np.arange(len(p)), t] -= 1
    return float(np.square(p).sum(axis=1).mean())


def logloss(logp, t):
    return float(-logp[np.arange(len(logp)), t].mean())


def scaled(jll, n, T, b):
    return jll / (T * np.maximum(n, 1.0)[:, None] ** b)


def fit_scale(jll, n, t, objective, powers):
    best = None
    for b in powers:
        base = scaled(jll, n, 1.0, b)
        def f(lt):
            return objective(softmax_log(base / np.exp(lt)), t)
        spread = float(np.median(np.ptp(base, axis=1))) or 1.0
        lt = cal.golden_section(f, np.log(1e-4 * spread), np.log(1e2 * spread), 1e-4)
        v = f(lt)
        if best is None or v < best[0]:
            best = (v, float(np.exp(lt)), b)
    return best[1], best[2]


def soft_gaps(z, C):
    """Each class's gap below the best, d <= 0, made -C asinh(-d / C): logarithmic past C."""
    d = z - z.max(axis=1, keepdims=True)
    return -C * np.arcsinh(-d / C)


def make_map(objective, powers, shrink=False, soft=False):
    def fit(jll, n, t):
        T, b = fit_scale(jll, n, t, objective, powers)
        eps, C = 0.0, 0.0
        if soft:
            base = scaled(jll, n, T, b)
            C = float(np.exp(cal.golden_section(lambda lc: logloss(softmax_log(soft_gaps(base, np.exp(lc))), t),
                                                np.log(0.1), np.log(1e3), 1e-4)))
        if shrink:  # mix with the uniform: the out-of-fold error rate at the top bounds confidence
            z = scaled(jll, n, T, b)
            logp = softmax_log(soft_gaps(z, C) if C else z)
            eps = cal.golden_section(lambda e: logloss(np.logaddexp(np.log1p(-np.exp(e)) + logp,
                                                                     e - np.log(jll.shape[1])), t),
                                     np.log(1e-9), np.log(0.5), 1e-4)
            eps = float(np.exp(eps))

        def apply(j, m):
            z = scaled(j, m, T, b)
            logp = softmax_log(soft_gaps(z, C) if C else z)
            if eps:
                logp = np.logaddexp(np.log1p(-eps) + logp, np.log(eps / j.shape[1]))
            return logp
        apply.params = f"T={T:.3g} b={b:g}" + (f" eps={eps:.2g}" if eps else "") + (f" C={C:.3g}" if C else "")
        return apply
    return fit


def nbtext_map(jll, n, t):
    """What train fits and predict applies: nbtext.nb.calibrate.fit_calibration / calibrated_log."""
    from nbtext.nb.decision import Decision

    d = Decision(**cal.fit_calibration(jll, n, t))

    def apply(j, m):
        return cal.calibrated_log(d, j, m)
    apply.params = f"T={d.temperature:.3g} b={d.length_power:g} C={d.soft:.3g} floor={d.floor:.2g}"
    return apply


MAPS = {
    "temperature, Brier (today)": make_map(brier, [0.0]),
    "temperature, log-loss": make_map(logloss, [0.0]),
    "T * length^b, Brier": make_map(brier, [0.0, 0.25, 0.5, 0.75, 1.0]),
    "T * length^b, log-loss": make_map(logloss, [0.0, 0.25, 0.5, 0.75, 1.0]),
    "T * length^b, log-loss, + uniform": make_map(logloss, [0.0, 0.25, 0.5, 0.75, 1.0], shrink=True),
    "T * length^b, log-loss, asinh": make_map(logloss, [0.0, 0.25, 0.5, 0.75, 1.0], soft=True),
    "T * length^b, log-loss, asinh + uniform": make_map(logloss, [0.0, 0.25, 0.5, 0.75, 1.0], soft=True,
                                                         shrink=True),
    "nbtext: T * length^b, asinh, floor (fit_calibration)": nbtext_map,
}


def auc(score, positive):
    from scipy.stats import rankdata
    r = rankdata(score)
    n1, n0 = positive.sum(), (~positive).sum()
    return float((r[positive].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def measure(logp, t, classes):
    p = np.exp(logp)
    printed = np.round(p, 6)
    label = p.argmax(axis=1)
    right = label == t
    top = printed[np.arange(len(p)), label]
    _, ties = np.unique(top, return_counts=True)
    row = dict(acc=right.mean(), logloss=logloss(logp, t), brier=brier(logp, t),
               at1=(top >= 1.0).mean(), tie=ties.max() / len(top))
    for cut in (0.999, 0.99999):
        sel = top >= cut
        row[f"n{cut}"] = int(sel.sum())
        row[f"wrong{cut}"] = int((~right[sel]).sum())
    if len(classes) == 2:
        pos = list(classes).index("spam") if "spam" in classes else 1
        row["auc_printed"] = auc(printed[:, pos], t == pos)
        row["auc_raw"] = auc(logp[:, pos] - logp[:, 1 - pos], t == pos)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--variant", default="auto")
    ap.add_argument("--alpha", type=float, default=None)
    ap.add_argument("--corpora", nargs="*", default=list(CORPORA))
    ap.add_argument("--cache", type=Path, default=ROOT / "build", help="where the scores are kept")
    ap.add_argument("--tokens", default="", help="TokenizerSettings as k=v,k=v (default: the defaults)")
    a = ap.parse_args()
    kw = {"variant": a.variant} | ({"alpha": a.alpha} if a.alpha is not None else {})
    settings = ModelSettings(**kw)
    tok = TokenizerSettings(**{k: int(v) for k, v in (kv.split("=") for kv in a.tokens.split(",") if kv)})
    tag = f"{settings.variant}-{settings.alpha:g}" + (f"-{a.tokens}" if a.tokens else "")
    print(f"# Calibration maps, {a.folds}-fold cv, {tag}\n")
    print("| corpus | map | fitted (fold 1) | accuracy | log-loss | Brier | printed 1.000000 | largest tie | "
          "P>=0.999: n, wrong | P>=0.99999: n, wrong | AUC printed | AUC unrounded |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in a.corpora:
        t0 = time.perf_counter()
        data = scores(Path(a.shared), name, a.folds, settings, tag, tok, a.cache)
        print(f"(scores of {name}: {time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        for mname, fit in MAPS.items():
            logps, ts, params = [], [], None
            for d in data:
                apply = fit(d["inner"], d["inner_len"], d["inner_y"])
                params = params or apply.params
                logps.append(apply(d["test"], d["test_len"]))
                ts.append(d["test_y"])
            r = measure(np.vstack(logps), np.concatenate(ts), data[0]["classes"])
            aucs = (f"{r['auc_printed']:.5f} | {r['auc_raw']:.5f}" if "auc_raw" in r else "- | -")
            print(f"| {name} | {mname} | {params} | {r['acc']:.4f} | {r['logloss']:.4f} | {r['brier']:.4f} | "
                  f"{r['at1']:.1%} | {r['tie']:.1%} | {r['n0.999']}, {r['wrong0.999']} | {r['n0.99999']}, {r['wrong0.99999']} | "
                  f"{aucs} |", flush=True)


if __name__ == "__main__":
    main()
