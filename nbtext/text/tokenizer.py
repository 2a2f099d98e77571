"""Bytes or text in, a list of string tokens out, as the stored tokenizer settings say.

Plain text: the words of nbtext.text.words with their n-grams. Mail (detected, or forced with
mode="email"): nbtext.text.mail, imported only when a document is mail, so that classifying plain
text never pays for the email package.
"""
from __future__ import annotations

from ..settings import TokenizerSettings
from .words import ANSI_RE, add_ngrams, decode_text, looks_like_mail, text_words


class Tokenizer:
    """Callable: document bytes or text -> tokens, as the settings say."""

    def __init__(self, settings: TokenizerSettings | None = None):
        self.settings = settings or TokenizerSettings()

    def is_mail(self, data: bytes | str) -> bool:
        mode = self.settings.mode
        return mode == "email" or (mode == "auto" and looks_like_mail(data))

    def __call__(self, data: bytes | str) -> list[str]:
        tokens, texts, chars = self.parts(data)
        return tokens + add_ngrams(text_words(texts, self.settings), self.settings, chars)

    def parts(self, data: bytes | str) -> tuple[list[str], list[str], bool]:
        """(tokens, texts, chars): a document's tokens are ``tokens``, then the words of the
        texts in turn with their word n-grams (and, with ``chars``, character n-grams) as
        nbtext.text.words.add_ngrams makes them. The compiled kernel
        (nbtext.features.kernel) takes a document in these parts and counts the same tokens."""
        s = self.settings
        data = data[: s.max_bytes]
        if self.is_mail(data):
            from .mail import mail_parts  # the email package only when there is mail

            return mail_parts(data, s)
        return [], [ANSI_RE.sub(" ", decode_text(data))], True
