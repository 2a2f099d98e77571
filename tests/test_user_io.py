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
