"""Text in, labels out, as scikit-learn estimators: ``TextVectorizer`` (nbtext's tokenizer and
vocabulary as a transformer: documents to a sparse count matrix) and ``TextClassifier`` (what
``nbtext train`` makes and ``nbtext predict`` scores, fitted on a list of documents); and
``save``/``load`` of what either the library or the command line made.

    clf = nbtext.TextClassifier().fit(["cheap pills now", "lunch at noon?"], ["spam", "ham"])
    clf.predict(["pills at noon"]), clf.predict_proba(["pills at noon"])
    nbtext.save(clf, "m.nbm")            # the model file `nbtext train` writes
    nbtext.load("m.nbm").predict([...])  # a Model: the same labels and probabilities

A TextClassifier trains through batch.train.train_model (the command line's training: the same
counts, features, calibration and decisions for the same documents in the same order) and
predicts through Model.document_log_proba (the command line's counting and calibration). A
model file names its classes as text: labels that are not strings come back from a loaded
model as their text; ``TextClassifier.of_model`` wraps a loaded model as an estimator again.
"""
from __future__ import annotations

import numpy as np

from .errors import InputError, NbtextError
from .model import Model
from .nb.interface import (ClassifierInterface, EstimatorInterface, TagValues, check_lengths, check_y,
                           not_fitted_error)
from .settings import DecisionOptions, FeatureOptions, ModelSettings, TokenizerSettings


def _documents(X) -> list:
    """A sequence of documents (str or bytes) as a list; a matrix or a lone string refused."""
    if isinstance(X, (str, bytes)):
        raise InputError("X is a sequence of documents (str or bytes); got one document: wrap it in a list")
    if X is None or (hasattr(X, "ndim") and getattr(X, "ndim", 1) != 1):
        raise InputError(f"X is a sequence of documents (str or bytes), got {type(X).__name__}"
                         + (f" with {X.ndim} dimensions" if hasattr(X, "ndim") else ""))
    docs = list(X)
    bad = next((d for d in docs if not isinstance(d, (str, bytes))), None)
    if bad is not None:
        raise InputError(f"a document is text (str) or bytes, got {type(bad).__name__}")
    return docs


class TextVectorizer(EstimatorInterface):
    """Documents to a scipy CSR matrix of token counts over a vocabulary fitted on documents,
    tokenized as ``nbtext train`` tokenizes them (``tokenizer``: a TokenizerSettings; None:
    the defaults). Columns are token ids in first-seen order: ``get_feature_names_out``."""

    tag_values = TagValues(text=True, kind="transformer")

    def __init__(self, tokenizer: TokenizerSettings | None = None):
        self.tokenizer = tokenizer

    def _fitted(self) -> bool:
        return "vocabulary_" in self.__dict__

    def _batch(self, X):
        from .features.counting import count_documents

        return count_documents(_documents(X), self.tokenizer or TokenizerSettings())

    def _fit(self, X, rows: bool):
        """Fit vocabulary_ on X's documents, and return their rows over it when ``rows``; a
        vocabulary of no token (no document, or none with a token) is refused as
        scikit-learn's vectorizers refuse it, with a ValueError, and a fitted one is kept."""
        from .batch.train import refuse_tokenless
        from .features.counting import count_documents
        from .features.vocabulary import Vocabulary

        docs = _documents(X)
        vocab, batch = Vocabulary(), count_documents(docs, self.tokenizer or TokenizerSettings())
        out = batch.onto(vocab, grow=True) if rows else batch.ids_in(vocab, grow=True)
        if not len(vocab):
            refuse_tokenless(len(docs), outcome="the vocabulary would be empty")
        self.vocabulary_ = vocab
        return out.tocsr() if rows else self

    def fit(self, X, y=None):
        return self._fit(X, rows=False)

    def transform(self, X):
        self._check_fitted()
        return self._batch(X).onto(self.vocabulary_, grow=False).tocsr()

    def fit_transform(self, X, y=None):
        return self._fit(X, rows=True)

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        self._check_fitted()
        return np.asarray(self.vocabulary_.tokens, dtype=object)


class TextClassifier(ClassifierInterface):
    """``nbtext train`` and ``nbtext predict`` as an estimator: fit on documents (str or bytes)
    and their labels; predict labels and the calibrated probabilities the command line prints.

    ``variant``, ``alpha``, ``norm``, ``tf``, ``idf``, ``length_norm``: ModelSettings' (train's
    --variant, --alpha, ...); ``tokenizer``, ``features``, ``decisions``: a TokenizerSettings,
    FeatureOptions and DecisionOptions (None: train's defaults); ``n_jobs``: train's -j.
    ``model_`` is the fitted Model."""

    tag_values = TagValues(text=True)

    def __init__(self, *, variant: str = ModelSettings.variant, alpha: float = ModelSettings.alpha,
                 norm: bool = False, tf: bool = False, idf: bool = False, length_norm: bool = False,
                 tokenizer: TokenizerSettings | None = None, features: FeatureOptions | None = None,
                 decisions: DecisionOptions | None = None, n_jobs: int = 1):
        self.variant, self.alpha = variant, alpha
        self.norm, self.tf, self.idf, self.length_norm = norm, tf, idf, length_norm
        self.tokenizer, self.features, self.decisions, self.n_jobs = tokenizer, features, decisions, n_jobs

    def _fitted(self) -> bool:
        return "model_" in self.__dict__

    @classmethod
    def of_model(cls, model: Model) -> "TextClassifier":
        """A fitted TextClassifier over a Model (nbtext.load's, or train_model's), its classes
        the model's."""
        s = model.settings
        clf = cls(variant=s.variant, alpha=s.alpha, norm=s.norm, tf=s.tf, idf=s.idf, length_norm=s.length_norm,
                  tokenizer=model.tokenizer_settings)
        clf.model_, clf.classes_ = model, np.asarray(model.classes)
        return clf

    def fit(self, X, y):
        from .batch.train import train_model
        from .read import Document

        docs = _documents(X)
        y = check_y(y)
        check_lengths(len(docs), y)
        classes = np.unique(y)
        names = [str(c) for c in classes.tolist()]
        if len(set(names)) != len(names):
            raise InputError(f"two classes have the same text, which a model file names them by: {names}")
        try:
            settings = ModelSettings(variant=self.variant, alpha=self.alpha, norm=self.norm, tf=self.tf, idf=self.idf,
                                     length_norm=self.length_norm)
        except NbtextError as e:
            raise InputError(str(e)) from None
        model, _ = train_model((Document(str(i), d, str(label)) for i, (d, label) in enumerate(zip(docs, y.tolist()))),
                               self.tokenizer or TokenizerSettings(), settings, self.features or FeatureOptions(),
                               self.decisions or DecisionOptions(), n_jobs=self.n_jobs)
        from .store.codec import as_stored

        self.model_, self.classes_ = as_stored(model), classes
        return self

    def _columns(self) -> list:
        """Each class of classes_'s column in the model's (its classes sorted as text)."""
        index = {c: i for i, c in enumerate(self.model_.classes)}
        return [index[str(c)] for c in self.classes_.tolist()]

    def predict_log_proba(self, X) -> np.ndarray:
        self._check_fitted()
        return self.model_.document_log_proba(_documents(X))[:, self._columns()]

    def predict_proba(self, X) -> np.ndarray:
        return np.exp(self.predict_log_proba(X))

    def predict(self, X) -> np.ndarray:
        self._check_fitted()
        by_name = {str(c): c for c in self.classes_.tolist()}
        labels = self.model_.predict(_documents(X))
        return np.asarray([by_name[label] for label in labels], dtype=self.classes_.dtype)


def save(model, path: str) -> None:
    """Write a model file atomically: a Model (a text model, nbtext.load's or train_model's),
    a TableModel, or a fitted TextClassifier's model. An estimator fitted on a matrix
    (MultinomialNB, GaussianNB, ...) has no tokenizer or vocabulary for a model file to hold."""
    from .store import save as store_save

    if isinstance(model, TextClassifier):
        if not model._fitted():
            raise not_fitted_error()("This TextClassifier instance is not fitted yet: there is no model to save")
        model = model.model_
    elif isinstance(model, EstimatorInterface):
        raise InputError(f"nbtext.save writes a text model (a fitted TextClassifier, or a Model) or a table model, "
                         f"not a {type(model).__name__} fitted on a matrix: it has no tokenizer or vocabulary to "
                         "store (fit a TextClassifier on the documents instead)")
    store_save(model, path)


def load(path: str):
    """The model in a model file: a Model for a text model (``predict``/``predict_proba`` take
    documents; ``TextClassifier.of_model`` makes it an estimator), a TableModel for a table's."""
    from .store import load as store_load

    return store_load(path)
