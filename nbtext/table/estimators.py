"""A table model as a scikit-learn-style estimator: fit / partial_fit / predict / predict_proba /
predict_log_proba, and score_samples (log p(x)), over the same statistics and formulas as the
command line's table models (nbtext.table.stats, nbtext.table.estimate).

    from nbtext import TableNB
    clf = TableNB(categorical=[0, 3]).fit(rows, labels)   # other columns numeric (Gaussian)

X is a 2-D array or a sequence of rows. Numeric columns take numbers (NaN or None: missing);
categorical columns take any values, compared as strings (None, NaN, "", "NA", "?": missing).
``partial_fit`` adds rows; ``sample_weight`` of -1 for every row takes them out again.
"""
from __future__ import annotations

import numpy as np

from ..errors import NbtextError
from ..settings import MISSING_VALUES, TableSettings
from .estimate import TableEstimator
from .read import Frame
from .stats import TableStats


class TableNB:
    def __init__(self, categorical=(), covariance: str = "diagonal", alpha: float = 1.0, reg: float = 0.0,
                 var_smoothing: float = 1e-9):
        self.categorical, self.covariance, self.alpha = categorical, covariance, alpha
        self.reg, self.var_smoothing = reg, var_smoothing

    def get_params(self, deep: bool = True) -> dict:
        return {k: getattr(self, k) for k in ("categorical", "covariance", "alpha", "reg", "var_smoothing")}

    def set_params(self, **params):
        for k, v in params.items():
            setattr(self, k, v)
        return self

    def _settings(self) -> TableSettings:
        return TableSettings(alpha=self.alpha, covariance=self.covariance, reg=self.reg,
                             var_smoothing=self.var_smoothing)

    def _frame(self, X, labels=None) -> Frame:
        rows = X if isinstance(X, np.ndarray) and X.ndim == 2 else np.asarray(list(X), dtype=object)
        if rows.ndim != 2:
            raise NbtextError(f"X must be a 2-D array of rows, got {rows.ndim} dimensions")
        width = rows.shape[1]
        if hasattr(self, "n_features_in_") and width != self.n_features_in_:
            raise NbtextError(f"X has {width} columns; the model was fitted on {self.n_features_in_}")
        cat = sorted({int(c) for c in self.categorical})
        if any(not 0 <= c < width for c in cat):
            raise NbtextError(f"categorical columns {cat} are not all among X's {width} columns")
        num = [j for j in range(width) if j not in cat]

        def cell(v):
            if v is None or (isinstance(v, float) and v != v):
                return None
            s = str(v).strip()
            return None if s in MISSING_VALUES else s

        numbers = np.asarray(rows[:, num].tolist() if rows.dtype == object else rows[:, num], dtype=object)
        numbers = np.where(numbers == None, np.nan, numbers).astype(np.float64)  # noqa: E711
        n = len(rows)
        return Frame(list(range(1, n + 1)), np.arange(1, n + 1), labels,
                     [[cell(v) for v in rows[:, j].tolist()] for j in cat], numbers.reshape(n, len(num)))

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        labels = [str(v) for v in np.asarray(y).tolist()]
        frame = self._frame(X, labels)
        if not hasattr(self, "stats_"):
            self.n_features_in_ = len(frame.cat) + frame.num.shape[1]
            self.stats_ = TableStats(len(frame.cat), frame.num.shape[1], self.covariance != "diagonal",
                                     [str(c) for c in classes] if classes is not None else ())
        if sample_weight is None or np.all(np.asarray(sample_weight) == 1):
            self.stats_.add(frame, labels)
        elif np.all(np.asarray(sample_weight) == -1):
            self.stats_ = self.stats_.plus(frame, labels, -1.0)
        else:
            raise NbtextError("sample_weight: table rows are added (1) or taken out (-1), each whole")
        return self

    def fit(self, X, y, sample_weight=None):
        for attr in ("stats_", "n_features_in_"):
            self.__dict__.pop(attr, None)
        return self.partial_fit(X, y, sample_weight=sample_weight)

    @property
    def estimator_(self) -> TableEstimator:
        est = self.__dict__.get("_est")
        if est is None or est.stats is not self.stats_ or self.__dict__.get("_version") != self.stats_.version:
            est = self._est = TableEstimator(self.stats_, self._settings())
            self._version = self.stats_.version
        return est

    @property
    def classes_(self) -> np.ndarray:
        return np.asarray(self.stats_.classes)

    @property
    def class_count_(self) -> np.ndarray:
        return self.stats_.class_count

    def predict_joint_log_proba(self, X) -> np.ndarray:
        f = self._frame(X)
        return self.estimator_.joint_log_likelihood(f.cat, f.num)

    def predict_log_proba(self, X) -> np.ndarray:
        jll = self.predict_joint_log_proba(X)
        return jll - self.estimator_.log_density(jll)[:, None]

    def predict_proba(self, X) -> np.ndarray:
        return np.exp(self.predict_log_proba(X))

    def predict(self, X) -> np.ndarray:
        return self.classes_[self.predict_joint_log_proba(X).argmax(axis=1)]

    def score_samples(self, X) -> np.ndarray:
        """log p(x) of each row: the log of the sum over classes of prior times class density."""
        return self.estimator_.log_density(self.predict_joint_log_proba(X))
