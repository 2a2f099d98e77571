"""train's memory budget (--max-memory, batch.train.Reduction): a corpus whose distinct tokens
outgrow it trains in bounded memory, keeps exact counts of the tokens it keeps and says in
`info` that it pruned; a corpus under it gives the very model trained without it."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from nbtext import store
from nbtext.store import codec
from nbtext.batch.train import train_model
from nbtext.errors import SettingError
from nbtext.read import Document
from nbtext.settings import TokenizerSettings

from conftest import ROOT, implementation


def growing(n_docs: int, seed: int = 0) -> list[Document]:
    """Documents whose vocabulary grows with their number, as real text's does: 60 rare words
    each (a random 40-bit number: nearly all seen once) among 40 common ones of a class."""
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(n_docs):
        label = "ab"[i % 2]
        rare = [f"r{x:x}" for x in rng.integers(0, 1 << 40, size=60)]
        common = [f"{label}{x}" for x in rng.integers(0, 50, size=40)]
        docs.append(Document(str(i), " ".join(rare + common).encode(), label))
    return docs


# Words and word pairs: the random words' character n-grams, of 16 letters, add next to no
# vocabulary, and most of the Python path's work under tracemalloc (the peak test's tokenizer).
WORDS = TokenizerSettings(char_ngram_min=0)


def test_under_the_budget_the_model_is_the_one_trained_without_it():
    docs = growing(300)
    free, _ = train_model(iter(docs), max_memory=1 << 40)
    assert free.pruned is None
    for budget in (None, 50 << 20):  # (the default, and one the corpus stays under)
        model, _ = train_model(iter(docs), max_memory=budget)
        assert model.pruned is None
        assert codec.encode(model) == codec.encode(free)


def test_past_the_budget_the_rare_tokens_go_and_the_frequent_keep_exact_counts(tmp_path):
    docs = growing(600)
    exact, _ = train_model(iter(docs), max_memory=1 << 40)
    pruned, _ = train_model(iter(docs), max_memory=300_000)
    p = pruned.pruned
    assert p["threshold"] >= 1 and p["tokens"] > 10_000 and p["documents"] == 600
    assert len(pruned.vocab) < len(exact.vocab) // 4
    # the last threshold holds for every token kept, those met after the last pruning too
    assert pruned.counts.doc_freq.min() > p["threshold"]
    assert p["tokens"] + len(pruned.vocab) >= len(exact.vocab)
    # every common word kept, with the counts of the exact model (seen from their first document on)
    common = [t for t in exact.vocab.tokens if re.fullmatch(r"[ab]\d+", t)]
    assert len(common) == 100 and set(common) <= set(pruned.vocab.tokens)
    ids_exact, ids_pruned = exact.vocab.lookup(common), pruned.vocab.lookup(common)
    np.testing.assert_array_equal(pruned.feature_count[:, ids_pruned], exact.feature_count[:, ids_exact])
    np.testing.assert_array_equal(pruned.class_count, exact.class_count)
    # the model file keeps the record, and refuses a corrupt one
    store.save(pruned, str(tmp_path / "p.nbm"))
    assert store.load(str(tmp_path / "p.nbm")).pruned == p
    for bad in ({**p, "tokens": -1}, {**p, "threshold": 1.5}, {"tokens": 1}, [1, 2, 3]):
        with pytest.raises(ValueError, match="pruned must be"):
            codec.pruning({"pruned": bad})


def test_a_pruned_model_keeps_no_token_in_its_last_thresholds_documents_or_fewer():
    """The tokens met after the last pruning, in at most its threshold's documents, are dropped
    at the end as the earlier ones were: every token a pruned model keeps was counted in more
    than t documents, as fastText's min-count holds for its whole dictionary."""
    from nbtext.batch.train import Reduction, Sums
    from nbtext.features.counting import Batch
    from nbtext.nb.counts import Counts
    from nbtext.settings import DecisionOptions, FeatureOptions, ModelSettings, TokenizerSettings

    rng = np.random.default_rng(4)
    reduction = Reduction(budget=200_000)

    def add(docs, labels):
        batch = Batch.of_tokens(docs)
        reduction.add(Sums(batch.blob, batch.keys, Counts.summed(batch.rows, labels), True, labels, []))

    for _ in range(4):
        add([[f"r{x:x}" for x in rng.integers(0, 1 << 40, size=60)] + [f"c{x}" for x in rng.integers(0, 30, 20)]
             for _ in range(100)], ["a", "b"] * 50)
    p = dict(reduction.pruning)
    late = {f"late{i}" for i in range(10)}
    add([["c1", "c2", token] for token in sorted(late)], ["a"] * 10)
    assert reduction.pruning == p and late <= set(reduction.vocab.tokens)  # (held: no pruning since)
    model, _ = reduction.model(TokenizerSettings(), ModelSettings(), FeatureOptions(),
                               DecisionOptions(calibrate=False))
    assert model.pruned["threshold"] == p["threshold"] and model.pruned["documents"] == 410
    assert not late & set(model.vocab.tokens) and {f"c{x}" for x in range(30)} <= set(model.vocab.tokens)
    assert model.counts.doc_freq.min() > p["threshold"]


def test_a_pruning_counts_its_threshold_from_document_frequencies_held_as_floats(monkeypatch):
    """After a first pruning the counts hold their document frequencies as float64: the next
    pruning's threshold is still counted by value (a partition of millions of nearly all equal
    floats is seconds of train's serial path), the same number as the partition's; fractions,
    never a pruning's, are partitioned."""
    from nbtext.batch import train

    rng = np.random.default_rng(5)
    frequencies = [rng.integers(0, 40, 5_000), np.minimum(rng.zipf(1.5, 5_000), 10**4), np.ones(7)]
    cases = [(a.astype(dtype), n) for a in frequencies for dtype in (np.int32, np.float64)
             for n in (0, len(a) // 2, len(a) - 1)]
    expected = [np.partition(a, n)[n] for a, n in cases]
    fractions = np.array([0.5, 2.0, 1.25, 3.0])

    def refused(*args, **kwargs):
        raise AssertionError("partitioned")
    monkeypatch.setattr(train.np, "partition", refused)
    assert [train._nth_smallest(a, n) for a, n in cases] == expected
    with pytest.raises(AssertionError, match="partitioned"):
        train._nth_smallest(fractions, 1)


def test_after_a_pruning_the_key_index_is_made_for_the_tokens_of_the_next_one():
    """A pruning mid-way (counting goes on) makes the new vocabulary's index with room for as many
    tokens as the pruning found, about as many as the next one will: a hash table made once, not
    doubled (each doubling a rebuild) on the way (the same ids: test_kernel.py)."""
    from nbtext.batch.train import Reduction, Sums
    from nbtext.features.counting import Batch
    from nbtext.nb.counts import Counts

    rng = np.random.default_rng(6)
    with implementation("c"):
        reduction = Reduction(budget=200_000)
        for _ in range(4):
            batch = Batch.of_tokens([[f"r{x:x}" for x in rng.integers(0, 1 << 40, size=60)]
                                     + [f"c{x}" for x in rng.integers(0, 30, 20)] for _ in range(100)])
            reduction.add(Sums(batch.blob, batch.keys, Counts.summed(batch.rows, ["a", "b"] * 50), True,
                               ["a", "b"] * 50, []))
            if reduction.pruning:
                break
        found = len(reduction.vocab) + reduction.pruning["tokens"]  # (the tokens the pruning found)
        assert found > 10 * len(reduction.vocab)
        assert reduction.vocab.compiled_index().stats()["slots"] >= found * 3 // 2


PEAK = """
import sys, tracemalloc
sys.path.insert(0, {tests!r})
from test_memory_budget import WORDS, growing
from nbtext.batch.train import train_model
from nbtext.errors import SettingError
from nbtext.settings import DecisionOptions
docs = growing(int(sys.argv[1]), seed=1)
from nbtext.store import codec
tracemalloc.start()
model, _ = train_model(iter(docs), WORDS, decisions=DecisionOptions(calibrate=False), calibration_sample=200,
                       max_memory=int(sys.argv[2]))
data = codec.encode(model)
print(tracemalloc.get_traced_memory()[1], len(model.vocab))
"""


def peak(n_docs: int, budget: int) -> tuple[int, int]:
    """(tracemalloc's peak of train_model and the model file's encoding in a process of its own,
    the model's tokens)."""
    r = subprocess.run([sys.executable, "-c", PEAK.format(tests=str(ROOT / "tests")), str(n_docs), str(budget)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    traced, tokens = map(int, r.stdout.split())
    return traced, tokens


@pytest.mark.slow
def test_a_corpus_past_the_budget_trains_in_memory_that_grows_far_less_than_it():
    """Four times the documents, two and a half times the distinct tokens: with a 1 MB budget
    the traced peak of train and of the model file's encoding grows by under a fifth, and by under a tenth of what it grows without
    the budget (whose growth is the test's check that it measures the vocabulary). (Below about
    750 documents the peak is still growing with what a chunk holds, budget or not.)"""
    small, large = 750, 3000
    bounded = [peak(n, 1 << 20) for n in (small, large)]
    free = [peak(n, 1 << 40) for n in (small, large)]
    assert free[1][1] > 2.5 * free[0][1] and bounded[1][1] < 1.2 * bounded[0][1], (free, bounded)
    assert bounded[1][0] < 1.2 * bounded[0][0], (free, bounded)
    assert bounded[1][0] - bounded[0][0] < (free[1][0] - free[0][0]) / 10, (free, bounded)


@pytest.mark.slow
def test_max_memory_on_the_command_line(run, tmp_path):
    corpus = tmp_path / "c.tsv"
    corpus.write_text("".join(f"{d.label}\t{d.data.decode()}\n" for d in growing(1200)))
    r = run("train", corpus, "-o", tmp_path / "p.nbm", "--max-memory", "1M")
    assert r.exit_code == 0, r.stderr
    info = run("info", "-m", tmp_path / "p.nbm", "--top", "0").stdout
    line = next(x for x in info.splitlines() if x.startswith("counts"))
    m = store.load(str(tmp_path / "p.nbm")).pruned
    documents = "document" if m["threshold"] == 1 else "documents"
    assert line == (f"counts         pruned: tokens in at most {m['threshold']} {documents} before document "
                    f"{m['documents']} were dropped ({m['tokens']} tokens), to train within --max-memory")
    r = run("train", corpus, "-o", tmp_path / "e.nbm", "--max-memory", "2G")
    assert r.exit_code == 0
    assert "counts         exact: nothing pruned" in run("info", "-m", tmp_path / "e.nbm").stdout
    for bad in ("lots", "10", "-1G"):
        r = run("train", corpus, "-o", tmp_path / "x.nbm", "--max-memory", bad)
        assert r.exit_code == 2 and f"Invalid value for '--max-memory': '{bad}'" in r.stderr, r.stderr
        assert not (tmp_path / "x.nbm").exists()


def test_the_budget_reads_what_a_fold_of_sparse_counts_allocates_while_they_are_held():
    """Counts of many classes fold their appended sums into new arrays while the old are held:
    the budget's reading of the reduce (Reduction.held) covers that peak, measured by
    tracemalloc around the fold, not only the arrays held before and after. (The compiled
    kernel's fold, which train runs where it is built; the Python path's numpy fold, the
    reference, sorts every entry and takes more.)"""
    import tracemalloc

    try:
        from nbtext import _kernel  # noqa: F401
    except ImportError:
        pytest.skip("the compiled kernel is not built")

    from nbtext.batch.train import INDEX_BYTES, Reduction, Sums
    from nbtext.features.counting import Batch
    from nbtext.nb.counts import Counts

    rng = np.random.default_rng(3)
    reduction = Reduction()
    for chunk in range(6):
        docs = [[f"t{x:x}" for x in rng.integers(0, 1 << 20, size=200)] for _ in range(60)]
        batch = Batch.of_tokens(docs)
        labels = [f"c{i % 5}" for i in range(60)]
        reduction.add(Sums(batch.blob, batch.keys, Counts.summed(batch.rows, labels), True, labels, []))
    sp = reduction.counts._sp
    assert sp._pending_n > 0
    before = reduction.held()
    vocab = reduction.vocab
    without_fold = vocab.buffer().nbytes + INDEX_BYTES * len(vocab) + reduction.counts.nbytes()
    with implementation("c"):
        from nbtext.features.kernel import compiled

        compiled()  # (its first call imports and configures the mail rules: not the fold's memory)
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        sp.settle()
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
    assert peak > 0.5 * (before - without_fold)  # (the fold's output, about what it is counted as)
    assert without_fold + peak <= 1.01 * before  # (1%: the fold's small Python objects)


def test_a_large_budget_prunes_before_the_counts_reach_the_numbers_they_refuse(monkeypatch):
    """Under a --max-memory large enough that the counts' bytes never reach it, the counts
    would reach the numbers nb.counts refuses past (MAX_NUMBERS, here made small) and train
    would stop mid-corpus: the reduce prunes before them as at its budget, and says so."""
    from nbtext.nb import counts

    rng = np.random.default_rng(0)
    docs = [Document(str(i), " ".join([f"r{x:x}" for x in rng.integers(0, 1 << 40, size=10)]
                                      + [f"c{x}" for x in rng.integers(0, 20, size=5)]).encode(), "abc"[i % 3])
            for i in range(6000)]
    monkeypatch.setattr(counts, "MAX_NUMBERS", 100_000)
    model, _ = train_model(iter(docs), WORDS, max_memory=1 << 40)
    assert model.pruned is not None and model.pruned["documents"] == 6000
    assert model.counts.held() <= 100_000
    assert {f"c{x}" for x in range(20)} <= set(model.vocab.tokens)  # (the frequent words kept)


def test_info_says_one_document_in_the_singular(run, tmp_path):
    """A pruning of the tokens in at most one document (a budget's first, the hapaxes) reads as
    English in `info`."""
    corpus = tmp_path / "c.tsv"
    corpus.write_text("".join(f"{d.label}\t{d.data.decode()}\n" for d in growing(40)))
    assert run("train", corpus, "-o", tmp_path / "m.nbm", "-q").exit_code == 0
    model = store.load(str(tmp_path / "m.nbm"))
    model.pruned = {"tokens": 7, "threshold": 1, "documents": 9}
    store.save(model, str(tmp_path / "m.nbm"))
    assert ("counts         pruned: tokens in at most 1 document before document 9 were dropped (7 tokens), "
            "to train within --max-memory\n") in run("info", "-m", tmp_path / "m.nbm", "--top", "0").stdout



def test_a_budget_that_leaves_no_token_is_refused_and_writes_nothing(run, tmp_path):
    """Documents of tokens each seen once, past a budget: every pruning dropped every token, and
    train wrote a model of none (exit 0, numpy's divide-by-zero warnings on stderr) that called
    every message spam at the classes' shares, 0.5. Refused, naming --max-memory, as a corpus
    of no token is; the model file is left as it was."""
    rng = np.random.default_rng(0)
    docs = [Document(str(i), " ".join(f"r{x:x}" for x in rng.integers(0, 1 << 40, size=60)).encode(), "ab"[i % 2])
            for i in range(600)]
    corpus, model = tmp_path / "c.tsv", tmp_path / "m.nbm"
    corpus.write_text("".join(f"{d.label}\t{d.data.decode()}\n" for d in docs))
    model.write_bytes(b"before")
    for kernel in ("c", "python"):
        with implementation(kernel):
            r = run("train", corpus, "-o", model, "--max-memory", "1M", "--ngrams", "1", "--char-ngrams", "0,0")
        assert (r.exit_code, r.stdout, r.stderr) == (
            1, "", "nbtext: error: --max-memory leaves no token: to train the 600 documents within it, the tokens in "
                   "at most 1 document were dropped, and that was every one; give a larger one\n")
        assert model.read_bytes() == b"before"
    with pytest.raises(SettingError, match=re.escape("max_memory leaves no token: to train the 600 documents")):
        train_model(iter(docs), TokenizerSettings(ngram_max=1, char_ngram_min=0), max_memory=1 << 20)
