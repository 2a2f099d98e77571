"""What long work reports as it goes, as values: the phase it is in and how far it has come.

The library calls a ``progress`` callable that its caller passes in (train_model, recalibrate,
the fold mapper); the command line draws what it is told (cli.Progress), and a library
caller may pass any callable or none. Other work (predict, eval, cv's reading) calls it with a
plain number of documents, as before.
"""
from __future__ import annotations

from .record import Record

COUNTING, CALIBRATING, SAVING = "counting", "calibrating", "saving"
# Internal folds that fit no calibration map (--no-calibrate) only choose: auto's variant, a
# --max-fpr threshold, or both. Their phase says which (batch.train.folds_phase), not "calibrating".
CHOOSING_VARIANT = "choosing the variant"
CHOOSING_THRESHOLD = "choosing the threshold"
CHOOSING_BOTH = "choosing the variant and the threshold"
FOLDS = (CALIBRATING, CHOOSING_VARIANT, CHOOSING_THRESHOLD, CHOOSING_BOTH)  # the phases of internal folds


class Step(Record):
    """Where a long task is: in ``phase``, ``done`` of ``total`` (None: not known), counted in the
    phase's unit: counting, bytes of documents read (``documents`` of them); calibrating (and
    the other FOLDS), the internal fold being scored (1..total); saving, none."""

    phase: str
    done: int = 0
    total: int | None = None
    documents: int = 0
