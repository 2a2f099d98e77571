"""Property tests: the tokenizer, the mail reader and the model loader never crash or hang
on arbitrary bytes (bounded examples, so CI stays fast)."""
import os

from hypothesis import given, settings, strategies as st

import pytest

from nbtext import store
from nbtext.errors import ModelFileError
from nbtext.text.mail import mail_tokens
from nbtext.settings import TokenizerSettings
from nbtext.text.tokenizer import Tokenizer

# At import, not inside a test: importing test_modelfile runs its @given decorators, which
# hypothesis refuses inside a running @given test (the test failed when run alone).
from test_modelfile import iir_model
pytestmark = pytest.mark.slow  # (make check leaves these out: make test runs them)

S = TokenizerSettings(ngram_max=2, char_ngram_min=2, char_ngram_max=3)
MAILISH = st.lists(st.sampled_from([
    b"From: a@b.example\n", b"Subject: =?utf-8?B?w4k=?=\n", b"Subject: =?x-bad?Q?=FF?=\n",
    b"Content-Type: multipart/mixed; boundary=\"b\"\n", b"Content-Type: text/html; charset=\"\xff\"\n",
    b"Content-Transfer-Encoding: base64\n", b"Content-Transfer-Encoding: quoted-printable\n",
    b"\n", b"--b\n", b"--b--\n", b"<a href='http://1.2.3.4/x'>", b"=C3=A9=\n", b"QUJD\n", b"\x00\xff\xfe",
    b"<b>Vi</b>agra", b"http://@/", b"www.", b"\r\n",
]), max_size=40).map(b"".join)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=3000))
def test_tokenizer_on_arbitrary_bytes(data):
    toks = Tokenizer(S)(data)
    assert all(isinstance(t, str) and "\x00" not in t for t in toks)


@settings(max_examples=200, deadline=None)
@given(MAILISH)
def test_mail_reader_on_mail_shaped_garbage(data):
    toks = mail_tokens(data, S)
    assert all(isinstance(t, str) and "\x00" not in t for t in toks)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400), st.integers(min_value=0, max_value=10**6))
def test_model_loader_refuses_damage_cleanly(garbage, where):
    good = store.encode(iir_model())
    i = where % len(good)
    damaged = good[:i] + garbage + good[i + len(garbage):]
    path = f"/tmp/nbtext-fuzz-{os.getpid()}.nbm"
    with open(path, "wb") as f:
        f.write(damaged)
    try:
        store.load(path)
        assert damaged == good or garbage == good[i:i + len(garbage)]
    except ModelFileError:
        pass
    finally:
        os.unlink(path)


ASCII_WORDISH = st.text(alphabet=st.sampled_from("aZ09_$'.-’€ \t\n!é"), max_size=200)


@settings(max_examples=300, deadline=None)
@given(ASCII_WORDISH)
def test_ascii_words_match_the_unicode_pattern(text):
    """ASCII text takes the standard re module's path; it must find exactly the words the
    regex module's Unicode pattern finds (and non-ASCII text still goes to that pattern)."""
    import regex

    from nbtext.text.words import WORD, words

    expected = regex.compile(WORD).findall(text.casefold())
    found = words(text, TokenizerSettings(max_word_length=1000))
    assert found == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "d e", "é", "$1"]), max_size=12), max_size=8))
def test_local_counts_are_the_counts_of_each_document(docs):
    """The numpy-only counting train's workers use: row i, column j holds how often distinct
    token j occurs in document i; columns in first-seen order, indices sorted within rows."""
    from collections import Counter

    import scipy.sparse as sp

    from nbtext.features.counting import local_count_arrays

    distinct, data, indices, indptr = local_count_arrays(docs)
    X = sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, len(distinct)))
    assert distinct == list(dict.fromkeys(t for d in docs for t in d))
    assert X.shape == (len(docs), len(distinct)) and X.has_sorted_indices
    for i, d in enumerate(docs):
        row = X.getrow(i)
        assert {distinct[j]: v for j, v in zip(row.indices, row.data)} == Counter(d)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "dd", "é", "$1", "x" * 20, "yy"]), max_size=10),
                max_size=8),
       st.integers(1, 5))
def test_vocabulary_gives_first_seen_ids_even_when_keys_collide(batches, buckets):
    """Vocabulary.extend_encoded against a dict: ids in order of first appearance, repeats
    within and across batches found again. Keys taken modulo ``buckets`` force collisions,
    which the vocabulary must treat as one token (the first one seen), like the dict keyed
    by the key."""
    import numpy as np

    from nbtext.features.vocabulary import Vocabulary, encode_tokens, token_keys

    vocab, ref, firsts = Vocabulary(), {}, []
    for batch in batches:
        blob = encode_tokens(batch)
        keys = token_keys(blob) % np.uint64(buckets)
        ids = vocab.extend_encoded(blob, keys)
        for t, k in zip(batch, keys.tolist()):
            if k not in ref:
                ref[k] = len(ref)
                firsts.append(t)
        assert ids.tolist() == [ref[k] for k in keys.tolist()]
    assert len(vocab) == len(ref) and vocab.tokens == firsts
    assert vocab.keys().tolist() == list(ref)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_characters="\x00"), max_size=6), max_size=40),
       st.lists(st.text(st.characters(blacklist_characters="\x00"), max_size=6), max_size=10))
def test_a_vocabulary_without_its_index_finds_grows_and_keys_as_before(tokens, more):
    """Vocabulary.drop_index (train, once it has counted): the index is built again from the
    tokens when asked for, so finding, keys, subsets and growing give what they gave before."""
    import numpy as np

    from nbtext.features.vocabulary import Vocabulary, encode_tokens

    vocab, same = Vocabulary(tokens), Vocabulary(tokens)
    same.drop_index()
    assert same.keys().tolist() == vocab.keys().tolist() and same.tokens == vocab.tokens
    ids = np.arange(len(vocab))[::2]
    assert same.subset(ids).tokens == vocab.subset(ids).tokens
    assert same.lookup(more + tokens).tolist() == vocab.lookup(more + tokens).tolist()
    same.drop_index()
    blob = encode_tokens(list(dict.fromkeys(more)))
    assert same.extend_encoded(blob).tolist() == vocab.extend_encoded(blob).tolist()
    assert same.tokens == vocab.tokens and same.keys().tolist() == vocab.keys().tolist()


def test_a_vocabulary_pickles_with_its_tokens_ids_and_keys():
    """A Model (and so its Vocabulary) may be pickled by a user or by joblib: the copy holds
    the same tokens, ids and keys, and finds and grows as the original does (on either path:
    the kernel's index is rebuilt where the copy is made)."""
    import copy
    import pickle

    import numpy as np

    from nbtext.features.vocabulary import Vocabulary, encode_tokens

    vocab = Vocabulary(["b", "a", "é", "b c"])
    for clone in (pickle.loads(pickle.dumps(vocab)), copy.deepcopy(vocab)):
        assert clone.tokens == vocab.tokens and np.array_equal(clone.keys(), vocab.keys())
        assert clone.lookup(["a", "zz", "é"]).tolist() == [1, -1, 2]
        assert clone.extend_encoded(encode_tokens(["zz", "a"])).tolist() == [4, 1]
        assert len(vocab) == 4
