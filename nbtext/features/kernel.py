"""The compiled kernel: a chunk of documents tokenized and counted in C (nbtext/_c/).

The pure-Python path (nbtext.text.tokenizer.Tokenizer, then Batch.of_tokens) is the reference;
the kernel gives the same Batch: the same tokens in the same first-seen order, the same 64-bit
keys and the same rows (tests/test_kernel.py checks on arbitrary bytes and on real mail; why C
and not numba, and what each path costs: docs/kernel.md).

The kernel reads the common message's mail rules itself (nbtext/_c/mail*.c: a single-part message
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

from dataclasses import dataclass
from functools import cache, partial
from types import ModuleType
from typing import Callable

import numpy as np

from ..errors import NbtextError
from ..settings import MAIL_RULES, TokenizerSettings
from ..text.words import MAIL_FIELDS, MAIL_LINES
from . import implementation
from .rows import index_dtype


def compiled() -> ModuleType | None:
    """The compiled kernel module with its mail rules configured, or None for the pure-Python
    path (the entry point's choice: nbtext.features.implementation)."""
    kernel = implementation.compiled()
    return None if kernel is None else configured(kernel)


# mail_rules_off as the bits the kernel's mail rules read: a bit a rule, in MAIL_RULES's order
MAIL_OFF_BITS = {rule: 1 << i for i, rule in enumerate(MAIL_RULES)}


@cache
def configured(kernel: ModuleType) -> ModuleType:
    """The kernel, its mail rules given their limits and rule bits (once) from their one
    definition here in Python (text.mail.KERNEL_LIMITS, MAIL_OFF_BITS)."""
    from ..text.mail import KERNEL_LIMITS

    kernel.configure(KERNEL_LIMITS, MAIL_OFF_BITS)
    return kernel


@dataclass(frozen=True)
class MailHelpers:
    """What the kernel's mail rules call back where the reference calls a library, read by name."""

    decode_bytes: Callable  # the charset: text.mail.decode_bytes
    html_to_text: Callable  # HTML that is not one byte a character: text.mail.html_to_text
    a2b_qp: Callable  # quoted-printable, as get_payload(decode=True)
    decode_b: Callable  # base64, as get_payload(decode=True)
    rules_off: frozenset  # mail_rules_off, for html_to_text
    unescape: Callable  # entities the C does not read: html.unescape
    field_tokens: Callable  # a header field whose value the C does not read (8-bit, RFC 2047)


def mail_helpers(settings: TokenizerSettings) -> MailHelpers:
    """The kernel's mail helpers: the reference's own functions, and the reference's tokens of a
    header field whose value the kernel does not read (mail.field_tokens)."""
    import binascii
    import html
    from email.message import decode_b  # (what get_payload(decode=True) calls for base64)

    from ..text.mail import decode_bytes, field_tokens, html_to_text

    return MailHelpers(decode_bytes=decode_bytes, html_to_text=html_to_text, a2b_qp=binascii.a2b_qp,
                       decode_b=decode_b, rules_off=settings.mail_rules_off, unescape=html.unescape,
                       field_tokens=partial(field_tokens, s=settings))


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
    blob, keys, data, indices, indptr, n_cols = count_bytes(kernel, tokenizer, datas)
    return (blob, np.frombuffer(keys, dtype=np.uint64), np.frombuffer(data, dtype=np.float64),
            np.frombuffer(indices, dtype=np.int64).astype(index_dtype(max(n_cols, 1))),
            np.frombuffer(indptr, dtype=np.int64), n_cols)


def count_bytes(kernel: ModuleType, tokenizer, datas: list, parts=None) -> tuple:
    """count()'s arrays as the kernel gives them, bytes (uint64 keys, float64 data, int64
    indices and indptr), for a caller that hands them to the kernel again; ``parts``: a
    mail_parts(kernel, tokenizer) kept by a caller that counts many chunks."""
    from ..text.words import words

    s: TokenizerSettings = tokenizer.settings
    counter = kernel.Counter(s.lowercase, s.max_word_length, s.ngram_max, s.char_ngram_min,
                             s.char_ngram_max, partial(words, settings=s))
    parts = parts or mail_parts(kernel, tokenizer)
    for d in datas:
        tokens, texts, chars = parts(d)
        try:
            counter.add_tokens(tokens)
        except ValueError as e:  # (a NUL: never one of the tokenizer's tokens)
            raise NbtextError(str(e)) from None
        for text in texts:
            counter.add_text(text)
        counter.end_document(chars)
    return counter.result()
