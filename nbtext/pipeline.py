"""Documents -> tokens -> count matrices, chunk by chunk, on one core or several.

Chunks keep memory bounded (a corpus is never held whole: each chunk's counts are added to
the model and dropped) and give joblib's worker processes work big enough to be worth
sending. Workers count against a vocabulary of their own; the parent maps it onto the shared
one, so the result is identical to counting on one core.
"""
from __future__ import annotations

import itertools
import os
import warnings
from collections import deque
from dataclasses import dataclass
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from .errors import NbtextError
from .decision import DecisionOptions
from .model import Model
from .naive_bayes import class_sums, document_transform
from .operations import digest
from .read import Document
from .rows import Rows
from .settings import ModelSettings, TokenizerSettings
from .vectorize import Vocabulary, count_documents

if TYPE_CHECKING:
    import scipy.sparse as sp

CHUNK = 400            # documents in a chunk at most
CHUNK_BYTES = 1 << 18  # and about this much input: chunks of similar cost keep both cores busy


@dataclass(frozen=True)
class FeatureOptions:
    min_df: int = 1
    max_df: float = 1.0
    max_features: int | None = None
    select: str = "frequency"  # how max_features ranks tokens: frequency, chi2 or mi (features.py)

    def __post_init__(self):
        if self.min_df < 1:
            raise NbtextError(f"--min-df must be at least 1, got {self.min_df}")
        if not (0 < self.max_df <= 1):
            raise NbtextError(f"--max-df must be in (0, 1], got {self.max_df}")
        if self.max_features is not None and self.max_features < 1:
            raise NbtextError(f"--max-features must be at least 1, got {self.max_features}")
        from .features import CRITERIA

        if self.select not in CRITERIA:
            raise NbtextError(f"unknown --select {self.select!r} (choose from {', '.join(CRITERIA)})")
        if self.select != "frequency" and self.max_features is None:
            raise NbtextError(f"--select {self.select} ranks tokens for --max-features: give --max-features N")


def default_jobs() -> int:
    return max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, 8))


def _unpack(result) -> tuple[bytes, np.ndarray, Rows]:
    """(encoded tokens, their keys, count matrix over them) of a count_documents result."""
    blob, keys, (data, indices, indptr, width) = result
    return blob, keys, Rows(data, indices, indptr, width)


def _onto(result, vocab: Vocabulary, grow: bool) -> Rows:
    """A chunk's matrix over its own tokens, moved onto the shared vocabulary. Without
    ``grow``, tokens the shared vocabulary lacks are dropped (they cannot be scored)."""
    blob, keys, X = _unpack(result)
    mapping = vocab.extend_encoded(blob, keys) if grow else vocab.find_keys(keys)
    return X.moved(mapping, len(vocab))


def _chunks(docs: Iterable[Document], size: int, max_bytes: int) -> Iterator[list[Document]]:
    """Consecutive lists of at most ``size`` documents that stop once they hold ``max_bytes``:
    with a count alone, one chunk of long HTML mail took as long as the rest of a corpus
    (spamassassin-2002 on 2 cores, 400 documents a chunk: 4.8 s, as long as one core)."""
    chunk, held = [], 0
    for d in docs:
        chunk.append(d)
        held += len(d.data)
        if len(chunk) >= size or held >= max_bytes:
            yield chunk
            chunk, held = [], 0
    if chunk:
        yield chunk


def counted_chunks(docs: Iterable[Document], settings: TokenizerSettings, vocab: Vocabulary,
                   grow: bool, n_jobs: int = 1, chunk_size: int = CHUNK
                   ) -> Iterator[tuple[list[Document], Rows]]:
    """(documents, their count matrix over ``vocab``) for consecutive chunks, in input order."""
    for chunk, result in _counted(docs, settings, n_jobs, chunk_size):
        yield chunk, _onto(result, vocab, grow)


def _counted(docs: Iterable[Document], settings: TokenizerSettings, n_jobs: int = 1,
             chunk_size: int = CHUNK) -> Iterator[tuple[list[Document], tuple]]:
    """(documents, count_documents's result) for consecutive chunks, in input order.

    Worker processes start only when there is more than one chunk of work."""
    chunks = _chunks(docs, chunk_size, CHUNK_BYTES)
    first = next(chunks, None)
    if first is None:
        return
    second = next(chunks, None)
    rest = itertools.chain([first] + ([second] if second else []), chunks)
    if n_jobs == 1 or second is None:
        for chunk in rest:
            yield chunk, count_documents([d.data for d in chunk], settings)
        return
    from joblib import Parallel, delayed

    pending: deque = deque()

    def tasks():
        for chunk in rest:
            pending.append(chunk)
            yield delayed(count_documents)([d.data for d in chunk], settings)

    # A reader that leaves early (`| head`) cancels the rest; that is not worth a warning.
    warnings.filterwarnings("ignore", message=".*tasks which were still being processed")
    with Parallel(n_jobs=n_jobs, return_as="generator", pre_dispatch="2*n_jobs") as par:
        for result in par(tasks()):
            yield pending.popleft(), result


CALIBRATION_SAMPLE = 5_000  # one temperature (or threshold) is well fitted by 5,000 documents


class Reservoir:
    """A uniform random sample of at most ``size`` documents' rows, in input order.

    Each document draws a random key; the sample is the ``size`` smallest keys. Parts are
    only cut down when a quarter of the size again has piled up, so the cost per document
    stays constant, and each part is cut on its own (stacking them all first held the pile
    twice, then the kept rows a third time). Rows are counts, stored in 16 bits or as float32
    (see add): calibration makes each fold float64 in turn."""

    def __init__(self, size: int, seed: int):
        self.size, self.rng = size, np.random.default_rng(seed)
        self.parts: list = []       # (matrix, labels, keys), in input order
        self.rows = 0

    def add(self, X: Rows, labels: list[str]):
        # Counts as 16 bits when a chunk's fit (nearly always), else 32-bit floats (exact
        # below 2**24): 6 or 8 bytes a cell with the 32-bit column numbers.
        X = X.astype(np.uint16 if not X.nnz or X.data.max() < 2**16 else np.float32)
        self.parts.append((X, np.asarray(labels), self.rng.random(X.shape[0])))
        self.rows += X.shape[0]
        if self.rows > self.size + self.size // 4:
            self._shrink()
            _give_back_free_memory()

    def _shrink(self):
        if self.rows <= self.size:
            return
        cut = np.partition(np.concatenate([keys for *_, keys in self.parts]), self.size - 1)[self.size - 1]
        for i, (X, y, keys) in enumerate(self.parts):
            keep = np.flatnonzero(keys <= cut)  # (random floats: ties have probability ~0)
            self.parts[i] = (X[keep], y[keep], keys[keep]) if len(keep) < len(keys) else (X, y, keys)
        self.parts = [p for p in self.parts if len(p[2])]
        self.rows = sum(len(p[2]) for p in self.parts)

    def sample(self, width: int) -> tuple[Rows, np.ndarray]:
        """The sample as one matrix."""
        self._shrink()
        parts, self.parts = self.parts, []
        X = Rows.stack([m for m, *_ in parts], width)
        return X, np.concatenate([p[1] for p in parts])


def train_model(docs: Iterable[Document], tokenizer: TokenizerSettings, settings: ModelSettings,
                features: FeatureOptions = FeatureOptions(),
                decisions: DecisionOptions = DecisionOptions(calibrate=False), n_jobs: int = 1,
                progress=None, calibration_sample: int = CALIBRATION_SAMPLE) -> Model:
    """Count every document into a new model, then keep the features the options select.

    Counts stream chunk by chunk: nothing per document is kept but its label and digest.
    Calibration and --max-fpr, which need out-of-fold predictions, fit on a uniform random
    sample of at most ``calibration_sample`` documents (all of them in a smaller corpus), so
    memory stays bounded however large the corpus."""
    vocab = Vocabulary()
    sums, n_docs, ledger = Sums(settings), 0, set()
    reservoir = Reservoir(calibration_sample, decisions.seed) if decisions.needs_matrix else None
    for chunk, result in _counted(docs, tokenizer, n_jobs=n_jobs):
        blob, keys, X = _unpack(result)
        chunk_labels = [d.label for d in chunk]
        n_docs += len(chunk)
        ledger.update(digest(d.label, d.data) for d in chunk)
        ids = vocab.extend_encoded(blob, keys)
        # Summed over the chunk's own columns and added at their ids: work in proportion to
        # the chunk, not to the whole vocabulary (spamassassin-2002: 0.61 -> 0.05 s).
        sums.add(X, ids, len(vocab), chunk_labels)
        if reservoir is not None:
            reservoir.add(X.moved(ids, len(vocab)), chunk_labels)
        if progress:
            progress(len(chunk))
    if not n_docs:
        raise NbtextError("no documents found in the training sources")
    _give_back_free_memory()
    sample = reservoir.sample(len(vocab)) if reservoir is not None else (None, None)
    _give_back_free_memory()
    model, _ = _model_from_sums(sums, vocab, tokenizer, settings, features, decisions, *sample)
    model.ledger = ledger
    _give_back_free_memory()
    return model


def map_large_arrays(threshold: int = 1 << 20):
    """Have glibc's malloc map every block of ``threshold`` bytes or more on its own, so that
    freeing it gives it back at once. By default the threshold rises to the largest block
    freed so far, and from then on arrays of that size came from the heap, where the ones
    freed stayed resident as holes (spamassassin-2002, train's peak RSS: 129-141 -> 124 MiB,
    for 0.25 s more system time in mapping pages). Process-wide, so the command line sets it,
    not the library. Elsewhere than glibc nothing."""
    import ctypes

    M_MMAP_THRESHOLD = -3
    try:
        ctypes.CDLL(None).mallopt(M_MMAP_THRESHOLD, threshold)
    except (OSError, AttributeError, TypeError):
        pass


def _give_back_free_memory():
    """Return the C heap's free pages to the system (glibc's malloc_trim; elsewhere nothing).
    Streaming leaves the heap full of holes where chunks were, and numpy's next large arrays
    are mapped afresh rather than put in them, so the holes stayed in the peak RSS
    (spamassassin-2002: 154 -> 139 MiB; copied 16 times: 204 -> 160). About 10 ms a call,
    called at phase ends and when the calibration sample is cut down."""
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError, TypeError):
        pass


class Sums:
    """Running class counts, per-class feature counts and document frequencies, in arrays
    that grow by a quarter at a time (padded to the vocabulary at every chunk, they were
    copied whole each time: O(vocabulary) per chunk). The feature counts are kept term by
    class, so that growing adds rows at the end: numpy's resize reallocates them in place,
    where a new array and a copy held the old and the new at once (spamassassin-2002: 10 MB
    of train's peak)."""

    def __init__(self, settings: ModelSettings):
        self.settings = settings
        self.classes: list[str] = []
        self.cc = np.zeros(0)
        self.counts = np.zeros((0, 0))  # terms x classes
        self.df = np.zeros(0, dtype=np.int32)  # documents per term (float64 for the model)
        self.width = 0

    def _reserve(self, k: int, v: int):
        cols, rows = self.counts.shape
        if k > rows:  # a new class (rare): the one growth that copies
            counts = np.zeros((max(v, cols), k))
            counts[:cols, :rows] = self.counts
            self.counts, self.cc = counts, np.pad(self.cc, (0, k - len(self.cc)))
        if v > self.counts.shape[0]:
            cols = max(v, cols + cols // 4)
            self.counts.resize((cols, self.counts.shape[1]), refcheck=False)  # new rows are 0
            self.df.resize(cols, refcheck=False)
        elif len(self.df) < self.counts.shape[0]:
            self.df.resize(self.counts.shape[0], refcheck=False)

    def add(self, X: Rows, ids: np.ndarray | None, width: int, labels: list[str]):
        """Add the documents X (columns: vocabulary ids ``ids``, or the ids themselves when
        None) with their labels; ``width`` is the vocabulary's size."""
        X = Rows.of(X)
        for lab in labels:
            if lab not in self.classes:
                self.classes.append(lab)
        k = len(self.classes)
        self._reserve(k, width)
        self.width = max(self.width, width)
        idx = np.asarray([self.classes.index(lab) for lab in labels], dtype=np.int64)
        counts = (_binary(X) if self.settings.variant == "bernoulli"
                  else document_transform(X, self.settings.tf, self.settings.length_norm))
        sums = class_sums(counts, idx, k).T
        df = np.bincount(X.indices, minlength=X.shape[1])
        if ids is None:
            self.counts[:X.shape[1], :k] += sums
            self.df[:X.shape[1]] += df
        elif self._distinct(ids):
            self.counts[ids, :k] += sums
            self.df[ids] += df
        else:  # two tokens shared a 64-bit key: add.at sums them (4x slower than the above)
            np.add.at(self.counts, (ids[:, None], np.arange(k)), sums)
            np.add.at(self.df, ids, df)
        self.cc[:k] += np.bincount(idx, minlength=k)

    @staticmethod
    def _distinct(ids: np.ndarray) -> bool:
        """No id repeats (sorted, no two neighbours equal: a chunk's ids, not a scratch array
        as long as the vocabulary)."""
        s = np.sort(ids)
        return not (s[1:] == s[:-1]).any()

    def take(self) -> tuple:
        """(classes, class counts, feature counts (classes x terms, C order), document
        frequencies) over the vocabulary, cut to size; these sums let go of their arrays: the
        model's are then the only copy, and what it does not keep (the document frequencies
        without idf) is freed as soon as it is made."""
        k, v = len(self.classes), self.width
        fc = np.ascontiguousarray(self.counts[:v, :k].T)
        self.counts = np.zeros((0, 0))
        out = self.classes, self.cc[:k].copy(), fc, self.df[:v].astype(np.float64)
        self.df, self.cc, self.width = np.zeros(0, dtype=np.int32), np.zeros(0), 0
        return out


def _binary(X: Rows) -> Rows:
    return X.with_data(np.ones(X.nnz))


def _model_from_sums(sums: Sums, vocab: Vocabulary, tokenizer, settings, features, decisions, X=None,
                     y=None) -> tuple[Model, np.ndarray]:
    """The model of running sums over ``vocab``, with the features the options keep and the
    decisions fitted on (X, y) when given; returns it with the kept columns."""
    classes, cc, fc, df = sums.take()
    width = fc.shape[1]
    order = np.argsort(classes, kind="stable")
    keep = _select(df, fc, cc, features)
    model = Model.empty(tokenizer, settings, classes)
    model.vocab = vocab if len(keep) == len(vocab) else vocab.subset(keep)
    everything = len(keep) == fc.shape[1]
    if (order != np.arange(len(order))).any():
        fc = fc[order]
    model.feature_count, model.class_count = fc if everything else fc[:, keep], cc[order]
    model.doc_freq = (df if everything else df[keep]) if settings.idf else None
    model.check_trainable()
    if X is not None and len(keep) < X.shape[1]:
        X = X.columns(keep)  # (a copy: only when features were dropped)
    # Neither the frequencies (unless the model keeps them) nor an identity list of columns
    # need be held while calibrating (spamassassin-2002: 7 MB of its peak).
    df, keep = None, None if everything else keep
    apply_decisions(model, decisions, X, y)
    return model, (np.arange(width) if keep is None else keep)


def fit_matrix(X, y: np.ndarray, vocab: Vocabulary, tokenizer: TokenizerSettings,
               settings: ModelSettings, features: FeatureOptions = FeatureOptions(),
               decisions: DecisionOptions = DecisionOptions(calibrate=False)) -> tuple[Model, np.ndarray]:
    """A model from a document-by-term matrix and labels; returns it with the kept columns."""
    y = np.asarray([str(v) for v in y])
    X = Rows.of(X)
    sums = Sums(settings)
    sums.add(X, None, X.shape[1], list(y))
    return _model_from_sums(sums, vocab, tokenizer, settings, features, decisions, X, y)


def apply_decisions(model: Model, d: DecisionOptions, X, y) -> None:
    classes = model.classes
    if d.positive is not None:
        if d.positive not in classes:
            raise NbtextError(f"--positive {d.positive!r} is not one of the classes ({', '.join(classes)})")
        model.decision.positive = d.positive
    pos = model.decision.positive
    if (d.threshold is not None or d.max_fpr is not None or d.unsure) and (len(classes) != 2 or pos is None):
        raise NbtextError("--threshold, --unsure and --max-fpr need two classes and a positive one "
                          f"(--positive; the classes are {', '.join(classes)})")
    if X is not None and d.needs_matrix:
        from .calibrate import (can_split, fit_temperature, out_of_fold_jll, probabilities_at,
                                threshold_for_fpr)

        if can_split(y, d.folds):
            whole = X.shape[0] == model.n_documents  # the sample is every document learned
            # The temperature is fitted to fold-unseen tokens scored as zero counts, the threshold
            # to them left out, as new mail is scored (why: calibrate.out_of_fold_jll); a sample of
            # a larger corpus keeps them for both.
            unseen = "keep" if d.max_fpr is None or not whole else "drop" if not d.calibrate else "both"
            jll = out_of_fold_jll(X, y, classes, model.settings, d.folds, d.seed,
                                  full=model.estimator if whole else None, unseen=unseen)
            jll, jll_for_threshold = jll if unseen == "both" else (jll, jll)
            t_idx = np.searchsorted(classes, y)
            if d.calibrate:
                model.decision.temperature = fit_temperature(jll, t_idx)
            if d.max_fpr is not None:
                p = probabilities_at(jll_for_threshold, model.decision.temperature)[:, classes.index(pos)]
                # Untempered (T = 1), Naive Bayes log-odds run to hundreds, and P rounds to 1
                # for every confident document: spamassassin-2002's split has 8 such ham.
                hint = "" if d.calibrate else " (probabilities untempered by --no-calibrate; try without it)"
                t = model.decision.threshold = threshold_for_fpr(p, y != pos, d.max_fpr, hint)
                model.fit_report = {  # what the threshold costs, in the same internal folds
                    "threshold": t, "fpr": float((p[y != pos] >= t).mean()),
                    "fnr": float((p[y == pos] < t).mean()) if (y == pos).any() else 0.0}
        elif d.max_fpr is not None:
            raise NbtextError(f"--max-fpr needs at least {d.folds} documents of each class")
    if d.threshold is not None:
        model.decision.threshold = d.threshold
    if d.unsure is not None:
        model.decision.unsure = tuple(d.unsure)


def _select(df: np.ndarray, fc: np.ndarray, class_docs: np.ndarray, f: FeatureOptions) -> np.ndarray:
    """The columns kept: document frequency within [min_df, max_df], then the best max_features
    of those by f.select (nbtext/features.py); ties go to the earlier column."""
    keep = (df >= f.min_df) & (df <= f.max_df * class_docs.sum())
    cols = np.flatnonzero(keep)
    if f.max_features is not None and len(cols) > f.max_features:
        from .features import scores

        ranked = scores(f.select, fc, class_docs)[cols]
        cols = np.sort(cols[np.argsort(-ranked, kind="stable")[:f.max_features]])
    return cols


def score_chunks(model: Model, docs: Iterable[Document], n_jobs: int = 1, chunk_size: int = CHUNK
                 ) -> Iterator[tuple[list[Document], np.ndarray]]:
    """(documents, posteriors) chunk by chunk, in input order."""
    estimator = model.estimator
    for chunk, X in counted_chunks(docs, model.tokenizer_settings, model.vocab, grow=False,
                                   n_jobs=n_jobs, chunk_size=chunk_size):
        yield chunk, model.proba(X, estimator)


def count_corpus(docs: Iterable[Document], tokenizer: TokenizerSettings, n_jobs: int = 1,
                 progress=None, ids: list | None = None) -> tuple["sp.csr_matrix", np.ndarray, Vocabulary]:
    """The whole corpus as one document-by-term matrix (scipy's), with labels and vocabulary;
    the documents' ids are appended to ``ids`` when it is given."""
    vocab = Vocabulary()
    chunks, labels = [], []
    for chunk, X in counted_chunks(docs, tokenizer, vocab, grow=True, n_jobs=n_jobs):
        chunks.append(X)
        labels += [d.label for d in chunk]
        if ids is not None:
            ids += [d.id for d in chunk]
        if progress:
            progress(len(chunk))
    if not labels:
        raise NbtextError("no documents found in the sources")
    return Rows.stack(chunks, len(vocab)).tocsr(), np.asarray(labels), vocab


def cross_validate(X, y, vocab: Vocabulary, tokenizer: TokenizerSettings, settings: ModelSettings,
                   features: FeatureOptions, decisions: DecisionOptions, k: int, seed: int,
                   predictions: list | None = None) -> list[dict]:
    """Eval figures of each of k stratified folds, each scored by a model trained (with the
    same options, calibration included) on the other k-1. With ``predictions`` (a list as long
    as y), each document's out-of-fold (label, probability of it, fold 1..k) is put at its row."""
    from .calibrate import can_split, stratified_folds
    from .report import evaluate

    if not can_split(y, k):
        classes, counts = np.unique(y, return_counts=True)
        few = ", ".join(f"{c}: {n}" for c, n in zip(classes, counts) if n < k) or "only one class"
        raise NbtextError(f"--folds {k} needs at least {k} documents of each of two or more classes ({few})")
    folds = stratified_folds(y, k, seed)
    results = []
    for f in range(k):
        test = folds == f
        model, keep = fit_matrix(X[~test], y[~test], vocab, tokenizer, settings, features, decisions)
        proba = model.proba(X[test][:, keep])
        verdicts = model.verdicts(proba)
        results.append(evaluate(model.classes, list(y[test]), verdicts, proba, model.decision.positive))
        if predictions is not None:
            for i, label, row in zip(np.flatnonzero(test), verdicts, proba):
                predictions[i] = (label, float(row[model.classes.index(label)]), f + 1)
    return results
