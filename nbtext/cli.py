"""The command line: a thin edge that parses options, calls the library and prints.

Only this module turns library exceptions into messages and exit codes. Heavy imports (numpy,
joblib; scipy only for cv) happen inside the commands that need them, so `nbtext
classify` stays fast.
"""
from __future__ import annotations

import os
import sys

import click

from . import __version__
from .errors import NbtextError

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class UserError(click.ClickException):
    exit_code = 1

    def show(self, file=None):
        click.echo(f"nbtext: error: {self.message}", err=True)


class Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except NbtextError as e:
            raise UserError(str(e)) from None
        except BrokenPipeError:
            # `nbtext predict ... | head`: the reader left. End quietly, as cat does; point
            # stdout at /dev/null so the interpreter's final flush cannot complain either.
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError):
                pass
            raise click.exceptions.Exit(0) from None


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

def model_option(f):
    return click.option("-m", "--model", "model_path", envvar="NBTEXT_MODEL", required=True,
                        metavar="MODEL", help="Model file (default: $NBTEXT_MODEL).")(f)


def quiet_option(f):
    return click.option("-q", "--quiet", is_flag=True, help="Print nothing but results and errors.")(f)


def jobs_option(f):
    return click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
                        help="Worker processes (default: all cores, when the input is large).")(f)


def line_options(f, flag="--format"):
    for opt in reversed([
        click.option(flag, "line_format", type=click.Choice(["tsv", "csv", "jsonl", "fasttext"]),
                     default=None, help="Format of line files (default: by extension, else sniffed)."),
        click.option("--label-column", default="label", show_default=True,
                     help="CSV column / JSONL field holding the label (name or 1-based number)."),
        click.option("--text-column", default="text", show_default=True,
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


def labelled_sources_for_eval(f):
    """As labelled_sources; --format names the output there, so line files use --input-format."""
    return labelled_sources(f, "--input-format")


def training_options(f):
    for opt in reversed([
        click.option("--variant", type=click.Choice(["multinomial", "bernoulli", "complement"]),
                     default="multinomial", show_default=True, help="Naive Bayes event model."),
        click.option("--alpha", type=float, default=0.03, show_default=True,
                     help="Lidstone smoothing (1 = Laplace)."),
        click.option("--tf", is_flag=True, help="Complement NB: log term frequency, log(1 + n)."),
        click.option("--idf", is_flag=True, help="Complement NB: inverse document frequency weights."),
        click.option("--length-norm", is_flag=True, help="Complement NB: unit-length documents."),
        click.option("--norm/--no-norm", default=False,
                     help="Complement NB: weight normalization."),
        click.option("--email", "mode", flag_value="email", help="Read every document as mail."),
        click.option("--text", "mode", flag_value="text", help="Read every document as plain text."),
        click.option("--auto", "mode", flag_value="auto", default=True,
                     help="Mail-aware when a document looks like mail (default)."),
        click.option("--ngrams", type=click.IntRange(min=1), default=2, show_default=True,
                     help="Word n-grams from 1 to N."),
        click.option("--char-ngrams", default="2,4", show_default=True, metavar="MIN,MAX",
                     help="Character n-grams inside words of plain-text documents (0,0: none)."),
        click.option("--mail-char-ngrams", is_flag=True,
                     help="Character n-grams for mail bodies too."),
        click.option("--max-word-length", type=click.IntRange(min=1), default=40, show_default=True,
                     help="Longer words become one summary token."),
        click.option("--min-df", type=int, default=1, show_default=True,
                     help="Drop tokens found in fewer documents."),
        click.option("--max-df", type=float, default=1.0, show_default=True,
                     help="Drop tokens found in more than this fraction of documents."),
        click.option("--max-features", type=int, default=None,
                     help="Keep only the N best tokens by --select (default: the most frequent)."),
        click.option("--select", type=click.Choice(["frequency", "chi2", "mi"]), default="frequency",
                     show_default=True, help="How --max-features ranks tokens: total count, "
                     "chi-squared (scikit-learn's, on counts) or mutual information with the class."),
    ]):
        f = opt(f)
    return f


def decision_options(f):
    for opt in reversed([
        click.option("--calibrate/--no-calibrate", default=True, show_default=True,
                     help="Fit a temperature on internal folds so probabilities mean what they say."),
        click.option("--positive", default=None, help="The positive class (default: spam, if present)."),
        click.option("--threshold", type=float, default=None,
                     help="Two classes: positive when P(positive) >= this (default 0.5)."),
        click.option("--unsure", default=None, metavar="LOW,HIGH",
                     help="Two classes: P(positive) in [LOW, HIGH) is unsure."),
        click.option("--max-fpr", type=float, default=None, metavar="RATE",
                     help="Choose the threshold by internal folds so that at most RATE of the "
                          "negative class (ham) is called positive."),
    ]):
        f = opt(f)
    return f


def build_decisions(kw: dict):
    from .decision import DecisionOptions

    return DecisionOptions(calibrate=kw["calibrate"], threshold=kw["threshold"],
                           unsure=parse_pair(kw["unsure"], "--unsure", float),
                           max_fpr=kw["max_fpr"], positive=kw["positive"])


def override_options(f):
    """--threshold/--unsure at scoring time, over what the model stores."""
    for opt in reversed([
        click.option("--threshold", type=float, default=None,
                     help="Override the model's threshold on P(positive)."),
        click.option("--unsure", default=None, metavar="LOW,HIGH",
                     help="Override the model's unsure band on P(positive)."),
    ]):
        f = opt(f)
    return f


def apply_overrides(decision, classes, threshold, unsure, positive=None):
    from .decision import override

    override(decision, classes, threshold, parse_pair(unsure, "--unsure", float), positive)


def parse_pair(value: str | None, name: str, cast=int) -> tuple | None:
    if value is None:
        return None
    try:
        lo, hi = (cast(x) for x in value.split(","))
    except ValueError:
        raise click.BadParameter(f"expected two numbers like 1,4, got {value!r}",
                                 param_hint=name) from None
    return lo, hi


def build_settings(kw: dict):
    from .settings import ModelSettings, TokenizerSettings
    from .pipeline import FeatureOptions

    chars = parse_pair(kw["char_ngrams"], "--char-ngrams") or (0, 0)
    tok = TokenizerSettings(mode=kw["mode"] or "auto", ngram_max=kw["ngrams"],
                            char_ngram_min=chars[0], char_ngram_max=chars[1],
                            mail_char_ngrams=kw["mail_char_ngrams"],
                            max_word_length=kw["max_word_length"])
    model = ModelSettings(variant=kw["variant"], alpha=kw["alpha"], norm=kw["norm"], tf=kw["tf"],
                          idf=kw["idf"], length_norm=kw["length_norm"])
    feats = FeatureOptions(min_df=kw["min_df"], max_df=kw["max_df"], max_features=kw["max_features"],
                           select=kw["select"])
    return tok, model, feats


def line_opts(kw: dict):
    from .read import LineOptions

    return LineOptions(kw["line_format"], kw["label_column"], kw["text_column"])


def read_labelled(kw: dict):
    from .read import labelled_documents

    if not kw["sources"] and not kw["label_paths"]:
        raise click.UsageError("give at least one SOURCE or --label LABEL PATH")
    return labelled_documents(list(kw["sources"]), [tuple(p) for p in kw["label_paths"]], line_opts(kw))


def n_jobs(kw: dict) -> int:
    from .pipeline import default_jobs

    return kw.get("jobs") or default_jobs()


class Progress:
    """A count of documents on stderr, only when stderr is a terminal and not --quiet."""

    def __init__(self, what: str, quiet: bool):
        self.on = not quiet and sys.stderr.isatty()
        self.what, self.n = what, 0

    def __call__(self, k: int):
        self.n += k
        if self.on:
            click.echo(f"\r{self.what}: {self.n} documents", err=True, nl=False)

    def done(self):
        if self.on and self.n:
            click.echo(err=True)


def info_line(quiet: bool, msg: str):
    if not quiet:
        click.echo(msg, err=True)


# -- commands ---------------------------------------------------------------------------

@cli.command(context_settings=CONTEXT)
@labelled_sources
@training_options
@decision_options
@click.option("-o", "--output", "output", required=True, metavar="MODEL", help="Model file to write.")
@jobs_option
@quiet_option
def train(**kw):
    """Learn a model from labelled documents and write it to MODEL.

    SOURCE is a directory whose subdirectories are the labels (corpus/spam, corpus/ham), or a
    line file: TSV (label<TAB>text), CSV, JSONL ({"label": ..., "text": ...}) or fastText
    (__label__spam text); - reads a line file from stdin.

    \b
    Examples:
      nbtext train corpus/ -o spam.nbm
      nbtext train --label spam junk.mbox --label ham ~/Maildir -o spam.nbm
      nbtext train reviews.tsv --ngrams 2 -o reviews.nbm
    """
    from . import modelfile
    from .pipeline import map_large_arrays, train_model

    tok, settings, feats = build_settings(kw)
    map_large_arrays()
    progress = Progress("training", kw["quiet"])
    model = train_model(read_labelled(kw), tok, settings, feats, build_decisions(kw),
                        n_jobs=n_jobs(kw), progress=progress)
    progress.done()
    modelfile.save(model, kw["output"])
    report = getattr(model, "fit_report", None)
    if report:
        info_line(kw["quiet"], f"nbtext: --max-fpr {kw['max_fpr']}: threshold {report['threshold']:.6f}; "
                               f"in {build_decisions(kw).folds} internal folds it calls {report['fpr']:.2%} of "
                               f"non-{model.decision.positive} positive and misses {report['fnr']:.2%} "
                               f"of {model.decision.positive}")
    counts = ", ".join(f"{int(n)} {c}" for c, n in zip(model.classes, model.class_count))
    info_line(kw["quiet"], f"nbtext: trained on {model.n_documents} documents ({counts}), "
                           f"{len(model.vocab)} tokens; wrote {kw['output']}")


def output_options(f):
    for opt in reversed([
        click.option("--format", "fmt", type=click.Choice(["tsv", "jsonl", "csv"]), default="tsv",
                     show_default=True, help="Output rows."),
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
@click.option("--text-column", default="text", show_default=True, help="JSONL/CSV text field.")
@click.option("--explain", type=click.IntRange(min=1), default=None, metavar="N",
              help="With --format jsonl: the N tokens that pushed hardest for and against each label.")
@override_options
@jobs_option
@quiet_option
def predict(model_path, inputs, fmt, header, lines, input_format, text_column, explain, threshold,
            unsure, jobs, quiet):
    """Score documents: one row per document, in input order, as it goes.

    INPUT is a file, a directory (walked recursively), an mbox, a Maildir, or - for one
    document on stdin (default). Rows are id<TAB>label<TAB>probability.

    \b
    Examples:
      nbtext predict -m spam.nbm ~/Maildir/new
      cat lines.txt | nbtext predict -m lang.nbm --lines - --format jsonl
    """
    from . import modelfile
    from .pipeline import score_chunks
    from .read import LineOptions, input_documents
    from .report import header_row, prediction_row

    if explain and fmt != "jsonl":
        raise click.UsageError("--explain needs --format jsonl")
    model = modelfile.load(model_path)
    apply_overrides(model.decision, model.classes, threshold, unsure)
    explainer = None
    if explain:
        from .score import FastScorer

        explainer = FastScorer(model_path)
    docs = input_documents(list(inputs) or ["-"], lines, input_format,
                           LineOptions(text_column=text_column))
    if header and header_row(fmt):
        click.echo(header_row(fmt))
    streaming = bool(lines or input_format) and "-" in (inputs or ["-"])  # a pipe: answer per line
    out = sys.stdout
    progress = Progress("predicting", quiet)
    for chunk, proba in score_chunks(model, docs, n_jobs=jobs or n_jobs({}),
                                     chunk_size=1 if streaming else 400):
        for doc, (label, unsure_row), row in zip(chunk, model.decide_rows(proba), proba):
            p = row[model.classes.index(label)]
            extra = {"unsure": True} if unsure_row else {}
            if explainer:
                extra["explain"] = explanation(explainer, doc.data, explain)
            out.write(prediction_row(fmt, doc.id, label, p, model.classes, row, extra) + "\n")
        out.flush()
        progress(len(chunk))
    progress.done()


@cli.command(context_settings=CONTEXT)
@model_option
@click.argument("file", default="-", type=click.Path(allow_dash=True))
@click.option("--exit-code", is_flag=True,
              help="Exit 0 for the positive class, 1 for another, 2 unsure, 3 error (as bogofilter).")
@click.option("--positive", default=None, help="The positive class (default: the model's, spam).")
@override_options
@click.option("--explain", type=click.IntRange(min=1), default=None, metavar="N",
              help="Also print the N tokens that pushed hardest for and against the label.")
@click.option("-p", "--passthrough", is_flag=True,
              help="Write the message back with X-Nbtext-Class and X-Nbtext-Score headers.")
@click.option("-u", "--learn", "learn_verdict", is_flag=True,
              help="Also learn the message as its verdict (not when unsure), as bogofilter -u.")
@quiet_option
@click.pass_context
def classify(ctx, model_path, file, exit_code, positive, threshold, unsure, explain, passthrough,
             learn_verdict, quiet):
    """Classify one document (default: stdin) and print LABEL<TAB>PROBABILITY.

    \b
    Examples:
      nbtext classify -m spam.nbm < message.eml
      nbtext classify -m spam.nbm --exit-code message.eml; echo $?
    """
    from .quick import classify_document, exit_status, write_verdict
    from .read import Document

    try:
        scorer, data, label, prob, unsure = classify_document(
            model_path, file, positive, threshold, parse_pair(unsure, "--unsure", float))
        if learn_verdict and not unsure:
            learn_in_place(model_path, [Document(file, data)], label, forget=False)
    except NbtextError as e:
        if exit_code:
            click.echo(f"nbtext: error: {e}", err=True)
            ctx.exit(3)
        raise
    write_verdict(data, label, prob, unsure, passthrough)
    if explain:
        e = scorer.explain(data, explain)
        out = sys.stderr if passthrough else sys.stdout
        print(f"prior\t{e['prior']:+.4f}", file=out)
        print(f"unknown tokens\t{e['unknown_tokens']}", file=out)
        for side in ("for", "against"):
            for tok, v in e[side]:
                print(f"{side}\t{v:+.4f}\t{tok}", file=out)
    if exit_code:
        ctx.exit(exit_status(scorer, label, unsure))


def explanation(scorer, data, n: int) -> dict:
    e = scorer.explain(data, n)
    r = lambda v: round(v, 4)
    return {"prior": r(e["prior"]), "unknown_tokens": e["unknown_tokens"],
            "for": [[t, r(v)] for t, v in e["for"]], "against": [[t, r(v)] for t, v in e["against"]]}


def learn_in_place(model_path: str, docs, label: str, forget: bool) -> tuple[int, int]:
    """Load, learn or forget, save: under the model's lock, so concurrent runs lose nothing."""
    from . import modelfile
    from .operations import learn, locked

    with locked(model_path):
        model = modelfile.load(model_path)
        changed, skipped = learn(model, docs, label, forget)
        if changed:
            modelfile.save(model, model_path)
    return changed, skipped


@cli.command(name="eval", context_settings=CONTEXT)
@model_option
@labelled_sources_for_eval
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@override_options
@jobs_option
@quiet_option
def eval_cmd(model_path, fmt, threshold, unsure, jobs, quiet, **kw):
    """Score a model on labelled documents (same sources as train).

    Prints accuracy, per-class precision/recall/F1/support, macro-F1, the confusion matrix,
    log-loss, Brier score, calibration error, and for two classes ROC-AUC and the
    false-positive and false-negative rates.

    \b
    Example:
      nbtext eval -m spam.nbm testset/ --format json
    """
    import json

    import numpy as np

    from . import modelfile
    from .pipeline import score_chunks
    from .report import evaluate, format_eval

    model = modelfile.load(model_path)
    apply_overrides(model.decision, model.classes, threshold, unsure)
    y_true, y_pred, probas = [], [], []
    progress = Progress("evaluating", quiet)
    for chunk, proba in score_chunks(model, read_labelled(kw), n_jobs=jobs or n_jobs({})):
        for d in chunk:
            if d.label not in model.classes:
                raise NbtextError(f"{d.id}: label {d.label!r} is not one of the model's classes "
                                  f"({', '.join(model.classes)})")
        y_true += [d.label for d in chunk]
        y_pred += model.verdicts(proba)
        probas.append(proba)
        progress(len(chunk))
    progress.done()
    if not y_true:
        raise NbtextError("no documents found in the evaluation sources")
    result = evaluate(model.classes, y_true, y_pred, np.vstack(probas), model.decision.positive)
    click.echo(json.dumps(result, indent=2) if fmt == "json" else format_eval(result))


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
@quiet_option
def cv(folds, seed, fmt, predictions_path, jobs, quiet, **kw):
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

    from .pipeline import count_corpus, cross_validate
    from .report import aggregate, format_cv, prediction_row

    if predictions_path is not None:
        parent = os.path.dirname(os.path.abspath(predictions_path))
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
            raise NbtextError(f"{predictions_path}: cannot write there ({parent} is not a writable directory)")
    tok, settings, feats = build_settings(kw)
    progress = Progress("reading", quiet)
    ids: list | None = [] if predictions_path is not None else None
    X, y, vocab = count_corpus(read_labelled(kw), tok, n_jobs=jobs or n_jobs({}), progress=progress, ids=ids)
    progress.done()
    predictions: list | None = [None] * len(y) if predictions_path is not None else None
    results = cross_validate(X, y, vocab, tok, settings, feats, build_decisions(kw), folds, seed,
                             predictions=predictions)
    if predictions_path is not None:
        try:
            with open(predictions_path, "w", encoding="utf-8") as out:
                for doc_id, true, (label, p, fold) in zip(ids, y, predictions):
                    out.write(f"{prediction_row('tsv', doc_id, label, p)}\t{true}\t{fold}\n")
        except OSError as e:
            raise NbtextError(f"{predictions_path}: {e.strerror or e}") from None
    r = aggregate(results, seed)
    click.echo(json.dumps(r, indent=2) if fmt == "json" else format_cv(r))


@cli.command(context_settings=CONTEXT)
@model_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True,
              help="Most informative tokens per class.")
def info(model_path, fmt, top):
    """What a model holds: classes, counts, vocabulary, settings, top tokens per class.

    \b
    Example:
      nbtext info -m spam.nbm --format json
    """
    import json

    from . import modelfile
    from .explain import top_tokens

    header, payload = modelfile.read_container(model_path)
    model = modelfile.decode(header, payload, model_path)
    d = {
        "format_version": header["format_version"],
        "created_by": header.get("created_by"),
        "classes": {c: int(n) for c, n in zip(model.classes, model.class_count)},
        "documents": model.n_documents,
        "vocabulary": len(model.vocab),
        "tokens_counted": {c: float(n) for c, n in zip(model.classes, model.feature_count.sum(axis=1))},
        "model": model.settings.to_dict(),
        "tokenizer": model.tokenizer_settings.to_dict(),
        "decision": model.decision.to_dict(),
        "learned_digests": len(model.ledger),
        "top_tokens": top_tokens(model, top) if top else {},
    }
    if fmt == "json":
        click.echo(json.dumps(d, indent=2, ensure_ascii=False))
        return
    click.echo(f"model format   {d['format_version']} ({d['created_by']})")
    click.echo(f"documents      {d['documents']}")
    for c, n in d["classes"].items():
        click.echo(f"  {c:<12} {n} documents, {int(d['tokens_counted'][c])} tokens")
    click.echo(f"vocabulary     {d['vocabulary']} tokens")
    click.echo("model          " + ", ".join(f"{k}={v}" for k, v in d["model"].items()))
    click.echo("tokenizer      " + ", ".join(f"{k}={v}" for k, v in d["tokenizer"].items()))
    click.echo("decision       " + ", ".join(f"{k}={v}" for k, v in d["decision"].items()))
    for c, toks in d["top_tokens"].items():
        click.echo(f"top tokens for {c}: " + ", ".join(t["token"] for t in toks))


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
    from .read import input_documents

    changed, skipped = learn_in_place(model_path, input_documents(list(inputs) or ["-"]), label, forget)
    verb = "forgot" if forget else "learned"
    info_line(quiet, f"nbtext: {verb} {changed} document{'' if changed == 1 else 's'} as {label}"
                     + (f" ({skipped} already learned, skipped)" if skipped else ""))


@cli.command(context_settings=CONTEXT)
@click.option("-o", "--output", required=True, metavar="OUT", help="Model file to write.")
@click.argument("models", nargs=-1, required=True, type=click.Path())
def merge(output, models):
    """Sum models trained with the same settings into OUT.

    \b
    Example:
      nbtext merge -o all.nbm alice.nbm bob.nbm
    """
    from . import modelfile
    from .operations import locked, merge as merge_models

    loaded = [(p, modelfile.load(p)) for p in models]
    with locked(output):
        modelfile.save(merge_models(loaded), output)


@cli.command(name="export", context_settings=CONTEXT)
@model_option
def export_cmd(model_path):
    """Write a model as a text dump on stdout (back up, restore, diff).

    \b
    Example:
      nbtext export -m spam.nbm > spam.dump && nbtext import spam.dump -o restored.nbm
    """
    from . import modelfile
    from .operations import export_lines

    out = sys.stdout
    for line in export_lines(modelfile.load(model_path)):
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
    from . import modelfile
    from .operations import import_lines
    from .read import read_bytes

    text = read_bytes(dump).decode("utf-8", errors="replace")
    modelfile.save(import_lines(text.splitlines(), dump), output)


# -- the process edge -------------------------------------------------------------------

def main(argv=None):
    """The click command line: user errors as 'nbtext: error: ...', never a traceback.
    (The `nbtext` command starts in nbtext.__main__, which answers plain classify calls
    without importing click.)"""
    try:
        rv = cli.main(args=argv, prog_name="nbtext", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("nbtext: interrupted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("\nnbtext: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except NbtextError as e:
        click.echo(f"nbtext: error: {e}", err=True)
        sys.exit(1)
    except MemoryError:
        click.echo("nbtext: error: out of memory (try --max-features or a smaller corpus)", err=True)
        sys.exit(1)
    except Exception as e:  # the last line of defence: a bug, reported without a traceback
        if os.environ.get("NBTEXT_DEBUG"):
            raise
        click.echo(f"nbtext: error: internal error: {e.__class__.__name__}: {e} "
                   f"(rerun with NBTEXT_DEBUG=1 for a traceback, and please report it)", err=True)
        sys.exit(1)
    sys.exit(rv if isinstance(rv, int) else 0)
