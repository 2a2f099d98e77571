"""Model files: exact round trip, refusal of anything that is not a whole model of ours."""
import os
import random
import pickle
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nbtext import store
from nbtext.store import vocabfile
from nbtext.errors import ModelFileError
from nbtext.model import Model
from nbtext.fastscore import FastScorer
from nbtext.settings import ModelSettings, TokenizerSettings
from nbtext.text.tokenizer import Tokenizer
from nbtext.features.vocabulary import encode_tokens

from conftest import IIR_TEST, IIR_TRAIN, ROOT


TRANSFORMED = dict(tf=True, idf=True, length_norm=True, norm=True)


def iir_model(variant="multinomial", **kw):
    tok = Tokenizer(TokenizerSettings(**kw))
    transforms = TRANSFORMED if variant == "complement+transforms" else {}
    settings = ModelSettings(variant=variant.split("+")[0], alpha=0.5, **transforms)
    m = Model.empty(tok.settings, settings, ["yes", "no"])
    m.add([tok(t) for _, t in IIR_TRAIN], [lab for lab, _ in IIR_TRAIN])
    return m


@pytest.mark.parametrize("variant", ["multinomial", "complement+transforms"])
def test_round_trip_exact(tmp_path, variant):
    m = iir_model(variant, ngram_max=2)
    m.ledger.add(b"x" * 16)
    path = tmp_path / "m.nbm"
    store.save(m, str(path))
    back = store.load(str(path))
    assert_same_model(back, m)
    # The file holds the vocabulary sorted by UTF-8 bytes; the columns follow it.
    assert back.vocab.tokens == sorted(m.vocab.tokens, key=lambda t: t.encode("utf-8", "surrogatepass"))
    assert store.encode(back) == path.read_bytes()


def assert_same_model(back, m):
    """Same classes, settings, ledger and the same counts per token (whatever the column order):
    integer state exactly, counts transformed by --tf/--length-norm to 1e-12 (NumPy's SIMD
    log1p differs in the last bit between CPUs: with AVX-512 and without)."""
    assert back.classes == m.classes and sorted(back.vocab.tokens) == sorted(m.vocab.tokens)
    cols = [m.vocab.index[t] for t in back.vocab.tokens]
    if m.settings.tf or m.settings.length_norm:
        np.testing.assert_allclose(back.feature_count, m.feature_count[:, cols], rtol=1e-12, atol=0)
    else:
        np.testing.assert_array_equal(back.feature_count, m.feature_count[:, cols])
    np.testing.assert_array_equal(back.class_count, m.class_count)
    assert back.tokenizer_settings == m.tokenizer_settings and back.settings == m.settings
    assert back.ledger == m.ledger
    if m.settings.idf:
        np.testing.assert_array_equal(back.doc_freq, m.doc_freq[cols])
        assert back.doc_freq.sum() > 0


def test_format_1_files_still_load_and_score(tmp_path):
    """tests/fixtures/format1.nbm was written by nbtext's format 1 (hash table, ids in
    first-seen order) from iir_model("complement+transforms", ngram_max=2)."""
    old = ROOT / "tests" / "fixtures" / "format1.nbm"
    m = iir_model("complement+transforms", ngram_max=2)
    m.ledger.add(b"x" * 16)
    back = store.load(str(old))
    assert back.vocab.tokens == m.vocab.tokens  # format 1 kept first-seen order
    assert_same_model(back, m)
    fast = FastScorer(str(old))
    assert fast.token_id("chinese") == m.vocab.index["chinese"] and fast.token_id("nowhere") is None
    want = m.log_proba(m.matrix([m.tokenizer(IIR_TEST)]))[0]
    np.testing.assert_allclose(np.log(fast.score(IIR_TEST)[3]), want, atol=1e-9)
    store.save(back, str(tmp_path / "new.nbm"))  # saving rewrites it as the current format
    assert store.read_container(str(tmp_path / "new.nbm"))[0]["format_version"] == store.FORMAT_VERSION


tokens_st = st.lists(st.text(st.characters(blacklist_characters="\x00"), min_size=1, max_size=30),
                     unique=True, max_size=200)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(tokens_st)
def test_front_coding_round_trips_any_vocabulary(tokens):
    fc, heads, order = vocabfile.front_code(encode_tokens(tokens))
    key = [t.encode("utf-8", "surrogatepass") for t in tokens]
    assert [key[i] for i in order] == sorted(key)
    assert vocabfile.front_decode(fc, vocabfile.BLOCK) == encode_tokens([tokens[i] for i in order])
    assert len(heads) == -(-len(tokens) // vocabfile.BLOCK)


def test_front_coding_in_pieces_gives_the_bytes_of_one_go(monkeypatch):
    """Saving codes the sorted vocabulary a piece of whole blocks at a time (for memory):
    pieces of 2 blocks must give the same bytes and block heads as one piece."""
    rng = np.random.default_rng(4)
    tokens = sorted({"".join(rng.choice(list("abcé"), size=rng.integers(1, 12))) for _ in range(500)})
    blob = encode_tokens(list(rng.permutation(tokens)))
    whole = vocabfile.front_code(blob)
    monkeypatch.setattr(vocabfile, "FRONT_CODE_PIECE", 2 * vocabfile.BLOCK)
    pieces = vocabfile.front_code(blob)
    assert len(tokens) > 4 * vocabfile.BLOCK
    assert pieces[0] == whole[0]
    np.testing.assert_array_equal(pieces[1], whole[1])
    np.testing.assert_array_equal(pieces[2], whole[2])


def test_front_coding_of_long_shared_prefixes(tmp_path):
    """Entries store at most 254 shared bytes; longer prefixes repeat the rest."""
    tokens = ["a" * 300 + "c", "a" * 300 + "b", "a" * 299, "\u00e9" * 200 + "x", "\u00e9" * 200]
    fc, _, order = vocabfile.front_code(encode_tokens(tokens))
    assert vocabfile.front_decode(fc, vocabfile.BLOCK) == encode_tokens([tokens[i] for i in (2, 1, 0, 4, 3)])
    m = Model.empty(TokenizerSettings(), ModelSettings(), ["a", "b"])
    m.add([tokens, ["x"]], ["a", "b"])
    store.save(m, str(tmp_path / "m.nbm"))
    fast, back = FastScorer(str(tmp_path / "m.nbm")), store.load(str(tmp_path / "m.nbm"))
    assert [fast.token_id(t) for t in tokens] == [back.vocab.index[t] for t in tokens]
    assert fast.token_id("a" * 300) is None


@pytest.mark.slow
@settings(max_examples=50, deadline=None)
@given(tokens_st, st.lists(st.text(min_size=1, max_size=30), max_size=20))
def test_sorted_vocabulary_finds_every_token_and_nothing_else(tmp_path_factory, tokens, others):
    m = Model.empty(TokenizerSettings(), ModelSettings(), ["a", "b"])
    m.add([tokens, ["x"]], ["a", "b"])
    path = tmp_path_factory.mktemp("v") / "m.nbm"
    store.save(m, str(path))
    back, fast = store.load(str(path)), FastScorer(str(path))
    assert all(fast.token_id(t) == back.vocab.index[t] for t in back.vocab.tokens)
    probes = others + [t[:-1] for t in tokens] + [t + "\x01" for t in tokens] + ["", "\U0010ffff" * 3]
    assert all(fast.token_id(t) is None for t in probes if t not in back.vocab.index)


CALIBRATIONS = {"none": {}, "temperature": dict(temperature=2.5),
                "whole map": dict(temperature=0.7, length_power=0.5, soft=0.4, floor=0.01)}


@pytest.mark.parametrize("calibration", CALIBRATIONS)
@pytest.mark.parametrize("variant", ["multinomial", "bernoulli", "complement", "complement+transforms"])
def test_fast_scorer_agrees_with_numpy_path(tmp_path, variant, calibration):
    """classify's pure-Python posteriors (nb.decision.calibrated) and predict's numpy ones
    (nb.calibrate.calibrated_log): the same weights and the same calibration map."""
    m = iir_model(variant)
    for name, value in CALIBRATIONS[calibration].items():
        setattr(m.decision, name, value)
    path = tmp_path / "m.nbm"
    store.save(m, str(path))
    fast = FastScorer(str(path))
    for text in (IIR_TEST, "Tokyo", "Macao Macao Beijing unknownword", "", "Tokyo Japan " * 50):
        want = m.log_proba(m.matrix([m.tokenizer(text)]))[0]
        np.testing.assert_allclose(fast.score(text)[3], np.exp(want), rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(fast.as_predict(text)[2], np.exp(want), rtol=1e-9, atol=1e-15)
    assert fast.token_id("chinese") == store.load(str(path)).vocab.index["chinese"]
    assert fast.token_id("nowhere") is None


def traced_peak(run) -> int:
    """The most memory Python's allocator (and numpy's) held at once while ``run()`` ran."""
    import tracemalloc

    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_classify_of_a_large_document_costs_what_predict_does(sample_model):
    """Issue 32: classify of a 2 MB plain-text document took 8 times predict's time and 3 times
    its memory (the pure-Python composition lists every token and n-gram, and loops over each
    distinct one and class). Past fastscore.LARGE_DOCUMENT it is scored as predict scores it:
    the same posteriors, and at most 1.5 times predict's peak of traced memory (the composition
    held 6.5 times predict's with the kernel, on this document)."""
    from nbtext.batch.score import score_chunks
    from nbtext.fastscore import LARGE_DOCUMENT
    from nbtext.read import Document

    words = [f"w{i % 997}x{i % 13}" for i in range(100000)]
    data = " ".join(words).encode()[:2 * LARGE_DOCUMENT]
    fast = FastScorer(str(sample_model))
    got = fast.score(data)
    model = store.load(str(sample_model))
    (_, proba), = score_chunks(model, [Document("big", data)])
    assert got[3] == [float(p) for p in proba[0]]
    # --explain too: the tokens the composition ranks so, with the same weights to 1e-9 (which of
    # two tokens of equal weight comes first may differ in the last bit)
    from nbtext.explain import explanation

    why = fast.explain(data, 5)
    bias, contrib, unknown, _, _ = fast.contributions(fast.tokenizer(data))
    composed = explanation(fast.classes.index(why["label"]), bias, contrib, unknown, len(contrib))
    assert why["unknown_tokens"] == unknown and why["probability"] == got[1]
    weight = dict(composed["for"] + composed["against"])
    for side in ("for", "against"):
        np.testing.assert_allclose([v for _, v in why[side]], [weight[t] for t, _ in why[side]], rtol=1e-9)
        np.testing.assert_allclose([v for _, v in why[side]], [v for _, v in composed[side][:5]], rtol=1e-9)
    classify = traced_peak(lambda: FastScorer(str(sample_model)).score(data))
    predict = traced_peak(lambda: list(score_chunks(store.load(str(sample_model)), [Document("big", data)])))
    assert classify < 1.5 * predict, (classify, predict)


@pytest.mark.slow
def test_fast_scorer_on_a_large_vocabulary(tmp_path):
    tokens = [f"tok{i}" for i in range(20000)]
    m = Model.empty(TokenizerSettings(), ModelSettings(), ["a", "b"])
    m.add([tokens[:12000], tokens[8000:]], ["a", "b"])
    store.save(m, str(tmp_path / "m.nbm"))
    fast = FastScorer(str(tmp_path / "m.nbm"))
    back = store.load(str(tmp_path / "m.nbm"))
    ids = back.vocab.lookup(tokens).tolist()  # (the model's index, asked once for all: each its id)
    assert min(ids) >= 0 and all(fast.token_id(t) == i for t, i in zip(tokens, ids))
    names = back.vocab.tokens  # (a new list of every token at each access: taken once)
    assert all(names[fast.token_id(t)] == t for t in tokens)
    assert fast.token_id("tok20000") is None and fast.token_id("tok") is None and fast.token_id("zzz") is None


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "m.nbm"
    store.save(iir_model(), str(path))
    return path


def refused(path, match):
    with pytest.raises(ModelFileError, match=match):
        store.load(str(path))
    with pytest.raises(ModelFileError, match=match):
        FastScorer(str(path))


def test_truncated_file_is_refused(saved):
    data = saved.read_bytes()
    for cut in (5, 30, len(data) // 2, len(data) - 1):
        saved.write_bytes(data[:cut])
        refused(saved, "truncated")


def test_corrupt_payload_is_refused(saved):
    data = bytearray(saved.read_bytes())
    data[-3] ^= 0xFF
    saved.write_bytes(bytes(data))
    refused(saved, "corrupt model file .payload checksum")


@pytest.mark.slow
def test_random_bytes_are_refused(saved):
    rng = random.Random(18)  # seeded: a file of random bytes starting "{" once failed CI as "JSON text"
    for _ in range(300):
        saved.write_bytes(rng.randbytes(rng.choice((30, 5000))))
        refused(saved, "not an nbtext model file")
    saved.write_bytes(b'{"a": 1, ' + rng.randbytes(5000))
    refused(saved, "not an nbtext model file")


def test_foreign_files_are_named(saved):
    for head, match in ((b'{\n  "classes": ["h\xc3\xa9', "JSON text"), (b"[1, 2, 3]", "JSON text"),
                        (b"# nbtext export\n", "text dump")):
        saved.write_bytes(head)
        refused(saved, match)


def test_newer_format_is_refused(saved):
    data = bytearray(saved.read_bytes())
    struct.pack_into("<I", data, 8, store.FORMAT_VERSION + 1)
    saved.write_bytes(bytes(data))
    refused(saved, rf"written by a newer nbtext \(model format {store.FORMAT_VERSION + 1}; "
                   rf"this nbtext reads format {store.FORMAT_VERSION}")


def test_a_damaged_format_version_is_not_read_as_an_older_format(saved):
    """The prefix's version is outside the header's checksum: 4 damaged to 3 loaded the file as
    format 3 (the fuzz test found it). The header says the version again."""
    data = bytearray(saved.read_bytes())
    for older in range(1, store.FORMAT_VERSION):
        struct.pack_into("<I", data, 8, older)
        saved.write_bytes(bytes(data))
        refused(saved, rf"corrupt model file \(format {older} in the prefix, {store.FORMAT_VERSION} in the header\)")


class Boom:
    """A pickle that, loaded, creates the file at path."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_pickle_renamed_is_refused_and_never_runs(saved, tmp_path):
    ran = tmp_path / "pickle-ran"  # (the test's own: a fixed name would be shared by tests run at once)
    saved.write_bytes(pickle.dumps(Boom(str(ran))))
    refused(saved, "a Python pickle, which nbtext never loads")
    assert not ran.exists()


def test_save_is_atomic_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "m.nbm"
    store.save(iir_model(), str(path))
    before = path.read_bytes()

    def broken_replace(a, b):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    from nbtext.errors import NbtextError
    with pytest.raises(NbtextError, match="No space left"):
        store.save(iir_model("bernoulli"), str(path))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.nbm"]


def test_a_vocabulary_that_decodes_to_a_bomb_is_refused_before_it_is_allocated():
    """A front-coded entry of 3 bytes can stand for 256 (254 shared with the token before): a
    file saying vocab_block 4096 decodes 85 times its size. Past vocabfile.MAX_EXPANSION times
    (nbtext's own files, at BLOCK 16, reach at most 13.6) it is refused, on both paths alike."""
    from nbtext.features import kernel

    head = b"\x01" + b"a" * 254 + b"\x00"
    bomb = head + b"".join(b"\xff" + bytes([98 + i % 20]) + b"\x00" for i in range(4095))  # (each shares 254)
    whole = 255 + 4095 * 256
    assert len(bomb) * vocabfile.MAX_EXPANSION < whole
    for decode in (vocabfile.front_decode, vocabfile.front_decode_numpy):
        with pytest.raises(ValueError, match="^vocabulary decodes to more bytes than its limit$"):
            decode(bomb, 4096) if decode is vocabfile.front_decode else decode(bomb, 4096, len(bomb) * 16)
    assert len(vocabfile.front_decode_numpy(bomb, 4096)) == whole  # (no limit: what it would be)
    k = kernel.compiled()
    if k is not None:
        assert k.front_decode(bomb, 4096) == vocabfile.front_decode_numpy(bomb, 4096)
    # the worst nbtext writes itself: every entry sharing 254 bytes, at BLOCK 16
    tokens = ["a" * 254 + chr(98 + i % 20) + "x" * (i // 20) for i in range(4000)]
    fc, _, _ = vocabfile.front_code(encode_tokens(tokens))
    assert vocabfile.front_decode(fc, vocabfile.BLOCK)
    assert len(encode_tokens(tokens)) < 14 * len(fc)


def test_a_stale_temporary_under_this_pid_never_blocks_a_save(tmp_path, run, sample_copy):
    """A writer killed as pid 1 (a container) left `.m.nbm.1.tmp`; the next writer, pid 1 too,
    found it "alive" and every save failed with `cannot write: File exists`. Planted here under
    the current pid's name (and in the new form, unlocked and locked), saves go on: `learn`
    through the CLI and store.save, and only the provably stale temporaries are removed."""
    import fcntl

    model = sample_copy
    pid = os.getpid()
    legacy = tmp_path / f".m.nbm.{pid}.tmp"  # (a pid that is alive: never provably stale)
    legacy.write_bytes(b"half a model")
    dead = tmp_path / f".m.nbm.{pid}-0123456789abcdef.tmp"  # (nobody holds its lock)
    dead.write_bytes(b"half a model")
    alive = tmp_path / f".m.nbm.{pid}-fedcba9876543210.tmp"  # (a writer at work holds its lock)
    alive.write_bytes(b"being written")
    with open(alive, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        before = store.load(str(model)).counts.n_documents
        r = run("learn", "-m", model, "--label", "spam", "-q", "-", input=b"Subject: hi\n\ncheap pills\n")
        assert r.exit_code == 0, r.stderr
        assert store.load(str(model)).counts.n_documents == before + 1
        store.save(iir_model(), str(tmp_path / "m.nbm"))
        assert legacy.read_bytes() == b"half a model" and alive.read_bytes() == b"being written"
        assert not dead.exists()
    store.save(iir_model(), str(tmp_path / "m.nbm"))  # (its writer gone: now stale)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["m.nbm", "m.nbm.lock", legacy.name])
