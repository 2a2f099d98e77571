"""The counting core: golden examples worked by hand, and scikit-learn on the same matrices."""
from fractions import Fraction as F
import math

import numpy as np
import pytest
import scipy.sparse as sp

from nbtext.nb.estimators import BernoulliNB, ComplementNB, MultinomialNB
from nbtext.settings import TokenizerSettings
from nbtext.text.tokenizer import Tokenizer
from nbtext.features.counting import count_rows
from nbtext.features.vocabulary import Vocabulary

from conftest import IIR_TEST, IIR_TRAIN


def iir_matrices():
    tok = Tokenizer(TokenizerSettings(ngram_max=1, char_ngram_min=0, char_ngram_max=0))
    vocab = Vocabulary()
    X = count_rows([tok(t) for _, t in IIR_TRAIN], vocab, grow=True).tocsr()
    Xt = count_rows([tok(IIR_TEST)], vocab, grow=False).tocsr()
    y = np.array([lab for lab, _ in IIR_TRAIN])
    return vocab, X, y, Xt


def test_multinomial_iir_example_13_1():
    vocab, X, y, Xt = iir_matrices()
    nb = MultinomialNB(alpha=1.0).fit(X, y)
    assert list(nb.classes_) == ["no", "yes"]
    c, j = vocab.index["chinese"], vocab.index["japan"]
    # P(Chinese|c) = (5+1)/(8+6) = 3/7, P(Japan|c) = 1/14, P(Chinese|~c) = 2/9 = P(Japan|~c)
    assert math.exp(nb.feature_log_prob_[1, c]) == pytest.approx(3 / 7, abs=1e-12)
    assert math.exp(nb.feature_log_prob_[1, j]) == pytest.approx(1 / 14, abs=1e-12)
    assert math.exp(nb.feature_log_prob_[0, c]) == pytest.approx(2 / 9, abs=1e-12)
    assert math.exp(nb.feature_log_prob_[0, j]) == pytest.approx(2 / 9, abs=1e-12)
    yes = F(3, 4) * F(3, 7) ** 3 * F(1, 14) ** 2   # the book's 0.0003
    no = F(1, 4) * F(2, 9) ** 3 * F(2, 9) ** 2     # the book's 0.0001
    assert round(float(yes), 4) == 0.0003 and round(float(no), 4) == 0.0001  # as printed in the book
    proba = nb.predict_proba(Xt)[0]
    assert proba[1] == pytest.approx(float(yes / (yes + no)), abs=1e-12)
    assert nb.predict(Xt)[0] == "yes"


def test_bernoulli_iir_example_13_2_by_hand():
    vocab, X, y, Xt = iir_matrices()
    nb = BernoulliNB(alpha=1.0).fit(X, y)
    # Worked by hand: P(t|c) = (df + 1) / (N_c + 2)
    p_yes = {"chinese": F(4, 5), "japan": F(1, 5), "tokyo": F(1, 5),
             "beijing": F(2, 5), "macao": F(2, 5), "shanghai": F(2, 5)}
    p_no = {"chinese": F(2, 3), "japan": F(2, 3), "tokyo": F(2, 3),
            "beijing": F(1, 3), "macao": F(1, 3), "shanghai": F(1, 3)}
    for t, i in vocab.index.items():
        assert math.exp(nb.feature_log_prob_[1, i]) == pytest.approx(float(p_yes[t]), abs=1e-12)
        assert math.exp(nb.feature_log_prob_[0, i]) == pytest.approx(float(p_no[t]), abs=1e-12)
    present = {"chinese", "japan", "tokyo"}

    def joint(prior, p):
        out = prior
        for t, v in p.items():
            out *= v if t in present else 1 - v
        return out

    yes, no = joint(F(3, 4), p_yes), joint(F(1, 4), p_no)
    assert float(yes) == pytest.approx(0.005, abs=5e-4)   # the book's figures
    assert float(no) == pytest.approx(0.022, abs=5e-4)
    assert nb.predict_proba(Xt)[0, 1] == pytest.approx(float(yes / (yes + no)), abs=1e-12)
    assert nb.predict(Xt)[0] == "no"


def test_complement_weights_by_hand():
    vocab, X, y, Xt = iir_matrices()
    nb = ComplementNB(alpha=1.0).fit(X, y)
    c = vocab.index["chinese"]
    # Class "yes" is scored against the complement, "no"'s counts: Chinese 1 of 3 tokens.
    # w = -log((1 + 1) / (3 + 6)) for class yes; for class no, from "yes" counts: (5+1)/(8+6).
    assert nb.feature_log_prob_[1, c] == pytest.approx(-math.log(2 / 9), abs=1e-12)
    assert nb.feature_log_prob_[0, c] == pytest.approx(-math.log(6 / 14), abs=1e-12)
    nbn = ComplementNB(alpha=1.0, norm=True).fit(X, y)
    logged_yes = np.log((X[y == "no"].sum(axis=0).A1 + 1) / (3 + 6))
    assert nbn.feature_log_prob_[1, c] == pytest.approx(math.log(2 / 9) / logged_yes.sum(), abs=1e-12)


def test_complement_transforms_by_hand():
    """Rennie et al.'s TF, IDF and length transforms on three documents, worked by hand.

    a: "x x y"; b: "y z", "z". N = 3 documents; df x=1, y=2, z=2.
    TF: a -> (x log 3, y log 2); b -> (y log 2, z log 2), (z log 2).
    Length (of the TF vector): a's is L = sqrt(log^2 3 + log^2 2); b's first is sqrt(2) log 2.
    So N_a = (log 3 / L, log 2 / L, 0), N_b = (0, 1/sqrt 2, 1 + 1/sqrt 2), each times IDF:
    idf x = log 3, idf y = idf z = log 3/2.
    """
    vocab = {"x": 0, "y": 1, "z": 2}
    X = sp.csr_matrix(np.array([[2, 1, 0], [0, 1, 1], [0, 0, 1]]))
    y = np.array(["a", "b", "b"])
    nb = ComplementNB(alpha=1.0, tf=True, idf=True, length_norm=True).fit(X, y)
    L, r2 = math.sqrt(math.log(3) ** 2 + math.log(2) ** 2), math.sqrt(2)
    idf = {"x": math.log(3), "y": math.log(1.5), "z": math.log(1.5)}
    n_a = {"x": math.log(3) / L * idf["x"], "y": math.log(2) / L * idf["y"], "z": 0.0}
    n_b = {"x": 0.0, "y": 1 / r2 * idf["y"], "z": (1 + 1 / r2) * idf["z"]}
    np.testing.assert_array_equal(nb.doc_freq_, [1, 2, 2])
    # Class a is weighed by its complement, b's counts, and b by a's: w = log((N_t + 1) / (sum + 3)).
    for cls, comp in ((0, n_b), (1, n_a)):
        total = sum(comp.values()) + 3
        for t, i in vocab.items():
            assert nb.feature_log_prob_[cls, i] == pytest.approx(-math.log((comp[t] + 1) / total), abs=1e-12)
    # A test document "x x x y" is transformed the same way before scoring: TF, then unit length.
    doc = np.array([math.log(4), math.log(2), 0.0])
    doc /= np.linalg.norm(doc)
    want = doc @ nb.feature_log_prob_.T
    want = np.exp(want - np.logaddexp.reduce(want))
    np.testing.assert_allclose(nb.predict_proba(sp.csr_matrix([[3, 1, 0]]))[0], want, atol=1e-12)
    # Weight normalization divides each class's logged weights by their sum.
    nbn = ComplementNB(alpha=1.0, tf=True, idf=True, length_norm=True, norm=True).fit(X, y)
    logged = -nb.feature_log_prob_
    np.testing.assert_allclose(nbn.feature_log_prob_, logged / logged.sum(axis=1, keepdims=True), atol=1e-12)


def test_complement_transforms_match_scikit_learn_on_transformed_counts():
    sk = pytest.importorskip("sklearn.naive_bayes")
    X, y = random_counts(11)
    ours = ComplementNB(alpha=0.5, tf=True).fit(X, y)
    logX = X.copy().astype(float)
    logX.data = np.log1p(logX.data)
    theirs = sk.ComplementNB(alpha=0.5).fit(logX, y)
    np.testing.assert_allclose(ours.feature_log_prob_, theirs.feature_log_prob_, atol=1e-9)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(logX), atol=1e-9)
    # IDF weighs the training counts only: scikit-learn fitted on X * idf, scoring raw X.
    ours = ComplementNB(alpha=0.5, idf=True).fit(X, y)
    df = (X > 0).sum(axis=0).A1
    idf = np.log(X.shape[0] / np.maximum(df, 1)) * (df > 0)
    theirs = sk.ComplementNB(alpha=0.5).fit(sp.csr_matrix(X.multiply(idf[None, :])), y)
    np.testing.assert_allclose(ours.feature_log_prob_, theirs.feature_log_prob_, atol=1e-9)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-9)


def test_transformed_complement_learns_and_forgets_as_sums():
    X, y = random_counts(5)
    kw = dict(alpha=0.5, tf=True, idf=True, length_norm=True)
    whole = ComplementNB(**kw).fit(X, y)
    parts = ComplementNB(**kw)
    for start in range(0, X.shape[0], 17):
        parts.partial_fit(X[start:start + 17], y[start:start + 17], classes=np.unique(y))
    np.testing.assert_allclose(whole.feature_count_, parts.feature_count_, atol=1e-12)
    np.testing.assert_array_equal(whole.doc_freq_, parts.doc_freq_)
    parts.partial_fit(X[:9], y[:9], sample_weight=-np.ones(9))
    rest = ComplementNB(**kw).fit(X[9:], y[9:])
    np.testing.assert_allclose(parts.feature_count_, rest.feature_count_, atol=1e-12)
    np.testing.assert_array_equal(parts.doc_freq_, rest.doc_freq_)
    np.testing.assert_allclose(parts.predict_proba(X), rest.predict_proba(X), atol=1e-9)


def test_transforms_need_the_complement_variant():
    from nbtext.errors import NbtextError
    from nbtext.settings import ModelSettings
    # (the library names its parameters; the command line its flags: test_operations)
    with pytest.raises(NbtextError, match="^length_norm is a Complement NB transform: it needs variant complement$"):
        ModelSettings(variant="multinomial", length_norm=True)


def random_counts(seed, n=60, v=40, k=3):
    rng = np.random.default_rng(seed)
    X = sp.random(n, v, density=0.2, random_state=seed, data_rvs=lambda m: rng.integers(1, 6, m)).tocsr()
    y = rng.choice(np.array(["a", "b", "c"][:k]), size=n)
    return X, y


@pytest.mark.parametrize("alpha", [0.01, 0.5, 1.0, 2.5])
@pytest.mark.parametrize("name", ["MultinomialNB", "BernoulliNB", "ComplementNB"])
def test_matches_scikit_learn(name, alpha):
    sk = pytest.importorskip("sklearn.naive_bayes")
    X, y = random_counts(int(alpha * 100))
    ours = {"MultinomialNB": MultinomialNB, "BernoulliNB": BernoulliNB, "ComplementNB": ComplementNB}[name]
    a = ours(alpha=alpha).fit(X, y)
    b = getattr(sk, name)(alpha=alpha, force_alpha=True).fit(X, y)
    np.testing.assert_allclose(a.feature_log_prob_, b.feature_log_prob_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(a.class_log_prior_, b.class_log_prior_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=0, atol=1e-9)
    np.testing.assert_allclose(a.predict_log_proba(X), b.predict_log_proba(X), rtol=0, atol=1e-9)
    assert (a.predict(X) == b.predict(X)).all()


@pytest.mark.parametrize("cls", [MultinomialNB, BernoulliNB, ComplementNB])
def test_fit_equals_chunked_partial_fit(cls):
    X, y = random_counts(7)
    whole = cls(alpha=0.7).fit(X, y)
    parts = cls(alpha=0.7)
    for start in range(0, X.shape[0], 13):
        parts.partial_fit(X[start:start + 13], y[start:start + 13], classes=np.unique(y))
    np.testing.assert_array_equal(whole.feature_count_, parts.feature_count_)
    np.testing.assert_array_equal(whole.class_count_, parts.class_count_)
    np.testing.assert_allclose(whole.predict_proba(X), parts.predict_proba(X), atol=1e-12)


def test_forgetting_restores_counts_and_refuses_going_negative():
    X, y = random_counts(3)
    nb = MultinomialNB().fit(X, y)
    before = nb.feature_count_.copy()
    nb.partial_fit(X[:5], y[:5])
    nb.partial_fit(X[:5], y[:5], sample_weight=-np.ones(5))
    np.testing.assert_array_equal(nb.feature_count_, before)
    fresh = MultinomialNB().fit(X[:5], y[:5])
    from nbtext.errors import NbtextError
    with pytest.raises(NbtextError, match="below zero"):
        fresh.partial_fit(X[5:], y[5:], sample_weight=-np.ones(X.shape[0] - 5))


def test_long_documents_do_not_underflow():
    X = sp.csr_matrix(np.array([[5000, 0], [0, 5000]]))
    nb = MultinomialNB().fit(X, ["a", "b"])
    p = nb.predict_proba(sp.csr_matrix(np.array([[100000, 99000]])))
    assert np.isfinite(p).all() and p[0, 0] == pytest.approx(1.0)


def test_unknown_label_in_partial_fit_is_refused():
    X, y = random_counts(1, k=2)
    nb = MultinomialNB().fit(X, y)
    from nbtext.errors import NbtextError
    with pytest.raises(NbtextError, match=r"label\(s\) \['zzz'\] in y do not exist in the initial classes"):
        nb.partial_fit(X[:1], ["zzz"])


def test_class_sums_are_the_one_hot_product():
    """Rows.column_sums_by_row_group(idx, k, w) == Y.T @ X for the weighted one-hot class
    matrix Y; token_major gives its transpose, C-ordered, with the same bits."""
    import scipy.sparse as sp

    from nbtext.features.rows import Rows

    rng = np.random.default_rng(1)
    X = sp.random(40, 30, density=0.2, format="csr", random_state=1) * 7
    X.data = np.ceil(X.data)  # counts: whole numbers, so the sums are exact in any order
    idx = rng.integers(0, 3, size=40)
    w = rng.normal(size=40)
    Y = np.zeros((40, 3))
    Y[np.arange(40), idx] = w
    sums = Rows.of(X).column_sums_by_row_group(idx, 3, w)
    np.testing.assert_allclose(sums, Y.T @ X.toarray(), rtol=1e-12)
    by_token = Rows.of(X).column_sums_by_row_group(idx, 3, w, token_major=True)
    assert by_token.flags.c_contiguous and np.array_equal(by_token, sums.T)
    Y[np.arange(40), idx] = 1.0
    np.testing.assert_array_equal(Rows.of(X).column_sums_by_row_group(idx, 3), Y.T @ X.toarray())


def test_counts_add_plus_and_merge_are_sums():
    """The spine: adding chunks at their ids, taking documents out (all or nothing) and
    merging another model's counts are additions of the same sums."""
    from nbtext.errors import NbtextError
    from nbtext.nb.counts import Counts

    X, y = random_counts(9)
    whole = Counts(np.unique(y).tolist())
    whole.add(X, list(y))
    parts, other = Counts(), Counts()
    parts.add(X[:30], list(y[:30]))
    other.add(X[30:], list(y[30:]))
    parts.merge(other)
    np.testing.assert_array_equal(parts.feature_count, whole.feature_count)
    np.testing.assert_array_equal(parts.doc_freq, whole.doc_freq)
    np.testing.assert_array_equal(parts.class_count, whole.class_count)
    less = whole.plus(X[30:], list(y[30:]), -np.ones(X.shape[0] - 30))
    first = Counts(np.unique(y).tolist())
    first.add(X[:30], list(y[:30]))
    np.testing.assert_array_equal(less.feature_count, first.feature_count)
    np.testing.assert_array_equal(less.doc_freq, first.doc_freq)
    before = first.feature_count.copy()
    with pytest.raises(NbtextError, match="below zero"):
        first.plus(X[30:], list(y[30:]), -np.ones(X.shape[0] - 30))
    np.testing.assert_array_equal(first.feature_count, before)


def test_sums_made_elsewhere_add_as_the_documents_do():
    """train's workers sum their own chunks (Counts.summed, over the chunk's own classes) and
    the parent adds them at the tokens' ids: the same counts as adding the documents, whether
    a chunk lacks a class, brings a new one, or has its columns in another order."""
    from nbtext.nb.counts import Counts

    X, y = random_counts(9)
    y = y.astype(object)
    y[40:] = "zz-late"  # (a class first seen in the last chunk, sorting after the others)
    keep = np.flatnonzero((np.arange(len(y)) < 12) | (np.arange(len(y)) >= 40) | (y != y[0]))
    X, y = X[keep], y[keep]  # (the second chunk below lacks the first document's class)
    order = np.random.default_rng(3).permutation(X.shape[1])
    parts = Counts()
    late = int(np.flatnonzero(y == "zz-late")[0])
    for lo, hi in ((0, 12), (12, late), (late, len(y))):
        summed = Counts.summed(X[lo:hi][:, order], list(y[lo:hi]))
        assert summed[0] == sorted(set(y[lo:hi]))
        parts.add_summed(summed, ids=order, width=X.shape[1])
    assert y[0] not in list(y[12:late]) and len(set(y[:late])) == 3
    whole = Counts()
    whole.add(X, list(y))
    assert parts.classes == whole.classes == sorted(set(y))
    np.testing.assert_array_equal(parts.feature_count, whole.feature_count)
    np.testing.assert_array_equal(parts.doc_freq, whole.doc_freq)
    np.testing.assert_array_equal(parts.class_count, whole.class_count)


@pytest.mark.parametrize("held", ["dense", "by token"])
@pytest.mark.parametrize("values", ["counts", "large", "fractional"])
def test_sums_sent_compacted_add_as_they_were(values, held):
    """train's workers send their chunks' sums as 16-bit whole numbers where they all are
    (Counts.compacted), and sums held by token (many classes, few tokens a document) with their
    token starts in 32 bits: added, the same counts to the bit as the float64 sums; sums that are
    not whole, or past 16 bits, go as they were."""
    from nbtext.nb.counts import Counts
    from nbtext.nb.sparse import TokenSums

    X, y = random_counts(4)
    if held == "by token":  # (the tokens of a chunk of many classes: most in one document)
        rng = np.random.default_rng(4)
        X = sp.random(60, 4000, density=0.005, random_state=4, data_rvs=lambda m: rng.integers(1, 6, m)).tocsr()
    if values == "large":
        X = X * 70000.0
    elif values == "fractional":
        X = X * 0.37
    order = np.random.default_rng(5).permutation(X.shape[1])
    plain, compact = Counts(), Counts()
    for lo, hi in ((0, 20), (20, len(y))):
        summed = Counts.summed(X[lo:hi][:, order], list(y[lo:hi]))
        small = Counts.compacted(summed)
        assert isinstance(small[1], TokenSums) is (held == "by token")
        sent = small[1].values if held == "by token" else small[1]
        assert (sent.dtype == np.uint16) is (values == "counts") and small[2].dtype == np.uint16
        if held == "by token":
            assert small[1].indptr.dtype == np.int32 and small[1] == summed[1]
        plain.add_summed(summed, ids=order, width=X.shape[1])
        compact.add_summed(small, ids=order, width=X.shape[1])
    for name in ("feature_count", "doc_freq", "class_count"):
        a, b = getattr(plain, name), getattr(compact, name)
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))


def test_a_chunk_whose_tokens_share_a_key_adds_them_at_one_id():
    """Two distinct tokens of a chunk with one 64-bit key get one id: the worker says so
    (Batch.keys_distinct), and the parent adds both columns there rather than one over the other."""
    from nbtext.features.counting import Batch
    from nbtext.features.rows import Rows
    from nbtext.features.vocabulary import Vocabulary
    from nbtext.nb.counts import Counts

    rows = Rows(np.array([1.0, 2.0, 4.0]), np.array([0, 1, 2], dtype=np.int32), np.array([0, 3]), 3)
    clash = Batch(b"a\0b\0c\0", np.array([5, 7, 5], dtype=np.uint64), rows)
    assert not clash.keys_distinct()
    assert Batch(b"a\0b\0", np.array([7, 5], dtype=np.uint64), rows).keys_distinct()
    vocab, counts = Vocabulary(), Counts()
    ids = clash.ids_in(vocab, grow=True)
    assert ids.tolist() == [0, 1, 0] and len(vocab) == 2
    counts.add_summed(Counts.summed(rows, ["x"]), ids=ids, width=2, distinct=clash.keys_distinct())
    assert counts.feature_count.tolist() == [[5.0, 2.0]]


@pytest.mark.parametrize("cls", [MultinomialNB, BernoulliNB, ComplementNB])
def test_a_scored_estimator_is_freed_without_the_garbage_collector(cls):
    """Calibration scores each fold with a throwaway estimator: its cached linear view must not
    hold it in a reference cycle, or every fold's counts and weights stay in memory until the
    collector runs (train's peak RSS on spamassassin-2002: 291 MiB instead of ~120)."""
    import gc
    import weakref

    _, X, y, Xt = iir_matrices()
    gc.disable()
    try:
        est = cls().fit(X, y)
        est.predict_proba(Xt)  # (caches the linear view)
        gone = weakref.ref(est)
        del est
        assert gone() is None
    finally:
        gc.enable()


@pytest.mark.slow
@pytest.mark.parametrize("cls,params", [
    (MultinomialNB, {}), (BernoulliNB, {}), (ComplementNB, {}), (ComplementNB, {"norm": True}),
    (ComplementNB, {"idf": True, "tf": True}), (ComplementNB, {"idf": True, "norm": True, "length_norm": True})])
@pytest.mark.parametrize("piece", [1 << 16, 7])
def test_a_folds_model_at_its_columns_is_the_whole_fold_models(cls, params, piece, monkeypatch):
    """Calibration scores each fold by fold_linear, at the fold's own columns: the weights,
    bias and scores are the fold model's (without). Bit for bit where a fold's sums over the
    vocabulary are made over it (Bernoulli; Complement with idf); where they are the whole
    model's less the fold's columns' part (multinomial, Complement without idf), rounded in
    another order, to 1e-12."""
    import nbtext.nb.estimators as estimators
    from nbtext.features.rows import Rows

    monkeypatch.setattr(estimators, "_PIECE", piece)  # (sums made a piece of tokens at a time)
    rng = np.random.default_rng(7)
    for k, V, n in ((2, 1, 12), (3, 300, 60), (9, 1500, 90)):
        dense = rng.poisson(0.4, (n, V)) * (rng.random((n, V)) < 0.3)
        y = np.array([f"c{i % k}" for i in range(n)])
        rng.shuffle(y)
        X = Rows.of(dense.astype(float))
        test = rng.random(n) < 0.3
        Xf, yf = X[test], y[test]
        cols, local = np.unique(Xf.indices, return_inverse=True)
        Xl = Rows(Xf.data, local, Xf.indptr, len(cols))
        with np.errstate(invalid="ignore", divide="ignore"):  # (a 1-token vocabulary's weights)
            est = cls(alpha=0.5, **params).fit(X, y)
            whole = est.without(Xf, yf)
            ref = whole.linear()
            got, seen = est.fold_linear(Xl, yf, cols)
            scores, expected = got.jll(Xl), ref.jll(Xf)
        exact = cls is BernoulliNB or params.get("idf") or V < 2
        same = ((lambda a, b: np.array_equal(a, b, equal_nan=True)) if exact else  # (nan: a 1-token Bernoulli)
                (lambda a, b: np.allclose(a, b, rtol=1e-12, atol=0)))
        assert same(got.W, ref.W[:, cols])
        assert all(same(a, b) for a, b in zip(got.bias_terms, ref.bias_terms))
        assert same(scores, expected)
        assert np.array_equal(seen, (whole.feature_count_.sum(axis=0) > 1e-9)[cols])


@pytest.mark.parametrize("cls,params", [
    (MultinomialNB, {}), (BernoulliNB, {}), (ComplementNB, {}),
    (ComplementNB, {"idf": True, "tf": True}), (ComplementNB, {"norm": True, "length_norm": True})])
def test_adding_a_fold_at_its_own_columns_is_partial_fit_bit_for_bit(cls, params):
    """add_at (calibration fits a sample's counts fold by fold at each fold's own columns) gives
    the counts partial_fit gives over the whole vocabulary, to the last bit, transformed
    counts too: a token's sums add the same entries in the same order."""
    from nbtext.features.rows import Rows
    from nbtext.nb.counts import Counts

    rng = np.random.default_rng(11)
    for k, V, n in ((2, 40, 30), (3, 500, 80)):
        dense = rng.poisson(0.6, (n, V)) * (rng.random((n, V)) < 0.3)
        y = np.array([f"c{i % k}" for i in range(n)])
        X = Rows.of(dense.astype(float))
        folds = rng.integers(0, 4, n)
        ref, got = cls(alpha=0.5, **params), cls(alpha=0.5, **params)
        ref.counts_, got.counts_ = Counts(sorted(set(y)), V), Counts(sorted(set(y)), V)
        for f in range(4):
            Xf, yf = X[folds == f], y[folds == f]
            ref.partial_fit(Xf, yf)
            local, cols = X.own_columns(folds == f)
            got.add_at(local, yf, cols)
        assert got.counts_.width == ref.counts_.width
        assert np.array_equal(got.feature_count_, ref.feature_count_)
        assert np.array_equal(got.counts_.doc_freq, ref.counts_.doc_freq)
        assert np.array_equal(got.class_count_, ref.class_count_)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_rows_added_at_ids_are_numpys_fancy_add(k):
    """counts.add_rows_at (train's reduce: a chunk's sums added at its ids; two classes as
    complex numbers) gives numpy's a[rows, cols] += values to the bit, for a subset of the
    columns too, and leaves every other element alone."""
    from nbtext.nb.counts import add_rows_at

    rng = np.random.default_rng(k)
    a = rng.random((300, k)) * 10.0 ** rng.integers(-3, 9, (300, k))
    rows = rng.choice(300, 120, replace=False)
    values = rng.random((120, k)) * 10.0 ** rng.integers(-3, 9, (120, k))
    want, got = a.copy(), a.copy()
    want[rows, :k] += values
    add_rows_at(got, rows, values)
    assert np.array_equal(got, want)
    columns = rng.permutation(k)[:max(1, k - 1)]
    want, got = a.copy(), a.copy()
    want[rows[:, None], columns[None, :]] += values[:, :len(columns)]
    add_rows_at(got, rows, np.ascontiguousarray(values[:, :len(columns)]), columns)
    assert np.array_equal(got, want)


def test_rows_taken_as_pairs_are_numpys_take():
    """counts.take_rows (the counts put in the file's order, a fold's counts at its columns):
    np.take along the rows, bit for bit (-0.0, nan), for two float64 columns gathered as
    complex pairs and for every other shape as numpy takes them."""
    from nbtext.nb.counts import take_rows

    rng = np.random.default_rng(7)
    for shape in [(50, 2), (50, 3), (50, 1), (0, 2)]:
        a = rng.normal(size=shape)
        if a.size:
            a.flat[:3] = [-0.0, np.nan, np.inf]
        rows = rng.integers(0, max(shape[0], 1), 80) if shape[0] else np.zeros(0, dtype=np.int64)
        for arr in (a, a[::2], a.astype(np.float32)):
            got, want = take_rows(arr, rows[rows < arr.shape[0]]), np.take(arr, rows[rows < arr.shape[0]], axis=0)
            assert got.shape == want.shape and got.dtype == want.dtype
            assert got.tobytes() == want.tobytes()


def test_documents_per_token_past_2_31_are_kept_exactly():
    """Counts keep a token's documents as int32 while they are whole, and whole sample weights
    of 1e9 (scikit-learn's partial_fit takes any) summed them past 2**31: a token of 6e9
    documents' weight had 1705032704, and idf weighed it so, silently. Past what int32 holds,
    they are float64, as a model file keeps them."""
    X = np.array([[1, 0], [0, 1], [1, 1]])
    parts = ComplementNB(idf=True)
    for _ in range(3):
        parts.partial_fit(X, ["a", "b", "a"], classes=["a", "b"], sample_weight=[1e9, 1e9, 1e9])
    assert parts.doc_freq_.tolist() == [6e9, 6e9]
    whole = ComplementNB(idf=True).fit(np.vstack([X] * 3), ["a", "b", "a"] * 3, sample_weight=[1e9] * 9)
    assert whole.doc_freq_.tolist() == [6e9, 6e9]
    assert np.array_equal(parts.predict_log_proba(X), whole.predict_log_proba(X))
