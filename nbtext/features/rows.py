"""Document-by-term matrices as CSR arrays, with numpy alone.

Train, predict and learn hold their counts in ``Rows`` rather than scipy.sparse.csr_matrix:
importing scipy.sparse adds to train's peak memory and to every start (docs/floor.md),
for the handful of operations below. The estimators take either kind (and
dense arrays); scipy is imported only where a caller hands us its matrices or asks for them
back (cv's whole-corpus matrix, ``tocsr``).

Each operation adds in the order scipy's does (row by row, entries in order), so the counts a
model stores are scipy's to the last bit. Scores (a matrix times dense weights) can differ from
scipy's in the last bit.
"""
from __future__ import annotations

import numpy as np


def ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of arange(s, s + n) for each (s, n)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    shift = np.repeat(np.asarray(starts, dtype=np.int64) - (np.cumsum(lengths) - lengths), lengths)
    return shift + np.arange(int(lengths.sum()), dtype=np.int64)


PIECE = 1 << 16  # entries at a time, where an operation's temporaries are one per entry


def index_dtype(n_cols: int):
    """Column numbers in 32 bits while they fit, as scipy stores them (half the memory)."""
    return np.int32 if n_cols < 2**31 else np.int64


def distinct(a) -> np.ndarray:
    """np.unique(a) of a 1-d array (its distinct values, sorted), without the import of
    numpy.ma that np.unique makes on its first call (numpy 2.4 asks np.ma.is_masked), which
    would sit on train's calibration and on every worker process that scores or sums a chunk."""
    a = np.sort(np.asarray(a).ravel())
    if len(a) < 2:
        return a
    keep = np.empty(len(a), dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def _indptr(counts: np.ndarray) -> np.ndarray:
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr


class Rows:
    """A sparse matrix in CSR arrays: row i holds ``data[indptr[i]:indptr[i+1]]`` at columns
    ``indices[...]``. Built by nbtext, a row's columns are sorted and distinct."""

    __slots__ = ("data", "indices", "indptr", "shape")

    def __init__(self, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, n_cols: int):
        self.data, self.indices, self.indptr = data, indices, indptr
        self.shape = (len(indptr) - 1, int(n_cols))

    @classmethod
    def of(cls, X) -> "Rows":
        """Rows of a scipy sparse matrix (any format) or a dense 2-d array."""
        if isinstance(X, Rows):
            return X
        if hasattr(X, "tocsr"):  # scipy.sparse, without importing it
            X = X.tocsr()
            return cls(X.data, X.indices, X.indptr, X.shape[1])
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"expected a 2-d matrix, got {X.ndim} dimension(s)")
        r, c = np.nonzero(X)
        return cls(X[r, c], c, _indptr(np.bincount(r, minlength=X.shape[0])), X.shape[1])

    @classmethod
    def stack(cls, parts: list["Rows"], n_cols: int, consume: bool = False) -> "Rows":
        """The parts' rows, one after another, over ``n_cols`` columns (values and column
        numbers of the type that holds every part's, as numpy's concatenate makes them). With
        ``consume``, each item of ``parts`` is set to None once copied, so that a part held
        nowhere else is let go before the next is copied."""
        if not parts:
            return cls(np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64), n_cols)
        indptr = _indptr(np.concatenate([np.diff(p.indptr) for p in parts]))
        data = np.empty(int(indptr[-1]), dtype=np.result_type(*[p.data.dtype for p in parts]))
        indices = np.empty(len(data), dtype=np.result_type(*[p.indices.dtype for p in parts]))
        at = 0
        for i in range(len(parts)):
            p, n = parts[i], int(parts[i].indptr[-1])
            data[at:at + n], indices[at:at + n] = p.data[:n], p.indices[:n]
            at += n
            if consume:
                parts[i] = p = None
        return cls(data, indices, indptr, n_cols)

    @property
    def nnz(self) -> int:
        return len(self.data)

    def _row_pieces(self) -> np.ndarray:
        """Where consecutive pieces of rows start (and the last ends) that hold about PIECE
        entries each, so that temporaries of one value per entry are made a piece at a time."""
        starts = np.searchsorted(self.indptr, np.arange(0, self.nnz, PIECE), side="right") - 1
        return distinct(np.append(starts, [0, self.shape[0]]))

    def row_of_entries(self) -> np.ndarray:
        return np.repeat(np.arange(self.shape[0], dtype=np.int64), np.diff(self.indptr))

    def with_data(self, data: np.ndarray) -> "Rows":
        """The same pattern holding other values."""
        return Rows(data, self.indices, self.indptr, self.shape[1])

    def astype(self, dtype) -> "Rows":
        return self.with_data(self.data.astype(dtype))

    def widened(self, n_cols: int) -> "Rows":
        return Rows(self.data, self.indices, self.indptr, n_cols)

    def __getitem__(self, rows) -> "Rows":
        """The rows a boolean mask or an array of row numbers selects."""
        rows = np.asarray(rows)
        if rows.dtype == bool and len(rows) == self.shape[0]:
            # (a mask per entry: row numbers, below, make two int64 arrays per entry)
            lengths = np.diff(self.indptr)
            entries = np.repeat(rows, lengths)
            return Rows(self.data[entries], self.indices[entries], _indptr(lengths[rows]), self.shape[1])
        rows = np.flatnonzero(rows) if rows.dtype == bool else rows.astype(np.int64)
        lengths = self.indptr[rows + 1] - self.indptr[rows]
        take = ranges(self.indptr[rows], lengths)
        return Rows(self.data[take], self.indices[take], _indptr(lengths), self.shape[1])

    def own_columns(self, rows) -> tuple["Rows", np.ndarray]:
        """The rows a boolean mask or an array of row numbers selects, as float64 values over
        the columns they hold: (those rows, their columns renumbered 0, 1, ...; the columns,
        sorted). Calibration takes each fold so. By the compiled kernel where it applies (one
        pass a step, no selected copy converted again: measured faster on calibration's folds,
        docs/bench.md), else numpy; the same arrays either way (tests/test_rows.py)."""
        rows = np.asarray(rows)
        rows = np.flatnonzero(rows) if rows.dtype == bool else rows.astype(np.int64)
        if len(rows) and (rows.min() < 0 or rows.max() >= self.shape[0]):
            raise IndexError(f"row numbers out of range for {self.shape[0]} rows")
        got = self._own_columns_by_kernel(rows)
        if got is not None:
            return got
        X = self[rows].astype(np.float64)
        where = np.zeros(self.shape[1], dtype=index_dtype(self.shape[1]))
        where[X.indices] = 1  # (the columns marked in an array as wide as the matrix, not sorted)
        cols = np.flatnonzero(where)
        where[cols] = np.arange(len(cols), dtype=where.dtype)
        return Rows(X.data, where[X.indices], X.indptr, len(cols)), cols

    def _own_columns_by_kernel(self, rows: np.ndarray) -> tuple["Rows", np.ndarray] | None:
        from .implementation import compiled

        kernel = compiled()
        if (kernel is None or self.data.dtype not in (np.float64, np.float32, np.uint16)
                or self.indices.dtype not in (np.int32, np.int64) or self.shape[1] >= 2**31):
            return None
        indptr = np.ascontiguousarray(self.indptr, dtype=np.int64)
        nnz = int((indptr[rows + 1] - indptr[rows]).sum())
        data = np.empty(nnz, dtype=np.float64)
        indices = np.empty(nnz, dtype=index_dtype(self.shape[1]))
        out_indptr = np.empty(len(rows) + 1, dtype=np.int64)
        cols = kernel.own_columns(*self._entries(), indptr,
                                  np.ascontiguousarray(rows), self.shape[1], data, indices, out_indptr)
        cols = np.frombuffer(cols, dtype=np.int64)
        return Rows(data, indices, out_indptr, len(cols)), cols

    def columns(self, keep: np.ndarray) -> "Rows":
        """The columns ``keep`` (sorted column numbers), renumbered 0, 1, ... (no two columns
        land on one: moved by the kernel where it applies)."""
        mapping = np.full(self.shape[1], -1, dtype=np.int64)
        mapping[keep] = np.arange(len(keep))
        return self.moved(mapping, len(keep), distinct=True, own=True)

    def moved(self, mapping: np.ndarray, n_cols: int, distinct: bool = False, own: bool = False) -> "Rows":
        """Column j moved to ``mapping[j]`` (-1: dropped); entries that land on one column of a
        row are added up, and each row's columns come out sorted. ``distinct``: the caller
        knows that no two columns land on one (a chunk's columns onto their ids, as train's
        sample takes them, or onto a model's, the tokens it lacks dropped, as predict takes
        them): then the compiled kernel moves each row, to the same arrays
        (tests/test_kernel.py), without numpy's sort of every entry. ``own``: rows the caller
        holds on (a pruned sample, a matrix's selected columns) get arrays of their own length,
        not the start of the kernel's, as long as the entries before the move."""
        if distinct:
            out = self._moved_by_kernel(mapping, n_cols, own)
            if out is not None:
                return out
        cols = mapping[self.indices]
        keep = cols >= 0
        cells = self.row_of_entries()[keep] * n_cols + cols[keep]
        data = self.data[keep]
        if len(cells) > 1 and (cells[1:] <= cells[:-1]).any():
            order = np.argsort(cells, kind="stable")
            cells, data = cells[order], data[order]
            first = np.ones(len(cells), dtype=bool)
            first[1:] = cells[1:] != cells[:-1]
            if not first.all():
                data = np.add.reduceat(data, np.flatnonzero(first))
                cells = cells[first]
        n = max(n_cols, 1)
        return Rows(data, (cells % n).astype(index_dtype(n_cols)),
                    _indptr(np.bincount(cells // n, minlength=self.shape[0])), n_cols)

    def _entries(self) -> tuple[np.ndarray, np.ndarray]:
        """(data, indices) as the kernel's functions take them: C-contiguous, and exactly as many
        as the row starts span (they find an entry's size from the bytes per entry: an array
        with spare entries at its end would be read with the wrong one)."""
        n = int(self.indptr[-1]) if len(self.indptr) else 0
        return np.ascontiguousarray(self.data[:n]), np.ascontiguousarray(self.indices[:n])

    def _moved_by_kernel(self, mapping: np.ndarray, n_cols: int, own: bool = False) -> "Rows | None":
        """moved, by the compiled kernel's move_rows (columns mapped to -1 dropped there); None
        where it does not apply (no kernel, other dtypes, or columns that meet after all: numpy
        then adds them)."""
        from .implementation import compiled

        kernel = compiled()
        if (kernel is None or self.data.dtype not in (np.float64, np.float32, np.uint16)
                or self.indices.dtype not in (np.int32, np.int64) or not 0 <= n_cols < 2**31):
            return None
        entries = self._entries()
        data, indices = np.empty(len(entries[0]), dtype=self.data.dtype), np.empty(len(entries[0]), dtype=index_dtype(n_cols))
        indptr = np.empty(len(self.indptr), dtype=np.int64)
        if not kernel.move_rows(*entries, np.ascontiguousarray(self.indptr, dtype=np.int64),
                                np.ascontiguousarray(mapping, dtype=np.int64), n_cols, data, indices, indptr):
            return None
        kept = int(indptr[-1])
        if own and kept < len(data):
            return Rows(data[:kept].copy(), indices[:kept].copy(), indptr, n_cols)
        return Rows(data[:kept], indices[:kept], indptr, n_cols)

    def eliminate_zeros(self) -> "Rows":
        keep = self.data != 0
        if keep.all():
            return self
        return Rows(self.data[keep], self.indices[keep],
                    _indptr(np.bincount(self.row_of_entries()[keep], minlength=self.shape[0])), self.shape[1])

    def row_sums(self, values: np.ndarray | None = None, dtype=None) -> np.ndarray:
        """Per row, the sum of its entries (or of ``values``, one per entry), added as
        scipy's sum(axis=1) adds them (np.add.reduceat, row by row); ``dtype``: the type they
        are added in. A piece of rows at a time: reduceat converts all it is given first (a
        float64 copy of a 16-bit sample would sit on train's peak memory);
        each row's sum is the same, of its own entries."""
        v = self.data if values is None else values
        out = np.zeros(self.shape[0])
        pieces = self._row_pieces()
        for r0, r1 in zip(pieces[:-1], pieces[1:]):
            start = self.indptr[r0:r1]
            full = np.flatnonzero(self.indptr[r0 + 1:r1 + 1] - start)
            if len(full):  # (each segment ends where the next non-empty row starts, the last at the piece's end)
                out[r0 + full] = np.add.reduceat(v[self.indptr[r0]:self.indptr[r1]], start[full] - self.indptr[r0],
                                                 dtype=dtype)
        return out

    def scaled_rows(self, factors: np.ndarray) -> "Rows":
        """Each row multiplied by its factor."""
        return self.with_data(self.data * np.repeat(factors, np.diff(self.indptr)))

    def __matmul__(self, W: np.ndarray) -> np.ndarray:
        """This matrix times a dense one (columns x k): a rows x k array."""
        W = np.asarray(W)
        if W.ndim == 1:
            return (self @ W[:, None])[:, 0]
        out = np.empty((self.shape[0], W.shape[1]))
        if self._dot_by_kernel(W, out):
            return out
        # (each row's sum is the same, a piece at a time: its own entries, added in order)
        starts = self._row_pieces()
        for r0, r1 in zip(starts[:-1], starts[1:]):
            part = Rows(self.data[self.indptr[r0]:self.indptr[r1]], self.indices[self.indptr[r0]:self.indptr[r1]],
                        self.indptr[r0:r1 + 1] - self.indptr[r0], self.shape[1])
            rows = part.row_of_entries()
            for c in range(W.shape[1]):
                w = W[part.indices, c]
                out[r0:r1, c] = np.bincount(rows, weights=np.multiply(part.data, w, out=w), minlength=r1 - r0)
        return out

    def _dot_by_kernel(self, W: np.ndarray, out: np.ndarray) -> bool:
        """self @ W into out by the compiled kernel's rows_dot, the same bits as below (each
        product rounded, a row's added in order from 0.0: tests/test_kernel.py), without the
        temporaries of one value per entry and class (measured faster on a calibration fold's
        scores: docs/bench.md). False where it does not apply (no kernel, other dtypes, a
        column past W)."""
        from .implementation import compiled

        kernel = compiled()
        if (kernel is None or self.data.dtype != np.float64 or W.dtype != np.float64
                or self.indices.dtype not in (np.int32, np.int64) or not W.shape[1]):
            return False
        return kernel.rows_dot(*self._entries(), np.ascontiguousarray(self.indptr, dtype=np.int64), np.ascontiguousarray(W),
                               W.shape[1], out)

    def column_sums_by_row_group(self, group: np.ndarray, k: int, weights: np.ndarray | None = None,
                                 token_major: bool = False) -> np.ndarray:
        """A k x columns array: row i's entries (times ``weights[i]``) added into row
        ``group[i]``, as the one-hot product Y.T @ X would; with ``token_major``, its transpose
        as a C-ordered columns x k array (the same sums, added in the same order)."""
        if token_major:
            return self.group_sums(group, k, weights)[0]
        n = self.shape[1]
        cells = np.repeat(np.asarray(group, dtype=np.int64), np.diff(self.indptr))
        cells *= n
        cells += self.indices  # (in place: each temporary is one value per entry)
        sums = np.bincount(cells, weights=self._weighted(weights), minlength=k * n).astype(np.float64, copy=False)
        return sums.reshape(k, n)  # (bincount's sums are int when there is nothing to add)

    def _weighted(self, weights: np.ndarray | None) -> np.ndarray:
        """Each entry's value times its row's weight (the values, without weights)."""
        if weights is None:
            return self.data
        v = np.repeat(np.asarray(weights, dtype=np.float64), np.diff(self.indptr))
        return np.multiply(self.data, v, out=v)

    def group_sums(self, group: np.ndarray, k: int, weights: np.ndarray | None = None,
                   doc_freq: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        """column_sums_by_row_group(group, k, weights, token_major=True): each row's entries
        (times its weight) added into its group's column, as a C-ordered columns x k float64
        array; with ``doc_freq``, also each column's nonzero entries counted (int64; with
        weights, their rows' weights added up, float64), else None.
        What counting a chunk or a fold sums (nb.counts.Counts.summed, minus_at). Without
        weights by the compiled kernel's group_sums where it applies (one pass, without numpy's
        cell number an entry: 8 bytes an entry of a calibration fold's peak), else numpy; the
        same arrays to the bit (tests/test_kernel.py)."""
        n, group = self.shape[1], np.asarray(group, dtype=np.int64)
        from .implementation import compiled

        kernel = compiled() if weights is None else None
        if (kernel is not None and self.data.dtype in (np.float64, np.float32, np.uint16)
                and self.indices.dtype in (np.int32, np.int64) and k >= 1 and len(group) == self.shape[0]):
            sums, df = np.zeros((n, k)), np.zeros(n if doc_freq else 0, dtype=np.int64)
            if kernel.group_sums(*self._entries(), np.ascontiguousarray(self.indptr, dtype=np.int64),
                                 np.ascontiguousarray(group), k, sums, df):
                return sums, df if doc_freq else None
        cells = self.indices.astype(np.int64)
        cells *= k
        lengths = np.diff(self.indptr)
        pieces = self._row_pieces()
        for r0, r1 in zip(pieces[:-1], pieces[1:]):  # (each entry's row's group added a piece of rows at a time)
            cells[self.indptr[r0]:self.indptr[r1]] += np.repeat(group[r0:r1], lengths[r0:r1])
        sums = np.bincount(cells, weights=self._weighted(weights), minlength=k * n).astype(np.float64, copy=False)
        del cells
        df = None
        if doc_freq:
            nonzero = self.data != 0
            every = nonzero.all()
            row_weights = None if weights is None else np.repeat(np.asarray(weights, dtype=np.float64), lengths)
            df = np.bincount(self.indices if every else self.indices[nonzero], minlength=n,
                             weights=row_weights if row_weights is None or every else row_weights[nonzero])
        return sums.reshape(n, k), df

    def toarray(self) -> np.ndarray:
        out = np.zeros(self.shape)
        np.add.at(out, (self.row_of_entries(), self.indices), self.data)
        return out

    def tocsr(self):
        """The scipy.sparse.csr_matrix of these arrays (imports scipy)."""
        import scipy.sparse as sp

        return sp.csr_matrix((self.data, self.indices, self.indptr), shape=self.shape)
