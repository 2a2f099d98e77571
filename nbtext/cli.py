"""The command line: a thin edge that parses options, calls the library and prints.

Library exceptions become messages and exit codes at the process edge (nbtext.process), where
the click-free classify path (nbtext.quick) ends too. Option defaults are the settings records'
(nbtext.settings). Heavy imports (numpy, joblib; scipy only for cv) happen inside the commands
that need them, so `nbtext classify` stays fast.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable

import click

from . import __version__
from .errors import NbtextError
from .nb.decision import Decision
from .nb.weights import check_scorable
from .options import Classify, Engine, Inputs, Overrides, PredictOutput, Sources, TableRun, TableTraining
from .quick import CLASSIFY_OPTIONS, MODEL_OPTION, QUIET_OPTION, THRESHOLD_OPTION, UNSURE_OPTION
from .read import LineOptions
from .serve.options import ServeOptions
from .settings import (AUTO, COVARIANCES, CRITERIA, TABLE_VARIANTS, VARIANTS, DecisionOptions, FeatureOptions,
                       ModelSettings, TableSettings, TokenizerSettings)

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
SERVE = ServeOptions(model="", listeners=())  # (serve's defaults)


class Edge:
    """What the process edge needs to know from a command: the status of a user error."""

    def __init__(self):
        self.error_status = 1


WORKER_COMMANDS = ("train", "predict", "eval", "cv", "calibrate")  # the commands that may start workers


class Group(click.Group):
    """nbtext's commands, which end through the process edge (nbtext.process.finish), as the
    click-free classify path does: usage errors as click prints them (status 2), user errors
    as `nbtext: error: ...` naming flags, never a traceback."""

    def main(self, args=None, prog_name="nbtext", **extra):
        from .process import finish, interrupts_to_main_thread, terminate_cleanly

        terminate_cleanly()
        argv = sys.argv[1:] if args is None else list(args)
        if next((a for a in argv if not a.startswith("-")), None) in WORKER_COMMANDS:
            interrupts_to_main_thread()  # (they import numpy anyway; classify must not)
        edge = Edge()
        extra.pop("standalone_mode", None)

        def body():
            try:
                rv = super(Group, self).main(args=args, prog_name=prog_name, standalone_mode=False,
                                             obj=edge, **extra)
            except click.exceptions.Abort as e:  # (click's word for Ctrl-C, or our SIGTERM)
                raise (e.__cause__ if isinstance(e.__cause__, KeyboardInterrupt) else KeyboardInterrupt()) from None
            except Interrupted as e:
                raise e.interrupt from None
            except click.ClickException as e:
                e.show()
                return e.exit_code
            return rv if isinstance(rv, int) else 0

        sys.exit(finish(body, lambda: edge.error_status))

    def invoke(self, ctx):
        from .process import ReaderLeft

        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise ReaderLeft() from None
        except KeyboardInterrupt as e:  # (past click, which would end a line of its own: the edge ends it)
            raise Interrupted(e) from None


class Interrupted(Exception):
    """A Ctrl-C or SIGTERM (``interrupt``) carried past click to the process edge, as ReaderLeft is."""

    def __init__(self, interrupt: KeyboardInterrupt):
        self.interrupt = interrupt


@click.group(cls=Group, context_settings=CONTEXT)
@click.version_option(__version__, prog_name="nbtext")
def cli():
    """Naive Bayes text and spam classifier.

    \b
    Quick start:
      nbtext train corpus/ -o spam.nbm          # corpus/spam/..., corpus/ham/...
      nbtext classify -m spam.nbm < message.eml
      nbtext predict -m spam.nbm ~/Maildir/new
      nbtext eval -m spam.nbm testset/
    """


# -- shared options ---------------------------------------------------------------------

def option_of(flags: tuple, dest: str, kind: str, help: str):
    """A click option from a row of nbtext.quick's option tables."""
    if dest == "model_path":
        return click.option(*flags, dest, envvar="NBTEXT_MODEL", required=True, metavar="MODEL", help=help)
    if kind == "flag":
        return click.option(*flags, dest, is_flag=True, help=help)
    if kind == "count":
        return click.option(*flags, dest, type=click.IntRange(min=1), default=None, metavar="N", help=help)
    types = {"str": str, "float": float, "pair": str}
    return click.option(*flags, dest, type=types[kind], default=None,
                        metavar="LOW,HIGH" if kind == "pair" else None, help=help)


def model_option(f):
    return option_of(*MODEL_OPTION)(f)


def quiet_option(f):
    return option_of(*QUIET_OPTION)(f)


def jobs_option(f):
    return click.option("-j", "--jobs", type=click.IntRange(min=1, max=64), default=None,
                        help="Worker processes (default: all cores, when the input is large).")(f)


def engine_options(f):
    f = click.option("--scheduler", default=None, metavar="ADDRESS",
                     help="With --engine dask: the Dask scheduler (tcp://HOST:8786; default: a "
                          "LocalCluster on this machine's cores).")(f)
    return click.option("--engine", type=click.Choice(["local", "dask"]), default="local", show_default=True,
                        help="Where documents are counted: here, or on a Dask cluster (docs/cluster.md; "
                             "pip install 'nbtext[dask]').")(f)


def engine_of(kw: dict) -> Engine:
    """The engine a command's -j, --engine and --scheduler ask for."""
    return Engine(kw.get("engine") or Engine.name, kw.get("scheduler"), kw.get("jobs"), kw.get("max_memory"))


class SizeParam(click.ParamType):
    name = "size"

    def convert(self, value, param, ctx):
        from .options import parse_size

        try:
            return value if isinstance(value, int) else parse_size(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


def memory_option(f):
    return click.option("--max-memory", "max_memory", type=SizeParam(), default=None, metavar="SIZE",
                        help="Peak memory train keeps to (2G, 500M; default 1G): past their share of it, the "
                             "rarest tokens are dropped from the vocabulary and counts and `info` says so.")(f)


def dask_cluster(engine: Engine, quiet: bool, inputs: list[str]):
    """The Dask cluster --engine dask asks for (None for local), which the command closes;
    ``inputs`` are checked first (standard input is refused before a cluster starts)."""
    if engine.name != "dask":
        if engine.scheduler:
            raise click.UsageError("--scheduler needs --engine dask")
        return None
    from .batch.cluster import Cluster, check_reachable, say

    for path in inputs:
        check_reachable(path)

    return Cluster(engine.scheduler, say=None if quiet else say)


def cluster_parts(cluster, sources: Sources, unread):
    """train's and cv's labelled inputs, cut into the cluster's parts, lines numbered."""
    from .batch.cluster import labelled_parts, number_lines

    parts = labelled_parts(*read_labelled_args(sources), on_error=unread, workers=cluster.workers())
    number_lines(cluster, parts)
    return parts


def line_options(f, flag="--format"):
    for opt in reversed([
        click.option(flag, "line_format", type=click.Choice(["tsv", "csv", "jsonl", "fasttext"]),
                     default=None, help="Format of line files (default: by extension, else sniffed)."),
        click.option("--label-column", default=LineOptions.label_column, show_default=True,
                     help="CSV column / JSONL field holding the label (name or 1-based number)."),
        click.option("--text-column", default=LineOptions.text_column, show_default=True,
                     help="CSV column / JSONL field holding the text (name or 1-based number)."),
    ]):
        f = opt(f)
    return f


def labelled_sources(f, format_flag="--format"):
    f = click.option("-l", "--label", "label_paths", type=(str, click.Path()), multiple=True,
                     metavar="LABEL PATH",
                     help="Every document in PATH (file, mbox, Maildir, folder, - for one "
                          "message on stdin) has LABEL. Repeatable.")(f)
    return click.argument("sources", nargs=-1, type=click.Path())(line_options(f, format_flag))


INPUT_FORMAT = "--input-format"  # (line files' format in eval and cv, whose --format names their output)


def labelled_sources_for_eval(f):
    """As labelled_sources; --format names the output there, so line files use INPUT_FORMAT."""
    return labelled_sources(f, INPUT_FORMAT)


def training_options(f):
    for opt in reversed([
        click.option("--variant", type=click.Choice((AUTO,) + VARIANTS + TABLE_VARIANTS),
                     default=ModelSettings.variant, show_default=True,
                     help="Naive Bayes event model; auto chooses multinomial or complement on internal "
                          "folds; for tables: table (each column categorical or numeric by its values), "
                          "categorical or gaussian."),
        click.option("--alpha", type=float, default=None,
                     help=f"Lidstone smoothing (1 = Laplace; default {ModelSettings.alpha:g} for text, "
                          f"{TableSettings.alpha:g} for tables)."),
        click.option("--columns", default=None, metavar="COL,...", help="Tables: the feature columns "
                     "(default: every column but the label)."),
        click.option("--categorical", default=None, metavar="COL,...",
                     help="Tables: these columns are categorical."),
        click.option("--numeric", default=None, metavar="COL,...", help="Tables: these columns are numeric."),
        click.option("--covariance", type=click.Choice(COVARIANCES), default=None,
                     help="Tables, numeric columns: diagonal (Gaussian NB, the default), shared "
                          "(linear boundary, as LDA) or full (per class, quadratic, as QDA)."),
        click.option("--reg", type=float, default=None,
                     help="Tables, shared/full covariance: (1-reg) covariance + reg identity (default 0)."),
        click.option("--chunk-rows", type=click.IntRange(min=1), default=None, hidden=True,
                     help="Tables: rows read at a time."),
        click.option("--tf", is_flag=True, help="Complement NB: log term frequency, log(1 + n)."),
        click.option("--idf", is_flag=True, help="Complement NB: inverse document frequency weights."),
        click.option("--length-norm", is_flag=True, help="Complement NB: unit-length documents."),
        click.option("--norm/--no-norm", default=ModelSettings.norm,
                     help="Complement NB: weight normalization."),
        click.option("--email", "mode", flag_value="email", help="Read every document as mail."),
        click.option("--text", "mode", flag_value="text", help="Read every document as plain text."),
        click.option("--auto", "mode", flag_value="auto", default=TokenizerSettings.mode == "auto",
                     help="Mail-aware when a document looks like mail (default)."),
        click.option("--ngrams", type=int, default=TokenizerSettings.ngram_max, show_default=True,
                     help="Word n-grams from 1 to N."),
        click.option("--char-ngrams", default=f"{TokenizerSettings.char_ngram_min},{TokenizerSettings.char_ngram_max}",
                     show_default=True, metavar="MIN,MAX",
                     help="Character n-grams inside words of plain-text documents (0,0: none)."),
        click.option("--mail-char-ngrams", is_flag=True,
                     help="Character n-grams for mail bodies too."),
        click.option("--max-word-length", type=int, default=TokenizerSettings.max_word_length, show_default=True,
                     help="Longer words become one summary token."),
        click.option("--min-df", type=int, default=FeatureOptions.min_df, show_default=True,
                     help="Drop tokens found in fewer documents."),
        click.option("--max-df", type=float, default=FeatureOptions.max_df, show_default=True,
                     help="Drop tokens found in more than this fraction of documents."),
        click.option("--max-features", type=int, default=FeatureOptions.max_features,
                     help="Keep only the N best tokens by --select (default: the most frequent)."),
        click.option("--select", type=click.Choice(CRITERIA), default=FeatureOptions.select,
                     show_default=True, help="How --max-features ranks tokens: total count, "
                     "chi-squared (scikit-learn's, on counts) or mutual information with the class."),
        click.option("--mail-rules-off", default="", hidden=True, metavar="RULE,...",
                     help="Turn mail tokenizer rules off (for measuring them: scripts/mail_ablation.py)."),
    ]):
        f = opt(f)
    return f


def decision_options(f):
    for opt in reversed([
        click.option("--calibrate/--no-calibrate", default=DecisionOptions.calibrate, show_default=True,
                     help="Fit the calibration map on internal folds so probabilities mean what they say."),
        click.option("--layer/--no-layer", default=DecisionOptions.layer, show_default=True,
                     help="With --calibrate: add the decision layer, an SVM on NB-weighted features fitted "
                          "on the calibration sample (docs/defaults.md)."),
        click.option("--positive", default=None, help="The positive class (default: spam, if present)."),
        click.option("--threshold", type=float, default=None,
                     help=f"Two classes: positive when P(positive) >= this (default {Decision.threshold})."),
        click.option("--unsure", default=None, metavar="LOW,HIGH",
                     help="Two classes: P(positive) in [LOW, HIGH) is unsure."),
        click.option("--max-fpr", type=float, default=None, metavar="RATE",
                     help="Choose the threshold by internal folds so that at most RATE of the "
                          "negative class (ham) is called positive."),
    ]):
        f = opt(f)
    return f


def build_decisions(kw: dict) -> DecisionOptions:
    return DecisionOptions(calibrate=kw["calibrate"], layer=kw["layer"], threshold=kw["threshold"],
                           unsure=parse_pair(kw["unsure"], "--unsure", float),
                           max_fpr=kw["max_fpr"], positive=kw["positive"])


def override_options(f):
    """--threshold/--unsure at scoring time, over what the model stores (as classify's)."""
    return option_of(*THRESHOLD_OPTION)(option_of(*UNSURE_OPTION)(f))


def overrides_of(kw: dict) -> Overrides:
    """The decision --positive, --threshold and --unsure ask for."""
    return Overrides(kw.get("positive"), kw["threshold"], parse_pair(kw["unsure"], "--unsure", float))


def parse_pair(value: str | None, name: str, cast=int) -> tuple | None:
    from .options import parse_pair as pair

    if value is None:
        return None
    try:
        return pair(value, cast)
    except ValueError:
        raise click.BadParameter(f"expected two numbers like 1,4, got {value!r}",
                                 param_hint=name) from None


def build_settings(kw: dict):
    chars = parse_pair(kw["char_ngrams"], "--char-ngrams") or (0, 0)
    tok = TokenizerSettings(mode=kw["mode"] or TokenizerSettings.mode, ngram_max=kw["ngrams"],
                            char_ngram_min=chars[0], char_ngram_max=chars[1],
                            mail_char_ngrams=kw["mail_char_ngrams"],
                            max_word_length=kw["max_word_length"],
                            mail_rules_off=frozenset(filter(None, kw["mail_rules_off"].split(","))))
    model = ModelSettings(variant=kw["variant"], alpha=ModelSettings.alpha if kw["alpha"] is None else kw["alpha"],
                          norm=kw["norm"], tf=kw["tf"],
                          idf=kw["idf"], length_norm=kw["length_norm"])
    feats = FeatureOptions(min_df=kw["min_df"], max_df=kw["max_df"], max_features=kw["max_features"],
                           select=kw["select"])
    return tok, model, feats


def sources_of(kw: dict) -> Sources:
    """A command's SOURCEs, --label pairs and line-file options."""
    return Sources(tuple(kw["sources"]), tuple(tuple(p) for p in kw["label_paths"]),
                   LineOptions(kw["line_format"], kw["label_column"], kw["text_column"]))


def table_training(kw: dict) -> TableTraining:
    return TableTraining(kw["variant"], kw["alpha"], kw["columns"], kw["categorical"], kw["numeric"],
                         kw["covariance"], kw["reg"], kw["chunk_rows"])


class Unread:
    """Inputs that could not be read: each reported as `nbtext: error: ...` while the batch goes
    on; check() then fails the command, status 1 (before it writes anything). ``format_flag``:
    the command's option for line files' format, which a file of no format it can tell names."""

    def __init__(self, format_flag: str = "--format"):
        self.count, self.format_flag = 0, format_flag

    def __call__(self, error: NbtextError) -> None:
        from .process import error_line
        from .read.lines import UnknownFormat

        error_line(error.worded(self.format_flag) if isinstance(error, UnknownFormat) else str(error))
        self.count += 1

    def check(self) -> None:
        from .process import Reported

        if self.count:
            raise Reported()

    @contextlib.contextmanager
    def explaining(self):
        """Reading inside: where it found no document while inputs could not be read (a folder
        of no label directories, /dev/null or an empty stdin of no known format), their lines
        already say why, and "no documents found" would be a second line for one mistake."""
        from .errors import NoDocuments

        try:
            yield
        except NoDocuments:
            self.check()
            raise


def read_labelled(sources: Sources, unread: Unread | None = None):
    from .read import labelled_documents

    return labelled_documents(*read_labelled_args(sources), on_error=unread, deferred=True)


def read_labelled_args(sources: Sources) -> tuple:
    """(sources, --label pairs, line options) of a command's labelled inputs."""
    from .read import check_distinct, check_openable

    if not sources.paths and not sources.labelled:
        raise click.UsageError("give at least one SOURCE or --label LABEL PATH")
    check_distinct(sources.all)
    check_openable(sources.all)
    return list(sources.paths), list(sources.labelled), sources.line


def n_jobs(engine: Engine) -> int:
    from .batch.chunks import default_jobs

    return engine.jobs or default_jobs()


class Progress:
    """Long work's progress on stderr, one line rewritten in place, only when stderr is a
    terminal and not --quiet; with ``rows_on_stdout`` (a command that writes rows as it goes),
    only when they go elsewhere than that terminal (process.progress_shown).

    Called with a number (that many more documents: "training: N documents"), or with a
    nbtext.progress.Step (train's and calibrate's phases): each phase its own line, redrawn at
    most every REDRAW seconds while counting, and ended with a newline and its time when the next phase
    begins or at done(). ``total`` gives the bytes the inputs hold (None: not known, as for
    stdin); it is only asked for a terminal (a walk of the inputs' sizes)."""

    REDRAW = 0.1

    def __init__(self, what: str, quiet: bool, total: Callable[[], int | None] | None = None,
                 rows_on_stdout: bool = False):
        from .process import progress_shown

        self.on = not quiet and progress_shown(rows_on_stdout)
        self.what, self.n = what, 0
        self.total = total() if self.on and total else None
        self.step, self.began, self.drawn, self.width = None, 0.0, 0.0, 0

    def __call__(self, k):
        if isinstance(k, int):
            self.n += k
            if self.on:
                self.draw(f"{self.what}: {self.n:,} documents")
            return
        if not self.on:
            return
        from .progress import COUNTING

        now = time.monotonic()
        if self.step is None or k.phase != self.step.phase:
            self.end()
            self.began = now
        elif k.phase == COUNTING and now - self.drawn < self.REDRAW:  # (chunks come by the thousand; folds are few)
            self.step = k
            return
        self.step, self.drawn = k, now
        self.draw(self.line(k, now - self.began))

    def line(self, step, took: float, ended: bool = False) -> str:
        from .progress import COUNTING, FOLDS

        if step.phase == COUNTING:
            text = f"counting: {step.documents:,} documents, {step.done / MIB:,.1f} MiB"
            rate = step.done / MIB / took if took > 0 else 0.0
            if ended:
                return f"{text} in {took:.1f} s ({rate:,.1f} MiB/s)"
            if self.total:
                text += f" of {self.total / MIB:,.1f} MiB ({min(step.done / self.total, 1):.0%})"
            text += f", {rate:,.1f} MiB/s" if took >= 1 else ""
            if self.total and took >= 1 and 0 < step.done < self.total:
                left = int((self.total - step.done) / (step.done / took))
                text += f", ETA {left // 60}:{left % 60:02d}"
            return text
        if step.phase in FOLDS:
            if ended:
                return f"{step.phase}: {step.total} internal folds in {took:.1f} s"
            return f"{step.phase}: fold {step.done} of {step.total}" if step.done else \
                f"{step.phase}: {step.total} internal folds"
        return f"{step.phase}: {step.done}" + (f" of {step.total}" if step.total else "")

    def draw(self, text: str) -> None:
        from .process import Stderr

        click.echo("\r" + text + " " * max(0, self.width - len(text)), err=True, nl=False)
        self.width, Stderr.mid_line = len(text), True

    def newline(self) -> None:
        from .process import line_start

        click.echo(line_start(), err=True, nl=False)

    def end(self) -> None:
        """The current line ended: a phase's drawn once more with its time; then a newline."""
        if self.on and self.step is not None:
            self.draw(self.line(self.step, time.monotonic() - self.began, ended=True))
        if self.on and (self.step is not None or self.n):
            self.newline()
        self.step, self.width, self.n = None, 0, 0

    @contextlib.contextmanager
    def saving(self, path: str):
        """A "saving" line while the model is written, ended with its size and time once it is
        written (a save that fails leaves the line as it is, for the error to end)."""
        self.done()
        began = time.monotonic()
        if self.on:
            self.draw(f"saving: {path}")
        yield
        if self.on:
            size = os.path.getsize(path) if os.path.isfile(path) else 0
            self.draw(f"saving: {path}, {size / MIB:,.1f} MiB in {time.monotonic() - began:.1f} s")
            self.newline()
            self.width = 0

    def done(self):
        self.end()


MIB = 1 << 20


def check_classes(classes: list[str], d: DecisionOptions) -> None:
    """Refuse before reading what training or calibrating would refuse once it knew the classes:
    fewer than two, a --positive not among them, a --threshold, --unsure or --max-fpr without
    two classes and a positive one (the checks themselves: Counts and Decision.choose)."""
    from .nb.counts import need_two_classes
    from .nb.decision import default_positive

    need_two_classes(classes)
    Decision(positive=default_positive(classes)).choose(classes, d.positive, d.threshold, d.unsure, d.max_fpr)


def answer(text: str) -> None:
    """A command's result on stdout (an error when stdout is closed: nbtext.process.stdout)."""
    from .process import stdout

    stdout().write(text + "\n")


def info_line(quiet: bool, msg: str):
    from .process import line_start

    if not quiet and sys.stderr is not None:
        click.echo(line_start() + msg, err=True)


# -- commands ---------------------------------------------------------------------------

@cli.command(context_settings=CONTEXT)
@labelled_sources
@training_options
@decision_options
@click.option("-o", "--output", "output", required=True, metavar="MODEL", help="Model file to write.")
@jobs_option
@engine_options
@memory_option
@quiet_option
def train(**kw):
    """Learn a model from labelled documents and write it to MODEL.

    SOURCE is a directory whose subdirectories are the labels (corpus/spam, corpus/ham), or a
    line file: TSV (label<TAB>text), CSV, JSONL ({"label": ..., "text": ...}) or fastText
    (__label__spam text); - reads a line file from stdin. A CSV/TSV table of categorical and
    numeric columns (no text column, or --variant table|categorical|gaussian) makes a table model.

    \b
    Examples:
      nbtext train corpus/ -o spam.nbm
      nbtext train --label spam junk.mbox --label ham ~/Maildir -o spam.nbm
      nbtext train reviews.tsv --ngrams 2 -o reviews.nbm
      nbtext train golf.csv --label-column Play -o golf.nbm
    """
    from . import store
    from .batch.train import train_model
    from .batch.memory import map_large_arrays
    from .read import labelled_classes, labelled_size
    from .store.atomic import check_target
    from .table import is_table_run

    sources, engine, quiet, output = sources_of(kw), engine_of(kw), kw["quiet"], kw["output"]
    table = table_training(kw)
    if is_table_run(sources, table.asked):
        from . import tablecli

        progress = Progress("training", quiet)
        cluster = dask_cluster(engine, quiet, sources.table_paths)
        with cluster or contextlib.nullcontext():
            run = TableRun(sources, table, overrides_of(kw), kw["max_fpr"])
            tablecli.train(run, output, progress, lambda msg: info_line(quiet, msg), cluster)
        progress.done()
        return
    tok, settings, feats = build_settings(kw)
    decisions = build_decisions(kw)
    check_target(output, sources.all)
    classes = labelled_classes(*read_labelled_args(sources)[:2])
    if classes is not None:  # (label directories and --label paths: their classes known before reading)
        check_classes(classes, decisions)
    map_large_arrays()
    progress = Progress("training", quiet, lambda: labelled_size(*read_labelled_args(sources)[:2]))
    unread = Unread()
    cluster = dask_cluster(engine, quiet, sources.all)
    if cluster is not None:
        from .batch.cluster import train_on_cluster

        with cluster, unread.explaining():
            model, fit = train_on_cluster(cluster, cluster_parts(cluster, sources, unread), tok, settings, feats,
                                          decisions, progress=progress, on_error=unread, max_memory=engine.max_memory,
                                          sources=sources.all)
    else:
        with unread.explaining():
            model, fit = train_model(read_labelled(sources, unread), tok, settings, feats, decisions,
                                     n_jobs=n_jobs(engine), progress=progress, max_memory=engine.max_memory,
                                     sources=sources.all)
    progress.done()
    unread.check()
    with progress.saving(output):
        store.save(model, output)
    report_threshold(quiet, fit, decisions, model)
    from .report import class_counts

    counts = class_counts(model.classes, model.class_count)
    info_line(quiet, f"nbtext: trained on {model.n_documents} documents ({counts}), "
                     f"{len(model.vocab)} tokens; wrote {output}")


def output_options(f):
    for opt in reversed([
        click.option("--format", "fmt", type=click.Choice(["tsv", "jsonl", "csv"]), default="tsv",
                     show_default=True,
                     help="Output rows (jsonl: also each class's probability and unrounded log probability)."),
        click.option("--header", is_flag=True, help="Print a header row (TSV, CSV)."),
    ]):
        f = opt(f)
    return f


@cli.command(context_settings=CONTEXT)
@model_option
@click.argument("inputs", nargs=-1, type=click.Path())
@output_options
@click.option("--lines", is_flag=True, help="Every line of each input is a document (id FILE:LINE).")
@click.option("--input-format", type=click.Choice(["lines", "jsonl", "tsv", "csv", "fasttext"]),
              default=None, help="Read inputs as line files of this format (jsonl: its text field).")
@click.option("--text-column", default=LineOptions.text_column, show_default=True, help="JSONL/CSV text field.")
@click.option("--explain", type=click.IntRange(min=1), default=None, metavar="N",
              help="With --format jsonl: the N tokens that pushed hardest for and against each label.")
@click.option("--density", is_flag=True, help="Table models: add log p(x), the row's log-density under "
              "the model (low: unlike anything seen in training).")
@click.option("--spamicity", is_flag=True, help="Two classes: add P(positive) (bogofilter's spamicity) and "
              "the verdict (the label, or unsure) as columns (JSONL: \"spamicity\").")
@override_options
@jobs_option
@engine_options
@quiet_option
def predict(model_path, inputs, quiet, **kw):
    """Score documents: one row per document, in input order, as it goes.

    INPUT is a file, a directory (walked recursively), an mbox, a Maildir, or - for one
    document on stdin (default). Rows are id<TAB>label<TAB>probability.

    \b
    Examples:
      nbtext predict -m spam.nbm ~/Maildir/new
      cat lines.txt | nbtext predict -m lang.nbm --lines - --format jsonl
      nbtext predict -m golf.nbm days.csv --density   # a table model: one row per table row
    """
    from . import store
    from .batch.chunks import CHUNK
    from .batch.score import log_scored_batches
    from .process import stdout
    from .read import input_documents
    from .report import header_row

    source = Inputs(tuple(inputs) or ("-",), kw["lines"], kw["input_format"],
                    LineOptions(text_column=kw["text_column"]))
    output = PredictOutput(kw["fmt"], kw["header"], kw["explain"], kw["density"], kw["spamicity"])
    engine = engine_of(kw)

    if output.explain and output.fmt != "jsonl":
        raise click.UsageError("--explain needs --format jsonl")
    model = store.load(model_path)
    overrides_of(kw).apply(model.decision, model.classes)
    if model.kind == "table":
        from . import tablecli

        if output.explain or source.lines or output.spamicity:
            raise click.UsageError("--explain, --lines and --spamicity are for text models; a table model "
                                   "scores table rows")
        cluster = dask_cluster(engine, quiet, list(source.paths))
        with cluster or contextlib.nullcontext():
            return tablecli.predict(model, source, output, stdout(), cluster, model_path)
    if output.density:
        raise click.UsageError("--density needs a table model")
    check_scorable(model.class_count, model_path)
    if not source.line_files:
        from .read import line_files_named

        for path, named in line_files_named(list(source.paths)):
            info_line(quiet, f"nbtext: note: {path} is scored as one document; to score each of its lines, "
                             f"give --input-format {named} (its text field) or --lines (each whole line)")
    from .quick import positive_index

    pos = positive_index(model.classes, model.decision.positive, model_path if output.spamicity else None)
    more = ("spamicity", "verdict") if output.spamicity else ()
    unread = Unread()
    streaming = source.line_files and "-" in source.paths  # a pipe: answer per line
    out = stdout()
    progress = Progress("predicting", quiet, rows_on_stdout=True)
    cluster = dask_cluster(engine, quiet, list(source.paths))
    with cluster or contextlib.nullcontext():
        if cluster is not None:
            from .batch.cluster import input_parts, number_lines, scored_on_cluster

            parts = input_parts(list(source.paths), source.lines, source.format, source.line, on_error=unread,
                                workers=cluster.workers())
            number_lines(cluster, parts)
            scored = scored_on_cluster(cluster, parts, model_path, bool(output.explain), on_error=unread)
        else:
            docs = input_documents(list(source.paths), source.lines, source.format, source.line, on_error=unread)
            scored = (([d.id for d in chunk], batch, proba, log_proba) for chunk, batch, proba, log_proba in
                      log_scored_batches(model, docs, n_jobs=1 if streaming else n_jobs(engine),
                                         chunk_size=1 if streaming else CHUNK, batches=bool(output.explain)))
        if output.header and header_row(output.fmt):
            answer(header_row(output.fmt, more))
        # (closed here when the reader leaves (`| head`): a cluster's generator cancels its work
        # while the cluster is open; collected later, it found it closed and printed a traceback)
        with contextlib.closing(scored):
            for ids, batch, proba, log_proba in scored:
                write_predictions(out, model, output, ids, batch, proba, log_proba, pos if output.spamicity else None)
                progress(len(ids))
    progress.done()
    unread.check()


def write_predictions(out, model, output: PredictOutput, ids: list, batch, proba, log_proba,
                      spamicity: int | None = None) -> None:
    """predict's rows of a chunk of documents (``spamicity``: the positive class's index, whose
    probability and the verdict, the label or unsure, follow the row's three columns)."""
    from .explain import explain_rows
    from .report import fmt_prob, printed, prediction_row

    decided = model.decide_rows(proba)
    why = (explain_rows(model, batch, proba, [label for label, _ in decided], output.explain)
           if output.explain else None)
    classes = model.classes
    for i, (doc_id, (label, unsure_row), row, logs) in enumerate(zip(ids, decided, proba.tolist(), log_proba)):
        p = row[classes.index(label)]
        extra = {"unsure": True} if unsure_row else {}
        if why:
            extra["explain"] = rounded(why[i])
        more = ()
        if spamicity is not None:
            extra["spamicity"] = printed(row[spamicity])
            more = (fmt_prob(row[spamicity]), "unsure" if unsure_row else label)
        out.write(prediction_row(output.fmt, doc_id, label, p, model.classes, row, extra, log_scores=logs, more=more)
                  + "\n")
    out.flush()


def rounded(e: dict) -> dict:
    """An explanation as predict's JSONL rows hold it (its prior null where infinite: json_number)."""
    from .report import json_number

    r = lambda v: round(v, 4)
    return {"prior": json_number(r(e["prior"])), "unknown_tokens": e["unknown_tokens"],
            "for": [[t, r(v)] for t, v in e["for"]], "against": [[t, r(v)] for t, v in e["against"]]}


def classify_options(f):
    for row in reversed(CLASSIFY_OPTIONS):
        f = option_of(*row)(f)
    return f


@cli.command(context_settings=CONTEXT)
@classify_options
@click.argument("file", default="-", type=click.Path(allow_dash=True))
@click.pass_context
def classify(ctx, unsure, **kw):
    """Classify one document (default: stdin) and print LABEL<TAB>PROBABILITY.

    \b
    Examples:
      nbtext classify -m spam.nbm < message.eml
      nbtext classify -m spam.nbm --exit-code message.eml; echo $?
      nbtext classify -m golf.nbm --row Outlook=Sunny,Temp=Hot,Humidity=High,Windy=false
    """
    from .quick import run_classify

    ask = Classify.of({**kw, "unsure": parse_pair(unsure, "--unsure", float)})
    if ask.exit_code:
        ctx.find_object(Edge).error_status = 3
    ctx.exit(run_classify(ask))


@cli.command(name="eval", context_settings=CONTEXT)
@model_option
@labelled_sources_for_eval
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@override_options
@jobs_option
@quiet_option
def eval_cmd(model_path, fmt, quiet, **kw):
    """Score a model on labelled documents (same sources as train).

    Prints accuracy, per-class precision/recall/F1/support, macro-F1, the confusion matrix,
    log-loss, Brier score, calibration error, and for two classes ROC-AUC and the
    false-positive and false-negative rates.

    \b
    Example:
      nbtext eval -m spam.nbm testset/ --format json
    """
    import json

    from . import store
    from .batch.score import evaluate_documents
    from .report import format_eval

    sources = sources_of(kw)
    model = store.load(model_path)
    overrides_of(kw).apply(model.decision, model.classes)
    if model.kind == "table":
        from . import tablecli

        if not sources.paths or sources.labelled:
            raise click.UsageError("a table model is evaluated on tables: give them as SOURCE")
        result = tablecli.evaluate(model, sources)
        answer(json.dumps(result, indent=2) if fmt == "json" else
               format_eval(result) + tablecli.format_density(result["density"]))
        return
    check_scorable(model.class_count, model_path)
    progress = Progress("evaluating", quiet)
    unread = Unread(INPUT_FORMAT)
    with unread.explaining():
        result = evaluate_documents(model, read_labelled(sources, unread), n_jobs=n_jobs(engine_of(kw)),
                                    progress=progress, sources=sources.all)
    progress.done()
    unread.check()
    answer(json.dumps(result, indent=2) if fmt == "json" else format_eval(result))


@cli.command(context_settings=CONTEXT)
@labelled_sources_for_eval
@training_options
@decision_options
@click.option("-k", "--folds", type=click.IntRange(min=2), default=5, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the fold shuffle.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--predictions", "predictions_path", type=click.Path(dir_okay=False), default=None,
              metavar="FILE", help="Also write each document's out-of-fold prediction to FILE: "
              "id<TAB>label<TAB>probability<TAB>true label<TAB>fold (1..K), in input order.")
@jobs_option
@engine_options
@quiet_option
def cv(folds, seed, fmt, predictions_path, quiet, **kw):
    """Stratified k-fold cross-validation with train's options.

    Prints eval's figures as mean ± standard deviation over the folds, per-class figures, and
    the confusion matrix summed over folds. Sources are as for train (line files' format is
    --input-format here, since --format chooses the output). --predictions writes what every
    document was called by the model that did not see it, to find the mistakes.

    \b
    Examples:
      nbtext cv corpus/ --folds 5
      nbtext cv lang.tsv --char-ngrams 1,4 --format json
      nbtext cv corpus/ --predictions cv.tsv && awk -F'\\t' '$2 != $4' cv.tsv
    """
    import json

    from .batch.train import count_corpus, cross_validate
    from .report import aggregate, format_cv

    sources, engine = sources_of(kw), engine_of(kw)
    if predictions_path is not None:
        from .store.atomic import check_target

        check_target(predictions_path, sources.all)
    from .table import is_table_run

    table = table_training(kw)
    if is_table_run(sources, table.asked):
        from . import tablecli

        cluster = dask_cluster(engine, quiet, sources.table_paths)
        with cluster or contextlib.nullcontext():
            asked = Overrides(kw["positive"], kw["threshold"], tablecli.setting_pair(kw["unsure"]))
            run = TableRun(sources, table, asked, kw["max_fpr"])
            results, ids, y, predictions = tablecli.cross_validate(run, folds, seed, predictions_path is not None,
                                                                   cluster)
        if predictions_path is not None:
            write_cv_predictions(predictions_path, ids, y, predictions)
        r = aggregate(results, seed)
        answer(json.dumps(r, indent=2) if fmt == "json" else format_cv(r).replace("documents", "rows", 1))
        return
    tok, settings, feats = build_settings(kw)
    progress = Progress("reading", quiet)
    ids: list | None = [] if predictions_path is not None else None
    unread = Unread(INPUT_FORMAT)
    cluster = dask_cluster(engine, quiet, sources.all)
    if cluster is not None:
        from .batch.cluster import corpus_on_cluster

        with cluster, unread.explaining():
            X, y, vocab = corpus_on_cluster(cluster, cluster_parts(cluster, sources, unread), tok, progress=progress,
                                            ids=ids, on_error=unread, sources=sources.all)
    else:
        with unread.explaining():
            X, y, vocab = count_corpus(read_labelled(sources, unread), tok, n_jobs=n_jobs(engine), progress=progress,
                                       ids=ids, sources=sources.all)
    unread.check()
    progress.done()
    predictions: list | None = [None] * len(y) if predictions_path is not None else None
    results = cross_validate(X, y, vocab, tok, settings, feats, build_decisions(kw), folds, seed,
                             predictions=predictions, sources=sources.all)
    if predictions_path is not None:
        write_cv_predictions(predictions_path, ids, y, predictions)
    r = aggregate(results, seed)
    answer(json.dumps(r, indent=2) if fmt == "json" else format_cv(r))


def write_cv_predictions(path: str, ids: list, y, predictions: list) -> None:
    """cv's --predictions file: per document (or row), predict's TSV row (id, label,
    probability), its true label and its fold (1..K), in input order."""
    from .report import prediction_row
    from .store.atomic import write_atomically

    write_atomically([f"{prediction_row('tsv', doc_id, label, p)}\t{true}\t{fold}\n".encode("utf-8")
                      for doc_id, true, (label, p, fold) in zip(ids, y, predictions)], path)


@cli.command(context_settings=CONTEXT)
@model_option
@labelled_sources
@decision_options
@jobs_option
@quiet_option
def calibrate(model_path, quiet, **kw):
    """Refit a model's calibration and decisions on labelled documents, counts unchanged.

    As train fits them: the calibration map on internal folds, and the threshold of --max-fpr,
    --threshold or --unsure. After merge, calibrate on the documents the merged models learned
    (in the order train would read them) predicts as training on them all would.

    \b
    Examples:
      nbtext merge -o all.nbm alice.nbm bob.nbm && nbtext calibrate -m all.nbm alice/ bob/
      nbtext calibrate -m spam.nbm corpus/ --max-fpr 0.001
    """
    from . import store
    from .batch.train import recalibrate
    from .store.atomic import check_target

    sources = sources_of(kw)
    decisions = build_decisions(kw)
    check_target(model_path, sources.all)  # (read as a document)
    progress = Progress("calibrating", quiet)
    unread = Unread()
    with store.locked(model_path):
        model = store.load(model_path)
        if model.kind == "table":
            raise NbtextError(f"{model_path}: a table model; its probabilities are not calibrated "
                              "(they are scikit-learn's), so there is nothing to refit")
        check_classes(model.classes, decisions)
        with unread.explaining():
            n, fit = recalibrate(model, read_labelled(sources, unread), decisions, n_jobs=n_jobs(engine_of(kw)),
                                 progress=progress, sources=sources.all)
        progress.done()
        unread.check()
        store.save(model, model_path)
    report_threshold(quiet, fit, decisions, model)
    info_line(quiet, f"nbtext: calibrated on {n} documents ({describe_calibration(model.decision)}); "
                     f"wrote {model_path}")


def report_threshold(quiet: bool, fit, decisions, model) -> None:
    if fit:
        info_line(quiet, f"nbtext: --max-fpr {decisions.max_fpr}: threshold {fit.threshold:.6f}; "
                         f"in {decisions.folds} internal folds it calls {fit.fpr:.2%} of "
                         f"non-{model.decision.positive} positive and misses {fit.fnr:.2%} "
                         f"of {model.decision.positive}")


def describe_calibration(d) -> str:
    """The calibration map in words, for stderr notes."""
    if (d.temperature, d.length_power, d.soft, d.floor) == (1.0, 0.0, 0.0, 0.0):
        return "no calibration"
    return (f"temperature {d.temperature:.4g}, length power {d.length_power:g}, soft {d.soft:.4g}, "
            f"floor {d.floor:.3g}")


@cli.command(context_settings=CONTEXT)
@model_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True,
              help="Most informative tokens per class.")
@click.option("--linear", is_flag=True, help="Two classes: print the decision function f(x) = b + w.x "
              "(+ x'Qx for per-class variances), f(x) >= 0 for the positive class.")
def info(model_path, fmt, top, linear):
    """What a model holds: classes, counts, vocabulary, settings, top tokens per class.

    \b
    Examples:
      nbtext info -m spam.nbm --format json
      nbtext info -m golf.nbm --linear
    """
    import json

    from . import store
    from .report import describe, format_info

    header, payload = store.read_container(model_path)
    model = store.decode(header, payload, model_path)
    if model.kind == "table":
        from . import tablecli

        view, text = ((model.linear(), tablecli.format_linear) if linear else
                      (tablecli.describe(model, header), tablecli.format_info))
    elif linear:
        from . import tablecli

        check_scorable(model.class_count, model_path)  # (no documents: no decision function)
        view, text = tablecli.text_linear(model), tablecli.format_linear
    else:
        view, text = describe(model, header, top), format_info
    answer(json.dumps(view, indent=2, ensure_ascii=False) if fmt == "json" else text(view))


@cli.command(context_settings=CONTEXT)
@model_option
@click.option("--label", "label", required=True, help="The class the documents belong to.")
@click.option("--forget", is_flag=True, help="Take the documents out instead (they must have been learned).")
@click.argument("inputs", nargs=-1, type=click.Path(allow_dash=True))
@quiet_option
def learn(model_path, label, forget, inputs, quiet):
    """Add documents to a model in place (--forget takes them out again).

    INPUT is a message file, mbox, Maildir, folder, or - (default) for one message on stdin.
    A document already learned under LABEL is skipped; concurrent runs wait for each other.

    \b
    Examples:
      nbtext learn -m spam.nbm --label spam < missed.eml
      nbtext learn -m spam.nbm --label spam --forget wrongly-learned.eml
    """
    from .operations import learn_in_place
    from .read import input_documents
    from .store import read_container
    from .store.atomic import check_target
    from .store.tables import is_table_header

    check_target(model_path, list(inputs))  # (a model inside an input would be learned as a document)
    if is_table_header(read_container(model_path, header_only=True)[0]):
        from .tablecli import learn as learn_rows

        n = learn_rows(model_path, list(inputs) or ["-"], label, forget)
        info_line(quiet, f"nbtext: {'forgot' if forget else 'learned'} {n} row{'' if n == 1 else 's'} as {label}")
        return
    changed, skipped = learn_in_place(model_path, refuse_empty_stdin(input_documents(list(inputs) or ["-"]), forget),
                                      label, forget)
    verb = "forgot" if forget else "learned"
    info_line(quiet, f"nbtext: {verb} {changed} document{'' if changed == 1 else 's'} as {label}"
                     + (f" ({skipped} already learned, skipped)" if skipped else ""))


def refuse_empty_stdin(docs, forget: bool):
    """learn's documents, refused when standard input is empty (`learn < /dev/null`, a pipe that
    gave nothing: a mistake, not a message); forgetting one learned so is still allowed."""
    for doc in docs:
        if doc.id == "-" and not doc.data and not forget:
            raise NbtextError("-: standard input is empty: no message to learn")
        yield doc


@cli.command(context_settings=CONTEXT)
@model_option
@click.option("--older-than", type=click.IntRange(min=0), default=None, metavar="DAYS",
              help="Take out tokens last seen more than DAYS days ago that few documents hold (see --seen-at-most).")
@click.option("--seen-at-most", type=click.IntRange(min=1), default=1, show_default=True, metavar="N",
              help="With --older-than: only tokens counted at most N times in all go.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None, metavar="N",
              help="Keep at most N tokens: the least recently seen go first, the rarest first among those of a day.")
@click.option("--dry-run", is_flag=True, help="Say what would be taken out; change nothing.")
@quiet_option
def prune(model_path, older_than, seen_at_most, max_tokens, dry_run, quiet):
    """Take old, rare tokens out of a model, in place, so that it stays small and current.

    As bogoutil -m and SpamAssassin's expiry do: a model learned into for years keeps every
    token it ever saw; most were seen once, long ago. The model keeps each token's last day
    seen (in a model from before nbtext kept days, no token is old by age, and to --max-tokens
    every token is as old as can be). The documents stay learned: learn and --forget stay exact
    on the tokens that remain. Concurrent learns wait for the prune.

    \b
    Examples:
      nbtext prune -m spam.nbm --older-than 90              # tokens seen once, over 90 days ago
      nbtext prune -m spam.nbm --older-than 30 --seen-at-most 2 --max-tokens 500000
    """
    from .operations import PruneRule, prune_in_place

    if older_than is None and max_tokens is None:
        raise click.UsageError("give --older-than DAYS, --max-tokens N, or both")
    rule = PruneRule(older_than=older_than, seen_at_most=seen_at_most, max_tokens=max_tokens)
    dropped, before = prune_in_place(model_path, rule, dry_run)
    verb = "would take out" if dry_run else "took out"
    info_line(quiet, f"nbtext: {verb} {dropped:,} of {before:,} tokens; {before - dropped:,} remain in {model_path}")


@cli.command(context_settings=CONTEXT)
@model_option
@click.option("--spamd", "spamd", multiple=True, metavar="ADDR",
              help="Answer spamd's protocol (spamc, Exim, spamass-milter) on HOST:PORT or unix:PATH (repeatable).")
@click.option("--http", "http", multiple=True, metavar="ADDR",
              help="Answer HTTP/JSON (rspamd's /checkv2, /learnspam, /learnham, /forget, /ping, /metrics) on "
                   "HOST:PORT or unix:PATH (repeatable).")
@click.option("--workers", type=click.IntRange(1, 64), default=None, help="Worker processes (default: the cores).")
@click.option("--allow", multiple=True, metavar="CIDR",
              help="Also accept TCP clients from these networks (loopback always; as spamd's -A).")
@click.option("--user-models", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="`User: alice` scores with and learns into DIR/alice.nbm.")
@click.option("--min-learns", type=click.IntRange(min=0), default=SERVE.min_learns, show_default=True,
              help="Messages of each class a user's model must have learned before it scores that user's mail "
                   "(until then the global model does).")
@click.option("--max-size", default=str(SERVE.max_size), show_default=True, metavar="SIZE",
              help="Largest message accepted (K, M suffixes); a larger one gets an error reply.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=SERVE.timeout, show_default=True,
              metavar="SECONDS",
              help="Time a client has to send its request (and to read the reply); a learn's longest wait for the "
                   "model's lock.")
@click.option("--max-connections", type=click.IntRange(min=1), default=SERVE.max_connections, show_default=True,
              help="Open connections per worker; more wait in the listen queue.")
@click.option("--socket-mode", default=None, metavar="MODE",
              help="Permissions of unix sockets, in octal (default: as the umask leaves them).")
@quiet_option
def serve(model_path, quiet, **kw):
    """Run a filter daemon for mail servers: spamd's protocol (spamc) and HTTP/JSON (rspamd's).

    Loads the model once and answers over sockets until SIGTERM; SIGHUP reads the models
    again (a changed model file is read again by itself). Logs a line per request on stderr
    (-q: errors only). docs/serve.md has the protocols, the recipes and the figures.

    \b
    Examples:
      nbtext serve -m spam.nbm --spamd 127.0.0.1:783
      spamc -c < message.eml; echo $?                 # 1: spam, 0: ham
      nbtext serve -m spam.nbm --spamd unix:/run/nbtext/spamd.sock --http 127.0.0.1:11333 \\
          --user-models /var/lib/nbtext/users
    """
    from .serve.command import run

    return run(model_path, quiet=quiet, **kw)


@cli.command(context_settings=CONTEXT)
@click.option("-o", "--output", required=True, metavar="OUT", help="Model file to write.")
@click.argument("models", nargs=-1, required=True, type=click.Path())
@click.option("--disjoint", is_flag=True,
              help="Merge models whose classes share none (one model of all their classes).")
def merge(output, models, disjoint):
    """Sum models trained with the same settings into OUT.

    \b
    Example:
      nbtext merge -o all.nbm alice.nbm bob.nbm
    """
    from .operations import merge_files

    merged = merge_files(output, list(models), disjoint)
    d = merged.decision
    if merged.kind == "table":  # (not calibrated: nothing to refit)
        return
    info_line(False, f"nbtext: merged {len(models)} models into {output}; kept the decision of {models[0]} "
                     f"({describe_calibration(d)}, threshold {d.threshold:g}): to refit it on all their "
                     f"documents, run: nbtext calibrate -m {output} CORPUS...")


@cli.command(name="export", context_settings=CONTEXT)
@model_option
def export_cmd(model_path):
    """Write a model as a text dump on stdout (back up, restore, diff).

    \b
    Example:
      nbtext export -m spam.nbm > spam.dump && nbtext import spam.dump -o restored.nbm
    """
    from . import store
    from .process import stdout
    from .store.dump import export_lines

    out = stdout()
    for line in export_lines(store.load(model_path)):
        out.write(line + "\n")


@cli.command(name="import", context_settings=CONTEXT)
@click.argument("dump", type=click.Path(allow_dash=True))
@click.option("-o", "--output", required=True, metavar="MODEL", help="Model file to write.")
def import_cmd(dump, output):
    """Turn a text dump (from nbtext export) back into a model file, exactly.

    \b
    Example:
      nbtext import spam.dump -o spam.nbm
    """
    from . import store
    from .read import dump_lines
    from .store.dump import import_lines

    from .store.atomic import check_target

    check_target(output, [dump])
    store.save(import_lines(dump_lines(dump), dump), output)


# -- the process edge -------------------------------------------------------------------

def main(argv=None):
    """The click command line. (The `nbtext` command starts in nbtext.__main__, which answers
    plain classify calls without importing click.)"""
    cli.main(args=argv, prog_name="nbtext")
