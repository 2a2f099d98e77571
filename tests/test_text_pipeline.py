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


# Inputs none of whose documents holds a token for nbtext's tokenizer and for scikit-learn's
# CountVectorizer alike (its default pattern keeps words of two characters or more, nbtext's
# single letters too: "a" is a document of tokens for one and not the other).
TOKENLESS = [[""], ["!!!"], ["", "...", " \n\t "], [b""], []]


def _raised(call, X):
    with pytest.raises(Exception) as caught:
        call(X)
    return caught.value


@pytest.mark.parametrize("X", TOKENLESS, ids=repr)
def test_a_vectorizer_fitted_on_documents_without_a_token_raises_what_scikit_learns_raises(X):
    """TextVectorizer().fit([""]) fitted a vocabulary of no token (and fit_transform made a matrix
    of no column) where scikit-learn's CountVectorizer raises a ValueError ("empty vocabulary"):
    the same exception type on the same input, in words that say what happened; a fitted
    vectorizer keeps its vocabulary, as CountVectorizer keeps its vocabulary_."""
    text = pytest.importorskip("sklearn.feature_extraction.text")
    said = ("no documents read" if not X else
            f"none of the {len(X)} document{'' if len(X) == 1 else 's'} read has a token") + \
        ": the vocabulary would be empty"
    for method in ("fit", "fit_transform"):
        theirs = _raised(getattr(text.CountVectorizer(), method), X)
        assert type(theirs) is ValueError and "empty vocabulary" in str(theirs)
        ours = _raised(getattr(nbtext.TextVectorizer(), method), X)
        assert isinstance(ours, type(theirs)) and isinstance(ours, InputError)
        assert str(ours) == said
        fitted, reference = nbtext.TextVectorizer().fit(["cheap pills"]), text.CountVectorizer().fit(["cheap pills"])
        for est in (fitted, reference):
            with pytest.raises(ValueError):
                getattr(est, method)(X)
        assert reference.get_feature_names_out().tolist() == ["cheap", "pills"]
        assert fitted.get_feature_names_out().tolist()[:2] == ["cheap", "pills"]


@pytest.mark.parametrize("X", TOKENLESS[:-1], ids=repr)
def test_a_classifier_fitted_on_documents_without_a_token_raises_what_a_scikit_learn_pipeline_raises(X):
    """TextClassifier.fit refuses as a Pipeline of CountVectorizer and MultinomialNB does, in the
    words train says it in."""
    pytest.importorskip("sklearn")
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.naive_bayes import MultinomialNB
    from sklearn.pipeline import make_pipeline

    y = ["a", "b"] * len(X)
    theirs = _raised(lambda X: make_pipeline(CountVectorizer(), MultinomialNB()).fit(X * 2, y), X)
    ours = _raised(lambda X: nbtext.TextClassifier().fit(X * 2, y), X)
    assert type(theirs) is ValueError and isinstance(ours, type(theirs))
    assert str(ours) == f"none of the {2 * len(X)} documents read has a token: nothing to train on"


def test_a_vectorizer_used_before_fit_is_not_fitted_as_in_scikit_learn():
    """transform and get_feature_names_out before fit raise scikit-learn's NotFittedError (a
    ValueError and an AttributeError), as CountVectorizer's do, and nbtext's own."""
    pytest.importorskip("sklearn")
    from sklearn.exceptions import NotFittedError as TheirNotFitted
    from sklearn.feature_extraction.text import CountVectorizer

    from nbtext.errors import NotFittedError

    for call in (lambda v: v.transform(["cheap pills"]), lambda v: v.get_feature_names_out()):
        theirs = _raised(call, CountVectorizer())
        ours = _raised(call, nbtext.TextVectorizer())
        assert isinstance(theirs, TheirNotFitted) and isinstance(ours, TheirNotFitted)
        assert isinstance(ours, NotFittedError) and isinstance(ours, (ValueError, AttributeError))
        assert str(ours) == ("This TextVectorizer instance is not fitted yet. Call 'fit' with appropriate arguments "
                             "before using this estimator.")
