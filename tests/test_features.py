"""--select: how --max-features ranks tokens. Worked by hand, and against scikit-learn."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nbtext import store
from nbtext.errors import NbtextError
from nbtext.features.selection import chi2, mutual_information, scores
from nbtext.settings import FeatureOptions

from conftest import DATA

sklearn = pytest.importorskip("sklearn")
from sklearn.feature_selection import chi2 as sk_chi2  # noqa: E402
from sklearn.metrics import mutual_info_score  # noqa: E402

count_matrices = st.integers(2, 4).flatmap(lambda k: st.integers(1, 6).flatmap(lambda v: st.lists(
    st.lists(st.integers(0, 9), min_size=v, max_size=v), min_size=k * 2, max_size=k * 2).map(
    lambda rows: (np.array(rows, dtype=float), np.arange(len(rows)) % k))))


def class_counts(X, y):
    return np.vstack([X[y == c].sum(axis=0) for c in np.unique(y)])


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(count_matrices)
def test_chi2_is_scikit_learns(data):
    X, y = data
    X[:, 0] += 1  # (a token no document has is nan in both, and never ranked: min_df drops it)
    ours = chi2(class_counts(X, y), np.bincount(y))
    theirs, _ = sk_chi2(X, y)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(count_matrices)
def test_mutual_information_is_that_of_the_token_occurrences(data):
    """MI(class; occurrence is token t) over every token occurrence, as scikit-learn's
    mutual_info_score computes it on the occurrences written out one by one."""
    X, y = data
    X[0, 0] += 1  # at least one occurrence
    counts = class_counts(X, y)
    classes, tokens = np.nonzero(counts)
    times = counts[classes, tokens].astype(int)
    occ_class, occ_token = np.repeat(classes, times), np.repeat(tokens, times)
    ours = mutual_information(counts)
    for t in range(counts.shape[1]):
        assert ours[t] == pytest.approx(mutual_info_score(occ_class, occ_token == t), abs=1e-12)


def test_mutual_information_worked_by_hand():
    # two balanced classes; token 0 only in class 0, token 1 only in class 1, token 2 evenly
    counts = np.array([[2.0, 0.0, 1.0], [0.0, 2.0, 1.0]])
    # 6 occurrences: P(c) = 1/2; P(t0) = 1/3; P(c0, t0) = 1/3, P(c1, t0) = 0; P(c0, not t0) = 1/6, P(c1, not t0) = 1/2
    by_hand = (1 / 3) * math.log((1 / 3) / (1 / 2 * 1 / 3)) + (1 / 6) * math.log((1 / 6) / (1 / 2 * 2 / 3)) \
        + (1 / 2) * math.log((1 / 2) / (1 / 2 * 2 / 3))
    mi = mutual_information(counts)
    assert mi[0] == pytest.approx(by_hand, abs=1e-15) and mi[1] == pytest.approx(by_hand, abs=1e-15)
    assert mi[2] == pytest.approx(0.0, abs=1e-15)  # as likely in either class: no information
    # frequency ranks the even token with the others; both tests rank it last
    assert list(scores("frequency", counts, [1, 1])) == [2.0, 2.0, 2.0]
    assert np.argmin(scores("chi2", counts, [1, 1])) == 2


@pytest.mark.slow
@pytest.mark.parametrize("criterion", ["chi2", "mi"])
def test_train_keeps_the_best_tokens_by_the_criterion(run, tmp_path, criterion, sample_counts):
    model = tmp_path / "m.nbm"
    r = run("train", DATA / "corpus", "--select", criterion, "--max-features", "300", "--no-calibrate",
            "-o", model)
    assert r.exit_code == 0, r.stderr
    X, y, vocab = sample_counts
    counts = np.asarray(class_counts(X, y))
    if criterion == "chi2":
        ranked, _ = sk_chi2(X, y)
    else:
        ranked = mutual_information(counts)
    best = np.argsort(-ranked, kind="stable")[:300]
    assert ranked[best[-1]] > ranked[np.argsort(-ranked, kind="stable")[300]]  # no tie at the cut
    tokens = vocab.tokens  # (a list made at each call)
    assert sorted(store.load(str(model)).vocab.tokens) == sorted(tokens[i] for i in best)


def test_select_needs_max_features(run, tmp_path):
    r = run("train", DATA / "corpus", "--select", "mi", "-o", tmp_path / "m.nbm")
    assert r.exit_code == 1 and not (tmp_path / "m.nbm").exists()
    assert r.stderr == "nbtext: error: --select mi ranks tokens for --max-features: give --max-features N\n"
    with pytest.raises(NbtextError, match="^select must be one of frequency, chi2, mi, got tfidf$"):
        FeatureOptions(max_features=10, select="tfidf")
