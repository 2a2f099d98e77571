"""A table model's state: mergeable statistics, as nbtext.nb.counts.Counts is a text model's.

Per class: its rows. Per categorical column: per class, how many rows hold each value. Per
numeric column: per class, the rows holding a value and the exact sum and sum of squares of
those values. With shared or per-class covariances also, per class, over the rows whose every
numeric value is present: their number, each column's exact sum and each pair of columns' exact
sum of products. The sums are exact (nbtext.table.exact: whole numbers times a power of two,
Python integers), so adding is exact and associative: training a chunk at a time, ``learn``,
``forget`` (``plus`` with weight -1 subtracts exactly), ``merge`` and a cluster's reduce, in any
grouping, give the same statistics bit for bit. The floats the estimators use, per class and
column the mean and M2 (the sum of squared deviations from the mean), and the complete rows'
mean vector and scatter matrix, are derived from the sums, correctly rounded
(mean = S / n, M2 = (n S2 - S^2) / n, scatter = (n P - S S') / n), once per change.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import NbtextError
from .exact import Exact, column_sums, cross_products, weighted_column_sums
from .read import Frame

MAX_NUMBERS = 1 << 25  # the numbers a model's statistics may hold (256 MiB; scoring needs a few times it)
EXACT_WEIGHT = 45  # (an exact sum's bytes at training's peak, over a float's 8: see room)


def chan(na, ma, m2a, nb, mb, m2b):
    """(n, mean, M2) of two parts' statistics together by Chan, Golub and LeVeque's formula
    (n = na + nb, d = mb - ma, mean = ma + d nb/n, M2 = M2a + M2b + d^2 na nb / n): the
    estimators pool the classes' derived floats with it."""
    with np.errstate(all="ignore"):
        n = na + nb
        f = np.where(n > 0, nb / np.where(n > 0, n, 1), 0.0)
        d = mb - ma
        return n, ma + d * f, m2a + m2b + na * f * d * d


def _deviations(n: np.ndarray, S: Exact, S2: Exact) -> np.ndarray:
    """(n S2 - S^2) / n as floats, correctly rounded, and not below 0."""
    return np.maximum(S2.scaled(n).plus(S.times(S), -1).divided(n), 0.0) if n.size else np.zeros(n.shape)


class TableStats:
    """The statistics of a table model (see the module's doc). ``n_categorical`` categorical
    columns, ``n_numeric`` numeric ones; ``joint``: keep the joint (cross-product) statistics
    that shared and per-class covariances need."""

    def __init__(self, n_categorical: int, n_numeric: int, joint: bool, classes: Sequence[str] = ()):
        self.classes: list[str] = []
        self.joint = joint
        self.class_count = np.zeros(0)
        self.values: list[list[str]] = [[] for _ in range(n_categorical)]
        self._ids: list[dict] = [{} for _ in range(n_categorical)]
        self._spare: list = [None] * n_categorical  # (per column: what its cat array is a view of)
        self._sorted: tuple = (None, None)  # (a classes list and the same as an array)
        self.cat = [np.zeros((0, 0)) for _ in range(n_categorical)]
        p = n_numeric
        q = self.q = p if joint else 0  # the joint statistics' width: p x p per class only when kept
        self.n, self.S, self.S2 = np.zeros((0, p)), Exact.zeros((0, p)), Exact.zeros((0, p))
        self.jn, self.jS, self.jP = np.zeros(0), Exact.zeros((0, q)), Exact.zeros((0, q, q))
        self.n_values = 0  # (the categorical columns' values, all together)
        self.version = 0
        self._derived: tuple | None = None  # (version, mean, M2, joint mean, scatter)
        self._floats = None  # (a model file's stored floats, until its exact sums are needed)
        self._pending = None  # (a model file's exact sums not yet parsed: (parse, the file's name))
        if classes:
            self._class_rows(list(classes))

    @property
    def n_numeric(self) -> int:
        return self.n.shape[1]

    @property
    def n_rows(self) -> int:
        return int(round(self.class_count.sum()))

    # -- the derived floats -----------------------------------------------------------------
    def _derive(self) -> tuple:
        d = self._derived
        if d is None or d[0] != self.version:
            self._exact()
            with np.errstate(all="ignore"):
                mean, m2 = self.S.divided(self.n), _deviations(self.n, self.S, self.S2)
                jmean = self.jS.divided(self.jn[:, None])
                jm2 = (self.jP.scaled(np.broadcast_to(self.jn[:, None, None], self.jP.shape))
                       .plus(Exact(self.jS.m[:, :, None] * self.jS.m[:, None, :],
                                   self.jS.e[:, :, None] + self.jS.e[:, None, :]), -1)
                       .divided(self.jn[:, None, None]))
            d = self._derived = (self.version, mean, m2, jmean, jm2)
        return d

    def agrees(self) -> bool:
        """Whether the exact sums give, bit for bit, the floats stored beside them (as of_arrays
        took them from a file or a dump, which nbtext writes derived from those sums): a file
        edited in one part and not the other (a negative sum of squares under sane means) is
        refused, not trusted once the sums are next used."""
        stored = self._derived
        self._derived = None
        derived = self._derive()
        return all(np.array_equal(a, b, equal_nan=True) for a, b in zip(stored[1:], derived[1:]))

    mean = property(lambda self: self._derive()[1], doc="(k, p) per class and column: the mean")
    m2 = property(lambda self: self._derive()[2], doc="(k, p): the sum of squared deviations from the mean")
    jmean = property(lambda self: self._derive()[3], doc="(k, q): the complete rows' mean vector")
    jm2 = property(lambda self: self._derive()[4], doc="(k, q, q): the complete rows' scatter matrix")

    def _exact(self) -> None:
        """The exact sums, made when first needed (to learn, forget, merge or save): a model
        file's, parsed and checked to give the floats stored beside them (scoring uses those
        floats alone: a wide table's sums cost seconds to read); or, for a model file of format
        4 without them, the sums its stored floats stand for (S = n mean, S2 = M2 + n mean^2,
        P = scatter + n mean mean', exact), from which the same floats derive again."""
        if self._pending is not None:
            parse, where = self._pending
            self._pending = self._floats = None
            try:
                sums = parse()
            except ValueError as e:
                raise NbtextError(f"{where}: corrupt model file (ValueError: {e})") from None
            self.S, self.S2 = sums["sum"], sums["sumsq"]
            if self.joint:
                self.jS, self.jP = sums["joint_sum"], sums["joint_products"]
            if not self.agrees():
                raise NbtextError(f"{where}: corrupt model file (exact: the sums do not give the means and M2s "
                                  "stored in gauss and joint)")
            return
        if self._floats is None:
            return
        mean, m2, jmean, jm2 = self._floats
        self._floats = None
        M = Exact.of_floats(mean)
        self.S, self.S2 = M.scaled(self.n), Exact.of_floats(m2).plus(M.times(M).scaled(self.n))
        if self.joint:
            J = Exact.of_floats(jmean)
            k, q = jmean.shape
            outer = Exact(J.m[:, :, None] * J.m[:, None, :], J.e[:, :, None] + J.e[:, None, :])
            self.jS = J.scaled(np.broadcast_to(self.jn[:, None], (k, q)))
            self.jP = Exact.of_floats(jm2).plus(outer.scaled(np.broadcast_to(self.jn[:, None, None], (k, q, q))))

    # -- classes and values ----------------------------------------------------------------
    def _class_rows(self, labels: Sequence[str]) -> np.ndarray:
        """Each label's class row, the labels new to the model added (the classes sorted), in
        time linear in the labels and, when some are new, in the classes (numpy's loops: no
        Python loop over the classes a block, which a label column of ids made quadratic)."""
        have = self._sorted_classes()
        labs = np.empty(len(labels), dtype=object)
        labs[:] = labels
        at = np.searchsorted(have, labs)
        known = (at < len(have)) & (have[np.minimum(at, len(have) - 1)] == labs) if len(have) else at < 0
        if not known.all():
            new = np.array(sorted(set(labs[~known].tolist())), dtype=object)
            k = len(have) + len(new)
            self.room(k, self.n_values)
            self._exact()
            shift = np.zeros(len(have) + 1, dtype=np.int64)
            np.add.at(shift, np.searchsorted(have, new), 1)
            where = np.arange(len(have)) + np.cumsum(shift)[:len(have)]  # (old rows' new places)

            def grown(a):
                if isinstance(a, Exact):
                    return a.grown((k,) + a.shape[1:], where)
                out = np.zeros((k,) + a.shape[1:])
                out[where] = a
                return out

            self.class_count = grown(self.class_count)
            self.cat = [grown(a) for a in self.cat]
            self.n, self.S, self.S2 = grown(self.n), grown(self.S), grown(self.S2)
            self.jn, self.jS, self.jP = grown(self.jn), grown(self.jS), grown(self.jP)
            have = np.insert(have, np.searchsorted(have, new), new)
            self.classes = have.tolist()
            self._sorted = (self.classes, have)
            self.version += 1
            at = np.searchsorted(have, labs)
        return at.astype(np.int64)

    def _sorted_classes(self) -> np.ndarray:
        """self.classes as an array (made again when self.classes is another list: of_arrays,
        copy)."""
        of, array = self._sorted
        if of is not self.classes:
            array = np.empty(len(self.classes), dtype=object)
            array[:] = self.classes
            self._sorted = (self.classes, array)
        return array

    def _value_ids(self, j: int, cells: Sequence) -> np.ndarray:
        """Each cell's value id in column j (-1: missing), new values added."""
        ids, values = self._ids[j], self.values[j]
        out = np.empty(len(cells), dtype=np.int64)
        for i, c in enumerate(cells):
            if c is None:
                out[i] = -1
                continue
            v = ids.get(c)
            if v is None:
                v = ids[c] = len(values)
                values.append(c)
            out[i] = v
        d, a = len(values), self.cat[j]
        if a.shape[1] < d:
            self.n_values += d - a.shape[1]
            self.room(len(self.classes), self.n_values)
            spare = self._spare[j]  # (columns to grow into: a block's new values are not a copy of all)
            if spare is None or a.base is not spare or spare.shape[1] < d:
                spare = self._spare[j] = np.zeros((a.shape[0], d + d // 4))
                spare[:, :a.shape[1]] = a
            self.cat[j] = spare[:, :d]
        return out

    def room(self, k: int, n_values: int) -> None:
        """Refuse statistics of ``k`` classes and ``n_values`` categorical values that would hold
        more than MAX_NUMBERS numbers, before they are allocated: they are dense (a class by
        every value; with shared or full covariance, p x p a class), and 20,000 numeric columns
        with --covariance full took 23 GB before the kernel killed train; a label column of ids
        asked as much."""
        p, q = self.n_numeric, self.q
        # (an exact sum, table.exact, is a Python integer and a binary exponent, held beside the
        # temporaries of its products and of the floats derived from them at training's peak:
        # each counts as EXACT_WEIGHT numbers, docs/bench.md)
        each = n_values + 3 * p + 1 + q + q * q + EXACT_WEIGHT * (2 * p + q + q * q)
        if k * each > MAX_NUMBERS:
            raise NbtextError(f"the table's statistics would hold {k * each:,} numbers ({k:,} classes x {each:,}), "
                              f"more than {MAX_NUMBERS:,}: too many classes (is the label column right?), "
                              "distinct values or, with --covariance shared or full, numeric columns (p x p exact sums a "
                              f"class, each counted as {EXACT_WEIGHT} numbers; --covariance diagonal keeps p)")

    def check_labels(self, labels: Sequence[str], where: str = "") -> None:
        unknown = sorted(set(labels) - set(self.classes))
        if unknown:
            raise NbtextError(f"{where + ': ' if where else ''}unknown label {unknown[0]!r}: the model's "
                              f"classes are {', '.join(self.classes)}")

    def check_finite(self, numeric_columns: list[str]) -> None:
        """Refuse statistics beyond float64 (values near 1e154 and beyond: their squares)."""
        # (|S_ij| <= sqrt(S_ii S_jj): an overflow off the diagonal is one on it too)
        for a in (self.mean, self.m2, self.jmean, np.diagonal(self.jm2, axis1=1, axis2=2)):
            bad = ~np.isfinite(a).all(axis=0)
            if bad.any():
                raise NbtextError(f"column {numeric_columns[int(np.flatnonzero(bad)[0])]!r}: values too large "
                                  "for Gaussian statistics (their squares overflow); scale the column")

    def check_trainable(self) -> None:
        present = [c for c, n in zip(self.classes, self.class_count) if n > 0]
        if len(present) < 2:
            raise NbtextError(f"need rows of at least two classes to train, got {present or 'none'}")

    # -- a chunk's statistics ---------------------------------------------------------------
    def _rows_of(self, frame: Frame, labels: Sequence[str] | None) -> tuple[np.ndarray, list[np.ndarray]]:
        """Each row's class row and each categorical cell's value id, the frame's new classes
        and values added (refused by room before they are: a label column of ids is refused
        in the block that passes the limit)."""
        idx = self._class_rows(frame.labels if labels is None else labels)
        return idx, [self._value_ids(j, cells) for j, cells in enumerate(frame.cat)]

    def _count(self, idx: np.ndarray, ids: list[np.ndarray], X: np.ndarray, weights=None) -> None:
        """Add rows (their class rows, value ids and numeric values; each times its weight, when
        given) to these statistics, at a cost of the rows' own size: every class and value in
        them already has its place."""
        self.class_count += np.bincount(idx, weights=weights, minlength=len(self.classes))
        for a, v in zip(self.cat, ids):
            ok = v >= 0
            np.add.at(a, (idx[ok], v[ok]), 1.0 if weights is None else weights[ok])
        if not self.n_numeric:
            return
        present, group = np.unique(idx, return_inverse=True)
        obs = ~np.isnan(X)
        n = np.zeros((len(present), self.n_numeric))
        np.add.at(n, group, obs if weights is None else obs * weights[:, None])
        self.n[present] += n
        Z = np.where(obs, X, 0.0)
        if weights is None:
            S, S2 = column_sums(Z, groups=group, n_groups=len(present))
        else:
            sums = [weighted_column_sums(Z[group == g], weights[group == g]) for g in range(len(present))]
            S, S2 = (Exact(np.stack([t[i].m for t in sums]), np.stack([t[i].e for t in sums])) for i in (0, 1))
        self.S[present], self.S2[present] = self.S[present].plus(S), self.S2[present].plus(S2)
        if self.joint:
            complete = obs.all(axis=1)
            order = np.argsort(group, kind="stable")
            bounds = np.searchsorted(group[order], np.arange(len(present) + 1))
            for g, c in enumerate(present):
                rows = order[bounds[g]:bounds[g + 1]]
                Xf = X[rows[complete[rows]]]
                if len(Xf):
                    self.jn[c] += len(Xf)
                    self.jS[c] = self.jS[c].plus(column_sums(Xf, squares=False)[0])
                    self.jP[c] = self.jP[c].plus(cross_products(Xf))

    def _weighable(self, weights) -> None:
        if weights is not None and self.joint:
            raise NbtextError("sample weights other than 1 and -1 are for diagonal (Gaussian NB) and "
                              "categorical statistics, not shared or full covariances")

    def of_frame(self, frame: Frame, labels: Sequence[str] | None = None, weights: np.ndarray | None = None
                 ) -> "TableStats":
        """The statistics of a frame's rows alone, with this model's classes and values (which
        grow by those the frame brings), so that they add column for column. ``weights``: a
        positive weight per row (sample weights; not with joint statistics), else 1."""
        self._weighable(weights)
        idx, ids = self._rows_of(frame, labels)
        k, p, q = len(self.classes), self.n_numeric, self.q
        part = TableStats(len(self.values), p, self.joint)
        part.classes, part.class_count = list(self.classes), np.zeros(k)
        part.values = [list(v) for v in self.values]
        part.cat = [np.zeros(a.shape) for a in self.cat]
        # (q, not p: the joint statistics a diagonal model has none of, so nothing of k p p)
        part.n, part.S, part.S2 = np.zeros((k, p)), Exact.zeros((k, p)), Exact.zeros((k, p))
        part.jn, part.jS, part.jP = np.zeros(k), Exact.zeros((k, q)), Exact.zeros((k, q, q))
        part._count(idx, ids, frame.num, weights)
        return part

    # -- adding -------------------------------------------------------------------------------
    def add(self, frame: Frame, labels: Sequence[str] | None = None, weights: np.ndarray | None = None) -> None:
        """Add a frame's rows in place (each times its weight, when given), in time linear in
        them (beyond room for new classes and values): the statistics of all the rows so far
        are not walked again."""
        self._weighable(weights)
        self._exact()
        idx, ids = self._rows_of(frame, labels)
        self._count(idx, ids, frame.num, weights)
        self.version += 1

    def merge(self, other: "TableStats") -> None:
        """Add another model's statistics (same columns; its values matched by name)."""
        if len(other.values) != len(self.values) or other.n_numeric != self.n_numeric:
            raise NbtextError("the tables' columns differ")
        self._exact()
        other._exact()
        rows = self._class_rows(other.classes)
        self.class_count[rows] += other.class_count
        for j, values in enumerate(other.values):
            ids = self._value_ids(j, values)
            np.add.at(self.cat[j], (rows[:, None], ids[None, :]), other.cat[j])
        self.n[rows] += other.n
        self.S[rows], self.S2[rows] = self.S[rows].plus(other.S), self.S2[rows].plus(other.S2)
        if self.joint and other.joint:
            self.jn[rows] += other.jn
            self.jS[rows], self.jP[rows] = self.jS[rows].plus(other.jS), self.jP[rows].plus(other.jP)
        self.version += 1

    def plus(self, frame: Frame, labels: Sequence[str], weight: float = -1.0) -> "TableStats":
        """New statistics: these with the frame's rows added (weight 1) or taken out (-1),
        exactly. Refused when a count would go below zero (those rows were not learned)."""
        self.check_labels(labels)
        out = self.copy()
        part = out.of_frame(frame, labels)
        if weight > 0:
            out.merge(part)
            return out
        if weight != -1:
            raise NbtextError("table rows are added (weight 1) or taken out (weight -1)")
        out.class_count = out.class_count - part.class_count
        out.cat = [a - b for a, b in zip(out.cat, part.cat)]
        out.n, out.jn = out.n - part.n, out.jn - part.jn
        if any((a < 0).any() for a in [out.class_count, *out.cat, out.n, out.jn]):
            raise NbtextError("that would take counts below zero: those rows were not learned")
        out.S, out.S2 = out.S.plus(part.S, -1), out.S2.plus(part.S2, -1)
        if self.joint:
            out.jS, out.jP = out.jS.plus(part.jS, -1), out.jP.plus(part.jP, -1)
        out.version += 1
        return out

    def copy(self) -> "TableStats":
        self._exact()
        out = TableStats(len(self.values), self.n_numeric, self.joint)
        out.classes, out.class_count = list(self.classes), self.class_count.copy()
        out.values = [list(v) for v in self.values]
        out._ids = [dict(d) for d in self._ids]
        out.cat, out.n_values = [a.copy() for a in self.cat], self.n_values
        out.n, out.S, out.S2 = self.n.copy(), self.S.copy(), self.S2.copy()
        out.jn, out.jS, out.jP = self.jn.copy(), self.jS.copy(), self.jP.copy()
        out.version, out._derived = self.version, self._derived
        return out

    def exact_sums(self) -> dict:
        """The exact sums by name (a model file's and a dump's ``exact`` section)."""
        self._exact()
        out = {"sum": self.S, "sumsq": self.S2}
        if self.joint:
            out.update({"joint_sum": self.jS, "joint_products": self.jP})
        return out

    @classmethod
    def of_arrays(cls, classes, class_count, values, cat, gauss, joint, exact=None, where: str = "model"
                  ) -> "TableStats":
        """Statistics holding these arrays (a model file's or a dump's, already checked): the
        counts, the derived floats as stored, and the exact sums (None: a file written before
        they were kept, whose sums are those its floats stand for; a dict of them; or a function
        that parses them, called when they are first needed, see _exact; ``where`` names the
        file in its errors)."""
        p = gauss[0].shape[1]
        out = cls(len(values), p, joint is not None)
        out.classes, out.class_count = list(classes), np.asarray(class_count, dtype=np.float64)
        out.values = [list(v) for v in values]
        out._ids = [{v: i for i, v in enumerate(vs)} for vs in values]
        out.cat, out.n_values = [np.asarray(a, dtype=np.float64) for a in cat], sum(map(len, values))
        n, mean, m2 = (np.asarray(a, dtype=np.float64) for a in gauss)
        k = len(classes)
        if joint is not None:
            jn, jmean, jm2 = (np.asarray(a, dtype=np.float64) for a in joint)
        else:  # (a diagonal model stores no joint statistics: nothing of p x p per class)
            jn, jmean, jm2 = np.zeros(k), np.zeros((k, 0)), np.zeros((k, 0, 0))
        out.n, out.jn = n, jn
        out.S, out.S2, out.jS, out.jP = Exact.zeros((k, p)), Exact.zeros((k, p)), Exact.zeros(jmean.shape), \
            Exact.zeros(jm2.shape)
        if exact is None or callable(exact):
            out._floats = (mean, m2, jmean, jm2)
            out._pending = (exact, where) if exact is not None else None
        else:
            out.S, out.S2 = exact["sum"], exact["sumsq"]
            if joint is not None:
                out.jS, out.jP = exact["joint_sum"], exact["joint_products"]
        out._derived = (out.version, mean, m2, jmean, jm2)
        return out
