"""A trained model: tokenizer settings + vocabulary + class counts, with scoring on top.

This is the library's high-level object: documents (bytes or text) in, labels and
posteriors out. File reading and writing live in nbtext.modelfile; the counting math in
nbtext.naive_bayes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Iterable, Sequence

import numpy as np

from .decision import Decision, decide, default_positive
from .errors import NbtextError
from .naive_bayes import logsumexp_rows, make_estimator
from .settings import ModelSettings, TokenizerSettings
from .tokenize import Tokenizer
from .vectorize import Vocabulary, count_rows


@dataclass
class Model:
    tokenizer_settings: TokenizerSettings
    settings: ModelSettings
    classes: list[str]
    vocab: Vocabulary
    feature_count: np.ndarray          # (n_classes, n_features) raw counts
    class_count: np.ndarray            # (n_classes,) documents per class
    decision: Decision = field(default_factory=Decision)
    ledger: set = field(default_factory=set)  # content digests of learned documents
    doc_freq: np.ndarray | None = None  # (n_features,) documents per term, kept for --idf

    # -- construction -----------------------------------------------------------------
    @classmethod
    def empty(cls, tokenizer_settings: TokenizerSettings, settings: ModelSettings,
              classes: Iterable[str]) -> "Model":
        classes = sorted(set(classes))
        return cls(tokenizer_settings, settings, classes, Vocabulary(),
                   np.zeros((len(classes), 0)), np.zeros(len(classes)),
                   Decision(positive=default_positive(classes)))

    @property
    def tokenizer(self) -> Tokenizer:
        tok = getattr(self, "_tokenizer", None)
        if tok is None or tok.settings != self.tokenizer_settings:
            tok = self._tokenizer = Tokenizer(self.tokenizer_settings)
        return tok

    @property
    def estimator(self):
        """A scikit-learn-style estimator viewing this model's counts."""
        s = self.settings
        est = make_estimator(s)
        est._start(np.asarray(self.classes), self.feature_count.shape[1])
        est.feature_count_ = self.feature_count
        est.class_count_ = self.class_count
        if self.doc_freq is not None:
            est.doc_freq_ = self.doc_freq
        est.grow(len(self.vocab))  # tokens added to the vocabulary since the last count
        return est

    @property
    def n_documents(self) -> int:
        return int(round(self.class_count.sum()))

    # -- counting ---------------------------------------------------------------------
    def add(self, token_lists: Iterable[list[str]], labels: Sequence[str], weight: float = 1.0):
        """Add (weight=1) or take out (weight=-1) documents' counts."""
        X = count_rows(token_lists, self.vocab, grow=weight > 0)
        self.add_matrix(X, labels, weight)

    def add_matrix(self, X, labels: Sequence[str], weight: float = 1.0):
        unknown = sorted(set(labels) - set(self.classes))
        if unknown:
            raise NbtextError(f"unknown label {unknown[0]!r}: the model's classes are {', '.join(self.classes)}")
        est = self.estimator
        est.partial_fit(X, np.asarray(labels), sample_weight=np.full(len(labels), float(weight)))
        self.feature_count, self.class_count = est.feature_count_, est.class_count_
        if self.settings.idf:
            self.doc_freq = est.doc_freq_

    def check_trainable(self):
        present = [str(c) for c, n in zip(self.classes, self.class_count) if n > 0]
        if len(present) < 2:
            raise NbtextError(
                f"need documents of at least two classes to train, got {present or 'none'}")

    # -- scoring ----------------------------------------------------------------------
    def matrix(self, token_lists: Iterable[list[str]]):
        return count_rows(token_lists, self.vocab, grow=False)

    def log_proba(self, X, estimator=None) -> np.ndarray:
        """Posteriors in log space. Pass ``estimator`` (self.estimator, taken once) to score
        many batches: each new estimator derives the log-probabilities of the whole
        vocabulary again (14 ms for spamassassin's, per batch)."""
        est = estimator if estimator is not None else self.estimator
        jll = est.predict_joint_log_proba(X) / self.decision.temperature
        return jll - logsumexp_rows(jll)[:, None]

    def proba(self, X, estimator=None) -> np.ndarray:
        return np.exp(self.log_proba(X, estimator))

    def documents_proba(self, docs: Iterable[bytes | str]) -> np.ndarray:
        tok = self.tokenizer
        return self.proba(self.matrix(tok(d) for d in docs))

    def decide_rows(self, proba: np.ndarray) -> list[tuple[str, bool]]:
        """(label, unsure) per row of posteriors: argmax, or the threshold for two classes."""
        return [decide(self.classes, self.decision, row) for row in proba]

    def verdicts(self, proba: np.ndarray) -> list[str]:
        return [label for label, _ in self.decide_rows(proba)]
