"""Exact sums of float64 values, their squares and their products, whatever the grouping.

A finite float64 is M * 2**(x - 53) with M a whole number below 2**53 (numpy.frexp). A sum of
such numbers is a dyadic rational, kept here exactly as a Python integer and a binary exponent
(``Exact``: arrays of mantissas, object dtype, and of exponents). Adding exact sums is exact
and associative, so statistics summed a chunk at a time, in a different grouping, by learn
then forget (subtraction is exact too), by merge or on a cluster's workers are the same number,
bit for bit; the floats a model uses (mean, M2, a scatter matrix) are derived from them once,
correctly rounded (``divided``: Python's integer true division rounds correctly).

Vectorised: for sums and squares each value's M is cut into limbs (27 bits for sums, 18 bits
for squares, whose limb products are below 2**37), and numpy.bincount sums the limbs per column
and binary exponent in float64, exactly, since no partial sum of a block of BLOCK rows reaches
2**53; Python integers join the few (column, exponent) bins left. Cross products: see
cross_products (one float64 matrix product of limbs per block of rows).
"""
from __future__ import annotations

import re

import numpy as np

BLOCK = 1 << 14            # rows summed by one bincount: 3 * 2**37 * 2**14 < 2**53
LIMB, MASK = 18, (1 << 18) - 1
HALF, HALF_MASK = 27, (1 << 27) - 1
ELEMENTS = 1 << 18         # values of a block of rows cut into limbs at once, for cross products


class Exact:
    """An array of exact dyadic numbers m * 2**e (m: Python ints in an object array)."""

    def __init__(self, m: np.ndarray, e: np.ndarray):
        self.m, self.e = m, e

    @classmethod
    def zeros(cls, shape) -> "Exact":
        m = np.empty(shape, dtype=object)
        m.fill(0)
        return cls(m, np.zeros(shape, dtype=np.int64))

    @property
    def shape(self) -> tuple:
        return self.m.shape

    def __getitem__(self, idx) -> "Exact":
        return Exact(self.m[idx], self.e[idx])

    def __setitem__(self, idx, value: "Exact") -> None:
        self.m[idx], self.e[idx] = value.m, value.e

    def copy(self) -> "Exact":
        return Exact(self.m.copy(), self.e.copy())

    def plus(self, other: "Exact", sign: int = 1) -> "Exact":
        """self + sign * other, exactly (elementwise)."""
        e = np.minimum(self.e, other.e)
        a = self.m << (self.e - e)
        b = other.m << (other.e - e)
        return Exact(a + b if sign > 0 else a - b, e)

    def times(self, other: "Exact") -> "Exact":
        return Exact(self.m * other.m, self.e + other.e)

    def scaled(self, n: np.ndarray) -> "Exact":
        """self * n (n: whole numbers, as floats or ints)."""
        return Exact(self.m * _ints(n), self.e.copy())

    def grown(self, shape, where) -> "Exact":
        """A larger array of zeros holding these at rows ``where``."""
        out = Exact.zeros(shape)
        out.m[where], out.e[where] = self.m, self.e
        return out

    def strings(self) -> list[str]:
        """Each number as text, normalised (odd mantissa, or 0): '-0x1bp-4' is -27/16."""
        return [_text(int(m), int(e)) for m, e in zip(self.m.reshape(-1).tolist(), self.e.reshape(-1).tolist())]

    @classmethod
    def of_strings(cls, values: list, shape) -> "Exact":
        """The numbers of strings(): ValueError for anything else, or for sizes beyond what
        sums of float64 squares can be (so that a file cannot ask for huge integers)."""
        m, e = np.empty(len(values), dtype=object), np.zeros(len(values), dtype=np.int64)
        for i, s in enumerate(values):
            if not isinstance(s, str):
                raise ValueError("exact sums must be strings")
            if s == "0":
                m[i] = 0
                continue
            g = _PATTERN.fullmatch(s)
            if not g or not -MAX_EXP <= (x := int(g.group(3))) <= MAX_EXP:
                raise ValueError(f"not an exact sum: {s[:40]!r}")
            m[i] = int(g.group(2), 16) * (-1 if g.group(1) else 1)
            e[i] = x
        return cls(m.reshape(shape), e.reshape(shape))

    @classmethod
    def of_floats(cls, a: np.ndarray) -> "Exact":
        """Floats as exact numbers."""
        a = np.asarray(a, dtype=np.float64)
        mant, x = np.frexp(a)
        M = np.ldexp(mant, 53).astype(np.int64)
        return cls(_ints(M), (x - 53).astype(np.int64))

    def divided(self, n: np.ndarray) -> np.ndarray:
        """self / n as float64, correctly rounded (n = 0: 0; beyond float64: +-inf)."""
        out = np.zeros(self.shape)
        flat, ms, es = out.reshape(-1), self.m.reshape(-1).tolist(), self.e.reshape(-1).tolist()
        ns = np.broadcast_to(np.asarray(n, dtype=np.float64), self.shape).reshape(-1).tolist()
        for i, (m, e, d) in enumerate(zip(ms, es, ns)):
            if m and d:
                flat[i] = _divide(m, e, int(d))
        return out


MAX_HEX, MAX_EXP = 1200, 2400  # (sums of squares of float64 over 2**64 rows: under 4,300 bits, 2**+-2,200)
# (bounded runs: a file's string of a million digits is no match, never a huge integer to parse)
_PATTERN = re.compile(rf"(-?)0x([0-9a-f]{{1,{MAX_HEX}}})p(-?[0-9]{{1,{len(str(MAX_EXP))}}})")


def _text(m: int, e: int) -> str:
    if m == 0:
        return "0"
    tz = (m & -m).bit_length() - 1
    return f"{'-' if m < 0 else ''}0x{abs(m) >> tz:x}p{e + tz}"


def _divide(m: int, e: int, d: int) -> float:
    try:
        return (m << e) / d if e >= 0 else m / (d << -e)
    except OverflowError:
        return float("inf") if (m > 0) == (d > 0) else float("-inf")


def _ints(a) -> np.ndarray:
    out = np.empty(np.shape(a), dtype=object)
    out.reshape(-1)[:] = [int(x) for x in np.asarray(a).reshape(-1).tolist()]
    return out


def _split(Z: np.ndarray):
    """(M, x): Z = M * 2**(x - 53), M whole (int64), x the binary exponent (0 where Z is 0)."""
    mant, x = np.frexp(Z)
    return np.ldexp(mant, 53).astype(np.int64), x.astype(np.int64)


def _limbs(A: np.ndarray):
    """|M| < 2**53 as three 18-bit limbs (high, middle, low)."""
    return (A >> (2 * LIMB)).astype(np.float64), ((A >> LIMB) & MASK).astype(np.float64), (A & MASK).astype(np.float64)


def _products(a1, b1, c1, a2, b2, c2, sign):
    """The five limb positions (low first) of the products of two numbers' limbs, signed."""
    return [sign * c1 * c2, sign * (b1 * c2 + c1 * b2), sign * (a1 * c2 + b1 * b2 + c1 * a2),
            sign * (a1 * b2 + b1 * a2), sign * a1 * a2]


def _joined(cells: int, R: int, key: np.ndarray, pieces: list, step: int, base: int, scale: int):
    """Per cell, the exact sum of the bins' pieces: pieces[t] weighs 2**(step * t), bin b of a
    cell at exponent base + scale * b. Returns (mantissas, the common exponent)."""
    if cells * R <= 4 * len(key) + 4096:
        bins = None
        sums = [np.bincount(key, weights=w, minlength=cells * R) for w in pieces]
    else:  # (many cells, few of them used: a bin for each key present, not for every one possible)
        bins, where = np.unique(key, return_inverse=True)
        sums = [np.bincount(where, weights=w, minlength=len(bins)) for w in pieces]
    out = np.zeros(cells, dtype=np.int64).astype(object)
    nz = np.flatnonzero(np.any([s != 0 for s in sums], axis=0))
    if len(nz):
        digits = [s[nz].astype(np.int64).astype(object) for s in sums]  # (each below 2**53: exact)
        v = digits[-1]
        for d in digits[-2::-1]:
            v = (v << step) + d
        at = nz if bins is None else bins[nz]
        v = v << (scale * (at % R))
        cols = at // R  # (ascending: the bins of a cell are neighbours)
        first = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
        out[cols[first]] = np.add.reduceat(v, first)
    return out, base


def column_sums(Z: np.ndarray, squares: bool = True, groups: np.ndarray | None = None, n_groups: int = 1
                ) -> tuple[Exact, Exact]:
    """Each column's exact sum and sum of squares (Z: rows x columns; a missing value as 0;
    ``squares`` False: the sums alone, the squares left 0); with ``groups`` (each row's group,
    0 .. n_groups - 1), each group's: (n_groups, columns), in one pass whatever the groups."""
    n, p = Z.shape
    cells = p * (1 if groups is None else n_groups)
    total, sq = Exact.zeros(cells), Exact.zeros(cells)
    for s in range(0, n, BLOCK):
        M, x = _split(Z[s:s + BLOCK])
        nz = M != 0
        if not nz.any():
            continue
        lo, hi = int(x[nz].min()), int(x[nz].max())
        R = hi - lo + 1
        cell = np.arange(p)[None, :] if groups is None else groups[s:s + BLOCK, None] * p + np.arange(p)[None, :]
        key = (cell * R + np.where(nz, x - lo, 0)).reshape(-1)
        Mf = M.reshape(-1)
        sm, se = _joined(cells, R, key, [(Mf & HALF_MASK).astype(np.float64), (Mf >> HALF).astype(np.float64)],
                         HALF, lo - 53, 1)
        total = total.plus(Exact(sm, np.full(cells, se, dtype=np.int64)))
        if squares:
            a, b, c = _limbs(np.abs(Mf))
            qm, qe = _joined(cells, R, key, _products(a, b, c, a, b, c, 1.0), LIMB, 2 * (lo - 53), 2)
            sq = sq.plus(Exact(qm, np.full(cells, qe, dtype=np.int64)))
    if groups is None:
        return total, sq
    return (Exact(total.m.reshape(n_groups, p), total.e.reshape(n_groups, p)),
            Exact(sq.m.reshape(n_groups, p), sq.e.reshape(n_groups, p)))


def cross_products(X: np.ndarray) -> Exact:
    """The exact p x p matrix of sums of products X[:, i] * X[:, j] (X: complete rows). Per
    block of rows, each column's values as whole numbers over the column's smallest binary
    exponent in the block, cut into 18-bit limbs (as many as its exponents' spread needs): the
    limbs' Gram matrix by one float64 matrix product is exact (each limb product below 2**36,
    every partial sum a whole number below 2**53, in any order of summation), and Python
    integers join each pair of columns' limb pairs."""
    n, p = X.shape
    total = Exact.zeros((p, p))
    rows = max(64, min(BLOCK, ELEMENTS // max(p, 1)))
    for s in range(0, n, rows):
        M, x = _split(X[s:s + rows])
        nz = M != 0
        if not nz.any():
            continue
        some = nz.any(axis=0)
        lo = np.where(some, np.where(nz, x, np.iinfo(np.int64).max).min(axis=0), 0)
        hi = np.where(some, np.where(nz, x, np.iinfo(np.int64).min).max(axis=0), 0)
        limbs = (hi - lo + 53 + LIMB - 1) // LIMB
        A, sign = np.abs(M), np.sign(M).astype(np.float64)
        up = np.where(nz, x - lo, 0)  # (how far each value's bits sit above its column's lowest)
        k = np.arange(int(limbs.max()))
        sh = LIMB * k[None, None, :] - up[:, :, None]  # (limb k of a value: bits sh .. sh + 17 of |M|)
        Ab = A.astype(np.uint64)[:, :, None]  # (unsigned: bits shifted out to the left are dropped, defined)
        right = (Ab >> np.clip(sh, 0, 63).astype(np.uint64)) & np.uint64(MASK)
        left = np.where(sh > -LIMB, (Ab << np.clip(-sh, 0, LIMB - 1).astype(np.uint64)) & np.uint64(MASK), 0)
        keep = k[None, :] < limbs[:, None]
        G = (np.where(sh >= 0, right, left).astype(np.float64) * sign[:, :, None])[:, keep]
        weights = [1 << (LIMB * int(i)) for i in np.broadcast_to(k, keep.shape)[keep]]
        gram = (G.T @ G).astype(np.int64).astype(object)
        w = np.empty(len(weights), dtype=object)
        w[:] = weights
        starts = np.r_[0, np.cumsum(limbs)[:-1]]
        joined = np.add.reduceat(np.add.reduceat(gram * w[:, None] * w[None, :], starts, axis=0), starts, axis=1)
        total = total.plus(Exact(joined, (lo - 53)[:, None] + (lo - 53)[None, :]))
    return total
