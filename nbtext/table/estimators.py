"""Table models as scikit-learn estimators: ``GaussianNB`` and ``CategoricalNB`` with
scikit-learn's parameters and fitted attributes, and ``TableNB`` for mixed columns and shared or
full covariances, over the same statistics and formulas as the command line's table models
(nbtext.table.stats, nbtext.table.estimate).

    from nbtext import GaussianNB, CategoricalNB, TableNB
    GaussianNB().fit(X, y)                                 # numeric columns
    CategoricalNB().fit(codes, y)                          # columns of codes 0, 1, 2, ...
    TableNB(categorical=[0, 3], covariance="full").fit(rows, y)

The state is a TableStats (exact sums: ``partial_fit`` in any chunks gives the same numbers as
``fit``; ``sample_weight`` of -1 for every row takes rows out again). ``classes_`` holds y's own
values (nbtext.nb.interface). TableNB's numeric columns take NaN or None as missing values, and
its categorical columns any values, numbers compared as numbers (2 == 2.0) and other values as
text (None, NaN, "", "NA", "?": missing). CategoricalNB takes codes as scikit-learn's does: whole
numbers from 0, a column having max code + 1 categories (at least ``min_categories``).
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError, NbtextError
from ..nb.estimators import checked_alpha, class_log_prior
from ..nb.interface import (ClassifierInterface, Labels, TagValues, check_feature_names, check_lengths,
                            check_non_negative, check_sample_weight, check_width, check_X, check_y,
                            partial_fit_classes)
from ..settings import MISSING_VALUES, TableSettings
from .estimate import TableEstimator
from .read import Frame
from .stats import TableStats


def _frame(cat: list, num: np.ndarray, n: int) -> Frame:
    return Frame(list(range(1, n + 1)), np.arange(1, n + 1), None, cat, num)


class _TableBase(ClassifierInterface):
    """fit / partial_fit / predict* over a TableStats; subclasses say how X becomes a frame."""

    def _fitted(self) -> bool:
        return "stats_" in self.__dict__

    @property
    def classes_(self) -> np.ndarray:
        self._check_fitted()
        return self._labels.classes

    @property
    def class_count_(self) -> np.ndarray:
        self._check_fitted()
        return self.stats_.class_count

    # -- what a subclass says ---------------------------------------------------------------
    def _checked_X(self, X, reset: bool):
        """X checked, as an array."""
        raise NotImplementedError

    def _frame(self, X) -> Frame:
        raise NotImplementedError

    def _new_stats(self, X) -> TableStats:
        raise NotImplementedError

    def _settings(self) -> TableSettings:
        return TableSettings()

    def _log_prior(self):
        """The log priors when the estimator is given some, else None (the rows' shares)."""
        return None

    def _counted(self, X) -> None:
        """Hook: X (its rows of weight above 0 or not) is about to be counted."""

    # -- fitting ------------------------------------------------------------------------------
    def _input(self, X, reset: bool):
        check_feature_names(self, X, reset)
        return self._checked_X(X, reset)

    def _checked(self, X, y, sample_weight, reset: bool):
        X = self._input(X, reset)
        y = check_y(y)
        check_lengths(len(X), y)
        return X, y, check_sample_weight(sample_weight, len(y), negative_ok=True)

    def fit(self, X, y, sample_weight=None):
        X, y, w = self._checked(X, y, sample_weight, reset=True)
        for attr in ("stats_", "_labels", "_est", "n_features_in_"):
            self.__dict__.pop(attr, None)
        self._labels = Labels(y)
        return self._start(X)._add(X, y, w)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        first = not self._fitted()
        X, y, w = self._checked(X, y, sample_weight, reset=first)
        if first:
            self._labels = partial_fit_classes(None, classes)
            self._start(X)
        else:
            partial_fit_classes(self._labels, classes)
        return self._add(X, y, w)

    def _start(self, X):
        self.n_features_in_ = X.shape[1]
        self.stats_ = self._new_stats(X)
        self.stats_._class_rows(self._labels.names)  # (every class, rows or none: partial_fit's classes)
        return self

    def _add(self, X, y, w):
        names = self._labels.names_of(y)
        self._counted(X)
        if w is not None and (w == -1).all():
            self.stats_ = self.stats_.plus(self._frame(X), names, -1.0)
        elif w is not None and (w < 0).any():
            raise InputError("sample_weight: rows are taken out with a weight of -1, all of them at once")
        elif w is None or (w == 1).all():
            self.stats_.add(self._frame(X), names)
        else:  # (rows of weight 0 add nothing)
            keep = np.flatnonzero(w > 0)
            self.stats_.add(self._frame(X[keep]), [names[i] for i in keep.tolist()], w[keep])
        self.__dict__.pop("_est", None)
        self._estimator()  # (derived now, as scikit-learn's fit does: predicting changes nothing)
        return self

    def _estimator(self) -> TableEstimator:
        est = self.__dict__.get("_est")
        if est is None or est[0] is not self.stats_ or est[1] != self.stats_.version:
            log_prior = self._log_prior()
            try:
                made = TableEstimator(self.stats_, self._settings(), log_prior)
            except NbtextError as e:
                raise InputError(str(e)) from None
            est = self._est = (self.stats_, self.stats_.version, made)
        return est[2]

    @property
    def estimator_(self) -> TableEstimator:
        self._check_fitted()
        return self._estimator()

    # -- predicting -----------------------------------------------------------------------------
    def predict_joint_log_proba(self, X) -> np.ndarray:
        self._check_fitted()
        f = self._frame(self._input(X, reset=False))
        return self._estimator().joint_log_likelihood(f.cat, f.num)

    def predict_log_proba(self, X) -> np.ndarray:
        jll = self.predict_joint_log_proba(X)
        return jll - self._estimator().log_density(jll)[:, None]

    def predict_proba(self, X) -> np.ndarray:
        return np.exp(self.predict_log_proba(X))

    def predict(self, X) -> np.ndarray:
        return self.classes_[self.predict_joint_log_proba(X).argmax(axis=1)]

    def score_samples(self, X) -> np.ndarray:
        """log p(x) of each row: the log of the sum over classes of prior times class density."""
        return self._estimator().log_density(self.predict_joint_log_proba(X))


def _checked_priors(priors, k: int) -> np.ndarray:
    p = np.asarray(priors, dtype=np.float64)
    if p.shape != (k,):
        raise InputError("Number of priors must match number of classes.")
    if not np.isclose(p.sum(), 1.0):
        raise InputError("The sum of the priors should be 1.")
    if (p < 0).any():
        raise InputError("Priors must be non-negative.")
    with np.errstate(divide="ignore"):
        return np.log(p)


class GaussianNB(_TableBase):
    """Gaussian Naive Bayes (scikit-learn's GaussianNB): per class and feature a mean and a
    variance, plus ``var_smoothing`` times the largest feature variance."""

    def __init__(self, *, priors=None, var_smoothing: float = 1e-9):
        self.priors = priors
        self.var_smoothing = var_smoothing

    def _checked_X(self, X, reset: bool):
        X = check_X(X, type(self).__name__)
        if reset:
            self._dtype = X.dtype
        else:
            check_width(X.shape[1], self.n_features_in_, type(self).__name__)
        return X

    def _frame(self, X) -> Frame:
        return _frame([], np.asarray(X, dtype=np.float64), len(X))

    def _new_stats(self, X) -> TableStats:
        return TableStats(0, X.shape[1], False)

    def _settings(self) -> TableSettings:
        return TableSettings(var_smoothing=self.var_smoothing)

    def _log_prior(self):
        return None if self.priors is None else _checked_priors(self.priors, len(self._labels.classes))

    def _as_fitted(self, a: np.ndarray) -> np.ndarray:
        return np.asarray(a).astype(self._dtype, copy=False)

    theta_ = property(lambda self: self._as_fitted(self.estimator_.theta), doc="(classes, features): the means")
    var_ = property(lambda self: self._as_fitted(self.estimator_.var), doc="the variances, epsilon_ added")
    epsilon_ = property(lambda self: self.estimator_.epsilon)
    class_prior_ = property(lambda self: self._as_fitted(np.exp(self.estimator_.log_prior)))

    @property
    def class_count_(self) -> np.ndarray:
        return self._as_fitted(super().class_count_)

    def predict_proba(self, X) -> np.ndarray:
        return self._as_fitted(super().predict_proba(X))

    def predict_log_proba(self, X) -> np.ndarray:
        return self._as_fitted(super().predict_log_proba(X))

    @staticmethod
    def _update_mean_variance(n_past, mu, var, X, sample_weight=None):
        """The mean and variance of past statistics (n_past, mu, var) and the rows X together
        (scikit-learn's helper; nbtext's own statistics are exact sums instead)."""
        if X.shape[0] == 0:
            return mu, var
        from .stats import chan

        w = np.ones(len(X)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        n_new = w.sum()
        new_mu = np.average(X, axis=0, weights=w)
        m2_new = np.average((X - new_mu) ** 2, axis=0, weights=w) * n_new
        n, mean, m2 = chan(n_past, mu, var * n_past, n_new, new_mu, m2_new)
        return mean, m2 / n


class CategoricalNB(_TableBase):
    """Categorical Naive Bayes (scikit-learn's CategoricalNB): each feature a column of codes
    0, 1, 2, ...; P(x_i = t | c) = (N_cit + alpha) / (N_ci + alpha n_i), n_i being the column's
    max code + 1 (at least ``min_categories``)."""

    tag_values = TagValues(positive_only=True, categorical=True)

    def __init__(self, *, alpha=1.0, force_alpha: bool = True, fit_prior: bool = True, class_prior=None,
                 min_categories=None):
        self.alpha = alpha
        self.force_alpha = force_alpha
        self.fit_prior = fit_prior
        self.class_prior = class_prior
        self.min_categories = min_categories

    def _checked_X(self, X, reset: bool):
        name = type(self).__name__
        X = check_X(X, name)
        if not reset:
            check_width(X.shape[1], self.n_features_in_, name)
        X = X.astype(np.int64)
        check_non_negative(X, name)
        return X

    def _frame(self, X) -> Frame:
        return _frame([[str(v) for v in col] for col in X.T.tolist()], np.zeros((len(X), 0)), len(X))

    def _new_stats(self, X) -> TableStats:
        self._codes = np.zeros(X.shape[1], dtype=np.int64)
        return TableStats(X.shape[1], 0, False)

    def _counted(self, X) -> None:
        self._codes = np.maximum(self._codes, X.max(axis=0) + 1)
        self.n_categories_  # (min_categories checked before the rows are counted)

    @property
    def n_categories_(self) -> np.ndarray:
        n = self._codes
        if self.min_categories is None:
            return n.copy()
        least = np.asarray(self.min_categories)
        if not np.issubdtype(least.dtype, np.integer):
            raise InputError(f"'min_categories' should have integral type. Got {least.dtype} instead.")
        if least.ndim and least.shape != n.shape:
            raise InputError(f"'min_categories' should have shape ({len(n)},) when an array-like is provided. "
                             f"Got {least.shape} instead.")
        return np.maximum(n, least).astype(np.int64)

    @property
    def category_count_(self) -> list:
        """Per feature, (classes, n_categories) counts, column t for code t."""
        self._check_fitted()
        out = []
        for j, width in enumerate(self.n_categories_.tolist()):
            counts = np.zeros((len(self._labels.classes), width))
            codes = np.asarray([int(v) for v in self.stats_.values[j]], dtype=np.int64)
            counts[:, codes] = self.stats_.cat[j]
            out.append(counts)
        return out

    def _check_alpha(self, warn: bool = True):
        return checked_alpha(self, warn)

    @property
    def feature_log_prob_(self) -> list:
        alpha = self._check_alpha(warn=False)
        out = []
        for counts in self.category_count_:
            smoothed = counts + alpha
            out.append(np.log(smoothed) - np.log(smoothed.sum(axis=1, keepdims=True)))
        return out

    @property
    def class_log_prior_(self) -> np.ndarray:
        self._check_fitted()
        return class_log_prior(self.stats_.class_count, self.fit_prior, self.class_prior)

    def _add(self, X, y, w):
        self._check_alpha()
        super()._add(X, y, w)
        self._derived = (self.stats_.version, self.feature_log_prob_, self.class_log_prior_)
        return self

    def predict_joint_log_proba(self, X) -> np.ndarray:
        self._check_fitted()
        X = self._input(X, reset=False)
        version, logp, prior = self._derived
        if version != self.stats_.version:
            logp, prior = self.feature_log_prob_, self.class_log_prior_
        jll = np.tile(prior, (len(X), 1))
        for j, lp in enumerate(logp):
            codes = X[:, j]
            if codes.max(initial=0) >= lp.shape[1]:
                raise InputError(f"X has category {int(codes.max())} in feature {j}, but {type(self).__name__} was "
                                 f"fitted with {lp.shape[1]} categories there")
            jll += lp[:, codes].T
        return jll

    def predict_log_proba(self, X) -> np.ndarray:
        from ..nb.estimators import log_posteriors

        return log_posteriors(self.predict_joint_log_proba(X))

    def score_samples(self, X) -> np.ndarray:
        from ..nb.estimators import logsumexp_rows

        return logsumexp_rows(self.predict_joint_log_proba(X))


def _cell(v):
    """A categorical cell: None when missing; a number as the same text whatever its type
    (2, 2.0 and numpy's 2 alike); other values as text."""
    if v is None or (isinstance(v, float) and v != v):
        return None
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)):
        f = float(v)
        if f != f:
            return None
        return str(int(f)) if f.is_integer() else repr(f)
    s = str(v).strip()
    return None if s in MISSING_VALUES else s


class TableNB(_TableBase):
    """Mixed columns: ``categorical`` ones (categorical NB) and the others numeric, with a
    ``covariance`` diagonal (Gaussian NB), shared (LDA) or full (QDA); see nbtext.table.estimate."""

    tag_values = TagValues(allow_nan=True)

    def __init__(self, categorical=(), covariance: str = "diagonal", alpha: float = 1.0, reg: float = 0.0,
                 var_smoothing: float = 1e-9, priors=None):
        self.categorical, self.covariance, self.alpha = categorical, covariance, alpha
        self.reg, self.var_smoothing, self.priors = reg, var_smoothing, priors

    def _settings(self) -> TableSettings:
        try:
            return TableSettings(alpha=self.alpha, covariance=self.covariance, reg=self.reg,
                                 var_smoothing=self.var_smoothing)
        except NbtextError as e:
            raise InputError(str(e)) from None

    def _log_prior(self):
        return None if self.priors is None else _checked_priors(self.priors, len(self._labels.classes))

    def _columns(self, width: int) -> list:
        cat = sorted({int(c) for c in self.categorical})
        if any(not 0 <= c < width for c in cat):
            raise InputError(f"categorical columns {cat} are not all among X's {width} columns")
        return cat

    def _checked_X(self, X, reset: bool):
        name = type(self).__name__
        rows = X if isinstance(X, np.ndarray) or hasattr(X, "tocsr") else \
            np.asarray(X) if hasattr(X, "__array__") else np.asarray(list(X), dtype=object)
        if hasattr(rows, "tocsr") or np.asarray(rows).dtype != object:
            rows = check_X(rows, name, allow_nan=True)  # (numbers only)
        elif rows.ndim != 2:
            check_X(rows.astype(np.float64) if rows.ndim < 2 else rows, name)  # (its wording)
        if rows.shape[0] < 1 or rows.shape[1] < 1:
            check_X(np.zeros(rows.shape), name)
        if reset:
            self._columns(rows.shape[1])  # (refused before anything is counted)
        else:
            check_width(rows.shape[1], self.n_features_in_, name)
        return rows

    def _frame(self, rows) -> Frame:
        width = rows.shape[1]
        cat = self._columns(width)
        num = [j for j in range(width) if j not in cat]
        if rows.dtype == object:
            numbers = np.asarray(rows[:, num].tolist(), dtype=object).reshape(len(rows), len(num))
            numbers = np.where(numbers == None, np.nan, numbers).astype(np.float64)  # noqa: E711
            if numbers.size and np.isinf(numbers).any():
                raise InputError("Input X contains infinity or a value too large for dtype('float64').")
        else:
            numbers = rows[:, num].astype(np.float64)
        return _frame([[_cell(v) for v in rows[:, j].tolist()] for j in cat], numbers, len(rows))

    def _new_stats(self, X) -> TableStats:
        cat = self._columns(X.shape[1])
        return TableStats(len(cat), X.shape[1] - len(cat), self._settings().covariance != "diagonal")
