"""The reliability table of eval and cv (documents binned by the probability predict prints), and
predict's unrounded log scores (documents printed alike still sort)."""
import json

import numpy as np
import pytest

from nbtext import store
from nbtext.report import evaluate, fmt_prob, pooled_reliability, printed, reliability

from conftest import DATA

# Hand-made: (probability of the called label, was it wrong), each placed by what it prints as.
CASES = [
    (0.2, True),          # [0, 0.5)
    (0.4999995, False),   # prints 0.499999: [0, 0.5)
    (0.4999996, True),    # prints 0.500000: [0.5, 0.9)
    (0.8999995, False),   # prints 0.899999: [0.5, 0.9)
    (0.9, False),         # [0.9, 0.99)
    (0.9989994, True),    # prints 0.998999: [0.99, 0.999)
    (0.9989995, True),    # prints 0.999000: [0.999, 0.9999)
    (0.9995, False),      # [0.999, 0.9999)
    (0.99999, True),      # [0.99999, 1]
    (0.9999949, False),   # prints 0.999995: [0.99999, 1]
    (0.9999995, True),    # prints 1.000000: [0.99999, 1]
    (1.0, False),         # [0.99999, 1]
]
#          bin: documents, wrong, the printed P in it
EXPECTED = [(2, 1, [0.2, 0.499999]),
            (2, 1, [0.5, 0.899999]),
            (1, 0, [0.9]),
            (1, 1, [0.998999]),
            (2, 1, [0.999, 0.9995]),
            (0, 0, []),
            (4, 2, [0.99999, 0.999995, 1.0, 1.0])]
EDGES = [0.0, 0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 1.0]


def test_printed_is_what_predict_prints():
    assert fmt_prob(0.9989995) == "0.999000" and printed(0.9989995) == 0.999
    assert fmt_prob(0.9999995) == "1.000000" and printed(0.9999995) == 1.0
    assert fmt_prob(0.4999995) == "0.499999" and fmt_prob(0.4999996) == "0.500000"


def check_table(table, expected):
    assert [(b["low"], b["high"]) for b in table["bins"]] == list(zip(EDGES[:-1], EDGES[1:]))
    for b, (n, wrong, ps) in zip(table["bins"], expected):
        assert (b["documents"], b["wrong"]) == (n, wrong)
        if n:
            assert b["error_rate"] == wrong / n
            assert b["mean_probability"] == pytest.approx(sum(ps) / n, abs=1e-12)
        else:
            assert b["error_rate"] is None and b["mean_probability"] is None


def test_reliability_table_arithmetic():
    table = reliability([p for p, _ in CASES], [w for _, w in CASES])
    check_table(table, EXPECTED)
    assert table["at_least"] == [
        {"probability": 0.999, "documents": 6, "wrong": 3, "error_rate": 0.5},
        {"probability": 0.99999, "documents": 4, "wrong": 2, "error_rate": 0.5}]


def test_pooled_reliability_sums_counts_over_folds():
    """cv pools: two folds' tables make the table of all their documents, not an average."""
    a, b = CASES[::3], [c for i, c in enumerate(CASES) if i % 3]
    tables = [reliability([p for p, _ in part], [w for _, w in part]) for part in (a, b)]
    pooled = pooled_reliability(tables)
    check_table(pooled, EXPECTED)
    assert [(x["documents"], x["wrong"]) for x in pooled["at_least"]] == [(6, 3), (4, 2)]


def test_evaluate_bins_the_probability_of_the_called_label():
    """With a threshold, the called label need not be the likelier one: its own P is binned."""
    proba = np.array([[0.9995, 0.0005], [0.6, 0.4], [0.3, 0.7], [0.00001, 0.99999]])
    r = evaluate(["ham", "spam"], ["ham", "spam", "spam", "ham"], ["ham", "spam", "spam", "spam"], proba)
    got = [(b["documents"], b["wrong"]) for b in r["reliability"]["bins"]]
    assert got == [(1, 0), (1, 0), (0, 0), (0, 0), (1, 0), (0, 0), (1, 1)]


def bins_from_predictions(rows):
    """(documents, wrong) per bin counted independently from cv --predictions' printed rows."""
    out = [[0, 0] for _ in EDGES[:-1]]
    for _, label, p, true, _ in rows:
        p = float(p)
        b = next(i for i in range(len(EDGES) - 1) if EDGES[i] <= p < EDGES[i + 1] or p == 1.0 == EDGES[i + 1])
        out[b][0] += 1
        out[b][1] += label != true
    return [tuple(x) for x in out]


@pytest.mark.slow
def test_eval_and_cv_show_the_reliability_table(run, sample_model, tmp_path):
    r = run("eval", "-m", sample_model, DATA / "corpus", "--format", "json")
    d = json.loads(r.stdout)
    rel = d["reliability"]
    assert sum(b["documents"] for b in rel["bins"]) == d["documents"] == 432
    assert sum(b["wrong"] for b in rel["bins"]) == sum(
        v for i, row in enumerate(d["confusion_matrix"]["matrix"]) for j, v in enumerate(row) if i != j)
    text = run("eval", "-m", sample_model, DATA / "corpus").stdout
    assert "[0.99999, 1]" in text and f"P(label) >= 0.999: {rel['at_least'][0]['documents']} documents" in text

    preds = tmp_path / "cv.tsv"
    r = run("cv", DATA / "corpus", "--folds", "3", "--format", "json", "--predictions", preds)
    d = json.loads(r.stdout)
    pooled = [(b["documents"], b["wrong"]) for b in d["reliability"]["bins"]]
    assert pooled == bins_from_predictions(ln.split("\t") for ln in preds.read_text().splitlines())
    assert sum(n for n, _ in pooled) == 432
    assert pooled == [tuple(sum(f["reliability"]["bins"][i][k] for f in d["per_fold"])
                            for k in ("documents", "wrong")) for i in range(len(pooled))]
    at = d["reliability"]["at_least"]
    assert at[0]["documents"] == sum(n for n, _ in pooled[4:]) and at[1]["wrong"] == pooled[6][1]
    text = run("cv", DATA / "corpus", "--folds", "3").stdout
    assert "reliability, pooled over folds" in text
    assert f"P(label) >= 0.99999: {at[1]['documents']} documents, {at[1]['wrong']} wrong" in text


@pytest.mark.slow
def test_predict_jsonl_log_scores_sort_documents_printed_alike(run, tmp_path):
    """Two spam messages both printed at P = 1.000000 (a message, and the same text twice: more
    evidence) keep their order in log_scores, which are Model.log_proba's at full precision."""
    model = tmp_path / "raw.nbm"
    run("train", DATA / "corpus", "-o", model, "--no-calibrate", "-q")
    once = (DATA / "example-spam.eml").read_bytes()
    twice = once + b"\n" + once.split(b"\n\n", 1)[1]
    docs = [tmp_path / "once.eml", tmp_path / "twice.eml"]
    for path, data in zip(docs, (once, twice)):
        path.write_bytes(data)
    rows = [json.loads(ln) for ln in run("predict", "-m", model, "--format", "jsonl", *docs).stdout.splitlines()]
    assert [(r["label"], r["probability"]) for r in rows] == [("spam", 1.0), ("spam", 1.0)]
    assert rows[1]["log_scores"]["ham"] < rows[0]["log_scores"]["ham"]  # twice the evidence: surer
    m = store.load(model)
    expected = m.log_proba(m.matrix([m.tokenizer(p.read_bytes()) for p in docs]))
    for row, logs in zip(rows, expected):
        assert list(row["log_scores"]) == m.classes
        assert list(row["log_scores"].values()) == pytest.approx(list(logs), abs=1e-12, rel=0)
        assert row["scores"] == {c: printed(np.exp(v)) for c, v in zip(m.classes, logs)}
    tsv = run("predict", "-m", model, *docs).stdout
    assert tsv == "".join(f"{p}\tspam\t1.000000\n" for p in docs)  # TSV as before: no log scores


def strict_json(text: str):
    """json.loads that refuses NaN, Infinity and -Infinity, as jq and JSON.parse do."""
    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def two_classes(run, tmp_path):
    """A corpus of two classes of two documents each, and its model (with --forget, a class empties)."""
    corpus = tmp_path / "c"
    for label, texts in (("a", ["apple banana cherry", "apple pie"]), ("b", ["dog cat mouse", "cat food"])):
        (corpus / label).mkdir(parents=True)
        for i, text in enumerate(texts):
            (corpus / label / f"{i}.txt").write_text(text)
    model = tmp_path / "m.nbm"
    run("train", corpus, "-o", model, "-q")
    return corpus, model


def test_predict_jsonl_stays_json_for_a_class_of_no_documents(run, two_classes):
    """A class that learn --forget took every document out of has probability 0: its log score
    was written as -Infinity, which strict JSON parsers (jq, JavaScript's JSON.parse) refuse."""
    corpus, model = two_classes
    run("learn", "-m", model, "--forget", "--label", "b", *sorted((corpus / "b").iterdir()), "-q")
    row = strict_json(run("predict", "-m", model, "--format", "jsonl", corpus / "b" / "0.txt").stdout)
    assert (row["label"], row["scores"]["b"], row["log_scores"]["b"]) == ("a", 0.0, None)
    assert row["log_scores"]["a"] == pytest.approx(0.0, abs=1e-12)


def test_predict_jsonl_explain_stays_json_for_a_class_of_no_documents(run, two_classes):
    """--explain's prior is the called class's prior log less the best other's: against a class
    that learn --forget emptied it is infinite, which was written as Infinity, not JSON."""
    corpus, model = two_classes

    def prior():
        out = run("predict", "-m", model, "--format", "jsonl", "--explain", "2", corpus / "a" / "1.txt").stdout
        return strict_json(out)["explain"]["prior"]

    assert prior() == pytest.approx(0.0, abs=1e-4)  # (a finite prior stays a number: two documents each)
    run("learn", "-m", model, "--forget", "--label", "b", *sorted((corpus / "b").iterdir()), "-q")
    assert prior() is None
