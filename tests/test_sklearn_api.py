"""nbtext's estimators as scikit-learn's: its own checks, its own Naive Bayes test file, and
its tools (clone, Pipeline, GridSearchCV) on integer labels."""
import re
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

import nbtext
from nbtext.errors import InputError, NotFittedError

ESTIMATORS = ["MultinomialNB", "BernoulliNB", "ComplementNB", "GaussianNB", "CategoricalNB", "TableNB"]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_scikit_learns_check_estimator_passes(name):
    pytest.importorskip("sklearn", reason="scikit-learn is not installed: its checks cannot run")
    from sklearn.utils.estimator_checks import check_estimator

    est = getattr(nbtext, name)()
    warnings.simplefilter("ignore")  # (scikit-learn's notes: not its BaseEstimator; pandas checks skipped)
    try:
        results = check_estimator(est, on_fail=None, expected_failed_checks=_failing_in_scikit_learn(est))
    except TypeError:  # (releases before 1.6: the checks one by one)
        results = []
        for e, check in check_estimator(est, generate_only=True):
            try:
                check(e)
                status, ex = "passed", None
            except Exception as caught:  # noqa: BLE001 (each check's failure is reported)
                status, ex = ("skipped" if type(caught).__name__ == "SkipTest" else "failed"), caught
            results.append({"check_name": getattr(check, "func", check).__name__, "status": status, "exception": ex})
    failed = [(r["check_name"], repr(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert failed == []
    assert len(results) > 45


def _failing_in_scikit_learn(est) -> dict:
    """{check: why} of the checks that fail in the installed scikit-learn itself, not in nbtext
    (check_estimator reports them as expected failures)."""
    import sklearn

    version = tuple(int(p) for p in re.findall(r"\d+", sklearn.__version__)[:3])
    failing = {}
    if (1, 6) <= version < (1, 7, 1) and est.__sklearn_tags__().input_tags.categorical:
        failing["check_positive_only_tag_during_fit"] = (
            "scikit-learn 1.6.0-1.7.0's check subtracts X's float mean from it in place, which numpy refuses for "
            "the integer X it makes for categorical estimators (UFuncTypeError), before fit is called; fixed in "
            "1.7.1 by https://github.com/scikit-learn/scikit-learn/pull/31556")
    return failing


def _outcomes(directory, files, python=sys.executable) -> dict:
    """{file: {test: PASSED, FAILED or ERROR}} of the test files in directory, run by one pytest."""
    run = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "sklearn.conftest", "-rA",
                          *files], cwd=directory, capture_output=True, text=True, timeout=600)
    out = {f: {} for f in files}
    for line in run.stdout.splitlines():
        m = re.match(r"(PASSED|FAILED|ERROR) ([\w.]+\.py)::(\S+)", line)
        if m and m.group(2) in out:
            out[m.group(2)][m.group(3)] = m.group(1)
    return out


@pytest.mark.slow
def test_scikit_learns_naive_bayes_test_file_passes_with_nbtexts_classes(tmp_path):
    """sklearn/tests/test_naive_bayes.py of the installed scikit-learn, with its import of the
    five classes pointed at nbtext: every test that passes with scikit-learn's own classes
    passes with nbtext's."""
    sklearn = pytest.importorskip("sklearn", reason="scikit-learn is not installed: its test file cannot run")
    import pathlib

    if tuple(int(p) for p in sklearn.__version__.split(".")[:2]) < (1, 4):
        pytest.skip(f"scikit-learn {sklearn.__version__}'s test file tests force_alpha's deprecation period "
                    "(before 1.4), which nbtext's estimators do not have: the README supports 1.4 and later")
    source = pathlib.Path(sklearn.__file__).parent / "tests" / "test_naive_bayes.py"
    if not source.exists():
        pytest.skip(f"this scikit-learn ({sklearn.__version__}) is installed without its tests")
    text = source.read_text()
    assert text.count("from sklearn.naive_bayes import (") == 1
    # (both copies in one pytest run: one interpreter imports scikit-learn once)
    shutil.copy(source, tmp_path / "test_theirs.py")
    (tmp_path / "test_ours.py").write_text(text.replace("from sklearn.naive_bayes import (", "from nbtext import ("))
    outcomes = _outcomes(tmp_path, ["test_theirs.py", "test_ours.py"])
    theirs, ours = outcomes["test_theirs.py"], outcomes["test_ours.py"]
    passing = sorted(t for t, s in theirs.items() if s == "PASSED")
    assert len(passing) > 50
    assert [t for t in passing if ours.get(t) != "PASSED"] == []


def test_grid_search_over_a_pipeline_on_integer_labels_predicts_integers():
    pytest.importorskip("sklearn", reason="scikit-learn is not installed")
    from sklearn.datasets import load_digits
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler

    X, y = load_digits(return_X_y=True)
    search = GridSearchCV(make_pipeline(MinMaxScaler(), nbtext.MultinomialNB()),
                          {"multinomialnb__alpha": [0.01, 0.1, 1.0]}, cv=5).fit(X, y)
    pred = search.predict(X)
    assert pred.dtype == y.dtype and set(np.unique(pred)) <= set(range(10))
    assert search.best_score_ > 0.8
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert search.best_estimator_[-1].classes_.tolist() == list(range(10))


def test_labels_come_back_in_ys_own_values_and_type():
    X = np.array([[1, 0], [0, 1], [2, 1], [0, 3]])
    for y in ([0, 1, 10, 1], np.array([0.0, 1.0, 10.0, 1.0]), ["b", "a", "c", "a"]):
        for est in (nbtext.MultinomialNB(), nbtext.GaussianNB(), nbtext.TableNB(), nbtext.CategoricalNB()):
            est.fit(X, y)
            assert est.classes_.tolist() == sorted(set(np.asarray(y).tolist()))
            assert est.classes_.dtype == np.asarray(y).dtype
            assert est.predict(X).dtype == np.asarray(y).dtype


def test_bad_input_is_a_value_error_naming_what_is_wrong():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(NotFittedError, match="not fitted yet"):
        nbtext.MultinomialNB().predict(X)
    assert issubclass(NotFittedError, ValueError) and issubclass(InputError, ValueError)
    for est in (nbtext.MultinomialNB(), nbtext.GaussianNB(), nbtext.CategoricalNB()):
        with pytest.raises(ValueError, match="Input X contains NaN"):
            est.fit(np.array([[np.nan, 1.0], [0.0, 1.0]]), [0, 1])
        with pytest.raises(ValueError, match="infinity"):
            est.fit(np.array([[np.inf, 1.0], [0.0, 1.0]]), [0, 1])
        with pytest.raises(ValueError, match="at least one non-zero"):
            est.fit(X, [0, 1], sample_weight=[0, 0])
        with pytest.raises(ValueError, match="Unknown label type: continuous"):
            est.fit(X, [0.5, 1.0])
    fitted = nbtext.MultinomialNB().fit(X, [0, 1])
    with pytest.raises(ValueError, match="X has 3 features, but MultinomialNB is expecting 2"):
        fitted.predict(np.ones((1, 3)))
    assert fitted.score(X, [0, 1]) == 1.0


@pytest.mark.parametrize("name", ["GaussianNB", "CategoricalNB", "TableNB"])
def test_sparse_x_to_a_dense_only_estimator_is_the_type_error_scikit_learns_raise(name):
    """A dense-only estimator refuses sparse X as scikit-learn's own do (check_array's
    TypeError, which scikit-learn 1.6's checks require), an InputError and a ValueError too;
    fitted or not, and nothing is learned."""
    sparse = pytest.importorskip("scipy.sparse")
    X = sparse.csr_matrix(np.array([[1.0, 0.0], [0.0, 2.0]]))
    est = getattr(nbtext, name)()
    for call in (lambda: est.fit(X, [0, 1]), lambda: est.fit(X.toarray(), [0, 1]).predict(X)):
        with pytest.raises(TypeError, match=f"Sparse data was passed for {name}, but dense data is required") as e:
            call()
        assert isinstance(e.value, InputError) and isinstance(e.value, ValueError)
    assert est.predict(X.toarray()).tolist() == [0, 1]
    sk = pytest.importorskip("sklearn.naive_bayes")
    with pytest.raises(TypeError, match="dense data is required"):
        sk.GaussianNB().fit(X, [0, 1])


def test_categorical_codes_are_numbers_and_count_up_to_the_largest():
    """2 and 2.0 are one category; a column of codes 0 and 3 has four categories, as
    scikit-learn's CategoricalNB counts them (max code + 1)."""
    sk = pytest.importorskip("sklearn.naive_bayes")
    X = np.array([[0, 1], [3, 1], [3, 0], [0, 0], [3, 1]])
    y = np.array([1, 1, 2, 2, 2])
    ours, theirs = nbtext.CategoricalNB().fit(X.astype(float), y), sk.CategoricalNB().fit(X, y)
    assert ours.n_categories_.tolist() == [4, 2] == theirs.n_categories_.tolist()
    for a, b in zip(ours.category_count_, theirs.category_count_):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=1e-13)
    mixed = nbtext.TableNB(categorical=[0]).fit([[2, 1.0], [2.0, 2.0], ["2", 0.5], [1, 3.0]], ["a", "a", "b", "b"])
    assert mixed.stats_.values[0] == ["2", "1"]


def test_weighted_gaussian_statistics_are_exact_sums():
    """Sample weights: whole-number weights fitted in pieces give the same numbers, bit for
    bit, as fitted at once; a weight of 2 is the row twice. Other weights: the sums of w x and
    w x^2 are exact, the sum of the weights a float (to rounding)."""
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(40, 3)), rng.integers(0, 3, 40)
    for w, exact in ((rng.integers(1, 5, 40).astype(float), True), (rng.random(40), False)):
        whole = nbtext.GaussianNB().fit(X, y, sample_weight=w)
        parts = nbtext.GaussianNB()
        for idx in np.array_split(np.arange(40), 6):
            parts.partial_fit(X[idx], y[idx], classes=[0, 1, 2], sample_weight=w[idx])
        for a, b in ((whole.theta_, parts.theta_), (whole.var_, parts.var_)):
            if exact:
                np.testing.assert_array_equal(a, b)
            else:
                np.testing.assert_allclose(a, b, rtol=1e-14)
    twice = nbtext.GaussianNB().fit(np.vstack([X, X[:5]]), np.r_[y, y[:5]])
    weighted = nbtext.GaussianNB().fit(X, y, sample_weight=np.r_[np.full(5, 2.0), np.ones(35)])
    np.testing.assert_array_equal(twice.theta_, weighted.theta_)
    np.testing.assert_array_equal(twice.var_, weighted.var_)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_dataframe_column_names_are_kept_and_checked(name):
    """feature_names_in_ from a DataFrame's columns; other names at predict refused (scikit-learn's
    check, which check_estimator runs only for its own classes)."""
    pytest.importorskip("pandas", reason="pandas is not installed: no DataFrames to check")
    from sklearn.utils.estimator_checks import check_dataframe_column_names_consistency

    check_dataframe_column_names_consistency(name, getattr(nbtext, name)())
