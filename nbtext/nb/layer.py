"""The decision layer: a linear SVM on NB-weighted features, added to the calibrated posteriors.

Naive Bayes weighs each token alone; a linear model fitted on documents weighs them together,
which helps where classes share vocabulary (topics). NBSVM (Wang and Manning 2012) fits the SVM
on features scaled by the NB log-count ratio, which keeps NB's strength on short texts; here:

    a_t   = 1 + log tf_t                       (the document's known tokens, sublinear tf)
    r_ct  = log((N_ct + a) / (N_c + aV)) - log((N_-c,t + a) / (N_-c + aV))   (one class against
            the rest, from the model's counts: derived, never stored state; 0 for a token
            counted fewer than MIN_COUNT times in all)
    z_ct  = a_t r_ct / || a r_c ||             (L2 unit length per class)
    d_c   = b_c + sum_t z_ct w_ct              (one-vs-rest SVMs; two classes: one, d = [-d1, d1])
    s_c   = log P_c + STRENGTH d_c             (log P: the calibration map's posteriors)

and the posteriors printed are softmax(s). The weights w and b are fitted on calibration's
sample (nbtext.batch.train's Reservoir) with the squared hinge loss and an L2 penalty, by
dual coordinate descent (Hsieh et al. 2008, liblinear's solver), a seeded order: so train and
merge + `calibrate` on the same documents fit the same layer, and a model file stores only w and
b (derived data, like the calibration map; the counts stay the state). Why this layer and these
constants: docs/defaults.md, "Issue 37".

The per-token formulas are pure Python with a ``log`` passed in (nbtext.nb.weights' habit), so
that `classify` (nbtext.fastscore) scores with the same numbers without numpy; the numpy half
(fit and many documents) imports numpy inside its functions.
"""
from __future__ import annotations

import math
from functools import partial

LAYER_ALPHA = 1.0   # the log-count ratios' smoothing (Wang and Manning's)
LAYER_C = 1.0       # the SVM's penalty parameter (liblinear's default)
STRENGTH = 4.0      # s = log P + STRENGTH d (docs/defaults.md: the best mean accuracy of 2 to 12)
EPOCHS = 8          # passes of coordinate descent at most (docs/defaults.md: as accurate as 20)
TOLERANCE = 0.1     # stop when the projected gradients of a pass spread at most this (liblinear's)
MIN_COUNT = 2       # tokens counted fewer times in all are left out (r = 0): a token of one training
                    # document fits that document alone, and would be most of the weights stored


def ratio_dens(class_totals, n_features: int, alpha: float, log) -> tuple[list, list]:
    """Per class (log(N_c + aV), log(N_-c + aV)): the two denominators of r_c."""
    total = sum(class_totals)
    return ([log(n + alpha * n_features) for n in class_totals],
            [log(total - n + alpha * n_features) for n in class_totals])


def log_ratio(n_ct, all_t, den_c, den_not_c, alpha, log):
    """r_ct: the token's log-count ratio of class c against the rest (numpy arrays or floats)."""
    return log(n_ct + alpha) - den_c - log(all_t - n_ct + alpha) + den_not_c


def tf_value(n: float) -> float:
    return 1.0 + math.log(n)


class Layer:
    """A fitted layer: per modelled class j (every class, or with two classes the second
    alone), the bias b_j and the weights w at the tokens ``ids`` (model columns, increasing;
    other tokens weigh 0), plus the ratios' denominators (den, den_not) over the counts it was
    fitted with."""

    def __init__(self, ids, weights, bias: list, den: list, den_not: list, alpha: float = LAYER_ALPHA,
                 strength: float = STRENGTH, min_count: int = MIN_COUNT):
        self.ids, self.weights = ids, weights   # (m,) int64, (m, J) float64
        self.bias, self.den, self.den_not = list(bias), list(den), list(den_not)
        self.alpha, self.strength, self.min_count = float(alpha), float(strength), int(min_count)
        self._sums = None  # ((id of the counts, their version), _Sums): made at the first prediction

    @property
    def modelled(self) -> list[int]:
        """The classes the SVMs are of: all, or with two classes the second."""
        return [1] if len(self.den) == 2 and len(self.bias) == 1 else list(range(len(self.den)))

    def header(self) -> dict:
        return {"alpha": self.alpha, "strength": self.strength, "min_count": self.min_count, "bias": self.bias,
                "den": self.den, "den_not": self.den_not}

    def kept(self, cols, width: int) -> "Layer":
        """The layer over the model's columns ``cols`` (of ``width``), renumbered 0, 1, ... in
        their order (a subset, or the file's sorted order): the weights of columns left out go."""
        import numpy as np

        mapping = np.full(max(width, 1), -1, dtype=np.int64)
        mapping[np.asarray(cols, dtype=np.int64)] = np.arange(len(cols))
        new = mapping[self.ids]
        keep = new >= 0
        order = np.argsort(new[keep], kind="stable")
        return Layer(new[keep][order], self.weights[keep][order], self.bias, self.den, self.den_not,
                     self.alpha, self.strength, self.min_count)

    # -- one document, in Python floats (classify) ---------------------------------------
    def values(self, columns: dict, weights_at) -> list[float]:
        """d_c of one document: ``columns`` maps each known token's counts column (its counts
        per class) to its occurrences, as (tuple(column), n) items: {tid: (column, n)};
        ``weights_at(tid)`` gives its row of w (None: weight 0)."""
        J = self.modelled
        dot = [0.0] * len(J)
        sq = [0.0] * len(J)
        for tid, (col, n) in columns.items():
            r = self.token_ratios(col)
            if r is None:
                continue
            a = tf_value(n)
            w = weights_at(tid)
            for j in range(len(J)):
                v = a * r[j]
                sq[j] += v * v
                if w is not None:
                    dot[j] += v * w[j]
        return self.summed(dot, sq, bool(columns))

    def summed(self, dot: list, sq: list, known: bool) -> list[float]:
        """d of one document from its sums A r . w and ||A r||^2 per modelled class (values();
        the daemon's kernel adds them as values() does); ``known``: it has a known token."""
        if not known:  # (no known token, no evidence: the calibrated prior, as decision.calibrated)
            return [0.0] * len(self.den)
        d = [b + (x / math.sqrt(s) if s > 0 else 0.0) for b, x, s in zip(self.bias, dot, sq)]
        return [-d[0], d[0]] if self.modelled == [1] else d

    def token_ratios(self, col) -> list[float] | None:
        """r_ct of one token, its counts per class ``col``, for each modelled class; None where
        it is counted fewer than min_count times (r = 0)."""
        all_t = sum(col)
        if all_t < self.min_count:
            return None
        return [log_ratio(col[c], all_t, self.den[c], self.den_not[c], self.alpha, math.log) for c in self.modelled]

    def combined(self, probs: list[float], d: list[float]) -> list[float]:
        """softmax(log P + strength d) of one document."""
        s = [(math.log(p) if p > 0 else -math.inf) + self.strength * x for p, x in zip(probs, d)]
        top = max(s)
        e = [math.exp(v - top) for v in s]
        total = sum(e)
        return [v / total for v in e]

    # -- many documents, numpy (predict) --------------------------------------------------
    def ratios(self, token_major):
        """r (m, J) of tokens' counts (m, K), as the counts hold them by token."""
        import numpy as np

        tm = np.asarray(token_major, dtype=np.float64)
        all_t = tm.sum(axis=1)
        R = np.stack([log_ratio(tm[:, c], all_t, self.den[c], self.den_not[c], self.alpha, np.log)
                      for c in self.modelled], axis=1)
        R[all_t < self.min_count] = 0.0
        return R

    def log_proba(self, logp, X, counts):
        """log softmax(log P + strength d) of documents X (raw counts over the model's columns,
        nbtext's Rows) whose calibrated log-posteriors are logp: d by the per-token sums of
        prepare(), in time proportional to X's entries."""
        import numpy as np

        from ..features.rows import Rows

        sums = self.prepare(counts)
        X = Rows.of(X)
        A = X.with_data(np.log(X.data, dtype=np.float64) + 1.0)
        return self.combined_log(logp, self._decided(sums.decision(A, np.asarray(self.bias)), A.indptr))

    def combined_log(self, logp, d):
        """log softmax(log P + strength d) of many documents (d of every class: _decided)."""
        from .estimators import logsumexp_rows

        s = logp + self.strength * d
        return s - logsumexp_rows(s)[:, None]

    def joint(self, linear, X, counts):
        """(NB's joint log-likelihood, d of every class) of documents X (raw counts over the
        model's columns, nbtext's Rows) in one pass of the compiled kernel over their entries,
        each token's nonzeros read once for NB's product and the layer's (nbtext/_c/layer.c);
        None where the kernel cannot (the Python path, NB's weights not held as the counts'
        nonzeros, or NB features of other entries than X's): then NB's jll and log_proba()."""
        import numpy as np

        from ..features.kernel import compiled
        from ..features.rows import Rows
        from .estimators import SparseLinear

        kernel = compiled()
        if kernel is None or not isinstance(linear, SparseLinear):
            return None
        sums = self.prepare(counts)
        linear.prepare()
        X = Rows.of(X)
        F = linear.features(X)
        indptr, classes, D = linear.D.arrays()
        if indptr is not sums.indptr or classes is not sums.classes or F.indices is not X.indices \
                or F.indptr is not X.indptr:
            return None
        n, k, J = X.shape[0], len(self.den), len(self.bias)
        nb, sq, S, dots = np.zeros((n, k)), np.zeros((n, k)), np.zeros((n, 3)), np.zeros((n, J))
        f64 = np.ascontiguousarray
        if not kernel.layer_scores(f64(X.data, dtype=np.float64), f64(F.data, dtype=np.float64), f64(X.indices),
                                   f64(X.indptr, dtype=np.int64), indptr, classes, f64(D, dtype=np.float64),
                                   sums.rest_values, sums.records, sums.rw if len(sums.rw) else np.zeros((1, J)),
                                   nb, sq, S, dots):
            raise ValueError("layer_scores: a column, token span, class or row out of range")
        d = sums.finished(sq[:, self.modelled], S, dots, np.asarray(self.bias))
        return linear.completed(F, nb), self._decided(d, X.indptr)

    def prepare(self, counts) -> "_Sums":
        """The per-token parts of d over ``counts`` (_Sums), made once per version of the counts:
        predict makes them before its workers fork, so that they share one copy."""
        key = (id(counts), counts.version)
        if self._sums is None or self._sums[0] != key:
            self._sums = (key, _Sums(self, counts))
        return self._sums[1]

    def decisions(self, A, R, W):
        """d (documents, classes) of documents A (Rows of sublinear tf over their own columns)
        whose columns' ratios are R and weights W (columns, modelled classes)."""
        import numpy as np

        return self._decided(_decision(A, R, W, np.asarray(self.bias)), A.indptr)

    def _decided(self, d, indptr):
        """d of every class, of the modelled classes' d (documents whose rows start at indptr)."""
        import numpy as np

        d[np.diff(indptr) == 0] = 0.0  # (no known token, no evidence: the calibrated prior)
        return np.concatenate([-d, d], axis=1) if self.modelled == [1] else d


class _Sums:
    """The layer's per-token parts over the model's counts, for d of many documents by sparse
    products. Per modelled class c, ||A r_c||^2 splits as

        sum_t a_t^2 (g_t + k_c)^2  +  sum_{t: N_ct > 0} a_t^2 (r_ct^2 - (g_t + k_c)^2)

    where g_t + k_c is r_ct at a zero count (g_t = log a - log(N_t + a), k_c = den_not_c - den_c;
    tokens counted fewer than min_count times left out): the first sum is k_c^2 S0 + 2 k_c S1 + S2
    of three sums per document (of 1, g, g^2 over its tokens in the layer), the second a product
    with the counts' nonzeros alone (``rest_values``: one per nonzero of the counts, in their
    order, 0 at a token left out or a class not modelled; so the kernel reads a token's nonzeros
    once for NB's product and this one). A r_c . w_c needs the tokens of ``ids`` alone (``rw``).
    ``records`` holds a token's parts in one row: g and its code (-2: left out, -1: in the layer
    and weighing 0, else its row of rw); its nonzeros are the counts' (``indptr``)."""

    def __init__(self, layer: Layer, counts):
        import numpy as np

        from ..features.kernel import compiled
        from .sparse import PIECE, TokenSums, scipy_matrix

        J = layer.modelled
        sums = counts.token_sums  # (once: of one or two classes' counts, each use makes it)
        self.indptr, self.classes, values = sums.arrays()
        width, k = len(self.indptr) - 1, len(layer.den)
        all_t = np.asarray(counts.token_totals(), dtype=np.float64)
        kept = all_t >= layer.min_count
        g = np.where(kept, math.log(layer.alpha) - np.log(all_t + layer.alpha), 0.0)
        code = np.full(width, -1.0)
        code[layer.ids] = np.arange(len(layer.ids))
        code[~kept] = -2.0
        self.records = np.ascontiguousarray(np.stack([g, code], axis=1), dtype=np.float64)
        den, den_not = np.asarray(layer.den), np.asarray(layer.den_not)
        k_all = den_not - den
        self.k = k_all[J]
        modelled = np.zeros(k, dtype=bool)
        modelled[J] = True
        self.rest_values = np.empty(len(values))
        for at, tok, cls in sums.pieces():
            r = log_ratio(values[at], all_t[tok], den[cls], den_not[cls], layer.alpha, np.log)
            zero = g[tok] + k_all[cls]
            rest = r * r - zero * zero
            rest[~(kept[tok] & modelled[cls])] = 0.0
            self.rest_values[at] = rest
        self.rest = TokenSums.of_csr(self.indptr, self.classes, self.rest_values, k)
        # (one modelled class: the sums as a column, scored without scipy as NB's two classes are)
        self.column = None
        if len(J) == 1:
            self.column = np.zeros(width)
            ones = self.classes == J[0]
            self.column[np.repeat(np.arange(width), np.diff(self.indptr))[ones]] = self.rest_values[ones]
        self.matrix = scipy_matrix(self.rest) if compiled() is None and self.column is None else None
        self.rw = np.empty((len(layer.ids), len(J)))
        step = max(1, PIECE // max(k, 1))  # (ids a block: their counts' dense rows within a cache)
        for lo in range(0, len(layer.ids), step):
            ids = layer.ids[lo:lo + step]
            self.rw[lo:lo + len(ids)] = layer.ratios(token_rows(counts, ids)) * layer.weights[lo:lo + len(ids)]

    def decision(self, A, b):
        """b + A r_c . w_c / ||A r_c|| per document and modelled class: A's rows (sublinear tf
        over the model's columns); numpy's products (the reference of the kernel's layer_scores)."""
        import numpy as np

        from ..features.rows import Rows
        from .sparse import product

        g, code = self.records[A.indices, 0], self.records[A.indices, 1]
        found = code >= 0
        ends = np.concatenate([[0], np.cumsum(found)])
        weighed = Rows(A.data[found], code[found].astype(np.int64), ends[A.indptr], len(self.rw))
        A2 = A.with_data(A.data * A.data)
        S = np.stack([A2.row_sums(A2.data * (code > -2)), A2.row_sums(A2.data * g), A2.row_sums(A2.data * (g * g))],
                     axis=1)
        sq = np.asarray(A2 @ self.column[:, None]) if self.column is not None else product(A2, self.rest, self.matrix)
        dots = np.asarray(weighed @ self.rw) if len(self.rw) else np.zeros((A.shape[0], len(b)))
        return self.finished(sq, S, dots, b)

    def finished(self, sq, S, dots, b):
        """d of the modelled classes from the products: sq (||A r_c||^2's part at the nonzeros),
        S (the three per-token sums) and dots (A r_c . w_c)."""
        import numpy as np

        sq = np.array(sq, dtype=np.float64)
        sq += S[:, 2:3]
        sq += (2.0 * self.k)[None, :] * S[:, 1:2]
        sq += (self.k * self.k)[None, :] * S[:, 0:1]
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(sq > 0, dots / np.sqrt(sq), 0.0)
        return out + b[None, :]


def token_rows(counts, cols):
    """The counts (len(cols), K) of the tokens ``cols`` (sorted ids), without a dense array of
    every token's where they are held by token (nb.sparse)."""
    return counts.token_sums.take(cols).dense() if counts.sparse else counts.token_major[cols]


def _local(X, width: int):
    """(X's rows as sublinear tf over its own columns, numbered 0, 1, ..., those columns)."""
    import numpy as np

    from ..features.rows import Rows

    X = Rows.of(X)
    mapping = np.zeros(max(width, 1), dtype=np.int32 if width < 2**31 else np.int64)
    mapping[X.indices] = 1  # (the columns present, in order: a pass over the entries, no sort)
    cols = np.flatnonzero(mapping)
    mapping[cols] = np.arange(len(cols))
    data = np.log(X.data, dtype=np.float64)
    data += 1.0
    return Rows(data, mapping[X.indices], X.indptr, len(cols)), cols


def _decision(A, R, W, b):
    """b + (A r_c / ||A r_c||) . w_c per document and class: A's rows (sublinear tf)."""
    import numpy as np

    norms = np.sqrt(np.asarray(A.with_data(A.data * A.data) @ (R * R)))
    dots = np.asarray(A @ (R * W))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(norms > 0, dots / norms, 0.0)
    return out + b[None, :]


def fit_layer(X, y_idx, counts, C: float = LAYER_C, seed: int = 0, alpha: float = LAYER_ALPHA,
              strength: float = STRENGTH, epochs: int = EPOCHS, tol: float = TOLERANCE,
              min_count: int = MIN_COUNT) -> Layer:
    """The layer fitted on documents X (raw counts over the model's columns, nbtext's Rows) of
    classes y_idx (indices into counts.classes), with ratios from ``counts`` (nb.counts.Counts);
    its weights kept where not zero."""
    import numpy as np

    k = len(counts.classes)
    den, den_not = ratio_dens([float(v) for v in counts.class_totals()], counts.width, alpha, math.log)
    J = [1] if k == 2 else list(range(k))
    layer = Layer(np.zeros(0, dtype=np.int64), np.zeros((0, len(J))), [0.0] * len(J), den, den_not, alpha, strength,
                  min_count)
    A, cols = _local(X, counts.width)
    Y = np.where(np.asarray(y_idx)[:, None] == np.asarray(J)[None, :], 1.0, -1.0)
    W, b = solve_squared_hinge(A, layer.ratios(token_rows(counts, cols)), Y, C, seed, epochs, tol)
    nonzero = np.flatnonzero(W.any(axis=1))
    # (the weights as the model file stores them, in 32 bits: a trained model scores as its file)
    layer.ids, layer.weights, layer.bias = cols[nonzero], W[nonzero].astype(np.float32).astype(np.float64), b.tolist()
    return layer


def solve_squared_hinge(A, R, Y, C: float, seed: int = 0, epochs: int = EPOCHS, tol: float = TOLERANCE):
    """(W, b) of J one-vs-rest L2-regularised squared-hinge SVMs at once,

        min_w,b  1/2 (|w_j|^2 + b_j^2) + C sum_i max(0, 1 - Y_ij (z_ij . w_j + b_j))^2,

    z_ij = A_i r_j / |A_i r_j| (A: CSR rows, R: (columns, J)), the bias a feature of value 1
    (penalised, as liblinear's and scikit-learn's LinearSVC fit it): by dual coordinate
    descent (Hsieh et al. 2008), liblinear's solver, all J problems updated together per
    document, the documents in a seeded random order each pass, with its shrinking (a document
    whose every dual variable sits at 0 with a gradient above the last pass's largest projected
    one is left out until the rest converge) and its stopping rule (the projected gradients'
    spread at most ``tol``, then once more over every document), or ``epochs`` passes. The
    compiled kernel makes each pass (nbtext/_c/layer.c: the same arithmetic in the same order);
    the loops below are the reference."""
    import numpy as np

    from ..features.kernel import compiled

    J = Y.shape[1]
    data = A.data
    norms = np.sqrt(np.asarray(A.with_data(data * data) @ (R * R)))
    with np.errstate(divide="ignore"):
        inv = np.where(norms > 0, 1.0 / norms, 0.0)
    D = 1.0 / (2.0 * C)
    Qii = np.where(norms > 0, 2.0, 1.0) + D
    rng = np.random.default_rng(seed)
    kernel = compiled()
    if kernel is not None:
        return _solved_by_kernel(kernel, A, R, Y, inv, Qii, D, rng, epochs, tol)
    if J == 1:  # (one SVM, two classes: each document's z made once, and scalars per step)
        return _one_svm_by_reference(A, R, Y, inv, Qii, D, rng, epochs, tol)
    return _svms_by_reference(A, R, Y, inv, Qii, D, rng, epochs, tol)


def _one_svm_by_reference(A, R, Y, inv, Qii, D: float, rng, epochs: int, tol: float):
    """solve_squared_hinge's passes in Python for one SVM (two classes)."""
    import numpy as np

    n, indptr, indices, data = Y.shape[0], A.indptr, A.indices, A.data
    starts, active = indptr.tolist(), list(range(n))
    w, bias = np.zeros(R.shape[0]), 0.0
    Z = R[indices, 0]
    Z *= data
    Z *= np.repeat(inv[:, 0], np.diff(indptr))
    y, q, a = Y[:, 0].tolist(), Qii[:, 0].tolist(), [0.0] * n
    hi_old = math.inf
    for _ in range(epochs):
        hi, lo = -math.inf, math.inf
        kept = []
        for i in rng.permutation(active).tolist():
            s, e = starts[i], starts[i + 1]
            cols, z = indices[s:e], Z[s:e]
            yi, ai = y[i], a[i]
            wc = w.take(cols)
            G = yi * (float(z @ wc) + bias) - 1.0 + ai * D
            if ai == 0.0:
                if G > hi_old:
                    continue
                pg = min(G, 0.0)
            else:
                pg = G
            kept.append(i)
            hi, lo = max(hi, pg), min(lo, pg)
            new = max(ai - G / q[i], 0.0)
            if new != ai:
                step = (new - ai) * yi
                a[i] = new
                w.put(cols, wc + z * step)  # (a document's columns are distinct)
                bias += step
        if hi - lo <= tol:
            if len(kept) == n:
                break
            active, hi_old = list(range(n)), math.inf
            continue
        active = sorted(kept)
        hi_old = hi if hi > 0 else math.inf
    return w[:, None], np.array([bias])


def _svms_by_reference(A, R, Y, inv, Qii, D: float, rng, epochs: int, tol: float):
    """solve_squared_hinge's passes in numpy for J > 1 SVMs, all updated together per document."""
    import numpy as np

    (n, J), starts, indices, data = Y.shape, A.indptr.tolist(), A.indices, A.data
    active = list(range(n))
    W = np.zeros((R.shape[0], J))
    b = np.zeros(J)
    alpha = np.zeros((n, J))
    hi_old = np.full(J, np.inf)
    for _ in range(epochs):
        hi, lo = np.full(J, -np.inf), np.full(J, np.inf)
        kept = []
        for i in rng.permutation(active).tolist():
            s, e = starts[i], starts[i + 1]
            cols = indices[s:e]
            Z = (data[s:e, None] * R[cols]) * inv[i]
            yi, ai = Y[i], alpha[i]
            G = yi * ((Z * W[cols]).sum(axis=0) + b) - 1.0 + ai * D
            at_zero = ai == 0.0
            if (at_zero & (G > hi_old)).all():
                continue
            kept.append(i)
            PG = np.where(at_zero, np.minimum(G, 0.0), G)
            np.maximum(hi, PG, out=hi)
            np.minimum(lo, PG, out=lo)
            new = np.maximum(ai - G / Qii[i], 0.0)
            step = (new - ai) * yi
            if step.any():
                alpha[i] = new
                W[cols] += Z * step
                b += step
        if (hi - lo).max() <= tol:
            if len(kept) == n:
                break
            active, hi_old = list(range(n)), np.full(J, np.inf)
            continue
        active = sorted(kept)
        hi_old = np.where(hi > 0, hi, np.inf)
    return W, b


def _solved_by_kernel(kernel, A, R, Y, inv, Qii, D: float, rng, epochs: int, tol: float):
    """solve_squared_hinge's passes by the kernel's svm_pass: the same orders drawn from ``rng``,
    the same shrinking and stopping rule."""
    import numpy as np

    n, J = Y.shape
    f64 = partial(np.ascontiguousarray, dtype=np.float64)
    data, indices, indptr = f64(A.data), np.ascontiguousarray(A.indices), np.ascontiguousarray(A.indptr, np.int64)
    R, inv, Y, Qii = f64(R), f64(inv), f64(Y), f64(Qii)
    W, b, alpha = np.zeros((R.shape[0], J)), np.zeros(J), np.zeros((n, J))
    hi_old, hi, lo = np.full(J, np.inf), np.empty(J), np.empty(J)
    active = np.arange(n)
    for _ in range(epochs):
        order = rng.permutation(active)
        kept = np.empty(len(order), dtype=np.int64)
        got = kernel.svm_pass(order, data, indices, indptr, R, inv, Y, Qii, D, W, b, alpha, hi_old, hi, lo, kept)
        if got < 0:
            raise ValueError("solve_squared_hinge: a column out of range")
        if (hi - lo).max() <= tol:
            if got == n:
                break
            active, hi_old = np.arange(n), np.full(J, np.inf)
            continue
        active = np.sort(kept[:got])
        hi_old = np.where(hi > 0, hi, np.inf)
    return W, b
