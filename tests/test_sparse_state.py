"""Counts of three classes or more held by token, only where not zero (nb.sparse, docs/state.md):
the same numbers as the dense arrays, exact learn and forget, a model file in proportion to
the nonzero counts, and older files still read."""
import json

import numpy as np
import pytest
import scipy.sparse as sp

from nbtext import store
from nbtext.store import codec
from nbtext.errors import ModelFileError, NbtextError
from nbtext.fastscore import FastScorer
from nbtext.model import Model
from nbtext.nb import counts as counts_module
from nbtext.nb import sparse as sparse_module
from nbtext.nb.counts import Counts
from nbtext.nb.estimators import BernoulliNB, ComplementNB, MultinomialNB
from nbtext.settings import ModelSettings, TokenizerSettings
from nbtext.text.tokenizer import Tokenizer

from conftest import ROOT, predicts_as_recorded

FIXTURES = ROOT / "tests" / "fixtures"


def corpus(seed=1, n=300, width=500, k=6):
    X = sp.random(n, width, density=0.03, random_state=seed, format="csr")
    X.data = np.ceil(X.data * 5)
    return X, np.array([f"c{i % k}" for i in range(n)])


VARIANTS = [(MultinomialNB, {}), (MultinomialNB, {"alpha": np.linspace(0.1, 2, 500)}), (BernoulliNB, {}),
            (ComplementNB, {}), (ComplementNB, {"norm": True}), (ComplementNB, {"idf": True}),
            (ComplementNB, {"idf": True, "norm": True, "tf": True, "length_norm": True}),
            (ComplementNB, {"alpha": np.linspace(0.1, 2, 500), "norm": True})]


@pytest.mark.parametrize("cls,params", VARIANTS, ids=lambda v: getattr(v, "__name__", None) or ",".join(v) or "-")
def test_sparse_weights_are_the_dense_weights(monkeypatch, cls, params):
    """Every variant's linear view, scores and stored summary from sparse counts equal the dense
    arrays' to 1e-9 relative (the dense view: SPARSE_FROM past the classes)."""
    X, y = corpus()
    T = sp.random(40, 500, density=0.05, random_state=2, format="csr")
    T.data = np.ceil(T.data * 3)
    sparse = cls(**params).fit(X, y)
    monkeypatch.setattr(counts_module, "SPARSE_FROM", 10**9)
    dense = cls(**params).fit(X, y)
    assert sparse.counts_.sparse and not dense.counts_.sparse
    np.testing.assert_array_equal(sparse.feature_count_, dense.feature_count_)
    np.testing.assert_allclose(sparse.predict_joint_log_proba(T), dense.predict_joint_log_proba(T), rtol=1e-9)
    np.testing.assert_allclose(sparse.linear().W, dense.linear().W, rtol=1e-9, atol=1e-12)
    for key, values in dense.summary().items():
        np.testing.assert_allclose(sparse.summary()[key], values, rtol=1e-9)
    assert (sparse.predict(T) == dense.predict(T)).all()


@pytest.mark.parametrize("cls,params", VARIANTS, ids=lambda v: getattr(v, "__name__", None) or ",".join(v) or "-")
def test_weights_made_piece_by_piece_are_the_bits_made_at_once(monkeypatch, cls, params):
    """The sparse weights, their summary and the token totals are made a piece of entries at a
    time (nb.sparse.PIECE, TokenSums.pieces): pieces of 3 entries, across tokens' ends, give
    the bits one piece of every entry gives."""
    X, y = corpus()
    made = {}
    for piece in (3, 10**9):
        monkeypatch.setattr(sparse_module, "PIECE", piece)
        est = cls(**params).fit(X, y)
        assert est.counts_.sparse
        made[piece] = est.linear().W, est.summary(), est.counts_.token_sums.token_totals()
    np.testing.assert_array_equal(made[3][0], made[10**9][0])
    assert made[3][1] == made[10**9][1]
    np.testing.assert_array_equal(made[3][2], made[10**9][2])


@pytest.mark.parametrize("piece", [1, 2, sparse_module.PIECE])
def test_token_totals_of_appended_sums_past_the_width_count_every_token(monkeypatch, piece):
    """Sums appended and not folded in yet may name tokens past the width they were made with
    (settling widens them): their token totals are those of every token, as once settled."""
    monkeypatch.setattr(sparse_module, "PIECE", piece)
    for width, tokens, values, totals in [
            (3, [0, 1, 5, 1], [2.0, 3.0, 4.0, 0.5], [2.0, 3.5, 0.0, 0.0, 0.0, 4.0]),
            (0, [4], [4.0], [0.0, 0.0, 0.0, 0.0, 4.0])]:
        s = sparse_module.TokenSums(width, 2)
        s.append(np.array(tokens), np.array([0, 1, 1, 0])[:len(tokens)], np.array(values))
        got = s.token_totals()
        assert got.tolist() == totals
        assert s.width == len(totals)


def test_learn_then_forget_gives_back_the_identical_sparse_state():
    X, y = corpus()
    before = Counts()
    before.add(X[:200], list(y[:200]))
    learned = Counts()
    learned.add(X[:200], list(y[:200]))
    learned = learned.plus(X[200:], list(y[200:]), np.ones(100))
    assert learned.held() > before.held()
    back = learned.plus(X[200:], list(y[200:]), -np.ones(100))
    assert back.sparse and back.token_sums == before.token_sums  # integers exactly, no zeros kept
    for a, b in zip(back.token_sums.arrays(), before.token_sums.arrays()):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    np.testing.assert_array_equal(back.class_count, before.class_count)
    np.testing.assert_array_equal(back.doc_freq, before.doc_freq)
    with pytest.raises(NbtextError, match="below zero"):
        before.plus(X[200:], list(y[200:]), -np.ones(100))


def test_merge_of_parts_is_the_whole_and_classes_may_come_late():
    """Counts merged in any order, of parts that know only some classes (a part of two classes
    is held as an array, the whole by token), are the counts of the whole, exactly."""
    X, y = corpus(k=5)
    whole = Counts()
    whole.add(X, list(y))
    two = np.isin(y, ["c0", "c1"])
    a, b = Counts(), Counts()
    a.add(X[two], list(y[two]))
    b.add(X[~two], list(y[~two]))
    assert not a.sparse and b.sparse
    for first, second in ((a, b), (b, a)):
        merged = Counts()
        merged.merge(first)
        merged.merge(second)
        assert merged.token_sums == whole.token_sums
        np.testing.assert_array_equal(merged.doc_freq, whole.doc_freq)


def test_last_seen_is_stamped_by_counting_kept_by_forgetting_and_the_later_by_merge(tmp_path):
    X, y = corpus()
    a = Counts()
    a.today = 20000
    a.add(X[:150], list(y[:150]))
    seen = np.flatnonzero(np.asarray(X[:150].sum(axis=0))[0])
    assert (a.last_seen[seen] == 20000).all() and (np.delete(a.last_seen, seen) == 0).all()
    a.today = 20005
    later = a.plus(X[150:], list(y[150:]), np.ones(150))
    now = np.flatnonzero(np.asarray(X[150:].sum(axis=0))[0])
    assert (later.last_seen[now] == 20005).all()
    forgot = later.plus(X[150:], list(y[150:]), -np.ones(150))
    np.testing.assert_array_equal(forgot.last_seen, later.last_seen)  # (forget leaves the days)
    merged = Counts()
    merged.merge(a)
    merged.merge(later)
    np.testing.assert_array_equal(merged.last_seen, np.maximum(a.last_seen, later.last_seen))
    keep = np.arange(0, later.width, 3)
    np.testing.assert_array_equal(later.columns(keep).last_seen, later.last_seen[keep])
    # the model file keeps it, token by token
    tok = Tokenizer(TokenizerSettings())
    m = Model.empty(tok.settings, ModelSettings(), ["a", "b", "c"])
    m.counts.today = 19000
    m.add([["x", "y"], ["y", "z"], ["w"]], ["a", "b", "c"])
    m.counts.today = 19001
    m.add([["z"]], ["c"])
    store.save(m, str(tmp_path / "m.nbm"))
    back = store.load(str(tmp_path / "m.nbm"))
    assert dict(zip(back.vocab.tokens, back.counts.last_seen.tolist())) == {"w": 19000, "x": 19000, "y": 19000,
                                                                            "z": 19001}
    assert "last_seen" in store.read_container(str(tmp_path / "m.nbm"))[0]["sections"]
    # every token of one day (a model trained at once): the header says the day, no section
    m.counts.last_seen[:] = 19002
    store.save(m, str(tmp_path / "one.nbm"))
    header = store.read_container(str(tmp_path / "one.nbm"))[0]
    assert header["last_seen_day"] == 19002 and "last_seen" not in header["sections"]
    assert (store.load(str(tmp_path / "one.nbm")).counts.last_seen == 19002).all()


def test_a_bad_last_seen_day_is_refused(tmp_path, monkeypatch):
    m = three_class_model("multinomial")
    real = codec.frame
    monkeypatch.setattr(codec, "frame", lambda header, sections: real({**header, "last_seen_day": 70000}, sections))
    store.save(m, str(tmp_path / "m.nbm"))
    with pytest.raises(ModelFileError, match="last_seen_day '70000' is not a day from 0 to 65535"):
        store.load(str(tmp_path / "m.nbm"))


def twenty_classes(path, tokens_per_class: int, docs_per_class: int = 20):
    """A TSV of 20 classes whose tokens are nearly all their class's own, as words of real text
    are: tokens_per_class distinct tokens a class, a few words every class shares."""
    rng = np.random.default_rng(5)
    with open(path, "w") as f:
        for c in range(20):
            own = [f"w{c}x{i}" for i in range(tokens_per_class)]
            per_doc = tokens_per_class // docs_per_class
            for d in range(docs_per_class):
                words = own[d * per_doc:(d + 1) * per_doc] + [f"common{j}" for j in rng.integers(0, 50, 20)]
                f.write(f"class{c:02d}\t{' '.join(words)}\n")


def test_twenty_classes_of_many_tokens_train_into_state_of_their_nonzero_counts(run, tmp_path, monkeypatch):
    """20 classes x 300,000 distinct tokens: the counts would be 6,000,000 numbers dense, which
    MAX_NUMBERS (here 2,000,000) refused; held by token they are about 300,000, and the model
    file and the counts' memory grow with them, not with classes x tokens."""
    monkeypatch.setattr(counts_module, "MAX_NUMBERS", 2_000_000)
    sizes = {}
    for n in (150_000, 300_000):
        tsv = tmp_path / f"c{n}.tsv"
        twenty_classes(tsv, n // 20)
        model = tmp_path / f"c{n}.nbm"
        r = run("train", tsv, "--ngrams", "1", "--char-ngrams", "0,0", "--no-calibrate", "-o", model)
        assert r.exit_code == 0, r.stderr
        m = store.load(str(model))
        tokens = len(m.vocab)
        assert tokens >= n
        nonzero = m.counts.held()
        assert m.counts.sparse and nonzero < 1.2 * tokens  # (each token in about one class)
        # bytes per nonzero count, not per class x token: a dense u1 array alone would be 20 a token
        sections = store.read_container(str(model))[0]["sections"]
        assert sum(sections[name]["length"] for name in codec.SPARSE_SECTIONS) < 7 * nonzero
        assert model.stat().st_size < 20 * tokens
        assert m.counts.nbytes() < 30 * nonzero < 0.25 * 8 * 20 * tokens
        sizes[n] = (model.stat().st_size, m.counts.nbytes(), nonzero)
    (f1, m1, n1), (f2, m2, n2) = sizes[150_000], sizes[300_000]
    assert f2 / f1 < 1.15 * n2 / n1 and m2 / m1 < 1.15 * n2 / n1


def test_counts_past_the_bound_of_nonzero_counts_are_refused_naming_it(monkeypatch):
    monkeypatch.setattr(counts_module, "MAX_NUMBERS", 500)
    X, y = corpus()
    c = Counts()
    with pytest.raises(NbtextError, match=r"the counts would hold [0-9,]+ numbers \(nonzero counts of 6 classes "
                                          r"and 500 tokens\), more than 500"):
        c.add(X, list(y))


def three_class_model(variant, **transforms):
    tok = Tokenizer(TokenizerSettings(ngram_max=2))
    m = Model.empty(tok.settings, ModelSettings(variant=variant, alpha=0.5, **transforms), ["astro", "cook", "sail"])
    texts = [("astro", "star orbit planet telescope comet star"), ("cook", "flour butter oven sugar bake"),
             ("sail", "boat wind mast keel harbour tide"), ("astro", "galaxy nebula moon telescope light"),
             ("cook", "dough pan knife spice oven salt"), ("sail", "rope anchor deck sail wind boat")]
    m.add([tok(t) for _, t in texts], [lab for lab, _ in texts])
    return m


@pytest.mark.parametrize("variant,transforms", [("multinomial", {}), ("bernoulli", {}), ("complement", {}),
                                                ("complement", dict(tf=True, idf=True, length_norm=True, norm=True))])
def test_classify_reads_a_tokens_sparse_row_and_agrees_with_predict(tmp_path, variant, transforms):
    m = three_class_model(variant, **transforms)
    m.decision.temperature = 1.7
    path = tmp_path / "m.nbm"
    store.save(m, str(path))
    assert "counts_indptr" in store.read_container(str(path))[0]["sections"]
    fast = FastScorer(str(path))
    for text in ("telescope star wind", "oven oven flour", "unknownword", "", "boat " * 30):
        want = m.log_proba(m.matrix([m.tokenizer(text)]))[0]
        np.testing.assert_allclose(fast.score(text)[3], np.exp(want), rtol=1e-9, atol=1e-15)
    back = store.load(str(path))  # (the file's tokens sorted: the same counts by token)
    cols = [m.vocab.index[t] for t in back.vocab.tokens]
    np.testing.assert_array_equal(back.feature_count, m.feature_count[:, cols])
    assert store.encode(back) == path.read_bytes()


def last_repeated(indptr, classes):
    """The classes with the last token of two or more entries holding its first class twice."""
    i = max(i for i in range(len(indptr) - 1) if indptr[i + 1] - indptr[i] >= 2)
    out = list(classes)
    out[indptr[i] + 1] = out[indptr[i]]
    return out


def repeated_class(indptr, classes):
    """The classes with a token of two or more entries holding its first class twice."""
    i = next(i for i in range(len(indptr) - 1) if indptr[i + 1] - indptr[i] >= 2)
    out = list(classes)
    out[indptr[i] + 1] = out[indptr[i]]
    return out


@pytest.mark.parametrize("damage,match", [
    (lambda p, c, v: (p[:-1] + [p[-1] + 1], c, v), "token starts"),
    (lambda p, c, v: (p, [3] + c[1:], v), "class past the classes"),
    (lambda p, c, v: (p, c, [0] + v[1:]), "above 0"),
    (lambda p, c, v: (p, repeated_class(p, c), v), "not increasing"),
    (lambda p, c, v: (p, last_repeated(p, c), v), "not increasing"),
    (lambda p, c, v: (p, c, v), "whole numbers"),
])
@pytest.mark.parametrize("piece", [2, sparse_module.PIECE])
def test_damaged_sparse_counts_are_refused(tmp_path, monkeypatch, damage, match, piece):
    """A file whose sparse counts are not as nbtext writes them (checksums intact) is refused,
    also where the damage lies in a later piece of the check (nb.sparse.PIECE: 2 entries)."""
    monkeypatch.setattr(sparse_module, "PIECE", piece)
    m = three_class_model("multinomial")
    s = m.counts.token_sums
    p, c, v = damage(s.indptr.tolist(), s.classes.tolist(), s.values.tolist())
    classes = "<f8" if match == "whole numbers" else "|u1"
    monkeypatch.setattr(codec, "_counts_sections", lambda counts: [
        ("counts_indptr", "<u4", (len(p),), np.asarray(p, dtype="<u4").tobytes()),
        ("counts_classes", classes, (len(c),), np.asarray(c, dtype=classes).tobytes()),
        ("counts_values", "<f8", (len(v),), np.asarray(v, dtype="<f8").tobytes())])
    path = tmp_path / "m.nbm"
    store.save(m, str(path))
    with pytest.raises(ModelFileError, match=match):
        store.load(str(path))


@pytest.mark.parametrize("indptr,classes,what", [("<f8", "|u1", "token starts"), ("<f4", "|u1", "token starts"),
                                                  ("<u4", "<f8", "classes"), ("<u4", "<f4", "classes")])
def test_sparse_counts_of_a_float_type_are_refused_by_every_command(run, tmp_path, monkeypatch, indptr, classes, what):
    """Token starts or classes stored as floats (checksums intact) are refused by predict, info
    and classify alike, naming the file: classify reads a token's row from the sections as
    stored, where a float is no index."""
    m = three_class_model("multinomial")
    s = m.counts.token_sums
    monkeypatch.setattr(codec, "_counts_sections", lambda counts: [
        ("counts_indptr", indptr, s.indptr.shape, s.indptr.astype(indptr).tobytes()),
        ("counts_classes", classes, s.classes.shape, s.classes.astype(classes).tobytes()),
        ("counts_values", "<f8", s.values.shape, s.values.astype("<f8").tobytes())])
    path = tmp_path / "m.nbm"
    store.save(m, str(path))
    doc = tmp_path / "doc.txt"
    doc.write_text("star orbit telescope flour boat wind\n")
    for args in (["classify", "-m", path, doc], ["predict", "-m", path, doc], ["info", "-m", path]):
        r = run(*args)
        assert r.exit_code == 1, args
        assert r.stderr.startswith(f"nbtext: error: {path}: corrupt model file") and \
            f"the sparse counts' {what} are not whole numbers" in r.stderr, (args, r.stderr)


def test_a_format_4_file_loads_and_predicts_as_before(run, tmp_path):
    """tests/fixtures/format4-complement-idf.nbm was written by format 4 (dense counts, no
    last_seen): `nbtext train format4-train --variant complement --idf` of three classes; its
    predictions then are format4-predict.jsonl. It loads with last_seen unknown, predicts the
    same, classify agrees, and saving rewrites it in this nbtext's format holding the same counts."""
    old = FIXTURES / "format4-complement-idf.nbm"
    assert store.read_container(str(old))[0]["format_version"] == 4
    m = store.load(str(old))
    assert m.counts.sparse and (m.counts.last_seen == counts_module.UNKNOWN_DAY).all()
    assert predicts_as_recorded(run, old, FIXTURES / "format4-test.tsv", FIXTURES / "format4-predict.jsonl") == 12
    store.save(m, str(tmp_path / "new.nbm"))
    new = store.load(str(tmp_path / "new.nbm"))
    assert store.read_container(str(tmp_path / "new.nbm"))[0]["format_version"] == store.FORMAT_VERSION
    assert new.counts.token_sums == m.counts.token_sums
    np.testing.assert_array_equal(new.counts.doc_freq, m.counts.doc_freq)


@pytest.mark.parametrize("cls,params", [(MultinomialNB, {}), (ComplementNB, {}), (ComplementNB, {"tf": True})],
                         ids=["multinomial", "complement", "complement-tf"])
def test_a_folds_weights_at_its_columns_are_the_fold_models(monkeypatch, cls, params):
    """Calibration's fold of sparse counts, at the fold's columns alone (sparse_minus_at), scores
    as the whole fold model (the counts less the fold, plus()) cut to those columns: the same
    numbers (whole counts: the same bits), and it refuses documents that were not learned."""
    from nbtext.features.rows import Rows

    X, y = corpus(k=7)
    est = cls(**params).fit(X, y)
    fold = np.arange(len(y)) % 5 == 2
    Xf, cols = Rows.of(X).own_columns(fold)
    fast, seen = est.fold_linear(Xf, y[fold], cols)
    monkeypatch.setattr(cls, "_sparse_fold_linear", lambda *a: None)
    ref, ref_seen = est.fold_linear(Xf, y[fold], cols)
    assert type(fast).__name__ == type(ref).__name__ == "SparseLinear"
    np.testing.assert_array_equal(seen, ref_seen)
    if params.get("tf"):
        np.testing.assert_allclose(fast.jll(Xf), ref.jll(Xf), rtol=1e-12)
    else:
        np.testing.assert_array_equal(fast.jll(Xf), ref.jll(Xf))
    with pytest.raises(NbtextError, match="below zero"):
        est.counts_.sparse_minus_at(Xf.with_data(Xf.data * 100), est._names(y[fold]), cols)


def test_learn_then_forget_of_a_three_class_model_file_gives_back_its_bytes(run, tmp_path):
    """`nbtext learn` then `learn --forget` of the same document, on a model held by token: the
    file is byte for byte the trained one (its counts and vocabulary; its days too, unless
    learn ran on a later day than train: then the days the learned tokens got are kept)."""
    train = tmp_path / "t.tsv"
    train.write_text("".join(f"{lab}\t{text}\n" for lab, text in [
        ("astro", "star orbit planet"), ("cook", "flour butter oven"), ("sail", "boat wind mast"),
        ("astro", "galaxy telescope star"), ("cook", "dough oven salt"), ("sail", "rope anchor wind")] * 3))
    model = tmp_path / "m.nbm"
    assert run("train", train, "--no-calibrate", "-o", model).exit_code == 0
    before = model.read_bytes()
    assert "counts_indptr" in store.read_container(str(model))[0]["sections"]
    msg = tmp_path / "new.txt"
    msg.write_text("quokka telescope wind\n")
    assert run("learn", "-m", model, "--label", "astro", msg).exit_code == 0
    assert model.read_bytes() != before and "quokka" in store.load(str(model)).vocab.index
    assert run("learn", "-m", model, "--label", "astro", "--forget", msg).exit_code == 0
    back = store.load(str(model))
    (tmp_path / "before.nbm").write_bytes(before)
    trained = store.load(str(tmp_path / "before.nbm"))
    assert (back.counts.last_seen >= trained.counts.last_seen).all()
    back.counts.last_seen[:] = trained.counts.last_seen  # (the same unless learn ran on a later day)
    assert store.encode(back) == before


def test_predict_explain_of_sparse_counts_is_the_dense_ones(run, tmp_path, monkeypatch):
    """predict --explain reads the chunk's tokens' weights of the sparse view: the tokens and
    contributions the dense arrays give (to 1e-9)."""
    train = tmp_path / "t.tsv"
    train.write_text("".join(f"{lab}\t{text}\n" for lab, text in [
        ("astro", "star orbit planet"), ("cook", "flour butter oven"), ("sail", "boat wind mast"),
        ("astro", "galaxy telescope star"), ("cook", "dough oven salt"), ("sail", "rope anchor wind")] * 3))
    doc = tmp_path / "doc.txt"
    doc.write_text("a star over the oven and the wind\n")
    outs = []
    for sparse_from in (3, 10**9):
        monkeypatch.setattr(counts_module, "SPARSE_FROM", sparse_from)
        model = tmp_path / f"m{sparse_from}.nbm"
        assert run("train", train, "--no-calibrate", "-o", model).exit_code == 0
        assert store.load(str(model)).counts.sparse == (sparse_from == 3)
        r = run("predict", "-m", model, "--format", "jsonl", "--explain", "4", doc)
        assert r.exit_code == 0, r.stderr
        outs.append(json.loads(r.stdout)["explain"])
    sparse, dense = outs
    for side in ("for", "against"):
        assert [t for t, _ in sparse[side]] == [t for t, _ in dense[side]] and sparse[side]
        assert [v for _, v in sparse[side]] == pytest.approx([v for _, v in dense[side]], rel=1e-9)


def many_class_model(variant, k=200, width=20000, docs=1000, seed=3):
    """k classes over width words, Zipf-like: most words rare, many tied counts."""
    rng = np.random.default_rng(seed)
    tok = Tokenizer(TokenizerSettings(ngram_max=1, char_ngram_min=0))
    classes = [f"c{i:02d}" for i in range(k)]
    m = Model.empty(tok.settings, ModelSettings(variant=variant, alpha=0.5), classes)
    words = np.minimum(rng.zipf(1.3, size=(docs, 30)), width)
    m.add([tok(" ".join(f"w{w}" for w in row)) for row in words], [classes[i % k] for i in range(docs)])
    return m


def brute_top_tokens(model, n, min_count=5):
    """The ranking top_tokens promises, from the whole classes x tokens array."""
    W, fc = model.estimator.linear().W, model.feature_count
    totals = fc.sum(axis=0)
    eligible = totals >= min(min_count, totals.max())
    top = np.sort(W, axis=0)  # (each token's two largest weights: the largest of the other
    first, second = top[-1], top[-2]  # classes' is the second where a class holds the first)
    out = {}
    for c, name in enumerate(model.classes):
        with np.errstate(invalid="ignore"):
            llr = np.where(eligible, W[c] - np.where(W[c] == first, second, first), -np.inf)
        best = np.argsort(-llr, kind="stable")[:n]
        out[name] = [{"token": model.vocab.token(i), "llr": round(float(llr[i]), 4), "count": int(fc[c, i])}
                     for i in best if np.isfinite(llr[i])]
    return out


TOP_BLOCK_TOKENS = 50


@pytest.mark.parametrize("variant", ["multinomial", "bernoulli", "complement"])
def test_info_top_tokens_of_many_classes_are_ranked_a_block_at_a_time(variant, monkeypatch):
    """info's top tokens of a sparse model are those of the whole array (ties to the token first
    in the vocabulary), while the weights are made a few tokens at a time: the peak memory is a
    block's and the n best's (a block's tokens or fewer), not classes x tokens."""
    import tracemalloc

    from nbtext import explain
    from nbtext.nb import sparse

    m = many_class_model(variant)
    assert m.counts.sparse
    for n in (1, 10, 60):
        want = brute_top_tokens(m, n)
        assert any(len(v) == n for v in want.values())
        monkeypatch.setattr(sparse, "DENSE_BLOCK", 200 * TOP_BLOCK_TOKENS)
        tracemalloc.start()
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        got = explain.top_tokens(m, n)
        peak = tracemalloc.get_traced_memory()[1] - held
        tracemalloc.stop()
        assert got == want
        assert peak < m.feature_count.nbytes / 4 or n * 2 > TOP_BLOCK_TOKENS


@pytest.mark.parametrize("criterion", ["frequency", "chi2", "mi"])
def test_max_features_ranks_sparse_counts_a_block_of_tokens_at_a_time(criterion, monkeypatch):
    """--max-features of a sparse model keeps the tokens the whole classes x tokens array ranks
    first, from blocks of a few tokens (peak memory: a block's, not the whole array's)."""
    import tracemalloc

    from nbtext.features import selection
    from nbtext.nb import sparse
    from nbtext.settings import FeatureOptions

    c = many_class_model("multinomial").counts
    monkeypatch.setattr(sparse, "DENSE_BLOCK", 200 * 7)
    f = FeatureOptions(max_features=100, select=criterion)
    whole = np.ascontiguousarray(c.feature_count)
    want = selection.select(c.doc_freq, whole, c.class_count, f)
    np.testing.assert_allclose(selection.ranking(criterion, c.token_sums.class_blocks(), c.class_count,
                                                 c.class_totals()),
                               selection.scores(criterion, whole, c.class_count), rtol=1e-12)
    tracemalloc.start()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    got = selection.select(c.doc_freq, c.token_sums.class_blocks(), c.class_count, f, c.class_totals())
    peak = tracemalloc.get_traced_memory()[1] - held
    tracemalloc.stop()
    np.testing.assert_array_equal(got, want)
    assert len(got) == 100 and peak < whole.nbytes / 4


def test_train_keeps_max_features_of_a_sparse_model_without_its_whole_array(monkeypatch):
    """Train's end (batch.train.model_from_counts) ranks a sparse model's tokens in blocks: its
    peak memory is a small share of the classes x tokens array."""
    import tracemalloc

    from nbtext.batch.train import model_from_counts
    from nbtext.nb import sparse
    from nbtext.settings import DecisionOptions, FeatureOptions

    m = many_class_model("multinomial")
    dense_bytes = m.feature_count.nbytes
    monkeypatch.setattr(sparse, "DENSE_BLOCK", 200 * 7)
    tracemalloc.start()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    kept, cols, _ = model_from_counts(m.counts, m.vocab, m.tokenizer_settings, m.settings,
                                      FeatureOptions(max_features=100, select="chi2"), DecisionOptions(calibrate=False))
    peak = tracemalloc.get_traced_memory()[1] - held
    tracemalloc.stop()
    assert len(kept.vocab) == len(cols) == 100 and kept.counts.sparse
    assert peak < dense_bytes / 4


@pytest.mark.parametrize("transforms", [{}, {"idf": True}])
def test_a_dump_of_many_classes_imports_into_its_sparse_counts(transforms, tmp_path):
    """export then import gives back the sparse counts (and document frequencies), reading a
    token's nonzero counts only: the peak is a small share of the classes x tokens array."""
    import tracemalloc

    from nbtext.store.dump import export_lines, import_lines

    m = many_class_model("complement" if transforms else "multinomial")
    if transforms:
        m = Model(m.tokenizer_settings, ModelSettings(variant="complement", alpha=0.5, **transforms), m.vocab,
                  m.counts, m.decision)
    lines = list(export_lines(m))
    tracemalloc.start()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    back = import_lines(iter(lines), "m.dump")
    peak = tracemalloc.get_traced_memory()[1] - held
    tracemalloc.stop()
    assert back.counts.sparse and back.counts.token_sums == m.counts.token_sums
    np.testing.assert_array_equal(back.class_count, m.class_count)
    if transforms:
        np.testing.assert_array_equal(back.doc_freq, m.doc_freq)
    assert back.vocab.tokens == m.vocab.tokens
    assert list(export_lines(back)) == lines
    assert peak < m.feature_count.nbytes / 2


def test_a_format_5_file_loads_and_its_large_counts_are_saved_apart_as_format_6(run, tmp_path):
    """tests/fixtures/format5-sparse.nbm was written by format 5 (`nbtext train
    format5-sparse.tsv`, three classes, a token counted 300 times and more: every count two
    bytes). It loads with the counts this nbtext trains from the same lines and classify reads
    them; saved again (format 6), the counts are a byte each with the 45 of 255 or more (the
    token, its pairs and character n-grams) listed apart, and load, classify, learn and forget, export and import give the same counts."""
    old, lines = FIXTURES / "format5-sparse.nbm", FIXTURES / "format5-sparse.tsv"
    header = store.read_container(str(old))[0]
    assert header["format_version"] == 5 and header["sections"]["counts_values"]["dtype"] == "<u2"
    m = store.load(str(old))
    assert run("train", lines, "--no-layer", "-o", tmp_path / "new.nbm").exit_code == 0  # (the counts alone)
    new_path = tmp_path / "new.nbm"
    new = store.load(str(new_path))
    assert new.vocab.tokens == m.vocab.tokens and new.counts.token_sums == m.counts.token_sums
    np.testing.assert_array_equal(new.class_count, m.class_count)
    header = store.read_container(str(new_path))[0]
    sections = header["sections"]
    assert header["format_version"] == store.FORMAT_VERSION >= 6
    assert sections["counts_values"]["dtype"] == "|u1" and sections["counts_over"]["shape"] == [45]
    assert new_path.stat().st_size < old.stat().st_size
    assert sorted(new.counts.token_sums.values)[-4:] == [359.0, 363.0, 364.0, 377.0]
    for text in ("star star orbit", "flour oven", "boat wind tide", "nothing known"):
        assert FastScorer(str(new_path)).score(text)[3] == pytest.approx(FastScorer(str(old)).score(text)[3],
                                                                         rel=1e-12)
    msg = tmp_path / "m.txt"
    msg.write_text("star " * 40 + "quokka\n")
    assert run("learn", "-m", new_path, "--label", "astro", msg).exit_code == 0
    star = new.vocab.index["star"]
    learned = store.load(str(new_path))
    assert learned.feature_count[0, learned.vocab.index["star"]] == new.feature_count[0, star] + 40 > 255
    assert run("learn", "-m", new_path, "--label", "astro", "--forget", msg).exit_code == 0
    assert store.load(str(new_path)).counts.token_sums == new.counts.token_sums
    dump = run("export", "-m", new_path)
    assert dump.exit_code == 0
    (tmp_path / "d.txt").write_text(dump.stdout)
    assert run("import", tmp_path / "d.txt", "-o", tmp_path / "back.nbm").exit_code == 0
    assert store.load(str(tmp_path / "back.nbm")).counts.token_sums == new.counts.token_sums


def _over_sections(at, over, values_dtype="|u1"):
    """codec._values_sections replaced: the escaped bytes as nbtext writes them, ``at`` and
    ``over`` as given."""
    def sections(values):
        small = np.minimum(values, codec.ESCAPE).astype(values_dtype)
        out = [("counts_values", values_dtype, small.shape, small.tobytes())]
        if at is not None:
            out.append(("counts_over_at", "<u4", (len(at(values)),), np.asarray(at(values), dtype="<u4").tobytes()))
        out.append(("counts_over", "<u4", (len(over(values)),), np.asarray(over(values), dtype="<u4").tobytes()))
        return out
    return sections


def big(values):
    return np.flatnonzero(values >= codec.ESCAPE)


@pytest.mark.parametrize("sections,match", [
    (_over_sections(lambda v: big(v) + 1, lambda v: v[big(v)]), "not where their bytes say"),
    (_over_sections(lambda v: big(v)[:-1], lambda v: v[big(v)][:-1]), "not where their bytes say"),
    (_over_sections(lambda v: big(v), lambda v: v[big(v)] * 0 + 7), "large counts must be numbers from 255"),
    (_over_sections(None, lambda v: v[big(v)]), "counts_over_at"),
    (_over_sections(lambda v: big(v), lambda v: v[big(v)], "<u2"), "do not match their places"),
], ids=["moved", "one-missing", "small", "no-places", "wide-bytes"])
def test_damaged_large_counts_are_refused(tmp_path, monkeypatch, sections, match):
    """A file whose counts listed apart are not where its ESCAPE bytes are, or are not large, is
    refused by load (checksums intact); classify refuses it when it reads such a count."""
    m = store.load(str(FIXTURES / "format5-sparse.nbm"))
    monkeypatch.setattr(codec, "_values_sections", sections)
    path = tmp_path / "m.nbm"
    store.save(m, str(path))
    with pytest.raises(ModelFileError, match=match):
        store.load(str(path))
    if "must be numbers" in match:
        with pytest.raises(ModelFileError, match="large counts are not where their bytes say"):
            FastScorer(str(path)).score("star star")
