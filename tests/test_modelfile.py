"""Model files: exact round trip, refusal of anything that is not a whole model of ours."""
import os
import pickle
import struct

import numpy as np
import pytest

from nbtext import modelfile
from nbtext.errors import ModelFileError
from nbtext.model import Model
from nbtext.score import FastScorer
from nbtext.settings import ModelSettings, TokenizerSettings
from nbtext.tokenize import Tokenizer

from conftest import IIR_TEST, IIR_TRAIN


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
    modelfile.save(m, str(path))
    back = modelfile.load(str(path))
    assert back.classes == m.classes and back.vocab.tokens == m.vocab.tokens
    np.testing.assert_array_equal(back.feature_count, m.feature_count)
    np.testing.assert_array_equal(back.class_count, m.class_count)
    assert back.tokenizer_settings == m.tokenizer_settings and back.settings == m.settings
    assert back.ledger == m.ledger
    if m.settings.idf:
        np.testing.assert_array_equal(back.doc_freq, m.doc_freq)
        assert back.doc_freq.sum() > 0
    assert modelfile.encode(back) == path.read_bytes()


@pytest.mark.parametrize("variant", ["multinomial", "bernoulli", "complement", "complement+transforms"])
def test_fast_scorer_agrees_with_numpy_path(tmp_path, variant):
    m = iir_model(variant)
    path = tmp_path / "m.nbm"
    modelfile.save(m, str(path))
    fast = FastScorer(str(path))
    for text in (IIR_TEST, "Tokyo", "Macao Macao Beijing unknownword", ""):
        want = m.log_proba(m.matrix([m.tokenizer(text)]))[0]
        jll = fast.joint_log_likelihood(fast.tokenizer(text))
        got = np.log(fast.posteriors(jll))
        np.testing.assert_allclose(got, want, atol=1e-9)
    assert fast.token_id("chinese") == m.vocab.index["chinese"]
    assert fast.token_id("nowhere") is None


def test_fast_scorer_on_a_large_vocabulary(tmp_path):
    tokens = [f"tok{i}" for i in range(20000)]
    m = Model.empty(TokenizerSettings(), ModelSettings(), ["a", "b"])
    m.add([tokens[:12000], tokens[8000:]], ["a", "b"])
    modelfile.save(m, str(tmp_path / "m.nbm"))
    fast = FastScorer(str(tmp_path / "m.nbm"))
    assert all(fast.token_id(t) == i for i, t in enumerate(tokens))
    assert fast.token_id("tok20000") is None


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "m.nbm"
    modelfile.save(iir_model(), str(path))
    return path


def refused(path, match):
    with pytest.raises(ModelFileError, match=match):
        modelfile.load(str(path))
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


def test_random_bytes_are_refused(saved):
    saved.write_bytes(os.urandom(5000))
    refused(saved, "not an nbtext model file")


def test_newer_format_is_refused(saved):
    data = bytearray(saved.read_bytes())
    struct.pack_into("<I", data, 8, modelfile.FORMAT_VERSION + 1)
    saved.write_bytes(bytes(data))
    refused(saved, r"written by a newer nbtext \(model format 2; this nbtext reads format 1")


class Boom:
    def __reduce__(self):
        return (open, ("/tmp/nbtext-pickle-ran", "w"))


def test_pickle_renamed_is_refused_and_never_runs(saved):
    if os.path.exists("/tmp/nbtext-pickle-ran"):
        os.unlink("/tmp/nbtext-pickle-ran")
    saved.write_bytes(pickle.dumps(Boom()))
    refused(saved, "a Python pickle, which nbtext never loads")
    assert not os.path.exists("/tmp/nbtext-pickle-ran")


def test_save_is_atomic_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "m.nbm"
    modelfile.save(iir_model(), str(path))
    before = path.read_bytes()

    def broken_replace(a, b):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    from nbtext.errors import NbtextError
    with pytest.raises(NbtextError, match="No space left"):
        modelfile.save(iir_model("bernoulli"), str(path))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.nbm"]
