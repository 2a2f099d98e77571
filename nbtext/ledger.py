"""A model's ledger: the content digests of the documents it learned (operations.digest), 16 bytes
each, so that learn refuses a document learned twice, forget takes out only what was learned and
merge refuses models that share a document.

It grows with the documents of a corpus, not with its vocabulary, and is kept whole (learn and
forget need every digest): so it is held as bytes, 16 a document, not as Python objects (a bytes
object and its slot in a set take about 90 a digest), and train's memory budget charges it
(docs/memory.md). The digests are one sorted numpy array of distinct 16-byte strings;
membership is a binary search. Additions go to a pending buffer first, merged into the array once
it holds a quarter as many (and before anything reads the ledger): each merge copies the array
once, so adding a corpus's digests chunk by chunk costs time in proportion to them.

The array's type is ``S16``, compared as bytes are (byte by byte, as ``sorted`` orders the file's
digests); numpy gives its items back without their trailing NUL bytes, so digests leave it only
as whole buffers (``tobytes``), never item by item.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

DIGEST_SIZE = 16
DIGEST = np.dtype(f"S{DIGEST_SIZE}")
MERGE_FROM = 1 << 16  # digests pending before a merge, at least (else a quarter of those held)


class Ledger:
    """A set of 16-byte digests, held as sorted bytes (see the module's docstring)."""

    __slots__ = ("_held", "_pending")

    def __init__(self, digests: Iterable[bytes] = ()):
        self._held = np.empty(0, dtype=DIGEST)  # sorted, distinct
        self._pending = bytearray()             # digests added since, in any order, repeats allowed
        self.update(digests)

    @classmethod
    def from_bytes(cls, data) -> "Ledger":
        """The ledger of concatenated digests (a model file's section: sorted, as save writes it;
        a stranger's file may not be, and is sorted here). ValueError if not whole digests."""
        data = memoryview(data).cast("B")  # (bytes, whatever a section's items)
        if len(data) % DIGEST_SIZE:
            raise ValueError(f"the ledger is not a whole number of {DIGEST_SIZE}-byte digests")
        out = cls()
        held = np.frombuffer(data, dtype=DIGEST).copy()  # (a copy: not a view of a whole file's bytes)
        out._held = held if bool((held[1:] > held[:-1]).all()) else _distinct(np.sort(held))
        return out

    # -- changes ----------------------------------------------------------------------------
    def add(self, digest: bytes) -> None:
        self.update(_checked(digest))

    def update(self, digests: bytes | Iterable[bytes]) -> None:
        """Add digests: 16-byte bytes each, or bytes of them back to back (a chunk's, as train's
        workers send them)."""
        data = digests if isinstance(digests, bytes) else b"".join(_checked(d) for d in digests)
        if len(data) % DIGEST_SIZE:
            raise ValueError(f"digests are {DIGEST_SIZE} bytes each")
        self._pending += data
        if len(self._pending) // DIGEST_SIZE >= max(MERGE_FROM, len(self._held) // 4):
            self._merge()

    def discard(self, digest: bytes) -> None:
        self.difference_update([digest])

    def difference_update(self, digests: Iterable[bytes]) -> None:
        """Take the digests out where held (one copy of the array for all of them)."""
        held = self._sorted()
        gone = _as_array(b"".join(_checked(d) for d in digests))
        at = _found(held, gone)
        if len(at):
            self._held = np.delete(held, at)

    # -- reading ----------------------------------------------------------------------------
    def __contains__(self, digest) -> bool:
        if not isinstance(digest, bytes) or len(digest) != DIGEST_SIZE:
            return False
        return bool(len(_found(self._sorted(), _as_array(digest))))

    def __len__(self) -> int:
        return len(self._sorted())

    def __bool__(self) -> bool:
        return bool(len(self._held) or self._pending)

    def __iter__(self) -> Iterator[bytes]:
        """The digests in sorted order."""
        data = self.tobytes()
        return (data[i:i + DIGEST_SIZE] for i in range(0, len(data), DIGEST_SIZE))

    def __eq__(self, other) -> bool:
        if not isinstance(other, Ledger):
            return NotImplemented
        return self.tobytes() == other.tobytes()

    __hash__ = None  # (mutable, as a set)

    def __repr__(self) -> str:
        return f"Ledger({len(self)} digests)"

    def tobytes(self) -> bytes:
        """The digests, sorted, back to back (the model file's section)."""
        return self._sorted().tobytes()

    def common(self, other: "Ledger") -> int:
        """How many digests the two hold both (merge's test)."""
        small, large = sorted((self._sorted(), other._sorted()), key=len)
        return len(_found(large, small))

    @property
    def nbytes(self) -> int:
        """The bytes held (train's budget charges them)."""
        return self._held.nbytes + len(self._pending)

    def _sorted(self) -> np.ndarray:
        if self._pending:
            self._merge()
        return self._held

    def _merge(self) -> None:
        """The pending digests into the sorted array: sorted themselves, those already held or
        repeated dropped, then put in their places (np.insert: one copy of the array)."""
        pending, self._pending = self._pending, bytearray()
        new = _distinct(np.sort(np.frombuffer(pending, dtype=DIGEST)))
        del pending  # (the sorted copy holds them now)
        held = self._held
        if not len(held):
            self._held = new
            return
        at = np.searchsorted(held, new)
        fresh = held[np.minimum(at, len(held) - 1)] != new
        self._held = np.insert(held, at[fresh], new[fresh])


def _checked(digest) -> bytes:
    if not isinstance(digest, bytes) or len(digest) != DIGEST_SIZE:
        raise ValueError(f"a ledger digest is {DIGEST_SIZE} bytes, not {digest!r:.40}")
    return digest


def _as_array(data) -> np.ndarray:
    return np.frombuffer(bytes(data), dtype=DIGEST)


def _distinct(s: np.ndarray) -> np.ndarray:
    """A sorted array without its repeats."""
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if len(s) > 1 else s


def _found(held: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The positions in sorted ``held`` of the items of ``wanted`` it holds (binary search)."""
    if not len(held) or not len(wanted):
        return np.empty(0, dtype=np.intp)
    at = np.minimum(np.searchsorted(held, wanted), len(held) - 1)
    return at[held[at] == wanted]
