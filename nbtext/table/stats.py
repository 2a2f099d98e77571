"""A table model's state: mergeable statistics, as nbtext.nb.counts.Counts is a text model's.

Per class: its rows. Per categorical column: per class, how many rows hold each value. Per
numeric column: per class, the rows holding a value, their mean and M2 (the sum of squared
deviations from the mean). With shared or per-class covariances also, per class, over the rows
whose every numeric value is present: their number, mean vector and scatter matrix (the sum of
outer products of deviations). Means and M2s are merged exactly by Chan, Golub and LeVeque's
formula (n = na + nb, d = mb - ma, mean = ma + d nb/n, M2 = M2a + M2b + d^2 na nb / n), so
training a chunk at a time, ``learn``, ``merge`` and a cluster's reduce give the statistics of
training in one piece (to rounding); ``plus`` with weight -1 takes rows out by the inverse.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import NbtextError
from .read import Frame

MAX_NUMBERS = 1 << 25  # the numbers a model's statistics may hold (256 MiB; scoring needs a few times it)


def chan(na, ma, m2a, nb, mb, m2b, outer: bool = False):
    """(n, mean, M2) of two parts' statistics together; ``outer``: M2s are scatter matrices.
    (Overflow is not warned of here: TableStats.check_finite refuses it, naming the column.)"""
    with np.errstate(all="ignore"):
        n = na + nb
        f = np.where(n > 0, nb / np.where(n > 0, n, 1), 0.0)
        if outer:
            f = f[:, None]
        d = mb - ma
        mean = ma + d * f
        w = na * (f[:, 0] if outer else f)
        if outer:
            m2 = m2a + m2b + w[:, None, None] * (d[:, :, None] * d[:, None, :])
        else:
            m2 = m2a + m2b + w * d * d
    return n, mean, m2


def unchan(n, mean, m2, nb, mb, m2b, outer: bool = False):
    """(n, mean, M2) of the rest when a part (nb, mb, M2b) is taken out of the whole."""
    na = n - nb
    with np.errstate(invalid="ignore", divide="ignore"):
        safe = np.where(na > 0, na, 1)
        if outer:
            ma = np.where((na > 0)[:, None], (n[:, None] * mean - nb[:, None] * mb) / safe[:, None], 0.0)
        else:
            ma = np.where(na > 0, (n * mean - nb * mb) / safe, 0.0)
        w = np.where(n > 0, na * nb / np.where(n > 0, n, 1), 0.0)
    d = mb - ma
    if outer:
        m2a = m2 - m2b - w[:, None, None] * (d[:, :, None] * d[:, None, :])
    else:
        m2a = m2 - m2b - w * d * d
    return na, ma, m2a


class TableStats:
    """The statistics of a table model (see the module's doc). ``n_categorical`` categorical
    columns, ``n_numeric`` numeric ones; ``joint``: keep the joint (scatter-matrix) statistics
    that shared and per-class covariances need."""

    def __init__(self, n_categorical: int, n_numeric: int, joint: bool, classes: Sequence[str] = ()):
        self.classes: list[str] = []
        self.joint = joint
        self.class_count = np.zeros(0)
        self.values: list[list[str]] = [[] for _ in range(n_categorical)]
        self._ids: list[dict] = [{} for _ in range(n_categorical)]
        self.cat = [np.zeros((0, 0)) for _ in range(n_categorical)]
        p = n_numeric
        q = self.q = p if joint else 0  # the joint statistics' width: p x p per class only when kept
        self.n, self.mean, self.m2 = np.zeros((0, p)), np.zeros((0, p)), np.zeros((0, p))
        self.jn, self.jmean, self.jm2 = np.zeros(0), np.zeros((0, q)), np.zeros((0, q, q))
        self.n_values = 0  # (the categorical columns' values, all together)
        self.version = 0
        if classes:
            self._class_rows(list(classes))

    @property
    def n_numeric(self) -> int:
        return self.n.shape[1]

    @property
    def n_rows(self) -> int:
        return int(round(self.class_count.sum()))

    # -- classes and values ----------------------------------------------------------------
    def _class_rows(self, labels: Sequence[str]) -> np.ndarray:
        new = sorted(set(labels) - set(self.classes))
        if new:
            classes = sorted(self.classes + new)
            self.room(len(classes), self.n_values)
            where = np.asarray([classes.index(c) for c in self.classes], dtype=np.int64)

            def grown(a):
                out = np.zeros((len(classes),) + a.shape[1:])
                out[where] = a
                return out

            self.class_count = grown(self.class_count)
            self.cat = [grown(a) for a in self.cat]
            self.n, self.mean, self.m2 = grown(self.n), grown(self.mean), grown(self.m2)
            self.jn, self.jmean, self.jm2 = grown(self.jn), grown(self.jmean), grown(self.jm2)
            self.classes = classes
        index = {c: i for i, c in enumerate(self.classes)}
        return np.fromiter((index[lab] for lab in labels), dtype=np.int64, count=len(labels))

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
        d = len(values)
        if self.cat[j].shape[1] < d:
            self.n_values += d - self.cat[j].shape[1]
            self.room(len(self.classes), self.n_values)
            a = np.zeros((len(self.classes), d))
            a[:, :self.cat[j].shape[1]] = self.cat[j]
            self.cat[j] = a
        return out

    def room(self, k: int, n_values: int) -> None:
        """Refuse statistics of ``k`` classes and ``n_values`` categorical values that would hold
        more than MAX_NUMBERS numbers, before they are allocated: they are dense (a class by
        every value; with shared or full covariance, p x p a class), and 20,000 numeric columns
        with --covariance full took 23 GB before the kernel killed train; a label column of ids
        asked as much."""
        p, q = self.n_numeric, self.q
        each = n_values + 3 * p + 1 + q + q * q
        if k * each > MAX_NUMBERS:
            raise NbtextError(f"the table's statistics would hold {k * each:,} numbers ({k:,} classes x {each:,}), "
                              f"more than {MAX_NUMBERS:,}: too many classes (is the label column right?), "
                              "distinct values or, with --covariance shared or full, numeric columns (p x p a class)")

    def check_labels(self, labels: Sequence[str], where: str = "") -> None:
        unknown = sorted(set(labels) - set(self.classes))
        if unknown:
            raise NbtextError(f"{where + ': ' if where else ''}unknown label {unknown[0]!r}: the model's "
                              f"classes are {', '.join(self.classes)}")

    def check_finite(self, numeric_columns: list[str]) -> None:
        """Refuse statistics that overflowed (values near 1e154 and beyond square to infinity)."""
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
    def of_frame(self, frame: Frame, labels: Sequence[str] | None = None) -> "TableStats":
        """The statistics of a frame's rows alone, with this model's classes and values (which
        grow by those the frame brings), so that they add column for column."""
        labels = frame.labels if labels is None else labels
        idx = self._class_rows(labels)
        k, p = len(self.classes), self.n_numeric
        part = TableStats(len(self.values), p, self.joint)
        part.classes = list(self.classes)
        part.class_count = np.bincount(idx, minlength=k).astype(np.float64)
        for j, cells in enumerate(frame.cat):
            ids = self._value_ids(j, cells)
            d = len(self.values[j])
            ok = ids >= 0
            part.cat[j] = np.bincount(idx[ok] * d + ids[ok], minlength=k * d).astype(np.float64).reshape(k, d)
            part.values[j] = list(self.values[j])
        part.n, part.mean, part.m2 = np.zeros((k, p)), np.zeros((k, p)), np.zeros((k, p))
        q = self.q  # (a diagonal model allocated k p p floats a chunk: 144 MB at 3,000 columns)
        part.jn, part.jmean, part.jm2 = np.zeros(k), np.zeros((k, q)), np.zeros((k, q, q))
        if p:
            return self._numeric_part(part, idx, frame.num)
        return part

    def _numeric_part(self, part: "TableStats", idx: np.ndarray, X: np.ndarray) -> "TableStats":
        with np.errstate(over="ignore", invalid="ignore"):  # (overflow is refused by check_finite)
            obs = ~np.isnan(X)
            complete = obs.all(axis=1)
            for c in np.unique(idx):
                rows = idx == c
                Xc, oc = X[rows], obs[rows]
                n = oc.sum(axis=0).astype(np.float64)
                Z = np.where(oc, Xc, 0.0)
                mean = np.where(n > 0, Z.sum(axis=0) / np.where(n > 0, n, 1), 0.0)
                D = np.where(oc, Xc - mean, 0.0)
                part.n[c], part.mean[c], part.m2[c] = n, mean, (D * D).sum(axis=0)
                if self.joint:
                    Xf = Xc[complete[rows]]
                    if len(Xf):
                        m = Xf.mean(axis=0)
                        D = Xf - m
                        part.jn[c], part.jmean[c], part.jm2[c] = len(Xf), m, D.T @ D
        return part

    # -- adding -------------------------------------------------------------------------------
    def add(self, frame: Frame, labels: Sequence[str] | None = None) -> None:
        """Add a frame's rows in place."""
        self.merge(self.of_frame(frame, labels))

    def merge(self, other: "TableStats") -> None:
        """Add another model's statistics (same columns; its values matched by name)."""
        if len(other.values) != len(self.values) or other.n_numeric != self.n_numeric:
            raise NbtextError("the tables' columns differ")
        rows = self._class_rows(other.classes)
        self.class_count[rows] += other.class_count
        for j, values in enumerate(other.values):
            ids = self._value_ids(j, values)
            np.add.at(self.cat[j], (rows[:, None], ids[None, :]), other.cat[j])
        self.n[rows], self.mean[rows], self.m2[rows] = chan(
            self.n[rows], self.mean[rows], self.m2[rows], other.n, other.mean, other.m2)
        if self.joint and other.joint:
            self.jn[rows], self.jmean[rows], self.jm2[rows] = chan(
                self.jn[rows], self.jmean[rows], self.jm2[rows], other.jn, other.jmean, other.jm2, outer=True)
        self.version += 1

    def plus(self, frame: Frame, labels: Sequence[str], weight: float = -1.0) -> "TableStats":
        """New statistics: these with the frame's rows added (weight 1) or taken out (-1).
        Refused when a count would go below zero (those rows were not learned)."""
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
        if any((a < 0).any() for a in [out.class_count, *out.cat]) or (out.n - part.n < 0).any():
            raise NbtextError("that would take counts below zero: those rows were not learned")
        out.n, out.mean, out.m2 = unchan(out.n, out.mean, out.m2, part.n, part.mean, part.m2)
        out.m2 = np.maximum(out.m2, 0.0)
        if self.joint:
            out.jn, out.jmean, out.jm2 = unchan(out.jn, out.jmean, out.jm2, part.jn, part.jmean, part.jm2,
                                                outer=True)
        out.version += 1
        return out

    def copy(self) -> "TableStats":
        out = TableStats(len(self.values), self.n_numeric, self.joint)
        out.classes, out.class_count = list(self.classes), self.class_count.copy()
        out.values = [list(v) for v in self.values]
        out._ids = [dict(d) for d in self._ids]
        out.cat, out.n_values = [a.copy() for a in self.cat], self.n_values
        out.n, out.mean, out.m2 = self.n.copy(), self.mean.copy(), self.m2.copy()
        out.jn, out.jmean, out.jm2 = self.jn.copy(), self.jmean.copy(), self.jm2.copy()
        return out

    @classmethod
    def of_arrays(cls, classes, class_count, values, cat, gauss, joint) -> "TableStats":
        """Statistics holding these arrays (a model file's or a dump's, already checked)."""
        p = gauss[0].shape[1]
        out = cls(len(values), p, joint is not None)
        out.classes, out.class_count = list(classes), np.asarray(class_count, dtype=np.float64)
        out.values = [list(v) for v in values]
        out._ids = [{v: i for i, v in enumerate(vs)} for vs in values]
        out.cat, out.n_values = [np.asarray(a, dtype=np.float64) for a in cat], sum(map(len, values))
        out.n, out.mean, out.m2 = (np.asarray(a, dtype=np.float64) for a in gauss)
        k = len(classes)
        if joint is not None:
            out.jn, out.jmean, out.jm2 = (np.asarray(a, dtype=np.float64) for a in joint)
        else:  # (p x p per class for a diagonal model: a 5 MB file of 100,000 columns asked 149 GiB)
            out.jn, out.jmean, out.jm2 = np.zeros(k), np.zeros((k, 0)), np.zeros((k, 0, 0))
        return out
