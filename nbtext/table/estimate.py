"""A table model's probabilities, derived from its statistics (nbtext.table.stats) in log space.

    prior        log P(y=k) = log(n_k / n)
    categorical  log P(x_j = v | k) = log(n_kjv + alpha) - log(n_kj + alpha d_j), d_j the number
                 of distinct values of column j in training (scikit-learn's CategoricalNB); a
                 value never seen in training is one more value: log alpha - log(n_kj + alpha (d_j + 1))
    diagonal     Gaussian NB: per class and column the mean and the maximum-likelihood variance
                 M2/n, plus epsilon = var_smoothing times the largest column variance over all
                 training rows (scikit-learn's GaussianNB)
    shared       one covariance for every class, by maximum likelihood as Gaussian NB's variances
                 are: the pooled within-class scatter / n (scikit-learn's
                 LinearDiscriminantAnalysis since 1.9; earlier ones divided by n - K); linear
    full         per class: scatter / n_k (QuadraticDiscriminantAnalysis since 1.9; earlier
                 ones divided by n_k - 1); a quadratic boundary
    reg          shared and full: (1 - reg) * covariance + reg * identity (QDA's reg_param); a
                 covariance that is still singular gets a ridge of 1e-10 times its diagonal,
                 growing tenfold until it is positive definite

The joint log-likelihood of a row sums the prior and each present column's log-density (a
missing value is skipped: the marginal over it); posteriors are its softmax, and log p(x), the
density ``predict --density`` reports, its logsumexp over classes.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import NbtextError
from ..nb.estimators import logsumexp_rows
from ..settings import TableSettings
from .stats import TableStats

LOG_2PI = math.log(2 * math.pi)


class Gaussian:
    """One class's multivariate normal, kept equilibrated: scale s (the square roots of the
    covariance's diagonal) and the Cholesky factor of the correlation matrix, which is far
    better conditioned than the covariance when columns have different units."""

    def __init__(self, mean: np.ndarray, cov: np.ndarray):
        self.mean = mean
        d = np.sqrt(np.clip(np.diag(cov), 0, None))
        d = np.where(d > 0, d, 1.0)
        R = cov / d[:, None] / d[None, :]
        ridge = 0.0
        while True:
            try:
                L = np.linalg.cholesky(R + ridge * np.eye(len(R)) if ridge else R)
                break
            except np.linalg.LinAlgError:
                ridge = 1e-10 if ridge == 0 else ridge * 10
                if ridge > 1:
                    raise
        self.scale, self.R, self.L, self.ridge = d, (R + ridge * np.eye(len(R))) if ridge else R, L, ridge
        self._cache: dict = {}

    def covariance(self) -> np.ndarray:
        return self.R * self.scale[:, None] * self.scale[None, :]

    def precision(self) -> np.ndarray:
        inv = np.linalg.inv(self.R)
        return inv / self.scale[:, None] / self.scale[None, :]

    def logdet(self) -> float:
        return 2 * float(np.log(np.diag(self.L)).sum()) + 2 * float(np.log(self.scale).sum())

    def _part(self, keep: tuple):
        part = self._cache.get(keep)
        if part is None:
            idx = np.asarray(keep, dtype=np.int64)
            L = np.linalg.cholesky(self.R[np.ix_(idx, idx)])
            logdet = 2 * float(np.log(np.diag(L)).sum()) + 2 * float(np.log(self.scale[idx]).sum())
            part = self._cache[keep] = (idx, np.linalg.inv(L), logdet)
        return part

    def log_density(self, X: np.ndarray) -> np.ndarray:
        """log N(x | mean, cov) of each row, missing values (NaN) marginalized out."""
        out = np.zeros(len(X))
        obs = ~np.isnan(X)
        if obs.all():
            patterns, which = obs[:1], np.zeros(len(X), dtype=np.int64)
        else:
            patterns, which = np.unique(obs, axis=0, return_inverse=True)
            which = np.asarray(which).reshape(-1)
        for i, pattern in enumerate(patterns):
            keep = tuple(np.flatnonzero(pattern).tolist())
            if not keep:
                continue
            rows = which == i
            idx, L_inv, logdet = self._part(keep)
            Z = (X[np.ix_(rows, idx)] - self.mean[idx]) / self.scale[idx]
            W = Z @ L_inv.T  # (rows of L^-1 z: the whitened deviations)
            out[rows] = -0.5 * (len(idx) * LOG_2PI + logdet + (W * W).sum(axis=1))
        return out


class TableEstimator:
    """Everything a table model scores with, made once from its statistics and settings."""

    def __init__(self, stats: TableStats, settings: TableSettings, log_prior: np.ndarray | None = None):
        """``log_prior``: the classes' log priors, when given (a library caller's priors), else
        the classes' shares of the rows."""
        self.stats, self.settings = stats, settings
        k = len(stats.classes)
        cc = stats.class_count
        if not cc.sum() > 0:  # (every row forgotten: no prior to take the log of)
            raise NbtextError("the table model holds no rows (every row was forgotten): learn rows before "
                              "scoring with it")
        with np.errstate(divide="ignore"):
            self.log_prior = np.log(cc) - math.log(cc.sum()) if log_prior is None else log_prior
        a = settings.alpha
        self.cat_logp, self.cat_unseen = [], []
        for counts in stats.cat:
            d = counts.shape[1]
            n_kj = counts.sum(axis=1)
            self.cat_logp.append(np.log(counts + a) - np.log(n_kj + a * d)[:, None])
            self.cat_unseen.append(math.log(a) - np.log(n_kj + a * (d + 1)))
        p = stats.n_numeric
        self.epsilon = 0.0
        self.gaussians: list[Gaussian] = []
        if p and settings.covariance == "diagonal":
            # the variance of every training row of each column: the classes' statistics merged
            n, mean, m2 = stats.n[0], stats.mean[0], stats.m2[0]
            from .stats import chan

            for c in range(1, k):
                n, mean, m2 = chan(n, mean, m2, stats.n[c], stats.mean[c], stats.m2[c])
            with np.errstate(invalid="ignore", divide="ignore"):
                total_var = np.where(n > 0, m2 / np.where(n > 0, n, 1), 0.0)
            self.epsilon = settings.var_smoothing * float(total_var.max(initial=0.0))
            with np.errstate(invalid="ignore", divide="ignore"):
                self.var = np.where(stats.n > 0, stats.m2 / np.where(stats.n > 0, stats.n, 1), 0.0) + self.epsilon
            self.theta = stats.mean
            self.known = stats.n > 0  # a class that never had a value of a column: column skipped
            if self.epsilon == 0:
                self.var = np.where(self.var > 0, self.var, 1.0)
        elif p:
            r = settings.reg
            eye = np.eye(p)
            if settings.covariance == "shared":
                n = stats.jn.sum()
                pooled = stats.jm2.sum(axis=0) / (n if n > 0 else 1)
                cov = (1 - r) * pooled + r * eye
                self.gaussians = [Gaussian(stats.jmean[c], cov) for c in range(k)]
            else:
                self.gaussians = [Gaussian(stats.jmean[c], (1 - r) * stats.jm2[c] / max(stats.jn[c], 1) + r * eye)
                                  for c in range(k)]

    # -- scoring ---------------------------------------------------------------------------
    def cat_ids(self, cat: list[list]) -> list[np.ndarray]:
        """Each categorical column's cells as value ids: -1 missing, -2 never seen in training."""
        out = []
        for j, cells in enumerate(cat):
            ids = self.stats._ids[j]
            out.append(np.fromiter((-1 if c is None else ids.get(c, -2) for c in cells), dtype=np.int64,
                                   count=len(cells)))
        return out

    def joint_log_likelihood(self, cat: list[list], num: np.ndarray) -> np.ndarray:
        """(rows, classes): log P(y=k) + log p(x | y=k), missing values skipped."""
        m = len(num) if num.ndim == 2 and num.shape[1] else (len(cat[0]) if cat else 0)
        jll = np.tile(self.log_prior, (m, 1))
        for ids, logp, unseen in zip(self.cat_ids(cat), self.cat_logp, self.cat_unseen):
            seen = ids >= 0
            jll[seen] += logp[:, ids[seen]].T
            jll[ids == -2] += unseen
        if num.ndim == 2 and num.shape[1]:
            if self.gaussians:
                for c, g in enumerate(self.gaussians):
                    jll[:, c] += g.log_density(num)
            else:
                jll += self._diagonal(num)
        return jll

    def _diagonal(self, X: np.ndarray) -> np.ndarray:
        obs = ~np.isnan(X)
        out = np.empty((len(X), len(self.theta)))
        complete = obs.all()
        for c in range(len(self.theta)):
            var, known = self.var[c], self.known[c]
            if complete and known.all():  # (as scikit-learn sums it)
                n_ij = -0.5 * np.sum(np.log(2.0 * np.pi * var))
                out[:, c] = n_ij - 0.5 * np.sum(((X - self.theta[c]) ** 2) / var, axis=1)
            else:
                use = obs & known
                log_norm = np.where(known, -0.5 * np.log(2.0 * np.pi * var), 0.0)
                D = np.where(use, X - self.theta[c], 0.0)
                out[:, c] = use.astype(np.float64) @ log_norm - 0.5 * np.sum((D * D) / var, axis=1)
        return out

    def log_density(self, jll: np.ndarray) -> np.ndarray:
        """log p(x) = log sum_k P(y=k) p(x | y=k)."""
        return logsumexp_rows(jll)

    # -- the linear (or quadratic) view ----------------------------------------------------
    def linear(self, positive: int, columns: list[str], kinds: list[str]) -> dict:
        """For two classes: the decision function f(x) = b + sum w x (+ x'Qx) of
        log P(positive|x) - log P(other|x): categorical columns one-hot (one weight per value,
        and one for a value never seen), numeric columns as they are, Q for per-class variances."""
        k = len(self.stats.classes)
        if k != 2:
            raise ValueError("the linear view is for two classes")
        pos, neg = positive, 1 - positive
        b = float(self.log_prior[pos] - self.log_prior[neg])
        cat_names = [c for c, kind in zip(columns, kinds) if kind == "categorical"]
        num_names = [c for c, kind in zip(columns, kinds) if kind == "numeric"]
        onehot = []
        for name, values, logp, unseen in zip(cat_names, self.stats.values, self.cat_logp, self.cat_unseen):
            for v, w in zip(values, logp[pos] - logp[neg]):
                onehot.append({"column": name, "value": v, "w": float(w)})
            onehot.append({"column": name, "value": None, "w": float(unseen[pos] - unseen[neg])})
        out = {"positive": self.stats.classes[pos], "negative": self.stats.classes[neg], "categorical": onehot}
        if not num_names:
            out.update(b=b, quadratic=False)
            return out
        if self.gaussians:
            gp, gn = self.gaussians[pos], self.gaussians[neg]
            Pp, Pn = gp.precision(), gn.precision()
            if self.settings.covariance == "shared":
                w = Pp @ (gp.mean - gn.mean)
                b += float(-0.5 * (gp.mean @ Pp @ gp.mean - gn.mean @ Pn @ gn.mean))
                Q = None
            else:
                w = Pp @ gp.mean - Pn @ gn.mean
                b += float(-0.5 * (gp.mean @ Pp @ gp.mean - gn.mean @ Pn @ gn.mean)
                           - 0.5 * (gp.logdet() - gn.logdet()))
                Q = -0.5 * (Pp - Pn)
        else:
            vp, vn, mp, mn = self.var[pos], self.var[neg], self.theta[pos], self.theta[neg]
            w = mp / vp - mn / vn
            b += float(np.sum(-0.5 * np.log(vp / vn) - 0.5 * (mp * mp / vp - mn * mn / vn)))
            Q = np.diag(-0.5 * (1 / vp - 1 / vn))
        out.update(b=b, numeric=[{"column": n, "w": float(x)} for n, x in zip(num_names, w)],
                   quadratic=Q is not None)
        if Q is not None:
            out["Q"] = {"columns": num_names, "matrix": Q.tolist()}
        return out


def linear_score(view: dict, cat: list[list], num: np.ndarray) -> np.ndarray:
    """The decision function of a linear view for rows (categorical cells, numeric array):
    >= 0 means the positive class (for rows without missing values)."""
    m = len(num) if num.ndim == 2 and num.shape[1] else len(cat[0])
    f = np.full(m, view["b"])
    names = []
    weights: dict = {}
    for e in view["categorical"]:
        if e["column"] not in weights:
            names.append(e["column"])
            weights[e["column"]] = {}
        weights[e["column"]][e["value"]] = e["w"]
    for name, cells in zip(names, cat):
        w = weights[name]
        f += np.fromiter((0.0 if c is None else w.get(c, w[None]) for c in cells), dtype=np.float64, count=m)
    if "numeric" in view:
        w = np.asarray([e["w"] for e in view["numeric"]])
        f += num @ w
        if view["quadratic"]:
            Q = np.asarray(view["Q"]["matrix"])
            f += np.einsum("ij,jk,ik->i", num, Q, num)
    return f
