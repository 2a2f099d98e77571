"""Bytes or text in, a list of string tokens out, as the stored tokenizer settings say.

Plain text: the words of nbtext.text.words with their n-grams. Mail (detected, or forced with
mode="email"): nbtext.text.mail, imported only when a document is mail, so that classifying plain
text never pays for the email package.
"""
from __future__ import annotations

from ..settings import TokenizerSettings
from .words import ANSI_RE, add_ngrams, decode_text, looks_like_mail, words


class Tokenizer:
    """Callable: document bytes or text -> tokens, as the settings say."""

    def __init__(self, settings: TokenizerSettings | None = None):
        self.settings = settings or TokenizerSettings()

    def is_mail(self, data: bytes | str) -> bool:
        mode = self.settings.mode
        return mode == "email" or (mode == "auto" and looks_like_mail(data))

    def __call__(self, data: bytes | str) -> list[str]:
        s = self.settings
        data = data[: s.max_bytes]
        if self.is_mail(data):
            from .mail import mail_tokens  # the email package only when there is mail

            return mail_tokens(data, s)
        text = ANSI_RE.sub(" ", decode_text(data))
        return add_ngrams(words(text, s), s)
