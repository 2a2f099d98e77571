"""The table halves of the commands (nbtext.cli hands a command here when it is about a table:
nbtext.table.is_table_run for train and cv; every other command when its model's kind is
"table"). They take the command lines' records (nbtext.options), never click's arguments.
"""
from __future__ import annotations

import numpy as np

from .errors import NbtextError, SettingError, shown
from .table.model import TableModel, train_table
from .table.read import Frame, TableOptions, split_names, spooled


def table_options(sources, table) -> TableOptions:
    """How a table run (its nbtext.options.Sources and TableTraining) reads its tables."""
    fmt = sources.line.format
    return TableOptions(format=fmt if fmt in ("csv", "tsv") else None, label_column=sources.line.label_column,
                        columns=split_names(table.columns) or None,
                        categorical=split_names(table.categorical), numeric=split_names(table.numeric),
                        chunk_rows=table.chunk_rows or TableOptions.chunk_rows)


def table_settings(table):
    from .settings import TableSettings

    variant = table.variant
    return TableSettings(variant=variant if variant in ("categorical", "gaussian") else "table",
                         alpha=TableSettings.alpha if table.alpha is None else table.alpha,
                         covariance=table.covariance or TableSettings.covariance,
                         reg=TableSettings.reg if table.reg is None else table.reg)


def setting_pair(value: str | None) -> tuple | None:
    """cv's --unsure for a table run, as LOW,HIGH (a bad one names the setting)."""
    from .options import parse_pair

    if value is None:
        return None
    try:
        return parse_pair(value)
    except ValueError:
        raise SettingError("unsure", value, "must be two numbers LOW,HIGH") from None


def table_decision(run, classes: list[str]):
    """The decision of a table run (an nbtext.options.TableRun) over ``classes``."""
    from .nb.decision import Decision, default_positive

    if run.max_fpr is not None:
        raise SettingError("max_fpr", None, "is not available for table models (they are not calibrated)")
    decision = Decision(positive=default_positive(classes))
    run.overrides.apply(decision, classes)
    return decision


def engine_of(cluster, run):
    """train_table's engine: None (here), or the cluster's (--engine dask)."""
    if cluster is None:
        return None
    from .batch.cluster import ClusterTables

    return ClusterTables(cluster, list(run.sources.paths), table_options(run.sources, run.table).format)


def train(run, output: str, progress, say, cluster=None) -> None:
    """Train a table model on a table run (an nbtext.options.TableRun) and write it to
    ``output``; ``say`` takes the note on what was trained."""
    from . import store
    from .store.atomic import check_target

    sources = list(run.sources.paths)
    check_target(output, sources)
    model = train_table(sources, table_options(run.sources, run.table), table_settings(run.table),
                        progress=progress, engine=engine_of(cluster, run))
    model.decision = table_decision(run, model.classes)
    store.save(model, output)
    from .report import class_counts

    counts = class_counts(model.classes, model.class_count)
    kinds = f"{len(model.categorical_columns)} categorical, {len(model.numeric_columns)} numeric"
    say(f"nbtext: trained on {model.n_documents} rows ({counts}), {len(model.columns)} "
        f"columns ({kinds}); wrote {output}")


# -- scoring -------------------------------------------------------------------------------

def density_text(x: float) -> str:
    return f"{x:.6f}"


def predict(model: TableModel, source, output, out, cluster=None, model_path: str | None = None) -> None:
    """One row per row of the tables ``source`` (an nbtext.options.Inputs), in order: id (the
    row number; FILE:ROW with several inputs), label, probability (and log p(x) with
    ``output.density``: an nbtext.options.PredictOutput); written a chunk of rows at a time, the
    rows scored here or (``cluster``) on a Dask cluster's workers, which read ``model_path``."""
    from .report import header_row, prediction_row

    inputs, fmt, header, density = list(source.paths), output.fmt, output.header, output.density
    opts = TableOptions(format=source.format if source.format in ("csv", "tsv") else None)
    if cluster is not None:
        from .batch.cluster import table_scores_on_cluster

        scored = table_scores_on_cluster(cluster, inputs, model_path, opts)
    else:
        def scored(path):
            for frame in model.frames_of(path, opts, labelled=False):
                yield (frame.rows, *model.scores(frame))
    if header and header_row(fmt):
        out.write(header_row(fmt) + ({"tsv": "\tlog_density", "csv": ",log_density"}[fmt] if density else "") + "\n")
    classes = model.classes
    for path in inputs:
        for rows, proba, dens in scored(path):
            best, unsure = model.decide_array(proba)
            prob = proba[np.arange(len(best)), best].tolist()
            ids = [str(r) for r in rows.tolist()] if len(inputs) == 1 else [f"{path}:{r}" for r in rows.tolist()]
            labels = [classes[i] for i in best.tolist()]
            if fmt == "tsv" and len(inputs) == 1:
                if density:
                    lines = [f"{i}\t{lab}\t{p:.6f}\t{d:.6f}\n" for i, lab, p, d in zip(ids, labels, prob, dens.tolist())]
                else:
                    lines = [f"{i}\t{lab}\t{p:.6f}\n" for i, lab, p in zip(ids, labels, prob)]
            else:
                lines = []
                for n, (rid, lab, p) in enumerate(zip(ids, labels, prob)):
                    if fmt == "jsonl":
                        extra = {"unsure": True} if unsure[n] else {}
                        if density:
                            extra["log_density"] = round(float(dens[n]), 6)
                        line = prediction_row(fmt, rid, lab, p, classes, proba[n], extra)
                    else:
                        line = prediction_row(fmt, rid, lab, p)
                        if density:
                            line += ("\t" if fmt == "tsv" else ",") + density_text(dens[n])
                    lines.append(line + "\n")
            out.write("".join(lines))
            out.flush()


def labelled_frames(model: TableModel, sources):
    """(labels, posteriors, log densities) of labelled tables (an nbtext.options.Sources), the
    label column as given or, when a table has no such column, the model's."""
    fmt = sources.line.format
    opts = TableOptions(format=fmt if fmt in ("csv", "tsv") else None,
                        label_column=sources.line.label_column or model.label_column)
    y, probas, dens = [], [], []
    for path in sources.paths:
        for frame in model.frames_of(path, opts, labelled=True):
            p, d = model.scores(frame)
            y += frame.labels
            probas.append(p)
            dens.append(d)
    if not y:
        raise NbtextError("no rows found in the evaluation sources")
    return y, np.vstack(probas), np.concatenate(dens)


def evaluate(model: TableModel, sources) -> dict:
    """eval's figures on the rows of known classes; rows of a class the model never saw are
    novel, and how well log p(x) tells them from the rest is reported (ROC-AUC of -log p(x))."""
    from .nb.decision import decide
    from .report import evaluate as figures, roc_auc

    y, proba, dens = labelled_frames(model, sources)
    known = np.asarray([label in model.classes for label in y])
    if not known.any():
        raise NbtextError(f"no row has one of the model's classes ({', '.join(model.classes)})")
    yk = [label for label, k in zip(y, known) if k]
    pred = [decide(model.classes, model.decision, row)[0] for row in proba[known]]
    r = figures(model.classes, yk, pred, proba[known], model.decision.positive)
    r["documents"] = int(known.sum())
    r["density"] = {"mean_log_density": float(dens[known].mean()), "novel_rows": int((~known).sum())}
    if (~known).any():
        r["density"].update({
            "novel_classes": sorted(set(y) - set(model.classes)),
            "novel_mean_log_density": float(dens[~known].mean()),
            "novelty_roc_auc": roc_auc(~known, -dens),
        })
    return r


def format_density(d: dict) -> str:
    lines = ["", f"log p(x)      {d['mean_log_density']:.4f} mean over rows of known classes"]
    if d["novel_rows"]:
        lines += [f"novel rows    {d['novel_rows']} (classes not in the model: {', '.join(d['novel_classes'])}), "
                  f"mean log p(x) {d['novel_mean_log_density']:.4f}",
                  f"novelty       ROC-AUC {d['novelty_roc_auc']:.4f} of -log p(x) telling novel rows from known"]
    return "\n".join(lines)


def concat(frames: list[Frame]) -> Frame:
    return Frame([n for f in frames for n in f.lines], np.concatenate([f.rows for f in frames]),
                 [label for f in frames for label in f.labels], [sum((f.cat[j] for f in frames), [])
                                                                for j in range(len(frames[0].cat))],
                 np.vstack([f.num for f in frames]))


def subset(frame: Frame, idx: np.ndarray) -> Frame:
    return Frame([frame.lines[i] for i in idx], frame.rows[idx], [frame.labels[i] for i in idx],
                 [[col[i] for i in idx] for col in frame.cat], frame.num[idx])


def cross_validate(run, folds: int, seed: int, want_predictions: bool = False, cluster=None) -> tuple:
    """Eval figures of each of k stratified folds (the table read into memory: here, or by a
    ``cluster``'s workers), each scored by the statistics of the other folds. Returns the
    figures, each row's id and label, and (when wanted) each row's out-of-fold (label,
    probability of it, fold 1..k)."""
    from .nb.calibrate import check_folds, stratified_folds
    from .report import evaluate as figures

    sources = list(run.sources.paths)
    engine = engine_of(cluster, run)
    stream = spooled(sources)  # (read twice: a pipe read again was empty)
    asked = table_options(run.sources, run.table)
    model = train_table(sources, asked, table_settings(run.table), engine=engine, stream=stream)
    opts = TableOptions(format=asked.format, label_column=model.label_column, chunk_rows=asked.chunk_rows)
    read = engine.frames(opts, model) if engine is not None else \
        ((path, f) for path in sources for f in model.frames_of(path, opts, labelled=True, stdin=stream(path)))
    frames, ids = [], []
    for path, f in read:
        frames.append(f)
        ids += [str(r) if len(sources) == 1 else f"{path}:{r}" for r in f.rows]
    data = concat(frames)
    y = np.asarray(data.labels)
    check_folds(y, folds, "rows")
    assign = stratified_folds(y, folds, seed)
    predictions = [None] * len(y) if want_predictions else None
    results = []
    for f in range(folds):
        test = np.flatnonzero(assign == f)
        train_rows = np.flatnonzero(assign != f)
        m = TableModel.empty(model.settings, model.label_column, model.columns, model.kinds)
        m.stats.add(subset(data, train_rows))
        m.decision = table_decision(run, m.classes)
        t = subset(data, test)
        proba = m.proba(t)
        verdicts = [label for label, _ in m.decide_rows(proba)]
        results.append(figures(m.classes, t.labels, verdicts, proba, m.decision.positive))
        if predictions is not None:
            for i, label, row in zip(test, verdicts, proba):
                predictions[i] = (label, float(row[m.classes.index(label)]), f + 1)
    return results, ids, list(y), predictions


# -- info --------------------------------------------------------------------------------------

def describe(model: TableModel, header: dict) -> dict:
    s = model.stats
    cols = []
    cat_i = num_i = 0
    for name, kind in zip(model.columns, model.kinds):
        if kind == "categorical":
            cols.append({"name": name, "kind": kind, "values": list(s.values[cat_i])})
            cat_i += 1
        else:
            cols.append({"name": name, "kind": kind,
                         "mean": {c: float(s.mean[i, num_i]) for i, c in enumerate(model.classes)},
                         "variance": {c: float(s.m2[i, num_i] / s.n[i, num_i]) if s.n[i, num_i] else None
                                      for i, c in enumerate(model.classes)}})
            num_i += 1
    return {"format_version": header["format_version"], "created_by": header.get("created_by"), "kind": "table",
            "classes": {c: int(n) for c, n in zip(model.classes, model.class_count)},
            "rows": model.n_documents, "label_column": model.label_column, "columns": cols,
            "model": model.settings.to_dict(), "decision": model.decision.to_dict()}


def format_info(d: dict) -> str:
    lines = [f"model format   {d['format_version']} ({d['created_by']}), a table model",
             f"rows           {d['rows']}"]
    for c, n in d["classes"].items():
        lines.append(f"  {c:<12} {n} rows")
    lines.append(f"label column   {d['label_column']}")
    for col in d["columns"]:
        if col["kind"] == "categorical":
            lines.append(f"  {col['name']:<12} categorical: {len(col['values'])} values "
                         f"({', '.join(map(shown, col['values'][:10]))}{', ...' if len(col['values']) > 10 else ''})")
        else:
            means = ", ".join(f"{c} {m:.6g}" for c, m in col["mean"].items())
            lines.append(f"  {col['name']:<12} numeric: mean {means}")
    lines += ["model          " + ", ".join(f"{k}={v}" for k, v in d["model"].items()),
              "decision       " + ", ".join(f"{k}={v}" for k, v in d["decision"].items())]
    return "\n".join(lines)


def format_linear(view: dict) -> str:
    """The decision function as text: f(x) = b + w.x (+ x'Qx), f(x) >= 0: the positive class."""
    quad = view.get("quadratic")
    lines = [f"f(x) = b + w.x{' + x^T Q x' if quad else ''}; f(x) >= 0: {view['positive']}, else {view['negative']}",
             f"b\t{view['b']:.10g}"]
    for e in view.get("categorical", []):
        value = "(a value not seen in training)" if e["value"] is None else shown(e["value"])
        lines.append(f"w\t{e['column']}={value}\t{e['w']:.10g}")
    for e in view.get("numeric", []):
        lines.append(f"w\t{e['column']}\t{e['w']:.10g}")
    for e in view.get("tokens", []):
        lines.append(f"w\t{shown(e['token'])}\t{e['w']:.10g}")
    if quad:
        cols = view["Q"]["columns"]
        for i, row in enumerate(view["Q"]["matrix"]):
            for j, q in enumerate(row):
                if q != 0:
                    lines.append(f"Q\t{cols[i]}\t{cols[j]}\t{q:.10g}")
    return "\n".join(lines)


def text_linear(model) -> dict:
    """The linear view of a two-class text model (multinomial, Bernoulli, Complement NB):
    f(x) = b + sum_t w_t x_t over the variant's features of a document, >= 0: the positive class."""
    from .nb.decision import positive_of

    if len(model.classes) != 2:
        raise NbtextError(f"the linear view is for two classes; this model has {len(model.classes)}")
    lin = model.estimator.linear()
    pos = model.classes.index(positive_of(model.classes, model.decision.positive))
    neg = 1 - pos
    t, temp = model.decision.threshold, model.decision.temperature
    if t in (0.0, 1.0):
        raise NbtextError(f"a threshold of {t:g} calls every document one class: no decision function")
    b = lin.b
    w = lin.W[pos] - lin.W[neg]
    return {"positive": model.classes[pos], "negative": model.classes[neg], "quadratic": False,
            "b": float(b[pos] - b[neg] - temp * np.log(t / (1 - t))),
            "features": model.settings.variant,
            "tokens": [{"token": tok, "w": float(x)} for tok, x in zip(model.vocab.tokens, w)]}


# -- one row ------------------------------------------------------------------------------------

def parse_row(value: str) -> dict:
    """COLUMN=VALUE,COLUMN=VALUE,... (a CSV line of such pairs)."""
    import csv

    cells = {}
    try:
        pairs = next(csv.reader([value]), [])
    except csv.Error as e:
        raise NbtextError(f"--row: bad CSV ({e})") from None
    for pair in pairs:
        name, eq, v = pair.partition("=")
        if not eq or not name.strip():
            raise NbtextError(f"--row: expected COLUMN=VALUE, got {pair!r}")
        cells[name.strip()] = v
    return cells


def one_row(model: TableModel, row: str | None, data: bytes, where: str = "-") -> Frame:
    """The row to classify: --row's pairs, or a CSV line (of the file or stdin ``where``) of the
    model's columns in order (a header line before it names them instead)."""
    import csv

    if row is not None:
        return model.row_frame(parse_row(row))
    text = data.decode("utf-8", errors="replace")
    try:  # (a field past the csv module's limit, 128 KiB, raises csv.Error: a user error here)
        lines = [r for r in csv.reader(text.splitlines()) if r and any(c.strip() for c in r)]
    except csv.Error as e:
        raise NbtextError(f"{where}: bad CSV ({e})") from None
    if len(lines) == 2:
        header, values = [c.strip() for c in lines[0]], lines[1]
        if len(header) != len(values):
            raise NbtextError(f"expected {len(header)} values under the header, found {len(values)}")
        return model.row_frame({h: v for h, v in zip(header, values) if h != model.label_column})
    if len(lines) != 1:
        raise NbtextError(f"expected one CSV row of {', '.join(model.columns)} (or a header and one row), "
                          f"found {len(lines)} lines")
    if len(lines[0]) != len(model.columns):
        raise NbtextError(f"expected {len(model.columns)} values ({', '.join(model.columns)}), found {len(lines[0])}")
    return model.row_frame(dict(zip(model.columns, lines[0])))


def classify_row(table, ask, out) -> tuple:
    """`classify` with a table model (``table``: the model file's header and payload; ``ask``:
    an nbtext.options.Classify): one row, LABEL<TAB>PROBABILITY. Returns the model, the label
    and whether the row is unsure."""
    from .read import read_bytes
    from .store.tables import decode_table

    model = decode_table(table.header, table.payload, ask.model_path)
    ask.overrides.apply(model.decision, model.classes)
    frame = one_row(model, ask.row, b"" if ask.row is not None else read_bytes(ask.file, limit=1 << 20), ask.file)
    proba = model.proba(frame)[0]
    from .nb.decision import decide

    label, unsure_row = decide(model.classes, model.decision, proba)
    out.write(f"{label}\t{proba[model.classes.index(label)]:.6f}\n")
    out.flush()
    return model, label, unsure_row


def learn(model_path: str, inputs: list[str], label: str, forget: bool) -> int:
    """Add (or take out) the rows of tables under ``label``, under the model's lock."""
    from . import store
    from .store.fields import check_class_sums

    with store.locked(model_path):
        model = store.load(model_path)
        model.stats.check_labels([label])
        n = 0
        stats = model.stats
        before = (list(stats.classes), stats.class_count.tolist())
        for path in inputs:
            for frame in model.frames_of(path, TableOptions(), labelled=False):
                labels = [label] * len(frame)
                stats = stats.plus(frame, labels, -1.0) if forget else (stats.add(frame, labels) or stats)
                n += len(frame)
        if not forget:  # (a class's counts of a column are at most its rows: merge_tables)
            check_class_sums([before, ([label], [n])], f"{model_path}: with these rows learned", "rows")
        stats.check_finite(model.numeric_columns)
        model.stats = stats
        if n:
            store.save(model, model_path)
    return n


__all__ = ["train", "predict", "evaluate", "cross_validate", "describe", "format_info",
           "format_linear", "text_linear", "one_row", "learn"]
