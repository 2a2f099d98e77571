"""The CLI as a user drives it: exact outputs, exit codes, and refusals."""
import json
import os
import subprocess
import sys
from fractions import Fraction as F

import pytest

from conftest import DATA, IIR_TEST

IIR_YES = F(3, 4) * F(3, 7) ** 3 * F(1, 14) ** 2
IIR_NO = F(1, 4) * F(2, 9) ** 5
IIR_P = f"{float(IIR_YES / (IIR_YES + IIR_NO)):.6f}"
# The book's example: Laplace smoothing over single words.
IIR_OPTIONS = ("--alpha", "1", "--ngrams", "1", "--char-ngrams", "0,0")


def test_every_command_has_help_with_an_example(run):
    from nbtext.cli import cli

    for name, cmd in cli.commands.items():
        r = run(name, "--help")
        assert r.exit_code == 0, name
        assert cmd.help and "nbtext " + name in r.stdout, f"{name} --help has no example"


def test_train_tsv_and_classify_stdin_golden(run, iir_tsv, tmp_path):
    model = tmp_path / "iir.nbm"
    r = run("train", iir_tsv, "-o", model, "-q", *IIR_OPTIONS)
    assert r.exit_code == 0 and r.stdout == "" and model.exists()
    r = run("classify", "-m", model, input=IIR_TEST)
    assert r.exit_code == 0
    assert r.stdout == f"yes\t{IIR_P}\n"


def test_model_from_environment(run, iir_tsv, tmp_path):
    model = tmp_path / "iir.nbm"
    run("train", iir_tsv, "-o", model, "-q")
    r = run("classify", input="Tokyo Japan", env={"NBTEXT_MODEL": str(model)})
    assert r.exit_code == 0 and r.stdout.startswith("no\t")
    # the click-free path of `nbtext classify`, whose entry point reads the variable
    r = nbtext_process("classify", input=b"Tokyo Japan", env={**os.environ, "NBTEXT_MODEL": str(model)})
    assert r.returncode == 0 and r.stdout.startswith(b"no\t"), r.stderr


def test_predict_lines_formats(run, iir_tsv, tmp_path):
    model = tmp_path / "iir.nbm"
    run("train", iir_tsv, "-o", model, "-q", *IIR_OPTIONS)
    lines = tmp_path / "in.txt"
    lines.write_text(f"{IIR_TEST}\nTokyo Japan Tokyo\n")
    r = run("predict", "-m", model, "--lines", lines)
    rows = [ln.split("\t") for ln in r.stdout.splitlines()]
    assert [(i, lab) for i, lab, _ in rows] == [(f"{lines}:1", "yes"), (f"{lines}:2", "no")]
    assert rows[0][2] == IIR_P
    r = run("predict", "-m", model, "--lines", lines, "--format", "jsonl")
    first = json.loads(r.stdout.splitlines()[0])
    assert first["id"] == f"{lines}:1" and first["label"] == "yes"
    assert first["probability"] == round(float(IIR_YES / (IIR_YES + IIR_NO)), 6)
    assert set(first["scores"]) == {"yes", "no"}
    assert first["scores"]["yes"] + first["scores"]["no"] == pytest.approx(1, abs=2e-6)
    r = run("predict", "-m", model, "--lines", lines, "--format", "csv", "--header")
    assert r.stdout.splitlines()[0] == "id,label,probability"
    assert r.stdout.splitlines()[1] == f"{lines}:1,yes,{IIR_P}"
    r = run("predict", "-m", model, "--lines", "-", input="Tokyo\nChinese\n")
    assert [ln.split("\t")[:2] for ln in r.stdout.splitlines()] == [["-:1", "no"], ["-:2", "yes"]]


@pytest.mark.slow
def test_folder_train_predict_classify_eval(run, sample_model, tmp_path):
    r = run("classify", "-m", sample_model, input=(DATA / "example-spam.eml").read_bytes())
    assert r.stdout.split("\t")[0] == "spam"
    r = run("classify", "-m", sample_model, DATA / "example-ham.eml")
    assert r.stdout.split("\t")[0] == "ham"
    r = run("predict", "-m", sample_model, DATA / "example-ham.eml", DATA / "example-spam.eml")
    rows = [ln.split("\t") for ln in r.stdout.splitlines()]
    assert [(i, lab) for i, lab, _ in rows] == [
        (str(DATA / "example-ham.eml"), "ham"), (str(DATA / "example-spam.eml"), "spam")]
    assert all(0 <= float(p) <= 1 for _, _, p in rows)
    r = run("eval", "-m", sample_model, DATA / "corpus", "--format", "json")
    d = json.loads(r.stdout)
    assert d["documents"] == 432
    assert d["classes"]["ham"]["support"] == 298 and d["classes"]["spam"]["support"] == 134
    cm = d["confusion_matrix"]
    assert cm["labels"] == ["ham", "spam"] and sum(map(sum, cm["matrix"])) == 432
    assert d["accuracy"] == pytest.approx((cm["matrix"][0][0] + cm["matrix"][1][1]) / 432)
    for key in ("macro_f1", "log_loss", "roc_auc", "false_positive_rate", "false_negative_rate"):
        assert key in d
    r = run("eval", "-m", sample_model, DATA / "corpus")
    assert r.stdout.startswith("documents     432\naccuracy      ")
    assert "confusion matrix" in r.stdout


def test_classify_exit_codes(run, sample_model):
    r = run("classify", "-m", sample_model, "--exit-code", DATA / "example-spam.eml")
    assert r.exit_code == 0
    r = run("classify", "-m", sample_model, "--exit-code", DATA / "example-ham.eml")
    assert r.exit_code == 1
    r = run("classify", "-m", sample_model, "--exit-code", "/nonexistent/message")
    assert r.exit_code == 3 and r.stderr == "nbtext: error: /nonexistent/message: no such file or directory\n"


def test_info_json(run, sample_model):
    d = json.loads(run("info", "-m", sample_model, "--format", "json").stdout)
    assert d["classes"] == {"ham": 298, "spam": 134}
    from nbtext.store import FORMAT_VERSION
    assert d["format_version"] == FORMAT_VERSION and d["vocabulary"] > 1000
    assert d["tokenizer"]["mode"] == "auto" and d["model"]["variant"] == "multinomial"
    assert len(d["top_tokens"]["spam"]) == 10


@pytest.mark.parametrize("args,message", [
    (["train", "/no/such/dir", "-o", "{tmp}/m.nbm"], "nbtext: error: /no/such/dir: no such file or directory\n"),
    (["train", "{tmp}/empty", "-o", "{tmp}/m.nbm"], "nbtext: error: {tmp}/empty: no label directories in it "
     "(expected {tmp}/empty/LABEL/... such as {tmp}/empty/spam and {tmp}/empty/ham; or use --label LABEL {tmp}/empty)\n"),
    (["train", "--label", "spam", "{tmp}/empty", "-o", "{tmp}/m.nbm"],
     "nbtext: error: {tmp}/empty: no documents found in the training sources\n"),
    (["train", "--label", "spam", "{data}/example-spam.eml", "-o", "{tmp}/m.nbm"],
     "nbtext: error: need documents of at least two classes to train, got ['spam']"),
    (["classify", "-m", "{tmp}/none.nbm"], "nbtext: error: {tmp}/none.nbm: no such model file\n"),
    (["predict", "-m", "{data}/example-ham.eml", "{data}/example-ham.eml"],
     "nbtext: error: {data}/example-ham.eml: not an nbtext model file\n"),
    (["train", "{tmp}/bad.tsv", "-o", "{tmp}/m.nbm"], "nbtext: error: {tmp}/bad.tsv:2: expected LABEL<TAB>TEXT, found no tab\n"),
    (["train", "{tmp}/iir.tsv", "--alpha", "0", "-o", "{tmp}/m.nbm"], "nbtext: error: --alpha must be a number in (0, 1e+06], got 0.0\n"),
])
def test_user_errors(run, tmp_path, iir_tsv, args, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad.tsv").write_text("spam\tbuy now\nno tab here\n")
    fill = lambda s: s.replace("{tmp}", str(tmp_path)).replace("{data}", str(DATA))
    r = run(*[fill(a) for a in args])
    assert r.exit_code == 1
    assert r.stdout == ""
    assert r.stderr.startswith(fill(message)), r.stderr
    assert not (tmp_path / "m.nbm").exists()


def test_usage_error_exits_2(run):
    r = run("train")
    assert r.exit_code == 2


def test_failed_train_leaves_existing_model_untouched(run, iir_tsv, tmp_path):
    model = tmp_path / "m.nbm"
    run("train", iir_tsv, "-o", model, "-q")
    before = model.read_bytes()
    (tmp_path / "bad.tsv").write_text("x\n")
    r = run("train", tmp_path / "bad.tsv", "-o", model)
    assert r.exit_code == 1 and model.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def nbtext_process(*args, **kw):
    return subprocess.run([sys.executable, "-m", "nbtext", *map(str, args)], capture_output=True, **kw)


def test_real_process_pipeline_and_head(sample_model, tmp_path):
    r = nbtext_process("classify", "-m", sample_model, input=(DATA / "example-spam.eml").read_bytes())
    assert r.returncode == 0 and r.stdout.startswith(b"spam\t")
    # `nbtext predict ... | head -1` ends quietly: status 0, no traceback, no error message.
    p = subprocess.Popen(["bash", "-c", f"{sys.executable} -m nbtext predict -m {sample_model} "
                          f"{DATA / 'corpus'} -j 2 | head -1; exit ${{PIPESTATUS[0]}}"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate(timeout=120)
    assert len(out.splitlines()) == 1 and err == b"" and p.returncode == 0
    r = nbtext_process("predict", "-m", sample_model, "/nope")
    assert r.returncode == 1 and r.stderr == b"nbtext: error: /nope: no such file or directory\n"


def test_classify_does_not_import_heavy_modules(sample_model):
    code = ("import sys; from nbtext.__main__ import main; sys.argv=['nbtext','classify','-m',%r,%r]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('numpy','scipy','joblib','click','email.parser') if m in sys.modules))"
            % (str(sample_model), str(DATA / "example-ham.eml")))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    # A single-part message needs not even the standard mail parser (mail.parse_message)
    assert r.stdout.splitlines()[-1] == "[]"
    r = subprocess.run([sys.executable, "-c", code.replace(repr(str(DATA / "example-ham.eml")), "'/dev/null'")],
                       capture_output=True, text=True)
    assert r.stdout.splitlines()[-1] == "[]"


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ["{spam}"], ["{ham}", "--exit-code"], ["--exit-code", "{spam}"], ["-p", "{ham}"],
    ["--passthrough", "--threshold", "0.999999", "{spam}"], ["--unsure", "0.0,1.0", "--exit-code", "{spam}"],
    ["--unsure=0.2,0.3", "{ham}"], ["--positive", "ham", "--exit-code", "{ham}"],
    ["--positive", "eggs", "{ham}"], ["--threshold", "2", "{ham}"], ["--threshold", "x", "{ham}"],
    ["/nonexistent/msg"], ["--exit-code", "/nonexistent/msg"], ["-q", "{ham}", "{spam}"],
    ["--model={model}", "{ham}"], ["--explain", "2", "{ham}"], ["--bogus", "{ham}"],
])
def test_quick_classify_path_answers_as_the_click_command(run, sample_model, args):
    """`nbtext classify` skips click for its plain forms; what it prints and returns must be
    exactly what the click command (driven here by CliRunner) prints and returns."""
    names = {"spam": DATA / "example-spam.eml", "ham": DATA / "example-ham.eml", "model": sample_model}
    args = [a.format(**names) for a in args]
    if not any(a.startswith("--model=") for a in args):
        args = ["-m", str(sample_model), *args]
    want = run("classify", *args)
    got = nbtext_process("classify", *args)
    assert (got.returncode, got.stdout, got.stderr.decode()) == (want.exit_code, want.stdout_bytes, want.stderr)


def test_classify_explain_and_passthrough(run, sample_model, tmp_path):
    r = run("classify", "-m", sample_model, "--explain", "3", DATA / "example-spam.eml")
    lines = r.stdout.splitlines()
    assert lines[0].startswith("spam\t") and lines[1].startswith("prior\t") and lines[2].startswith("unknown tokens\t")
    fors = [ln.split("\t") for ln in lines if ln.startswith("for\t")]
    against = [ln.split("\t") for ln in lines if ln.startswith("against\t")]
    assert 1 <= len(fors) <= 3 and all(float(v) > 0 for _, v, _ in fors)
    assert all(float(v) < 0 for _, v, _ in against)
    assert [float(v) for _, v, _ in fors] == sorted((float(v) for _, v, _ in fors), reverse=True)
    msg = (DATA / "example-ham.eml").read_bytes()
    r = run("classify", "-m", sample_model, "--passthrough", input=msg)
    out = r.stdout_bytes
    head, _, body = out.partition(b"\n\n")
    score, spamicity = (float(ln.split(b" ")[1]) for ln in head.split(b"\n")[-2:])
    assert head.endswith(b"\nX-Nbtext-Class: ham\nX-Nbtext-Score: %.6f\nX-Nbtext-Spamicity: %.6f" % (score, spamicity))
    assert abs(score + spamicity - 1) <= 1e-6
    assert out.replace(head.split(b"\nX-Nbtext-Class")[0], b"").startswith(b"\nX-Nbtext-Class: ham\n")
    assert body == msg.partition(b"\n\n")[2]
    again = run("classify", "-m", sample_model, "--passthrough", input=out).stdout_bytes
    assert again.count(b"X-Nbtext-Class:") == again.count(b"X-Nbtext-Spamicity:") == 1


def test_cv_text_and_json(run, tmp_path):
    import json as _json
    t = tmp_path / "c.tsv"
    rows = [("spam", f"buy cheap pills offer {i}") for i in range(6)] + \
           [("ham", f"meeting notes lunch {i}") for i in range(6)]
    t.write_text("".join(f"{a}\t{b}\n" for a, b in rows))
    r = run("cv", t, "--folds", "3", "--format", "json")
    d = _json.loads(r.stdout)
    assert r.exit_code == 0 and d["folds"] == 3 and d["documents"] == 12
    assert d["mean"]["accuracy"] == 1.0 and d["std"]["accuracy"] == 0.0
    assert d["confusion_matrix"] == {"labels": ["ham", "spam"], "matrix": [[6, 0], [0, 6]]}
    assert len(d["per_fold"]) == 3 and sum(f["documents"] for f in d["per_fold"]) == 12
    r = run("cv", t, "--folds", "3")
    assert r.stdout.startswith("3-fold stratified cross-validation of 12 documents (seed 0)\n"
                               "accuracy             1.0000 ± 0.0000\n")
    r = run("cv", t, "--folds", "7")
    assert r.exit_code == 1
    assert r.stderr == "nbtext: error: --folds 7 needs at least 7 documents of each of two or more classes (ham: 6, spam: 6)\n"


@pytest.mark.slow
def test_parallel_training_writes_the_same_model_as_one_process(run, sample_model, tmp_path):
    """The bundled sample is 4.5 MB: chunks of CHUNK_BYTES make many, counted by two workers
    and merged in input order; the model file must not depend on that."""
    from nbtext.batch.chunks import CHUNK_BYTES

    assert sum(p.stat().st_size for p in (DATA / "corpus").rglob("*") if p.is_file()) > 4 * CHUNK_BYTES
    one, two = tmp_path / "one.nbm", tmp_path / "two.nbm"
    for path, jobs in ((one, "1"), (two, "2")):
        r = run("train", DATA / "corpus", "-o", path, "-j", jobs)
        assert r.exit_code == 0, r.output
    assert one.read_bytes() == two.read_bytes() == sample_model.read_bytes()


def test_chunks_stop_at_a_count_or_a_size():
    from nbtext.batch.chunks import chunks as _chunks
    from nbtext.read import Document

    docs = [Document(str(i), b"x" * n) for i, n in enumerate([5, 5, 5, 20, 1, 1, 1, 1])]
    sizes = [[len(d.data) for d in c] for c in _chunks(iter(docs), 3, 10)]
    assert sizes == [[5, 5], [5, 20], [1, 1, 1], [1]]
    assert list(_chunks(iter([]), 3, 10)) == []


@pytest.mark.slow
def test_streamed_sums_equal_the_whole_matrix_and_add_colliding_ids():
    """train's chunk-by-chunk sums over each chunk's own columns give the counts of the whole
    corpus as one matrix; ids that repeat (two tokens with one 64-bit key) add up."""
    import numpy as np
    import scipy.sparse as sp

    from nbtext.batch.train import count_corpus, fit_matrix, train_model
    from nbtext.nb.counts import Counts
    from nbtext.read import label_directory
    from nbtext.settings import DecisionOptions, ModelSettings, TokenizerSettings

    docs = list(label_directory(str(DATA / "corpus")))
    plain = DecisionOptions(calibrate=False)
    streamed, _ = train_model(iter(docs), TokenizerSettings(), ModelSettings(), decisions=plain)
    X, y, vocab = count_corpus(iter(docs), TokenizerSettings())
    whole, _ = fit_matrix(X, y, vocab, TokenizerSettings(), ModelSettings(), decisions=plain)
    assert streamed.classes == whole.classes and len(streamed.vocab) == len(whole.vocab) > 1000
    np.testing.assert_array_equal(streamed.feature_count, whole.feature_count)
    np.testing.assert_array_equal(streamed.class_count, whole.class_count)

    counts = Counts()
    counts.add(sp.csr_matrix(np.array([[1.0, 2.0, 3.0]])), ["b"], ids=np.array([0, 1, 0]), width=2)
    counts.add(sp.csr_matrix(np.array([[5.0, 7.0]])), ["a"], ids=np.array([1, 0]), width=2)
    counts.compact()
    assert counts.classes == ["a", "b"] and counts.class_count.tolist() == [1, 1]
    assert counts.feature_count.tolist() == [[7.0, 5.0], [4.0, 2.0]]


@pytest.mark.slow
def test_train_and_predict_do_not_import_scipy(sample_model, tmp_path):
    """scipy.sparse was 11 MiB of train's peak memory (docs/floor.md); nbtext.features.rows does its work."""
    code = ("import sys; from nbtext.__main__ import main; sys.argv=['nbtext'] + sys.argv[1:]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('scipy' in sys.modules, file=sys.stderr)")
    for args in (["train", DATA / "corpus", "-o", tmp_path / "m.nbm", "-q", "-j", "2"],
                 ["predict", "-m", sample_model, DATA / "corpus", "-j", "2"],
                 ["learn", "-m", tmp_path / "m.nbm", "--label", "spam", DATA / "example-spam.eml"]):
        r = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True)
        assert r.stderr.splitlines()[-1] == "False", (args[0], r.stderr)
    assert (tmp_path / "m.nbm").stat().st_size > 0


def test_cv_predictions_are_what_a_model_of_the_other_folds_says(run, tmp_path):
    from collections import Counter

    words = ["cheap", "pills", "offer", "meeting", "notes", "lunch", "free", "team", "click", "agenda"]
    rng = __import__("random").Random(3)
    rows = [(label, " ".join(rng.choice(words[:6] if label == "spam" else words[3:]) for _ in range(5)))
            for label in ["spam", "ham"] * 9]
    t = tmp_path / "c.tsv"
    t.write_text("".join(f"{a}\t{b}\n" for a, b in rows))
    out = tmp_path / "p.tsv"
    r = run("cv", t, "--folds", "3", "--format", "json", "--predictions", out)
    assert r.exit_code == 0, r.output
    lines = [ln.split("\t") for ln in out.read_text().splitlines()]
    assert [ln[0] for ln in lines] == [f"{t}:{i}" for i in range(1, 19)]  # input order
    assert [ln[3] for ln in lines] == [label for label, _ in rows]
    assert Counter(ln[4] for ln in lines) == {"1": 6, "2": 6, "3": 6}
    matrix = __import__("json").loads(r.stdout)["confusion_matrix"]
    assert matrix["matrix"] == [[sum(ln[3] == a and ln[1] == b for ln in lines) for b in matrix["labels"]]
                                for a in matrix["labels"]]
    assert 0 < sum(ln[1] != ln[3] for ln in lines) < 18  # mistakes to find, not all of them
    # fold 2's rows: a model trained (same options) on folds 1 and 3, scoring fold 2's texts
    train = tmp_path / "train.tsv"
    train.write_text("".join(f"{a}\t{b}\n" for (a, b), ln in zip(rows, lines) if ln[4] != "2"))
    texts = tmp_path / "fold2.txt"
    texts.write_text("".join(f"{b}\n" for (a, b), ln in zip(rows, lines) if ln[4] == "2"))
    assert run("train", train, "-o", tmp_path / "m.nbm").exit_code == 0
    r = run("predict", "-m", tmp_path / "m.nbm", "--lines", texts)
    got = [ln.split("\t")[1:] for ln in r.stdout.splitlines()]
    want = [ln[1:3] for ln in lines if ln[4] == "2"]
    assert [g[0] for g in got] == [w[0] for w in want]
    assert all(abs(float(g[1]) - float(w[1])) <= 2e-6 for g, w in zip(got, want))


def test_cv_predictions_file_must_be_writable_before_the_work(run, tmp_path):
    t = tmp_path / "c.tsv"
    t.write_text("".join(f"{a}\tword{a} {i}\n" for i in range(4) for a in ("x", "y")))
    r = run("cv", t, "--folds", "2", "--predictions", tmp_path / "no" / "p.tsv")
    assert r.exit_code == 1
    assert r.stderr == f"nbtext: error: {tmp_path / 'no' / 'p.tsv'}: directory {tmp_path / 'no'} does not exist\n"


BLAS_PROBE = """
import os, sys
from nbtext.__main__ import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(os.environ.get("OPENBLAS_NUM_THREADS"), len(os.listdir("/proc/self/task")), "numpy" in sys.modules)
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2,
                    reason="threads counted in /proc; OpenBLAS starts none on one core")
@pytest.mark.parametrize("given", [None, "OPENBLAS_NUM_THREADS=2", "OMP_NUM_THREADS=2"])
def test_the_command_line_loads_numpy_without_blas_threads_unless_told(sample_model, given):
    # OpenBLAS's threads spin while they wait for work, on the cores train's workers use: the
    # entry point has it start none (process.single_threaded_blas), where the environment does
    # not say how many. `info` loads the model with numpy; the process then has one thread.
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                                             "OMP_NUM_THREADS")}
    if given:
        name, value = given.split("=")
        env[name] = value
    out = subprocess.run([sys.executable, "-c", BLAS_PROBE, "info", "-m", str(sample_model)], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    setting, threads, numpy_loaded = out[-3:]
    assert numpy_loaded == "True"
    if given is None:
        assert (setting, threads) == ("1", "1")
    else:  # the user's word stands: OpenBLAS starts its threads (one a core)
        assert setting == ("2" if given.startswith("OPENBLAS") else "None")
        assert int(threads) > 1




def test_trains_summary_line_names_at_most_ten_classes(run, tmp_path):
    """Train's last line lists each class's documents; of many classes (a corpus of hundreds of
    labels), how many, the largest nine (ties in class order) and how many more, on one line;
    `info` lists them all."""
    lines = tmp_path / "many.txt"
    lines.write_text("".join(f"__label__c{c:02d} word{c} common text\n" * (c % 4 + 1) for c in range(12)))
    model = tmp_path / "many.nbm"
    r = run("train", lines, "--format", "fasttext", "-o", model, "--no-calibrate")
    assert r.exit_code == 0, r.stderr
    assert r.stderr.splitlines()[-1].startswith(
        "nbtext: trained on 30 documents (12 classes, the largest 4 c03, 4 c07, 4 c11, 3 c02, 3 c06, 3 c10, "
        "2 c01, 2 c05, 2 c09 and 3 more), ")
    few = tmp_path / "few.txt"
    few.write_text("".join(f"__label__c{c:02d} word{c} common text\n" * 2 for c in range(10)))
    r = run("train", few, "--format", "fasttext", "-o", model, "--no-calibrate")
    assert "trained on 20 documents (" + ", ".join(f"2 c{c:02d}" for c in range(10)) + "), " in r.stderr
    assert sum(line.startswith("  c") for line in run("info", "-m", model).stdout.splitlines()) == 10


def test_documents_without_a_token_are_refused_and_no_model_is_written(run, iir_tsv, tmp_path):
    """A fastText file of bare labels, or label folders of empty files, trained a model of 0
    tokens and said nothing (and with enough documents for calibration's folds, an internal
    error); fastText and scikit-learn refuse an empty vocabulary. A model that has tokens
    still learns an empty document, as bogofilter registers an empty message."""
    bare = tmp_path / "bare.txt"
    bare.write_text("__label__a\n__label__b\n" * 6)
    model = tmp_path / "m.nbm"
    for variant in ("auto", "multinomial"):
        r = run("train", bare, "--format", "fasttext", "--variant", variant, "-o", model)
        assert (r.exit_code, r.stderr) == (
            1, f"nbtext: error: {bare}: none of the 12 documents read has a token: nothing to train on\n")
        assert not model.exists()
    for label in ("spam", "ham"):
        (tmp_path / "corpus" / label).mkdir(parents=True)
        (tmp_path / "corpus" / label / "1.txt").write_bytes(b"")
    r = run("train", "--label", "spam", tmp_path / "corpus" / "spam", "--label", "ham", tmp_path / "corpus" / "ham",
            "-o", model)
    assert (r.exit_code, r.stderr) == (1, f"nbtext: error: {tmp_path / 'corpus' / 'spam'}, "
                                          f"{tmp_path / 'corpus' / 'ham'}: none of the 2 documents read has a "
                                          f"token: nothing to train on\n")
    run("train", iir_tsv, "-o", model, "-q")
    before = model.read_bytes()
    r = run("train", tmp_path / "corpus", "-o", model)
    assert (r.exit_code, r.stderr) == (
        1, f"nbtext: error: {tmp_path / 'corpus'}: none of the 2 documents read has a token: nothing to train on\n")
    assert model.read_bytes() == before
    r = run("learn", "-m", model, "--label", "yes", tmp_path / "corpus" / "spam" / "1.txt")
    assert (r.exit_code, r.stderr) == (0, "nbtext: learned 1 document as yes\n")


def test_cv_refuses_documents_without_a_token_as_train_does(run, tmp_path):
    """cv of a fastText file of bare labels ended in an internal error (a log of 0 in a fold's
    decision layer), or printed the figures of models that had no token."""
    bare = tmp_path / "bare.txt"
    bare.write_text("__label__a\n__label__b\n" * 30)
    r = run("cv", bare, "--input-format", "fasttext", "--folds", "3")
    assert (r.exit_code, r.stdout, r.stderr) == (
        1, "", f"nbtext: error: {bare}: none of the 60 documents read has a token: nothing to train on\n")
