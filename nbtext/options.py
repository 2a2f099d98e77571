"""What a command was asked, as small frozen records: the typed boundary under the command lines.

Click's nbtext.cli and the click-free nbtext.quick build these once from their arguments and pass
them down; nothing below the command lines sees click's keyword dict. Settings that shape a
model live in nbtext.settings; these say where a run reads, how it runs and what it writes.
(Records, not dataclasses, and no import but nbtext.record when loaded: classify's start-up,
nbtext.record.)
"""
from __future__ import annotations

from .record import Record


def parse_pair(value: str, cast=float) -> tuple:
    """"LOW,HIGH" as two numbers (ValueError otherwise)."""
    lo, hi = (cast(x) for x in value.split(","))
    return lo, hi


class Sources(Record):
    """A command's labelled inputs: SOURCEs (a labelled folder, a line file, a table) and
    ``labelled`` (LABEL, PATH) pairs of --label, with how line files are read
    (``line``: an nbtext.read.LineOptions)."""

    paths: tuple = ()
    labelled: tuple = ()
    line: object

    @property
    def all(self) -> list[str]:
        """Every path read, SOURCEs first (none may be a command's output)."""
        return [*self.paths, *(p for _, p in self.labelled)]

    @property
    def table_paths(self) -> list[str]:
        """The tables a table run reads: SOURCEs, or standard input."""
        return list(self.paths) or ["-"]


class Inputs(Record):
    """Unlabelled documents to score: ``paths`` (- for standard input), each read whole, or
    (``lines``) each line a document, or as line files of ``format`` (``line``: an
    nbtext.read.LineOptions naming the text column)."""

    paths: tuple = ("-",)
    lines: bool = False
    format: str | None = None
    line: object

    @property
    def line_files(self) -> bool:
        """Whether each line of an input is a document (else each input is one)."""
        return bool(self.lines or self.format)


class Engine(Record):
    """Where documents are counted or scored: here, on ``jobs`` worker processes (None: all
    cores when the input is large), or (``name`` dask) on the Dask cluster at ``scheduler``
    (None: a local one)."""

    name: str = "local"
    scheduler: str | None = None
    jobs: int | None = None


class Overrides(Record):
    """A decision asked at scoring time over what the model stores: the positive class, the
    threshold on P(positive), the unsure band (LOW, HIGH)."""

    positive: str | None = None
    threshold: float | None = None
    unsure: tuple | None = None

    def apply(self, decision, classes) -> None:
        decision.choose(classes, self.positive, self.threshold, self.unsure)


class PredictOutput(Record):
    """predict's rows: ``fmt`` (tsv, csv, jsonl), a ``header`` row, the ``explain`` tokens per
    row (jsonl), a table row's log-density, P(positive) and the verdict (``spamicity``)."""

    fmt: str = "tsv"
    header: bool = False
    explain: int | None = None
    density: bool = False
    spamicity: bool = False


class TableTraining(Record):
    """train's and cv's options that only a table run reads, as given: the variant and
    smoothing, the feature columns (COL,... lists), the covariance and its regularization, and
    rows read at a time."""

    variant: str
    alpha: float | None
    columns: str | None
    categorical: str | None
    numeric: str | None
    covariance: str | None
    reg: float | None
    chunk_rows: int | None

    @property
    def asked(self) -> bool:
        """Whether an option names a table run (whatever the sources look like)."""
        from .settings import TABLE_VARIANTS

        return self.variant in TABLE_VARIANTS or any((self.columns, self.categorical, self.numeric,
                                                      self.covariance))


class TableRun(Record):
    """A train or cv run about tables: where it reads, its table options, and the decision
    asked (``max_fpr``, which tables refuse, and the overrides)."""

    sources: Sources
    table: TableTraining
    overrides: Overrides
    max_fpr: float | None


class Classify(Record):
    """One `nbtext classify`: the model, the message (``file``, - for standard input) or a
    table model's ``row``, the decision asked, and what to print or do: the exit status as
    bogofilter's, the ``explain`` tokens, the message with headers (``passthrough``), learn it
    as its verdict (``learn``), P(positive) and the verdict (``spamicity``)."""

    model_path: str = ""
    file: str = "-"
    row: str | None = None
    overrides: Overrides = Overrides()
    exit_code: bool = False
    explain: int | None = None
    passthrough: bool = False
    learn: bool = False
    spamicity: bool = False
    quiet: bool = False

    @classmethod
    def of(cls, dests: dict) -> "Classify":
        """The call that classify's option table's parameters (nbtext.quick.CLASSIFY_OPTIONS, as
        either command line read them) and FILE describe."""
        return cls(model_path=dests["model_path"], file=dests["file"], row=dests["row"],
                   overrides=Overrides(dests["positive"], dests["threshold"], dests["unsure"]),
                   exit_code=dests["exit_code"], explain=dests["explain"], passthrough=dests["passthrough"],
                   learn=dests["learn_verdict"], spamicity=dests["spamicity"], quiet=dests["quiet"])
