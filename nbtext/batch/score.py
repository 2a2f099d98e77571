"""Scoring many documents: chunks counted (on one core or several) onto a model's vocabulary,
then its posteriors, in input order."""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from ..features.counting import Batch
from ..model import Model
from ..read import Document
from .chunks import CHUNK, counted


def log_scored_batches(model: Model, docs: Iterable[Document], n_jobs: int = 1, chunk_size: int = CHUNK,
                       batches: bool = False) -> Iterator[tuple[list[Document], Batch | None, np.ndarray,
                                                                 np.ndarray]]:
    """(documents, their Batch if ``batches`` else None, posteriors, the same in log space:
    Model.log_proba) chunk by chunk, in input order; the posteriors are Model.proba, the model
    computed once.

    Each chunk is scored where it was counted (batch.chunks.counted's ``then``): forked
    workers score their own chunks, and only the scores (and the Batch, when asked for) come
    back, so the parent's share of the work is reading and writing (measured faster for predict
    on 2 cores: docs/bench.md).
    The weights are made here, before the workers are forked, so that they share one copy."""
    model.estimator.linear().prepare()  # (made once, in the parent: the workers' copy is the parent's pages)
    if model.layer is not None:
        model.layer.prepare(model.counts)

    def score(_, batch: Batch):
        return batch if batches else None, model.log_proba(batch.onto(model.vocab, grow=False))

    for chunk, (batch, log_proba) in counted(docs, model.tokenizer_settings, n_jobs=n_jobs,
                                             chunk_size=chunk_size, then=score):
        yield chunk, batch, np.exp(log_proba), log_proba


def score_chunks(model: Model, docs: Iterable[Document], n_jobs: int = 1, chunk_size: int = CHUNK
                 ) -> Iterator[tuple[list[Document], np.ndarray]]:
    """(documents, posteriors) chunk by chunk, in input order."""
    for chunk, _, proba, _ in log_scored_batches(model, docs, n_jobs, chunk_size):
        yield chunk, proba


def evaluate_documents(model: Model, docs: Iterable[Document], n_jobs: int = 1, progress=None,
                       sources: Sequence[str] = ()) -> dict:
    """eval's figures (nbtext.report.evaluate) of a model on labelled documents (read from
    ``sources``, which a refusal names)."""
    from ..errors import no_documents
    from ..report import evaluate

    y_true, y_pred, probas = [], [], []
    for chunk, proba in score_chunks(model, docs, n_jobs=n_jobs):
        for d in chunk:
            model.counts.check_labels([d.label], d.id)
        y_true += [d.label for d in chunk]
        y_pred += model.verdicts(proba)
        probas.append(proba)
        if progress:
            progress(len(chunk))
    if not y_true:
        raise no_documents("evaluation", sources)
    return evaluate(model.classes, y_true, y_pred, np.vstack(probas), model.decision.positive)
