"""A table model: its columns (names and types), label column, statistics and decision; training
a table a chunk at a time, and scoring rows.

Categorical columns are categorical NB, numeric ones Gaussian (diagonal: Gaussian NB; shared or
per-class covariance), in one model: the joint log-likelihood sums each family's terms.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..errors import NbtextError
from ..nb.decision import Decision, decide, default_positive
from ..nb.estimators import log_posteriors
from ..settings import TableSettings
from ..store.fields import check_class_sums
from .estimate import TableEstimator
from .read import CATEGORICAL, NUMERIC, Frame, Retype, TableOptions, frames, infer_kinds, open_table, spooled
from .stats import TableStats


class TableModel:
    kind = "table"

    def __init__(self, settings: TableSettings, label_column: str, columns: list[str], kinds: list[str],
                 stats: TableStats, decision: Decision | None = None):
        self.settings, self.label_column = settings, label_column
        self.columns, self.kinds, self.stats = list(columns), list(kinds), stats
        self.decision = decision or Decision(positive=default_positive(stats.classes))
        self.ledger: set = set()  # (table models keep no ledger: rows are not documents)

    @classmethod
    def empty(cls, settings: TableSettings, label_column: str, columns: list[str], kinds: list[str]):
        stats = TableStats(kinds.count(CATEGORICAL), kinds.count(NUMERIC), settings.covariance != "diagonal")
        return cls(settings, label_column, columns, kinds, stats)

    # -- what it holds --------------------------------------------------------------------
    @property
    def classes(self) -> list[str]:
        return self.stats.classes

    @property
    def class_count(self) -> np.ndarray:
        return self.stats.class_count

    @property
    def n_documents(self) -> int:
        return self.stats.n_rows

    @property
    def categorical_columns(self) -> list[str]:
        return [c for c, k in zip(self.columns, self.kinds) if k == CATEGORICAL]

    @property
    def numeric_columns(self) -> list[str]:
        return [c for c, k in zip(self.columns, self.kinds) if k == NUMERIC]

    @property
    def estimator(self) -> TableEstimator:
        est = getattr(self, "_estimator", None)
        if est is None or est.stats is not self.stats or self._version != self.stats.version:
            est = self._estimator = TableEstimator(self.stats, self.settings)
            self._version = self.stats.version
        return est

    # -- learning -------------------------------------------------------------------------
    def add(self, frame: Frame, labels: list[str] | None = None, weight: float = 1.0) -> None:
        labels = frame.labels if labels is None else labels
        if weight > 0:
            self.stats.add(frame, labels)
        else:
            self.stats = self.stats.plus(frame, labels, weight)

    # -- scoring ----------------------------------------------------------------------------
    def joint_log_likelihood(self, frame: Frame) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            jll = self.estimator.joint_log_likelihood(frame.cat, frame.num)
        bad = np.isnan(jll).any(axis=1) | ~np.isfinite(jll).any(axis=1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise NbtextError(f"row {frame.rows[i]} (line {frame.lines[i]}): a value too large to score "
                              "(its square overflows)")
        return jll

    def log_proba(self, frame: Frame) -> np.ndarray:
        return log_posteriors(self.joint_log_likelihood(frame), self.decision.temperature)

    def proba(self, frame: Frame) -> np.ndarray:
        return np.exp(self.log_proba(frame))

    def scores(self, frame: Frame) -> tuple[np.ndarray, np.ndarray]:
        """(posteriors, log p(x)) of each row."""
        jll = self.joint_log_likelihood(frame)
        return np.exp(log_posteriors(jll, self.decision.temperature)), self.estimator.log_density(jll)

    def decide_rows(self, proba: np.ndarray) -> list[tuple[str, bool]]:
        return [decide(self.classes, self.decision, row) for row in proba]

    def decide_array(self, proba: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """decide_rows for a whole array: (class index, unsure) per row, as nb.decision.decide
        says (argmax, the first on ties; for two classes and a positive one, its threshold)."""
        d, classes = self.decision, self.classes
        best = proba.argmax(axis=1)
        unsure = np.zeros(len(proba), dtype=bool)
        if len(classes) == 2 and d.positive in classes:
            i = classes.index(d.positive)
            p = proba[:, i]
            best = np.where(p >= d.threshold, i, 1 - i)
            if d.unsure:
                unsure = (d.unsure[0] <= p) & (p < d.unsure[1])
        return best, unsure

    def linear(self) -> dict:
        """The two-class decision function, with the decision's threshold folded into b, so that
        f(x) >= 0 exactly where the model says the positive class."""
        from ..nb.decision import positive_of

        if len(self.classes) != 2:
            raise NbtextError(f"the linear view is for two classes; this model has {len(self.classes)}")
        pos = self.classes.index(positive_of(self.classes, self.decision.positive))
        view = self.estimator.linear(pos, self.columns, self.kinds)
        t, temp = self.decision.threshold, self.decision.temperature
        if t in (0.0, 1.0):
            raise NbtextError(f"a threshold of {t:g} calls every row one class: no decision function")
        view["b"] -= temp * float(np.log(t / (1 - t)))
        return view

    # -- reading rows -------------------------------------------------------------------------
    def frames_of(self, path: str, opts: TableOptions, labelled: bool = False, stdin=None) -> Iterator[Frame]:
        """Frames of a table to score (or, labelled, to evaluate or learn): the model's
        columns found by name in its header; labelled, the label column as given or, when
        the table has no such column, the model's."""
        opts = TableOptions(format=opts.format, label_column=opts.label_column or self.label_column,
                            chunk_rows=opts.chunk_rows)
        header, rows = open_table(path, opts, labelled=labelled, features=self.columns, stdin=stdin,
                                  fallback_label=self.label_column)
        return frames(header, rows, self.kinds, opts.chunk_rows, labelled=labelled)

    def row_frame(self, cells: dict) -> Frame:
        """One row given as {column: value} (a column not given is missing)."""
        from .read import category, parse_numbers

        unknown = sorted(set(cells) - set(self.columns))
        if unknown:
            raise NbtextError(f"--row: no column {unknown[0]!r} in the model (columns: {', '.join(self.columns)})")
        cat = [[category(cells.get(c, ""))] for c in self.categorical_columns]
        num = np.asarray([[parse_numbers([cells.get(c, "")], "--row", [1], c)[0] for c in self.numeric_columns]])
        return Frame([1], np.asarray([1]), None, cat, num.reshape(1, len(self.numeric_columns)))


def merge_tables(models: list) -> TableModel:
    """Table models trained with the same settings and columns, their statistics merged."""
    (first_path, first), rest = models[0], models[1:]
    for path, m in rest:
        if m.kind != "table":
            raise NbtextError(f"{path}: a text model; it cannot be merged with the table model {first_path}")
        for what, a, b in (("settings", first.settings.to_dict(), m.settings.to_dict()),
                           ("columns", first.columns, m.columns), ("column types", first.kinds, m.kinds),
                           ("label column", first.label_column, m.label_column)):
            if a != b:
                raise NbtextError(f"{path}: its {what} differ ({first_path}: {a!r}, {path}: {b!r}); only table "
                                  "models with equal settings and columns can be merged")
    # (a class's count of a column's values is at most its rows, as the file's checks hold it:
    # rows that stay within MAX_COUNT keep every count within it)
    check_class_sums([(m.classes, m.stats.class_count.tolist()) for _, m in models],
                     f"{', '.join(path for path, _ in models)}: merged", "rows")
    stats = first.stats.copy()
    for _, m in rest:
        stats.merge(m.stats)
    stats.check_finite(first.numeric_columns)
    out = TableModel(first.settings, first.label_column, first.columns, first.kinds, stats,
                     Decision.from_dict(first.decision.to_dict()))
    if out.decision.positive not in out.classes:
        out.decision.positive = None
    return out


def table_sources(sources: list[str]) -> None:
    if len(sources) < 1:
        raise NbtextError("give a table (a CSV or TSV file, or - for stdin)")


def train_table(sources: list[str], opts: TableOptions, settings: TableSettings,
                decision: Decision | None = None, progress=None, engine=None, stream=None) -> TableModel:
    """A table model from CSV/TSV files with a header (the first file's columns; the others'
    found by name), a chunk of rows at a time. Columns not typed by the options are typed by the
    first block of rows, and checked as the rest is read: when one turns out otherwise (text
    after numbers; numbers after a first block without values), the files are read again,
    typed by a first pass over them all (stdin and pipes are spooled to a temporary file for
    that, unless ``stream`` gives their copies: read.spooled). ``engine``: where the passes run
    (LocalTables, or a cluster's: nbtext.batch.cluster)."""
    table_sources(sources)
    stream = stream or spooled(sources)
    engine = engine or LocalTables(stream)
    header, blocks = open_table(sources[0], opts, stdin=stream(sources[0]))
    names = header.feature_names
    forced = set(opts.categorical) | set(opts.numeric)
    auto = [j for j, n in enumerate(names) if n not in forced] if settings.variant == "table" else []
    kinds = infer_kinds(header, iter([next(blocks, ([], []))]), opts, settings.variant)
    del blocks
    try:
        model = needs_retype(engine.one_pass(sources, opts, settings, header, kinds, auto, progress), auto)
    except Retype:
        kinds = engine.kinds(sources, opts, settings, header)
        model = engine.one_pass(sources, opts, settings, header, kinds, [], None)
    model.stats.check_trainable()
    model.stats.check_finite(model.numeric_columns)
    model.decision = decision or Decision(positive=default_positive(model.classes))
    return model


def needs_retype(model: TableModel, auto: list[int]) -> TableModel:
    """The model, or Retype when a column typed categorical by the first block (of ``auto``,
    typed by their values) holds only numbers."""
    from .read import is_number

    cat_of = [j for j, k in enumerate(model.kinds) if k == CATEGORICAL]
    for c, j in enumerate(cat_of):
        values = model.stats.values[c]
        if j in auto and values and all(map(is_number, values)):
            raise Retype()
    return model


class LocalTables:
    """Training's passes over the tables in this process (``stream``: stdin's spooled copy)."""

    def __init__(self, stream):
        self.stream = stream

    def kinds(self, sources, opts, settings, header) -> list[str]:
        """The columns typed by every row of the first table."""
        header, blocks = open_table(sources[0], opts, stdin=self.stream(sources[0]))
        return infer_kinds(header, blocks, opts, settings.variant)

    def one_pass(self, sources, opts, settings, header, kinds, auto, progress) -> TableModel:
        """Train on every source with these column types; Retype when a column of ``auto``
        (typed by the first block) holds a value that is not of its type."""
        names = header.feature_names
        label_name = header.names[header.label]
        model = TableModel.empty(settings, label_name, names, kinds)
        provisional = {j for j in auto if kinds[j] == NUMERIC}
        for path in sources:
            o = TableOptions(format=opts.format, label_column=label_name, chunk_rows=opts.chunk_rows)
            h, blocks = open_table(path, o, features=names, stdin=self.stream(path))
            for frame in frames(h, blocks, kinds, opts.chunk_rows, provisional=provisional):
                model.stats.add(frame)
                if progress:
                    progress(len(frame))
        return model
