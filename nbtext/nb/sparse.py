"""Counts held by token, only where they are not zero: the state of a model of many classes.

On real text nearly every token occurs in one or two classes, so a token x class array is
nearly all zeros once there are more than a few classes (docs/state.md). ``TokenSums`` holds a
token's nonzero classes and their sums in CSR arrays (``indptr`` per token; ``classes`` and
``values`` per nonzero), in token order and, within a token, class order, with no stored
zero: equal counts are equal arrays, however they were added up.

Sums are appended as they come (a chunk's, a fold's, another model's) and folded in together
once the appended entries reach half of those held (``MERGE_SHARE``): a stable sort of the held
entries (one sorted run) and the new ones, and one addition per repeated (token, class). So a
chunk costs its own entries, and the held arrays are rewritten a bounded number of times per
doubling. Entries of one (token, class) are added in the order they came, the held sum first.

``product`` is a matrix of documents (nbtext's Rows) times such arrays, with numpy alone (no
scipy.sparse import on train's or predict's way: features.rows says why).
"""
from __future__ import annotations

import numpy as np

from ..features.rows import distinct, ranges

MERGE_SHARE = 2  # appended entries are folded in once they reach 1/MERGE_SHARE of those held
MIN_MERGE = 1 << 18  # ...and at least this many (small models: one sort now and then)
# What a dense view of many tokens' sums or weights is made of at once (classes x tokens
# entries: 64 MiB of float64), so that no classes x vocabulary array is ever made whole.
DENSE_BLOCK = 1 << 23
# The entries a per-entry formula is made of at once, about (TokenSums.pieces): a temporary of
# 64 KiB, under glibc's first mapping threshold (128 KiB), so that it reuses freed memory.
PIECE = 1 << 13


def block_tokens(k: int) -> int:
    """The tokens of a DENSE_BLOCK of k classes."""
    return max(1, DENSE_BLOCK // max(k, 1))


def class_dtype(k: int):
    """The smallest type that numbers k classes."""
    return np.uint8 if k <= 1 << 8 else np.uint16 if k <= 1 << 16 else np.int32


class TokenSums:
    """Per token, its nonzero classes and their sums (see the module's docstring)."""

    def __init__(self, width: int = 0, k: int = 0):
        self.k = k
        self._width = width  # (indptr is made this long when next settled: growth costs nothing till then)
        self.indptr = np.zeros(width + 1, dtype=np.int64)
        self.classes = np.zeros(0, dtype=class_dtype(k))
        self.values = np.zeros(0)
        self._pending: list = []  # (tokens, classes, values float64), in the order added
        self._pending_n = 0
        self._folded = True  # (the held arrays are a fold's output: each token's classes increasing, no zero)

    @classmethod
    def of_csr(cls, indptr, classes, values, k: int, folded: bool = False) -> "TokenSums":
        """Arrays already in order (each token's classes sorted and distinct, no zero); ``folded``:
        known to be so (a fold's output, or taken whole from one), else settle checks each token it
        copies."""
        s = cls(len(indptr) - 1, k)
        s.indptr = np.asarray(indptr, dtype=np.int64)
        s.classes = np.asarray(classes).astype(class_dtype(k), copy=False)
        s.values = np.asarray(values, dtype=np.float64)
        s._folded = folded
        return s

    @classmethod
    def of_dense(cls, token_major: np.ndarray) -> "TokenSums":
        """The nonzeros of a tokens x classes array."""
        t, c = np.nonzero(token_major)
        s = cls(token_major.shape[0], token_major.shape[1])
        s.indptr[1:] = np.cumsum(np.bincount(t, minlength=token_major.shape[0]))
        s.classes = c.astype(class_dtype(s.k))
        s.values = np.asarray(token_major[t, c], dtype=np.float64)
        return s

    @property
    def width(self) -> int:
        return self._width

    @property
    def nnz(self) -> int:
        """The entries held (with those appended and not folded in yet)."""
        return len(self.values) + self._pending_n

    def nbytes(self) -> int:
        return self.indptr.nbytes + self.classes.nbytes + self.values.nbytes + sum(
            sum(a.nbytes for a in p) for p in self._pending)

    def fold_bytes(self) -> int:
        """The bytes the next fold (settle) writes while these are held: an entry for each held
        and appended one, and a start a token."""
        return (len(self.values) + self._pending_n) * (np.dtype(class_dtype(self.k)).itemsize + 8) + \
            8 * (self._width + 1)

    def grow(self, width: int) -> None:
        """Room for tokens up to ``width`` (new tokens have no counts)."""
        self._width = max(self._width, width)

    def renumber_classes(self, where: np.ndarray, k: int) -> None:
        """Class i becomes class where[i] of k (classes added at their sorted places: the order
        within a token is kept)."""
        where = np.asarray(where, dtype=np.int64)
        self._folded = self._folded and bool((where[1:] > where[:-1]).all())
        self.classes = where[self.classes].astype(class_dtype(k))
        self._pending = [(t, where[c], v) for t, c, v in self._pending]
        self.k = k

    def append(self, tokens: np.ndarray, classes: np.ndarray, values: np.ndarray) -> None:
        """Add values at (token, class) pairs (repeats allowed: they add up)."""
        keep = values != 0
        if not keep.all():
            tokens, classes, values = tokens[keep], classes[keep], values[keep]
        if not len(values):
            return
        # (held in the least types that hold them: the appended entries are half of what is held
        # at most, and on train's peak with it)
        tokens = np.asarray(tokens)
        small = len(tokens) and tokens.min() >= 0 and tokens.max() < 2**31
        self._pending.append((tokens.astype(np.int32 if small else np.int64, copy=False),
                              np.asarray(classes).astype(class_dtype(self.k), copy=False),
                              np.asarray(values, dtype=np.float64)))
        self._pending_n += len(values)
        if self._pending_n >= max(MIN_MERGE, len(self.values) // MERGE_SHARE):
            self.settle()

    def append_dense(self, ids: np.ndarray | None, class_rows: np.ndarray, sums: np.ndarray) -> None:
        """Add a tokens x classes array of sums: row j at token ids[j] (None: at token j), column
        i at class class_rows[i]."""
        r, c = np.nonzero(sums)
        tokens = r if ids is None else np.asarray(ids, dtype=np.int64)[r]
        self.append(tokens, np.asarray(class_rows, dtype=np.int64)[c], np.asarray(sums[r, c], dtype=np.float64))

    def settle(self) -> None:
        """Fold the appended entries in (see the module's docstring)."""
        if not self._pending:
            if len(self.indptr) - 1 < self._width:
                self.indptr = np.concatenate([self.indptr, np.full(self._width + 1 - len(self.indptr),
                                                                   self.indptr[-1])])
            return
        width = max(self._width, int(max(t.max() for t, *_ in self._pending)) + 1)
        if self._settled_by_kernel(width):
            return
        k = max(self.k, 1)
        held_tokens = np.repeat(np.arange(len(self.indptr) - 1, dtype=np.int64), np.diff(self.indptr))
        keys = np.concatenate([held_tokens * k + self.classes] + [t.astype(np.int64) * k + c for t, c, _ in self._pending])
        values = np.concatenate([self.values] + [v for *_, v in self._pending])
        del held_tokens
        self._width = width
        self._pending, self._pending_n = [], 0
        order = np.argsort(keys, kind="stable")
        keys, values = keys[order], values[order]
        del order
        new = np.empty(len(keys), dtype=bool)
        new[:1] = True
        np.not_equal(keys[1:], keys[:-1], out=new[1:])
        # (bincount adds each key's values one by one, in the order they came, from 0: as a
        # dense array's += and Rows.group_sums add them, to the bit; reduceat adds in pairs)
        cell = np.cumsum(new) - 1
        sums = np.bincount(cell, weights=values, minlength=int(cell[-1]) + 1 if len(cell) else 0)
        del cell
        keys = keys[new]
        keep = sums != 0
        keys, sums = keys[keep], sums[keep]
        tokens = keys // k
        self.classes = (keys - tokens * k).astype(class_dtype(self.k))
        self.values = sums
        self.indptr = np.zeros(width + 1, dtype=np.int64)
        np.cumsum(np.bincount(tokens, minlength=width), out=self.indptr[1:])
        self._folded = True

    def _settled_by_kernel(self, width: int) -> bool:
        """settle() by the compiled kernel (nbtext/_c/sums.c: a counting sort by token, no sort of
        what is held), into arrays of the new width: the same arrays, bit for bit. False, with
        nothing changed, without the kernel."""
        from ..features.kernel import compiled

        kernel = compiled()
        if kernel is None:
            return False
        dtype = class_dtype(self.k)
        indptr = np.empty(width + 1, dtype=np.int64)
        classes, values = rooms(kernel, len(self.values) + self._pending_n, dtype)
        n = kernel.settle_sums(np.ascontiguousarray(self.indptr, dtype=np.int64),
                               np.ascontiguousarray(self.classes, dtype=dtype),
                               np.ascontiguousarray(self.values, dtype=np.float64),
                               [tuple(np.ascontiguousarray(a) for a in part) for part in self._pending],
                               max(self.k, 1), indptr, classes, values, self._folded)
        if n < 0:
            raise ValueError("TokenSums: a class or token out of range")
        classes, values = cut(classes, n, dtype), cut(values, n, np.float64)
        self.indptr, self.classes, self.values, self._width = indptr, classes, values, width
        self._pending, self._pending_n, self._folded = [], 0, True
        return True

    # -- reading (settled first) ------------------------------------------------------------
    def token_of_entries(self) -> np.ndarray:
        self.settle()
        return np.repeat(np.arange(self.width, dtype=np.int64), np.diff(self.indptr))

    def pieces(self):
        """(entries, their tokens, their classes as intp) of consecutive tokens about PIECE
        entries at a time: for per-entry formulas made a piece at a time, whose temporaries stay
        within a cache and below the allocator's mapping threshold (a whole model's are new
        pages for every entry, faulted in and zeroed)."""
        self.settle()
        starts = np.searchsorted(self.indptr, np.arange(0, self.nnz, PIECE), side="right") - 1
        cuts = distinct(np.concatenate([[0], starts[starts < self.width], [self.width]]))
        for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
            at = slice(int(self.indptr[lo]), int(self.indptr[hi]))
            tok = np.repeat(np.arange(lo, hi), np.diff(self.indptr[lo:hi + 1]))
            yield at, tok, self.classes[at].astype(np.intp)

    def token_totals(self) -> np.ndarray:
        """Per token, its sum over the classes (added in class order)."""
        self.settle()  # (first: settling widens the sums to the tokens appended past their width)
        out = np.zeros(self.width)
        for at, tok, _ in self.pieces():
            if len(tok):
                out[tok[0]:tok[-1] + 1] = np.bincount(tok - tok[0], weights=self.values[at])
        return out

    def class_totals(self) -> np.ndarray:
        """Per class, its sum over the tokens (added in token order)."""
        self.settle()
        return np.bincount(self.classes, weights=self.values, minlength=self.k).astype(np.float64)

    def dense(self) -> np.ndarray:
        """tokens x classes, C order."""
        self.settle()
        out = np.zeros((self.width, self.k))
        out[self.token_of_entries(), self.classes.astype(np.int64)] = self.values
        return out

    def class_blocks(self):
        """The sums as classes x tokens arrays (C order) of successive tokens, a DENSE_BLOCK at
        a time."""
        step = block_tokens(self.k)
        for start in range(0, self.width, step):
            yield np.ascontiguousarray(self.take(np.arange(start, min(start + step, self.width))).dense().T)

    def take(self, keep: np.ndarray) -> "TokenSums":
        """The tokens ``keep`` (ids, in that order), renumbered 0, 1, ..."""
        self.settle()
        keep = np.asarray(keep, dtype=np.int64)
        lengths = self.indptr[keep + 1] - self.indptr[keep]
        at = ranges(self.indptr[keep], lengths)
        indptr = np.zeros(len(keep) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        return TokenSums.of_csr(indptr, self.classes[at], self.values[at], self.k, folded=self._folded)

    def with_values(self, values: np.ndarray) -> "TokenSums":
        """The same entries with other values (zeros among them dropped)."""
        self.settle()
        out = TokenSums.of_csr(self.indptr, self.classes, values, self.k)
        if (values == 0).any():
            keep = values != 0
            lengths = np.bincount(self.token_of_entries()[keep], minlength=self.width)
            out = TokenSums.of_csr(np.concatenate([[0], np.cumsum(lengths)]), self.classes[keep], values[keep],
                                   self.k)
        out._width = self._width
        return out

    def copy(self) -> "TokenSums":
        self.settle()
        return TokenSums.of_csr(self.indptr.copy(), self.classes.copy(), self.values.copy(), self.k,
                                folded=self._folded)

    def __eq__(self, other) -> bool:
        if not isinstance(other, TokenSums):
            return NotImplemented
        self.settle()
        other.settle()
        return (self.k == other.k and np.array_equal(self.indptr, other.indptr)
                and np.array_equal(self.classes, other.classes) and np.array_equal(self.values, other.values))

    def arrays(self) -> tuple:
        self.settle()
        return self.indptr, self.classes, self.values


def scipy_matrix(s: TokenSums):
    """The tokens x k matrix of ``s`` as scipy.sparse's CSR (imported here: only models of three
    classes or more come here), for product() without the kernel. Made once by whoever scores
    many chunks: scipy makes its own copy of the column numbers and starts in its index type,
    which per chunk was most of predict's time on a large model."""
    import scipy.sparse as sp

    indptr, classes, values = s.arrays()
    return sp.csr_matrix((values, classes, indptr), shape=(len(indptr) - 1, s.k))


def product(X, s: TokenSums, matrix=None) -> np.ndarray:
    """X (Rows, documents x tokens) times the tokens x k matrix ``s`` (at least X's tokens):
    documents x k. By the compiled kernel (nbtext/_c/sums.c: straight into the dense result),
    else by scipy.sparse's product of ``matrix`` (scipy_matrix(s), made when not given): the
    same additions in the same order, so the same bits."""
    from ..features.kernel import compiled

    n, width = X.shape
    if width > s.width:
        raise ValueError(f"product: {width} columns against {s.width} tokens")
    data = np.ascontiguousarray(X.data, dtype=np.float64)
    kernel = compiled()
    if kernel is not None:
        out = np.zeros((n, s.k))
        indptr, classes, values = s.arrays()
        if kernel.sums_product(data, np.ascontiguousarray(X.indices), np.ascontiguousarray(X.indptr, dtype=np.int64),
                               indptr, classes, values, out):
            return out
        raise ValueError("product: a column, token start or class out of range")
    import scipy.sparse as sp

    matrix = scipy_matrix(s) if matrix is None else matrix
    Xs = sp.csr_matrix((data, X.indices, X.indptr), shape=(n, matrix.shape[0]))
    return np.asarray((Xs @ matrix).toarray())


def group_sums(X, group: np.ndarray, k: int, weights: np.ndarray | None = None) -> tuple:
    """Rows.group_sums of k groups held by token (TokenSums of X's columns x k), and each
    column's documents (nonzero entries; with weights, their rows' weights): the sums a chunk
    of many classes adds, without a columns x k array."""
    if weights is None:
        summed = _token_sums_by_kernel(X, group, k)
        if summed is not None:
            return summed
    lengths = np.diff(X.indptr)
    values = np.asarray(X.data, dtype=np.float64)
    nonzero = X.data != 0
    if weights is None:  # (train's workers, a chunk each: each entry's class repeated from its
        # row's in the classes' own type, no row number an entry; every entry counted)
        classes = np.repeat(np.asarray(group).astype(class_dtype(k)), lengths)
        df = np.bincount(X.indices if nonzero.all() else X.indices[nonzero], minlength=X.shape[1])
    else:
        rows = np.repeat(np.arange(X.shape[0], dtype=np.int64), lengths)
        row_weights = np.asarray(weights, dtype=np.float64)[rows]
        values = values * row_weights
        classes = np.asarray(group, dtype=np.int64)[rows]
        df = np.bincount(X.indices[nonzero], minlength=X.shape[1], weights=row_weights[nonzero])
    sums = TokenSums(X.shape[1], k)
    sums.append(np.asarray(X.indices, dtype=np.int64), classes, values)
    sums.settle()
    return sums, df


def _token_sums_by_kernel(X, group: np.ndarray, k: int) -> tuple | None:
    """group_sums without weights by the compiled kernel (nbtext/_c/rows.c token_sums: the rows
    visited class by class, so a token's entries of one class meet as they are placed, and no
    fold by class follows): the same arrays, bit for bit. None without the kernel, or past the
    sizes it takes (2**31 columns, 2**32 entries)."""
    from ..features.kernel import compiled

    kernel = compiled()
    width, nnz = X.shape[1], len(X.data)
    if kernel is None or width >= 2**31 or nnz >= 2**32:
        return None
    indptr, df = np.empty(width + 1, dtype=np.int64), np.zeros(width, dtype=np.int64)
    classes, values = rooms(kernel, nnz, class_dtype(k))
    rows = (np.ascontiguousarray(X.data, dtype=np.float64), np.ascontiguousarray(X.indices, dtype=np.int32),
            np.ascontiguousarray(X.indptr, dtype=np.int64))
    n = kernel.token_sums(*rows, np.ascontiguousarray(group, dtype=np.int64), max(k, 1), indptr, classes, values, df)
    if n < 0:
        raise ValueError("group_sums: a column or group out of range")
    classes, values = cut(classes, n, class_dtype(k)), cut(values, n, np.float64)
    return TokenSums.of_csr(indptr, classes, values, k, folded=True), df


def rooms(kernel, total: int, dtype) -> tuple:
    """Room for ``total`` entries' classes (``dtype``) and values, which a kernel writes and
    cut() then cuts to the entries written: the kernel's Blocks (nbtext/_c/block.h), cut in place,
    so that the fold never holds a second buffer of them (ndarray.resize: block.h says why not)."""
    return kernel.Block(total * np.dtype(dtype).itemsize), kernel.Block(total * 8)


def cut(block, n: int, dtype) -> np.ndarray:
    """The first n entries (``dtype``) of a Block of rooms(), which is cut to them in place."""
    size = np.dtype(dtype).itemsize
    block.shrink(n * size)
    return np.frombuffer(block, dtype=dtype) if n else np.zeros(0, dtype=dtype)
