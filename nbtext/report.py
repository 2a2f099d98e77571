"""Figures and rows: evaluation metrics, and prediction rows in TSV, CSV or JSONL."""
from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence

import numpy as np

from .errors import LISTED
from .nb.decision import positive_of


def class_counts(classes: Sequence[str], counts: Sequence[float]) -> str:
    """Each class's documents (or rows) for train's summary line, "298 ham, 134 spam"; past
    LISTED, how many classes and the largest of them (ties in class order), as a line
    of hundreds of classes (an id column, a corpus of many labels) is not a summary."""
    pairs = [(int(n), c) for c, n in zip(classes, counts)]
    if len(pairs) <= LISTED:
        return ", ".join(f"{n} {c}" for n, c in pairs)
    top = sorted(pairs, key=lambda p: -p[0])[:LISTED - 1]
    return f"{len(pairs)} classes, the largest " + ", ".join(f"{n} {c}" for n, c in top) + \
        f" and {len(pairs) - len(top)} more"


def fmt_prob(p: float) -> str:
    return f"{p:.6f}"


def printed(p: float) -> float:
    """A probability as predict prints it (fmt_prob, 6 decimals), read back as a number: what a
    user sorts, thresholds and judges."""
    return float(fmt_prob(p))


def text_id(doc_id: str) -> str:
    """A document id as text that any encoder writes: bytes of a file name that are not UTF-8
    (held as surrogates) become \\xNN escapes."""
    try:
        doc_id.encode("utf-8")
        return doc_id
    except UnicodeEncodeError:
        return doc_id.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


TSV_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def json_number(v: float) -> float | None:
    """A log in a JSON row: null where it is infinite (a class of no documents, after learn
    --forget or in a new user's model, has probability 0 and a prior of 0), as JSON has no
    -Infinity that parsers all read (Python's json writes it; jq and JSON.parse refuse it)."""
    return float(v) if math.isfinite(v) else None


def prediction_row(fmt: str, doc_id: str, label: str, prob: float,
                   classes: Sequence[str] | None = None, probs: Sequence[float] | None = None,
                   extra: dict | None = None, log_scores: Sequence[float] | None = None,
                   more: Sequence[str] = ()) -> str:
    """One output row, without its newline. Every format reads back with its standard parser
    (csv, json; TSV split at tabs, its escapes undone) as the id, label and probability. JSONL
    rows also carry ``log_scores`` when given: each class's log posterior, at full precision.
    ``more``: TSV and CSV fields after those three (opt-in columns: JSONL has them in extra)."""
    if fmt == "jsonl":
        row = {"id": text_id(doc_id), "label": label, "probability": printed(prob),
               "scores": {c: printed(p) for c, p in zip(classes, probs)}}
        if log_scores is not None:  # unrounded: documents printed alike still sort
            row["log_scores"] = {c: json_number(v) for c, v in zip(classes, log_scores)}
        if extra:
            row.update(extra)
        return json.dumps(row, ensure_ascii=False)
    if fmt == "csv":
        buf = io.StringIO()  # ("\r\n": fields holding a CR or LF are then quoted)
        csv.writer(buf, lineterminator="\r\n").writerow([text_id(doc_id), label, fmt_prob(prob), *more])
        return buf.getvalue()[:-2]
    # TSV: a backslash, tab, newline or CR in an id is written as \\, \t, \n, \r.
    return "\t".join([f"{text_id(doc_id.translate(TSV_ESCAPES))}\t{label}\t{fmt_prob(prob)}", *more])


def header_row(fmt: str, more: Sequence[str] = ()) -> str | None:
    """The header of TSV and CSV rows (``more``: the names of prediction_row's ``more``)."""
    sep = {"tsv": "\t", "csv": ","}.get(fmt)
    return None if sep is None else sep.join(["id", "label", "probability", *more])


def roc_auc(y_pos: np.ndarray, score: np.ndarray) -> float | None:
    """Area under the ROC curve by the rank-sum (Mann-Whitney) formula, ties averaged."""
    n_pos, n_neg = int(y_pos.sum()), int((~y_pos).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    order = np.argsort(score, kind="mergesort")
    ranks = np.empty(len(score))
    sorted_scores = score[order]
    # average ranks over ties
    _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    avg = first + (counts + 1) / 2.0
    ranks[order] = np.repeat(avg, counts)
    return float((ranks[y_pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def calibration_error(conf: np.ndarray, correct: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error: |accuracy - confidence| averaged over 10 equal-width bins
    of the top-label probability, weighted by the bins' sizes."""
    edges = np.linspace(0, 1, bins + 1)
    which = np.clip(np.digitize(conf, edges[1:-1], right=True), 0, bins - 1)
    ece = 0.0
    for b in range(bins):
        m = which == b
        if m.any():
            ece += m.mean() * abs(correct[m].mean() - conf[m].mean())
    return float(ece)


# Reliability: bins of the printed probability of the predicted label, each bin's lower edge in
# it (the top bin holds 1.0 too), and the shares the targets read off directly.
RELIABILITY_EDGES = (0.0, 0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 1.0)
RELIABILITY_AT_LEAST = (0.999, 0.99999)


def reliability(p_label: Sequence[float], wrong: Sequence[bool]) -> dict:
    """The reliability table of documents given the probability of the label they were called
    (as computed; binned as printed) and whether that label was wrong."""
    shown = np.array([printed(p) for p in p_label], dtype=float)
    wrong = np.asarray(wrong, dtype=bool)
    which = np.searchsorted(RELIABILITY_EDGES[1:-1], shown, side="right")
    return reliability_table([(int((which == b).sum()), int(wrong[which == b].sum()),
                               float(shown[which == b].sum()))
                              for b in range(len(RELIABILITY_EDGES) - 1)])


def pooled_reliability(tables: Sequence[dict]) -> dict:
    """One table of several (cv's folds): counts summed, means over the pooled documents."""
    sums = []
    for b in range(len(RELIABILITY_EDGES) - 1):
        rows = [t["bins"][b] for t in tables]
        sums.append((sum(r["documents"] for r in rows), sum(r["wrong"] for r in rows),
                     sum(r["documents"] * r["mean_probability"] for r in rows if r["documents"])))
    return reliability_table(sums)


def reliability_table(sums: Sequence[tuple[int, int, float]]) -> dict:
    """Per bin (documents, wrong, sum of printed P) to the table: bins with their error rate and
    mean printed P (None when empty), and the documents at or above each RELIABILITY_AT_LEAST."""
    rate = lambda w, n: w / n if n else None
    bins = [{"low": lo, "high": hi, "documents": n, "wrong": w, "error_rate": rate(w, n),
             "mean_probability": total / n if n else None}
            for lo, hi, (n, w, total) in zip(RELIABILITY_EDGES[:-1], RELIABILITY_EDGES[1:], sums)]
    at_least = []
    for edge in RELIABILITY_AT_LEAST:
        above = bins[RELIABILITY_EDGES.index(edge):]
        n, w = sum(b["documents"] for b in above), sum(b["wrong"] for b in above)
        at_least.append({"probability": edge, "documents": n, "wrong": w, "error_rate": rate(w, n)})
    return {"bins": bins, "at_least": at_least}


def format_reliability(r: dict, title: str) -> list[str]:
    def pct(v):
        return "-" if v is None else f"{v:.3%}"

    lines = [title, f"{'P(label)':<19}{'documents':>10}{'wrong':>8}{'error rate':>12}{'mean P':>10}"]
    for b in r["bins"]:
        span = f"[{b['low']:g}, {b['high']:g}{']' if b['high'] == 1.0 else ')'}"
        mean = "-" if b["mean_probability"] is None else f"{b['mean_probability']:.6f}"
        lines.append(f"{span:<19}{b['documents']:>10}{b['wrong']:>8}{pct(b['error_rate']):>12}{mean:>10}")
    for a in r["at_least"]:
        lines.append(f"P(label) >= {a['probability']:g}: {a['documents']} documents, {a['wrong']} wrong "
                     f"({pct(a['error_rate'])})")
    return lines


def evaluate(classes: Sequence[str], y_true: Sequence[str], y_pred: Sequence[str],
             proba: np.ndarray, positive: str | None = None) -> dict:
    classes = list(classes)
    k = len(classes)
    t = np.asarray([classes.index(y) for y in y_true])
    p = np.asarray([classes.index(y) for y in y_pred])
    cm = np.zeros((k, k), dtype=int)
    np.add.at(cm, (t, p), 1)
    per_class = {}
    f1s = []
    for i, c in enumerate(classes):
        tp, fp, fn = cm[i, i], cm[:, i].sum() - cm[i, i], cm[i, :].sum() - cm[i, i]
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        per_class[c] = {"precision": float(prec), "recall": float(rec), "f1": float(f1),
                        "support": int(cm[i, :].sum())}
        f1s.append(f1)
    n = len(t)
    eps = 1e-15
    p_true = np.clip(proba[np.arange(n), t], eps, 1.0)
    onehot = np.zeros_like(proba)
    onehot[np.arange(n), t] = 1.0
    out = {
        "documents": n,
        "accuracy": float((t == p).mean()),
        "macro_f1": float(np.mean(f1s)),
        "log_loss": float(-np.log(p_true).mean()) + 0.0,  # (+ 0.0: -log(1) is -0.0, printed "-0.0000")
        "brier": float(((proba - onehot) ** 2).sum(axis=1).mean()),
        "ece": calibration_error(proba.max(axis=1), proba.argmax(axis=1) == t),
        "classes": per_class,
        "confusion_matrix": {"labels": classes, "matrix": cm.tolist()},
        "reliability": reliability(proba[np.arange(n), p], t != p),
    }
    if k == 2:
        pos = positive_of(classes, positive)
        pi = classes.index(pos)
        ni = 1 - pi
        neg_n, pos_n = int(cm[ni, :].sum()), int(cm[pi, :].sum())
        out.update({
            "positive": pos,
            "roc_auc": roc_auc(t == pi, proba[:, pi]),
            "false_positives": int(cm[ni, pi]),
            "false_negatives": int(cm[pi, ni]),
            "false_positive_rate": float(cm[ni, pi] / neg_n) if neg_n else 0.0,
            "false_negative_rate": float(cm[pi, ni] / pos_n) if pos_n else 0.0,
        })
    return out


def format_confusion(title: str, labels: list, matrix: list, w: int) -> list[str]:
    """A confusion matrix as text lines, columns ``w`` wide."""
    return (["", f"{title} (rows: true label, columns: predicted)", " " * w + "".join(f"{c:>{w}}" for c in labels)]
            + [f"{c:<{w}}" + "".join(f"{v:>{w}}" for v in row) for c, row in zip(labels, matrix)])


def format_eval(r: dict) -> str:
    lines = [
        f"documents     {r['documents']}",
        f"accuracy      {r['accuracy']:.4f}",
        f"macro-F1      {r['macro_f1']:.4f}",
        f"log-loss      {r['log_loss']:.4f}",
        f"Brier score   {r['brier']:.4f}",
        f"calibration   {r['ece']:.4f} (expected calibration error)",
    ]
    if "positive" in r:
        classes = r["confusion_matrix"]["labels"]
        neg = [c for c in classes if c != r["positive"]][0]
        auc = "n/a" if r["roc_auc"] is None else f"{r['roc_auc']:.4f}"
        lines += [
            f"ROC-AUC       {auc} ({r['positive']} as positive)",
            f"false-positive rate  {r['false_positive_rate']:.4f} ({r['false_positives']} {neg} called {r['positive']})",
            f"false-negative rate  {r['false_negative_rate']:.4f} ({r['false_negatives']} {r['positive']} called {neg})",
        ]
    labels = r["confusion_matrix"]["labels"]
    w = max(8, *(len(c) + 2 for c in labels))
    lines += ["", f"{'class':<{w}}{'precision':>10}{'recall':>10}{'f1':>10}{'support':>10}"]
    for c, m in r["classes"].items():
        lines.append(f"{c:<{w}}{m['precision']:>10.4f}{m['recall']:>10.4f}{m['f1']:>10.4f}{m['support']:>10}")
    lines += format_confusion("confusion matrix", labels, r["confusion_matrix"]["matrix"], w)
    lines += ["", *format_reliability(r["reliability"], "reliability (documents by the printed probability "
                                      "of the label they were called)")]
    return "\n".join(lines)


SCALARS = ("accuracy", "macro_f1", "log_loss", "brier", "ece", "roc_auc",
           "false_positive_rate", "false_negative_rate")


def aggregate(folds: list[dict], seed: int) -> dict:
    """Mean and standard deviation over folds; confusion matrices summed."""
    first = folds[0]
    out = {"folds": len(folds), "seed": seed, "documents": sum(f["documents"] for f in folds),
           "mean": {}, "std": {}, "classes": {}}
    for key in SCALARS:
        vals = [f[key] for f in folds if f.get(key) is not None]
        if vals:
            out["mean"][key], out["std"][key] = float(np.mean(vals)), float(np.std(vals))
    for c in first["classes"]:
        out["classes"][c] = {m: {"mean": float(np.mean([f["classes"][c][m] for f in folds])),
                                 "std": float(np.std([f["classes"][c][m] for f in folds]))}
                             for m in ("precision", "recall", "f1")}
        out["classes"][c]["support"] = int(sum(f["classes"][c]["support"] for f in folds))
    labels = first["confusion_matrix"]["labels"]
    out["confusion_matrix"] = {"labels": labels, "matrix": np.sum(
        [f["confusion_matrix"]["matrix"] for f in folds], axis=0).tolist()}
    out["reliability"] = pooled_reliability([f["reliability"] for f in folds])
    if "positive" in first:
        out["positive"] = first["positive"]
    out["per_fold"] = folds
    return out


def format_cv(r: dict) -> str:
    names = {"accuracy": "accuracy", "macro_f1": "macro-F1", "log_loss": "log-loss", "brier": "Brier score",
             "ece": "calibration", "roc_auc": "ROC-AUC", "false_positive_rate": "false-positive rate",
             "false_negative_rate": "false-negative rate"}
    lines = [f"{r['folds']}-fold stratified cross-validation of {r['documents']} documents (seed {r['seed']})"]
    for key, name in names.items():
        if key in r["mean"]:
            lines.append(f"{name:<21}{r['mean'][key]:.4f} ± {r['std'][key]:.4f}")
    labels = r["confusion_matrix"]["labels"]
    w = max(8, *(len(c) + 2 for c in labels))
    lines += ["", f"{'class':<{w}}{'precision':>18}{'recall':>18}{'f1':>18}{'support':>9}"]
    for c, m in r["classes"].items():
        cells = "".join(f"{m[k]['mean']:>9.4f} ± {m[k]['std']:.4f}"[-18:].rjust(18) for k in ("precision", "recall", "f1"))
        lines.append(f"{c:<{w}}{cells}{m['support']:>9}")
    lines += format_confusion("confusion matrix, summed over folds", labels, r["confusion_matrix"]["matrix"], w)
    lines += ["", *format_reliability(r["reliability"], "reliability, pooled over folds (out-of-fold documents "
                                      "by the printed probability of the label they were called)")]
    return "\n".join(lines)


def describe(model, header: dict, top: int) -> dict:
    """What `info` prints: classes, counts, vocabulary, settings, top tokens per class
    (``header``: the model file's, for its format and maker)."""
    from .explain import top_tokens

    return {
        "format_version": header["format_version"],
        "created_by": header.get("created_by"),
        "classes": {c: int(n) for c, n in zip(model.classes, model.class_count)},
        "documents": model.n_documents,
        "vocabulary": len(model.vocab),
        "tokens_counted": {c: float(n) for c, n in zip(model.classes, model.counts.class_totals())},
        "model": model.settings.to_dict(),
        "tokenizer": model.tokenizer_settings.to_dict(),
        "decision": model.decision.to_dict(),
        "layer": None if model.layer is None else {**model.layer.header(), "tokens": len(model.layer.ids)},
        "learned_digests": len(model.ledger),
        "pruned": model.pruned,
        "top_tokens": top_tokens(model, top) if top else {},
    }


def format_info(d: dict) -> str:
    lines = [f"model format   {d['format_version']} ({d['created_by']})", f"documents      {d['documents']}"]
    for c, n in d["classes"].items():
        lines.append(f"  {c:<12} {n} documents, {int(d['tokens_counted'][c])} tokens")
    p = d["pruned"]
    lines += [f"vocabulary     {d['vocabulary']} tokens",
              "counts         " + ("exact: nothing pruned" if not p else
                                   f"pruned: tokens in at most {p['threshold']} document{'' if p['threshold'] == 1 else 's'} before document "
                                   f"{p['documents']} were dropped ({p['tokens']} tokens), to train within "
                                   f"--max-memory"),
              "model          " + ", ".join(f"{k}={v}" for k, v in d["model"].items()),
              "tokenizer      " + ", ".join(f"{k}={v}" for k, v in d["tokenizer"].items()),
              "decision       " + ", ".join(f"{k}={v}" for k, v in d["decision"].items()),
              "layer          " + ("none" if not d.get("layer") else
                                   f"SVMs on NB-weighted features, {d['layer']['tokens']} tokens weighted, "
                                   f"strength={d['layer']['strength']}, alpha={d['layer']['alpha']}, "
                                   f"min_count={d['layer']['min_count']}")]
    for c, toks in d["top_tokens"].items():
        lines.append(f"top tokens for {c}: " + (", ".join(t["token"] for t in toks) if d["classes"][c] else
                                                f"none ({d['classes'][c]} documents)"))
    return "\n".join(lines)
