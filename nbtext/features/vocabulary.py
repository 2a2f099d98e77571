"""The vocabulary: tokens, their 64-bit keys and their ids (columns of the counts).

The Vocabulary holds no Python string per token:
its tokens live in one UTF-8 byte string, found by a 64-bit hash of their bytes in an index (a
hash table in the compiled kernel, or sorted numpy arrays, the reference). That is about 30 bytes
a token where a dict of strings takes about 200, and a model file's vocabulary loads without
creating one string.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from ..errors import NbtextError
from .rows import index_dtype, ranges

_FNV_BASIS = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def encode_tokens(tokens: list[str]) -> bytes:
    """The tokens as UTF-8, each followed by a NUL (tokens never hold a NUL)."""
    return ("\x00".join(tokens) + "\x00").encode("utf-8", "surrogatepass") if tokens else b""


def token_spans(blob: bytes | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, length in bytes) of each NUL-terminated token of ``blob``."""
    b = np.frombuffer(blob, dtype=np.uint8) if isinstance(blob, (bytes, bytearray)) else blob
    ends = np.flatnonzero(b == 0)
    starts = np.empty_like(ends)  # (no temporaries: this runs over a whole vocabulary at save)
    if len(ends):
        starts[0] = 0
        np.add(ends[:-1], 1, out=starts[1:])
    return starts, np.subtract(ends, starts, out=ends)


def token_keys(blob: bytes | np.ndarray) -> np.ndarray:
    """A 64-bit key per NUL-terminated token of ``blob``: FNV-1a over its bytes, then the
    SplitMix64 finalizer. Two of a million distinct tokens share a key with probability
    about 3e-8; the vocabulary takes a token's key for the token.

    With the compiled kernel, its `keys` (the loop the kernel keys every token with), which
    loads a model several times faster than numpy (docs/kernel.md); the numpy code below is
    the reference (tests/test_kernel.py holds them equal on any bytes)."""
    from .implementation import compiled

    kernel = compiled()
    if kernel is not None:
        return np.frombuffer(kernel.keys(blob), dtype=np.uint64)
    return token_keys_numpy(blob)


def token_keys_numpy(blob: bytes | np.ndarray) -> np.ndarray:
    """token_keys in numpy, a byte position at a time over the tokens still that long."""
    b = np.frombuffer(blob, dtype=np.uint8) if isinstance(blob, (bytes, bytearray)) else blob
    starts, lengths = token_spans(b)
    n = len(starts)
    by_length = np.argsort(-lengths, kind="stable")  # longest first: the tokens still going
    s, desc = starts[by_length], lengths[by_length]  # at byte j are a prefix of this order
    h = np.full(n, _FNV_BASIS, dtype=np.uint64)
    asc = desc[::-1]
    for j in range(int(desc[0]) if n else 0):
        k = n - int(np.searchsorted(asc, j, side="right"))  # tokens longer than j bytes
        h[:k] ^= b[s[:k] + j]
        h[:k] *= _FNV_PRIME
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    keys = np.empty(n, dtype=np.uint64)
    keys[by_length] = h
    return keys


def _key_array(keys) -> np.ndarray:
    """Keys as the index reads them: uint64, contiguous and aligned."""
    return np.require(keys, dtype=np.uint64, requirements=["C", "A"])


def checked_keys(blob: bytes, tokens: list[str]) -> np.ndarray:
    keys = token_keys(blob)
    if len(keys) != len(tokens):
        raise NbtextError("a token contains a NUL character; tokens must not")
    return keys


class _Level:
    """Keys in sorted order with their ids (32-bit while they fit)."""

    def __init__(self):
        self.keys = np.zeros(0, dtype=np.uint64)
        self.ids = np.zeros(0, dtype=np.int32)

    def find_sorted(self, keys: np.ndarray) -> np.ndarray:
        """Ids of sorted keys (-1: absent). Probing in sorted order walks the keys forwards,
        which measures faster than random probes (docs/bench.md)."""
        if not len(self.keys):
            return np.full(len(keys), -1, dtype=np.int64)
        pos = np.searchsorted(self.keys, keys)
        np.minimum(pos, len(self.keys) - 1, out=pos)
        return np.where(self.keys[pos] == keys, self.ids[pos].astype(np.int64), -1)

    def insert_sorted(self, keys: np.ndarray, ids: np.ndarray):
        if len(ids) and ids.max() >= 2**31:
            self.ids = self.ids.astype(np.int64)
        at = np.searchsorted(self.keys, keys)
        self.keys, self.ids = np.insert(self.keys, at, keys), np.insert(self.ids, at, ids)


class SortedLevels:
    """The vocabulary's key -> id index in numpy, the reference (the compiled KeyIndex gives
    the same ids and appends the same bytes): two sorted levels, the main one and a small one
    that takes new keys and is folded into the main one when it reaches an eighth of its size,
    so adding a chunk's tokens costs the chunk's size, not the vocabulary's. About 12 bytes a
    token."""

    def __init__(self):
        self._main, self._recent = _Level(), _Level()
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def find(self, keys: np.ndarray) -> np.ndarray:
        order = np.argsort(keys)
        ids = np.empty(len(keys), dtype=np.int64)
        ids[order] = self._find_sorted(keys[order])
        return ids

    def _find_sorted(self, keys: np.ndarray) -> np.ndarray:
        ids = self._main.find_sorted(keys)
        if len(self._recent.keys):
            miss = ids < 0
            ids[miss] = self._recent.find_sorted(keys[miss])
        return ids

    def extend(self, blob: bytes, keys: np.ndarray, out: bytearray) -> np.ndarray:
        """Ids of the tokens of ``blob`` (keys: theirs), the new ones (by key) numbered on in
        order of first appearance, their bytes appended to ``out`` in that order.

        The keys are sorted once: the lookups, the distinct new keys (equal keys are then
        neighbours) and their insertion all use that order (one sort a chunk, not three).
        ValueError, with nothing changed, where the blob holds another number of tokens (the
        kernel's KeyIndex.extend says the same)."""
        tokens = (blob if isinstance(blob, (bytes, bytearray)) else bytes(blob)).count(0)
        if tokens != len(keys) or (len(blob) and blob[-1] != 0):
            raise ValueError(f"{len(keys)} keys for {tokens} NUL-terminated tokens"
                             + (" and bytes after the last" if len(blob) and blob[-1] != 0 else ""))
        order = np.argsort(keys)
        ks = keys[order]
        if not self._n and len(keys):  # a whole vocabulary at once (a model file's)
            if not (ks[1:] == ks[:-1]).any():
                out += blob
                self._n = len(keys)
                self._main.keys, self._main.ids = ks, order.astype(index_dtype(len(order)))
                return np.arange(len(keys), dtype=np.int64)
        found = self._find_sorted(ks)
        missing = np.flatnonzero(found < 0)       # positions in sorted order
        if len(missing):
            mk = ks[missing]
            fresh = np.ones(len(mk), dtype=bool)  # the first of each run of equal keys
            fresh[1:] = mk[1:] != mk[:-1]
            first = np.minimum.reduceat(order[missing], np.flatnonzero(fresh))  # in the input
            by_input = np.argsort(first)
            new_ids = np.empty(len(first), dtype=np.int64)
            new_ids[by_input] = np.arange(self._n, self._n + len(first))
            found[missing] = new_ids[np.cumsum(fresh) - 1]
            starts, lengths = token_spans(blob)
            rows = first[by_input]                # first occurrences, in input order
            out += gather(blob, starts, lengths, rows)
            self._recent.insert_sorted(mk[fresh], new_ids)
            self._n += len(rows)
            if len(self._recent.keys) * 8 > len(self._main.keys):
                self._main.insert_sorted(self._recent.keys, self._recent.ids)
                self._recent = _Level()
        ids = np.empty(len(keys), dtype=np.int64)
        ids[order] = found
        return ids

    def reserve(self, n: int) -> None:
        """(the sorted levels grow as keys come: nothing to make ahead)"""

    def keys(self) -> np.ndarray:
        keys = np.empty(self._n, dtype=np.uint64)
        for level in (self._main, self._recent):
            keys[level.ids] = level.keys
        return keys


class CompiledIndex:
    """The same index from the compiled kernel (nbtext/_c/keyindex.c, KeyIndex): an open-addressing
    hash table of 32-bit ids over the keys kept in id order, seeded from os.urandom so that
    nobody can choose tokens whose keys pile into one probe chain (docs/hostile.md). Each call
    is one pass over the chunk; about 14-17 bytes a token."""

    def __init__(self, kernel):
        self._x = kernel.KeyIndex(*struct.unpack("<QQ", os.urandom(16)))

    def __len__(self) -> int:
        return len(self._x)

    def find(self, keys: np.ndarray) -> np.ndarray:
        ids = np.empty(len(keys), dtype=np.int64)
        self._x.find(keys, ids)
        return ids

    def extend(self, blob: bytes, keys: np.ndarray, out: bytearray) -> np.ndarray:
        ids = np.empty(len(keys), dtype=np.int64)
        self._x.extend(blob, keys, ids, out)
        return ids

    def reserve(self, n: int) -> None:
        self._x.reserve(n)

    def keys(self) -> np.ndarray:
        keys = np.empty(len(self._x), dtype=np.uint64)
        self._x.keys(keys)
        return keys


def new_index() -> SortedLevels | CompiledIndex:
    """The key -> id index of a new vocabulary: the kernel's when it is the implementation in
    use (nbtext.features.implementation), else numpy's."""
    from .implementation import compiled

    kernel = compiled()
    return SortedLevels() if kernel is None else CompiledIndex(kernel)


class Vocabulary:
    """Tokens in first-seen order; a token's id is its position. New tokens only ever append,
    so ids stay valid while a model learns. A token is found by its 64-bit key in an index
    (new_index: a hash table in C, or sorted levels in numpy: the same ids either way)."""

    def __init__(self, tokens: Iterable[str] = ()):
        self._blob = bytearray()
        self._starts: np.ndarray | None = None  # byte offset of each token, made when asked for
        self._n = 0
        self._index = new_index()
        tokens = list(tokens)
        if tokens:
            self.extend(tokens)

    @classmethod
    def from_encoded(cls, blob: bytes, keys: np.ndarray | None = None) -> "Vocabulary":
        """The vocabulary of NUL-terminated UTF-8 tokens (duplicates are dropped: check len)."""
        v = cls()
        v.extend_encoded(blob, keys)
        return v

    def __reduce__(self):
        """Pickled (joblib, a cluster, a user's copy) as its tokens and keys; the index is
        built again where it is unpickled, with that process's kernel and seed."""
        return Vocabulary.from_encoded, (bytes(self._blob), self.keys())

    def __len__(self) -> int:
        return self._n

    def _token_starts(self) -> np.ndarray:
        """Byte offset of each token in the blob. Not kept while the vocabulary grows: the
        index holds the keys and the blob the tokens, and each copy more adds to train's
        peak memory."""
        if self._starts is None or len(self._starts) != self._n:
            self._starts = token_spans(self._blob)[0]  # (the view on the blob ends with the call)
        return self._starts

    def drop_index(self) -> None:
        """Free the key -> id index (the tokens stay): train is done finding tokens once it
        has counted, and the index is a sizeable part of its peak memory, held through
        calibration and saving, which read only the tokens. Built again
        from the tokens when it is next needed, with the same ids: for a vocabulary whose
        keys are its tokens' token_keys, as counting makes them (not one given other keys)."""
        self._index = None

    def _indexed(self):
        if self._index is None:
            index = new_index()
            if self._n:
                index.extend(bytes(self._blob), token_keys(self._blob), bytearray())
            self._index = index
        return self._index

    def compiled_index(self):
        """The kernel's KeyIndex behind this vocabulary, for a kernel function that looks
        tokens up itself (nbtext/_c/score.c), or None where the index is numpy's."""
        index = self._indexed()
        return index._x if isinstance(index, CompiledIndex) else None

    def reserve(self, n: int) -> None:
        """Room in the key -> id index for ``n`` tokens in all, made now (the same ids as without:
        a hash table grown once rather than doubled on the way, where the caller knows how far it
        will grow). Nothing where the index is dropped."""
        if self._index is not None:
            self._index.reserve(n)

    # -- finding and adding -----------------------------------------------------------
    def find_keys(self, keys: np.ndarray) -> np.ndarray:
        """Ids of the tokens with these keys, -1 for the ones the vocabulary lacks."""
        return self._indexed().find(_key_array(keys))

    def extend_encoded(self, blob: bytes, keys: np.ndarray | None = None) -> np.ndarray:
        """Ids of NUL-terminated tokens (``keys``: theirs, else token_keys), appending the ones
        not seen yet (by key) in order of first appearance."""
        if keys is None:
            keys = token_keys(blob)
        keys = _key_array(keys)
        index = self._indexed()  # (which refuses a blob of another number of tokens)
        ids = index.extend(blob, keys, self._blob)
        self._n = len(index)
        return ids

    def extend(self, distinct: list[str]) -> np.ndarray:
        """Ids of tokens (another vocabulary's), appending the new ones in order."""
        blob = encode_tokens(distinct)
        return self.extend_encoded(blob, checked_keys(blob, distinct))

    def lookup(self, tokens: list[str]) -> np.ndarray:
        """Ids of the tokens, -1 for tokens the vocabulary does not know."""
        keys = token_keys(encode_tokens(tokens))
        if len(keys) == len(tokens):
            return self.find_keys(keys)
        # A token holding a NUL (never one of ours) cannot be in the vocabulary.
        clean = np.fromiter(("\x00" not in t for t in tokens), dtype=bool, count=len(tokens))
        ids = np.full(len(tokens), -1, dtype=np.int64)
        ids[clean] = self.lookup([t for t, ok in zip(tokens, clean.tolist()) if ok])
        return ids

    # -- reading tokens back ----------------------------------------------------------
    def encoded(self) -> bytes:
        """All tokens, in id order, as UTF-8 each followed by a NUL."""
        return bytes(self._blob)

    def buffer(self) -> memoryview:
        """encoded() without the copy: a read-only view, which holds the vocabulary from
        growing while it lives."""
        return memoryview(self._blob).toreadonly()

    def keys(self) -> np.ndarray:
        """Each token's key (see token_keys), in id order (a new array)."""
        return self._index.keys() if self._index is not None else token_keys(bytes(self._blob))

    def subset(self, ids: np.ndarray, room: int | None = None) -> "Vocabulary":
        """A new vocabulary of the tokens with these ids, in this order; its index made with
        ``room`` for that many tokens in all (reserve), when given."""
        from .implementation import compiled

        ids, kernel = np.ascontiguousarray(ids, dtype=np.int64), compiled()
        v = Vocabulary()
        if room is not None:
            v.reserve(room)
        if kernel is not None and (len(ids) < 2 or (ids[1:] > ids[:-1]).all()):  # (a pruning's: increasing)
            v.extend_encoded(kernel.pick_tokens(self._blob, ids), self.keys()[ids])
            return v
        starts, keys = self._token_starts(), self.keys()
        ends = np.append(starts[1:], len(self._blob)) if self._n else starts
        v.extend_encoded(gather(bytes(self._blob), starts, ends - starts - 1, ids), keys[ids])
        return v

    @property
    def tokens(self) -> list[str]:
        """All tokens in id order (a new list of V strings: for dumps, not for lookups)."""
        return self._blob.decode("utf-8", "surrogatepass").split("\x00")[:-1] if self._n else []

    def token(self, i: int) -> str:
        start = int(self._token_starts()[i])
        return self._blob[start:self._blob.index(0, start)].decode("utf-8", "surrogatepass")

    @property
    def index(self) -> "_Index":
        """A read-only token -> id mapping."""
        return _Index(self)


class _Index(Mapping):
    def __init__(self, vocab: Vocabulary):
        self.vocab = vocab

    def __getitem__(self, token: str) -> int:
        i = int(self.vocab.lookup([token])[0]) if isinstance(token, str) else -1
        if i < 0:
            raise KeyError(token)
        return i

    def __contains__(self, token) -> bool:
        return isinstance(token, str) and self.vocab.lookup([token])[0] >= 0

    def __iter__(self) -> Iterator[str]:
        return iter(self.vocab.tokens)

    def __len__(self) -> int:
        return len(self.vocab)

    def items(self):
        return zip(self.vocab.tokens, range(len(self.vocab)))


def gather(blob: bytes, starts: np.ndarray, lengths: np.ndarray, rows: np.ndarray,
           piece: int = 1 << 16) -> bytes:
    """The NUL-terminated tokens ``rows`` of ``blob``, in that order, gathered a piece at a
    time (an index per byte of a whole vocabulary would take eight times its size)."""
    if len(rows) == len(starts) and (rows == np.arange(len(rows))).all():
        return bytes(blob)
    b = np.frombuffer(blob, dtype=np.uint8)
    return b"".join(b[ranges(starts[r], lengths[r] + 1)].tobytes()
                    for r in (rows[i:i + piece] for i in range(0, len(rows), piece)))
