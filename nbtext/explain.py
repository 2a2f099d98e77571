"""Why: the tokens that weighed most in a verdict, and the tokens that weigh most for each class,
from the linear view of the model (jll_c = b_c + sum_t x_t w_ct, nbtext.nb.weights).

Importing this module imports no numpy (the classify path explains with it).
"""
from __future__ import annotations


def explanation(k: int, bias: list, contrib: dict, unknown: int, n: int) -> dict:
    """The n tokens that pushed hardest for and against class k: each token's contribution to
    class k's score less its contribution to the best other class (its log-likelihood ratio);
    the same for the bias (the prior's share), and the count of tokens the model never saw.
    ``contrib``: token -> its x_t w_ct per class."""
    others = [c for c in range(len(bias)) if c != k]

    def llr(row):
        return row[k] - max(row[c] for c in others) if others else row[k]

    ranked = sorted(((llr(row), tok) for tok, row in contrib.items()), reverse=True)
    return {"prior": llr(bias), "unknown_tokens": unknown,
            "for": [(t, v) for v, t in ranked[:n] if v > 0],
            "against": [(t, v) for v, t in reversed(ranked[-n:]) if v < 0]}


def explain_rows(model, batch, proba, verdicts, n: int) -> list[dict]:
    """explanation() of each document of a counted chunk (a Batch) and its scores."""
    ids = batch.ids_in(model.vocab, grow=False)
    est = model.estimator
    linear = est.linear()
    X = est.features(batch.rows.moved(ids, len(model.vocab)))
    raw = batch.rows
    bias = linear.b.tolist()
    out = []
    for i, (label, row) in enumerate(zip(verdicts, proba)):
        cols = X.indices[X.indptr[i]:X.indptr[i + 1]]
        values = X.data[X.indptr[i]:X.indptr[i + 1]]
        contrib = {model.vocab.token(int(t)): (v * linear.W[:, t]).tolist() for t, v in zip(cols, values)}
        local = slice(raw.indptr[i], raw.indptr[i + 1])
        unknown = int(raw.data[local][ids[raw.indices[local]] < 0].sum())
        out.append(explanation(model.classes.index(label), bias, contrib, unknown, n))
    return out


def top_tokens(model, n: int, min_count: int = 5) -> dict:
    """Per class, the n tokens whose weight for that class most exceeds their weight for the best
    other class (as explanation() ranks a verdict's tokens; for multinomial models, the
    log-likelihood ratio), among tokens seen at least ``min_count`` times (rare tokens' ratios
    are noise)."""
    import numpy as np

    W = model.estimator.linear().W
    totals = model.counts.token_totals()
    eligible = totals >= min(min_count, totals.max(initial=0))
    fc = model.feature_count
    out = {}
    for c, name in enumerate(model.classes):
        others = np.delete(W, c, axis=0)
        other = others.max(axis=0) if len(others) else np.zeros(W.shape[1])
        llr = np.where(eligible, W[c] - other, -np.inf)
        best = np.argsort(-llr, kind="stable")[:n]
        out[name] = [{"token": model.vocab.token(i), "llr": round(float(llr[i]), 4),
                      "count": int(fc[c, i])} for i in best if np.isfinite(llr[i])]
    return out
