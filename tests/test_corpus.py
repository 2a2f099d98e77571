"""The real corpora of ../shared/data (skipped only when absent; CI has them)."""
import json

import pytest


pytestmark = pytest.mark.slow  # (make check leaves these out: make test runs them)


def test_spamassassin_split_default_settings(run, spamassassin_split, spamassassin_model):
    """(spamassassin_model: `nbtext train` of the split's training messages, default options.)"""
    d = json.loads(run("eval", "-m", spamassassin_model, spamassassin_split[1], "--format", "json").stdout)
    assert d["documents"] == 650
    assert d["accuracy"] >= 0.97


def test_spamassassin_max_fpr_holds_on_held_out_ham_and_still_filters(run, tmp_path, spamassassin_split):
    """--max-fpr 0.2%, the rate a mail admin asks for: met on the held-out split, with most spam
    still caught. (Before out-of-fold scoring left out the tokens a fold's model never saw,
    7 of the 2,200 training ham scored P(spam) = 1 out of fold and any rate under 0.32% was
    refused.)"""
    train, test = spamassassin_split
    model = tmp_path / "sa.nbm"
    r = run("train", train, "-o", model, "--max-fpr", "0.002")
    assert r.exit_code == 0, r.stderr
    assert "in 5 internal folds it calls 0.18% of non-spam positive" in r.stderr  # 4 of 2,200
    d = json.loads(run("eval", "-m", model, test, "--format", "json").stdout)
    assert d["false_positive_rate"] <= 0.002 and d["false_negative_rate"] < 0.5
