"""Naive Bayes estimators: counts are the state, log-probabilities are derived from them.

The classes follow scikit-learn's estimator conventions (fit / partial_fit / predict /
predict_proba / predict_log_proba, fitted attributes ending in ``_``) without importing it.
Counting is one sparse product, ``feature_count_ += Y.T @ X``; every ``predict*`` comes from
one hook, the joint log-likelihood, and posteriors are ``jll - logsumexp(jll)``.
Because the counts are all there is, ``partial_fit`` is "add counts", ``sample_weight=-1``
takes documents out again, and two models over the same features add up exactly.
"""
from __future__ import annotations

import numpy as np

from .errors import NbtextError
from .rows import Rows


def logsumexp_rows(a: np.ndarray) -> np.ndarray:
    """log(sum(exp(a), axis=1)) without overflow or underflow."""
    m = np.max(a, axis=1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return (m + np.log(np.sum(np.exp(a - m), axis=1, keepdims=True)))[:, 0]


def class_sums(X, idx: np.ndarray, k: int, weights=None) -> np.ndarray:
    """The (weighted) sum of X's rows per class, as a dense k x V array: Y.T @ X for the
    one-hot class matrix Y, added up entry by entry into the k x V result, so that no sparse
    k x V product is built on the way (a 441,690-column count: peak 31 -> 7 MB, 4x faster)."""
    return Rows.of(X).column_sums_by_row_group(idx, k, weights)


def _as_rows(X) -> Rows:
    """X (scipy sparse, dense, or Rows) as float64 Rows, refused when a value is negative."""
    X = Rows.of(X)
    if X.data.dtype != np.float64:
        X = X.astype(np.float64)
    if X.nnz and X.data.min() < 0:
        raise NbtextError("Naive Bayes needs non-negative feature values")
    return X


class _BaseNB:
    """Owns the counts, the class bookkeeping and every predict*; subclasses derive parameters."""

    _binarize = False

    def __init__(self, alpha: float = 1.0, fit_prior: bool = True, class_prior=None):
        self.alpha = alpha
        self.fit_prior = fit_prior
        self.class_prior = class_prior

    # -- scikit-learn style parameter access ---------------------------------------------
    def get_params(self, deep: bool = True) -> dict:
        return {"alpha": self.alpha, "fit_prior": self.fit_prior, "class_prior": self.class_prior}

    def set_params(self, **params):
        for k, v in params.items():
            setattr(self, k, v)
        self._derived = None
        return self

    # -- counting -------------------------------------------------------------------------
    def _check_alpha(self):
        if not (self.alpha > 0):
            raise NbtextError(f"alpha must be positive, got {self.alpha}")

    def _features(self, X) -> Rows:
        X = _as_rows(X)
        if self._binarize:
            X = X.eliminate_zeros()
            X = X.with_data(np.ones(X.nnz))
        return X

    def _start(self, classes, n_features: int):
        self.classes_ = np.asarray(classes)
        k = len(self.classes_)
        self.class_count_ = np.zeros(k)
        self.feature_count_ = np.zeros((k, n_features))
        self.n_features_in_ = n_features
        self._derived = None

    def grow(self, n_features: int):
        """Widen the count matrix for new vocabulary (new columns start at zero)."""
        if n_features > self.n_features_in_:
            pad = np.zeros((len(self.classes_), n_features - self.n_features_in_))
            self.feature_count_ = np.hstack([self.feature_count_, pad])
            self.n_features_in_ = n_features
            self._derived = None

    def fit(self, X, y, sample_weight=None):
        y = np.asarray(y)
        classes = np.unique(y)
        X = _as_rows(X)
        self._start(classes, X.shape[1])
        return self.partial_fit(X, y, sample_weight=sample_weight)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        self._check_alpha()
        X = self._features(X)
        y = np.asarray(y)
        if not hasattr(self, "classes_"):
            if classes is None:
                raise NbtextError("classes must be passed on the first call to partial_fit")
            self._start(np.unique(classes), X.shape[1])
        if X.shape[0] != y.shape[0]:
            raise NbtextError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels")
        self.grow(X.shape[1])
        if X.shape[1] < self.n_features_in_:
            X = X.widened(self.n_features_in_)
        idx = np.searchsorted(self.classes_, y)
        bad = (idx >= len(self.classes_)) | (self.classes_[np.minimum(idx, len(self.classes_) - 1)] != y)
        if bad.any():
            raise NbtextError(f"unknown label {str(y[bad][0])!r} (the model knows {[str(c) for c in self.classes_]})")
        k = len(self.classes_)
        w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
        self._add_counts(class_sums(X, idx, k, w), np.bincount(idx, weights=w, minlength=k))
        return self

    def _add_counts(self, feature_count, class_count):
        """Add fresh class sums (a new C-ordered array, which is reused for the result)."""
        fc = np.add(self.feature_count_, feature_count, out=feature_count)  # one layout, one rounding
        cc = self.class_count_ + class_count
        if (fc < -1e-9).any() or (cc < -1e-9).any():
            raise NbtextError("that would take counts below zero: those documents were not learned")
        self.feature_count_ = np.maximum(fc, 0.0, out=fc)
        self.class_count_ = np.maximum(cc, 0.0)
        self._derived = None

    # -- derived parameters ---------------------------------------------------------------
    @property
    def class_log_prior_(self) -> np.ndarray:
        return self._params()[0]

    @property
    def feature_log_prob_(self) -> np.ndarray:
        return self._params()[1]

    def _params(self):
        if getattr(self, "_derived", None) is None:
            self._check_alpha()
            self._derived = (self._log_prior(), *self._derive())
        return self._derived

    def _log_prior(self) -> np.ndarray:
        k = len(self.classes_)
        if self.class_prior is not None:
            prior = np.asarray(self.class_prior, dtype=float)
            if prior.shape != (k,):
                raise NbtextError(f"class_prior needs {k} values")
            return np.log(prior)
        if not self.fit_prior:
            return np.full(k, -np.log(k))
        with np.errstate(divide="ignore"):
            return np.log(self.class_count_) - np.log(self.class_count_.sum())

    def _derive(self) -> tuple:
        raise NotImplementedError

    # -- prediction: everything comes from the joint log-likelihood ----------------------
    def _joint_log_likelihood(self, X) -> np.ndarray:
        raise NotImplementedError

    def _dot(self, X, W: np.ndarray) -> np.ndarray:
        """X @ W.T, with W.T kept as a C-ordered copy for as long as W lives: a transposed
        (Fortran-ordered) operand was copied on every product, which was 0.33 s of predict's
        main process on spamassassin-2002."""
        cached = getattr(self, "_transposed", None)
        if cached is None or cached[0] is not W:
            cached = self._transposed = (W, np.ascontiguousarray(W.T))
        return np.asarray(X @ cached[1])

    def _check_X(self, X) -> Rows:
        X = self._features(X)
        if X.shape[1] != self.n_features_in_:
            raise NbtextError(f"X has {X.shape[1]} features, the model {self.n_features_in_}")
        return X

    def predict_joint_log_proba(self, X) -> np.ndarray:
        return self._joint_log_likelihood(self._check_X(X))

    def predict_log_proba(self, X) -> np.ndarray:
        jll = self.predict_joint_log_proba(X)
        return jll - logsumexp_rows(jll)[:, None]

    def predict_proba(self, X) -> np.ndarray:
        return np.exp(self.predict_log_proba(X))

    def predict(self, X) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_joint_log_proba(X), axis=1)]


class MultinomialNB(_BaseNB):
    """P(t|c) = (N_ct + alpha) / (N_c + alpha * V); a document is a bag of token counts."""

    def _derive(self):
        # (row by row: the same sums, without a smoothed copy of all the counts at once)
        log_totals = np.log(np.array([(row + self.alpha).sum() for row in self.feature_count_]))
        # Built V x k and handed out transposed: _dot then needs no C-ordered copy of its
        # transpose, and the log is taken in place (one k x V array where there were four).
        smoothed = np.add(self.feature_count_.T, self.alpha, order="C")
        np.log(smoothed, out=smoothed)
        smoothed -= log_totals
        return (smoothed.T,)

    def _joint_log_likelihood(self, X):
        return self._dot(X, self.feature_log_prob_) + self.class_log_prior_


class BernoulliNB(_BaseNB):
    """P(t|c) = (df_ct + alpha) / (n_c + 2 alpha); absent vocabulary terms count against a class.

    Scoring stays sparse: X @ (log p - log(1-p)).T + sum(log(1-p)).
    """

    _binarize = True

    def _derive(self):
        p_num = self.feature_count_ + self.alpha
        denom = (self.class_count_ + 2 * self.alpha)[:, None]
        log_p = np.log(p_num) - np.log(denom)
        log_not_p = np.log(denom - p_num) - np.log(denom)
        return log_p, log_not_p.sum(axis=1), log_p - log_not_p

    def _joint_log_likelihood(self, X):
        _, _, neg_sum, delta = self._params()
        return self._dot(X, delta) + neg_sum + self.class_log_prior_


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


def idf_weights(doc_freq: np.ndarray, n_docs: float) -> np.ndarray:
    """Rennie et al.'s inverse document frequency (4.2), log(N / df); 0 for unseen terms."""
    df = np.asarray(doc_freq, dtype=float)
    out = np.zeros_like(df)
    seen = df > 0
    out[seen] = np.log(n_docs / df[seen])
    return out


class ComplementNB(_BaseNB):
    """Complement Naive Bayes (Rennie et al. 2003): a class is scored by how unlike the
    *other* classes' text the document is, which corrects for skewed class sizes.

    w_ct = log((sum_{c' != c} N_c't + alpha) / (sum_{c' != c} N_c' + alpha * V)),
    with weight normalization (norm=True) w_ct / sum_t |w_ct|. A document's score for c is
    -sum_t x_t w_ct (the sign folded into the stored weights, as scikit-learn does).

    The paper's other transforms are switches too. tf and length_norm apply to every
    document, trained or scored, so N_ct sums transformed rows. idf multiplies N_ct by
    log(N / df_t), kept as document frequencies (doc_freq_) so that learning, forgetting and
    merging stay sums; the paper applies IDF before length normalization, here the length
    is taken before IDF for that reason (the weights differ only by that scaling).
    """

    def __init__(self, alpha: float = 1.0, fit_prior: bool = True, class_prior=None,
                 norm: bool = False, tf: bool = False, idf: bool = False, length_norm: bool = False):
        super().__init__(alpha, fit_prior, class_prior)
        self.norm, self.tf, self.idf, self.length_norm = norm, tf, idf, length_norm

    def get_params(self, deep: bool = True) -> dict:
        return {**super().get_params(deep), "norm": self.norm, "tf": self.tf, "idf": self.idf,
                "length_norm": self.length_norm}

    def _features(self, X) -> Rows:
        return document_transform(super()._features(X), self.tf, self.length_norm)

    def _start(self, classes, n_features: int):
        super()._start(classes, n_features)
        self.doc_freq_ = np.zeros(n_features)

    def grow(self, n_features: int):
        if n_features > len(self.doc_freq_):
            self.doc_freq_ = np.concatenate([self.doc_freq_, np.zeros(n_features - len(self.doc_freq_))])
        super().grow(n_features)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        super().partial_fit(X, y, classes, sample_weight)
        X = _as_rows(X)
        w = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, dtype=float)
        X = X.moved(np.arange(X.shape[1]), X.shape[1]).eliminate_zeros()  # repeats summed: one each
        df = self.doc_freq_ + np.bincount(X.indices, weights=np.repeat(w, np.diff(X.indptr)),
                                          minlength=self.n_features_in_)
        self.doc_freq_ = np.maximum(df, 0.0)
        return self

    def weighted_counts(self) -> np.ndarray:
        """N_ct, multiplied by the IDF weight of t when idf is on."""
        if not self.idf:
            return self.feature_count_
        return self.feature_count_ * idf_weights(self.doc_freq_, self.class_count_.sum())

    def _derive(self):
        fc = self.weighted_counts()
        comp = fc.sum(axis=0) + self.alpha - fc
        logged = np.log(comp) - np.log(comp.sum(axis=1, keepdims=True))
        if self.norm:
            return (logged / logged.sum(axis=1, keepdims=True),)
        return (-logged,)

    def _joint_log_likelihood(self, X):
        jll = self._dot(X, self.feature_log_prob_)
        if len(self.classes_) == 1:
            jll = jll + self.class_log_prior_
        return jll


ESTIMATORS = {"multinomial": MultinomialNB, "bernoulli": BernoulliNB, "complement": ComplementNB}


def make_estimator(settings):
    """An unfitted estimator for a ModelSettings."""
    if settings.variant == "complement":
        return ComplementNB(alpha=settings.alpha, norm=settings.norm, tf=settings.tf,
                            idf=settings.idf, length_norm=settings.length_norm)
    return ESTIMATORS[settings.variant](alpha=settings.alpha)
