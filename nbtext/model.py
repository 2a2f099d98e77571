"""A trained model: tokenizer settings + vocabulary + counts + decision, with scoring on top.

This is the library's high-level object: documents (bytes or text) in, labels and
posteriors out. The counts are the state (nbtext.nb.counts); the estimator derives from them
(nbtext.nb.estimators); file reading and writing live in nbtext.store.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Iterable, Sequence

import numpy as np

from .errors import InputError
from .features.counting import count_rows
from .features.rows import Rows
from .features.vocabulary import Vocabulary
from .ledger import Ledger
from .nb.counts import Counts
from .nb.decision import Decision, decide, default_positive
from .nb.estimators import make_estimator
from .nb.layer import Layer
from .settings import AUTO, AUTO_CANDIDATES, ModelSettings, TokenizerSettings
from .text.tokenizer import Tokenizer


@dataclass
class Model:
    tokenizer_settings: TokenizerSettings
    settings: ModelSettings
    vocab: Vocabulary
    counts: Counts                     # per class and token: the state (columns are vocab ids)
    decision: Decision = field(default_factory=Decision)
    ledger: Ledger = field(default_factory=Ledger)  # content digests of learned documents
    pruned: dict | None = None  # what train's memory budget dropped (batch.train.Reduction.pruning), else exact
    layer: Layer | None = None  # the decision layer, fitted with the calibration map (nb.layer), else none
    kind = "text"  # (a class attribute, not a field; a table model's is "table": commands dispatch on it)

    def __post_init__(self):
        if self.settings.variant == AUTO:  # until train's internal folds choose: the first candidate
            self.settings = self.settings.chosen(AUTO_CANDIDATES[0])

    @classmethod
    def empty(cls, tokenizer_settings: TokenizerSettings, settings: ModelSettings,
              classes: Iterable[str]) -> "Model":
        counts = Counts(classes)
        return cls(tokenizer_settings, settings, Vocabulary(), counts,
                   Decision(positive=default_positive(counts.classes)))

    # -- what it holds --------------------------------------------------------------------
    @property
    def classes(self) -> list[str]:
        return self.counts.classes

    @property
    def feature_count(self) -> np.ndarray:
        """(n_classes, n_features) raw counts, as the variant counts them."""
        return self.counts.feature_count

    @property
    def class_count(self) -> np.ndarray:
        return self.counts.class_count

    @property
    def doc_freq(self) -> np.ndarray | None:
        """Documents per token; kept (in files too) only by idf models, which weigh by it."""
        return self.counts.doc_freq if self.settings.idf else None

    @property
    def n_documents(self) -> int:
        return self.counts.n_documents

    @property
    def tokenizer(self) -> Tokenizer:
        tok = getattr(self, "_tokenizer", None)
        if tok is None or tok.settings != self.tokenizer_settings:
            tok = self._tokenizer = Tokenizer(self.tokenizer_settings)
        return tok

    @property
    def estimator(self):
        """The scikit-learn-style estimator over this model's counts (made once per counts)."""
        est, made_for = getattr(self, "_estimator", None), getattr(self, "_estimator_settings", None)
        if est is None or est.counts_ is not self.counts or made_for != self.settings:
            est = self._estimator = make_estimator(self.settings, self.counts)
            self._estimator_settings = self.settings
        return est

    # -- learning and forgetting ----------------------------------------------------------
    def add(self, token_lists: Iterable[list[str]], labels: Sequence[str], weight: float = 1.0):
        """Add (weight=1) or take out (weight=-1) documents' counts."""
        self.counts.check_labels(labels)
        X = count_rows(token_lists, self.vocab, grow=weight > 0)
        est = self.estimator
        est.partial_fit(X, list(labels), sample_weight=None if weight == 1 else np.full(len(labels), float(weight)))
        self.counts = est.counts_  # (taking out makes new counts: all or nothing)
        if weight < 0:
            self.drop_unused_tokens()

    def drop_unused_tokens(self) -> None:
        """Take tokens that no document holds any more out of the vocabulary. Forgetting must
        restore the model as it was before learning: a token left behind at count zero still
        widens the smoothing denominator (alpha * V) and moved every prediction (0.999314 vs
        0.999310). Ids of the tokens kept stay in their order."""
        used = self.counts.token_totals() > 0
        if not used.all():
            self.keep_columns(np.flatnonzero(used))

    def keep_columns(self, keep: np.ndarray) -> None:
        """Keep the tokens ``keep`` (sorted ids) alone, renumbered 0, 1, ...: the vocabulary, the
        counts and the decision layer's weights."""
        if self.layer is not None:
            self.layer = self.layer.kept(keep, self.counts.width)
        self.vocab, self.counts = self.vocab.subset(keep), self.counts.columns(keep)

    def check_trainable(self):
        self.counts.check_trainable()

    # -- scoring ----------------------------------------------------------------------
    def matrix(self, token_lists: Iterable[list[str]]):
        return count_rows(token_lists, self.vocab, grow=False)

    def log_proba(self, X) -> np.ndarray:
        """Posteriors in log space, through the decision's calibration map (nbtext.nb.calibrate);
        X: the documents' raw token counts over the vocabulary."""
        from .nb.calibrate import calibrated_log, lengths_of
        from .nb.weights import check_scorable

        check_scorable(self.class_count)  # (the commands name the file, before the work)
        # (as nbtext's Rows: the counts are the model's own, not a library caller's X to check)
        joint = None if self.layer is None else self.layer.joint(self.estimator.linear(), X, self.counts)
        if joint is not None:  # (NB's and the layer's products in one pass of the kernel)
            return self.layer.combined_log(calibrated_log(self.decision, joint[0], lengths_of(X)), joint[1])
        logp = calibrated_log(self.decision, self.estimator.predict_joint_log_proba(Rows.of(X)), lengths_of(X))
        return logp if self.layer is None else self.layer.log_proba(logp, X, self.counts)

    def proba(self, X) -> np.ndarray:
        return np.exp(self.log_proba(X))

    # -- documents in, labels out --------------------------------------------------------
    def document_log_proba(self, documents: Iterable) -> np.ndarray:
        """Posteriors in log space of documents (str or bytes), in the order of ``classes``:
        counted as predict counts them (features.counting.count_documents: the compiled kernel's
        tokens or the tokenizer's, the same) onto the vocabulary, through the calibration map:
        the probabilities `nbtext predict` prints."""
        from .features.counting import count_documents

        datas = list(documents)
        bad = next((d for d in datas if not isinstance(d, (str, bytes))), None)
        if bad is not None:
            raise InputError(f"a document is text (str) or bytes, got {type(bad).__name__}")
        if not datas:
            return np.zeros((0, len(self.classes)))
        return self.log_proba(count_documents(datas, self.tokenizer_settings).onto(self.vocab, grow=False))

    def predict_proba(self, documents: Iterable) -> np.ndarray:
        """Each document's posteriors, one column per class of ``classes`` (``nbtext predict``'s
        scores)."""
        return np.exp(self.document_log_proba(documents))

    def predict(self, documents: Iterable) -> list[str]:
        """Each document's label, decided as ``nbtext predict`` decides it (the model's
        threshold for two classes, else the most probable class)."""
        return self.verdicts(self.predict_proba(documents))

    def decide_rows(self, proba: np.ndarray) -> list[tuple[str, bool]]:
        """(label, unsure) per row of posteriors: argmax, or the threshold for two classes (the
        rows read as Python floats: numpy's elements taken one by one cost more than deciding)."""
        classes, decision = self.classes, self.decision
        return [decide(classes, decision, row) for row in np.asarray(proba).tolist()]

    def verdicts(self, proba: np.ndarray) -> list[str]:
        return [label for label, _ in self.decide_rows(proba)]
