"""Documents to counts: token lists to a sparse document-by-term count matrix.

A batch of documents is counted against a plain dict of its own distinct tokens (the only
per-token Python loop); those distinct tokens are then found in, or added to, a shared
Vocabulary in one vectorized step (the batch's "local" columns mapped onto its ids).
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from .rows import Rows, index_dtype
from .vocabulary import Vocabulary, checked_keys, encode_tokens

if TYPE_CHECKING:
    from ..settings import TokenizerSettings


def local_count_arrays(token_lists: Iterable[list[str]]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """(distinct tokens in first-seen order, and the CSR data, indices and indptr of the count
    matrix over them, indices sorted within each row) of a batch of documents, with numpy
    alone: train's worker processes then never import scipy, which would add to each one's
    start-up."""
    lists = token_lists if isinstance(token_lists, list) else list(token_lists)
    local: dict[str, int] = {}
    idx = np.asarray([local.setdefault(t, len(local)) for t in itertools.chain.from_iterable(lists)],
                     dtype=np.int64)
    n, width = len(lists), max(len(local), 1)
    rows = np.repeat(np.arange(n, dtype=np.int64),
                     np.fromiter(map(len, lists), dtype=np.int64, count=n))
    cells, counts = np.unique(rows * width + idx, return_counts=True)  # row-major: CSR order
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(cells // width, minlength=n), out=indptr[1:])
    return list(local), counts.astype(np.float64), (cells % width).astype(index_dtype(width)), indptr


def count_documents(datas: list, settings: TokenizerSettings) -> "Batch":
    """The map step, run by worker processes: a chunk of documents tokenized and counted.
    numpy only (a worker never imports scipy, which would add to its start-up)."""
    from ..text.tokenizer import Tokenizer
    from . import kernel

    tok = Tokenizer(settings)
    compiled = kernel.compiled()
    if compiled is None:
        return Batch.of_tokens([tok(d) for d in datas])
    blob, keys, data, indices, indptr, n_cols = kernel.count(compiled, tok, datas)
    return Batch(blob, keys, Rows(data, indices, indptr, n_cols), distinct=True)  # (a key, a column)


def count_rows(token_lists: Iterable[list[str]], vocab: Vocabulary, grow: bool = False) -> Rows:
    """Rows are documents, columns vocabulary ids, values token counts.

    With grow=False tokens the vocabulary does not know are dropped (they cannot be scored).
    """
    return Batch.of_tokens(token_lists).onto(vocab, grow)


class Batch:
    """Documents counted over their own distinct tokens: what a worker process sends back for a
    chunk (bytes and arrays, cheap to send, hashed in the worker), and what the parent then
    puts onto the shared vocabulary, whose ids are only given there, after the reduction."""

    __slots__ = ("blob", "keys", "rows", "distinct")

    def __init__(self, blob: bytes, keys: np.ndarray, rows: Rows, distinct: bool = False):
        """``distinct``: no two columns share a key, known as the batch is made (the kernel's
        Counter gives each key one column); else keys_distinct looks."""
        self.blob, self.keys, self.rows, self.distinct = blob, keys, rows, distinct

    @classmethod
    def of_tokens(cls, token_lists: Iterable[list[str]]) -> "Batch":
        distinct, data, indices, indptr = local_count_arrays(token_lists)
        blob = encode_tokens(distinct)
        return cls(blob, checked_keys(blob, distinct), Rows(data, indices, indptr, len(distinct)))

    def keys_distinct(self) -> bool:
        """Whether no two of the chunk's tokens share a 64-bit key: then no two of its columns
        get one id (a vocabulary gives distinct keys distinct ids), which Counts.add_summed
        need not check in the parent (sorting each chunk's ids there would sit on train's
        serial reduce; the worker sorts the keys instead, off that path, or knows them distinct
        where the kernel made the batch)."""
        return self.distinct or len(self.keys) < 2 or bool((np.diff(np.sort(self.keys)) != 0).all())

    def ids_in(self, vocab: Vocabulary, grow: bool) -> np.ndarray:
        """Each column's id in ``vocab``: added when ``grow``, else -1 for tokens it lacks."""
        return vocab.extend_encoded(self.blob, self.keys) if grow else vocab.find_keys(self.keys)

    def onto(self, vocab: Vocabulary, grow: bool) -> Rows:
        """The rows over ``vocab``'s ids (without ``grow``, tokens it lacks are dropped: they
        cannot be scored). Distinct keys have distinct ids: the kernel moves the rows then,
        without numpy's sort of every entry (measured faster at predict: docs/bench.md)."""
        return self.rows.moved(self.ids_in(vocab, grow), len(vocab), distinct=self.distinct)
