"""Each Naive Bayes variant's maths, once: a weight per token and class, and a bias per class.

Every variant scores a document linearly in its (transformed) features x:

    jll_c(x) = b_c + sum_t x_t w_ct

These functions are written with arithmetic operators and a ``log`` passed in, so that one
function serves numpy arrays (every token at once: nbtext.nb.estimators) and Python floats (only
a message's tokens: nbtext.fastscore, the `classify` path, which never imports numpy). The
sums over the whole vocabulary that a weight needs (``log_den`` and the like, a class's
"summary") are computed once by the numpy estimator and stored in the model file, so both
paths compute with the same numbers. Pure Python: importing this module imports nothing.
"""
from __future__ import annotations


def multinomial_weight(n_ct, log_den_c, alpha, log):
    """log P(t|c) = log(N_ct + alpha) - log(N_c + alpha V); log_den_c is the second term."""
    w = log(n_ct + alpha)
    w -= log_den_c  # (in place for numpy: one V x k array, not two)
    return w


def bernoulli_logs(df_ct, n_c, alpha, log):
    """(log p, log(1 - p)) with p = P(t in a document | c) = (df_ct + alpha) / (n_c + 2 alpha)."""
    denom = n_c + 2 * alpha
    p_num = df_ct + alpha
    log_denom = log(denom)
    return log(p_num) - log_denom, log(denom - p_num) - log_denom


def bernoulli_weight(df_ct, n_c, alpha, log):
    """log p - log(1 - p): a present token's weight; absent ones are in the bias, which holds
    sum_t log(1 - p_ct) (so scoring stays sparse)."""
    log_p, log_not_p = bernoulli_logs(df_ct, n_c, alpha, log)
    return log_p - log_not_p


def complement_logged(all_t, n_ct, log_den_c, alpha, log):
    """log P(t | not c) = log(sum_{c' != c} N_c't + alpha) - log(sum_t (...)), all_t being the
    token's count over every class and log_den_c the second term (Rennie et al. 2003)."""
    return log(all_t + alpha - n_ct) - log_den_c


def complement_weight(logged, log_sum_c=None):
    """-log P(t | not c); with weight normalization (log_sum_c, the class's sum of ``logged``
    over the vocabulary), logged / log_sum_c, as scikit-learn's ComplementNB(norm=True)."""
    return -logged if log_sum_c is None else logged / log_sum_c


def idf_weight(df_t, n_docs, log):
    """Rennie et al.'s inverse document frequency (4.2), log(N / df) for a token seen (df > 0)."""
    return log(n_docs / df_t)


def check_scorable(class_count, where: str | None = None) -> None:
    """NbtextError unless the model has learned a document: with none (every one forgotten),
    each class's prior is log(0 / 0) and every score NaN. ``where``: the model's file."""
    if not sum(class_count):
        from ..errors import NbtextError

        raise NbtextError(f"{where + ': ' if where else ''}the model has learned no documents (each one was "
                          "forgotten): nothing to score with; learn some first")


def log_prior(n_c, total, log):
    """log(N_c / N), the class's share of the documents, as log N_c - log N."""
    return log(n_c) - log(total)


# -- each variant's composition of the formulas ---------------------------------------------------
# The numpy estimators (nbtext.nb.estimators) apply the formulas above to every token at once;
# the classes below apply them to one document's tokens in Python floats, for `classify`, whose
# whole budget is less than importing numpy. Both take their bias from bias_terms, and
# tests/test_modelfile.py checks that the two paths agree to 1e-9 for every variant.

class Variant:
    """A variant's composition, with the defaults most variants share (a multinomial's)."""

    @staticmethod
    def summary_keys(settings) -> list:
        return ["log_den"]

    @staticmethod
    def bias_terms(n_classes: int, prior, summary) -> tuple:
        return (prior,)

    @staticmethod
    def values(settings, counts: dict) -> dict:
        """The document's features: its token counts."""
        return {t: float(n) for t, n in counts.items()}

    @staticmethod
    def kernel_values(settings) -> int | None:
        """values() as the compiled kernel computes a token's (nbtext/_c/score.c's modes: 0 the
        count, 1 presence, 2 log(1 + count)), or None where it needs the whole document."""
        return 0


class Multinomial(Variant):
    @staticmethod
    def token_weights(settings, col, df_t, n_docs, class_count, summary, log) -> list:
        return [multinomial_weight(n, d, settings.alpha, log) for n, d in zip(col, summary["log_den"])]


class Bernoulli(Variant):
    @staticmethod
    def summary_keys(settings) -> list:
        return ["neg_sum"]

    @staticmethod
    def bias_terms(n_classes: int, prior, summary) -> tuple:
        # (absent tokens' log(1 - p), added before the prior; a model of no token stores no
        # sums, and over no token that sum is 0)
        return (summary.get("neg_sum", [0.0] * n_classes), prior)

    @staticmethod
    def values(settings, counts: dict) -> dict:
        """The document's features: present or not."""
        return {t: 1.0 for t in counts}

    @staticmethod
    def kernel_values(settings) -> int | None:
        return 1

    @staticmethod
    def token_weights(settings, col, df_t, n_docs, class_count, summary, log) -> list:
        return [bernoulli_weight(df, n, settings.alpha, log) for df, n in zip(col, class_count)]


class Complement(Variant):
    @staticmethod
    def summary_keys(settings) -> list:
        return ["log_den"] + (["log_sum"] if settings.norm else [])

    @staticmethod
    def bias_terms(n_classes: int, prior, summary) -> tuple:
        # One class: its prior is all there is to say; with more, the complement weights correct
        # for class sizes and the prior is left out, as scikit-learn does.
        return (prior,) if n_classes == 1 else ()

    @staticmethod
    def values(settings, counts: dict) -> dict:
        """The document's features: Rennie et al.'s log term frequency (tf), then unit length
        (length_norm); the numpy form is estimators.document_transform."""
        import math

        values = {t: math.log1p(n) if settings.tf else float(n) for t, n in counts.items()}
        if settings.length_norm and values:
            length = math.sqrt(sum(v * v for v in values.values()))
            values = {t: v / length for t, v in values.items()}
        return values

    @staticmethod
    def kernel_values(settings) -> int | None:
        return None if settings.length_norm else 2 if settings.tf else 0

    @staticmethod
    def token_weights(settings, col, df_t, n_docs, class_count, summary, log) -> list:
        if settings.idf:
            idf = idf_weight(df_t, n_docs, log) if df_t > 0 else 0.0
            col = [v * idf for v in col]
        all_t = sum(col)
        log_sum = summary.get("log_sum") if settings.norm else None
        return [complement_weight(complement_logged(all_t, col[c], summary["log_den"][c], settings.alpha, log),
                                  log_sum[c] if log_sum else None) for c in range(len(col))]


VARIANTS = {"multinomial": Multinomial, "bernoulli": Bernoulli, "complement": Complement}
