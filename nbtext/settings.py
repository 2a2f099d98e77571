"""Settings travel as small frozen records, never as globals.

TokenizerSettings is stored in every model file so that scoring tokenizes exactly as training did.
"""
from __future__ import annotations

from .errors import NbtextError
from .record import Record

VARIANTS = ("multinomial", "bernoulli", "complement")
MODES = ("auto", "text", "email")


class TokenizerSettings(Record):
    # Defaults chosen by 5-fold cross-validation on both development corpora (docs/defaults.md):
    # word bigrams helped both; character 2-4-grams helped short text (fortune-lang macro-F1
    # 98.0% -> 99.1%) and hurt mail (spamassassin accuracy 99.2% -> 98.6%), so they apply to
    # plain-text documents and, unless mail_char_ngrams, not to mail.
    mode: str = "auto"             # auto: mail-aware when a document looks like RFC 822
    lowercase: bool = True         # case-fold words
    ngram_max: int = 2             # word n-grams 1..ngram_max
    char_ngram_min: int = 2        # character n-grams inside word boundaries (0 = off)
    char_ngram_max: int = 4
    mail_char_ngrams: bool = False  # character n-grams for mail bodies too
    max_word_length: int = 40      # longer words become one "skip:" summary token
    max_bytes: int = 2_000_000     # text tokenized per document at most (huge mail never hangs)

    def __post_init__(self):
        if self.mode not in MODES:
            raise NbtextError(f"unknown tokenizer mode {self.mode!r} (choose from {', '.join(MODES)})")
        if self.ngram_max < 1:
            raise NbtextError(f"--ngrams must be at least 1, got {self.ngram_max}")
        if self.char_ngram_min < 0 or self.char_ngram_max < self.char_ngram_min:
            raise NbtextError(
                f"bad character n-gram range {self.char_ngram_min},{self.char_ngram_max}")
        if self.max_word_length < 1:
            raise NbtextError(f"max word length must be positive, got {self.max_word_length}")

    @classmethod
    def from_dict(cls, d: dict) -> "TokenizerSettings":
        known = set(cls._fields)
        unknown = set(d) - known
        if unknown:
            raise NbtextError(f"unknown tokenizer settings {sorted(unknown)}")
        return cls(**d)


class ModelSettings(Record):
    variant: str = "multinomial"
    alpha: float = 0.03            # Lidstone; 0.03 beat 0.1 and Laplace's 1 on both corpora
    # Complement NB's transforms (Rennie et al. 2003), each off by default: docs/defaults.md
    norm: bool = False             # weight normalization (section 3.2)
    tf: bool = False               # log term frequency, log(1 + n) (section 4.1)
    idf: bool = False              # inverse document frequency (section 4.2)
    length_norm: bool = False      # unit-length documents (section 4.3)

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise NbtextError(f"unknown variant {self.variant!r} (choose from {', '.join(VARIANTS)})")
        if self.variant != "complement" and self.transforms:
            raise NbtextError(f"--{self.transforms[0].replace('_', '-')} is a Complement NB transform: "
                              "it needs --variant complement")
        if not (self.alpha > 0):
            raise NbtextError(f"--alpha must be positive, got {self.alpha}")

    @property
    def transforms(self) -> list[str]:
        return [k for k in ("tf", "idf", "length_norm", "norm") if getattr(self, k)]

    @classmethod
    def from_dict(cls, d: dict) -> "ModelSettings":
        return cls(**{name: d[name] for name in cls._fields if name in d})
