"""Token lists to a sparse document-by-term count matrix over a (growing) vocabulary."""
from __future__ import annotations

from array import array
from collections.abc import Iterable

import numpy as np
import scipy.sparse as sp


class Vocabulary:
    """Tokens in first-seen order; a token's id is its position. New tokens only ever append,
    so ids stay valid while a model learns."""

    def __init__(self, tokens: Iterable[str] = ()):
        self.tokens: list[str] = list(tokens)
        self.index: dict[str, int] = {t: i for i, t in enumerate(self.tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    def ids(self, tokens: Iterable[str]) -> list[int]:
        """Ids of the tokens, appending those not seen yet."""
        index, vocab = self.index, self.tokens
        out = []
        for t in tokens:
            i = index.get(t)
            if i is None:
                i = index[t] = len(vocab)
                vocab.append(t)
            out.append(i)
        return out

    def add(self, tokens: Iterable[str]) -> np.ndarray:
        return np.asarray(self.ids(tokens), dtype=np.int64)


def count_matrix(token_lists: Iterable[list[str]], vocab: Vocabulary, grow: bool) -> sp.csr_matrix:
    """Rows are documents, columns vocabulary ids, values token counts.

    With grow=False tokens the vocabulary does not know are dropped (they cannot be scored).
    """
    index = vocab.index
    indices = array("q")
    indptr = array("q", [0])
    if grow:
        for toks in token_lists:
            indices.extend(vocab.ids(toks))
            indptr.append(len(indices))
    else:
        get = index.get
        for toks in token_lists:
            indices.extend(i for i in map(get, toks) if i is not None)
            indptr.append(len(indices))
    n_docs = len(indptr) - 1
    idx = np.frombuffer(indices, dtype=np.int64) if len(indices) else np.zeros(0, np.int64)
    X = sp.csr_matrix(
        (np.ones(len(idx)), idx, np.frombuffer(indptr, dtype=np.int64)),
        shape=(n_docs, len(vocab)),
    )
    X.sum_duplicates()
    return X
