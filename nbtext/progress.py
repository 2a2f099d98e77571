"""What long work reports as it goes, as values: the phase it is in and how far it has come.

The library calls a ``progress`` callable that its caller passes in (train_model, recalibrate,
the fold mapper); the command line draws what it is told (cli.Progress), and a library
caller may pass any callable or none. Other work (predict, eval, cv's reading) calls it with a
plain number of documents, as before.
"""
from __future__ import annotations

from .record import Record

COUNTING, CALIBRATING, SAVING = "counting", "calibrating", "saving"


class Step(Record):
    """Where a long task is: in ``phase``, ``done`` of ``total`` (None: not known), counted in the
    phase's unit: counting, bytes of documents read (``documents`` of them); calibrating, the
    internal fold being scored (1..total); saving, none."""

    phase: str
    done: int = 0
    total: int | None = None
    documents: int = 0
