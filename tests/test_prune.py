"""`nbtext prune`: old, rare tokens taken out of a model in place, as bogoutil -m and
SpamAssassin's expiry do, by the last day each token was seen; what remains is counted
exactly as before, and learn and --forget stay exact on it."""
import numpy as np
import pytest

from conftest import DATA, ROOT, TODAY
from nbtext import store
from nbtext.operations import PruneRule, prune, prune_keep

FIXTURES = ROOT / "tests" / "fixtures"


def aged(path, old_share: int = 2, days_ago: int = 100):
    """The model at path with every ``old_share``-th token last seen ``days_ago`` days ago
    (saved); returns the model as saved."""
    m = store.load(str(path))
    m.counts.last_seen[::old_share] = TODAY - days_ago
    store.save(m, str(path))
    return store.load(str(path))


def token_counts(m) -> dict:
    """Each token's counts per class, as exact integers."""
    fc = np.asarray(m.feature_count)
    return dict(zip(m.vocab.tokens, map(tuple, fc.T.astype(np.int64).tolist())))  # (int() of each, at once)


def test_prune_takes_out_old_rare_tokens_and_counts_the_rest_as_before(run, sample_copy):
    before = aged(sample_copy)
    old = before.counts.last_seen < TODAY - 90
    rare = before.counts.token_totals() <= 1
    r = run("prune", "-m", sample_copy, "--older-than", "90")
    assert r.exit_code == 0, r.stderr
    n_before, gone = len(before.vocab), int((old & rare).sum())
    assert 0 < gone < n_before
    assert r.stderr == f"nbtext: took out {gone:,} of {n_before:,} tokens; {n_before - gone:,} remain in {sample_copy}\n"
    after = store.load(str(sample_copy))
    want = {t: c for (t, c), drop in zip(token_counts(before).items(), old & rare) if not drop}
    assert token_counts(after) == want
    assert list(after.class_count) == list(before.class_count) and after.ledger == before.ledger


def test_prune_counts_days_on_the_clock_that_marks_the_tokens(run, sample_copy, monkeypatch):
    """prune's "today" is the day new counts mark their tokens last seen (nbtext.nb.counts.today,
    one clock): a hundred days on, the sample's rare tokens are older than 90 days and go; on the
    day they were counted, none is."""
    from nbtext.nb import counts

    assert run("prune", "-m", sample_copy, "--older-than", "90", "--dry-run").stderr.startswith("nbtext: would take out 0 ")
    before = store.load(str(sample_copy))
    monkeypatch.setattr(counts, "today", lambda: TODAY + 100)
    r = run("prune", "-m", sample_copy, "--older-than", "90")
    assert r.exit_code == 0, r.stderr
    rare = int((before.counts.token_totals() <= 1).sum())
    assert rare > 0 and r.stderr.startswith(f"nbtext: took out {rare:,} of {len(before.vocab):,} tokens")


def test_learn_and_forget_stay_exact_on_a_pruned_model(run, sample_copy, tmp_path):
    aged(sample_copy)
    spam = sorted((DATA / "corpus" / "spam").iterdir())[0]  # learned before the prune
    assert run("prune", "-m", sample_copy, "--older-than", "90").exit_code == 0
    pruned = store.load(str(sample_copy))
    new = tmp_path / "new.eml"
    new.write_bytes(b"From: x@new.example\nSubject: brand new words\n\nzyzzyva quokka\n")
    assert run("learn", "-m", sample_copy, "--label", "ham", new).exit_code == 0
    assert run("learn", "-m", sample_copy, "--label", "ham", "--forget", new).exit_code == 0
    assert token_counts(store.load(str(sample_copy))) == token_counts(pruned)
    # a document learned before the prune is forgotten exactly on the tokens that remain
    r = run("learn", "-m", sample_copy, "--label", "spam", "--forget", spam)
    assert r.exit_code == 0, r.stderr
    forgot = store.load(str(sample_copy))
    m = store.load(str(sample_copy))
    m.add([pruned.tokenizer(spam.read_bytes())], ["spam"])  # learned back: the pruned model's counts
    back, want = token_counts(m), token_counts(pruned)
    assert {t: back[t] for t in want} == want  # (and its pruned tokens back, at its counts alone)
    assert all(sum(back[t]) == 1 for t in set(back) - set(want))
    assert forgot.class_count[forgot.classes.index("spam")] == pruned.class_count[pruned.classes.index("spam")] - 1


def test_max_tokens_keeps_the_most_recently_seen(run, sample_copy):
    before = aged(sample_copy, old_share=3, days_ago=10)
    recent = int((before.counts.last_seen == TODAY).sum())
    r = run("prune", "-m", sample_copy, "--max-tokens", str(recent))
    assert r.exit_code == 0, r.stderr
    after = store.load(str(sample_copy))
    assert len(after.vocab) == recent and (after.counts.last_seen == TODAY).all()


def test_dry_run_changes_nothing_and_a_prune_needs_a_rule(run, sample_copy):
    aged(sample_copy)
    data = sample_copy.read_bytes()
    r = run("prune", "-m", sample_copy, "--older-than", "90", "--dry-run")
    assert r.exit_code == 0 and r.stderr.startswith("nbtext: would take out ")
    assert sample_copy.read_bytes() == data
    r = run("prune", "-m", sample_copy)
    assert r.exit_code == 2 and "give --older-than DAYS, --max-tokens N, or both" in r.stderr
    assert sample_copy.read_bytes() == data


def test_prune_refuses_what_is_not_a_text_model(run, tmp_path):
    missing = tmp_path / "none.nbm"
    r = run("prune", "-m", missing, "--older-than", "1")
    assert r.exit_code == 1 and r.stderr.startswith("nbtext: error: ") and str(missing) in r.stderr
    table = tmp_path / "iris.nbm"
    assert run("train", FIXTURES / "iris.csv", "--label-column", "class", "-q", "-o", table).exit_code == 0
    data = table.read_bytes()
    r = run("prune", "-m", table, "--older-than", "1")
    assert r.exit_code == 1
    assert r.stderr == "nbtext: error: prune takes tokens out of text models; a table model has none\n"
    assert table.read_bytes() == data


def test_a_model_without_days_loses_nothing_by_age():
    """A model file from before days were kept: no token is known to be old."""
    m = store.load(str(FIXTURES / "format4-complement-idf.nbm"))
    assert not m.counts.last_seen.any()
    assert prune(m, PruneRule(older_than=0, seen_at_most=10**9), today=TODAY) == 0
    keep = prune_keep(m.counts, PruneRule(max_tokens=5), today=TODAY)
    assert len(keep) == 5 and list(keep) == sorted(keep)
