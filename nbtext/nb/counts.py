"""The spine: a text model's mergeable statistics, and nothing but sums.

Per class, how many documents it has and how often each token occurs in them (as the variant
counts a document: raw counts, present-or-not, or Complement NB's transformed rows); per
token, how many documents hold it. Every way of building a model is an addition to one of
these: training a chunk at a time (serial, or chunks counted by worker processes), ``partial_fit``,
``learn`` and ``forget`` (weight -1), ``merge`` of two models, and a cluster's reduce. Tokens are
columns; which token a column is, is the vocabulary's business (nbtext.features.vocabulary):
a chunk counted elsewhere is added at the ids its tokens got in the vocabulary (``ids``).

A token's counts per class are held by token: for one or two classes (mail) as a tokens x
classes array, which grows by a quarter at a time, in place (numpy's resize of the rows at the
end: streamed training adds columns for every chunk, and a new array per chunk would hold the
old and the new at once); from SPARSE_FROM classes only where they are not zero (nb.sparse), as
nearly every token of real text occurs in one or two classes (docs/state.md). Both hold the
same numbers, and every method gives the same counts either way; ``feature_count`` and
``token_major`` make the dense arrays of sparse counts (classes x tokens numbers: callers that
read a model of many classes use ``token_sums``, ``token_totals``, ``class_totals``).
"""
from __future__ import annotations

import copy

import time
from collections.abc import Sequence

import numpy as np

from ..errors import NbtextError
from ..features.rows import Rows
from .sparse import TokenSums, group_sums

# The counts a model may hold (1 GiB of float64 values; a sparse entry holds its class number
# too): without a bound a file of many distinct labels and tokens fills the memory before
# anything refuses it. Held counts are what is stored: a class by every token for one or two
# classes, the nonzero ones from SPARSE_FROM classes.
MAX_NUMBERS = 1 << 27
SPARSE_FROM = 3  # classes from which counts are held by token, only where not zero (docs/state.md)
# Documents' sums (summed) are a tokens x classes array while it has at most this many cells an
# entry of the documents (memory in proportion to them, and the quicker sum), else held by token.
DENSE_CELLS = 4
UNKNOWN_DAY = 0  # a token's last_seen where it is not known (a model file older than format 5)


def day_of(seconds: float) -> int:
    """The UTC day of a time (days since 1970-01-01), as last_seen keeps it (16 bits: to 2149)."""
    return min(max(int(seconds // 86400), 0), 2**16 - 1)


def today() -> int:
    """The UTC day now, as new counts mark their tokens last seen (the test suite pins it: two
    models trained a moment apart across midnight are otherwise a day apart)."""
    return day_of(time.time())


def room(held: int, k: int, tokens: int) -> None:
    """Refuse counts that would hold ``held`` numbers (of ``k`` classes and ``tokens`` tokens)
    beyond MAX_NUMBERS."""
    if held > MAX_NUMBERS:
        what = f"{k:,} classes x {tokens:,} tokens" if k < SPARSE_FROM else \
            f"nonzero counts of {k:,} classes and {tokens:,} tokens"
        raise NbtextError(f"the counts would hold {held:,} numbers ({what}), more than {MAX_NUMBERS:,}: "
                          "too many classes (are the labels right?) or tokens (every distinct token is counted "
                          "before --max-features or --min-df choose; --ngrams 1 and --char-ngrams 0,0 make fewer)")


def add_rows_at(a: np.ndarray, rows: np.ndarray, values: np.ndarray, columns: np.ndarray | None = None) -> None:
    """a[rows, columns] += values (``columns`` None: the first values.shape[1] of a's), rows
    distinct: each element one addition, as numpy's fancy-indexed += makes it, so the same
    bits, without its element-by-element 2-d indexing: a column at a time, or two as one
    complex number (both parts added as two floats are). train's reduce adds each chunk's sums
    this way (measured faster than fancy indexing: docs/bench.md)."""
    k = values.shape[1]
    if (columns is None and k == 2 and a.dtype == values.dtype == np.float64 and a.shape[1] == 2
            and a.flags.c_contiguous and values.flags.c_contiguous):
        a.view(np.complex128)[:, 0][rows] += values.view(np.complex128)[:, 0]
        return
    for i in range(k):
        column = a[:, i if columns is None else columns[i]]
        column[rows] += values[:, i]


def take_rows(a: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """np.take(a, rows, axis=0) of a 2-d array: the same array. Two float64 columns (mail's
    classes) are gathered as one complex128 each, one element a row, where numpy's take along
    the rows copies each row with its own small copy (measured faster at putting a model's
    counts in the file's order, and a calibration fold's columns alike: docs/bench.md)."""
    if a.ndim == 2 and a.shape[1] == 2 and a.dtype == np.float64 and a.flags.c_contiguous:
        return np.take(a.view(np.complex128)[:, 0], rows).view(np.float64).reshape(-1, 2)
    return np.take(a, rows, axis=0)


def _append_summed(held: TokenSums, sums, cols: np.ndarray | None, rows: np.ndarray, sign: float = 1.0) -> None:
    """Append summed()'s sums (dense or a TokenSums) times ``sign`` to ``held``: sums' row j at
    token cols[j] (None: j), column i at class rows[i]."""
    if isinstance(sums, TokenSums):
        indptr, classes, values = sums.arrays()
        lengths = np.diff(indptr)
        # (each entry's id repeated from its token's, in 32 bits where they fit, as append keeps
        # them; the classes as they are where the chunk has every class: train's reduce of each
        # chunk, on its serial path)
        ids = np.arange(len(lengths)) if cols is None else cols[:len(lengths)]
        if len(ids) and ids.min() >= 0 and ids.max() < 2**31:
            ids = ids.astype(np.int32)
        if not np.array_equal(rows, np.arange(len(rows))):
            classes = rows[classes.astype(np.int64)]
        held.append(np.repeat(ids, lengths), classes, values if sign == 1 else sign * values)
    else:
        held.append_dense(cols, rows, sums if sign == 1 else sign * sums)


def _class_sums(sums, rows: np.ndarray, k: int) -> np.ndarray:
    """summed()'s sums per class (at rows) over all its tokens."""
    if isinstance(sums, TokenSums):
        return np.bincount(rows[sums.classes.astype(np.int64)], weights=sums.values, minlength=k).astype(np.float64)
    return np.bincount(rows, weights=sums.sum(axis=0), minlength=k).astype(np.float64)


def _as_uint16(a: np.ndarray) -> np.ndarray:
    """a in 16 bits when every value is a whole number that fits, else a as it is."""
    if not a.size or a.dtype == np.uint16:
        return a
    with np.errstate(invalid="ignore"):  # (a value that does not fit casts to another: kept as is)
        small = a.astype(np.uint16)
    return small if np.array_equal(small, a) else a


class Counts:
    def __init__(self, classes: Sequence[str] = (), n_features: int = 0):
        self.classes: list[str] = sorted(set(classes))
        k = len(self.classes)
        self._sp = TokenSums(n_features, k) if k >= SPARSE_FROM else None  # (else:)
        self._fc = np.zeros((0 if self._sp else n_features, k))  # tokens x classes
        self._cc = np.zeros(k)
        self._df = np.zeros(n_features, dtype=np.int32)  # int32 while whole (half the memory)
        # Per token, the last day (UTC, days since 1970) a document holding it was counted in: what
        # pruning by age reads. Added counts stamp their tokens with ``today`` (set it to count
        # as of another day); taking documents out leaves it; merge keeps the later day.
        self._ls = np.zeros(n_features, dtype=np.uint16)
        self.today = today()
        self.width = n_features
        self.version = 0  # bumped by every change: estimators cache what they derive by it

    @classmethod
    def of_arrays(cls, classes: Sequence[str], feature_count: np.ndarray, class_count: np.ndarray,
                  doc_freq: np.ndarray | None = None, last_seen: np.ndarray | None = None) -> "Counts":
        """Counts holding these arrays (classes x tokens, per class, per token; ``last_seen``
        None: UNKNOWN_DAY)."""
        classes = list(classes)
        if classes != sorted(set(classes)):
            raise NbtextError(f"classes must be distinct and sorted, got {classes}")
        c = cls(classes, 0)
        fc = np.asarray(feature_count, dtype=np.float64)
        if c._sp is not None:
            c._sp = TokenSums.of_dense(fc.T)
        else:
            c._fc = np.ascontiguousarray(fc.T)
        c._cc = np.array(class_count, dtype=np.float64)
        c.width = fc.shape[1]
        c._df = (np.zeros(c.width, dtype=np.int32) if doc_freq is None
                 else np.asarray(doc_freq, dtype=np.float64))
        c._ls = c._last_seen_of(last_seen)
        return c

    def _last_seen_of(self, last_seen: np.ndarray | None) -> np.ndarray:
        if last_seen is None:
            return np.full(self.width, UNKNOWN_DAY, dtype=np.uint16)
        last_seen = np.array(last_seen, dtype=np.uint16)
        if last_seen.shape != (self.width,):
            raise NbtextError(f"last_seen holds {len(last_seen)} days for {self.width} tokens")
        return last_seen

    @classmethod
    def of_token_sums(cls, classes: Sequence[str], sums: TokenSums, class_count: np.ndarray,
                      doc_freq: np.ndarray | None = None, last_seen: np.ndarray | None = None) -> "Counts":
        """Counts holding a token's nonzero classes' sums (``sums``: k classes, in order)."""
        c = cls.of_arrays(classes, np.zeros((len(classes), 0)), class_count, None)
        if c._sp is None:
            c._fc = sums.dense()
        else:
            c._sp = sums
        c.width = sums.width
        c._df = np.zeros(c.width, dtype=np.int32) if doc_freq is None else np.asarray(doc_freq, dtype=np.float64)
        c._ls = c._last_seen_of(last_seen)
        return c

    # -- the sums, as arrays (views: valid until the next change) ---------------------------
    @property
    def sparse(self) -> bool:
        """Whether the counts are held by token, only where not zero (SPARSE_FROM classes on)."""
        return self._sp is not None

    @property
    def token_sums(self) -> TokenSums:
        """The counts by token, only where not zero (settled; made of the array for one or two
        classes)."""
        if self._sp is None:
            return TokenSums.of_dense(self.token_major)
        self._sp.grow(self.width)
        self._sp.settle()
        return self._sp

    @property
    def feature_count(self) -> np.ndarray:
        """classes x tokens (a transposed view of the token-major store; of sparse counts, a
        dense array made of them)."""
        return self.token_major.T

    @property
    def token_major(self) -> np.ndarray:
        """tokens x classes, C-ordered: what deriving log-probabilities reads (of sparse counts, a
        dense array made of them)."""
        if self._sp is not None:
            return self.token_sums.dense()
        return self._fc[:self.width, :len(self.classes)]

    def token_totals(self) -> np.ndarray:
        """Per token, its counts over all classes."""
        if self._sp is not None:
            return self.token_sums.token_totals()
        return self.token_major.sum(axis=1)

    def class_totals(self) -> np.ndarray:
        """Per class, its counts over all tokens."""
        if self._sp is not None:
            return self.token_sums.class_totals()
        return self.feature_count.sum(axis=1)

    def held(self) -> int:
        """The counts held: nonzero ones of sparse counts, else a class by every token."""
        return self._sp.nnz if self._sp is not None else self.width * len(self.classes)

    def nbytes(self) -> int:
        """The bytes the counts and per-token arrays hold (spare rows included), without folding
        sums appended to sparse counts in (arrays() does: a sort of all that is held)."""
        counts = self._sp.nbytes() if self._sp is not None else self._fc.nbytes
        return counts + self._cc.nbytes + self._df.nbytes + self._ls.nbytes

    def fold_bytes(self) -> int:
        """The bytes sparse counts' next fold (their settle) writes while they are held: what
        their peak adds to nbytes() (train's memory budget reads both); 0 for dense counts."""
        return self._sp.fold_bytes() if self._sp is not None else 0

    @property
    def class_count(self) -> np.ndarray:
        return self._cc[:len(self.classes)]

    @property
    def doc_freq(self) -> np.ndarray:
        return self._df[:self.width]

    @property
    def last_seen(self) -> np.ndarray:
        """Per token, the last UTC day (days since 1970-01-01) it was counted; UNKNOWN_DAY where
        not known."""
        return self._ls[:self.width]

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The arrays that hold the counts (as stored, spare rows included)."""
        if self._sp is not None:
            return (*self._sp.arrays(), self._cc, self._df, self._ls)
        return self._fc, self._cc, self._df, self._ls

    @property
    def n_documents(self) -> int:
        return int(round(self.class_count.sum()))

    # -- adding -------------------------------------------------------------------------------
    def _class_rows(self, labels: Sequence[str]) -> np.ndarray:
        """Each label's row, adding classes not seen yet at their sorted place."""
        new = sorted(set(labels) - set(self.classes))
        if new:  # rare (a corpus's classes come early): the one growth that copies
            classes = sorted(self.classes + new)
            place = {c: i for i, c in enumerate(classes)}  # (classes.index: quadratic in classes)
            where = [place[c] for c in self.classes]
            if self._sp is None and len(classes) >= SPARSE_FROM:  # (from here on held by token)
                self._sp = TokenSums.of_dense(self._fc[:self.width, :len(self.classes)])
                self._fc = np.zeros((0, len(classes)))
            if self._sp is not None:
                self._sp.renumber_classes(np.asarray(where, dtype=np.int64), len(classes))
            else:
                room(self._fc.shape[0] * len(classes), len(classes), self._fc.shape[0])
                fc = np.zeros((self._fc.shape[0], len(classes)))
                fc[:, where] = self._fc[:, :len(self.classes)]
                self._fc = fc
            cc = np.zeros(len(classes))
            cc[where] = self.class_count
            self._cc, self.classes = cc, classes
        index = {c: i for i, c in enumerate(self.classes)}
        return np.asarray([index[lab] for lab in labels], dtype=np.int64)

    def _reserve(self, width: int) -> None:
        if not (self._fc.flags.owndata and self._fc.flags.writeable):  # (arrays received from
            self._fc, self._cc = self._fc.copy(), self._cc.copy()         # another process)
        if not (self._df.flags.owndata and self._df.flags.writeable):
            self._df = self._df.copy()
        if not (self._ls.flags.owndata and self._ls.flags.writeable):
            self._ls = self._ls.copy()
        if len(self._ls) < len(self._df):
            self._ls.resize(len(self._df), refcheck=False)
        if self._sp is not None:  # (the counts grow as entries come: only the per-token arrays here)
            self._sp.grow(width)
            if width > len(self._df):
                self._df.resize(max(width, len(self._df) + len(self._df) // 4), refcheck=False)
                self._ls.resize(len(self._df), refcheck=False)
            self.width = max(self.width, width)
            return
        rows, k = self._fc.shape
        if width > rows:
            room(k * width, k, width)
            rows = max(width, min(rows + rows // 4, MAX_NUMBERS // max(k, 1)))
            self._fc.resize((rows, self._fc.shape[1]), refcheck=False)  # new rows are 0
            self._df.resize(rows, refcheck=False)
            self._ls.resize(rows, refcheck=False)
        elif len(self._df) < rows:
            self._df.resize(rows, refcheck=False)
            self._ls.resize(rows, refcheck=False)
        self.width = max(self.width, width)

    @staticmethod
    def summed(X, labels: Sequence[str], weights: np.ndarray | None = None) -> tuple:
        """Documents' sums, to be added to counts elsewhere (add_summed): (their classes,
        sorted; X's sums per token and class, tokens x those classes, C order, or from
        SPARSE_FROM classes a TokenSums of them; its documents per token; its documents per
        class). train's worker processes make them for their own chunks. Each class's sums are
        added in the same order whatever other classes there are, so they are the same
        numbers, bit for bit, as sums over a model's classes."""
        X = Rows.of(X)
        if X.shape[0] != len(labels):
            raise NbtextError(f"X has {X.shape[0]} rows but there are {len(labels)} labels")
        classes = sorted(set(labels))
        index = {c: i for i, c in enumerate(classes)}
        idx = np.asarray([index[lab] for lab in labels], dtype=np.int64)
        k = len(classes)
        if k >= SPARSE_FROM and X.shape[1] * k > DENSE_CELLS * X.nnz:
            sums, df = group_sums(X, idx, k, weights)
        else:
            sums, df = X.group_sums(idx, k, weights, doc_freq=True)
        return classes, sums, df, np.bincount(idx, weights=weights, minlength=k)

    @staticmethod
    def compacted(summed: tuple) -> tuple:
        """summed()'s tuple with its sums and document frequencies as 16-bit whole numbers where
        they all are (add_summed takes them back exactly): what train's workers send for a chunk,
        a quarter of its float64 and int64. Sums held by token likewise, and their token starts
        in 32 bits: of what a chunk of many classes sends, each byte pickled, piped, read and
        unpickled, they were the most (docs/bench.md)."""
        classes, sums, df, cc = summed
        if isinstance(sums, TokenSums):
            indptr, held, values = sums.arrays()
            sums = copy.copy(sums)  # (the same entries: add_summed reads them through append, as float64)
            sums.indptr = indptr.astype(np.int32) if indptr[-1] < 2**31 else indptr
            sums.values = _as_uint16(values)
            return classes, sums, _as_uint16(df), cc
        return classes, _as_uint16(sums), _as_uint16(df), cc

    def _sums(self, X, labels: Sequence[str], weights) -> tuple:
        """summed(), over all this model's classes (tokens x classes; per class)."""
        classes, sums, df, cc = Counts.summed(X, labels, weights)
        rows = self._class_rows(classes)
        k = len(self.classes)
        if len(rows) < k:
            whole = np.zeros((sums.shape[0], k))
            whole[:, rows] = sums
            sums, cc = whole, np.bincount(rows, weights=cc, minlength=k)
        return sums, df, cc

    def add(self, X, labels: Sequence[str], ids: np.ndarray | None = None, width: int | None = None,
            weights: np.ndarray | None = None) -> None:
        """Add documents in place: rows of X (as the variant counts them), their labels, and for
        each of X's columns the token id it is (``ids``; None: the columns are the ids).
        ``width`` is the number of tokens known (the vocabulary's size). Weights must not be
        negative here: taking documents out is ``plus``."""
        if weights is not None and (np.asarray(weights) < 0).any():
            raise ValueError("Counts.add adds: take documents out with plus()")
        self.add_summed(Counts.summed(X, labels, weights), ids, width)

    def add_summed(self, summed: tuple, ids: np.ndarray | None = None, width: int | None = None,
                   distinct: bool | None = None) -> None:
        """Add what summed() made of documents (columns and ids as in add; ``distinct``: whether
        no id repeats is known, as train knows it from the chunk's keys, else it is checked)."""
        classes, sums, df, cc = summed
        if not isinstance(sums, TokenSums):
            sums = np.asarray(sums, dtype=np.float64)  # (compacted's 16 bits: the same numbers)
        rows = self._class_rows(classes)
        n, k = sums.width if isinstance(sums, TokenSums) else sums.shape[0], len(self.classes)
        cols = None if ids is None else np.asarray(ids, dtype=np.int64)
        if width is None:
            width = max(self.width, n if cols is None else int(cols.max(initial=-1)) + 1)
        self._reserve(width)
        if self._df.dtype == np.int32 and (not np.array_equal(df, np.round(df))
                                           or self.class_count.sum() + np.sum(cc) >= 2**31):
            # fractional weights: no longer whole; or past what int32 holds (a token's documents
            # are at most those counted, as each is added at its document's weight)
            self._df = self._df.astype(np.float64)
        df = df.astype(self._df.dtype)
        every = len(rows) == k  # (the chunk has every class: rows are 0..k-1, a slice)
        at = slice(0, k) if every else rows
        if self._sp is not None:
            _append_summed(self._sp, sums, cols, rows)
            self._check_held()
            if cols is None:
                self._df[:n] += df
            elif distinct if distinct is not None else self._distinct(cols):
                self._df[cols] += df
            else:
                np.add.at(self._df, cols, df)
        elif cols is None:
            self._fc[:n, at] += sums
            self._df[:n] += df
        elif distinct if distinct is not None else self._distinct(cols):
            add_rows_at(self._fc, cols, sums, None if every else rows)
            self._df[cols] += df
        else:  # two tokens shared a 64-bit key: add.at sums them (slower than the above)
            np.add.at(self._fc, (cols[:, None], rows[None, :]), sums)
            np.add.at(self._df, cols, df)
        self._cc[rows] += cc
        held = df != 0  # (the tokens in a document of these)
        self._ls[np.flatnonzero(held) if cols is None else cols[held]] = self.today
        self.version += 1

    def _check_held(self) -> None:
        """Refuse sparse counts past MAX_NUMBERS entries (settled first: appended entries may
        repeat)."""
        if self._sp.nnz > MAX_NUMBERS:
            self._sp.settle()
            room(self._sp.nnz, len(self.classes), self.width)

    def add_whole(self, X, labels: Sequence[str]) -> bool:
        """add(X, labels) for documents whose values are 16-bit whole numbers (train's
        calibration sample: Reservoir.compact), by the compiled kernel's group_sums straight
        into these counts, without the sums per token made apart first (add_summed), which with
        their copies would sit on train's peak memory. The same numbers as
        add() and as adding X a part at a time (tests/test_kernel.py): whole numbers add exactly
        in any order. False, with nothing changed, where it does not apply (no kernel, other
        values, document frequencies no longer whole numbers here)."""
        from ..features.implementation import compiled

        kernel, X = compiled(), Rows.of(X)
        if (kernel is None or self._sp is not None or X.data.dtype != np.uint16 or X.indices.dtype not in (np.int32, np.int64)
                or X.shape[0] != len(labels) or self._df.dtype != np.int32
                or self.n_documents + X.shape[0] >= 2**31):  # (a document frequency stays an int32)
            return False
        entries = X._entries()
        if len(entries[1]) and (entries[1].min() < 0 or entries[1].max() >= X.shape[1]):
            raise ValueError("add_whole: a column outside the rows' width")  # (before anything changes)
        idx = self._class_rows(labels)
        self._reserve(max(self.width, X.shape[1]))
        k = len(self.classes)
        if not kernel.group_sums(*entries, np.ascontiguousarray(X.indptr, dtype=np.int64), idx, k,
                                 self._fc, self._df):  # (columns and groups in range: never False)
            raise ValueError("add_whole: the rows' starts do not span their entries")
        self._cc[:k] += np.bincount(idx, minlength=k)
        self._ls[entries[1]] = self.today
        self.version += 1
        return True

    def plus(self, X, labels: Sequence[str], weights: np.ndarray) -> "Counts":
        """New counts: these with documents added at the given weights (-1: taken out), whose
        columns are this model's tokens. Refused when a count would go below zero (those
        documents were not learned); what taking out transformed counts leaves within 1e-9 of
        zero (rounding dust) becomes zero. The documents' sums are made in a new array that
        becomes the result's: no copy of these counts is made on the way."""
        self.check_labels(labels)
        if self._sp is not None:
            return self._sparse_plus(Rows.of(X).widened(self.width), labels, weights)
        fc, df, cc = self._sums(Rows.of(X).widened(self.width), labels, weights)
        np.add(self.token_major, fc, out=fc)  # one layout, one rounding
        cc = self.class_count + cc
        if (fc < -1e-9).any() or (cc < -1e-9).any():
            raise NbtextError("that would take counts below zero: those documents were not learned")
        out = Counts(self.classes, 0)
        out._fc, out._cc = np.maximum(fc, 0.0, out=fc), np.maximum(cc, 0.0)
        out._df, out.width = np.maximum(self.doc_freq + df, 0.0), self.width
        return self._stamped(out, X, weights)

    def _stamped(self, out: "Counts", X, weights: np.ndarray) -> "Counts":
        """plus()'s new counts with this one's last_seen, the tokens of documents added at a
        positive weight stamped ``today`` (taken out: left as they were)."""
        out._ls, out.today = self.last_seen.copy(), self.today
        added = np.asarray(weights) > 0
        if added.any():
            out._ls[Rows.of(X)[added].indices] = self.today
        return out

    def _sparse_plus(self, X: Rows, labels: Sequence[str], weights: np.ndarray) -> "Counts":
        """plus() of sparse counts: the documents' sums made over their own columns, the new
        counts a copy of these with them added (no tokens x classes array)."""
        if X.shape[0] != len(labels):
            raise NbtextError(f"X has {X.shape[0]} rows but there are {len(labels)} labels")
        classes, fc, df, cc = Counts.summed(X, labels, weights)
        rows = self._class_rows(classes)
        sums = self.token_sums.copy()
        _append_summed(sums, fc, None, rows)
        sums.settle()
        cc = self.class_count + np.bincount(rows, weights=cc, minlength=len(self.classes))
        if (sums.values < -1e-9).any() or (cc < -1e-9).any():
            raise NbtextError("that would take counts below zero: those documents were not learned")
        out = Counts(self.classes, 0)
        out._sp, out._cc = sums.with_values(np.maximum(sums.values, 0.0)), np.maximum(cc, 0.0)
        out._df = np.array(self.doc_freq, dtype=np.float64)
        out._df += df
        out._df, out.width = np.maximum(out._df, 0.0), self.width
        return self._stamped(out, X, weights)

    def sparse_minus_at(self, X, labels: Sequence[str], cols: np.ndarray) -> tuple:
        """minus_at() of sparse counts: (the counts of plus(X', labels, -1) at the columns ``cols``
        alone, a TokenSums of len(cols) tokens; its class totals over every token; its class
        counts), X' being X over the whole vocabulary with column j at ``cols[j]``: a fold of
        calibration costs its own columns, not the vocabulary."""
        self.check_labels(labels)
        X = Rows.of(X)
        if X.shape[0] != len(labels):
            raise NbtextError(f"X has {X.shape[0]} rows but there are {len(labels)} labels")
        classes, sums, _, cc = Counts.summed(X, labels)
        rows, k = self._class_rows(classes), len(self.classes)
        taken = self.token_sums.take(np.asarray(cols, dtype=np.int64))
        _append_summed(taken, sums, None, rows, sign=-1.0)
        taken.settle()
        cc = self.class_count - np.bincount(rows, weights=cc, minlength=k)
        if (taken.values < -1e-9).any() or (cc < -1e-9).any():
            raise NbtextError("that would take counts below zero: those documents were not learned")
        totals = self.class_totals() - _class_sums(sums, rows, k)
        return taken.with_values(np.maximum(taken.values, 0.0)), np.maximum(totals, 0.0), np.maximum(cc, 0.0)

    def minus_at(self, X, labels: Sequence[str], cols: np.ndarray, doc_freq: bool = True) -> tuple:
        """What ``plus(X', labels, -1)`` gives at the columns ``cols`` alone, X' being X over the
        whole vocabulary with column j at ``cols[j]``: (feature counts at cols, tokens x classes;
        document frequencies at cols, or None without ``doc_freq``; class counts), the same
        numbers bit for bit (every other column keeps this model's counts); and this model's
        feature counts at cols, as they were. Calibration's folds take each fold out of the model
        this way, without a copy of the whole counts per fold on train's peak memory. (Counts of
        one or two classes: sparse counts' folds are plus() with their own columns.)"""
        if self._sp is not None:
            raise ValueError("minus_at reads counts of one or two classes")
        self.check_labels(labels)
        cols = np.asarray(cols, dtype=np.int64)
        X = Rows.of(X)
        if X.shape[0] != len(labels):
            raise NbtextError(f"X has {X.shape[0]} rows but there are {len(labels)} labels")
        # _sums at weight -1, with one array per entry fewer: a sum of negated values is the
        # negated sum (rounding to nearest is symmetric), and counts of -1 are whole numbers
        # (a zero's sign differs, and is gone once added to this model's counts below).
        idx, k = self._class_rows(labels), len(self.classes)
        fc, df = X.group_sums(idx, k, doc_freq=doc_freq)
        np.negative(fc, out=fc)
        if doc_freq:
            df = np.maximum(self.doc_freq[cols] - df.astype(np.float64), 0.0)
        cc = -np.bincount(idx, minlength=k).astype(np.float64)
        held = take_rows(self.token_major, cols)
        np.add(held, fc, out=fc)
        cc = self.class_count + cc
        if (fc < -1e-9).any() or (cc < -1e-9).any():
            raise NbtextError("that would take counts below zero: those documents were not learned")
        return np.maximum(fc, 0.0, out=fc), df, np.maximum(cc, 0.0), held

    @staticmethod
    def _distinct(ids: np.ndarray) -> bool:
        """No id repeats (sorted, no two neighbours equal: a chunk's ids, not a scratch array
        as long as the vocabulary)."""
        s = np.sort(ids)
        return not (s[1:] == s[:-1]).any()

    def merge(self, other: "Counts", ids: np.ndarray | None = None, width: int | None = None) -> None:
        """Add another model's counts; ``ids``: the id each of its tokens has here."""
        cols = np.arange(other.width) if ids is None else np.asarray(ids, dtype=np.int64)
        width = width if width is not None else max(self.width, int(cols.max(initial=-1)) + 1)
        rows = self._class_rows(other.classes)
        self._reserve(width)
        if other.classes and self._sp is not None:
            s = other.token_sums
            self._sp.append(cols[s.token_of_entries()], rows[s.classes.astype(np.int64)], s.values)
            self._check_held()
        elif other.classes:
            np.add.at(self._fc, (cols[:, None], rows[None, :]), other.token_major)
        np.maximum.at(self._ls, cols, other.last_seen)
        if other.classes:
            self._cc[rows] += other.class_count
            if self._df.dtype != np.float64:  # (as a model's are: int32 wraps a token in 2**31 documents)
                self._df = self._df.astype(np.float64)
            np.add.at(self._df, cols, other.doc_freq.astype(np.float64))
        self.version += 1

    # -- taking parts ---------------------------------------------------------------------------
    def compact(self) -> None:
        """Cut the arrays to size (growth leaves a quarter spare) and make the document
        frequencies float64, as a finished model keeps them."""
        k = len(self.classes)
        if self._sp is not None:
            self.token_sums  # (settled, as long as the vocabulary)
        elif self._fc.shape != (self.width, k):  # (a slice would keep the spare rows)
            try:  # (cut off in place, where nothing else holds the array: a copy of the whole
                if self._fc.shape[1] != k:  # counts would sit on train's serial path)
                    raise ValueError
                self._fc.resize((self.width, k), refcheck=True)
            except ValueError:  # (a view of it held elsewhere, another layout: a copy)
                self._fc = self._fc[:self.width, :k].copy()
        self._cc = self._cc[:k].copy()
        self._df = self._df[:self.width].astype(np.float64)
        self._ls = self._ls[:self.width].copy()

    def columns(self, keep: np.ndarray, doc_freq: bool = True) -> "Counts":
        """The counts of the tokens ``keep`` (sorted ids), renumbered 0, 1, ...; without
        ``doc_freq``, a copy for reading its feature and class counts alone (its document
        frequencies are left out: reading them is an error), as the model file's coding
        takes one (store.codec), sparing the memory of the document frequencies."""
        out = Counts(self.classes, 0)
        # (take_rows: the rows gathered by a loop that copies each row whole, where indexing
        # goes element by element: the same values, measured faster at save: docs/bench.md)
        if self._sp is not None:
            out._sp = self.token_sums.take(keep)
        else:
            out._fc = take_rows(self.token_major, np.asarray(keep))
        out._cc = self.class_count.copy()
        out._df = self.doc_freq[keep].astype(np.float64) if doc_freq else None
        out._ls, out.today = self.last_seen[keep], self.today
        out.width = len(keep)
        return out

    def check_labels(self, labels, where: str = "") -> None:
        """Refuse a label that is not one of the classes (``where``: the document's id)."""
        unknown = sorted(set(labels) - set(self.classes))
        if unknown:
            raise NbtextError(f"{where + ': ' if where else ''}unknown label {unknown[0]!r}: the model's "
                              f"classes are {', '.join(self.classes)}")

    def check_trainable(self) -> None:
        need_two_classes([c for c, n in zip(self.classes, self.class_count) if n > 0])


def need_two_classes(present: list[str]) -> None:
    """Refuse to train on documents of fewer than two classes (``present``: their labels)."""
    if len(present) < 2:
        raise NbtextError(f"need documents of at least two classes to train, got {present or 'none'}")
