"""Every setting and its default, once: small frozen records, never globals.

TokenizerSettings and ModelSettings are stored in every model file, so that scoring tokenizes and
derives exactly as training did. FeatureOptions and DecisionOptions say how train selects tokens
and fits its decisions. The command line takes its option defaults from these records, and a bad
value raises SettingError naming the parameter; the command line names its flag instead.
"""
from __future__ import annotations

import math

from .errors import SettingError
from .record import Record

VARIANTS = ("multinomial", "bernoulli", "complement")
# The variant "auto" is chosen by train among these, on internal folds (nbtext.batch.train.
# choose_variant): they count a document alike, so one set of counts serves either.
AUTO = "auto"
AUTO_CANDIDATES = ("multinomial", "complement")
MODES = ("auto", "text", "email")
CRITERIA = ("frequency", "chi2", "mi")  # how max_features ranks tokens (nbtext/features/selection.py)
# The mail tokenizer's rules that mail_rules_off can name (for measuring what each is worth:
# scripts/mail_ablation.py, docs/mail_ablation.md).
MAIL_RULES = {
    "headers": "namespaced header tokens (subject words, addresses, domains, X-Mailer, ...)",
    "header-names": "one hdr:NAME token per header field present",
    "received": "relay domains of Received hops",
    "recipients": "a bucketed count of To/Cc addresses",
    "decode": "quoted-printable and base64 decoded (off: the raw transfer encoding is read)",
    "html": "HTML reduced to text, links and alt text (off: markup read as words)",
    "urls": "URL tokens: scheme, host and parents, path pieces (off: URLs read as words)",
    "mime": "content type, encoding, charset and attachment extension tokens",
}


def choice(param: str, value, allowed) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise SettingError(param, value, f"must be one of {', '.join(map(str, allowed))}")


def whole(param: str, value, lo: int, hi: int) -> None:
    """A whole number in [lo, hi] (settings also come from files a stranger wrote)."""
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise SettingError(param, value, f"must be a whole number from {lo} to {hi}")


def flag(param: str, value) -> None:
    if not isinstance(value, bool):
        raise SettingError(param, value, "must be true or false")


def number(param: str, value, lo: float, hi: float, lo_open: bool = False, hi_open: bool = False,
           zero: bool = False) -> None:
    """A finite number in [lo, hi] (or open at either end; ``zero``: or 0)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if zero and ok and value == 0:
        return
    if not ok or value > hi or value < lo or (lo_open and value == lo) or (hi_open and value == hi):
        raise SettingError(param, value, f"must be {'0 or ' if zero else ''}a number in "
                                         f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}")


def check_unsure(value) -> None:
    """An unsure band: two numbers LOW <= HIGH in [0, 1]."""
    pair = isinstance(value, (tuple, list)) and len(value) == 2
    if not pair or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                           for x in value) or not 0 <= value[0] <= value[1] <= 1:
        raise SettingError("unsure", ",".join(map(str, value)) if pair else value, "needs 0 <= LOW <= HIGH <= 1")


# Caps on what the tokenizer may be asked: past them a document's tokens grow without use (word
# 11-grams of 2,000 words are 2 x 22,000 tokens of one occurrence each), and a stored value is
# a stranger's (an ngram_max of 1e9 would hang every classify).
MAX_NGRAM = 10
MAX_CHAR_NGRAM = 10
MAX_WORD_LENGTH = 1000
MAX_BYTES = 1 << 30


class TokenizerSettings(Record):
    # Defaults chosen by 5-fold cross-validation on the development corpora (docs/defaults.md):
    # word bigrams help both kinds of text; character 2-4-grams help short text and hurt mail,
    # so they apply to plain-text documents and, unless mail_char_ngrams, not to mail.
    mode: str = "auto"             # auto: mail-aware when a document looks like RFC 822
    lowercase: bool = True         # case-fold words
    ngram_max: int = 2             # word n-grams 1..ngram_max
    char_ngram_min: int = 2        # character n-grams inside word boundaries (0 = off)
    char_ngram_max: int = 4
    mail_char_ngrams: bool = False  # character n-grams for mail bodies too
    max_word_length: int = 40      # longer words become one "skip:" summary token
    max_bytes: int = 2_000_000     # text tokenized per document at most (huge mail never hangs)
    mail_rules_off: frozenset = frozenset()  # mail rules turned off (MAIL_RULES; measurement only)

    def __post_init__(self):
        choice("mode", self.mode, MODES)
        flag("lowercase", self.lowercase)
        flag("mail_char_ngrams", self.mail_char_ngrams)
        whole("ngram_max", self.ngram_max, 1, MAX_NGRAM)
        whole("char_ngram_min", self.char_ngram_min, 0, MAX_CHAR_NGRAM)
        whole("char_ngram_max", self.char_ngram_max, 0, MAX_CHAR_NGRAM)
        if self.char_ngram_max < self.char_ngram_min:  # (a MIN of 0 turns them off)
            raise SettingError("char_ngrams", f"{self.char_ngram_min},{self.char_ngram_max}",
                               "must be MIN,MAX with MIN <= MAX (0,0: none)")
        whole("max_word_length", self.max_word_length, 1, MAX_WORD_LENGTH)
        whole("max_bytes", self.max_bytes, 1, MAX_BYTES)
        if isinstance(self.mail_rules_off, str) or not isinstance(self.mail_rules_off, (set, frozenset, list, tuple)):
            raise SettingError("mail_rules_off", self.mail_rules_off, "must be a list of rule names")
        object.__setattr__(self, "mail_rules_off", frozenset(self.mail_rules_off))
        for rule in sorted(self.mail_rules_off):
            choice("mail_rules_off", rule, tuple(MAIL_RULES))

    def to_dict(self) -> dict:
        d = super().to_dict()
        # Left out when every rule is on: dumps of such models stay those of earlier versions,
        # which refuse settings they do not know.
        if d["mail_rules_off"]:
            d["mail_rules_off"] = sorted(d["mail_rules_off"])
        else:
            del d["mail_rules_off"]
        return d


class ModelSettings(Record):
    variant: str = AUTO            # one of VARIANTS, or auto: chosen by internal folds (docs/defaults.md)
    alpha: float = 0.03            # Lidstone; 0.03 beat 0.1 and Laplace's 1 on both corpora
    # Complement NB's transforms (Rennie et al. 2003), each off by default: docs/defaults.md
    norm: bool = False             # weight normalization (section 3.2)
    tf: bool = False               # log term frequency, log(1 + n) (section 4.1)
    idf: bool = False              # inverse document frequency (section 4.2)
    length_norm: bool = False      # unit-length documents (section 4.3)
    auto: bool = False             # variant was chosen by the auto rule (calibrate chooses again)

    def __post_init__(self):
        choice("variant", self.variant, VARIANTS + (AUTO,))
        flag("auto", self.auto)
        if self.auto and self.variant not in AUTO_CANDIDATES:
            raise SettingError("variant", self.variant, f"cannot have been chosen automatically (auto chooses "
                               f"{' or '.join(AUTO_CANDIDATES)})")
        for name in ("norm", "tf", "idf", "length_norm"):
            flag(name, getattr(self, name))
        if self.variant != "complement" and self.transforms:
            raise SettingError(self.transforms[0], None, "is a Complement NB transform: it needs "
                               "{variant} complement")
        number("alpha", self.alpha, 0, 1e6, lo_open=True)

    def to_dict(self) -> dict:
        d = super().to_dict()
        if not d["auto"]:
            del d["auto"]  # (as models before the auto rule stored them)
        return d

    def chosen(self, variant: str) -> "ModelSettings":
        """These settings with the variant the auto rule chose."""
        return ModelSettings.from_dict({**self.to_dict(), "variant": variant, "auto": True})

    @property
    def choosing(self) -> bool:
        """Whether train (or calibrate) chooses the variant."""
        return self.variant == AUTO or self.auto

    @property
    def transforms(self) -> list[str]:
        return [k for k in ("tf", "idf", "length_norm", "norm") if getattr(self, k)]


class FeatureOptions(Record):
    """Which tokens train keeps."""

    min_df: int = 1                # in at least this many documents
    max_df: float = 1.0            # in at most this fraction of them
    max_features: int | None = None  # the best N by `select`
    select: str = "frequency"      # frequency, chi2 or mi (nbtext/features/selection.py)

    def __post_init__(self):
        if self.min_df < 1:
            raise SettingError("min_df", self.min_df, "must be at least 1")
        if not (0 < self.max_df <= 1):
            raise SettingError("max_df", self.max_df, "must be in (0, 1]")
        if self.max_features is not None and self.max_features < 1:
            raise SettingError("max_features", self.max_features, "must be at least 1")
        choice("select", self.select, CRITERIA)
        if self.select != "frequency" and self.max_features is None:
            raise SettingError("select", None, f"{self.select} ranks tokens for {{max_features}}: "
                               "give {max_features} N")


class DecisionOptions(Record):
    """How train turns posteriors into verdicts; fitted on internal folds where asked."""

    calibrate: bool = True               # temperature scaling on out-of-fold predictions
    layer: bool = True                   # with calibrate: the decision layer (nbtext.nb.layer)
    threshold: float | None = None       # P(positive) at or above which a document is positive
    unsure: tuple | None = None          # (low, high): P(positive) in [low, high) is unsure
    max_fpr: float | None = None         # choose the threshold keeping negatives' FPR under this
    positive: str | None = None          # default: "spam" when that class exists
    folds: int = 5
    seed: int = 0

    def __post_init__(self):
        flag("calibrate", self.calibrate)
        flag("layer", self.layer)
        if self.threshold is not None:
            number("threshold", self.threshold, 0, 1)
        if self.unsure is not None:
            check_unsure(self.unsure)
        if self.threshold is not None and self.max_fpr is not None:
            raise SettingError("threshold", None, "or {max_fpr}: give one, not both")
        if self.max_fpr is not None:
            number("max_fpr", self.max_fpr, 0, 1)
            if self.max_fpr == 1:
                raise SettingError("max_fpr", self.max_fpr, "must be below 1")
        whole("folds", self.folds, 2, 1000)

    @property
    def needs_matrix(self) -> bool:
        return self.calibrate or self.max_fpr is not None


# -- tables (nbtext/table/) ------------------------------------------------------------------
TABLE_VARIANTS = ("table", "categorical", "gaussian")  # table: each column typed by its values
COVARIANCES = ("diagonal", "shared", "full")
MISSING_VALUES = ("", "NA", "?")  # a cell holding one of these (after stripping) is skipped


class TableSettings(Record):
    """How a table model derives its probabilities from its statistics (stored in table model
    files). Defaults are scikit-learn's: CategoricalNB's alpha 1, GaussianNB's var_smoothing
    1e-9, QuadraticDiscriminantAnalysis's reg_param 0."""

    variant: str = "table"         # table: categorical NB and Gaussian columns by their values
    alpha: float = 1.0             # categorical columns: Lidstone (1 = Laplace, as CategoricalNB)
    covariance: str = "diagonal"   # numeric columns: diagonal (Gaussian NB), shared (LDA), full (QDA)
    reg: float = 0.0               # shared/full: (1 - reg) * covariance + reg * identity
    var_smoothing: float = 1e-9    # added to variances: this times the largest column variance

    def __post_init__(self):
        choice("variant", self.variant, TABLE_VARIANTS)
        choice("covariance", self.covariance, COVARIANCES)
        number("alpha", self.alpha, 0, 1e6, lo_open=True)
        number("reg", self.reg, 0, 1)
        number("var_smoothing", self.var_smoothing, 0, 1)
