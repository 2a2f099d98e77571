"""Training: documents mapped to counts chunk by chunk (nbtext.batch.chunks), reduced into one
Counts over one vocabulary, then the features kept and the decisions fitted.

Also what builds on training: the whole corpus as one matrix, and k-fold cross-validation.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError, NbtextError, SettingError, no_documents, where
from ..features.counting import Batch
from ..features.rows import Rows
from ..features.selection import select
from ..features.vocabulary import Vocabulary
from ..ledger import Ledger
from ..model import Model
from ..nb import counts as C
from ..nb.counts import Counts
from ..nb.decision import Decision, default_positive
from ..nb.estimators import make_estimator
from ..operations import digest
from ..progress import CALIBRATING, CHOOSING_BOTH, CHOOSING_THRESHOLD, CHOOSING_VARIANT, COUNTING, Step
from ..read import Document
from ..record import Record
from ..settings import AUTO_CANDIDATES, DecisionOptions, FeatureOptions, ModelSettings, TokenizerSettings
from .chunks import counted, fork_safe, known_count, size_of
from .memory import release_free_memory, withheld_from_forks

if TYPE_CHECKING:
    import scipy.sparse as sp

CALIBRATION_SAMPLE = 5_000  # one temperature (or threshold) is well fitted by 5,000 documents
MAX_MEMORY = 1 << 30  # train's peak memory at most (--max-memory): a laptop's share (docs/memory.md)
# Of it, what the vocabulary, counts and ledger may hold (Reduction's budget): the rest is the
# process's own (the interpreter and libraries, chunks in flight, calibration's sample and folds)
# and saving's copies of what is held, which grow with it (docs/memory.md).
STATE_SHARE = 0.4
INDEX_BYTES = 16      # the key -> id index's bytes a token, about (a 64-bit key and its id)
PRUNED_TO = 3 / 4     # of the budget, what a pruning leaves at most: room for the next chunks
# Of the numbers counts may hold (nb.counts.MAX_NUMBERS, refused past it), what a reduce holds
# before it prunes, as it does at its budget: a large --max-memory would otherwise let the counts
# reach that refusal mid-corpus; the rest is room for a chunk's entries before the pruning.
NUMBERS_SHARE = 7 / 8


def state_budget(max_memory: int | None) -> int:
    """The bytes the vocabulary, counts and ledger may hold (Reduction's budget) in a train of at most
    ``max_memory`` bytes (None: MAX_MEMORY)."""
    return int((MAX_MEMORY if max_memory is None else max_memory) * STATE_SHARE)


class Draw:
    """A chunk's documents that may be in calibration's sample, as Reservoir drew their keys:
    ``keys``, theirs, and ``rows``, their positions in the chunk (None: every document)."""

    __slots__ = ("keys", "rows")

    def __init__(self, keys: np.ndarray, rows: np.ndarray | None):
        self.keys, self.rows = keys, rows


class Reservoir:
    """A uniform random sample of at most ``size`` documents' rows, in input order.

    Each document draws a random key; the sample is the ``size`` smallest keys. Parts are
    only cut down when a quarter of the size again has piled up, so the cost per document
    stays constant, and each part is cut on its own (stacking them all first would hold the pile
    twice, then the kept rows a third time). Once cut, a document whose key is above the cut
    can never be in the sample (``size`` keys below it are held already): it is let go before
    its rows are even taken (the same sample, as every later cut is lower). So a chunk's keys
    may be drawn ahead, as it is sent to be counted (draw_ahead), and only its rows under the
    cut then made and sent back. Rows are counts, stored in 16 bits or as float32 (see
    compact): calibration makes each fold float64 in turn."""

    def __init__(self, size: int, seed: int):
        self.size, self.seed, self.rng = size, seed, None
        self.parts: list = []       # (matrix, labels, keys), in input order
        self.rows = 0
        self.cut: float | None = None  # the last cut's key: none above it is kept
        self.behind = False  # a chunk's count was unknown ahead: every later chunk draws in add

    @staticmethod
    def compact(X: Rows) -> Rows:
        """X as the sample keeps it: counts as 16 bits when a chunk's fit (nearly always), else
        32-bit floats (exact below 2**24): 6 or 8 bytes a cell with the 32-bit column numbers.
        (train's workers compact their chunks' rows before sending them: a quarter of what
        they send, and the parent's conversion)"""
        if X.data.dtype in (np.uint16, np.float32):
            return X
        return X.astype(np.uint16 if not X.nnz or X.data.max() < 2**16 else np.float32)

    def _draw(self, n: int) -> Draw:
        """The keys of the next n documents (one each, in input order, whatever is kept: the
        generator's stream is the same): the Draw of those that may still be in the sample."""
        if self.rng is None:
            self.rng = np.random.default_rng(self.seed)
        keys = self.rng.random(n)
        if self.cut is None:
            return Draw(keys, None)
        rows = np.flatnonzero(keys <= self.cut)
        return Draw(keys[rows], rows)

    def draw_ahead(self, n: int | None) -> Draw | None:
        """The Draw of the next chunk's n documents, drawn now, before the earlier chunks' rows
        are added (chunks drawn in input order): its rows, and only they, are to be given to
        add with it. None from the first chunk whose count is not known ahead (n None) on: the
        keys are then drawn in add, where every row is given, so as to stay in input order."""
        self.behind = self.behind or n is None
        return None if self.behind else self._draw(n)

    def add(self, X: Rows, labels: list[str], move: Callable[[Rows], Rows] | None = None,
            drawn: Draw | None = None):
        """The next documents (``labels``, one each), with ``X``, the rows of every one of them
        or, given their chunk's ``drawn`` (draw_ahead), of those it names, in order; ``move``, when
        given, is applied to the rows of those that may still be in the sample, and only to them
        (train puts them on the vocabulary's ids: on a large corpus, a few rows of most chunks)."""
        if drawn is None:
            drawn = self._draw(len(labels))
            X = X if drawn.rows is None else Rows.of(X)[drawn.rows]
        keys, rows = drawn.keys, drawn.rows
        if self.cut is not None and not (under := keys <= self.cut).all():  # (cut since it was drawn)
            mine = np.flatnonzero(under)
            X, keys, rows = Rows.of(X)[mine], keys[mine], mine if rows is None else rows[mine]
        if len(keys):
            self._add_drawn(move(X) if move else X, labels if rows is None else [labels[i] for i in rows], keys)

    def _add_drawn(self, X: Rows, labels: list[str], keys: np.ndarray):
        """The rows of the documents of these keys, in order."""
        X = self.compact(X)
        self.parts.append((X, np.asarray(labels), keys))
        self.rows += X.shape[0]
        if self.rows > self.size + self.size // 4:
            self._shrink()
            release_free_memory()

    def _shrink(self):
        if self.rows <= self.size:
            return
        cut = np.partition(np.concatenate([keys for *_, keys in self.parts]), self.size - 1)[self.size - 1]
        for i, (X, y, keys) in enumerate(self.parts):
            keep = keys <= cut  # (random floats: ties have probability ~0)
            # (most of a part is kept: selected by a mask per entry, not the row numbers' ranges)
            self.parts[i] = (X[keep], y[keep], keys[keep]) if not keep.all() else (X, y, keys)
        self.parts = [p for p in self.parts if len(p[2])]
        self.rows = sum(len(p[2]) for p in self.parts)
        self.cut = float(cut)

    def renumber(self, mapping: np.ndarray, width: int) -> None:
        """Each held row's column j moved to mapping[j] (-1: dropped), in a vocabulary of ``width``
        (Reduction's pruning): the parts made one, in order, and moved at once. A part a chunk,
        hundreds of them, each moved and then cut at every later shrink, cost more in numpy's
        per-call work than in their rows."""
        if not self.parts:
            return
        parts, self.parts = self.parts, []
        labels, keys = np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts])
        matrices = [X for X, *_ in parts]
        del parts
        X = Rows.stack(matrices, len(mapping), consume=True)
        # (a pruning keeps each column or drops it: no two land on one, so the kernel moves the rows)
        self.parts = [(X.moved(mapping, width, distinct=True, own=True), labels, keys)]

    def sample(self, width: int) -> tuple[Rows, np.ndarray]:
        """The sample as one matrix, each part let go as it is copied (so that the parts and the
        matrix are never all held at once)."""
        self._shrink()
        parts, self.parts = self.parts, []
        labels = np.concatenate([p[1] for p in parts]) if parts else np.asarray([], dtype=str)
        matrices = [m for m, *_ in parts]
        del parts
        return Rows.stack(matrices, width, consume=True), labels


class Sums:
    """A chunk's statistics, as the map makes them where the chunk was counted (a forked worker,
    a Dask worker, or here): its tokens (NUL-terminated UTF-8, first-seen order) and their 64-bit
    keys, Counts.summed's sums over them (``distinct``: no two of its tokens share a key), its
    documents' labels and ledger digests, and for calibration's sample its rows over its tokens
    (None: not kept). A Dask partition's are its chunks' reduced (Reduction.sums)."""

    __slots__ = ("blob", "keys", "sums", "distinct", "labels", "digests", "rows", "drawn")

    def __init__(self, blob: bytes, keys: np.ndarray, sums: tuple, distinct: bool, labels: list[str],
                 digests: bytes, rows: Rows | None = None, drawn: Draw | None = None):
        """``drawn``: the chunk's Draw made ahead, when it was (train_model), and ``rows`` then
        only the rows of the documents it names (Reservoir.add)."""
        self.blob, self.keys, self.sums, self.distinct = blob, keys, sums, distinct
        self.labels, self.digests, self.rows, self.drawn = labels, digests, rows, drawn


def chunk_sums(chunk: list[Document], batch: Batch, featurize: Callable, keep_rows: bool,
               drawn: Draw | None = None) -> Sums:
    """The map's last step, where the chunk was counted: its sums over its own columns (added
    in the reduce at their ids: work in proportion to the chunk, not to the whole vocabulary),
    as 16-bit whole numbers where they are (Counts.compacted); its rows, when kept (of the
    documents ``drawn`` names, when given), compacted where no two of its columns can meet on
    one id (distinct keys), else as they are (added up in the reduce first, then compacted)."""
    labels = [d.label for d in chunk]
    sums = Counts.compacted(Counts.summed(featurize(batch.rows), labels))
    distinct = batch.keys_distinct()
    rows = None
    if keep_rows:
        rows = batch.rows if drawn is None or drawn.rows is None else batch.rows[drawn.rows]
        rows = Reservoir.compact(rows) if distinct else rows
    return Sums(batch.blob, batch.keys, sums, distinct, labels, _digests(chunk), rows, drawn)


class Reduction:
    """The one reduce of every way of counting a corpus: chunks' Sums, in input order, into one
    Vocabulary (first-seen order), one Counts over it, the ledger and calibration's sample
    (``sample``: a Reservoir). A Dask partition's (``partition``) keeps its labels for sums(),
    and with ``keep_rows`` every row instead of a sample. Local training (serial or forked workers) adds each chunk's;
    the Dask engine adds each partition's, a Reduction of its chunks on its worker. Whole-number
    counts add exactly in float64 in any grouping, so every way gives the same bits.

    ``budget``: bytes the vocabulary, counts and ledger may hold (held()); with it, NUMBERS_SHARE
    of the numbers counts may hold (nb.counts.MAX_NUMBERS). Past either, as fastText's
    dictionary raises its min-count and SpamAssassin expires hapaxes, the tokens in at most t
    documents so far are dropped (t = 1, then higher while that is not enough), to PRUNED_TO of
    the budget, and counting goes on: the tokens that matter, those seen often, keep exact
    counts from their first document on, and ``pruning`` says what was dropped (docs/memory.md).
    At the end the last threshold is applied to every token (model()), as fastText's min-count is
    to its whole dictionary: the tokens met since the last pruning in at most t documents go too.
    Under the budget nothing changes: the model is the one trained without it."""

    def __init__(self, sample: Reservoir | None = None, partition: bool = False, keep_rows: bool = False,
                 budget: int | None = None):
        self.vocab, self.counts, self.ledger, self.n_documents = Vocabulary(), Counts(), Ledger(), 0
        self.sample, self.budget = sample, budget
        self.pruning: dict | None = None  # {tokens dropped, threshold, documents counted at the last}
        self.labels: list[str] | None = [] if partition else None
        self.rows: list | None = [] if partition and keep_rows else None

    def add(self, part: Sums) -> None:
        ids = self.vocab.extend_encoded(part.blob, part.keys)
        width = len(self.vocab)
        self.counts.add_summed(part.sums, ids=ids, width=width, distinct=part.distinct)
        self.n_documents += len(part.labels)
        self.ledger.update(part.digests)
        if self.labels is not None:
            self.labels += part.labels
        if self.rows is not None:
            self.rows.append(part.rows.moved(ids, width, distinct=part.distinct))
        elif self.sample is not None and part.rows is not None:
            # (the rows of the documents that may be in the sample, on their ids)
            self.sample.add(part.rows, part.labels, move=lambda X: X.moved(ids, width, distinct=part.distinct),
                            drawn=part.drawn)
        if self.budget is not None and (self.held() > self.budget
                                        or self.counts.held() > NUMBERS_SHARE * C.MAX_NUMBERS):
            self.prune()

    def held(self) -> int:
        """The bytes the vocabulary, counts and ledger hold, about: the tokens, their index, the
        counts' arrays (their spare rows included) and, of sparse counts, what their fold writes
        while they are held (their peak); the ledger's digests."""
        return (self.vocab.buffer().nbytes + INDEX_BYTES * len(self.vocab)
                + self.counts.nbytes() + self.counts.fold_bytes() + self.ledger.nbytes)

    def prune(self, threshold: int | None = None) -> None:
        """Drop the tokens in at most t documents: ``threshold``, else the least t (and no less
        than the last pruning's) that leaves at most PRUNED_TO of the budget, estimated at
        held()'s bytes a token, and of the numbers counts may hold."""
        width, df = len(self.vocab), self.counts.doc_freq
        going_on = threshold is None  # (else model()'s last pruning: counting is done)
        if going_on:
            # (the ledger is kept whole, every document's: the tokens get what it leaves)
            ledger, room = self.ledger.nbytes, self.budget * PRUNED_TO
            if ledger > room:
                raise SettingError("max_memory", None, f"is too small for the ledger of {self.n_documents} "
                                   f"documents: its digests alone hold {ledger} bytes, more than the "
                                   f"{int(room)} that {{max_memory}} leaves them; give a larger one")
            most = int((room - ledger) / ((self.held() - ledger) / max(width, 1)))
            # (and the counts' numbers to PRUNED_TO of what they may hold, at theirs a token)
            most = min(most, int(PRUNED_TO * C.MAX_NUMBERS / (self.counts.held() / max(width, 1))))
            # (the least t that keeps at most `most`: the (most+1)-th largest document frequency)
            least = _nth_smallest(df, width - most - 1) if most < width else 0
            threshold = max(self.pruning["threshold"] if self.pruning else 1, int(least))
        t = threshold
        keep = np.flatnonzero(df > t)
        # (counting goes on: the key index made at once for as many tokens as this pruning found,
        # about those of the next, rather than doubled on the way there, a rebuild each time)
        self.vocab = self.vocab.subset(keep, room=width if going_on else None)
        self.counts = self.counts.columns(keep)
        if self.sample is not None:
            mapping = np.full(width, -1, dtype=np.int64)
            mapping[keep] = np.arange(len(keep))
            self.sample.renumber(mapping, len(keep))
        dropped = width - len(keep) + (self.pruning["tokens"] if self.pruning else 0)
        self.pruning = {"tokens": dropped, "threshold": int(t), "documents": self.n_documents}
        release_free_memory()

    def sums(self) -> Sums:
        """What this reduce holds, as one Sums (a Dask partition's, for the client's reduce)."""
        c = self.counts
        rows = None if self.rows is None else Rows.stack(self.rows, len(self.vocab))
        return Sums(self.vocab.encoded(), self.vocab.keys(), (c.classes, c.token_major, c.doc_freq, c.class_count),
                    True, self.labels, self.ledger.tobytes(), rows)

    def model(self, tokenizer, settings, features, decisions, n_jobs: int = 1,
              progress=None, sources: Sequence[str] = ()) -> tuple[Model, ThresholdFit | None]:
        """The model of what was reduced (model_from_counts), and max_fpr's fit; ``sources``
        names what was read, for the refusals."""
        if not self.n_documents:
            raise no_documents("training", sources)
        if not len(self.vocab) and self.pruning is None:  # (a pruning drops tokens that were counted)
            refuse_tokenless(self.n_documents, sources)
        if self.pruning:  # (the last threshold over every token: see the class's docstring)
            self.prune(self.pruning["threshold"])
            if not len(self.vocab):  # (a model of no token scores every document by the classes' shares)
                t = self.pruning["threshold"]
                raise SettingError("max_memory", None, f"leaves no token: to train the {self.n_documents} documents "
                                   f"within it, the tokens in at most {t} document{'' if t == 1 else 's'} were "
                                   "dropped, and that was every one; give a larger one")
        vocab, counts = self.vocab, self.counts
        vocab.drop_index()  # (counted: from here on only the tokens are read)
        release_free_memory()
        sample = self.sample.sample(len(vocab)) if self.sample is not None else (None, None)
        release_free_memory()
        model, _, fit = model_from_counts(counts, vocab, tokenizer, settings, features, decisions, *sample,
                                           n_jobs=n_jobs, progress=progress)
        model.ledger, model.pruned = self.ledger, self.pruning
        return model, fit


def refuse_tokenless(n_documents: int, sources: Sequence[str] = (), outcome: str = "nothing to train on") -> None:
    """Refuse documents none of which holds a token (each empty, or nothing the tokenizer keeps,
    as a fastText file of bare labels), or no documents: their model would score every document
    by the classes' shares alone, and a vectorizer's matrix would have no column, and say
    nothing of it. fastText ("Empty vocabulary") and scikit-learn's vectorizers ("empty
    vocabulary", a ValueError: so is InputError) refuse them too. ``outcome`` says what the
    caller cannot do without a token (train's, TextClassifier's: train; TextVectorizer's: fit
    a vocabulary)."""
    if not n_documents:
        raise InputError(f"{where(sources)}no documents read: {outcome}")
    raise InputError(f"{where(sources)}none of the {n_documents} document{'' if n_documents == 1 else 's'} "
                     f"read has a token: {outcome}")


def _nth_smallest(a: np.ndarray, n: int):
    """np.partition(a, n)[n]: of whole numbers from 0 (document frequencies), counted by value,
    not partitioned: a pass over ``a`` and one over its values, at every pruning. Whole numbers
    held as floats too (a pruning's counts keep theirs as float64: Counts.columns), which a
    partition of nearly all equal values (most tokens are in one document) is slow on."""
    whole = a if a.dtype.kind in "iu" else a.astype(np.int64) if a.dtype.kind == "f" else None
    if whole is not None and len(a) and whole.min() >= 0 and (whole is a or np.array_equal(whole, a)):
        return np.searchsorted(np.cumsum(np.bincount(whole)), n, side="right")
    return np.partition(a, n)[n]


def train_model(docs: Iterable[Document], tokenizer: TokenizerSettings = TokenizerSettings(),
                settings: ModelSettings = ModelSettings(), features: FeatureOptions = FeatureOptions(),
                decisions: DecisionOptions = DecisionOptions(), n_jobs: int = 1, progress=None,
                calibration_sample: int = CALIBRATION_SAMPLE, max_memory: int | None = None,
                sources: Sequence[str] = ()) -> tuple[Model, ThresholdFit | None]:
    """Count every document into a new model, then keep the features the options select and
    fit the decisions; returns the model and, for max_fpr, what its threshold costs.
    ``max_memory``: the bytes training may take at its peak (None: MAX_MEMORY), of which the
    vocabulary, counts and ledger hold at most state_budget() (Reduction).
    ``progress`` (nbtext.progress) is told the bytes read as counting goes, then the folds.
    ``sources``: the paths the documents were read from, which a refusal names.

    Counts stream chunk by chunk (the map: batch.chunks.counted, then chunk_sums, here or in
    forked workers), reduced in input order (Reduction): nothing per document is kept but its
    label and digest. Calibration and max_fpr, which need out-of-fold predictions, fit on a
    uniform random sample of at most ``calibration_sample`` documents (all of them in a smaller
    corpus), so memory stays bounded however large the corpus."""
    needs_sample = decisions.needs_matrix or settings.choosing
    sample = Reservoir(calibration_sample, decisions.seed) if needs_sample else None
    reduction = Reduction(sample, budget=state_budget(max_memory))
    featurize = make_estimator(settings).featurizer()  # (how the variant counts a document)
    read = [0]  # bytes of the documents taken from ``docs`` so far (for progress)

    def tallied(items):
        for item in items:
            read[0] += size_of(item)
            yield item

    def summed(chunk: list[Document], batch, drawn: Draw | None = None) -> Sums:
        return chunk_sums(chunk, batch, featurize, needs_sample, drawn)

    # (each chunk's sample keys drawn as it is sent: only the rows that may be in the sample come back)
    plan = (lambda items: sample.draw_ahead(known_count(items))) if sample else None
    for chunk, part in counted(tallied(docs) if progress else docs, tokenizer, n_jobs=n_jobs, then=summed,
                               plan=plan):
        reduction.add(part)
        if progress:
            progress(Step(COUNTING, read[0], documents=reduction.n_documents))
    return reduction.model(tokenizer, settings, features, decisions, n_jobs=n_jobs, progress=progress,
                           sources=sources)


def _digests(docs: list[Document]) -> bytes:
    """The documents' ledger digests, back to back (made where the chunk was read)."""
    return b"".join(digest(d.label, d.data) for d in docs)


def model_from_counts(counts: Counts, vocab: Vocabulary, tokenizer, settings, features, decisions,
                      X=None, y=None, n_jobs: int = 1, progress=None) -> tuple[Model, np.ndarray, ThresholdFit | None]:
    """The model of counts over ``vocab``, with the features the options keep and the decisions
    fitted on (X, y) when given; returns it with the kept columns and the threshold's fit
    (``n_jobs``: the cores calibration's folds may use, see apply_decisions). The one end of
    every way of counting a corpus: train_model's chunks (here or in forked workers) and
    batch.cluster's partitions reduce into counts, then come here."""
    counts.compact()
    width = counts.width
    # (the counts as an array only where --max-features ranks tokens by them; sparse ones a
    # block of tokens at a time)
    fc, totals = None, None
    if features.max_features is not None:
        fc, totals = ((counts.token_sums.class_blocks(), counts.class_totals()) if counts.sparse else
                      (np.ascontiguousarray(counts.feature_count), None))
    keep = select(counts.doc_freq, fc, counts.class_count, features, totals)
    del fc
    if width and not len(keep):
        raise SettingError("min_df", None, f"{features.min_df} and {{max_df}} {features.max_df} keep no token "
                           f"(the most common is in {int(counts.doc_freq.max())} of {counts.n_documents} documents)")
    everything = len(keep) == width
    if not everything:
        vocab, counts = vocab.subset(keep), counts.columns(keep)
    model = Model(tokenizer, settings, vocab, counts, Decision(positive=default_positive(counts.classes)))
    model.check_trainable()
    if X is not None and not everything:
        X = X.columns(keep)  # (a copy: only when features were dropped)
    keep = None if everything else keep  # (an identity list of columns is not held while calibrating)
    fit = apply_decisions(model, decisions, X, y, n_jobs, progress)
    return model, (np.arange(width) if keep is None else keep), fit


def fit_matrix(X, y: np.ndarray, vocab: Vocabulary, tokenizer: TokenizerSettings,
               settings: ModelSettings, features: FeatureOptions = FeatureOptions(),
               decisions: DecisionOptions = DecisionOptions()) -> tuple[Model, np.ndarray]:
    """A model from a document-by-term matrix and labels; returns it with the kept columns."""
    y = np.asarray([str(v) for v in y])
    X = Rows.of(X)
    counts = Counts()
    counts.add(make_estimator(settings).features(X), list(y), width=X.shape[1])
    model, keep, _ = model_from_counts(counts, vocab, tokenizer, settings, features, decisions, X, y)
    return model, keep


class ThresholdFit(Record):
    """What a threshold chosen for max_fpr costs, in the internal folds it was chosen on."""

    threshold: float
    fpr: float   # the share of the negative class called positive
    fnr: float   # the share of the positive class missed


def apply_decisions(model: Model, d: DecisionOptions, X, y, n_jobs: int = 1, progress=None) -> ThresholdFit | None:
    """Set the model's decision as the options say: the positive class, the calibration map
    and a max_fpr threshold fitted on internal folds of (X, y) (all the model's documents, or a
    sample of them), a given threshold and unsure band; and the variant, when auto chooses it.
    With ``n_jobs`` > 1 the folds are scored on that many cores (fold_mapper), to the same bits;
    ``progress`` is told each fold as it is taken."""
    classes = model.classes
    model.decision.choose(classes, d.positive, d.threshold, d.unsure, d.max_fpr)
    model.layer = None  # (refitted below with the calibration map, or none)
    fit = None
    if X is not None and (d.needs_matrix or model.settings.choosing):
        from ..nb.calibrate import can_split

        if can_split(y, d.folds):
            mapper = fold_mapper(n_jobs, unread=lambda: _unread_by_folds(model, X), progress=progress,
                                 phase=folds_phase(d, model.settings.choosing))
            try:
                fit = _fit_on_folds(model, d, X, y, mapper)
            finally:
                mapper.close()
        elif d.max_fpr is not None:
            raise SettingError("max_fpr", None, f"needs at least {d.folds} documents of each class")
    return fit  # (auto with too few documents to choose by: the Model's first candidate)


def folds_phase(d: DecisionOptions, choosing: bool) -> str:
    """What the internal folds do, as progress names their phase: calibrating when they fit the
    calibration map (choosing the variant or a threshold too); else what they choose."""
    if d.calibrate:
        return CALIBRATING
    threshold = d.max_fpr is not None
    return CHOOSING_BOTH if choosing and threshold else CHOOSING_THRESHOLD if threshold else CHOOSING_VARIANT


def _is_whole(model: Model, X) -> bool:
    """Whether calibration's sample is every document the model learned (else a sample of a
    larger corpus, calibrated against itself: calibrate.out_of_fold_jll)."""
    return X.shape[0] == model.n_documents


def _unread_by_folds(model: Model, X) -> list:
    """The large buffers that scoring calibration's folds never reads: the vocabulary, and the
    model's counts where the sample is not every document (its own counts are fitted then)."""
    return [model.vocab.buffer(), *(() if _is_whole(model, X) else model.counts.arrays())]


def _fit_on_folds(model: Model, d: DecisionOptions, X, y, mapper=map) -> ThresholdFit | None:
    from ..nb.calibrate import (brier_of, calibrated_log, fit_calibration, lengths_of, out_of_fold_jlls,
                                threshold_for_fpr)

    classes, pos = model.classes, model.decision.positive
    whole = _is_whole(model, X)
    # The map is fitted to fold-unseen tokens scored as zero counts, the threshold to them left
    # out, as new mail is scored (why: calibrate.out_of_fold_jll); a sample of a larger corpus
    # keeps them for both.
    unseen = "keep" if d.max_fpr is None or not whole else "drop" if not d.calibrate else "both"
    t_idx = np.searchsorted(classes, y)
    lengths = lengths_of(X)
    # auto: each candidate variant scored out of fold, and the one with the fewest errors kept,
    # ties broken by the lower Brier score of its calibrated probabilities, then by the order of
    # the candidates (docs/defaults.md: on topics Complement NB, on mail and languages multinomial).
    candidates = ([model.settings.chosen(v) for v in AUTO_CANDIDATES] if model.settings.choosing
                  else [model.settings])
    estimators = [None if not whole else model.estimator if settings == model.settings else
                  make_estimator(settings, model.counts) for settings in candidates]
    # The decision layer (nb.layer) reads the sample and the counts alone: fitted here while
    # workers score the folds, else after them. Its P is not the map's, which a max_fpr
    # threshold is chosen on: with max_fpr there is none.
    layer: list = []
    if d.calibrate and d.layer and d.max_fpr is None:
        from ..nb.layer import fit_layer

        def fit():
            layer.append(fit_layer(X, t_idx, model.counts, seed=d.seed))
        if isinstance(mapper, FoldWorkers):
            mapper.meanwhile = fit
    jlls = out_of_fold_jlls(X, y, classes, list(zip(candidates, estimators)), d.folds, d.seed, unseen=unseen,
                            mapper=mapper)
    del estimators
    scored = []  # (errors, settings, jll, for_threshold)
    for settings, jll in zip(candidates, jlls):
        jll, for_threshold = jll if unseen == "both" else (jll, jll)
        scored.append((int((jll.argmax(axis=1) != t_idx).sum()), settings, jll, for_threshold))
    del jlls, jll, for_threshold
    # Calibrated only where it counts: the fewest errors alone decide, unless candidates tie
    # on them (then their Brier scores do): one calibration fit less in nearly every auto train.
    fewest = min(errors for errors, *_ in scored)
    tied = [s for s in scored if s[0] == fewest]
    best = None
    starmap = getattr(mapper, "starmap", None) or (lambda fn, arglists: [fn(*args) for args in arglists])
    fits = starmap(fit_calibration, [(jll, lengths, t_idx) for *_, jll, _ in tied]) if d.calibrate \
        else [{}] * len(tied)
    for (_, settings, jll, for_threshold), params in zip(tied, fits):
        score = brier_of(calibrated_log(Decision(**params), jll, lengths), t_idx) if len(tied) > 1 else 0
        if best is None or score < best[0]:
            best = (score, settings, params, for_threshold)
    del scored, tied
    _, model.settings, params, for_threshold = best
    for name, value in params.items():
        setattr(model.decision, name, value)
    if d.calibrate and d.layer and d.max_fpr is None:
        if not layer:
            fit()
        model.layer = layer[0]
    if d.max_fpr is None:
        return None
    p = np.exp(calibrated_log(model.decision, for_threshold, lengths))[:, classes.index(pos)]
    # Uncalibrated, Naive Bayes log-odds run to hundreds, and P rounds to 1 for every confident
    # document, ham among them: no threshold under 1 then keeps the false positive rate.
    hint = "" if d.calibrate else " (probabilities uncalibrated, as {calibrate} is off: try it on)"
    t = model.decision.threshold = threshold_for_fpr(p, y != pos, d.max_fpr, hint)
    return ThresholdFit(t, float((p[y != pos] >= t).mean()),
                        float((p[y == pos] < t).mean()) if (y == pos).any() else 0.0)


def fold_mapper(n_jobs: int, unread: Callable[[], list] | None = None, progress=None, phase: str = CALIBRATING):
    """A mapper for calibration's folds (nbtext.nb.calibrate.out_of_fold_jlls: mapper(fn, folds)
    gives fn(fold) for each, in order) that uses ``n_jobs`` cores: as many worker processes
    (at most one a fold) forked (batch.pool.ForkedWorkers) when fn is called, so that they hold
    the sample and the counts as the parent does (shared, copy on write; nothing big is sent:
    a fold's number goes, its scores come back), each taking the next fold as it is free. One
    fold after another in this process on one core, with a single fold, or where forking is not
    safe (batch.chunks.fork_safe): a fresh interpreter (loky) would have to be sent the sample
    and the counts, more than a fold's work saves. The same numbers either way: each fold is the
    same arithmetic in whichever process. The parent waits rather than take folds itself: a
    fold's temporaries then live in a worker, not in the parent's peak. ``unread`` gives the
    buffers the workers never read, which they are forked without (memory.withheld_from_forks);
    ``progress`` is told each fold as it is taken here, or comes back from a worker (a Step of
    ``phase``: folds_phase's)."""
    return FoldWorkers(n_jobs, unread, progress, phase)


class FoldWorkers:
    """fold_mapper's mapper: called, the folds by forked workers, or one after another here
    (one core, one fold, or where forking is not safe); then the workers are kept for starmap
    (calibration's fits of tied candidates, one a core), until close()."""

    def __init__(self, n_jobs: int, unread: Callable[[], list] | None = None, progress=None,
                 phase: str = CALIBRATING):
        self.n_jobs, self.unread, self.pool, self.progress, self.phase = n_jobs, unread, None, progress, phase
        self.meanwhile: Callable[[], object] | None = None  # run here once while workers take the folds

    def __call__(self, fn, tasks) -> list:
        """[fn(t) for t in tasks]."""
        tasks = list(tasks)
        tell = (lambda i: self.progress(Step(self.phase, i, len(tasks)))) if self.progress else (lambda i: None)
        tell(0)
        if self.n_jobs < 2 or len(tasks) < 2 or not fork_safe():
            results = []
            for t in tasks:
                tell(len(results) + 1)
                results.append(fn(t))
            return results
        from .chunks import interrupts_held, watch_parent
        from .memory import hold_freed_memory
        from .pool import ForkedWorkers

        def taken(task):
            """A fold's number: fn of it; later, a call (starmap)."""
            return task[1](*task[2]) if isinstance(task, tuple) else fn(tasks[task])

        parent = os.getpid()
        with interrupts_held(loky=False), withheld_from_forks(self.unread() if self.unread else []):
            self.pool = ForkedWorkers(taken, min(self.n_jobs, len(tasks)),
                                      on_fork=lambda: (watch_parent(parent), hold_freed_memory()))
        results = []
        idle, self.meanwhile = self.meanwhile, None
        for result in self.pool.map(range(len(tasks)), ahead=len(tasks), idle=idle):  # (in order, as each comes back)
            results.append(result)
            tell(len(results))
        return results

    def starmap(self, fn, arglists: list) -> list:
        """[fn(*args) for args in arglists]: the first ones by the workers kept from the folds
        (one each), the last here meanwhile; all here without them. fn and its arguments are
        sent (pickled): a module's function and arrays."""
        if self.pool is None or len(arglists) < 2:
            return [fn(*args) for args in arglists]
        there = arglists[:-1][:self.pool.n_jobs]
        rest = arglists[len(there):]
        here: list = []
        done = list(self.pool.map([(_CALL, fn, args) for args in there],
                                  idle=lambda: here.extend(fn(*args) for args in rest)))
        return done + (here if len(here) == len(rest) else [fn(*args) for args in rest])

    def close(self) -> None:
        """End the workers kept from the folds."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None


_CALL = "call"  # (a task for FoldWorkers' workers after their folds: (_CALL, function, arguments))


def recalibrate(model: Model, docs: Iterable[Document], decisions: DecisionOptions = DecisionOptions(),
                n_jobs: int = 1, progress=None, calibration_sample: int = CALIBRATION_SAMPLE,
                sources: Sequence[str] = ()) -> tuple[int, ThresholdFit | None]:
    """Refit the model's decision (calibration map, positive class, threshold, max_fpr) on
    labelled documents, as train fits it, without changing its counts; returns how many
    documents were read and what a max_fpr threshold costs.

    Exactly as train: a fresh decision, the same bounded random sample of the documents in
    their order, the same internal folds. Given the very documents a model learned (in the
    order train read them), the fit is train's: merge(A, B) then calibrate on A + B predicts
    as train(A + B) does. Other documents are calibrated against themselves, as train does a
    sample of a larger corpus. Their tokens the model lacks are left out, as in scoring.
    ``sources``: the paths the documents were read from, which a refusal names."""
    needs_sample = decisions.needs_matrix or model.settings.choosing
    reservoir = Reservoir(calibration_sample, decisions.seed) if needs_sample else None
    n_docs, seen, scored = 0, set(), False
    for chunk, batch in counted(docs, model.tokenizer_settings, n_jobs=n_jobs):
        labels = [d.label for d in chunk]
        for d in chunk:
            model.counts.check_labels([d.label], d.id)
        seen.update(labels)
        n_docs += len(chunk)
        if reservoir is not None:
            rows = batch.onto(model.vocab, grow=False)
            scored = scored or rows.nnz > 0
            reservoir.add(rows, labels)
        if progress:
            progress(len(chunk))
    if not n_docs:
        raise no_documents("calibration", sources)
    if len(seen) < 2:  # (as train refuses: else the model's calibration would be replaced by none)
        raise NbtextError(f"need documents of at least two classes to calibrate, got only {sorted(seen)[0]!r}")
    if reservoir is not None and not scored:  # (each scored by the priors alone: a map fit to them
        # would replace the model's calibration with one that says nothing, as train refuses them)
        raise InputError(f"{where(sources)}none of the {n_docs} document{'' if n_docs == 1 else 's'} read has a "
                         "token of the model: nothing to calibrate on")
    X, y = reservoir.sample(len(model.vocab)) if reservoir is not None else (None, None)
    model.decision = Decision(positive=default_positive(model.classes))
    fit = apply_decisions(model, decisions, X, y, n_jobs=n_jobs, progress=progress)
    return n_docs, fit


def count_corpus(docs: Iterable[Document], tokenizer: TokenizerSettings, n_jobs: int = 1,
                 progress=None, ids: list | None = None, sources: Sequence[str] = ()
                 ) -> tuple["sp.csr_matrix", np.ndarray, Vocabulary]:
    """The whole corpus as one document-by-term matrix (scipy's), with labels and vocabulary;
    the documents' ids are appended to ``ids`` when it is given. ``sources``: the paths the
    documents were read from, which a refusal names."""
    vocab = Vocabulary()
    chunks, labels = [], []
    for chunk, batch in counted(docs, tokenizer, n_jobs=n_jobs):
        chunks.append(batch.onto(vocab, grow=True))
        labels += [d.label for d in chunk]
        if ids is not None:
            ids += [d.id for d in chunk]
        if progress:
            progress(len(chunk))
    if not labels:
        raise no_documents(sources=sources)
    return Rows.stack(chunks, len(vocab)).tocsr(), np.asarray(labels), vocab


def cross_validate(X, y, vocab: Vocabulary, tokenizer: TokenizerSettings, settings: ModelSettings,
                   features: FeatureOptions, decisions: DecisionOptions, k: int, seed: int,
                   predictions: list | None = None, sources: Sequence[str] = ()) -> list[dict]:
    """Eval figures of each of k stratified folds, each scored by a model trained (with the
    same options, calibration included) on the other k-1. With ``predictions`` (a list as long
    as y), each document's out-of-fold (label, probability of it, fold 1..k) is put at its row.
    ``sources``: the paths the documents were read from, which a refusal names."""
    from ..nb.calibrate import check_folds, stratified_folds
    from ..report import evaluate

    check_folds(y, k)
    if not len(vocab):  # (as train refuses them: no fold's model would have a token)
        refuse_tokenless(len(y), sources)
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
