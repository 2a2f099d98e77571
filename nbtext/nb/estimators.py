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

from functools import partial

import numpy as np

from ..errors import NbtextError
from ..features.rows import Rows
from ..settings import number
from . import weights as F
from .counts import Counts


def logsumexp_rows(a: np.ndarray) -> np.ndarray:
    """log(sum(exp(a), axis=1)) without overflow or underflow.

    Two classes (mail) the short way, to the same bits: numpy's reductions along a row of two
    took 0.12 ms (max) and 0.06 ms (sum) of a 3,250 x 2 array, where the column operations
    take 0.004 (a maximum is exact, and a0 + a1 is the sum's one addition either way), and
    calibration's fit evaluates this some 400 times a candidate (0.09 s of train's 1.4); each
    column's own exp, not one of the pair as rows (the same values: 29 -> 23 us a call).
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
        raise NbtextError("Naive Bayes needs non-negative feature values")
    return X


class Linear:
    """A variant's linear view of its joint log-likelihood: jll = features(X) @ W.T + b, the
    bias given as the terms it sums (added one by one, in order, to each score).
    W.T is kept C-ordered (a transposed, Fortran-ordered operand was copied on every product:
    0.33 s of predict's main process on spamassassin-2002)."""

    def __init__(self, W: np.ndarray, bias_terms: tuple, features):
        self.W, self.bias_terms, self.features = W, bias_terms, features
        self._WT = np.ascontiguousarray(W.T)

    @property
    def b(self) -> np.ndarray:
        b = np.zeros(self.W.shape[0])
        for term in self.bias_terms:
            b = b + term
        return b

    def jll(self, X) -> np.ndarray:
        out = np.asarray(self.features(X) @ self._WT)
        for term in self.bias_terms:
            out = out + term
        return out


class _BaseNB:
    """Owns the counts, the class bookkeeping and every predict*; subclasses derive weights."""

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
        self._cache = None
        return self

    # -- the state ------------------------------------------------------------------------
    @classmethod
    def of_counts(cls, counts: Counts, **params):
        """An estimator over existing counts (shared, not copied)."""
        est = cls(**params)
        est.counts_ = counts
        return est

    # scikit-learn's fitted attributes, read from the counts
    classes_ = property(lambda self: np.asarray(self.counts_.classes))
    feature_count_ = property(lambda self: self.counts_.feature_count)
    class_count_ = property(lambda self: self.counts_.class_count)
    n_features_in_ = property(lambda self: self.counts_.width)

    def features(self, X) -> Rows:
        """A document as this variant counts it."""
        return self.featurizer()(X)

    def featurizer(self):
        """``features`` as a function that holds no reference to the estimator: a Linear
        keeps it, and the estimator's cache keeps the Linear, so a bound method made a cycle
        that only the garbage collector frees (calibration's fold models piled up until it ran:
        spamassassin-2002's train peaked at 291 MiB instead of ~100)."""
        return _as_rows

    def fit(self, X, y, sample_weight=None):
        X = _as_rows(X)
        self.counts_ = Counts(np.unique(np.asarray(y)).tolist(), X.shape[1])
        return self.partial_fit(X, y, sample_weight=sample_weight)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        self._check_alpha()
        X = self.features(X)
        y = [str(v) for v in np.asarray(y)]
        if not hasattr(self, "counts_"):
            if classes is None:
                raise NbtextError("classes must be passed on the first call to partial_fit")
            self.counts_ = Counts([str(c) for c in np.unique(classes)], X.shape[1])
        self.counts_.check_labels(y)
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=float)
        if w is not None and (w < 0).any():
            self.counts_ = self.counts_.plus(X, y, w)
        else:
            self.counts_.add(X, y, width=max(X.shape[1], self.counts_.width), weights=w)
        return self

    def add_at(self, X, y, cols: np.ndarray) -> "_BaseNB":
        """partial_fit of X', X over the whole vocabulary with column j at ``cols[j]`` (sorted,
        distinct, as Rows.own_columns makes them), into counts that exist: the same
        numbers, bit for bit (a token's sums add its entries in the same order whatever its
        column number, and the other columns get nothing), with sums as wide as X's own
        columns rather than the vocabulary. Calibration fits a sample's counts fold by fold
        this way: two vocabulary-wide arrays a fold were train's peak on a larger corpus."""
        self._check_alpha()
        y = [str(v) for v in np.asarray(y)]
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
        return self.counts_.add_whole(X, [str(v) for v in np.asarray(y)])

    def without(self, X, y) -> "_BaseNB":
        """A new estimator of the same kind: these counts less the documents (X, y)."""
        return self.of_counts(self.counts_.plus(self.features(X), [str(v) for v in y],
                                                -np.ones(len(y))), **self.get_params())

    def fold_linear(self, X, y, cols: np.ndarray, memo: dict | None = None) -> tuple[Linear, np.ndarray]:
        """The linear view of ``without(X', y)`` at the columns ``cols`` (sorted) alone, X' being
        X over the whole vocabulary with column j at ``cols[j]``; and per column whether any
        count is left there. Calibration scores each fold with it: the same numbers bit for bit
        as the whole fold model's weights at those columns (tests/test_naive_bayes.py), without
        a fold's whole counts and weights (tens of MB of train's peak on spamassassin-2002).
        Here, the reference: the whole fold model, cut to the columns; the variants that
        calibration's auto chooses between compute only the columns (``_fold_linear``).
        ``memo``: a dict shared by the candidates scoring one fold, so that the fold's counts are
        taken out once for all that count a document alike (``_taken``)."""
        y = [str(v) for v in y]
        X = self.features(X)
        fold = self._fold_linear(X, y, cols, memo)
        if fold is not None:
            return fold
        whole = Rows(X.data, np.asarray(cols, dtype=np.int64)[X.indices], X.indptr, self.counts_.width)
        est = self.of_counts(self.counts_.plus(whole, y, -np.ones(len(y))), **self.get_params())
        linear = est.linear()
        seen = est.feature_count_.sum(axis=0)[cols] > 1e-9
        return Linear(np.ascontiguousarray(linear.W[:, cols]), linear.bias_terms, linear.features), seen

    def _fold_linear(self, X, y, cols, memo=None):
        return None

    # What features() makes of a document, when two variants make the same of it: their fold
    # counts (Counts.minus_at, read only) are then the same, and taken out once (``memo``).
    same_features: str | None = None

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
        # reduction, 3 ms a fold on spamassassin-2002)
        if fc_cols.ndim == 2 and fc_cols.shape[1] == 2:
            return np.add(fc_cols[:, 0], fc_cols[:, 1]) > 1e-9
        return fc_cols.T.sum(axis=0) > 1e-9

    def _check_alpha(self):
        number("alpha", self.alpha, 0, 1e6, lo_open=True)  # (ModelSettings' rule)

    # -- derived parameters, cached until the counts change --------------------------------
    def _derived(self, name: str, make):
        cache = getattr(self, "_cache", None)
        key = (id(self.counts_), self.counts_.version, self.alpha)
        if cache is None or cache[0] != key:
            cache = self._cache = (key, {})
        if name not in cache[1]:
            self._check_alpha()
            cache[1][name] = make()
        return cache[1][name]

    @property
    def class_log_prior_(self) -> np.ndarray:
        return self._derived("prior", self._log_prior)

    def _log_prior(self, cc: np.ndarray | None = None) -> np.ndarray:
        """log P(c) from the class counts (``cc``: a fold's, else the model's)."""
        k = len(self.counts_.classes)
        if self.class_prior is not None:
            prior = np.asarray(self.class_prior, dtype=float)
            if prior.shape != (k,):
                raise NbtextError(f"class_prior needs {k} values")
            return np.log(prior)
        if not self.fit_prior:
            return np.full(k, -np.log(k))
        cc = self.class_count_ if cc is None else cc
        with np.errstate(divide="ignore"):
            return F.log_prior(cc, cc.sum(), np.log)

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
        X = _as_rows(X)
        if X.shape[1] != self.n_features_in_:
            raise NbtextError(f"X has {X.shape[1]} features, the model {self.n_features_in_}")
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
        return np.array([(row + self.alpha).sum() for row in self.feature_count_])

    def _log_den(self) -> np.ndarray:
        with np.errstate(divide="ignore"):  # (no token at all: log 0, which no token's weight then uses)
            return np.log(self._den_sums())

    def summary(self) -> dict:
        return {"log_den": self._log_den().tolist()}

    def _linear(self) -> Linear:
        # Weights are made tokens x classes, in place, and handed out transposed: one V x k
        # array, whose transpose is already the C-ordered operand of the product.
        W = F.multinomial_weight(self.counts_.token_major, self._log_den(), self.alpha,
                                 lambda a: np.log(a, out=a)).T
        return Linear(W, F.Multinomial.bias_terms(W.shape[0], self.class_log_prior_, None), self.featurizer())

    same_features = "counts"

    def _fold_linear(self, X, y, cols, memo=None):
        self._check_alpha()
        counts = self.counts_
        fc, _, cc, held, seen = self._taken(X, y, cols, memo)
        # _log_den's sums: the whole model's (once), less what the fold took at its columns
        whole = self._derived("den_sums", self._den_sums)
        log_den = np.log(whole - (held - fc).sum(axis=0))
        W = F.multinomial_weight(fc, log_den, self.alpha, lambda a: np.log(a, out=a)).T
        return Linear(W, F.Multinomial.bias_terms(W.shape[0], self._log_prior(cc), None), self.featurizer()), seen


class BernoulliNB(_BaseNB):
    """P(t|c) = (df_ct + alpha) / (n_c + 2 alpha); absent vocabulary terms count against a class.

    Scoring stays sparse: X @ (log p - log(1-p)).T + sum(log(1-p)). Its feature_log_prob_ is
    scikit-learn's, log p."""

    def featurizer(self):
        return _present

    def _logs(self):
        # (C-ordered, classes x tokens: sums over tokens then add in the same order whatever
        # layout the counts are stored in, so that equal counts give equal bits)
        fc = np.ascontiguousarray(self.feature_count_)
        return F.bernoulli_logs(fc, self.class_count_[:, None], self.alpha, np.log)

    def summary(self) -> dict:
        return {"neg_sum": self._logs()[1].sum(axis=1).tolist()}

    @property
    def feature_log_prob_(self) -> np.ndarray:
        return self._logs()[0]

    def _linear(self) -> Linear:
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


def _present(X) -> Rows:
    """Bernoulli's features: 1 where a token is present."""
    X = _as_rows(X).eliminate_zeros()
    return X.with_data(np.ones(X.nnz))


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

    def __init__(self, alpha: float = 1.0, fit_prior: bool = True, class_prior=None,
                 norm: bool = False, tf: bool = False, idf: bool = False, length_norm: bool = False):
        super().__init__(alpha, fit_prior, class_prior)
        self.norm, self.tf, self.idf, self.length_norm = norm, tf, idf, length_norm

    def get_params(self, deep: bool = True) -> dict:
        return {**super().get_params(deep), "norm": self.norm, "tf": self.tf, "idf": self.idf,
                "length_norm": self.length_norm}

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
        with np.errstate(divide="ignore"):  # (no token at all: log 0, which no token's weight then uses)
            log_den = np.log((all_t + self.alpha - fc).sum(axis=1, keepdims=True))
        return F.complement_logged(all_t, fc, log_den, self.alpha, np.log), log_den[:, 0]

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
        (not a vocabulary-wide copy of the counts: 7 MB of a calibration worker's peak on
        spamassassin-2002)."""
        tm, k = self.counts_.token_major, len(self.counts_.classes)
        den, logs = np.zeros(k), np.zeros(k) if self.norm else None
        for lo in range(0, tm.shape[0], _PIECE):
            terms = self._terms(tm[lo:lo + _PIECE], self.alpha)
            den += _column_sums(terms)
            if self.norm:
                logs += _column_sums(np.log(terms, out=terms))
        return den, logs

    def summary(self) -> dict:
        logged, log_den = self._logged()
        out = {"log_den": log_den.tolist()}
        if self.norm:
            out["log_sum"] = logged.sum(axis=1).tolist()
        return out

    def _linear(self) -> Linear:
        logged, _ = self._logged()
        W = F.complement_weight(logged, logged.sum(axis=1, keepdims=True) if self.norm else None)
        return Linear(W, F.Complement.bias_terms(len(W), self.class_log_prior_, None), self.featurizer())

    @property
    def same_features(self) -> str | None:
        return None if self.tf or self.length_norm else "counts"  # (document_transform's identity)

    def _fold_linear(self, X, y, cols, memo=None):
        counts = self.counts_
        if counts.width < 2:  # (a one-token vocabulary: summed across classes otherwise)
            return None
        self._check_alpha()
        k = len(counts.classes)
        fc, df, cc, held, seen = self._taken(X, y, cols, memo, doc_freq=self.idf)
        if not self.idf:
            # The sums over the vocabulary: the whole model's (once), less the fold's columns'
            # terms before the fold was taken out, plus theirs after. Only the fold's columns
            # change, so a fold costs its columns, not the vocabulary (spamassassin-2002: 441,690
            # tokens, a fold's about 1 in 3). The same numbers as the fold model's to about 1e-15
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
