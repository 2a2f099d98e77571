"""How --max-features ranks tokens: by frequency, or by a count-based test of dependence on the class.

Every criterion is computed from what training already sums, the class-by-token counts (and, for
chi-squared, the documents per class), so selecting costs one pass over those arrays.

- frequency: the token's total count (scikit-learn's CountVectorizer(max_features=...)).
- chi2: scikit-learn's sklearn.feature_selection.chi2 on a count matrix: observed counts per
  class against those expected from the class's share of documents, sum of (O - E)^2 / E.
- mi: the mutual information between the class and "this token occurrence is the token", over
  all token occurrences (the multinomial event model's criterion, McCallum and Nigam 1998).

At equal sizes mi keeps better tokens than frequency does: at 10,000 tokens, 5-fold accuracy
98.40% against 98.12% on spamassassin-2002 (docs/feature_selection.md).
"""
from __future__ import annotations

import numpy as np

from ..settings import FeatureOptions


def chi2(counts: np.ndarray, class_docs: np.ndarray) -> np.ndarray:
    """Chi-squared per token of a (classes x tokens) count matrix, as scikit-learn's chi2."""
    counts = np.asarray(counts, dtype=np.float64)
    class_prob = np.asarray(class_docs, dtype=np.float64) / np.sum(class_docs)
    expected = np.outer(class_prob, counts.sum(axis=0))
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.square(counts - expected) / expected).sum(axis=0)


def mutual_information(counts: np.ndarray, class_totals: np.ndarray | None = None) -> np.ndarray:
    """Mutual information (nats) per token between the class of a token occurrence and whether
    the occurrence is that token, from (classes x tokens) counts (some tokens' columns, given
    ``class_totals``: each class's count over every token)."""
    counts = np.asarray(counts, dtype=np.float64)
    if class_totals is None:
        n = counts.sum()
        p_class = counts.sum(axis=1, keepdims=True) / n   # P(c)
    else:
        n = class_totals.sum()
        p_class = (np.asarray(class_totals, dtype=np.float64) / n)[:, None]
    p_tok = counts.sum(axis=0, keepdims=True) / n     # P(t)
    mi = np.zeros(counts.shape[1])
    for joint, marginal in ((counts / n, p_tok), (p_class - counts / n, 1.0 - p_tok)):
        with np.errstate(divide="ignore", invalid="ignore"):
            term = joint * np.log(joint / (p_class * marginal))
        mi += np.where(joint > 0, term, 0.0).sum(axis=0)
    return mi


def scores(criterion: str, counts: np.ndarray, class_docs: np.ndarray,
           class_totals: np.ndarray | None = None) -> np.ndarray:
    """Higher is better: the ranking --max-features keeps the top of (``class_totals``: as
    mutual_information's)."""
    if criterion == "frequency":
        return np.asarray(counts).sum(axis=0)
    if criterion == "chi2":
        return chi2(counts, class_docs)
    if criterion == "mi":
        return mutual_information(counts, class_totals)
    raise ValueError(f"unknown criterion {criterion!r}")


def ranking(criterion: str, counts, class_docs: np.ndarray, class_totals: np.ndarray | None = None) -> np.ndarray:
    """scores() of (classes x tokens) counts, or of an iterable of its blocks of columns in
    token order (``class_totals``, then, each class's count over every token)."""
    if isinstance(counts, np.ndarray):
        return scores(criterion, counts, class_docs)
    return np.concatenate([np.zeros(0)] + [scores(criterion, b, class_docs, class_totals) for b in counts])


def select(doc_freq: np.ndarray, counts, class_docs: np.ndarray, f: FeatureOptions,
           class_totals: np.ndarray | None = None) -> np.ndarray:
    """The token ids kept, sorted: document frequency within [min_df, max_df], then the best
    max_features of those by f.select; ties go to the earlier id (``counts``, ``class_totals``:
    as ranking's)."""
    keep = (doc_freq >= f.min_df) & (doc_freq <= f.max_df * class_docs.sum())
    cols = np.flatnonzero(keep)
    if f.max_features is not None and len(cols) > f.max_features:
        ranked = ranking(f.select, counts, class_docs, class_totals)[cols]
        cols = np.sort(cols[np.argsort(-ranked, kind="stable")[:f.max_features]])
    return cols
