"""Why: the tokens that weigh most for each class, from the counts."""
from __future__ import annotations

import numpy as np


def top_tokens(model, n: int, min_count: int = 5) -> dict:
    """Per class, the n tokens with the largest log-likelihood ratio for that class against
    the others, among tokens seen at least ``min_count`` times (rare tokens' ratios are noise)."""
    est = model.estimator
    flp = est.feature_log_prob_ if model.settings.variant != "complement" else -est.feature_log_prob_
    totals = model.feature_count.sum(axis=0)
    eligible = totals >= min(min_count, totals.max(initial=0))
    out = {}
    for c, name in enumerate(model.classes):
        others = np.delete(flp, c, axis=0)
        other = np.log(np.exp(others).mean(axis=0)) if len(others) else np.zeros(flp.shape[1])
        llr = np.where(eligible, flp[c] - other, -np.inf)
        best = np.argsort(-llr, kind="stable")[:n]
        out[name] = [{"token": model.vocab.token(i), "llr": round(float(llr[i]), 4),
                      "count": int(model.feature_count[c, i])} for i in best if np.isfinite(llr[i])]
    return out
