"""The compiled kernel: a chunk of documents tokenized and counted in C (nbtext/_kernel.c).

The pure-Python path (nbtext.text.tokenizer.Tokenizer, then Batch.of_tokens) is the reference;
the kernel gives the same Batch: the same tokens in the same first-seen order, the same 64-bit
keys and the same rows (tests/test_kernel.py checks on arbitrary bytes and on real mail; why C
and not numba, and what each path costs: docs/kernel.md).

The kernel reads the common message's mail rules itself (nbtext/_mail.c: a single-part message
with a plain header block; mail_parts below) and says "not mine" for what it cannot read exactly
as nbtext.text.mail does, which Python then reads (Tokenizer.parts). Then the kernel takes each
document's tokens and texts and does the per-word work: the words of ASCII runs of
text, word n-grams, character n-grams, hashing and counting in one hash table a chunk. A run of
text (between ASCII whitespace) holding a non-ASCII character goes back to
nbtext.text.words.words, which knows Unicode's letters and case folding.

Which of the two runs is an entry point's choice (nbtext.features.implementation: NBTEXT_KERNEL
for the command line); it never changes a token.
"""
from __future__ import annotations

from functools import partial
from types import ModuleType

import numpy as np

from ..errors import NbtextError
from ..settings import TokenizerSettings
from ..text.words import MAIL_FIELDS, MAIL_LINES
from .implementation import compiled  # noqa: F401  (callers ask kernel.compiled)
from .rows import index_dtype


# mail_rules_off as the bits nbtext/_mail.c reads (OFF_* there)
MAIL_OFF_BITS = {"headers": 1, "header-names": 2, "received": 4, "recipients": 8, "decode": 16, "html": 32,
                 "urls": 64, "mime": 128}


def mail_helpers(settings: TokenizerSettings) -> tuple:
    """What nbtext/_mail.c calls back where the reference calls a library: the same functions
    (charsets, HTML that is not ASCII, quoted-printable, base64 as get_payload decodes them,
    entities), mail_rules_off for html_to_text, and the reference's tokens of a header field
    whose value it does not read (mail.field_tokens: 8-bit bytes, RFC 2047 words)."""
    import binascii
    import html
    from email.message import decode_b  # (what get_payload(decode=True) calls for base64)

    from ..text.mail import decode_bytes, field_tokens, html_to_text

    return (decode_bytes, html_to_text, binascii.a2b_qp, decode_b, settings.mail_rules_off, html.unescape,
            partial(field_tokens, s=settings))


def mail_parts(kernel: ModuleType, tokenizer):
    """tokenizer.parts, with the mail rules of a message read by the kernel where it can (the
    same tokens and texts: tests/test_kernel.py), and by Python where it says "not mine"."""
    s: TokenizerSettings = tokenizer.settings
    off = s.mail_rules_off
    if s.mode == "text" or "decode" in off or not hasattr(kernel, "looks_like_mail"):
        return tokenizer.parts
    bits = sum(MAIL_OFF_BITS[r] for r in off)
    helpers: list = []  # (the email package only once there is mail, as Tokenizer.parts does)
    fast, parts = kernel.mail_parts, tokenizer.parts
    looks, lines, names = kernel.looks_like_mail, MAIL_LINES, MAIL_FIELDS
    is_mail = (lambda data: True) if s.mode == "email" else (lambda data: looks(data, lines, names))
    lowercase, max_word, max_bytes, chars = s.lowercase, s.max_word_length, s.max_bytes, s.mail_char_ngrams

    def read(data):
        if isinstance(data, bytes):
            data = data[:max_bytes]
            if is_mail(data):
                if not helpers:
                    helpers.append(mail_helpers(s))
                got = fast(data, lowercase, max_word, max_bytes, bits, helpers[0])
                if got is not None:
                    return got[0], got[1], chars
        return parts(data)

    return read


def count(kernel: ModuleType, tokenizer, datas: list) -> tuple:
    """(blob, keys, data, indices, indptr, n_cols) of a chunk: Batch.of_tokens's arrays for
    [tokenizer(d) for d in datas], counted by the kernel."""
    from ..text.words import words

    s: TokenizerSettings = tokenizer.settings
    counter = kernel.Counter(s.lowercase, s.max_word_length, s.ngram_max, s.char_ngram_min,
                             s.char_ngram_max, partial(words, settings=s))
    parts = mail_parts(kernel, tokenizer)
    for d in datas:
        tokens, texts, chars = parts(d)
        try:
            counter.add_tokens(tokens)
        except ValueError as e:  # (a NUL: never one of the tokenizer's tokens)
            raise NbtextError(str(e)) from None
        for text in texts:
            counter.add_text(text)
        counter.end_document(chars)
    blob, keys, data, indices, indptr, n_cols = counter.result()
    return (blob, np.frombuffer(keys, dtype=np.uint64), np.frombuffer(data, dtype=np.float64),
            np.frombuffer(indices, dtype=np.int64).astype(index_dtype(max(n_cols, 1))),
            np.frombuffer(indptr, dtype=np.int64), n_cols)
