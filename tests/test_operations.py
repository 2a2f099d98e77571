"""learn / forget / merge / export / import: exact algebra on counts, and safety."""
import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nbtext import store
from nbtext.model import Model
from nbtext.operations import merge
from nbtext.store.dump import export_lines, import_lines
from nbtext.settings import ModelSettings, TokenizerSettings

from conftest import DATA, TODAY
from test_memory_budget import growing


def as_dict(model):
    """(each token with a count: its counts per class, each class: its documents), every value
    exactly as the model holds it."""
    fc, tokens = model.feature_count, model.vocab.tokens
    held = np.flatnonzero(fc.any(axis=0))
    return ({tokens[i]: tuple(c) for i, c in zip(held.tolist(), fc[:, held].T.tolist())},
            dict(zip(model.classes, model.class_count)))


@pytest.fixture
def trained(sample_copy):
    return sample_copy


@pytest.mark.slow
def test_learn_then_forget_restores_exact_counts(run, trained, tmp_path):
    msg = tmp_path / "new.eml"
    msg.write_bytes(b"From: x@new.example\nSubject: brand new words\n\nzyzzyva quokka\n")
    before = as_dict(store.load(str(trained)))
    export_before = run("export", "-m", trained).stdout
    predict = ("predict", "-m", trained, DATA / "example-spam.eml", DATA / "example-ham.eml", "--format", "jsonl")
    predicted_before = run(*predict).stdout
    r = run("learn", "-m", trained, "--label", "spam", msg)
    assert r.exit_code == 0 and "learned 1 document as spam" in r.stderr
    after = store.load(str(trained))
    assert after.class_count[after.classes.index("spam")] == before[1]["spam"] + 1
    assert "quokka" in after.vocab.index
    r = run("learn", "-m", trained, "--label", "spam", msg)  # again: a no-op
    assert "learned 0 documents" in r.stderr and "1 already learned" in r.stderr
    assert as_dict(store.load(str(trained)))[1]["spam"] == before[1]["spam"] + 1
    assert run(*predict).stdout != predicted_before
    r = run("learn", "-m", trained, "--label", "spam", "--forget", msg)
    assert r.exit_code == 0
    assert as_dict(store.load(str(trained))) == before
    # exactly as before: the new tokens are gone from the vocabulary too (left at count zero,
    # they widened the smoothing denominator and moved every prediction: 0.999314 vs 0.999310)
    assert "quokka" not in store.load(str(trained)).vocab.index
    assert run("export", "-m", trained).stdout == export_before
    assert run(*predict).stdout == predicted_before


def test_forget_errors_leave_the_model_untouched(run, trained, tmp_path):
    msg = tmp_path / "never.eml"
    msg.write_bytes(b"Subject: never learned\nFrom: a@b.example\n\nhello\n")
    before = trained.read_bytes()
    r = run("learn", "-m", trained, "--label", "spam", "--forget", msg)
    assert r.exit_code == 1
    assert r.stderr == f"nbtext: error: {msg}: was never learned as 'spam', so it cannot be forgotten\n"
    r = run("learn", "-m", trained, "--label", "eggs", "--forget", msg)
    assert r.stderr == "nbtext: error: unknown label 'eggs': the model's classes are ham, spam\n"
    # a message learned by train can be forgotten
    first_spam = sorted((DATA / "corpus" / "spam").iterdir())[0]
    assert run("learn", "-m", trained, "--label", "spam", "--forget", first_spam).exit_code == 0
    assert trained.read_bytes() != before


@pytest.mark.slow
def test_export_import_round_trip_is_exact(run, trained, tmp_path):
    r = run("export", "-m", trained)
    assert r.exit_code == 0 and r.stdout.startswith("# nbtext dump 1\n")
    dump = tmp_path / "m.dump"
    dump.write_text(r.stdout)
    assert run("import", dump, "-o", tmp_path / "back.nbm").exit_code == 0
    assert (tmp_path / "back.nbm").read_bytes() == trained.read_bytes()
    r = run("import", DATA / "example-ham.eml", "-o", tmp_path / "x.nbm")
    assert r.exit_code == 1 and "not an nbtext dump" in r.stderr


@pytest.fixture
def pruned_model(run, tmp_path):
    """A model whose training pruned tokens, through the command line: 200 documents of 60
    rare words each (test_memory_budget.growing) outgrow a 1M budget."""
    corpus, model = tmp_path / "c.tsv", tmp_path / "p.nbm"
    corpus.write_text("".join(f"{d.label}\t{d.data.decode()}\n" for d in growing(200)))
    r = run("train", corpus, "-q", "-o", model, "--max-memory", "1M")
    assert r.exit_code == 0, r.stderr
    return model


def exported_and_imported(run, model, tmp_path, edit=None):
    """(the dump of ``model``, the model file `nbtext import` makes of it, edited by ``edit``
    (settings line) -> settings line, the import's result)."""
    r = run("export", "-m", model)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.split("\n")
    if edit:
        lines[1] = json.dumps(edit(json.loads(lines[1])))
    dump, back = tmp_path / "m.dump", tmp_path / "back.nbm"
    dump.write_text("\n".join(lines))
    return dump, back, run("import", dump, "-o", back)


def test_a_pruned_model_exports_and_imports_to_the_same_file(run, pruned_model, tmp_path):
    """The dump lost train's record of what its memory budget pruned: the imported model said
    "counts  exact: nothing pruned" and its file differed from the one exported."""
    info = run("info", "-m", pruned_model, "--top", "3").stdout
    assert "counts         pruned: tokens in at most " in info
    dump, back, r = exported_and_imported(run, pruned_model, tmp_path)
    assert r.exit_code == 0, r.stderr
    assert back.read_bytes() == pruned_model.read_bytes()  # (cmp)
    assert run("info", "-m", back, "--top", "3").stdout == info


def dated(path, day: int, every: int = 1):
    """The model at path with every ``every``-th token last seen on ``day`` (saved)."""
    m = store.load(str(path))
    m.counts.last_seen[::every] = day
    store.save(m, str(path))


def test_each_tokens_last_day_survives_export_and_import(run, pruned_model, tmp_path):
    """The dump held no days: import dated every token on the day of the import, so a model
    trained on another day came back another file, and `prune --older-than` found nothing old
    in it. One day for every token (as train leaves them) and a day per token (as learn and
    prune do) both come back."""
    dated(pruned_model, TODAY - 100)
    _, back, r = exported_and_imported(run, pruned_model, tmp_path)
    assert r.exit_code == 0, r.stderr
    assert back.read_bytes() == pruned_model.read_bytes()
    dated(pruned_model, TODAY - 2, every=3)
    dump, back, r = exported_and_imported(run, pruned_model, tmp_path)
    assert r.exit_code == 0, r.stderr
    assert back.read_bytes() == pruned_model.read_bytes()
    assert dump.read_text().split("\n")[2].endswith(f"\t{TODAY - 2}")  # (a day per token: its line's last field)
    old = ("--older-than", "90", "--seen-at-most", "1000000", "--dry-run")
    dry = [run("prune", "-m", path, *old).stderr for path in (pruned_model, back)]
    assert dry[0] == dry[1].replace(str(back), str(pruned_model)) and "would take out 0 " not in dry[0]


HOSTILE_RECORDS = {
    "pruned negative": ("pruned", {"tokens": -1, "threshold": 5, "documents": 200}),
    "pruned huge": ("pruned", {"tokens": 2**63, "threshold": 5, "documents": 200}),
    "pruned a float": ("pruned", {"tokens": 1.0, "threshold": 5, "documents": 200}),
    "pruned a string": ("pruned", {"tokens": "12", "threshold": 5, "documents": 200}),
    "pruned a boolean": ("pruned", {"tokens": True, "threshold": 5, "documents": 200}),
    "pruned an extra key": ("pruned", {"tokens": 1, "threshold": 5, "documents": 200, "more": 1}),
    "pruned a key short": ("pruned", {"tokens": 1, "threshold": 5}),
    "pruned a list": ("pruned", [1, 5, 200]),
    "day past 65535": ("last_seen_day", 65536),
    "day negative": ("last_seen_day", -1),
    "day a float": ("last_seen_day", 20000.0),
    "day a string": ("last_seen_day", "yesterday"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_RECORDS))
def test_import_refuses_a_hostile_pruning_record_or_day(run, pruned_model, tmp_path, name):
    """A dump is a stranger's: its pruning record and days are checked as a model file's header's
    are (store.codec), refused naming the dump, and no model is written."""
    key, value = HOSTILE_RECORDS[name]
    dump, back, r = exported_and_imported(run, pruned_model, tmp_path, lambda d: {**d, key: value})
    assert r.exit_code == 1 and not back.exists()
    assert r.stderr.startswith(f"nbtext: error: {dump}: malformed dump (ValueError: {key}") and "\n" == r.stderr[-1:]
    assert r.stderr.count("\n") == 1  # (no traceback)


NOT_AS_WRITTEN = "a token's day must be written as the dump writes it (digits), not "


@pytest.mark.parametrize("day, problem", [
    ("1.5", NOT_AS_WRITTEN + "'1.5'"), ("-1", NOT_AS_WRITTEN + "'-1'"), ("007", NOT_AS_WRITTEN + "'007'"),
    ("", NOT_AS_WRITTEN + "''"), ("65536", "last_seen_day '65536' is not a day from 0 to 65535")])
def test_import_refuses_a_hostile_day_of_a_token(run, pruned_model, tmp_path, day, problem):
    dated(pruned_model, TODAY - 2, every=3)
    dump, back, r = exported_and_imported(run, pruned_model, tmp_path)
    lines = dump.read_text().split("\n")
    lines[2] = lines[2].rsplit("\t", 1)[0] + "\t" + day
    dump.write_text("\n".join(lines))
    r = run("import", dump, "-o", back.with_name("x.nbm"))
    assert r.exit_code == 1 and not back.with_name("x.nbm").exists()
    assert r.stderr == f"nbtext: error: {dump}:3: {problem}\n"


def test_a_dump_of_an_older_nbtext_imports_as_exact_counts_dated_today(run, pruned_model, tmp_path):
    """A dump written before dumps held the pruning record and the days (their settings line
    had neither) still imports: as a model of exact counts whose tokens were seen today."""
    def older(d):
        return {key: v for key, v in d.items() if key not in ("pruned", "last_seen_day")}

    _, back, r = exported_and_imported(run, pruned_model, tmp_path, older)
    assert r.exit_code == 0, r.stderr
    assert "counts         exact: nothing pruned" in run("info", "-m", back).stdout
    old = store.load(str(back))
    assert old.pruned is None and (old.counts.last_seen == TODAY).all()
    assert as_dict(old) == as_dict(store.load(str(pruned_model)))


def test_train_on_a_plus_b_equals_merge_of_a_and_b(run, tmp_path):
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_text("spam\tbuy cheap pills now\nham\tmeeting at noon\n")
    b.write_text("spam\tcheap watches\nham\tnoon lunch with bob\nham\tbob says hi\n")
    ab = tmp_path / "ab.tsv"
    ab.write_text(a.read_text() + b.read_text())
    for name in ("a", "b", "ab"):
        assert run("train", tmp_path / f"{name}.tsv", "-o", tmp_path / f"{name}.nbm", "-q").exit_code == 0
    assert run("merge", "-o", tmp_path / "m1.nbm", tmp_path / "a.nbm", tmp_path / "b.nbm").exit_code == 0
    assert run("merge", "-o", tmp_path / "m2.nbm", tmp_path / "b.nbm", tmp_path / "a.nbm").exit_code == 0
    want = as_dict(store.load(str(tmp_path / "ab.nbm")))
    assert as_dict(store.load(str(tmp_path / "m1.nbm"))) == want
    assert as_dict(store.load(str(tmp_path / "m2.nbm"))) == want


TRANSFORMS = ("--variant", "complement", "--tf", "--idf", "--length-norm", "--norm",
              "--ngrams", "1", "--char-ngrams", "0,0")


def test_transformed_complement_models_learn_merge_and_round_trip(run, tmp_path):
    """--tf/--idf/--length-norm keep sums (and document frequencies) as the state, so the
    operations of a mail filter stay exact for them too."""
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_text("spam\tbuy cheap pills now now\nham\tmeeting at noon\n")
    b.write_text("spam\tcheap watches\nham\tnoon lunch with bob\nham\tbob says hi\n")
    (tmp_path / "ab.tsv").write_text(a.read_text() + b.read_text())
    for name in ("a", "b", "ab"):
        r = run("train", tmp_path / f"{name}.tsv", *TRANSFORMS, "-o", tmp_path / f"{name}.nbm", "-q")
        assert r.exit_code == 0, r.stderr
    assert run("merge", "-o", tmp_path / "m.nbm", tmp_path / "a.nbm", tmp_path / "b.nbm").exit_code == 0
    merged, ab = store.load(str(tmp_path / "m.nbm")), store.load(str(tmp_path / "ab.nbm"))
    assert merged.settings.idf and merged.settings.length_norm
    assert as_dict(merged)[0].keys() == as_dict(ab)[0].keys() and as_dict(merged)[1] == as_dict(ab)[1]
    order = [merged.vocab.index[t] for t in ab.vocab.tokens]
    np.testing.assert_allclose(merged.feature_count[:, order], ab.feature_count, atol=1e-12)
    np.testing.assert_array_equal(merged.doc_freq[order], ab.doc_freq)
    r = run("export", "-m", tmp_path / "ab.nbm")
    (tmp_path / "ab.dump").write_text(r.stdout)
    assert r.stdout.splitlines()[2].count("\t") == 3  # two classes and the document frequency
    assert run("import", tmp_path / "ab.dump", "-o", tmp_path / "back.nbm").exit_code == 0
    assert (tmp_path / "back.nbm").read_bytes() == (tmp_path / "ab.nbm").read_bytes()
    msg = tmp_path / "new.txt"
    msg.write_text("quokka cheap\n")
    before = store.load(str(tmp_path / "ab.nbm"))
    assert run("learn", "-m", tmp_path / "ab.nbm", "--label", "spam", msg).exit_code == 0
    assert store.load(str(tmp_path / "ab.nbm")).doc_freq.sum() == before.doc_freq.sum() + 2
    assert run("learn", "-m", tmp_path / "ab.nbm", "--label", "spam", "--forget", msg).exit_code == 0
    after = store.load(str(tmp_path / "ab.nbm"))
    cols = [after.vocab.index[t] for t in before.vocab.tokens]
    np.testing.assert_allclose(after.feature_count[:, cols], before.feature_count, atol=1e-12)
    np.testing.assert_array_equal(after.doc_freq[cols], before.doc_freq)
    fresh = [i for t, i in after.vocab.index.items() if t not in before.vocab.index]
    assert not fresh and after.vocab.tokens == before.vocab.tokens  # forgotten with their documents
    r = run("train", a, "--tf", "-o", tmp_path / "x.nbm")
    assert r.exit_code == 1 and "--tf is a Complement NB transform: it needs --variant complement" in r.stderr


def test_merge_refuses_mismatched_settings(run, tmp_path):
    t = tmp_path / "a.tsv"
    t.write_text("spam\tbuy\nham\thi\n")
    run("train", t, "-o", tmp_path / "a.nbm", "-q")
    run("train", t, "--ngrams", "3", "-o", tmp_path / "b.nbm", "-q")
    r = run("merge", "-o", tmp_path / "m.nbm", tmp_path / "a.nbm", tmp_path / "b.nbm")
    assert r.exit_code == 1
    assert "tokenizer setting ngram_max differs" in r.stderr and "(" + str(tmp_path / "a.nbm") + ": 2" in r.stderr
    assert not (tmp_path / "m.nbm").exists()


@pytest.mark.slow
def test_concurrent_learn_loses_no_counts(trained, tmp_path):
    msgs = []
    for i in range(10):
        p = tmp_path / f"c{i}.eml"
        p.write_bytes(f"From: a@b.example\nSubject: concurrent {i}\n\nword{i} shared\n".encode())
        msgs.append(p)
    before = store.load(str(trained)).class_count.copy()
    procs = [subprocess.Popen([sys.executable, "-m", "nbtext", "learn", "-m", str(trained), "--label", "ham",
                               "-q", str(p)]) for p in msgs]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    after = store.load(str(trained))
    assert after.class_count[0] == before[0] + 10
    assert all(f"word{i}" in after.vocab.index for i in range(10))
    assert after.feature_count[0, after.vocab.index["shared"]] >= 10


words = st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f"]), min_size=1, max_size=8)
docs = st.lists(st.tuples(st.sampled_from(["x", "y"]), words), min_size=2, max_size=12)


def model_of(pairs, classes=("x", "y")):
    m = Model.empty(TokenizerSettings(), ModelSettings(), classes)
    m.add([t for _, t in pairs], [lab for lab, _ in pairs])
    return m


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(docs, docs)
def test_algebra_merge_is_training_on_the_union(a, b):
    assert as_dict(merge([("a", model_of(a)), ("b", model_of(b))])) == as_dict(model_of(a + b))
    assert as_dict(merge([("a", model_of(a)), ("b", model_of(b))])) == \
        as_dict(merge([("b", model_of(b)), ("a", model_of(a))]))


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(docs, docs)
def test_algebra_learn_then_forget_restores_counts(a, extra):
    m = model_of(a)
    before = store.encode(m)
    m.add([t for _, t in extra], [lab for lab, _ in extra])
    m.add([t for _, t in extra], [lab for lab, _ in extra], weight=-1)
    assert store.encode(m) == before  # counts, vocabulary and its order, byte for byte


@settings(max_examples=40, deadline=None)
@given(docs)
def test_algebra_dump_round_trip(a):
    m = model_of(a)
    back = import_lines(list(export_lines(m)), "dump")
    assert store.encode(back) == store.encode(m)


def test_classify_learn_learns_the_verdict_once(run, trained):
    before = store.load(str(trained)).class_count.copy()
    msg = (DATA / "example-spam.eml").read_bytes()
    r = run("classify", "-m", trained, "--learn", input=msg)
    assert r.stdout.startswith("spam\t")
    after = store.load(str(trained)).class_count
    assert after[1] == before[1] + 1 and after[0] == before[0]
    run("classify", "-m", trained, "--learn", input=msg)  # the ledger makes it a no-op
    assert store.load(str(trained)).class_count[1] == before[1] + 1


def test_classify_learn_skips_unsure(run, tmp_path):
    t = tmp_path / "a.tsv"
    t.write_text("spam\tbuy now\nham\tlunch at noon\n")
    model = tmp_path / "m.nbm"
    run("train", t, "-o", model, "-q")
    m = store.load(str(model))
    m.decision.unsure = (0.0, 1.0)  # everything is unsure
    store.save(m, str(model))
    before = model.read_bytes()
    # a message of unknown words scores the prior, 0.5: inside the band
    r = run("classify", "-m", model, "--learn", "--exit-code", input="zzz unknown words")
    assert r.exit_code == 2 and model.read_bytes() == before


def test_predict_jsonl_explain(run, trained):
    import json
    r = run("predict", "-m", trained, "--format", "jsonl", "--explain", "3", DATA / "example-spam.eml")
    row = json.loads(r.stdout)
    e = row["explain"]
    assert row["label"] == "spam" and set(e) == {"prior", "unknown_tokens", "for", "against"}
    assert 1 <= len(e["for"]) <= 3 and all(v > 0 for _, v in e["for"])
    assert run("predict", "-m", trained, "--explain", "3", DATA / "example-spam.eml").exit_code == 2


def test_the_ledger_digest_is_blake2b_of_label_nul_and_bytes():
    """A model file's ledger holds these digests: learn and forget find documents by them, so
    they must stay 16 bytes of BLAKE2b over the label, a NUL and the document's bytes (hashed
    without joining them: the same hash)."""
    import hashlib

    from nbtext.operations import digest

    for label, data in (("spam", b""), ("ham", b"Subject: hi\n\nbody"), ("sp\u00e1m", bytes(range(256)) * 300),
                        ("ham", "text \udcff with a surrogate")):
        raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
        assert digest(label, data) == hashlib.blake2b(label.encode() + b"\x00" + raw, digest_size=16).digest()
