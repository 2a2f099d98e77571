"""Scoring one document straight from a model file, in pure Python.

`nbtext classify` runs once per message from procmail, where start-up is the whole cost:
importing numpy alone takes longer than the whole budget. So this path reads the file's
sections as memoryviews, finds each token in the file's sorted vocabulary, and derives
only the log-probabilities of the tokens the message has. The formulas are the same as
nbtext.naive_bayes (tests check the two agree to 1e-9).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from .decision import Decision, decide
from .errors import ModelFileError
from .modelfile import read_container, section, vocabulary_index
from .settings import ModelSettings, TokenizerSettings
from .tokenize import Tokenizer


class FastScorer:
    def __init__(self, path: str):
        header, payload = read_container(path)
        try:
            self.classes: list[str] = list(header["classes"])
            self.settings = ModelSettings.from_dict(header["model"])
            self.tokenizer = Tokenizer(TokenizerSettings.from_dict(header["tokenizer"]))
            self.decision = Decision.from_dict(header["decision"])
            self.class_count: list[float] = [float(x) for x in header["class_count"]]
            self.derived: dict = header["derived"]
            self.n_features: int = int(header["n_features"])
            self.vocab = vocabulary_index(header, payload, self.n_features)
            self.counts = section(header, payload, "counts")
            self.doc_freq = section(header, payload, "doc_freq") if self.settings.idf else None
        except (KeyError, TypeError, ValueError) as e:
            raise ModelFileError(f"{path}: corrupt model file ({e.__class__.__name__}: {e})") from None
        if len(self.counts) != len(self.classes) * self.n_features:
            raise ModelFileError(f"{path}: corrupt model file (section sizes disagree)")

    def token_id(self, token: str) -> int | None:
        return self.vocab.token_id(token.encode("utf-8", "surrogatepass"))

    def log_prior(self) -> list[float]:
        total = sum(self.class_count)
        return [math.log(n / total) if n > 0 else -math.inf for n in self.class_count]

    def contributions(self, tokens: Iterable[str]) -> tuple[list[float], dict[str, list[float]], int]:
        """(base score per class, per-token score per class summed over occurrences, unknown count).

        jll[c] = base[c] + sum over tokens of contrib[token][c].
        """
        ids: Counter = Counter()
        names: dict[int, str] = {}
        unknown = 0
        for t in tokens:
            tid = self.token_id(t)
            if tid is None:
                unknown += 1
            else:
                ids[tid] += 1
                names[tid] = t
        s, K, V = self.settings, len(self.classes), self.n_features
        alpha, counts = s.alpha, self.counts
        totals = self.derived["feature_total"]
        base = self.log_prior()
        contrib: dict[str, list[float]] = {}
        if s.variant == "multinomial":
            log_den = [math.log(totals[c] + alpha * V) for c in range(K)]
            for tid, n in ids.items():
                contrib[names[tid]] = [n * (math.log(counts[c * V + tid] + alpha) - log_den[c]) for c in range(K)]
        elif s.variant == "bernoulli":
            neg = self.derived.get("bernoulli_neg_sum", [0.0] * K)
            base = [base[c] + neg[c] for c in range(K)]
            for tid in ids:
                contrib[names[tid]] = [
                    math.log(counts[c * V + tid] + alpha) - math.log(self.class_count[c] + alpha - counts[c * V + tid])
                    for c in range(K)]
        else:  # complement, with the transforms of nbtext.naive_bayes.ComplementNB
            grand = sum(totals)
            log_den = [math.log(grand + alpha * V - totals[c]) for c in range(K)]
            norm = self.derived.get("complement_log_sum") if s.norm else None
            if K > 1:
                base = [0.0] * K
            values = {tid: math.log1p(n) if s.tf else float(n) for tid, n in ids.items()}
            if s.length_norm and values:
                length = math.sqrt(sum(v * v for v in values.values()))
                values = {tid: v / length for tid, v in values.items()}
            n_docs = sum(self.class_count)
            for tid, n in values.items():
                col = [counts[c * V + tid] for c in range(K)]
                if s.idf:
                    df = self.doc_freq[tid]
                    idf = math.log(n_docs / df) if df > 0 else 0.0
                    col = [v * idf for v in col]
                all_t = sum(col)
                logged = [math.log(all_t + alpha - col[c]) - log_den[c] for c in range(K)]
                w = [logged[c] / norm[c] for c in range(K)] if norm else [-x for x in logged]
                contrib[names[tid]] = [n * w[c] for c in range(K)]
        return base, contrib, unknown

    def joint_log_likelihood(self, tokens: Iterable[str]) -> list[float]:
        base, contrib, _ = self.contributions(tokens)
        jll = list(base)
        for row in contrib.values():
            for c, v in enumerate(row):
                jll[c] += v
        return jll

    def posteriors(self, jll: list[float]) -> list[float]:
        t = self.decision.temperature
        scaled = [x / t for x in jll]
        m = max(scaled)
        exps = [math.exp(x - m) for x in scaled]
        z = sum(exps)
        return [e / z for e in exps]

    def explain(self, data: bytes | str, n: int) -> dict:
        """The n tokens pushing hardest for and against the chosen label: each token's
        log-likelihood-ratio contribution, its score for the label minus its best score
        for any other class; plus the prior's share and the count of unknown tokens."""
        base, contrib, unknown = self.contributions(self.tokenizer(data))
        jll = list(base)
        for row in contrib.values():
            for c, v in enumerate(row):
                jll[c] += v
        probs = self.posteriors(jll)
        label, _ = decide(self.classes, self.decision, probs)
        k = self.classes.index(label)
        others = [c for c in range(len(self.classes)) if c != k]

        def llr(row):
            return row[k] - max(row[c] for c in others) if others else row[k]

        ranked = sorted(((llr(row), tok) for tok, row in contrib.items()), reverse=True)
        return {"label": label, "probability": probs[k],
                "prior": llr(base), "unknown_tokens": unknown,
                "for": [(t, v) for v, t in ranked[:n] if v > 0],
                "against": [(t, v) for v, t in reversed(ranked[-n:]) if v < 0]}

    def score(self, data: bytes | str) -> tuple[str, float, bool, list[float]]:
        """(label, probability of that label, unsure, all posteriors) for one document."""
        probs = self.posteriors(self.joint_log_likelihood(self.tokenizer(data)))
        label, unsure = decide(self.classes, self.decision, probs)
        return label, probs[self.classes.index(label)], unsure, probs
