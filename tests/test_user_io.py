"""What a user meets at the inputs and outputs (issue 32): a label left in a scored line, inputs
given twice, empty input, P(spam) for bogofilter's users, the mail-filter recipes as the
README writes them, and the messages of a mistaken command line."""
import json

import pytest

from conftest import DATA, IIR_TEST


def test_predict_tsv_scores_the_text_field_alone(run, sample_model):
    """A label in the first field of a TSV line was scored as a word of the text: the answer
    leaked into predict (issue 32: debian-sections' accuracy rose from 86.0% to 88.3%)."""
    rows = {}
    for label in ("zzzz", "spam", "ham"):
        r = run("predict", "-m", sample_model, "--input-format", "tsv", "-", "--format", "jsonl",
                input=f"{label}\tHello world, buy now\n")
        assert r.exit_code == 0, r.output
        rows[label] = json.loads(r.stdout)
    assert rows["zzzz"]["log_scores"] == rows["spam"]["log_scores"] == rows["ham"]["log_scores"]
    r = run("predict", "-m", sample_model, "--lines", "-", "--format", "jsonl", input="Hello world, buy now\n")
    assert json.loads(r.stdout)["log_scores"] == rows["spam"]["log_scores"]
    # a header row is skipped as train skips it; a line without a tab is all text
    r = run("predict", "-m", sample_model, "--input-format", "tsv", "-",
            input="label\ttext\nspam\tHello world, buy now\nHello world, buy now\n")
    ids = [ln.split("\t")[0] for ln in r.stdout.splitlines()]
    probs = {ln.split("\t")[2] for ln in r.stdout.splitlines()}
    assert ids == ["-:2", "-:3"] and len(probs) == 1


def test_a_folder_given_twice_is_refused_not_counted_twice(run, sample_model, tmp_path):
    """The same folder listed twice was counted twice while the ledger listed each message once,
    so `learn --forget` took out one copy and then refused the other (issue 32)."""
    spam, ham, model = DATA / "corpus" / "spam", DATA / "corpus" / "ham", tmp_path / "m.nbm"
    for args, message in [
        (("--label", "spam", spam, "--label", "spam", f"{spam}/"), f"{spam}/: given twice (also as {spam})"),
        ((DATA / "corpus", "--label", "spam", spam), f"{spam}: inside {DATA / 'corpus'}, also given"),
    ]:
        r = run("train", *args, "--label", "ham", ham, "-o", model)
        assert r.exit_code == 1 and not model.exists()
        assert r.stderr == (f"nbtext: error: {message}; its documents would be counted twice (and a "
                            "model's ledger lists each once)\n")
    r = run("eval", "-m", sample_model, DATA / "corpus", DATA / "corpus")
    assert r.exit_code == 1 and "given twice" in r.stderr


def test_learn_refuses_an_empty_stdin_and_leaves_the_model(run, sample_copy):
    before = sample_copy.read_bytes()
    r = run("learn", "-m", sample_copy, "--label", "spam", input=b"")
    assert r.exit_code == 1 and r.stderr == "nbtext: error: -: standard input is empty: no message to learn\n"
    assert sample_copy.read_bytes() == before
    r = run("learn", "-m", sample_copy, "--label", "spam", input=b"Subject: hi\n\nbuy now\n")
    assert r.exit_code == 0 and sample_copy.read_bytes() != before


@pytest.mark.parametrize("message", ["", "qqqzzzunknownword xxyyzzqq"])
def test_a_document_without_known_tokens_gets_the_prior(run, sample_model, message):
    """An empty message classified ham 0.9987 though the prior was 0.85: the calibration map
    divided the prior's log-odds by its temperature (fitted to how words over-count) as if
    it were evidence. With no known token there is none: the posterior is the prior (through
    the map's floor). Both paths: classify's pure Python, predict's numpy."""
    d = json.loads(run("info", "-m", sample_model, "--format", "json").stdout)
    n = d["classes"]
    assert d["decision"]["soft"] == 0  # (the map's other part, which would bend the prior a little)
    floor = d["decision"]["floor"]
    expected = (1 - floor) * n["ham"] / (n["ham"] + n["spam"]) + floor / 2
    assert run("classify", "-m", sample_model, input=message).stdout == f"ham\t{expected:.6f}\n"
    r = run("predict", "-m", sample_model, "--format", "jsonl", input=message)
    assert json.loads(r.stdout)["scores"]["ham"] == round(expected, 6)


@pytest.mark.parametrize("command", [("train", DATA / "corpus", "-o", ""), ("info", "-m", ""),
                                     ("cv", DATA / "corpus", "--predictions", "")])
def test_an_empty_file_name_is_named(run, command):
    """`-o ''` said `: cannot write: Is a directory`."""
    r = run(*command)
    assert r.exit_code == 1
    assert r.stderr in ("nbtext: error: '': an empty file name names no file to write\n",
                        "nbtext: error: '': an empty file name names no model file\n")
