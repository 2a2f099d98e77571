"""The decision layer (nbtext.nb.layer): its solver against liblinear's, its two scoring paths,
its refit by calibrate after merge, older files without it, and damaged files with it."""
from __future__ import annotations

import json
import math
import re
import shutil
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import DATA, implementation, need_shared, predicts_as_recorded
from test_kernel import compiled
from nbtext import store
from nbtext.fastscore import FastScorer
from nbtext.features.rows import Rows
from nbtext.nb.layer import solve_squared_hinge
from nbtext.store import codec

FIXTURES = DATA.parent / "tests" / "fixtures"


def problem(seed: int, n: int = 80, v: int = 30, j: int = 1):
    """Sublinear-tf rows, per-class ratios and +-1 labels that the rows partly tell."""
    rng = np.random.default_rng(seed)
    counts = rng.poisson(0.4, (n, v)).astype(float)
    counts[np.arange(n), rng.integers(0, v, n)] += 1  # (no empty row)
    A = np.where(counts > 0, 1.0 + np.log(np.maximum(counts, 1.0)), 0.0)
    R = rng.normal(size=(v, j))
    score = A @ rng.normal(size=(v, j)) + rng.normal(scale=0.5, size=(n, j))
    Y = np.where(score > np.median(score, axis=0), 1.0, -1.0)
    import scipy.sparse as sp

    return Rows.of(sp.csr_matrix(A)), A, R, Y


@pytest.mark.parametrize("j", [1, 3], ids=["one-svm", "three-svms"])
def test_the_solver_fits_liblinears_squared_hinge_svm(j):
    """solve_squared_hinge, run to convergence, gives scikit-learn's LinearSVC (liblinear's
    dual solver, bias penalised as a feature of value 1) on the same unit-length rows A r_j:
    the same weights and bias to 1e-4, for the two-class path and the vectorised one."""
    from sklearn.svm import LinearSVC

    rows, A, R, Y = problem(seed=j, j=j)
    W, b = solve_squared_hinge(rows, R, Y, C=1.0, epochs=5000, tol=1e-7)
    for c in range(j):
        Z = A * R[:, c]
        Z /= np.linalg.norm(Z, axis=1, keepdims=True)
        svc = LinearSVC(C=1.0, loss="squared_hinge", dual=True, tol=1e-10, max_iter=200000).fit(Z, Y[:, c])
        np.testing.assert_allclose(W[:, c], svc.coef_[0], atol=1e-4)
        assert b[c] == pytest.approx(svc.intercept_[0], abs=1e-4)


def test_the_solver_is_seeded():
    rows, _, R, Y = problem(seed=5, j=3)
    first = solve_squared_hinge(rows, R, Y, C=1.0, seed=1)
    again = solve_squared_hinge(rows, R, Y, C=1.0, seed=1)
    assert all(np.array_equal(x, y) for x, y in zip(first, again))


@pytest.mark.parametrize("j", [1, 4], ids=["one-svm", "four-svms"])
def test_the_kernels_passes_fit_the_references_weights(j):
    """The compiled kernel's passes (nbtext/_c/layer.c) and the numpy reference's, on the same
    rows, seed and passes: the same orders and steps, so the same weights and biases to 1e-12
    (of weights of order 1), stopped early by the tolerance or by the passes."""
    from test_kernel import compiled

    compiled()
    rows, _, R, Y = problem(seed=10 + j, n=300, v=60, j=j)
    for epochs, tol in ((8, 0.1), (3, 1e-9), (400, 1e-6)):
        with implementation("python"):
            W, b = solve_squared_hinge(rows, R, Y, C=1.0, seed=3, epochs=epochs, tol=tol)
        with implementation("c"):
            Wc, bc = solve_squared_hinge(rows, R, Y, C=1.0, seed=3, epochs=epochs, tol=tol)
        assert np.abs(W).max() > 0.1
        np.testing.assert_allclose(Wc, W, rtol=0, atol=1e-12)
        np.testing.assert_allclose(bc, b, rtol=0, atol=1e-12)


def three_topics(tmp_path, per_class: int = 30):
    """debian-sections' first descriptions of three sections, as a label directory."""
    root = tmp_path / "topics"
    for label in ("games", "mail", "science"):
        (root / label).mkdir(parents=True)
        for f in sorted(need_shared("debian-sections", label).iterdir())[:per_class]:
            shutil.copy(f, root / label / f.name)
    return root


def test_a_default_model_has_the_layer_and_classify_scores_as_predict(run, sample_model, tmp_path):
    """Trained with default options, a model holds the layer (format 7); classify's float path
    (fastscore, no numpy) gives predict's posteriors to 1e-9, for two classes (one SVM) and
    for three (one a class), and the layer moves the posteriors (it is not a no-op)."""
    topics = three_topics(tmp_path)
    assert run("train", topics, "-q", "-o", tmp_path / "topics.nbm").exit_code == 0
    for path, docs in ((sample_model, sorted((DATA / "corpus" / "spam").iterdir())[:15]),
                       (tmp_path / "topics.nbm", sorted((topics / "mail").iterdir())[:15])):
        assert store.read_container(str(path))[0]["format_version"] == store.FORMAT_VERSION == 7
        model, fast = store.load(str(path)), FastScorer(str(path))
        assert model.layer is not None and fast.layer is not None
        datas = [d.read_bytes() for d in docs]
        proba = model.predict_proba(datas)
        for data, p in zip(datas, proba):
            assert fast.score(data)[3] == pytest.approx(list(p), rel=1e-9, abs=1e-12)
        layer, model.layer = model.layer, None
        assert np.abs(model.document_log_proba(datas) - np.log(proba)).max() > 1.0
        model.layer = layer


def test_the_kernels_one_pass_scores_as_numpys_products(run, tmp_path):
    """predict's scores of a model of three classes (counts held by token) by the kernel's one
    pass over each document's entries (NB's product and the layer's sums together:
    nbtext/_c/layer.c layer_scores) are the numpy path's (NB's product, then the layer's three
    products) to 1e-12, and the kernel's pass is the one taken; documents with no known token
    get the calibrated prior on both."""
    from test_kernel import compiled

    from nbtext.features.rows import Rows

    compiled()
    topics = three_topics(tmp_path)
    assert run("train", topics, "-q", "-o", tmp_path / "topics.nbm").exit_code == 0
    model = store.load(str(tmp_path / "topics.nbm"))
    datas = [f.read_bytes() for label in ("games", "mail", "science") for f in sorted((topics / label).iterdir())[:10]]
    datas += [b"", b"qqqzzz xxyyqq"]
    with implementation("c"):
        X = Rows.of(model.matrix([model.tokenizer(d) for d in datas]))
        assert model.layer.joint(model.estimator.linear(), X, model.counts) is not None
        by_kernel = model.log_proba(X)
    with implementation("python"):
        model.layer._sums = None
        assert model.layer.joint(model.estimator.linear(), X, model.counts) is None
        by_numpy = model.log_proba(X)
    np.testing.assert_allclose(by_kernel, by_numpy, rtol=0, atol=1e-12)
    assert np.abs(by_kernel[:-2] - by_kernel[-1]).max() > 1.0


def test_the_layers_parts_made_piece_by_piece_are_the_bits_made_at_once(run, tmp_path, monkeypatch):
    """predict's per-token parts of the layer (rest at each nonzero, records, rw) are made a
    piece of entries at a time (nb.sparse.PIECE): pieces of 3 entries, across tokens' ends,
    give the bits of one piece of every entry."""
    from nbtext.nb import sparse

    topics = three_topics(tmp_path)
    assert run("train", topics, "-q", "-o", tmp_path / "topics.nbm").exit_code == 0
    made = {}
    for piece in (3, 10**9):
        monkeypatch.setattr(sparse, "PIECE", piece)
        model = store.load(str(tmp_path / "topics.nbm"))
        s = model.layer.prepare(model.counts)
        made[piece] = s.rest_values, s.records, s.rw, model.estimator.linear().D.values
    assert made[3][0].size and made[3][2].size
    for a, b in zip(made[3], made[10**9]):
        np.testing.assert_array_equal(a, b)


def test_the_kernels_pass_scores_many_blocks_and_any_column_order_as_numpy(run, tmp_path):
    """The kernel's pass takes the rows a block of entries at a time, each block's entries token
    by token (nbtext/_c/bytoken.c): rows past the first block score exactly as the same rows
    alone (a row's sums add its entries in its own order whatever the blocks), and rows whose
    columns fall instead of rising (not nbtext's, a library caller's) as numpy's products."""
    from test_kernel import compiled

    compiled()
    topics = three_topics(tmp_path)
    assert run("train", topics, "-q", "-o", tmp_path / "topics.nbm").exit_code == 0
    model = store.load(str(tmp_path / "topics.nbm"))
    datas = [f.read_bytes() for label in ("games", "mail", "science") for f in sorted((topics / label).iterdir())[:10]]
    X = Rows.of(model.matrix([model.tokenizer(d) for d in datas]))
    times = (1 << 18) // len(X.data) + 2  # (past one block of the kernel's, bytoken.c's BLOCK_ENTRIES)
    lengths = np.diff(X.indptr)
    many = Rows(np.tile(X.data, times), np.tile(X.indices, times),
                np.concatenate([[0], np.cumsum(np.tile(lengths, times))]), X.shape[1])
    falling = Rows(np.concatenate([X.data[s:e][::-1] for s, e in zip(X.indptr[:-1], X.indptr[1:])]),
                   np.concatenate([X.indices[s:e][::-1] for s, e in zip(X.indptr[:-1], X.indptr[1:])]),
                   X.indptr, X.shape[1])
    with implementation("c"):
        assert model.layer.joint(model.estimator.linear(), many, model.counts) is not None
        alone, by_blocks, by_kernel = (model.log_proba(R) for R in (X, many, falling))
    with implementation("python"):
        model.layer._sums = None
        by_numpy = model.log_proba(falling)
    assert np.array_equal(by_blocks, np.tile(alone, (times, 1)))
    np.testing.assert_allclose(by_kernel, by_numpy, rtol=0, atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_the_kernels_pass_adds_each_entry_as_the_formula_says_for_any_class_width(data):
    """layer_scores's sums of documents (nbtext/_c/layer.c), tokens of every class (the loop
    without the classes' indirection) and of some, classes held in 1, 2 or 4 bytes: the same
    bits as its formula added in Python floats entry by entry in each row's order (nb += x D,
    sq += a^2 rest, sums += a^2 (1, g, g^2) for a token in the layer, dots += a rw[code];
    a = 1 + log(count), a count past the kernel's table of logs included)."""
    kernel = compiled()
    K, J = data.draw(st.integers(2, 5)), data.draw(st.integers(1, 3))
    m = data.draw(st.integers(0, 3))
    floats = st.floats(-4, 4, allow_nan=False).filter(lambda v: v != 0)
    token_classes = data.draw(st.lists(st.sampled_from(["every", "some"]).flatmap(
        lambda how: st.just(list(range(K))) if how == "every" else
        st.sets(st.integers(0, K - 1), min_size=1, max_size=K - 1).map(sorted)), min_size=1, max_size=10))
    tokens = len(token_classes)
    classes = [c for cl in token_classes for c in cl]
    s_indptr = np.concatenate([[0], np.cumsum([len(cl) for cl in token_classes])]).astype(np.int64)
    D = data.draw(st.lists(floats, min_size=len(classes), max_size=len(classes)))
    rest = data.draw(st.lists(floats, min_size=len(classes), max_size=len(classes)))
    codes = data.draw(st.lists(st.integers(-2, m - 1), min_size=tokens, max_size=tokens))
    g = data.draw(st.lists(floats, min_size=tokens, max_size=tokens))
    rw = np.asarray(data.draw(st.lists(floats, min_size=max(m, 1) * J, max_size=max(m, 1) * J))).reshape(-1, J)
    rows = data.draw(st.lists(st.sets(st.integers(0, tokens - 1)).map(sorted), min_size=1, max_size=6))
    indices = [t for r in rows for t in r]
    counts = data.draw(st.lists(st.integers(1, 300), min_size=len(indices), max_size=len(indices)))
    x = data.draw(st.lists(floats, min_size=len(indices), max_size=len(indices)))
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    n = len(rows)
    want = [np.zeros((n, K)), np.zeros((n, K)), np.zeros((n, 3)), np.zeros((n, J))]
    for r in range(n):
        for e in range(indptr[r], indptr[r + 1]):
            t, a = indices[e], math.log(counts[e]) + 1.0
            a2 = a * a
            for j in range(s_indptr[t], s_indptr[t + 1]):
                want[0][r, classes[j]] += x[e] * D[j]
                want[1][r, classes[j]] += a2 * rest[j]
            if codes[t] >= -1:
                want[2][r] += [a2, a2 * g[t], a2 * (g[t] * g[t])]
            if codes[t] >= 0:
                for j in range(J):
                    want[3][r, j] += a * rw[codes[t], j]
    f64 = partial(np.array, dtype=np.float64)
    for dtype in (np.uint8, np.uint16, np.int32):
        got = [np.zeros((n, K)), np.zeros((n, K)), np.zeros((n, 3)), np.zeros((n, J))]
        assert kernel.layer_scores(f64(counts), f64(x), np.asarray(indices, dtype=np.int32), indptr, s_indptr,
                                   np.asarray(classes, dtype=dtype), f64(D), f64(rest),
                                   np.ascontiguousarray(np.stack([g, codes], axis=1), dtype=np.float64), rw, *got)
        for a, b in zip(got, want):
            assert np.array_equal(a, b), dtype


def test_the_kernels_pass_refuses_indices_out_of_range():
    """layer_scores reads a model's arrays (a file's: checked on load, not trusted here) at the
    documents' columns: a column past the tokens, a token's nonzeros falling or past their end,
    a class past the classes and a weight row past rw are refused (False: predict's ValueError),
    arrays of the wrong sizes raise, and nothing out of range is read (the fuzzing build)."""
    from test_kernel import compiled

    kernel = compiled()
    f64 = partial(np.array, dtype=np.float64)
    good = dict(data=f64([1, 2, 1]), x=f64([1, 2, 1]), indices=np.array([0, 1, 1], dtype=np.int32),
                indptr=np.array([0, 2, 3]), s_indptr=np.array([0, 2, 3]), classes=np.array([0, 1, 1], dtype=np.uint8),
                D=f64([0.5, -0.5, 0.25]), rest=f64([0.1, 0.2, 0.3]), tokens=f64([[-1.0, 0], [-2.0, 1]]),
                rw=f64([[0.5], [-0.5]]))

    def call(**change):
        a = {**good, **change}
        n = len(a["indptr"]) - 1
        return kernel.layer_scores(*a.values(), np.zeros((n, 2)), np.zeros((n, 2)), np.zeros((n, 3)), np.zeros((n, 1)))

    assert call() is True
    for change in (dict(indices=np.array([0, 1, 2], dtype=np.int32)), dict(s_indptr=np.array([0, 2, 1])),
                   dict(s_indptr=np.array([0, 2, 4])), dict(classes=np.array([0, 2, 1], dtype=np.uint8)),
                   dict(tokens=f64([[-1.0, 0], [-2.0, 2]])), dict(tokens=f64([[-1.0, 0.5], [-2.0, 1]]))):
        assert call(**change) is False, change
    for change in (dict(x=f64([1, 2])), dict(rest=f64([0.1, 0.2])), dict(s_indptr=np.array([0, 2, 3, 3])),
                   dict(tokens=f64([-1.0, 0, -2.0]))):
        with pytest.raises(ValueError, match="wrong sizes"):
            call(**change)


def test_no_layer_is_the_calibrated_model_alone(run, tmp_path):
    """--no-layer trains the model as before the layer: the posteriors of the calibration map."""
    for flag in ("--layer", "--no-layer"):
        assert run("train", FIXTURES / "format5-sparse.tsv", flag, "-q", "-o", tmp_path / f"{flag}.nbm").exit_code == 0
    with_layer, without = store.load(str(tmp_path / "--layer.nbm")), store.load(str(tmp_path / "--no-layer.nbm"))
    assert with_layer.layer is not None and without.layer is None
    assert "layer" not in store.read_container(str(tmp_path / "--no-layer.nbm"))[0]


def test_merge_then_calibrate_fits_the_layer_train_fits(run, tmp_path):
    """merge keeps no layer (its columns and sample are the halves'); calibrate on the same
    documents refits it from the same sample: train(A + B)'s layer, its tokens the same and its
    weights and bias equal to rounding (the merged vocabulary's order sums a document's terms in
    another order), and the same printed predictions."""
    topics = three_topics(tmp_path, per_class=24)
    halves = [tmp_path / "a", tmp_path / "b"]
    for label_dir in sorted(topics.iterdir()):
        for i, f in enumerate(sorted(label_dir.iterdir())):
            dest = halves[i % 2] / label_dir.name
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, dest / f.name)
    for h in halves:
        assert run("train", h, "-q", "-o", tmp_path / f"{h.name}.nbm").exit_code == 0
    assert run("train", *halves, "-q", "-o", tmp_path / "whole.nbm").exit_code == 0
    assert run("merge", "-o", tmp_path / "merged.nbm", tmp_path / "a.nbm", tmp_path / "b.nbm").exit_code == 0
    assert store.load(str(tmp_path / "merged.nbm")).layer is None
    assert run("calibrate", "-m", tmp_path / "merged.nbm", *halves).exit_code == 0
    got, want = (store.load(str(tmp_path / name)).layer for name in ("merged.nbm", "whole.nbm"))
    assert got is not None and np.array_equal(got.ids, want.ids)
    np.testing.assert_allclose(got.weights, want.weights, rtol=1e-6, atol=1e-7)  # (float32 in the file)
    assert got.bias == pytest.approx(want.bias, rel=1e-9) and got.den == want.den and got.den_not == want.den_not

    def predicted(name):
        return run("predict", "-m", tmp_path / name, topics).stdout

    assert predicted("merged.nbm") == predicted("whole.nbm")


def test_learn_and_forget_keep_the_layer_on_its_tokens(run, tmp_path):
    """learn adds counts (the layer, derived, stays until calibrate); forget then takes the
    document's new tokens out again and the model predicts as before learning, layer and all."""
    model_path = tmp_path / "m.nbm"
    assert run("train", FIXTURES / "format5-sparse.tsv", "-q", "-o", model_path).exit_code == 0
    before = run("predict", "-m", model_path, "--input-format", "tsv", FIXTURES / "format5-sparse.tsv").stdout
    msg = tmp_path / "new.txt"
    msg.write_text("quasar pulsar star star telescope brandnewtoken\n")
    assert run("learn", "-m", model_path, "--label", "astro", msg).exit_code == 0
    assert store.load(str(model_path)).layer is not None
    assert run("learn", "-m", model_path, "--label", "astro", "--forget", msg).exit_code == 0
    assert run("predict", "-m", model_path, "--input-format", "tsv", FIXTURES / "format5-sparse.tsv").stdout == before


def test_a_format_6_file_loads_and_scores_as_before(run):
    """tests/fixtures/format6-calibrated.nbm was written by format 6, before the layer (`nbtext
    train format5-sparse.tsv` on main at 44d0687), and format6-predict.jsonl is what that
    nbtext's predict printed with it: it loads without a layer and predict and classify print the
    same."""
    old = FIXTURES / "format6-calibrated.nbm"
    assert store.read_container(str(old))[0]["format_version"] == 6
    assert store.load(str(old)).layer is None
    assert predicts_as_recorded(run, old, FIXTURES / "format5-sparse.tsv", FIXTURES / "format6-predict.jsonl") == 36


def _damaged(change):
    """codec._layer_sections with ``change`` applied to its (ids, weights) sections' arrays."""
    real = codec._layer_sections

    def sections(layer):
        (n1, t1, s1, ids), (n2, t2, s2, w) = real(layer)
        ids = np.frombuffer(ids, dtype=t1).copy()
        w = np.frombuffer(w, dtype=t2).reshape(s2).copy()
        ids, w, t1, t2 = change(ids, w, t1, t2)
        return [(n1, t1, ids.shape, ids.astype(t1).tobytes()), (n2, t2, w.shape, w.astype(t2).tobytes())]
    return sections


def _nan(ids, w, t1, t2):
    w[0, 0] = np.nan
    return ids, w, t1, t2


def _swapped(ids, w, t1, t2):
    ids[[0, 1]] = ids[[1, 0]]
    return ids, w, t1, t2


def _past(ids, w, t1, t2):
    ids[-1] = 10**6
    return ids, w, t1, t2


def _short(ids, w, t1, t2):
    return ids, w[:, :1], t1, t2


def _float_ids(ids, w, t1, t2):
    return ids, w, "<f8", t2


@pytest.mark.parametrize("change,match,classify", [
    (_nan, "layer's weights must be numbers", "layer's weights must be numbers"),
    (_swapped, "layer's tokens must be increasing ids", "layer's tokens must be increasing ids"),
    (_past, "layer's tokens must be increasing ids", "layer's tokens must be increasing ids"),
    (_short, "do not hold a token and 3 weights each", "do not hold a token and 3 weights each"),
    (_float_ids, "must be whole ids and float32 weights", "must be whole ids and float32 weights"),
], ids=["nan-weight", "ids-out-of-order", "id-past-vocabulary", "too-few-weights", "float-ids"])
def test_a_damaged_layer_is_refused(run, tmp_path, monkeypatch, change, match, classify):
    """A file whose layer sections are damaged (checksums intact) is refused by predict with
    `nbtext: error:` naming the file, and by classify (the layer at load, counts where it reads
    them); nothing is scored with it."""
    model_path = tmp_path / "m.nbm"
    assert run("train", FIXTURES / "format5-sparse.tsv", "-q", "-o", model_path).exit_code == 0
    m = store.load(str(model_path))
    first = m.vocab.tokens[int(m.layer.ids[0])]
    monkeypatch.setattr(codec, "_layer_sections", _damaged(change))
    store.save(m, str(model_path))
    monkeypatch.undo()
    r = run("predict", "-m", model_path, "--input-format", "tsv", FIXTURES / "format5-sparse.tsv")
    assert r.exit_code == 1 and r.stderr.startswith(f"nbtext: error: {model_path}: corrupt model file (")
    assert match in r.stderr and "Traceback" not in r.stderr and not r.stdout
    if classify:
        msg = tmp_path / "msg.txt"
        msg.write_text(f"{first} star\n")
        r = run("classify", "-m", model_path, msg)
        assert r.exit_code == 1 and classify in r.stderr and r.stderr.startswith("nbtext: error: ")


@pytest.mark.parametrize("field,value,match", [
    ("strength", -1, "layer strength must be a number from 0"),
    ("bias", [0.0], "layer bias must hold 3 numbers"),
    ("den", [1.0, math.inf, 2.0], "layer den must hold 3 numbers"),
    ("alpha", "1", "layer alpha must be a number"),
    ("min_count", 0.5, "layer min_count must be a whole number"),
])
def test_a_damaged_layer_header_is_refused(run, tmp_path, monkeypatch, field, value, match):
    model_path = tmp_path / "m.nbm"
    assert run("train", FIXTURES / "format5-sparse.tsv", "-q", "-o", model_path).exit_code == 0
    from nbtext.nb.layer import Layer

    m = store.load(str(model_path))
    real = Layer.header
    monkeypatch.setattr(Layer, "header", lambda self: {**real(self), field: value})
    store.save(m, str(model_path))
    for args in (("predict", "-m", model_path, "--input-format", "tsv", FIXTURES / "format5-sparse.tsv"),
                 ("classify", "-m", model_path, FIXTURES / "format5-sparse.tsv")):
        r = run(*args)
        assert r.exit_code == 1 and r.stderr.startswith(f"nbtext: error: {model_path}: corrupt model file (")
        assert match in r.stderr


def test_the_layer_is_the_same_fitted_beside_the_folds_workers(run, tmp_path):
    """With -j 2 the layer is fitted in the parent while forked workers score calibration's
    folds; with -j 1 after them: the same layer, bit for bit."""
    topics = three_topics(tmp_path, per_class=20)
    for jobs in ("1", "2"):
        assert run("train", topics, "-j", jobs, "-q", "-o", tmp_path / f"j{jobs}.nbm").exit_code == 0
    one, two = (store.load(str(tmp_path / f"j{jobs}.nbm")).layer for jobs in ("1", "2"))
    assert np.array_equal(one.ids, two.ids) and np.array_equal(one.weights, two.weights) and one.bias == two.bias


@pytest.mark.parametrize("change,match", [
    (lambda layer: layer.update(weights=[[0, "x", 1.0, 2.0]]), "layer weights must be \\[token line, 3 numbers\\]"),
    (lambda layer: layer["weights"].reverse(), "layer's tokens must be increasing ids"),
    (lambda layer: layer.update(strength=1e9), "layer strength must be a number"),
    (lambda layer: layer["weights"][0].__setitem__(0, 10**30), "OverflowError"),
    (lambda layer: layer["weights"][0].__setitem__(1, 10**400), "OverflowError"),
    (lambda layer: layer["weights"][0].__setitem__(1, 1e39), "layer's weights must be numbers from -1e\\+38 to 1e"),
], ids=["not-a-number", "ids-out-of-order", "strength", "id-past-64-bits", "weight-past-a-float",
        "weight-past-float32"])
def test_export_keeps_the_layer_and_import_checks_it(run, tmp_path, change, match):
    """export writes the layer in its settings line and import reads it back (the file again,
    byte for byte); a damaged one is refused as a malformed dump: so is one whose token line or
    weight is too large for the file's integers and float32 (not an internal error, nor a model
    written with an infinite weight that no command reads back)."""
    model_path = tmp_path / "m.nbm"
    assert run("train", FIXTURES / "format5-sparse.tsv", "-q", "-o", model_path).exit_code == 0
    dump = run("export", "-m", model_path).stdout
    (tmp_path / "m.dump").write_text(dump)
    assert run("import", tmp_path / "m.dump", "-o", tmp_path / "back.nbm").exit_code == 0
    assert (tmp_path / "back.nbm").read_bytes() == model_path.read_bytes()
    magic, settings, rest = dump.split("\n", 2)
    d = json.loads(settings)
    change(d["layer"])
    (tmp_path / "bad.dump").write_text(f"{magic}\n{json.dumps(d)}\n{rest}")
    r = run("import", tmp_path / "bad.dump", "-o", tmp_path / "bad.nbm")
    assert r.exit_code == 1 and r.stderr.startswith(f"nbtext: error: {tmp_path / 'bad.dump'}: malformed dump (")
    assert re.search(match, r.stderr) and not (tmp_path / "bad.nbm").exists()


def test_a_layer_that_weighs_no_token_is_read_back(run, tmp_path):
    """Documents whose every token is counted once give r = 0 everywhere, so the layer weighs
    no token (0 x 1 weights): train writes it, and info, predict and export read it back (the
    weights' shape is the header's, not one inferred from no numbers)."""
    corpus = tmp_path / "corpus"
    rng = np.random.default_rng(1)
    for c in ("a", "b"):
        (corpus / c).mkdir(parents=True)
        for i in range(20):
            words = ("".join(chr(97 + x) for x in rng.integers(0, 26, 10)) for _ in range(5))
            (corpus / c / f"{i}.txt").write_text(" ".join(words) + "\n")
    model_path = tmp_path / "m.nbm"
    assert run("train", corpus, "--char-ngrams", "0,0", "--ngrams", "1", "-q", "-o", model_path).exit_code == 0
    m = store.load(str(model_path))
    assert m.layer is not None and m.layer.weights.shape == (0, 1)
    r = run("info", "-m", model_path)
    assert r.exit_code == 0 and "0 tokens weighted" in r.stdout
    r = run("predict", "-m", model_path, corpus / "a")
    assert r.exit_code == 0 and [line.split("\t")[1] for line in r.stdout.splitlines()] == ["a"] * 20
    (tmp_path / "m.dump").write_text(run("export", "-m", model_path).stdout)
    assert run("import", tmp_path / "m.dump", "-o", tmp_path / "back.nbm").exit_code == 0
    assert (tmp_path / "back.nbm").read_bytes() == model_path.read_bytes()


@pytest.mark.parametrize("entry", [[1, 2], "x", None], ids=["list", "string", "null"])
@pytest.mark.parametrize("name", ["layer_ids", "layer_weights"])
def test_a_layer_section_entry_that_is_not_an_object_is_refused(run, tmp_path, name, entry):
    """A crafted section table (checksums intact) whose layer entry is not a JSON object is a
    corrupt file to info, predict and classify, not an internal error."""
    from nbtext.store.container import frame, read_container

    model_path = tmp_path / "m.nbm"
    assert run("train", FIXTURES / "format5-sparse.tsv", "-q", "-o", model_path).exit_code == 0
    header, payload = read_container(str(model_path))
    sections = [(n, s["dtype"], s["shape"], bytes(payload[s["offset"]:s["offset"] + s["length"]]))
                for n, s in header["sections"].items()]
    pieces = frame({k: v for k, v in header.items() if k not in ("sections", "payload_length", "payload_crc32")},
                   sections)
    import struct
    import zlib

    from nbtext.store.container import PREFIX

    hlen = struct.unpack_from("<Q", pieces[0], 12)[0]
    table = json.loads(pieces[0][PREFIX.size:PREFIX.size + hlen])
    table["sections"][name] = entry
    raw = json.dumps(table, sort_keys=True).encode()
    assert len(raw) <= hlen  # (the same padding: the payload stays where it was)
    raw += b" " * (hlen - len(raw))
    pieces[0] = pieces[0][:12] + struct.pack("<QI", hlen, zlib.crc32(raw)) + raw \
        + pieces[0][PREFIX.size + hlen:]
    model_path.write_bytes(b"".join(pieces))
    for args in (("info", "-m", model_path),
                 ("predict", "-m", model_path, "--input-format", "tsv", FIXTURES / "format5-sparse.tsv"),
                 ("classify", "-m", model_path, FIXTURES / "format5-sparse.tsv")):
        r = run(*args)
        assert r.exit_code == 1 and r.stderr.startswith(f"nbtext: error: {model_path}: corrupt model file (")
        assert "the layer's sections are missing" in r.stderr
