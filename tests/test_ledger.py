"""The ledger (nbtext.ledger.Ledger): the digests of the documents a model learned, held as
sorted bytes, 16 a document. It refuses what the set it replaces refused (a document learned
twice is skipped, within a chunk and across chunks; a document never learned cannot be
forgotten; models sharing a document are not merged), and its memory is its digests' bytes."""
from __future__ import annotations

import re
import tracemalloc

import numpy as np
import pytest

from nbtext import store
from nbtext.batch.train import Reduction, Sums, train_model
from nbtext.errors import NbtextError, SettingError
from nbtext.features.counting import Batch
from nbtext.ledger import DIGEST_SIZE, Ledger
from nbtext.model import Model
from nbtext.nb.counts import Counts
from nbtext.operations import digest, learn, merge
from nbtext.read import Document
from nbtext.settings import ModelSettings, TokenizerSettings


def digests(n: int, seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [rng.bytes(DIGEST_SIZE) for _ in range(n)]


def test_the_ledger_holds_each_digest_once_and_gives_them_sorted():
    # digests ending in NUL bytes too: numpy gives an S16 item back without them
    edge = [bytes(16), b"\x01" + bytes(15), bytes(15) + b"\x01", b"\x01" + bytes(14) + b"\x02"]
    every = digests(5_000, 1) + edge
    ledger = Ledger()
    for at in range(0, len(every), 400):  # chunk by chunk, a chunk repeating its own digests and earlier ones
        chunk = every[at:at + 400]
        ledger.update(b"".join(chunk + chunk[:3] + every[:5]))
    want = sorted(set(every))
    assert len(ledger) == len(want) and list(ledger) == want and ledger.tobytes() == b"".join(want)
    assert all(d in ledger for d in every) and digests(1, 2)[0] not in ledger and b"short" not in ledger
    assert Ledger.from_bytes(b"".join(reversed(every + every[:9]))) == ledger  # (a stranger's order)
    ledger.difference_update([bytes(16), bytes(16), digests(1, 2)[0]])
    ledger.discard(every[0])
    assert len(ledger) == len(want) - 2 and bytes(16) not in ledger and every[0] not in ledger
    assert b"\x01" + bytes(15) in ledger and bytes(15) + b"\x01" in ledger
    assert Ledger(every[:2]).common(Ledger(every[1:3])) == 1
    with pytest.raises(ValueError, match="not a whole number of 16-byte digests"):
        Ledger.from_bytes(bytes(17))
    with pytest.raises(ValueError, match="16 bytes"):
        ledger.add(b"x" * 15)


def lines(texts: list[tuple[str, str]]) -> list[Document]:
    return [Document(str(i), text.encode(), label) for i, (label, text) in enumerate(texts)]


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_train_lists_a_document_met_twice_once_and_learn_and_forget_go_by_it(n_jobs, tmp_path):
    """A document repeated within a chunk and across chunks (train's chunks are 400 documents):
    counted each time, listed once, as the set listed it; learn skips it, forget takes it out
    once and then refuses it, within one call and across calls."""
    texts = [("ab"[i % 2], f"document {i} word{i % 7}") for i in range(900)]
    texts[1] = texts[3] = texts[0]        # within the first chunk
    texts[500] = texts[850] = texts[2]    # across chunks
    model, _ = train_model(lines(texts), n_jobs=n_jobs)
    distinct = {digest(label, text) for label, text in texts}
    assert model.n_documents == 900 and len(model.ledger) == len(distinct) == 896
    assert list(model.ledger) == sorted(distinct)
    repeated = lines([texts[2]])
    assert learn(model, repeated, "a") == (0, 1)
    new = lines([("a", "a new document"), ("a", "a new document")])
    assert learn(model, new, "a") == (1, 1) and len(model.ledger) == 897
    assert learn(model, repeated, "a", forget=True) == (1, 0)
    with pytest.raises(NbtextError, match="was never learned as 'a', so it cannot be forgotten"):
        learn(model, repeated, "a", forget=True)
    with pytest.raises(NbtextError, match="was never learned as 'b'"):
        learn(model, lines([("b", "never seen")]), "b", forget=True)
    assert len(model.ledger) == 896 and digest("a", "a new document") in model.ledger
    path = str(tmp_path / "m.nbm")
    store.save(model, path)
    assert store.load(path).ledger == model.ledger


def test_merge_refuses_models_that_learned_a_document_in_common():
    texts = [("ab"[i % 2], f"document {i}") for i in range(60)]
    a, _ = train_model(lines(texts[:20]))
    b, _ = train_model(lines(texts[20:40]))
    c, _ = train_model(lines(texts[40:] + texts[5:7]))
    merged = merge([("a", a), ("b", b)])
    assert merged.ledger == Ledger(digest(label, text) for label, text in texts[:40])
    with pytest.raises(NbtextError) as e:
        merge([("a", a), ("b", b), ("c", c)])
    assert str(e.value) == "c: learned 2 of the same documents as a; merged, they would be counted twice"


def ledger_bytes(n: int) -> int:
    """The bytes a ledger of n documents holds, added as train adds them (a chunk's at a time),
    by tracemalloc (numpy's arrays are traced)."""
    every = b"".join(digests(n, 3))
    tracemalloc.start()
    try:
        ledger = Ledger()
        for at in range(0, len(every), 400 * DIGEST_SIZE):
            ledger.update(every[at:at + 400 * DIGEST_SIZE])
        assert len(ledger) == n
        return tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def test_the_ledger_holds_its_digests_bytes_a_document_whatever_their_number():
    """As a set of bytes the ledger took about 100 bytes a document (a bytes object and the
    set's slot), the largest part of a big train's memory left growing past the budget."""
    small, large = 50_000, 200_000
    per_small, per_large = ledger_bytes(small) / small, ledger_bytes(large) / large
    assert per_small <= 1.25 * DIGEST_SIZE and per_large <= 1.25 * DIGEST_SIZE, (per_small, per_large)


def test_loading_a_model_makes_no_object_per_digest(tmp_path):
    """The file's ledger section becomes the sorted array at once (a copy of its bytes)."""
    def load_peak(n: int) -> int:
        model = Model.empty(TokenizerSettings(), ModelSettings(), ["a", "b"])
        model.ledger.update(digests(n, 4))
        path = str(tmp_path / f"{n}.nbm")
        store.save(model, path)
        del model
        tracemalloc.start()
        try:
            loaded = store.load(path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert len(loaded.ledger) == n
        return peak

    small, large = 20_000, 80_000
    per_digest = (load_peak(large) - load_peak(small)) / (large - small)
    # (the file's bytes and the array's: a set made 16 more a digest, then ~80 of objects)
    assert per_digest <= 3 * DIGEST_SIZE, per_digest


def test_train_charges_the_ledger_to_the_memory_budget():
    """The ledger is kept whole: the tokens get what it leaves of the budget, and a budget it
    alone passes is refused, naming the documents and bytes."""
    reduction = Reduction(budget=100_000)
    for chunk in range(20):
        docs = [[f"w{chunk}_{i}", "common"] for i in range(400)]
        batch = Batch.of_tokens(docs)
        labels = ["ab"[i % 2] for i in range(400)]
        part = Sums(batch.blob, batch.keys, Counts.summed(batch.rows, labels), True, labels,
                    b"".join(digests(400, 100 + chunk)))
        if chunk == 0:
            reduction.add(part)
            assert reduction.held() >= reduction.ledger.nbytes == 400 * DIGEST_SIZE
            continue
        try:
            reduction.add(part)
        except SettingError as e:
            assert re.fullmatch(r"max_memory is too small for the ledger of (\d+) documents: its digests alone "
                                r"hold (\d+) bytes, more than the 75000 that max_memory leaves them; "
                                r"give a larger one", str(e)), str(e)
            assert reduction.ledger.nbytes > 75_000
            break
        # (under the refusal, pruning keeps the tokens to what the ledger leaves)
        assert reduction.held() - reduction.ledger.nbytes <= 100_000
    else:
        pytest.fail("a ledger past the budget was not refused")
