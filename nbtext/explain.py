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
    from .features.rows import distinct

    ids = batch.ids_in(model.vocab, grow=False)
    est = model.estimator
    linear = est.linear()
    X = est.features(batch.rows.moved(ids, len(model.vocab)))
    raw = batch.rows
    bias = linear.b.tolist()
    used = distinct(X.indices)  # (the weights of the chunk's tokens alone: a sparse view's W is classes x tokens)
    W, at = linear.columns(used).W, {int(t): j for j, t in enumerate(used)}
    out = []
    for i, (label, row) in enumerate(zip(verdicts, proba)):
        cols = X.indices[X.indptr[i]:X.indptr[i + 1]]
        values = X.data[X.indptr[i]:X.indptr[i + 1]]
        contrib = {model.vocab.token(int(t)): (v * W[:, at[int(t)]]).tolist() for t, v in zip(cols, values)}
        local = slice(raw.indptr[i], raw.indptr[i + 1])
        unknown = int(raw.data[local][ids[raw.indices[local]] < 0].sum())
        out.append(explanation(model.classes.index(label), bias, contrib, unknown, n))
    return out


def top_tokens(model, n: int, min_count: int = 5) -> dict:
    """Per class, the n tokens whose weight for that class most exceeds their weight for the best
    other class (as explanation() ranks a verdict's tokens; for multinomial models, the
    log-likelihood ratio), among tokens seen at least ``min_count`` times (rare tokens' ratios
    are noise); ties go to the token first in the vocabulary. A class of no documents has none.

    The weights are made a block of tokens at a time (``linear.columns``, nb.sparse.DENSE_BLOCK),
    each block's n best per class kept: a sparse model's classes x tokens array never exists whole."""
    import numpy as np

    from .nb.sparse import block_tokens

    linear, k = model.estimator.linear(), len(model.classes)
    totals = model.counts.token_totals()
    eligible = np.flatnonzero(totals >= min(min_count, totals.max(initial=0)))
    step = max(n, block_tokens(k))
    best_llr, best_ids = np.empty((k, 0)), np.empty((k, 0), dtype=np.int64)
    for start in range(0, len(eligible), step):
        ids = eligible[start:start + step]
        best_llr = np.hstack([best_llr, _llr(linear.columns(ids).W)])
        best_ids = np.hstack([best_ids, np.broadcast_to(ids, (k, len(ids)))])
        if best_llr.shape[1] > n:
            keep = _first_n(best_llr, n)
            best_llr, best_ids = best_llr[keep].reshape(k, n), best_ids[keep].reshape(k, n)
    order = [np.lexsort((best_ids[c], -best_llr[c])) for c in range(k)]
    out = {}
    for c, name in enumerate(model.classes):
        if not model.class_count[c]:  # (all its documents forgotten, or none learned yet: its weights are the
            out[name] = []            # smoothing's alone, and its "top" tokens would be those the others lack)
            continue
        row = [(float(best_llr[c, j]), int(best_ids[c, j])) for j in order[c]]
        out[name] = [{"token": model.vocab.token(i), "llr": round(v, 4), "count": _count(model.counts, c, i)}
                     for v, i in row[:n] if np.isfinite(v)]
    return out


def _count(counts, c: int, token: int) -> int:
    """Class c's count of one token (a sparse model's: among the token's nonzero classes)."""
    if not counts.sparse:
        return int(counts.feature_count[c, token])
    s = counts.token_sums
    at = slice(s.indptr[token], s.indptr[token + 1])
    hit = s.values[at][s.classes[at] == c]
    return int(hit[0]) if len(hit) else 0


def _llr(W):
    """Each class's weight less the best other class's, at each token (-inf where not finite)."""
    import numpy as np

    if len(W) == 1:
        other = np.zeros_like(W)
    else:
        top = np.argmax(W, axis=0)
        first = W[top, np.arange(W.shape[1])]
        W2 = W.copy()
        W2[top, np.arange(W.shape[1])] = -np.inf
        second = W2.max(axis=0)
        other = np.where(np.arange(len(W))[:, None] == top[None, :], second[None, :], first[None, :])
    with np.errstate(invalid="ignore"):
        llr = W - other
    return np.where(np.isfinite(llr), llr, -np.inf)


def _first_n(llr, n):
    """Per row, where its n highest ratios are, the leftmost first among equals (a mask with n
    in each row; the columns are in token order, so the leftmost is the lowest token id)."""
    import numpy as np

    minus = -llr
    cut = np.partition(minus, n - 1, axis=1)[:, n - 1:n]
    better = minus < cut
    tied = minus == cut
    return better | (tied & (np.cumsum(tied, axis=1) <= n - better.sum(axis=1, keepdims=True)))

