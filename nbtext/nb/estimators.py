"""Naive Bayes estimators: counts are the state, log-probabilities are derived from them.

The classes follow scikit-learn's estimator conventions (fit / partial_fit / predict /
predict_proba / predict_log_proba, fitted attributes ending in ``_``) without importing it.
The state is a Counts (nbtext.nb.counts); ``partial_fit`` adds to it, ``sample_weight=-1`` takes
documents out again, and two models over the same features add up exactly.

Each variant says three things: how it counts a document (``features``: raw counts,
present-or-not, Complement NB's transformed rows), the per-class sums over the vocabulary that
its weights need (``summary``, stored in the model file for the classify path), and its linear
view (``linear``: a weight per class and token, a bias per class), from the formulas of
nbtext.nb.weights. Everything else is the base class's: the joint log-likelihood is
``features(X) @ W.T + b`` for every variant, and posteriors are ``jll - logsumexp(jll)``.
"""
from __future__ import annotations

import warnings
from functools import partial

import numpy as np

from ..errors import InputError
from ..features.rows import Rows
from . import weights as F
from .counts import Counts
from .sparse import TokenSums, product, scipy_matrix
from .interface import (ClassifierInterface, Labels, TagValues, check_feature_names, check_lengths,
                        check_non_negative, check_sample_weight, check_width, check_X, check_y, partial_fit_classes)

ALPHA_MIN = 1e-10  # (scikit-learn's: alpha below it is raised to it unless force_alpha)


def logsumexp_rows(a: np.ndarray) -> np.ndarray:
    """log(sum(exp(a), axis=1)) without overflow or underflow.

    Two classes (mail) the short way, to the same bits: numpy's reductions along a row of two
    cost many times the column operations (a maximum is exact, and a0 + a1 is the sum's one
    addition either way), and calibration's fit evaluates this hundreds of times a candidate;
    each column's own exp, not one of the pair as rows (the same values, fewer passes).
    (tests/test_decisions.py holds the two ways to the same bits.)"""
    if a.ndim != 2 or a.shape[1] != 2:
        m = np.max(a, axis=1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        return (m + np.log(np.sum(np.exp(a - m), axis=1, keepdims=True)))[:, 0]
    a0, a1 = a[:, 0], a[:, 1]
    m = np.maximum(a0, a1)
    m = np.where(np.isfinite(m), m, 0.0)
    return m + np.log(np.exp(a0 - m) + np.exp(a1 - m))


def log_posteriors(jll: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Posteriors in log space from joint log-likelihoods: softmax(jll / temperature)."""
    z = jll / temperature
    return z - logsumexp_rows(z)[:, None]


def _as_rows(X) -> Rows:
    """X (scipy sparse, dense, or Rows) as float64 Rows, refused when a value is negative."""
    X = Rows.of(X)
    if X.data.dtype != np.float64:
        X = X.astype(np.float64)
    if X.nnz and X.data.min() < 0:
        raise InputError("Negative values in data passed to Naive Bayes (input X)")
    return X


def _frozen(value):
    """A parameter's value as a cache key can hold it (an array as its numbers)."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return tuple(np.asarray(value, dtype=np.float64).ravel().tolist())
    return value


def checked_alpha(est, warn: bool = True):
    """The alpha an estimator's weights use, checked as scikit-learn checks it: a number or one
    per feature, not negative; below ALPHA_MIN raised to it (with a warning) unless
    ``force_alpha``."""
    alpha = est.alpha
    if isinstance(alpha, (list, tuple, np.ndarray)):
        alpha = np.asarray(alpha, dtype=np.float64)
        if alpha.ndim != 1 or alpha.shape[0] != est.n_features_in_:
            raise InputError("When alpha is an array, it should contains `n_features`. "
                             f"Got {alpha.size} elements instead of {est.n_features_in_}.")
        if (alpha < 0).any():
            raise InputError("All values in alpha must be greater than 0.")
    elif isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)) or not alpha >= 0:
        raise InputError(f"The 'alpha' parameter of {type(est).__name__} must be a float in the range "
                         f"[0.0, inf) or an array-like. Got {alpha!r} instead.")
    if np.min(alpha) < ALPHA_MIN and not est.force_alpha:
        if warn:
            warnings.warn(f"alpha too small will result in numeric errors, setting alpha = {ALPHA_MIN:.1e}. "
                          "Use `force_alpha=True` to keep alpha unchanged.", stacklevel=4)
        return np.maximum(alpha, ALPHA_MIN)
    return alpha


def class_log_prior(cc: np.ndarray, fit_prior: bool, class_prior) -> np.ndarray:
    """log P(c): ``class_prior``'s when given, else uniform without ``fit_prior``, else each
    class's share of the (weighted) documents."""
    k = len(cc)
    if class_prior is not None:
        prior = np.asarray(class_prior, dtype=float)
        if prior.shape != (k,):
            raise InputError("Number of priors must match number of classes.")
        with np.errstate(divide="ignore"):
            return np.log(prior)
    if not fit_prior:
        return np.full(k, -np.log(k))
    if not cc.sum():  # (no documents, every one forgotten: each class's is log 0, as fastscore's)
        return np.full(k, -np.inf)
    with np.errstate(divide="ignore"):
        return F.log_prior(cc, cc.sum(), np.log)


class Linear:
    """A variant's linear view of its joint log-likelihood: jll = features(X) @ W.T + b, the
    bias given as the terms it sums (added one by one, in order, to each score).
    W.T is kept C-ordered (a transposed, Fortran-ordered operand would be copied on every
    product)."""

    def __init__(self, W: np.ndarray, bias_terms: tuple, features):
        self.W, self.bias_terms, self.features = W, bias_terms, features
        self._WT = np.ascontiguousarray(W.T)

    @property
    def b(self) -> np.ndarray:
        b = np.zeros(self.W.shape[0])
        for term in self.bias_terms:
            b = b + term
        return b

    def prepare(self) -> None:
        """Make now what every product reads, once (its callers may then share it)."""

    def jll(self, X) -> np.ndarray:
        out = np.asarray(self.features(X) @ self._WT)
        for term in self.bias_terms:
            out = out + term
        return out

    def columns(self, cols: np.ndarray) -> "Linear":
        """The view at the tokens ``cols`` alone (what scoring documents that hold no other
        token reads)."""
        return Linear(np.ascontiguousarray(self.W[:, cols]), self.bias_terms, self.features)


class SparseLinear(Linear):
    """A linear view of sparse counts (nb.sparse), held as

        W_ct = base_c + scale_c g_t + D_ct

    where base_c + scale_c g_t is what a zero count weighs (per class, and for Complement NB
    and per-token alphas a per-token part) and D holds the difference only where the counts
    are not zero: memory in proportion to the counts, not to classes x tokens. Scoring is
    X @ W.T = rowsum(X) base + (X @ g) scale + X @ D, the same numbers as the dense product to
    rounding (tests/test_sparse_state.py). ``W`` makes the dense array (explanations, scikit-learn's
    feature_log_prob_)."""

    def __init__(self, base: np.ndarray, D: TokenSums, bias_terms: tuple, features,
                 g: np.ndarray | None = None, scale: np.ndarray | None = None):
        self.base, self.D, self.g, self.scale = base, D, g, scale
        self.bias_terms, self.features = bias_terms, features
        self._D = None  # (D as scipy's matrix, made at the first product)

    @property
    def W(self) -> np.ndarray:
        W = self.D.dense().T
        W += self.base[:, None]
        if self.g is not None:
            W += self.scale[:, None] * self.g[None, :]
        return W

    @property
    def b(self) -> np.ndarray:
        b = np.zeros(len(self.base))
        for term in self.bias_terms:
            b = b + term
        return b

    def prepare(self) -> None:
        from ..features.kernel import compiled

        self.D.settle()
        if self._D is None and compiled() is None:  # (the kernel reads D's arrays as they are)
            self._D = scipy_matrix(self.D)

    def jll(self, X) -> np.ndarray:
        X = self.features(X)
        self.prepare()
        return self.completed(X, product(X, self.D, self._D))

    def completed(self, X, out: np.ndarray) -> np.ndarray:
        """jll of rows X (features made) whose product with D is ``out`` (added to in place)."""
        out += X.row_sums()[:, None] * self.base[None, :]
        if self.g is not None:
            out += np.asarray(X @ self.g)[:, None] * self.scale[None, :]
        for term in self.bias_terms:
            out = out + term
        return out

    def columns(self, cols: np.ndarray) -> "SparseLinear":
        return SparseLinear(self.base, self.D.take(cols), self.bias_terms, self.features,
                            None if self.g is None else self.g[cols], self.scale)

    @staticmethod
    def of(s: TokenSums, w: np.ndarray, base: np.ndarray, bias_terms: tuple, features,
           g: np.ndarray | None = None, scale: np.ndarray | None = None) -> "SparseLinear | None":
        """The view whose weights at s's nonzeros are ``w`` (one per entry) and elsewhere
        base_c + scale_c g_t; None where a zero count's weight is not finite (alpha 0: the
        dense view then)."""
        if not np.isfinite(base).all() or (g is not None and not np.isfinite(g).all()):
            return None
        d = np.empty(s.nnz)
        for at, tok, cls in s.pieces():
            d[at] = w[at] - base[cls]
            if g is not None:
                d[at] -= scale[cls] * g[tok]
        return SparseLinear(base, TokenSums.of_csr(s.indptr, s.classes, d, s.k), bias_terms, features, g, scale)


class _BaseNB(ClassifierInterface):
    """Owns the counts, the class bookkeeping and every predict*; subclasses derive weights.

    scikit-learn's parameters and behaviour (nbtext.nb.interface): ``classes_`` in y's own
    values; X checked as scikit-learn checks it, except nbtext's own Rows (the command line's,
    checked where they are made, whose vocabulary may grow between partial_fit calls);
    ``sample_weight`` of -1 takes documents out again (nbtext's forgetting)."""

    tag_values = TagValues(sparse=True, positive_only=True, poor_score=True)
    non_negative = True  # (X refused when negative: Bernoulli binarizes it instead)

    def __init__(self, *, alpha=1.0, force_alpha: bool = True, fit_prior: bool = True, class_prior=None):
        self.alpha = alpha
        self.force_alpha = force_alpha
        self.fit_prior = fit_prior
        self.class_prior = class_prior

    def set_params(self, **params):
        super().set_params(**params)
        self.__dict__.pop("_cache", None)
        return self

    # -- the state ------------------------------------------------------------------------
    @classmethod
    def of_counts(cls, counts: Counts, **params):
        """An estimator over existing counts (shared, not copied), whose classes are the counts'
        class names."""
        est = cls(**params)
        est.counts_ = counts
        return est

    def _fitted(self) -> bool:
        return "counts_" in self.__dict__

    # scikit-learn's fitted attributes, read from the counts
    @property
    def classes_(self) -> np.ndarray:
        self._check_fitted()
        labels = self.__dict__.get("_labels")
        return labels.classes if labels is not None else np.asarray(self.counts_.classes)

    feature_count_ = property(lambda self: self.counts_.feature_count)
    class_count_ = property(lambda self: self.counts_.class_count)

    @property
    def n_features_in_(self) -> int:
        if "counts_" in self.__dict__:
            return self.counts_.width
        if "_n_features_in" in self.__dict__:
            return self._n_features_in
        raise AttributeError(f"{type(self).__name__} has no n_features_in_ before it is fitted")

    @n_features_in_.setter
    def n_features_in_(self, n: int):
        self._n_features_in = n

    def _names(self, y) -> list:
        """The counts' class names of labels y (refused when one is not a class)."""
        labels = self.__dict__.get("_labels")
        if labels is None:
            return [str(v) for v in np.asarray(y)]
        return labels.names_of(np.asarray(y))

    def features(self, X) -> Rows:
        """A document as this variant counts it."""
        return self.featurizer()(X)

    def featurizer(self):
        """``features`` as a function that holds no reference to the estimator: a Linear
        keeps it, and the estimator's cache keeps the Linear, so a bound method made a cycle
        that only the garbage collector frees (calibration's fold models would pile up until it
        ran, several times train's peak)."""
        return _as_rows

    def _checked_X(self, X, reset: bool = False, counted: bool = True):
        """X as scikit-learn checks it, and with ``counted`` as this variant counts it; nbtext's
        Rows as they are."""
        if isinstance(X, Rows):
            return self.features(X) if counted else X
        name = type(self).__name__
        check_feature_names(self, X, reset)
        X = check_X(X, name, sparse=True)
        if not reset:
            check_width(X.shape[1], self.n_features_in_, name)
        if self.non_negative:
            check_non_negative(X, name)
        return self.features(X) if counted else X

    def fit(self, X, y, sample_weight=None):
        X = self._checked_X(X, reset=True)
        y = check_y(y)
        check_lengths(X.shape[0], y)
        w = check_sample_weight(sample_weight, len(y), negative_ok=True)
        for attr in ("counts_", "_labels", "_cache", "_n_features_in"):
            self.__dict__.pop(attr, None)
        self._labels = Labels(y)
        self.counts_ = Counts(self._labels.names, X.shape[1])
        return self._count(X, y, w)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        first = not self._fitted()
        X = self._checked_X(X, reset=first)
        y = check_y(y)
        check_lengths(X.shape[0], y)
        w = check_sample_weight(sample_weight, len(y), negative_ok=True)
        if first:
            self._labels = partial_fit_classes(None, classes)
            self.counts_ = Counts(self._labels.names, X.shape[1])
        elif self.__dict__.get("_labels") is not None:
            partial_fit_classes(self._labels, classes)
        return self._count(X, y, w)

    def _count(self, X: Rows, y, w):
        self._check_alpha()
        names = self._names(y)
        self.counts_.check_labels(names)
        if w is not None and (w < 0).any():
            self.counts_ = self.counts_.plus(X, names, w)
        else:
            self.counts_.add(X, names, width=max(X.shape[1], self.counts_.width), weights=w)
        if self.__dict__.get("_labels") is not None:
            self.linear()  # (derived now, as scikit-learn's fit does: predicting changes nothing)
        return self

    def add_at(self, X, y, cols: np.ndarray) -> "_BaseNB":
        """partial_fit of X', X over the whole vocabulary with column j at ``cols[j]`` (sorted,
        distinct, as Rows.own_columns makes them), into counts that exist: the same
        numbers, bit for bit (a token's sums add its entries in the same order whatever its
        column number, and the other columns get nothing), with sums as wide as X's own
        columns rather than the vocabulary. Calibration fits a sample's counts fold by fold
        this way: two vocabulary-wide arrays a fold were train's peak on a larger corpus."""
        self._check_alpha()
        y = self._names(y)
        self.counts_.check_labels(y)
        cols = np.asarray(cols, dtype=np.int64)
        self.counts_.add_summed(Counts.summed(self.features(X), y), ids=cols,
                                width=max(self.counts_.width, int(cols.max(initial=-1)) + 1), distinct=True)
        return self

    def add_whole(self, X, y) -> bool:
        """partial_fit of 16-bit whole counts straight into the counts (Counts.add_whole), where
        this variant counts a document as its counts; False, with nothing changed, elsewhere."""
        if self.same_features != "counts":
            return False
        self._check_alpha()
        return self.counts_.add_whole(X, self._names(y))

    def without(self, X, y) -> "_BaseNB":
        """A new estimator of the same kind: these counts less the documents (X, y)."""
        return self.of_counts(self.counts_.plus(self.features(X), self._names(y),
                                                -np.ones(len(y))), **self.get_params())

    def fold_linear(self, X, y, cols: np.ndarray, memo: dict | None = None) -> tuple[Linear, np.ndarray]:
        """The linear view of ``without(X', y)`` at the columns ``cols`` (sorted) alone, X' being
        X over the whole vocabulary with column j at ``cols[j]``; and per column whether any
        count is left there. Calibration scores each fold with it: the same numbers bit for bit
        as the whole fold model's weights at those columns (tests/test_naive_bayes.py), without
        a fold's whole counts and weights (which would sit in train's peak).
        Here, the reference: the whole fold model, cut to the columns; the variants that
        calibration's auto chooses between compute only the columns (``_fold_linear``).
        ``memo``: a dict shared by the candidates scoring one fold, so that the fold's counts are
        taken out once for all that count a document alike (``_taken``)."""
        y = self._names(y)
        X = self.features(X)
        fold = self._fold_linear(X, y, cols, memo)
        if fold is not None:
            return fold
        whole = Rows(X.data, np.asarray(cols, dtype=np.int64)[X.indices], X.indptr, self.counts_.width)
        est = self.of_counts(self.counts_.plus(whole, y, -np.ones(len(y))), **self.get_params())
        return est.linear().columns(cols), est.counts_.token_totals()[cols] > 1e-9

    def _fold_linear(self, X, y, cols, memo=None):
        return None

    # What features() makes of a document, when two variants make the same of it: their fold
    # counts (Counts.minus_at, read only) are then the same, and taken out once (``memo``).
    same_features: str | None = None

    def _sparse_taken(self, X, y, cols, memo) -> tuple:
        """(counts_.sparse_minus_at(X, y, cols): the fold model's counts at cols, class totals
        and class counts; and per column whether any count is left there), shared through
        ``memo`` as _taken's."""
        key = (id(self.counts_), "sparse", self.same_features) if memo is not None and self.same_features else None
        if key is None or key not in memo:
            taken, totals, cc = self.counts_.sparse_minus_at(X, y, cols)
            out = (taken, totals, cc, taken.token_totals() > 1e-9)
            if key is None:
                return out
            memo[key] = out
        return memo[key]

    def _taken(self, X, y, cols, memo, doc_freq: bool = False) -> tuple:
        """(counts_.minus_at(X, y, cols)'s fold counts, document frequencies (with ``doc_freq``,
        else None), class counts and the counts held at cols; and per column whether any count
        is left there), X being features already; shared through ``memo``."""
        key = (id(self.counts_), self.same_features) if memo is not None and self.same_features else None
        if key is None or key not in memo or (doc_freq and memo[key][1] is None):
            fc, df, cc, held = self.counts_.minus_at(X, y, cols, doc_freq)
            taken = (fc, df, cc, held, self._seen(fc))
            if key is None:
                return taken
            memo[key] = taken
        return memo[key]

    @staticmethod
    def _seen(fc_cols: np.ndarray) -> np.ndarray:
        # (a fold model's feature_count_ is the transposed view of tokens x classes: summed so;
        # two classes' sum is their one addition, made column by column without the strided
        # reduction, which is slower)
        if fc_cols.ndim == 2 and fc_cols.shape[1] == 2:
            return np.add(fc_cols[:, 0], fc_cols[:, 1]) > 1e-9
        return fc_cols.T.sum(axis=0) > 1e-9

    def _check_alpha(self, warn: bool = True):
        """The alpha the weights use (checked_alpha)."""
        return checked_alpha(self, warn)

    def _alpha(self):
        """The alpha the weights use (_check_alpha's, without its warning)."""
        return self._check_alpha(warn=False)

    # -- derived parameters, cached until the counts change --------------------------------
    def _derived(self, name: str, make):
        cache = getattr(self, "_cache", None)
        key = (id(self.counts_), self.counts_.version, _frozen(self.alpha), self.force_alpha)
        if cache is None or cache[0] != key:
            cache = self._cache = (key, {})
        if name not in cache[1]:
            self._check_alpha(warn=False)
            cache[1][name] = make()
        return cache[1][name]

    @property
    def class_log_prior_(self) -> np.ndarray:
        return self._derived("prior", self._log_prior)

    def _log_prior(self, cc: np.ndarray | None = None) -> np.ndarray:
        """log P(c) from the class counts (``cc``: a fold's, else the model's)."""
        return class_log_prior(self.class_count_ if cc is None else cc, self.fit_prior, self.class_prior)

    def linear(self) -> Linear:
        """The linear view W, b of the joint log-likelihood (see nbtext.nb.weights)."""
        return self._derived("linear", self._linear)

    def _linear(self) -> Linear:
        raise NotImplementedError

    def summary(self) -> dict:
        """Per-class sums over the vocabulary that the weights need (lists of floats), for the
        classify path, which computes a message's weights alone (nbtext.fastscore)."""
        raise NotImplementedError

    @property
    def feature_log_prob_(self) -> np.ndarray:
        return self.linear().W

    # -- prediction: everything comes from the joint log-likelihood ----------------------
    def predict_joint_log_proba(self, X) -> np.ndarray:
        self._check_fitted()
        if isinstance(X, Rows):
            X = _as_rows(X)
            check_width(X.shape[1], self.n_features_in_, type(self).__name__)
        else:
            X = self._checked_X(X, counted=False)
        return self.linear().jll(X)

    def predict_log_proba(self, X) -> np.ndarray:
        return log_posteriors(self.predict_joint_log_proba(X))

    def predict_proba(self, X) -> np.ndarray:
        return np.exp(self.predict_log_proba(X))

    def predict(self, X) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_joint_log_proba(X), axis=1)]


class MultinomialNB(_BaseNB):
    """P(t|c) = (N_ct + alpha) / (N_c + alpha * V); a document is a bag of token counts."""

    def _den_sums(self) -> np.ndarray:
        """N_c + alpha * V per class: sum_t (N_ct + alpha). (row by row: the same sums, without
        a smoothed copy of all the counts at once)"""
        alpha = self._alpha()
        if self.counts_.sparse:  # (N_c, plus alpha V: the same sums, added in another order)
            return self.counts_.class_totals() + np.sum(alpha) * (1 if np.ndim(alpha) else self.counts_.width)
        return np.array([(row + alpha).sum() for row in self.feature_count_])

    def _log_den(self) -> np.ndarray:
        with np.errstate(divide="ignore"):  # (no token at all: log 0, which no token's weight then uses)
            return np.log(self._den_sums())

    def summary(self) -> dict:
        return {"log_den": self._log_den().tolist()}

    def _linear(self) -> Linear:
        if self.counts_.sparse:
            linear = self._sparse_linear()
            if linear is not None:
                return linear
        # Weights are made tokens x classes, in place, and handed out transposed: one V x k
        # array, whose transpose is already the C-ordered operand of the product.
        alpha = self._alpha()
        W = F.multinomial_weight(self.counts_.token_major, self._log_den(), alpha if np.ndim(alpha) == 0 else
                                 np.asarray(alpha)[:, None], lambda a: np.log(a, out=a)).T
        return Linear(W, F.Multinomial.bias_terms(W.shape[0], self.class_log_prior_, None), self.featurizer())

    def _sparse_linear(self) -> SparseLinear | None:
        s, alpha, log_den = self.counts_.token_sums, np.asarray(self._alpha(), dtype=np.float64), self._log_den()
        terms = F.Multinomial.bias_terms(len(log_den), self.class_log_prior_, None)
        w = np.empty(s.nnz)
        for at, tok, cls in s.pieces():
            w[at] = F.multinomial_weight(s.values[at], log_den[cls], alpha if alpha.ndim == 0 else alpha[tok], np.log)
        if alpha.ndim == 0:
            return SparseLinear.of(s, w, F.multinomial_weight(np.zeros(len(log_den)), log_den, alpha, np.log),
                                   terms, self.featurizer())
        # (a zero count's weight: log alpha_t - log_den_c)
        return SparseLinear.of(s, w, -log_den, terms, self.featurizer(), np.log(alpha), np.ones(len(log_den)))

    def _sparse_fold_linear(self, X, y, cols, memo):
        """_fold_linear of sparse counts: the fold model's weights at the fold's columns, from
        its counts there and its class totals (the same formulas as _sparse_linear, on the same
        numbers: the same bits for whole counts, tests/test_sparse_state.py)."""
        alpha = self._check_alpha()
        if np.ndim(alpha):
            return None
        taken, totals, cc, seen = self._sparse_taken(X, y, cols, memo)
        with np.errstate(divide="ignore"):
            log_den = np.log(totals + alpha * self.counts_.width)
        k = len(log_den)
        w = F.multinomial_weight(taken.values, log_den[taken.classes.astype(np.int64)], alpha, np.log)
        linear = SparseLinear.of(taken, w, F.multinomial_weight(np.zeros(k), log_den, alpha, np.log),
                                 F.Multinomial.bias_terms(k, self._log_prior(cc), None), self.featurizer())
        return None if linear is None else (linear, seen)

    same_features = "counts"

    def _fold_linear(self, X, y, cols, memo=None):
        if self.counts_.sparse:
            return self._sparse_fold_linear(X, y, cols, memo)
        self._check_alpha()
        fc, _, cc, held, seen = self._taken(X, y, cols, memo)
        # _log_den's sums: the whole model's (once), less what the fold took at its columns
        whole = self._derived("den_sums", self._den_sums)
        log_den = np.log(whole - (held - fc).sum(axis=0))
        W = F.multinomial_weight(fc, log_den, self._alpha(), lambda a: np.log(a, out=a)).T
        return Linear(W, F.Multinomial.bias_terms(W.shape[0], self._log_prior(cc), None), self.featurizer()), seen


class BernoulliNB(_BaseNB):
    """P(t|c) = (df_ct + alpha) / (n_c + 2 alpha); absent vocabulary terms count against a class.

    Scoring stays sparse: X @ (log p - log(1-p)).T + sum(log(1-p)). Its feature_log_prob_ is
    scikit-learn's, log p. A document's features: 1 where its value is above ``binarize``
    (None: its values as they are)."""

    tag_values = TagValues(sparse=True, poor_score=True)
    non_negative = False

    def __init__(self, *, alpha=1.0, force_alpha: bool = True, binarize=0.0, fit_prior: bool = True,
                 class_prior=None):
        super().__init__(alpha=alpha, force_alpha=force_alpha, fit_prior=fit_prior, class_prior=class_prior)
        self.binarize = binarize

    def featurizer(self):
        if self.binarize is not None and not (isinstance(self.binarize, (int, float, np.integer, np.floating))
                                              and self.binarize >= 0):
            raise InputError(f"The 'binarize' parameter of BernoulliNB must be None or a float in the range "
                             f"[0.0, inf). Got {self.binarize!r} instead.")
        return partial(_binarized, threshold=self.binarize)

    def _logs(self):
        # (C-ordered, classes x tokens: sums over tokens then add in the same order whatever
        # layout the counts are stored in, so that equal counts give equal bits)
        fc = np.ascontiguousarray(self.feature_count_)
        return F.bernoulli_logs(fc, self.class_count_[:, None], self._alpha(), np.log)

    def _sparse_parts(self):
        """Of sparse counts (scalar alpha): (the weights at the nonzeros, a zero count's weight
        per class, the sums over the vocabulary of log(1 - p))."""
        s, cc, alpha = self.counts_.token_sums, self.class_count_, self._alpha()
        log_p0, log_not_p0 = F.bernoulli_logs(np.zeros(len(cc)), cc, alpha, np.log)
        w, above = np.empty(s.nnz), np.empty(s.nnz)  # (above: log(1 - p) over a zero count's, summed below)
        for at, _, cls in s.pieces():
            log_p, log_not_p = F.bernoulli_logs(s.values[at], cc[cls], alpha, np.log)
            w[at] = log_p - log_not_p
            above[at] = log_not_p - log_not_p0[cls]
        neg_sum = self.counts_.width * log_not_p0 + np.bincount(s.classes, weights=above, minlength=len(cc))
        return w, log_p0 - log_not_p0, neg_sum

    def _sparse(self) -> bool:
        return self.counts_.sparse and np.ndim(self._alpha()) == 0

    def summary(self) -> dict:
        if self._sparse():
            return {"neg_sum": self._derived("sparse", self._sparse_parts)[2].tolist()}
        return {"neg_sum": self._logs()[1].sum(axis=1).tolist()}

    @property
    def feature_log_prob_(self) -> np.ndarray:
        return self._logs()[0]

    def _linear(self) -> Linear:
        if self._sparse():
            w, base, neg_sum = self._derived("sparse", self._sparse_parts)
            terms = F.Bernoulli.bias_terms(len(base), self.class_log_prior_, {"neg_sum": neg_sum})
            linear = SparseLinear.of(self.counts_.token_sums, w, base, terms, self.featurizer())
            if linear is not None:
                return linear
        log_p, log_not_p = self._logs()
        terms = F.Bernoulli.bias_terms(len(log_p), self.class_log_prior_, {"neg_sum": log_not_p.sum(axis=1)})
        return Linear(log_p - log_not_p, terms, self.featurizer())


def document_transform(X, tf: bool, length_norm: bool):
    """Rennie et al.'s per-document transforms: log term frequency, log(1 + n) (section 4.1), and
    document-length normalization, each row scaled to unit L2 length (4.3)."""
    if not (tf or length_norm):
        return X
    X = Rows.of(X)
    if tf:
        X = X.with_data(np.log1p(X.data))
    if length_norm:
        norms = np.sqrt(X.row_sums(X.data * X.data))
        X = X.scaled_rows(np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0))
    return X


def _binarized(X, threshold) -> Rows:
    """Bernoulli's features: 1 where a value is above the threshold (0: where a token is
    present), or with None the values as they are."""
    if threshold is None:
        return _as_rows(X)
    X = Rows.of(X)
    X = X.with_data((X.data > threshold).astype(np.float64)).eliminate_zeros()
    return X


def _complement_features(X, tf: bool, length_norm: bool) -> Rows:
    return document_transform(_as_rows(X), tf, length_norm)


def idf_weights(doc_freq: np.ndarray, n_docs: float) -> np.ndarray:
    """F.idf_weight of every token; 0 for tokens in no document."""
    df = np.asarray(doc_freq, dtype=float)
    out = np.zeros_like(df)
    seen = df > 0
    out[seen] = F.idf_weight(df[seen], n_docs, np.log)
    return out


class ComplementNB(_BaseNB):
    """Complement Naive Bayes (Rennie et al. 2003): a class is scored by how unlike the
    *other* classes' text the document is, which corrects for skewed class sizes.

    w_ct = -log((sum_{c' != c} N_c't + alpha) / (sum_{c' != c} N_c' + alpha * V)),
    with weight normalization (norm=True) the logged weights over their sum instead.

    The paper's other transforms are switches too. tf and length_norm apply to every
    document, trained or scored, so N_ct sums transformed rows. idf multiplies N_ct by
    log(N / df_t), from the document frequencies the counts keep, so that learning, forgetting
    and merging stay sums; the paper applies IDF before length normalization, here the length
    is taken before IDF for that reason (the weights differ only by that scaling).
    """

    def __init__(self, *, alpha=1.0, force_alpha: bool = True, fit_prior: bool = True, class_prior=None,
                 norm: bool = False, tf: bool = False, idf: bool = False, length_norm: bool = False):
        super().__init__(alpha=alpha, force_alpha=force_alpha, fit_prior=fit_prior, class_prior=class_prior)
        self.norm, self.tf, self.idf, self.length_norm = norm, tf, idf, length_norm

    @property
    def feature_all_(self) -> np.ndarray:
        """Each token's count over every class (scikit-learn's)."""
        return self.counts_.token_totals() if self.counts_.sparse else self.feature_count_.sum(axis=0)

    @property
    def doc_freq_(self) -> np.ndarray:
        return self.counts_.doc_freq

    def featurizer(self):
        return partial(_complement_features, tf=self.tf, length_norm=self.length_norm)

    def weighted_counts(self) -> np.ndarray:
        """N_ct, multiplied by the IDF weight of t when idf is on."""
        fc = np.ascontiguousarray(self.feature_count_)  # (C order: see BernoulliNB._logs)
        if not self.idf:
            return fc
        return fc * idf_weights(self.doc_freq_, self.class_count_.sum())

    def _logged(self):
        """(log P(t | not c) per class and token, its log_den per class)."""
        fc = self.weighted_counts()
        all_t = fc.sum(axis=0)
        alpha = self._alpha()
        with np.errstate(divide="ignore"):  # (no token at all: log 0, which no token's weight then uses)
            log_den = np.log((all_t + alpha - fc).sum(axis=1, keepdims=True))
        return F.complement_logged(all_t, fc, log_den, alpha, np.log), log_den[:, 0]

    @staticmethod
    def _terms(fc: np.ndarray, alpha: float) -> np.ndarray:
        """all_t + alpha - N_ct of counts tokens x classes, a new array tokens x classes (all_t
        added class by class, in order, as fc.sum(axis=0) adds the rows of classes x tokens):
        what log P(t | not c) takes the log of. (Counts classes x tokens: pass their transpose.)"""
        all_t = fc[:, 0].copy()
        for c in range(1, fc.shape[1]):
            all_t += fc[:, c]
        all_t += alpha
        return np.subtract(all_t[:, None], fc)

    def _term_sums(self) -> tuple:
        """Per class, the sums over the vocabulary of _terms and, for norm, of their logs: what
        a fold's log_den and log_sum start from (_fold_linear); made _PIECE tokens at a time
        (not a vocabulary-wide copy of the counts, which would sit in a calibration worker's
        peak)."""
        tm, k = self.counts_.token_major, len(self.counts_.classes)
        den, logs = np.zeros(k), np.zeros(k) if self.norm else None
        for lo in range(0, tm.shape[0], _PIECE):
            terms = self._terms(tm[lo:lo + _PIECE], self.alpha)
            den += _column_sums(terms)
            if self.norm:
                logs += _column_sums(np.log(terms, out=terms))
        return den, logs

    def _sparse_parts(self):
        """Of sparse counts: (the weights at the nonzeros, a zero count's weight as base_c +
        scale_c g_t, log_den, log_sum or None), from the same formulas: a token's count over
        every class all_t, and a class's sums over the vocabulary, made from the nonzeros (a zero
        count's log P(t | not c) is log(all_t + alpha) - log_den_c)."""
        counts, alpha = self.counts_, self._alpha()
        s, k, V = counts.token_sums, len(counts.classes), counts.width
        values, all_t, log_den = self._sparse_log_den()
        alpha = np.asarray(alpha, dtype=np.float64)
        with np.errstate(divide="ignore"):
            g = np.log(all_t + alpha)  # (a zero count's log(all_t + alpha - 0))
        w, above = np.empty(s.nnz), np.empty(s.nnz) if self.norm else None
        for at, tok, cls in s.pieces():
            logged = F.complement_logged(all_t[tok], values[at], log_den[cls], alpha if alpha.ndim == 0 else alpha[tok],
                                         np.log)
            w[at] = logged if self.norm else F.complement_weight(logged)
            if self.norm:  # (each entry's log P(t | not c) above a zero count's, summed per class below)
                above[at] = logged - (g[tok] - log_den[cls])
        if not self.norm:
            return w, log_den, g, -np.ones(k), log_den, None
        log_sum = g.sum() - V * log_den + np.bincount(s.classes, weights=above, minlength=k)
        for at, _, cls in s.pieces():
            w[at] = F.complement_weight(w[at], log_sum[cls])
        return w, -log_den / log_sum, g, 1 / log_sum, log_den, log_sum

    def _sparse_log_den(self) -> tuple:
        """Of sparse counts: (each nonzero's value as weighted (idf), a token's weighted count
        over every class all_t, log_den): what _sparse_parts starts from, and all
        that the model file's summary needs without norm (not the weights at every nonzero)."""
        counts, alpha = self.counts_, self._alpha()
        s, k, V = counts.token_sums, len(counts.classes), counts.width
        values = s.values
        if self.idf:
            idf, values = idf_weights(self.doc_freq_, self.class_count_.sum()), np.empty(s.nnz)
            for at, tok, _ in s.pieces():
                values[at] = s.values[at] * idf[tok]
        w_s = TokenSums.of_csr(s.indptr, s.classes, values, k)
        all_t, n_c = w_s.token_totals(), w_s.class_totals()
        alpha_sum = alpha * V if np.ndim(alpha) == 0 else np.sum(alpha)
        with np.errstate(divide="ignore"):
            log_den = np.log(all_t.sum() + alpha_sum - n_c)
        return values, all_t, log_den

    def _sparse_fold_linear(self, X, y, cols, memo):
        """_fold_linear of sparse counts without idf or norm (whose weights move at every token
        with a fold): at the fold's columns, from its counts there and its sums over the
        vocabulary (its class totals), as _sparse_parts makes them."""
        alpha = self._check_alpha()
        if np.ndim(alpha):
            return None
        taken, n_c, cc, seen = self._sparse_taken(X, y, cols, memo)
        cls, tok = taken.classes.astype(np.int64), taken.token_of_entries()
        all_t = taken.token_totals()
        with np.errstate(divide="ignore"):
            log_den = np.log(n_c.sum() + alpha * self.counts_.width - n_c)
            g = np.log(all_t + alpha)
        w = F.complement_weight(F.complement_logged(all_t[tok], taken.values, log_den[cls], alpha, np.log))
        k = len(n_c)
        linear = SparseLinear.of(taken, w, log_den, F.Complement.bias_terms(k, self._log_prior(cc), None),
                                 self.featurizer(), g, -np.ones(k))
        return None if linear is None else (linear, seen)

    def summary(self) -> dict:
        if self.counts_.sparse and self.norm:
            *_, log_den, log_sum = self._derived("sparse", self._sparse_parts)
            return {"log_den": log_den.tolist(), "log_sum": log_sum.tolist()}
        if self.counts_.sparse:  # (the weights are not made for it: on a large model, most of save's peak)
            return {"log_den": self._derived("log_den", lambda: self._sparse_log_den()[-1]).tolist()}
        logged, log_den = self._logged()
        out = {"log_den": log_den.tolist()}
        if self.norm:
            out["log_sum"] = logged.sum(axis=1).tolist()
        return out

    def _linear(self) -> Linear:
        if self.counts_.sparse:
            w, base, g, scale, *_ = self._derived("sparse", self._sparse_parts)
            k = len(base)
            linear = SparseLinear.of(self.counts_.token_sums, w, base,
                                     F.Complement.bias_terms(k, self.class_log_prior_, None), self.featurizer(), g, scale)
            if linear is not None:
                return linear
        logged, _ = self._logged()
        W = F.complement_weight(logged, logged.sum(axis=1, keepdims=True) if self.norm else None)
        return Linear(W, F.Complement.bias_terms(len(W), self.class_log_prior_, None), self.featurizer())

    @property
    def same_features(self) -> str | None:
        return None if self.tf or self.length_norm else "counts"  # (document_transform's identity)

    def _fold_linear(self, X, y, cols, memo=None):
        counts = self.counts_
        if counts.sparse and not (self.idf or self.norm):
            return self._sparse_fold_linear(X, y, cols, memo)
        if counts.width < 2 or counts.sparse:  # (sparse with idf or norm: the reference, the fold model's)  # (a one-token vocabulary: summed across classes otherwise)
            return None
        self._check_alpha()
        k = len(counts.classes)
        fc, df, cc, held, seen = self._taken(X, y, cols, memo, doc_freq=self.idf)
        if not self.idf:
            # The sums over the vocabulary: the whole model's (once), less the fold's columns'
            # terms before the fold was taken out, plus theirs after. Only the fold's columns
            # change, so a fold costs its columns, not the vocabulary (on mail, a fold's columns
            # are about a third of it). The same numbers as the fold model's to about 1e-15
            # (rounded in another order: tests/test_naive_bayes.py). Made tokens x classes, as
            # the counts are held and the product reads the weights: no transposed copies.
            den, logs = self._derived("term_sums", self._term_sums)
            before, after = self._terms(held, self.alpha), self._terms(fc, self.alpha)
            log_den = np.log(den - _column_sums(before) + _column_sums(after))
            logged = np.log(after, out=after)
            log_sum = None
            if self.norm:
                log_sum = logs - _column_sums(np.log(before, out=before)) + _column_sums(logged) - counts.width * log_den
            logged -= log_den
            W = F.complement_weight(logged, log_sum).T  # (classes x columns, a view)
            return Linear(W, F.Complement.bias_terms(k, self._log_prior(cc), None), self.featurizer()), seen
        fc = np.array(fc.T, order="C")  # classes x columns, as weighted_counts makes it (a copy:
        # it is written in place below, and the memo's is another variant's too)
        # With idf, every token's weight moves with the fold's document count: each class's
        # sums made over the whole vocabulary, a piece at a time.
        whole_df = np.array(counts.doc_freq, dtype=np.float64)
        whole_df[cols] = df
        idf = idf_weights(whole_df, cc.sum())
        del whole_df
        raw, tm, V = fc, counts.token_major, counts.width
        fc = fc * idf[cols]
        bounds = np.searchsorted(cols, np.arange(0, V + _PIECE, _PIECE))

        def weighted(c, i):  # weighted_counts' row c, tokens [i * _PIECE, (i + 1) * _PIECE)
            lo, hi = i * _PIECE, min((i + 1) * _PIECE, V)
            w = np.array(tm[lo:hi, c], dtype=np.float64)
            w[cols[bounds[i]:bounds[i + 1]] - lo] = raw[c, bounds[i]:bounds[i + 1]]
            w *= idf[lo:hi]
            return w

        def term(c):
            """all_t + alpha - fc of class c over the whole vocabulary, all_t made a piece at a time
            (as fc.sum(axis=0) adds the rows: in order; no vocabulary-wide all_t is held)."""
            r = np.empty(V)
            for i in range(len(bounds) - 1):
                lo, hi = i * _PIECE, min((i + 1) * _PIECE, V)
                if lo >= hi:
                    break
                rows = [weighted(c2, i) for c2 in range(k)]
                all_t = rows[0]
                for w in rows[1:]:
                    all_t += w
                all_t += self.alpha
                np.subtract(all_t, rows[c] if c else weighted(0, i), out=r[lo:hi])
            return r
        # _logged's sums, a class at a time: each class's row of (all_t + alpha - fc) and, for
        # norm, of the logged weights, summed over the whole row at once (numpy's pairwise order)
        log_den = np.log(np.array([term(c).sum() for c in range(k)]))[:, None]
        log_sum = None
        if self.norm:
            log_sum = np.array([[np.subtract(np.log(r := term(c), out=r), log_den[c], out=r).sum()]
                                for c in range(k)])
        logged = np.log(self._terms(fc.T, self.alpha), out=fc.T).T  # (at the fold's columns)
        logged -= log_den
        del raw
        W = F.complement_weight(logged, log_sum)
        return Linear(W, F.Complement.bias_terms(len(W), self._log_prior(cc), None), self.featurizer()), seen


_PIECE = 1 << 16  # tokens at a time, where a fold's vocabulary-wide sums are made in pieces


def _column_sums(a: np.ndarray) -> np.ndarray:
    """Per column of a 2-d array, its sum, a column at a time (numpy's pairwise sum, strided: the
    bits of summing the same numbers as a contiguous row)."""
    return np.array([a[:, c].sum() for c in range(a.shape[1])])


ESTIMATORS = {"multinomial": MultinomialNB, "bernoulli": BernoulliNB, "complement": ComplementNB}


def estimator_params(settings) -> dict:
    """The estimator's parameters from a ModelSettings."""
    params = {"alpha": settings.alpha}
    if settings.variant == "complement":
        params.update(norm=settings.norm, tf=settings.tf, idf=settings.idf, length_norm=settings.length_norm)
    return params


def make_estimator(settings, counts: Counts | None = None):
    """An estimator for a ModelSettings, over ``counts`` when given (else unfitted). The
    variant auto, not chosen yet, counts as its candidates all do: as multinomial."""
    cls = ESTIMATORS.get(settings.variant, MultinomialNB)
    if counts is None:
        return cls(**estimator_params(settings))
    return cls.of_counts(counts, **estimator_params(settings))
