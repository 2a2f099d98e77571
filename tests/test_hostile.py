"""Hostile files and careless runs (issue 18): writes that never replace what they must not,
model files and dumps from strangers validated field by field, inputs that make no sense
refused, streams that are closed or full, and a bounded, seeded fuzz pass over the readers,
the model loader and `import`. Each test is a regression test of a defect an attacker's probe
found."""
import json
import os
import pathlib
import platform
import signal
import random
import re
import stat
import struct
import subprocess
import sys
import zlib

import pytest

from nbtext import store
from nbtext.errors import ModelFileError, NbtextError
from nbtext.fastscore import FastScorer
from nbtext.store.dump import export_lines, import_lines

from conftest import DATA, ROOT, implementation


def nb(*args, input=None, env=None, timeout=120, capture_output=True, **kw):
    return subprocess.run([sys.executable, "-m", "nbtext", *map(str, args)], input=input, timeout=timeout,
                          capture_output=capture_output, cwd=ROOT, env={**os.environ, **(env or {})}, **kw)


@pytest.fixture(scope="module")
def tsv(tmp_path_factory):
    path = tmp_path_factory.mktemp("tsv") / "own.tsv"
    path.write_text("spam\tbuy cheap pills now\nham\tmeeting at noon\nspam\tcheap watches\nham\tlunch with bob\n")
    return path


# -- writes ----------------------------------------------------------------------------------

def test_a_write_follows_a_symlink_and_keeps_mode_and_owner(run, tsv, tmp_path):
    real, link = tmp_path / "real.nbm", tmp_path / "link.nbm"
    assert run("train", tsv, "-q", "--no-calibrate", "-o", real).exit_code == 0
    real.chmod(0o600)
    link.symlink_to(real.name)
    msg = tmp_path / "m.txt"
    msg.write_text("cheap cheap")
    assert run("learn", "-m", link, "--label", "spam", msg).exit_code == 0
    assert link.is_symlink() and os.readlink(link) == "real.nbm"
    assert store.load(str(real)).n_documents == 5
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    for args in (["train", tsv, "-q", "-o", link], ["merge", "-o", link, real],
                 ["import", "-", "-o", link]):
        before = real.read_bytes()
        dump = "\n".join(export_lines(store.load(str(real))))
        r = run(*args, input=dump if "import" in args else None)
        assert r.exit_code in (0, 1), r.output
        assert link.is_symlink() and stat.S_IMODE(real.stat().st_mode) == 0o600, args
        assert r.exit_code == 0 or real.read_bytes() == before


def test_a_new_model_file_gets_the_umask_mode(run, tsv, tmp_path):
    old = os.umask(0o027)
    try:
        assert run("train", tsv, "-q", "--no-calibrate", "-o", tmp_path / "m.nbm").exit_code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "m.nbm").stat().st_mode) == 0o640


@pytest.mark.parametrize("target", ["/dev/null", "dir", "fifo"])
def test_only_a_regular_file_is_ever_replaced(run, tsv, tmp_path, target):
    if target == "dir":
        target = tmp_path / "d"
        target.mkdir()
    elif target == "fifo":
        target = tmp_path / "f"
        os.mkfifo(target)
    r = run("train", tsv, "-q", "-o", target)
    assert r.exit_code == 1 and "nbtext writes only regular files" in r.stderr or "is a directory" in r.stderr
    assert not stat.S_ISREG(os.stat(target).st_mode)


def test_a_model_is_never_written_over_its_own_inputs(run, tsv, tmp_path):
    before = tsv.read_text()
    r = run("train", tsv, "-o", tsv)
    assert r.exit_code == 1 and r.stderr == f"nbtext: error: {tsv}: is the input {tsv}; write the model elsewhere\n"
    assert tsv.read_text() == before
    inside = DATA / "corpus" / "ham" / "model.nbm"
    r = run("train", DATA / "corpus", "-o", inside)
    assert r.exit_code == 1 and "is inside the input" in r.stderr and not inside.exists()
    r = run("cv", tsv, "--folds", "2", "--predictions", tsv)
    assert r.exit_code == 1 and tsv.read_text() == before


def test_merge_refuses_a_model_with_itself_and_shared_documents(run, sample_model, tmp_path):
    copy = tmp_path / "copy.nbm"
    copy.write_bytes(sample_model.read_bytes())
    r = run("merge", "-o", tmp_path / "m.nbm", sample_model, sample_model)
    assert r.exit_code == 1 and "given twice" in r.stderr
    r = run("merge", "-o", tmp_path / "m.nbm", sample_model, copy)
    assert r.exit_code == 1 and "learned 432 of the same documents as" in r.stderr
    assert not (tmp_path / "m.nbm").exists()


@pytest.mark.slow
def test_merge_reads_its_output_under_the_lock(run, sample_copy, tsv, tmp_path):
    """merge -o M M other while learn -m M runs: merge loads M inside M's lock, so the learned
    documents are in the merged model (they were lost in 8 of 8 trials)."""
    other = tmp_path / "other.nbm"
    assert run("train", "--label", "spam", DATA / "example-spam.eml", "--label", "ham",
               DATA / "example-ham.eml", "-q", "-o", other).exit_code == 0
    msgs = sorted((DATA / "corpus" / "spam").iterdir())[:3]
    new = []
    for i, m in enumerate(msgs):  # messages this model never learned
        p = tmp_path / f"new{i}.eml"
        p.write_bytes(m.read_bytes() + f"\nnew {i}\n".encode())
        new.append(p)
    learn = subprocess.Popen([sys.executable, "-m", "nbtext", "learn", "-m", str(sample_copy), "--label",
                              "spam", "-q", *map(str, new)], cwd=ROOT)
    merge = nb("merge", "-o", sample_copy, sample_copy, other)
    learn.wait()
    assert merge.returncode == 0 and learn.returncode == 0
    assert store.load(str(sample_copy)).n_documents == 432 + 3 + 2


# -- model files and dumps from strangers ------------------------------------------------------

def test_a_large_foreign_file_is_refused_from_its_first_bytes(tmp_path):
    big = tmp_path / "big.nbm"
    with open(big, "wb") as f:
        f.truncate(3 << 30)  # 3 GiB, sparse: read whole it took 3.1 GB and 12.7 s
    r = nb("classify", "-m", big, DATA / "example-ham.eml")
    assert r.returncode == 1 and b"not an nbtext model file" in r.stderr


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "dir"])
def test_a_model_that_is_not_a_regular_file_is_refused(tmp_path, kind):
    path = tmp_path / "m.nbm"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
    else:
        path.symlink_to(kind)
    for cmd in (["classify", "-m", path, DATA / "example-ham.eml"], ["info", "-m", path]):
        r = nb(*cmd)
        assert r.returncode == 1 and b"not a model file" in r.stderr, r.stderr


def reframed(good: bytes, change, payload_change=None) -> bytes:
    """The model file with its header changed by change(header) (and its payload by
    payload_change(header, payload)), both checksums valid."""
    _, version, hlen, _ = struct.unpack_from("<8sIQI", good)
    header = json.loads(good[24:24 + hlen])
    payload_start = 24 + hlen + (-(24 + hlen) % 8)
    payload = bytearray(good[payload_start:])
    change(header)
    if payload_change:
        payload_change(header, payload)
        header["payload_crc32"] = zlib.crc32(payload)
    raw = json.dumps(header).encode()
    head = struct.pack("<8sIQI", b"NBTEXT\x1a\n", version, len(raw), zlib.crc32(raw)) + raw
    return head + b"\x00" * (-len(head) % 8) + bytes(payload)


def set_path(*keys_value):
    *keys, value = keys_value

    def change(h):
        d = h
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value
    return change


CRAFTED = {
    "ngram_max 1e9": set_path("tokenizer", "ngram_max", 10**9),
    "ngram_max float": set_path("tokenizer", "ngram_max", 2.5),
    "temperature 0": set_path("decision", "temperature", 0),
    "temperature -3": set_path("decision", "temperature", -3),
    "temperature string": set_path("decision", "temperature", "hot"),
    "threshold 7": set_path("decision", "threshold", 7),
    "unsure reversed": set_path("decision", "unsure", [0.9, 0.1]),
    "positive missing": set_path("decision", "positive", "eggs"),
    "duplicate classes": set_path("classes", ["ham", "ham"]),
    "class counts short": set_path("class_count", [3]),
    "class count negative": set_path("class_count", [-1, 2]),
    "alpha NaN": set_path("model", "alpha", float("nan")),
    "variant unknown": set_path("model", "variant", "gaussian"),
    "vocab_block 0": set_path("vocab_block", 0),
    "vocab_block 1e18": set_path("vocab_block", 10**18),
    "n_features wrong": set_path("n_features", 3),
    "section out of payload": set_path("sections", "counts", "offset", 10**9),
    "section shape lies": set_path("sections", "counts", "shape", [2, 10**6]),
    "section dtype unknown": set_path("sections", "counts", "dtype", "<f2"),
    "derived missing": set_path("derived", {}),
    "derived short": set_path("derived", {"log_den": [1.0]}),
    "unknown setting": set_path("tokenizer", "shell", "rm -rf"),
    "heads out of order": lambda h: None,  # (below: the payload's heads are swapped)
    # issue 32: values inside the old ranges that gave NaN or -Infinity, a count past 2**53
    "temperature 5e-324": set_path("decision", "temperature", 5e-324),
    "soft 5e-324": set_path("decision", "soft", 5e-324),
    "floor 5e-324": set_path("decision", "floor", 5e-324),
    "class count 2**53 + 1": set_path("class_count", [2, 9007199254740993]),
    "derived Infinity": lambda h: h["derived"].update({k: [float("inf")] * 2 for k in h["derived"]}),
}


@pytest.fixture(scope="module")
def good_model(tmp_path_factory, tsv):
    path = tmp_path_factory.mktemp("good") / "m.nbm"
    r = nb("train", tsv, "-q", "--no-calibrate", "--ngrams", "1", "-o", path)
    assert r.returncode == 0
    return path.read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_crafted_headers_with_valid_checksums_are_refused(tmp_path, good_model, name):
    data = reframed(good_model, CRAFTED[name])
    if name == "heads out of order":  # the second block's head points back into the first

        def swap(header, payload):
            s = header["sections"]["vocab_heads"]
            assert s["dtype"] == "<u4" and s["shape"][0] > 2
            struct.pack_into("<I", payload, s["offset"] + 4, 3)
        data = reframed(good_model, lambda h: None, swap)
    path = tmp_path / "m.nbm"
    path.write_bytes(data)
    for load in (store.load, FastScorer):
        try:
            load(str(path))
        except ModelFileError as e:
            assert "corrupt model file" in str(e)
        else:
            pytest.fail(f"{name}: {load.__name__} accepted it")
    r = nb("classify", "-m", path, DATA / "example-ham.eml")
    assert r.returncode == 1 and r.stderr.startswith(b"nbtext: error: ") and b"Traceback" not in r.stderr


def dump_with(good_model, tmp_path, change=None, line=None):
    path = tmp_path / "m.nbm"
    path.write_bytes(good_model)
    lines = list(export_lines(store.load(str(path))))
    meta = json.loads(lines[1])
    if change:
        change(meta)
    lines[1] = json.dumps(meta)
    if line:
        lines.append(line)
    return lines


@pytest.mark.parametrize("name", ["ngram_max 1e9", "temperature 0", "temperature -3", "temperature string",
                                  "threshold 7", "unsure reversed", "positive missing", "duplicate classes",
                                  "class counts short", "alpha NaN", "unknown setting", "temperature 5e-324",
                                  "soft 5e-324", "floor 5e-324", "class count 2**53 + 1"])
def test_import_refuses_hostile_dumps(tmp_path, good_model, name):
    with pytest.raises(NbtextError, match="malformed dump"):
        import_lines(dump_with(good_model, tmp_path, CRAFTED[name]), "d")


@pytest.mark.parametrize("line", ['"x"\tnan\t1', '"y"\tinf\t1', '"z"\t-1\t1', '"w"\t1e999\t1', '5\t1\t1',
                                  '"v\\u0000"\t1\t1', '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\t1\t1'])
def test_import_refuses_hostile_token_lines(tmp_path, good_model, line):
    with pytest.raises(NbtextError, match="d"):
        import_lines(dump_with(good_model, tmp_path, line=line), "d")


@pytest.mark.parametrize("count, problem", [
    ("1e+300", "'1e+300' is not a count from 0 to 2**53"),
    ("9007199254740993", "'9007199254740993' is not a count from 0 to 2**53"),
    ("9007199254740992.5", "'9007199254740992.5' is not a count from 0 to 2**53"),
    ("1e300", "not '1e300'"), ("1_000", "not '1_000'"), (" 7", "not ' 7'"), ("+3", "not '+3'"),
    ("0x10", "not '0x10'"), ("Infinity", "not 'Infinity'")])
def test_import_refuses_counts_beyond_2_53_or_not_written_as_the_dump_writes_them(tmp_path, good_model,
                                                                                   count, problem):
    """Counts of 1e300, 9007199254740993 (float() makes it 2**53) and 1_000 were imported; the
    README promises whole numbers from 0 to 2**53 (fractional ones for a library's weighted
    learning), written as export writes them. The error names the dump and its line."""
    lines = dump_with(good_model, tmp_path)
    token, first, *rest = lines[2].split("\t")
    lines[2] = "\t".join([token, count, *rest])
    with pytest.raises(NbtextError) as e:
        import_lines(lines, "d")
    assert str(e.value).startswith("d:3: ") and problem in str(e.value), str(e.value)
    for count in ("9007199254740992", "0", "1.5", "1e-05"):  # (what export writes: imported)
        lines[2] = "\t".join([token, count, *rest])
        assert import_lines(lines, "d").feature_count[:, 0].tolist()[0] == float(count)


def _written_with(model, path, monkeypatch, vocabulary=None, unsorted=False):
    """The model saved by nbtext's own writer (valid checksums, every other field as nbtext
    writes it) with a vocabulary of other bytes, or front-coded out of byte order."""
    import numpy as np

    from nbtext.features.vocabulary import Vocabulary, token_spans
    from nbtext.store import codec, vocabfile

    if vocabulary is not None:
        model.vocab = Vocabulary.from_encoded(vocabulary)
    if unsorted:
        def reversed_front_code(blob):
            blob = bytes(blob)
            starts, lengths = token_spans(np.frombuffer(blob, dtype=np.uint8))
            order = np.argsort(-np.arange(len(starts)))  # (first seen last: not byte order)
            tokens = b"".join(blob[a:a + n] + b"\0" for a, n in zip(starts[order], lengths[order]))
            fc, entry = vocabfile._front_code_sorted(tokens, lengths[order])
            return fc, entry[::vocabfile.BLOCK].astype(np.int64), order
        monkeypatch.setattr(codec, "front_code", reversed_front_code)
    store.save(model, str(path))
    monkeypatch.undo()


def test_a_vocabulary_out_of_byte_order_or_not_utf8_is_refused(run, tmp_path, good_model, monkeypatch):
    """A vocabulary with invalid UTF-8 (valid checksums) loaded, was copied by learn and merge,
    and export died with an internal error; one front-coded out of byte order loaded, and
    classify (a binary search) and predict (a dictionary) disagreed on 53 of 200 messages.
    store.load checks the whole vocabulary (predict, learn, merge, export, info); classify
    checks what it reads (the heads its search compares, the blocks it decodes)."""
    from nbtext.features.vocabulary import token_spans

    good = tmp_path / "good.nbm"
    good.write_bytes(good_model)
    model = store.load(str(good))
    blob = bytearray(model.vocab.encoded())
    starts, _ = token_spans(bytes(blob))
    i = len(starts) // 2
    bad = blob[starts[i]:blob.index(0, starts[i])].decode()
    blob[starts[i]] = 0xFF  # (a byte no UTF-8 holds, as the token's first)
    cases = {"not-utf8.nbm": ({"vocabulary": bytes(blob)}, "is not UTF-8"),
             "unsorted.nbm": ({"unsorted": True}, "not in byte order")}
    for name, (how, problem) in cases.items():
        path = tmp_path / name
        _written_with(store.load(str(good)), path, monkeypatch, **how)
        content = path.read_bytes()
        for args in (["info", "-m", path], ["export", "-m", path], ["predict", "-m", path, DATA / "example-ham.eml"],
                     ["learn", "-m", path, "--label", "spam", DATA / "example-spam.eml"],
                     ["merge", "-o", tmp_path / "merged.nbm", path, good]):
            r = run(*args)
            assert r.exit_code == 1, (name, args, r.stdout)
            assert r.stderr.startswith(f"nbtext: error: {path}: corrupt model file (vocabulary ") and problem in r.stderr
        # classify reads the blocks a message's tokens lead it to: all of them here
        text = " ".join(model.vocab.tokens[:i] + [bad] + model.vocab.tokens[i + 1:])
        r = nb("classify", "-m", path, "-", input=text.encode())
        assert r.returncode == 1 and r.stderr.startswith(f"nbtext: error: {path}: corrupt model file "
                                                        "(vocabulary ".encode()), r.stderr
        assert path.read_bytes() == content and not (tmp_path / "merged.nbm").exists()


def test_the_calibration_map_is_finite_over_its_whole_range():
    """Inside the ranges a model file may hold (nbtext.nb.decision), for any score a model can
    give (store.codec.MAX_SCORE, times a document's length), the posteriors are probabilities
    and the log-posteriors finite: a temperature of 5e-324 printed `ham nan` (and JSONL NaN,
    which is no JSON), a soft of 5e-324 gave -Infinity. Both paths: classify's and predict's."""
    import itertools
    import math

    import numpy as np

    from nbtext.nb.calibrate import calibrated_log
    from nbtext.nb.decision import MAX_SCALE, MIN_SCALE, Decision, calibrated
    from nbtext.store.codec import MAX_SCORE

    extreme = 2e6 * MAX_SCORE  # (a 2 MB document's worth of the largest stored sums)
    for t, b, soft, floor in itertools.product((MIN_SCALE, 1.0, MAX_SCALE), (0.0, 2.0), (0.0, MIN_SCALE, MAX_SCALE),
                                               (0.0, MIN_SCALE, 0.5)):
        d = Decision(temperature=t, length_power=b, soft=soft, floor=floor)
        for jll in ([-extreme, extreme], [-extreme, -extreme + 1], [0.0, -1e-300], [extreme, extreme]):
            for length in (0, 1, 2e6):
                p = calibrated(d, jll, length)
                logp = calibrated_log(d, np.array([jll]), np.array([length]))[0]
                assert all(0 <= x <= 1 for x in p) and math.isclose(sum(p), 1.0), (d, jll, p)
                assert np.isfinite(logp).all(), (d, jll, logp)


def test_import_refuses_a_short_ledger_entry(tmp_path, good_model):
    with pytest.raises(NbtextError, match="ledger entries must be 32 hex digits"):
        import_lines(dump_with(good_model, tmp_path, set_path("ledger", ["ab"])), "d")


def test_import_refuses_a_ledger_entry_of_32_characters_not_all_hex_digits(tmp_path, good_model):
    """bytes.fromhex skips blanks: "  " and 30 hex digits made a digest of 15 bytes."""
    with pytest.raises(NbtextError, match="ledger entries must be 32 hex digits"):
        import_lines(dump_with(good_model, tmp_path, set_path("ledger", ["  " + "ab" * 15])), "d")


def test_a_deep_json_dump_line_is_refused(tmp_path):
    r = nb("import", "-", "-o", tmp_path / "m.nbm", input=b"# nbtext dump 1\n" + b"[" * 100000 + b"\n")
    assert r.returncode == 1 and b"malformed dump" in r.stderr


# -- values that make no sense -------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--ngrams", "100"], "--ngrams must be a whole number from 1 to 10, got 100"),
    (["--char-ngrams", "1,50"], "--char-ngrams must be a whole number from 0 to 10, got 50"),
    (["--max-word-length", "100000"], "--max-word-length must be a whole number from 1 to 1000"),
    (["--min-df", "100000"], "--min-df 100000 and --max-df 1.0 keep no token"),
])
def test_settings_that_make_no_sense_are_refused(run, tsv, tmp_path, args, message):
    r = run("train", tsv, *args, "-o", tmp_path / "m.nbm")
    assert r.exit_code == 1 and message in r.stderr and not (tmp_path / "m.nbm").exists()


def test_jobs_beyond_reason_are_a_usage_error(run, tsv, tmp_path):
    r = run("train", tsv, "-j", "1000", "-o", tmp_path / "m.nbm")
    assert r.exit_code == 2 and "1000 is not in the range 1<=x<=64" in r.stderr


# -- documents with no tokens ---------------------------------------------------------------------

def test_documents_with_no_tokens_learn_train_and_classify(run, sample_copy, tmp_path):
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert run("learn", "-m", sample_copy, "--label", "spam", empty).exit_code == 0
    assert run("learn", "-m", sample_copy, "--label", "ham", input=b"").exit_code == 1  # (an empty stdin is
    # a mistake, not a message: test_user_io.py::test_learn_refuses_an_empty_stdin_and_leaves_the_model)
    r = nb("classify", "-m", sample_copy, "-u", input=b"")
    assert r.returncode == 0 and r.stdout.split(b"\t")[0] in (b"ham", b"spam")
    corpus = tmp_path / "c"
    for label in ("spam", "ham"):
        (corpus / label).mkdir(parents=True)
        (corpus / label / "1").write_bytes(b"")
    r = run("train", corpus, "-q", "-o", tmp_path / "e.nbm")  # (a model of no token: refused, as fastText does)
    assert (r.exit_code, r.stderr) == (
        1, f"nbtext: error: {corpus}: none of the 2 documents read has a token: nothing to train on\n")


# -- a long message from procmail -----------------------------------------------------------------

@pytest.mark.slow
def test_classify_a_huge_message_counts_each_distinct_token_once(sample_model, monkeypatch):
    """classify of a 1.5 MB message took ten times predict's time: one binary search and one
    block decoded per token occurrence. Distinct tokens are looked up once, in sorted order."""
    scorer = FastScorer(str(sample_model))
    calls = []
    real = scorer.vocab._block
    monkeypatch.setattr(scorer.vocab, "_block", lambda b: calls.append(b) or real(b))
    tokens = scorer.tokenizer(" ".join(["free money now"] * 20000 + ["meeting agenda notes"] * 20000))
    base, contrib, unknown, known, _ = scorer.contributions(tokens)
    assert len(calls) == len(set(calls)) <= len(set(tokens))
    assert {"free", "meeting"} <= set(contrib)


# -- output and exit codes -----------------------------------------------------------------------

@pytest.mark.slow
def test_every_output_format_round_trips_through_its_parser(sample_model, tmp_path):
    import csv
    import io

    names = ["tab\there", "new\nline", "back\\tslash", "cr\rhere", "comma,\"quote\""]
    for name in names:
        (tmp_path / name).write_bytes((DATA / "example-ham.eml").read_bytes())
    bad = os.fsencode(str(tmp_path)) + b"/latin\xe9"
    with open(bad, "wb") as f:
        f.write((DATA / "example-ham.eml").read_bytes())
    paths = [str(tmp_path / n) for n in names]
    for fmt in ("csv", "jsonl", "tsv"):
        r = nb("predict", "-m", sample_model, "--format", fmt, *paths, os.fsdecode(bad),
               env={"PYTHONIOENCODING": "utf-8"})
        assert r.returncode == 0, r.stderr
        text = r.stdout.decode("utf-8")
        if fmt == "csv":
            rows = list(csv.reader(io.StringIO(text)))
            ids = [row[0] for row in rows]
        elif fmt == "jsonl":
            ids = [json.loads(line)["id"] for line in text.splitlines()]
        else:
            rows = [line.split("\t") for line in text.split("\n") if line]
            assert all(len(row) == 3 for row in rows)
            ids = [row[0] for row in rows]
        assert ids[:len(paths)] == (paths if fmt != "tsv" else [
            p.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r") for p in paths])
        assert ids[-1].endswith("latin\\xe9")


@pytest.mark.slow
def test_streams_closed_or_full_are_errors_with_the_right_status(sample_model, tsv, tmp_path):
    ham = DATA / "example-ham.eml"
    r = nb("info", "-m", sample_model, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
           capture_output=False, preexec_fn=lambda: os.close(1))
    assert r.returncode == 1 and b"standard output is closed" in r.stderr
    for extra, status in (([], 1), (["--exit-code"], 3)):
        with open("/dev/full", "w") as full:
            r = nb("classify", "-m", sample_model, *extra, ham, stdout=full, stderr=subprocess.PIPE,
                   capture_output=False)
        assert r.returncode == status and b"No space left on device" in r.stderr
    r = nb("train", tsv, "-o", tmp_path / "m.nbm", stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
           capture_output=False, preexec_fn=lambda: os.close(2))
    assert r.returncode == 0 and (tmp_path / "m.nbm").exists() and r.stdout == b""


def test_classify_exit_code_is_3_for_an_internal_error(sample_model, tmp_path):
    broken = tmp_path / "sitecustomize.py"  # a bug inside nbtext, simulated: the scorer raises
    broken.write_text("import nbtext.fastscore as f\n"
                      "f.FastScorer.score = lambda self, data: 1 / 0\n")
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    r = nb("classify", "-m", sample_model, "--exit-code", DATA / "example-ham.eml", env=env)
    assert r.returncode == 3 and b"internal error: ZeroDivisionError" in r.stderr
    assert b"Traceback" not in r.stderr


# -- a bounded, seeded fuzz pass -------------------------------------------------------------------

def mutations(data: bytes, rng: random.Random, n: int):
    """n mutants of data: bytes flipped, cut, repeated, spliced with bait."""
    bait = [b"\x00", b"\xff", b"<!--", b"\r\n", b"\n\nFrom x Mon Jan  1 00:00:00 2024\n", b"\t", b'"',
            b"=?utf-8?B?", b"[" * 50, b"\\ud800", b"\x1f\x8b"]
    for _ in range(n):
        b = bytearray(data)
        for _ in range(rng.randint(1, 6)):
            op = rng.randrange(4)
            i = rng.randrange(len(b) + 1)
            if op == 0 and b:
                b[min(i, len(b) - 1)] = rng.randrange(256)
            elif op == 1:
                del b[i:i + rng.randint(1, 64)]
            elif op == 2:
                b[i:i] = rng.choice(bait) * rng.randint(1, 20)
            else:
                b[i:i] = b[max(0, i - 32):i] * rng.randint(1, 8)
        yield bytes(b)


@pytest.mark.slow
def test_fuzz_readers_loader_and_import(good_model, tmp_path):
    """A seeded pass (under a minute) of mutated mail, line files, model files and dumps: each is
    read, refused with NbtextError, or scored; never another exception, never a hang."""
    from nbtext.read import input_documents, labelled_documents, LineOptions
    from nbtext.settings import TokenizerSettings
    from nbtext.text.tokenizer import Tokenizer

    rng = random.Random(18)
    tok = Tokenizer(TokenizerSettings())
    mail = (DATA / "example-spam.eml").read_bytes()[:6000]
    model = tmp_path / "m.nbm"
    model.write_bytes(good_model)
    dump = "\n".join(export_lines(store.load(str(model)))).encode()
    seeds = {"mail": mail, "tsv": b"spam\tbuy now\nham\thello\n", "jsonl": b'{"label": "a", "text": "x"}\n',
             "csv": b"label,text\nspam,\"buy, now\"\nham,hi\n", "ft": b"__label__a x y\n__label__b z\n"}
    for name, seed in seeds.items():
        for i, data in enumerate(mutations(seed, rng, 60)):
            path = tmp_path / f"{i}.{name}"
            path.write_bytes(data)
            try:
                if name == "mail":
                    docs = list(input_documents([str(path)]))
                else:
                    docs = list(labelled_documents([str(path)], [], LineOptions()))
                for d in docs:
                    assert all(isinstance(t, str) for t in tok(d.data))
            except NbtextError:
                pass
    for i, data in enumerate(mutations(good_model, rng, 150)):
        model.write_bytes(data)
        for load in (store.load, FastScorer):
            try:
                load(str(model))
            except ModelFileError:
                pass
    for i, data in enumerate(mutations(dump, rng, 150)):
        try:
            import_lines(data.decode("utf-8", "replace").splitlines(), "d")
        except NbtextError:
            pass


# -- a parallel train stopped from outside ---------------------------------------------------------

def children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError):  # (ended meanwhile)
        return ""


def alive(pids) -> list[int]:
    left = []
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                if f.read().split(")")[-1].split()[0] != "Z":
                    left.append(p)
        except FileNotFoundError:
            pass
    return left


# A process with a thread of its own (a library caller's) gets loky's workers, not forked ones
# (nbtext.batch.chunks.fork_safe): the same command run so.
WITH_A_THREAD = ("import sys, threading, time; threading.Thread(target=time.sleep, args=(1e6,), daemon=True)"
                 ".start(); from nbtext.cli import main; sys.argv[0] = 'nbtext'; main()")


def reading_stdin(pid: int) -> bool:
    """Whether a thread of process pid is blocked reading its standard input (read(2) on fd 0,
    from /proc/PID/task/*/syscall: the syscall's number, then its arguments)."""
    number = {"x86_64": "0", "aarch64": "63"}[platform.machine()]
    for task in pathlib.Path(f"/proc/{pid}/task").glob("*"):
        try:
            call = (task / "syscall").read_text().split()
        except OSError:  # (a thread that ended meanwhile)
            continue
        if call[:2] == [number, "0x0"]:
            return True
    return False


def takes_ctrl_c(pid: int) -> bool:
    """Whether process pid's main thread neither ignores nor blocks SIGINT now (train holds it
    back while it starts its workers: batch.chunks.interrupts_held)."""
    masks = dict(line.split(":\t") for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines()
                 if line.startswith(("SigIgn", "SigBlk")))
    return not any(int(masks[name], 16) & (1 << (signal.SIGINT - 1)) for name in ("SigIgn", "SigBlk"))


@pytest.fixture(scope="module")
def linked_corpus(tmp_path_factory):
    """Sixteen copies of the sample (links): seconds of work on loky's workers, made once for
    the three signals. (Loky on a pipe is not tested here: joblib reads its tasks in a thread of
    its own, which a signal does not stop while it waits on the pipe.)"""
    corpus = tmp_path_factory.mktemp("linked") / "corpus"
    for f in sorted((DATA / "corpus").rglob("*")):
        if f.is_file():
            for i in range(16):
                link = corpus / f.parent.name / f"{i}-{f.name}"
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(f)
    return corpus


@pytest.mark.slow
@pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64") or not os.path.exists("/proc/self/task"),
                    reason="reads Linux's /proc/PID/task/*/syscall")
@pytest.mark.parametrize("pool", ["fork", "loky"])
@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "Ctrl-C"])
def test_a_stopped_parallel_train_leaves_no_workers(tmp_path, request, how, pool):
    """kill -9 of a parallel train left its workers running for minutes (68 orphans, 2.7 GB);
    SIGTERM printed joblib's leaked-semaphore warnings; Ctrl-C (to the whole process group, as
    a terminal sends it) while the workers were starting printed their tracebacks. Workers now
    end with their parent and start with Ctrl-C ignored; SIGTERM ends the run as Ctrl-C does,
    with status 143. The signal goes once both workers run and train takes Ctrl-C again (events,
    not times): with forked workers, train reads a line file from a pipe this test holds open,
    and waits for more of it; loky's (a process with a thread of its own) read a large corpus."""
    import time

    if pool == "fork":
        p = subprocess.Popen([sys.executable, "-m", "nbtext", "train", "-", "-j", "2", "-q",
                              "-o", str(tmp_path / "m.nbm")], cwd=ROOT, stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        # Three chunks' worth of lines (batch.chunks.CHUNK documents each): the workers start with
        # the second, and the third waits for the rest of the input.
        p.stdin.write(b"".join(b"%s\tword%d other%d words\n" % (b"ab"[i % 2:][:1], i, i % 7) for i in range(1000)))
        p.stdin.flush()
    else:
        corpus = request.getfixturevalue("linked_corpus")
        p = subprocess.Popen([sys.executable, "-c", WITH_A_THREAD, "train", str(corpus), "-j", "2", "-q",
                              "-o", str(tmp_path / "m.nbm")], cwd=ROOT, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline, workers = time.monotonic() + 60, []  # (a safety stop, not what is tested)
    while time.monotonic() < deadline and p.poll() is None:
        # a forked worker is a copy of train: the same command line; loky's are new interpreters
        mine = cmdline(p.pid)
        workers = [c for c in children(p.pid) if (cmdline(c) == mine) == (pool == "fork")
                   and (pool == "fork" or "LokyProcess" in cmdline(c))]
        if len(workers) == 2 and takes_ctrl_c(p.pid) and (pool == "loky" or reading_stdin(p.pid)):
            break
        time.sleep(0.01)
    assert len(workers) == 2 and p.poll() is None, "the workers never started"
    if how == "Ctrl-C":
        os.killpg(p.pid, signal.SIGINT)
    else:
        p.send_signal(getattr(signal, how))
    err = p.communicate(timeout=60)[1]
    if how == "SIGTERM":
        assert p.returncode == 143 and err.endswith(b"nbtext: terminated\n") and b"leaked" not in err, err
    if how == "Ctrl-C":
        assert p.returncode == 130 and err.endswith(b"nbtext: interrupted\n") and b"Traceback" not in err, err
    for _ in range(600):  # (the workers notice their parent's end: watch_parent)
        if not alive(workers):
            break
        time.sleep(0.1)
    assert not alive(workers), f"workers {alive(workers)} outlived train"



# The command run with a SIGTERM sent to itself by an at-fork hook: the signal comes while a
# worker is being forked, every time (an event, not a time).
TERMINATED_IN_A_FORK = ("import os, signal, sys; sent = []; os.register_at_fork(after_in_parent=lambda: sent or "
                        "(sent.append(1), os.kill(os.getpid(), signal.SIGTERM))); "
                        "from nbtext.cli import main; sys.argv[0] = 'nbtext'; main()")


def test_a_sigterm_while_workers_are_forked_ends_the_run(tmp_path):
    """A SIGTERM that came while train forked its workers was raised inside the fork's at-fork
    hooks, where Python prints it as an ignored exception ("Exception ignored in: <function
    _releaseLock>", logging's hook) and goes on: train went on, wrote its model and exited 0
    (found by a kill -TERM five seconds into a train of 20 MB). It is held for the fork and
    ends the run as any SIGTERM does (batch.chunks.interrupts_held)."""
    model = tmp_path / "m.nbm"
    r = subprocess.run([sys.executable, "-c", TERMINATED_IN_A_FORK, "train", DATA / "corpus", "-j", "2", "-q",
                        "-o", model], cwd=ROOT, capture_output=True, timeout=120)
    assert (r.returncode, r.stderr) == (143, b"nbtext: terminated\n")  # (no blank line before it)
    assert not model.exists()

def test_a_label_with_braces_is_named_as_it_is(run, tsv, tmp_path):
    """Messages name parameters as {name} templates; a label from a file is text, not a template."""
    t = tmp_path / "three.tsv"
    t.write_text("{alpha}\tx y\nb\ty z\nc\tz w\n")
    r = run("train", t, "--threshold", "0.7", "-o", tmp_path / "m.nbm")
    assert r.exit_code == 1 and "the classes are b, c, {alpha})" in r.stderr


def test_a_fifo_in_place_of_the_lock_file_is_refused_not_waited_on(sample_copy):
    os.mkfifo(str(sample_copy) + ".lock")
    r = nb("learn", "-m", sample_copy, "--label", "spam", DATA / "example-ham.eml")
    assert r.returncode == 1 and b"m.nbm.lock: " in r.stderr  # (refused at once: never waited on)


# -- issue 34's state from strangers: sparse counts, the decision layer, derived sums --------
# (probed with build/ scripts on real files; docs/hostile.md, "Issue 34: the new state from strangers")

def resectioned(good: bytes, change) -> bytes:
    """The model file with its sections changed by change(header, arrays), arrays being name ->
    numpy array as stored (edit them, replace or delete them), laid out again: checksums valid."""
    import numpy as np

    _, version, hlen, _ = struct.unpack_from("<8sIQI", good)
    header = json.loads(good[24:24 + hlen])
    payload = good[24 + hlen + (-(24 + hlen) % 8):]
    arrays = {name: np.frombuffer(payload[s["offset"]:s["offset"] + s["length"]], dtype=s["dtype"]).reshape(
        s["shape"]).copy() for name, s in header["sections"].items()}
    change(header, arrays)
    table, out = {}, bytearray()
    for name, a in arrays.items():
        raw = a.tobytes()
        table[name] = {"offset": len(out), "length": len(raw), "dtype": a.dtype.str, "shape": list(a.shape)}
        out += raw + b"\x00" * (-len(raw) % 8)
    header.update(sections=table, payload_length=len(out), payload_crc32=zlib.crc32(out))
    raw = json.dumps(header).encode()
    head = struct.pack("<8sIQI", b"NBTEXT\x1a\n", version, len(raw), zlib.crc32(raw)) + raw
    return head + b"\x00" * (-len(head) % 8) + bytes(out)


@pytest.mark.parametrize("damage", ["nan count", "negative count", "nan layer weight", "layer ids out of order"])
def test_the_daemon_refuses_at_load_what_it_read_lazily(tmp_path, good_model, sample_model, damage):
    """The daemon read a model's counts and layer where a message first needed them: a NaN
    count answered `ham nan` (spamc: not spam), a negative one an internal error for every
    message holding the token, a NaN weight an error at that message, layer ids out of order
    other probabilities, silently. It now decodes the file whole at load, as store.load does,
    and refuses it there (keeping the model in use on a reload)."""
    from nbtext.serve.scoring import ServedModel

    def two(h, a):
        a["counts"] = a["counts"].astype("<f8")
        a["counts"][1, :] = float("nan") if damage == "nan count" else -2.0

    def layer(h, a):
        if damage == "nan layer weight":
            a["layer_weights"][0, 0] = float("nan")
        else:
            a["layer_ids"] = a["layer_ids"][::-1].copy()
    if damage.endswith("count"):
        data = resectioned(good_model, two)
    else:  # (the daemon serves two classes: the sample's model, with its layer)
        data = resectioned(sample_model.read_bytes(), layer)
    path = tmp_path / "m.nbm"
    path.write_bytes(data)
    with pytest.raises(ModelFileError, match="corrupt model file"):
        ServedModel(str(path))


@pytest.fixture(scope="module")
def layered(tmp_path_factory):
    """(a three-class model with sparse counts and a decision layer, as bytes; the model)."""
    d = tmp_path_factory.mktemp("layered")
    own = {"astro": "star orbit comet", "cook": "flour oven salt", "sail": "boat wind keel"}
    shared = ["common", "daily", "little", "often", "simple"]
    (d / "three.tsv").write_text("".join(
        f"{label}\t{own[label].split()[i % 3]} {shared[i % 5]} {shared[(i + label.__len__()) % 5]} word\n"
        for i in range(20) for label in sorted(own)))
    path = d / "m.nbm"
    r = nb("train", d / "three.tsv", "-q", "-o", path)
    assert r.returncode == 0, r.stderr
    return path.read_bytes(), store.load(str(path))


def _word_of_classes(model, n: int) -> int:
    """A plain word's id (a message can hold it) counted in n classes or more."""
    s = model.counts.token_sums
    return next(t for t, tok in enumerate(model.vocab.tokens)
                if tok.isalpha() and s.indptr[t + 1] - s.indptr[t] >= n)


def _sparse_values(change):
    """A change of the sparse counts' values, made float64 (the large ones put back in place)."""
    def f(h, a):
        v = a["counts_values"].astype("<f8")
        if "counts_over" in a:
            v[a.pop("counts_over_at").astype(int)] = a.pop("counts_over")
        change(v, a)
        a["counts_values"] = v
    return f


def _first_entry(model, t):
    return int(model.counts.token_sums.indptr[t])


@pytest.mark.parametrize("damage,match", [
    ("nan", "sparse counts must be numbers above 0 to 2**53"),
    ("negative", "sparse counts must be numbers above 0 to 2**53"),
    ("infinite", "sparse counts must be numbers above 0 to 2**53"),
    ("class twice", "a token's classes are not increasing"),
])
def test_classify_refuses_the_damaged_sparse_counts_it_reads(tmp_path, layered, damage, match):
    """classify reads a token's sparse counts in place, where store.load checks them all: a
    count of NaN or infinity printed `nan`, a negative one an internal error (math domain
    error), a class twice in a token took the last count, silently. Each count and class it
    reads is checked as it is read."""
    good, model = layered
    t = _word_of_classes(model, 2)
    at = _first_entry(model, t)

    def change(h, a):
        if damage == "class twice":
            a["counts_classes"][at + 1] = a["counts_classes"][at]
        else:
            _sparse_values(lambda v, _: v.__setitem__(at, {"nan": float("nan"), "negative": -2.0,
                                                           "infinite": float("inf")}[damage]))(h, a)
    path, msg = tmp_path / "m.nbm", tmp_path / "msg.txt"
    path.write_bytes(resectioned(good, change))
    msg.write_text(f"{model.vocab.tokens[t]} and more words\n")
    with pytest.raises(ModelFileError, match=re.escape(match)):
        store.load(str(path))
    r = nb("classify", "-m", path, msg)
    assert r.returncode == 1 and r.stderr.decode() == f"nbtext: error: {path}: corrupt model file ({match})\n"


@pytest.mark.parametrize("value", ["nan", "-2"])
def test_classify_refuses_the_damaged_dense_counts_it_reads(tmp_path, good_model, value):
    """The same for two classes' counts (a class x token array): NaN printed `ham nan`, -2 an
    internal error."""
    def change(h, a):
        a["counts"] = a["counts"].astype("<f8")
        a["counts"][1, :] = float(value)
    path = tmp_path / "m.nbm"
    path.write_bytes(resectioned(good_model, change))
    r = nb("classify", "-m", path, "-", input=b"cheap pills\n")
    assert r.returncode == 1 and r.stderr.decode() == \
        f"nbtext: error: {path}: corrupt model file (counts must be numbers from 0 to 2**53)\n"


def test_classify_refuses_layer_ids_out_of_order_at_load(tmp_path, layered):
    """classify finds a token's layer weights by a binary search of the layer's ids: out of
    order (checksums intact), it found none for most tokens and printed other probabilities,
    silently, where predict refused the file. The ids are checked whole at load, as predict's."""
    good, model = layered
    path, msg = tmp_path / "m.nbm", tmp_path / "msg.txt"
    path.write_bytes(resectioned(good, lambda h, a: a.update(layer_ids=a["layer_ids"][::-1].copy())))
    msg.write_text(" ".join(model.vocab.tokens[int(i)] for i in model.layer.ids if model.vocab.tokens[int(i)].isalpha()))
    match = "the layer's tokens must be increasing ids of the vocabulary"
    for args in (("classify", "-m", path, msg), ("predict", "-m", path, msg)):
        r = nb(*args)
        assert r.returncode == 1 and r.stderr.decode() == \
            f"nbtext: error: {path}: corrupt model file (ValueError: {match})\n", (args, r.stderr)


def _off_by(h, a):
    h["derived"] = {k: [x + 0.5 for x in v] for k, v in h["derived"].items()}


@pytest.mark.parametrize("which", ["two classes", "three classes"])
def test_derived_sums_that_are_not_the_counts_are_refused(tmp_path, good_model, layered, which):
    """The header's derived sums are the counts' (what classify and the daemon score with,
    without reading every count); predict makes them from the counts. A file whose two
    disagree (checksums intact) was read by every command, and classify and predict gave one
    message two verdicts. store.load (and so the daemon) refuses it."""
    good = good_model if which == "two classes" else layered[0]
    path = tmp_path / "m.nbm"
    path.write_bytes(resectioned(good, _off_by))
    r = nb("predict", "-m", path, DATA / "example-ham.eml")
    assert r.returncode == 1 and "corrupt model file (ValueError: derived log_den is not the sum of the counts)" \
        in r.stderr.decode(), r.stderr


def test_document_frequencies_past_the_documents_are_refused(tmp_path, tsv):
    """An idf model's token in more documents than were learned has idf log(N / df) below 0,
    and Complement NB's logarithms of its weighted counts went negative: a math domain error
    (an internal error) in classify, NaN in predict once the derived sums were made to match.
    Refused by store.load and by classify where it reads the token."""
    path = tmp_path / "m.nbm"
    assert nb("train", tsv, "-q", "--no-calibrate", "--ngrams", "1", "--variant", "complement", "--idf",
              "-o", path).returncode == 0
    model = store.load(str(path))
    t = model.vocab.tokens.index("cheap")

    def change(h, a):
        a["doc_freq"] = a["doc_freq"].astype("<f8")
        a["doc_freq"][t] = model.n_documents + 5
    path.write_bytes(resectioned(path.read_bytes(), change))
    match = "document frequencies must be at most the documents learned"
    with pytest.raises(ModelFileError, match=match):
        store.load(str(path))
    r = nb("classify", "-m", path, "-", input=b"cheap pills\n")
    assert r.returncode == 1 and r.stderr.decode() == f"nbtext: error: {path}: corrupt model file ({match})\n"


def test_layer_sections_without_the_layer_are_refused(tmp_path, layered):
    """A file whose layer sections are there but whose header has no layer was scored without
    the layer by every command, silently (and learn wrote it back without them)."""
    good, _ = layered

    def change(h, a):
        del h["layer"]
    path = tmp_path / "m.nbm"
    path.write_bytes(resectioned(good, change))
    for load in (store.load, FastScorer):
        with pytest.raises(ModelFileError, match="the layer's sections are in the file without the header's layer"):
            load(str(path))


def test_a_header_with_a_key_twice_is_refused(tmp_path, good_model):
    """JSON readers disagree on a key given twice (Python's keeps the last, others the first):
    a header or dump settings line with one says two things, and is refused."""
    _, version, hlen, _ = struct.unpack_from("<8sIQI", good_model)
    raw = good_model[24:24 + hlen]
    raw = b'{"classes": ["x", "y"], ' + raw[1:]
    head = struct.pack("<8sIQI", b"NBTEXT\x1a\n", version, len(raw), zlib.crc32(raw)) + raw
    payload = good_model[24 + hlen + (-(24 + hlen) % 8):]
    path = tmp_path / "m.nbm"
    path.write_bytes(head + b"\x00" * (-len(head) % 8) + payload)
    for load in (store.load, FastScorer):
        with pytest.raises(ModelFileError, match="the header holds the key 'classes' twice in one object"):
            load(str(path))
    lines = list(export_lines(store.load(_saved(tmp_path, good_model))))
    lines[1] = '{"classes": ["x", "y"], ' + lines[1][1:]
    with pytest.raises(NbtextError, match="'classes' twice"):
        list(import_lines(iter(lines), "dump"))


def _saved(tmp_path, data: bytes) -> str:
    path = tmp_path / "good.nbm"
    path.write_bytes(data)
    return str(path)


def test_last_seen_both_as_a_section_and_a_day_is_refused(tmp_path, layered):
    """nbtext writes a token's last day as a section or, when every token shares it, as the
    header's last_seen_day; a file with both had the section win, silently."""
    import numpy as np

    good, model = layered

    def change(h, a):
        a["last_seen"] = np.full(len(model.vocab), 20000, dtype="<u2")
        h["last_seen_day"] = 5
    path = tmp_path / "m.nbm"
    path.write_bytes(resectioned(good, change))
    with pytest.raises(ModelFileError, match="last_seen is both a section and the header's last_seen_day"):
        store.load(str(path))


@pytest.mark.parametrize("which", ["two classes", "three classes"])
def test_a_class_of_no_documents_with_counts_is_refused(tmp_path, good_model, layered, which):
    """A class whose document count is 0 while its counts are not (checksums intact) was read
    by every command: its prior, log 0, printed as -Infinity in predict's JSON, and Complement
    NB weighed the other classes by counts that came from no document. store.load refuses it,
    and classify where it reads a token's counts, as it does the other inconsistent counts."""
    good = good_model if which == "two classes" else layered[0]
    path = tmp_path / "m.nbm"
    path.write_bytes(reframed(good, lambda h: h["class_count"].__setitem__(0, 0)))
    first = store.load(_saved(tmp_path, good)).classes[0]
    match = f"the counts of class {first!r} must be 0: it has 0 documents"
    with pytest.raises(ModelFileError, match=re.escape(match)):
        store.load(str(path))
    r = nb("predict", "-m", path, DATA / "example-ham.eml")
    assert r.returncode == 1 and r.stderr.decode() == f"nbtext: error: {path}: corrupt model file (ValueError: {match})\n"
    words = " ".join(t for t in store.load(_saved(tmp_path, good)).vocab.tokens if t.isalpha())
    r = nb("classify", "-m", path, "-", input=words.encode())
    assert r.returncode == 1 and r.stderr.decode() == f"nbtext: error: {path}: corrupt model file ({match})\n"


def test_a_class_that_forget_emptied_still_loads(run, tmp_path):
    """A class that `learn --forget` took every document out of has 0 documents and counts of
    0: a model as it should be, loaded and scored (and learned into again), as is the daemon's
    empty model of a new user."""
    from nbtext.serve.models import empty_like

    corpus = tmp_path / "c"
    for label, texts in (("spam", ["cheap pills buy now", "buy cheap watches"]),
                         ("ham", ["meeting notes lunch", "lunch tomorrow notes"])):
        (corpus / label).mkdir(parents=True)
        for i, text in enumerate(texts):
            (corpus / label / str(i)).write_text(text + "\n")
    model = tmp_path / "m.nbm"
    assert run("train", corpus, "-q", "--no-calibrate", "-o", model).exit_code == 0
    r = run("learn", "-m", model, "--forget", "--label", "ham", corpus / "ham" / "0", corpus / "ham" / "1")
    assert (r.exit_code, r.stderr) == (0, "nbtext: forgot 2 documents as ham\n")
    loaded = store.load(str(model))
    assert list(loaded.class_count) == [0, 2] and loaded.counts.class_totals()[0] == 0
    r = nb("classify", "-m", model, "-", input=b"lunch cheap notes")
    assert r.returncode == 0 and r.stdout == b"spam\t1.000000\n", r.stderr
    assert run("learn", "-m", model, "--label", "ham", corpus / "ham" / "0").exit_code == 0
    empty = tmp_path / "empty.nbm"
    store.save(empty_like(str(model)), str(empty))
    assert list(store.load(str(empty)).class_count) == [0, 0]


def test_import_refuses_the_counts_load_would_refuse(tmp_path, good_model, tsv):
    """import took a dump whose class of 0 documents has counts, or whose token is in more
    documents than were learned, and wrote a model file that every command then refused as
    corrupt. It refuses the dump, with the model file's checks (store.codec.check_documents)."""
    lines = dump_with(good_model, tmp_path, lambda meta: meta.__setitem__("class_count", ["0", "2"]))
    classes = json.loads(lines[1])["classes"]
    with pytest.raises(NbtextError, match=re.escape(
            f"d: malformed dump (ValueError: the counts of class {classes[0]!r} must be 0: it has 0 documents)")):
        import_lines(iter(lines), "d")
    path = tmp_path / "idf.nbm"
    assert nb("train", tsv, "-q", "--no-calibrate", "--ngrams", "1", "--variant", "complement", "--idf",
              "-o", path).returncode == 0
    lines = list(export_lines(store.load(str(path))))
    token, *counts = lines[2].split("\t")
    lines[2] = "\t".join([token, *counts[:-1], "5"])  # (in 5 documents of 4)
    with pytest.raises(NbtextError, match=re.escape(
            "d: malformed dump (ValueError: document frequencies must be at most the documents learned)")):
        import_lines(iter(lines), "d")


def test_pruning_records_past_2_53_are_refused_and_merge_never_sums_past_it(run, tmp_path, good_model):
    """The pruning record's numbers were bounded by 2**63 only: merge sums its models' pruned
    tokens, and two records near that bound made a file that every command then refused (a
    merge that wrote a corrupt model). They are counts, bounded as the others at 2**53, and a
    merge whose sum would pass it is refused, writing nothing."""
    other = tmp_path / "other.tsv"
    other.write_text("spam\tfree money offer\nham\tproject status report\n")
    assert nb("train", other, "-q", "--no-calibrate", "--ngrams", "1", "-o", tmp_path / "o.nbm").returncode == 0

    def with_record(data: bytes, name: str, tokens: int) -> pathlib.Path:
        path = tmp_path / name
        path.write_bytes(reframed(data, set_path("pruned", {"tokens": tokens, "threshold": 1, "documents": 4})))
        return path
    out = tmp_path / "merged.nbm"
    for tokens in (2**53 + 1, 2**63 - 1):
        path = with_record(good_model, "far.nbm", tokens)
        match = "pruned must be {tokens, threshold, documents}, whole numbers from 0 to 2**53"
        with pytest.raises(ModelFileError, match=re.escape(match)):
            store.load(str(path))
        r = run("merge", "-o", out, path, with_record((tmp_path / "o.nbm").read_bytes(), "far2.nbm", tokens))
        assert (r.exit_code, r.stderr) == (1, f"nbtext: error: {path}: corrupt model file (ValueError: {match})\n")
    a = with_record(good_model, "a.nbm", 2**53)
    assert store.load(str(a)).pruned["tokens"] == 2**53
    b = with_record((tmp_path / "o.nbm").read_bytes(), "b.nbm", 1)
    r = run("merge", "-o", out, a, b)
    assert (r.exit_code, r.stderr) == (1, f"nbtext: error: {a}, {b}: merged, their pruned tokens would number "
                                          f"{2**53 + 1}, past 2**53, more than a model file holds\n")
    assert not out.exists()
    b = with_record((tmp_path / "o.nbm").read_bytes(), "b.nbm", 0)
    assert run("merge", "-o", out, a, b).exit_code == 0
    assert store.load(str(out)).pruned == {"tokens": 2**53, "threshold": 1, "documents": 4}


# -- sums past what a model file holds ------------------------------------------------------------

NEAR = 2**53 - 1  # (a number a model file holds: one more is 2**53, two more what no file holds)


def near_limit(tmp_path, run, docs: str, change, train: list) -> pathlib.Path:
    """A model trained on ``docs`` (a TSV's text) whose dump is changed by change(settings,
    rows) (rows: token -> its counts as the dump writes them) and imported: a file that loads,
    made to hold a number near 2**53."""
    tsv = tmp_path / "near.tsv"
    tsv.write_text(docs)
    path = tmp_path / "near.nbm"
    assert run("train", tsv, "-q", "--no-calibrate", *train, "-o", path).exit_code == 0
    head, settings, *lines = export_lines(store.load(str(path)))
    settings = json.loads(settings)
    rows = {json.loads(tok): counts for tok, counts in (line.split("\t", 1) for line in lines)}
    change(settings, rows)
    dump = [head, json.dumps(settings), *(f"{json.dumps(t)}\t{c}" for t, c in rows.items())]
    store.save(import_lines(iter(dump), "near"), str(path))
    store.load(str(path))  # (a file within the limits)
    return path


def set_count(token: str, at: int, value: int):
    def change(settings, rows):
        counts = rows[token].split("\t")
        counts[at] = str(value)
        rows[token] = "\t".join(counts)
    return change


def set_documents(*class_count: int):
    def change(settings, rows):
        settings["class_count"] = [str(n) for n in class_count]
    return change


def both(*changes):
    return lambda settings, rows: [change(settings, rows) for change in changes]


UNIGRAMS = ["--ngrams", "1", "--char-ngrams", "0,0"]
TWO, THREE = "spam\tbuy cheap pills\nham\tmeeting at noon\n", "spam\tbuy cheap pills\nham\tmeeting at noon\nnews\tpills\n"
IDF = [*UNIGRAMS, "--variant", "complement", "--idf"]
# What ``n`` more documents take to NEAR + n: (the model near the limit: its documents, how its
# dump is changed, train's options; the documents, n of them, that add to it; what is refused)
LIMITS = {
    "a token's count": (TWO, set_count("pills", 1, NEAR), UNIGRAMS,
                        lambda n: f"spam\t{' pills' * n}\nham\tlunch\n",
                        "the count of token 'pills' in class 'spam' would be {}"),
    "a token's count, sparse": (THREE, set_count("pills", 2, NEAR), UNIGRAMS,
                                lambda n: f"spam\t{' pills' * n}\nham\tlunch\n",
                                "the count of token 'pills' in class 'spam' would be {}"),
    "a class's documents": (TWO, set_documents(1, NEAR), UNIGRAMS,
                            lambda n: "".join(f"spam\toffer {i}\n" for i in range(n)) + "ham\tlunch\n",
                            "class 'spam' would hold {} documents"),
    "a token's documents": (TWO, both(set_documents(2**52, 2**52), set_count("pills", 2, NEAR)), IDF,
                            lambda n: "".join(f"ham\tpills {i}\n" for i in range(n)) + "spam\toffer\n",
                            "token 'pills' would be in {} documents"),
}


@pytest.mark.parametrize("kernel", ["c", "python"])
@pytest.mark.parametrize("case", sorted(LIMITS))
def test_merge_refuses_a_sum_past_2_53_exactly_and_writes_nothing(run, tmp_path, case, kernel):
    """merge summed two loadable models' counts, a class's documents, a token's documents past
    2**53 and wrote a file that every command then refused; and 2**53 + 1, which a float64 sum
    rounds to 2**53, was written as 2**53, a count silently one short. Refused, writing
    nothing; a sum of 2**53 itself is merged."""
    docs, change, train, more, why = LIMITS[case]
    near = near_limit(tmp_path, run, docs, change, train)
    out = tmp_path / "merged.nbm"
    for n in (2, 3, 1):
        other = tmp_path / f"other{n}.nbm"
        (tmp_path / "other.tsv").write_text(more(n))
        assert run("train", tmp_path / "other.tsv", "-q", "--no-calibrate", *train, "-o", other).exit_code == 0
        with implementation(kernel):
            r = run("merge", "-o", out, near, other)
        if n == 1:
            assert r.exit_code == 0, r.stderr
            break
        assert (r.exit_code, r.stdout, r.stderr) == (
            1, "", f"nbtext: error: {near}, {other}: merged, {why.format(NEAR + n)}, past 2**53, more than a model "
                   "file holds\n")
        assert not out.exists()
    merged = store.load(str(out)).counts
    assert 2**53 in [*merged.class_count, *merged.doc_freq, *merged.token_sums.values]


@pytest.mark.parametrize("kernel", ["c", "python"])
@pytest.mark.parametrize("case", sorted(LIMITS))
def test_learn_refuses_a_sum_past_2_53_exactly_and_leaves_the_model(run, tmp_path, case, kernel):
    """learn added documents to a model near 2**53 and saved a file that every command then
    refused (the model lost), or, one past 2**53, a count rounded back to 2**53 (the document
    in the ledger, its count not). Refused, the model file as it was; learning to 2**53 itself
    is learned."""
    docs, change, train, more, why = LIMITS[case]
    near = near_limit(tmp_path, run, docs, change, train)
    for n in (2, 3, 1):
        label = more(n).split("\t")[0]
        label_docs = [line.split("\t")[1] for line in more(n).splitlines() if line.startswith(label + "\t")]
        paths = []
        for i, text in enumerate(label_docs):
            paths.append(tmp_path / f"doc{n}-{i}.txt")
            paths[-1].write_text(text)
        before = near.read_bytes()
        with implementation(kernel):
            r = run("learn", "-m", near, "--label", label, *paths)
        if n == 1:
            assert r.exit_code == 0, r.stderr
            break
        assert (r.exit_code, r.stdout, r.stderr) == (
            1, "", f"nbtext: error: {near}: with these documents learned, {why.format(NEAR + n)}, past 2**53, "
                   "more than a model file holds\n")
        assert near.read_bytes() == before
    learned = store.load(str(near)).counts
    assert 2**53 in [*learned.class_count, *learned.doc_freq, *learned.token_sums.values]


def test_merge_keeps_a_token_in_2_31_documents(run, tmp_path):
    """merge summed the documents a token is in as 32-bit integers: a token of an idf model in
    2**31 documents wrapped below zero (numpy's warning on stderr) and the file written was
    refused by every command."""
    near = near_limit(tmp_path, run, TWO, both(set_documents(3 * 2**30, 1), set_count("pills", 2, 2**31)), IDF)
    (tmp_path / "other.tsv").write_text("ham\tpills later\nspam\toffer\n")
    other, out = tmp_path / "other.nbm", tmp_path / "merged.nbm"
    assert run("train", tmp_path / "other.tsv", "-q", "--no-calibrate", *IDF, "-o", other).exit_code == 0
    r = run("merge", "-o", out, near, other)
    assert r.exit_code == 0 and "Warning" not in r.stderr
    merged = store.load(str(out))
    assert merged.counts.doc_freq[merged.vocab.index["pills"]] == 2**31 + 1


def test_table_merge_and_learn_refuse_rows_past_2_53_and_write_nothing(run, tmp_path):
    """The table models' merge and learn summed a class's rows (and its counts of a column's
    values, at most its rows) past 2**53: a file every command then refused (for learn, the
    model lost), or one past, rounded back to 2**53 and written one short. Refused, writing
    nothing; rows to 2**53 itself are learned."""
    (tmp_path / "near.csv").write_text("label,color,size\nspam,red,1.5\nham,blue,2.0\n")
    near = tmp_path / "near.nbm"
    assert run("train", tmp_path / "near.csv", "-q", "--no-calibrate", "-o", near).exit_code == 0
    head, settings, *arrays = export_lines(store.load(str(near)))
    settings = json.loads(settings)
    settings["class_count"][1] = NEAR
    cat = json.loads(arrays[0])
    assert cat["array"] == "cat_counts" and cat["data"] == [0, 1, 1, 0]  # (ham: red, blue; spam: red, blue)
    cat["data"][2] = NEAR
    store.save(import_lines(iter([head, json.dumps(settings), json.dumps(cat), *arrays[1:]]), "near"), str(near))
    out = tmp_path / "merged.nbm"
    for n in (2, 3, 1):
        rows = "".join(f"spam,red,1.{i}\n" for i in range(n))
        (tmp_path / "more.csv").write_text(f"label,color,size\n{rows}ham,blue,2.5\n")
        other = tmp_path / "more.nbm"
        assert run("train", tmp_path / "more.csv", "-q", "--no-calibrate", "-o", other).exit_code == 0
        (tmp_path / "learn.csv").write_text("color,size\n" + "".join(f"red,1.{i}\n" for i in range(n)))
        before = near.read_bytes()
        merged = run("merge", "-o", out, near, other)
        learned = run("learn", "-m", near, "--label", "spam", tmp_path / "learn.csv")
        if n == 1:
            assert merged.exit_code == learned.exit_code == 0, merged.stderr + learned.stderr
            break
        why = f"class 'spam' would hold {NEAR + n} rows, past 2**53, more than a model file holds\n"
        assert (merged.exit_code, merged.stderr) == (1, f"nbtext: error: {near}, {other}: merged, {why}")
        assert (learned.exit_code, learned.stderr) == (1, f"nbtext: error: {near}: with these rows learned, {why}")
        assert not out.exists() and near.read_bytes() == before
    for path in (out, near):
        stats = store.load(str(path)).stats
        assert stats.class_count[1] == 2**53
