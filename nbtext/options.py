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


SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
LEAST_MEMORY = 1 << 20  # --max-memory at least: a budget below one chunk's tokens would drop every token


def parse_size(value: str) -> int:
    """A size as `sort -S` and fastText's users write it: bytes, or a number with K, M, G or T
    (powers of 1024, a B after it allowed: "2G", "500M", "1.5GB"); ValueError otherwise."""
    text = value.strip().upper().removesuffix("B")
    unit = text[-1:] if text[-1:] in ("K", "M", "G", "T") else ""
    number = text[:len(text) - len(unit)]
    try:
        size = float(number) * SIZE_UNITS[unit]
    except ValueError:
        raise ValueError(f"{value!r} is not a size (bytes, or a number with K, M, G or T: 2G, 500M)") from None
    if not LEAST_MEMORY <= size < 2**63:
        raise ValueError(f"{value!r} is out of range: from 1M, less than {2**63 // SIZE_UNITS['T']}T")
    return int(size)


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
    (None: a local one); and the bytes train's peak memory is kept to (``max_memory``, None:
    batch.train.MAX_MEMORY)."""

    name: str = "local"
    scheduler: str | None = None
    jobs: int | None = None
    max_memory: int | None = None


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
