"""Text in, labels out from Python: TextClassifier trains the model `nbtext train` trains and
predicts what `nbtext predict` prints; nbtext.save / nbtext.load round-trip it."""
import json
import pathlib

import numpy as np
import pytest

import nbtext
from nbtext.errors import InputError
from nbtext.read import label_directory

CORPUS = pathlib.Path(__file__).parent.parent / "data" / "corpus"
EXAMPLES = [pathlib.Path(__file__).parent.parent / "data" / n for n in ("example-spam.eml", "example-ham.eml")]


@pytest.fixture(scope="module")
def fitted():
    docs = list(label_directory(str(CORPUS)))  # (train's order: sorted)
    return nbtext.TextClassifier().fit([d.data for d in docs], [d.label for d in docs])


def test_text_classifier_trains_the_model_nbtext_train_trains(fitted, run, tmp_path, sample_model):
    nbtext.save(fitted, str(tmp_path / "lib.nbm"))  # (sample_model: `nbtext train` of CORPUS, its defaults)
    cli, lib = run("export", "-m", sample_model), run("export", "-m", tmp_path / "lib.nbm")
    assert cli.exit_code == lib.exit_code == 0
    assert len(cli.stdout) > 100_000 and lib.stdout == cli.stdout


def test_text_classifier_predicts_the_labels_and_probabilities_nbtext_predict_prints(fitted, run, sample_model):
    out = run("predict", "-m", sample_model, "--format", "jsonl", *EXAMPLES)
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    datas = [p.read_bytes() for p in EXAMPLES]
    assert fitted.classes_.tolist() == ["ham", "spam"]
    assert fitted.predict(datas).tolist() == [r["label"] for r in rows] == ["spam", "ham"]
    want = np.array([[r["log_scores"][c] for c in ("ham", "spam")] for r in rows])
    np.testing.assert_array_equal(fitted.predict_log_proba(datas), want)
    np.testing.assert_array_equal(fitted.predict_proba(datas), np.exp(want))
    # text (str) is tokenized as its bytes are
    np.testing.assert_array_equal(fitted.predict_log_proba([d.decode("latin-1") for d in datas]), want)


def test_a_saved_text_classifier_loads_as_a_model_that_predicts_alike(fitted, tmp_path):
    path = str(tmp_path / "m.nbm")
    nbtext.save(fitted, path)
    loaded = nbtext.load(path)
    docs = [p.read_bytes() for p in EXAMPLES] + ["cheap meds online", "minutes of the meeting"]
    assert loaded.predict(docs) == fitted.predict(docs).tolist()
    np.testing.assert_array_equal(loaded.predict_proba(docs), fitted.predict_proba(docs))
    again = nbtext.TextClassifier.of_model(loaded)
    assert again.predict(docs).tolist() == fitted.predict(docs).tolist()
    with pytest.raises(InputError, match="not a MultinomialNB fitted on a matrix"):
        nbtext.save(nbtext.MultinomialNB().fit([[1, 0], [0, 1]], [0, 1]), path)
    with pytest.raises(InputError, match="a document is text"):
        loaded.predict([["a", "list"]])


def test_integer_labels_in_integer_labels_out_and_a_pipeline_over_the_vectorizer():
    docs = ["cheap pills now", "lunch at noon", "buy cheap pills", "notes from lunch"] * 6
    y = np.array([1, 0, 1, 0] * 6)
    clf = nbtext.TextClassifier().fit(docs, y)
    assert clf.classes_.dtype == y.dtype and clf.predict(["cheap pills"]).tolist() == [1]
    sklearn = pytest.importorskip("sklearn.pipeline")
    pipe = sklearn.make_pipeline(nbtext.TextVectorizer(), nbtext.MultinomialNB()).fit(docs, y)
    assert pipe.predict(["cheap pills", "lunch notes"]).tolist() == [1, 0]
    vec = pipe[0]
    names = vec.get_feature_names_out().tolist()
    assert names[:3] == ["cheap", "pills", "now"] and "cheap pills" in names
    counts = pipe[-1].feature_count_
    assert counts[:, names.index("pills")].tolist() == [0, 12]
    with pytest.raises(InputError, match="got one document"):
        vec.transform("cheap pills")


def test_the_readmes_library_examples_run_as_written(tmp_path, monkeypatch, capsys):
    """The README's "As a library" code blocks, in order, in one namespace, in an empty
    directory: they run, and print what their comments say."""
    pytest.importorskip("sklearn", reason="the README's second example uses scikit-learn")
    readme = (pathlib.Path(__file__).parent.parent / "README.md").read_text()
    section = readme.split("### As a library\n", 1)[1].split("\n## ", 1)[0]
    blocks = [b.split("```", 1)[0] for b in section.split("```python\n")[1:]]
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "['spam']"
    assert (tmp_path / "model.nbm").is_file()
    assert namespace["search"].predict(["cheap pills"]).tolist() == [1]
    assert namespace["model"].classes == ["ham", "spam"]


def test_documents_without_a_token_are_a_value_error_as_in_scikit_learn():
    """TextClassifier.fit on texts none of which holds a token fitted a model of no token (or,
    with enough of them for calibration's folds, ended in a math domain error); scikit-learn's
    vectorizers raise a ValueError ("empty vocabulary")."""
    with pytest.raises(ValueError, match="^none of the 20 documents read has a token: nothing to train on$"):
        nbtext.TextClassifier().fit(["", "..."] * 10, ["a", "b"] * 10)
    with pytest.raises(InputError, match="^none of the 2 documents read has a token"):
        nbtext.TextClassifier().fit(["", "!"], ["a", "b"])
