"""Scoring one document straight from a model file, in pure Python.

`nbtext classify` runs once per message from procmail, where start-up is the whole cost:
importing numpy alone takes longer than the whole budget. So this path reads the file's
sections as memoryviews, finds each token in the file's sorted vocabulary, and computes the
weights of the tokens the message has alone, with the formulas of nbtext.nb.weights (the ones
the numpy estimators use) and the per-class sums the file stores (tests check the two paths
agree to 1e-9).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from .errors import ModelFileError, NbtextError
from .nb import weights as F
from .nb.decision import decide
from .store.codec import check_header, meta, summary
from .store.container import read_container, section
from .store.vocabfile import vocabulary_index
from .text.tokenizer import Tokenizer


class FastScorer:
    def __init__(self, path: str):
        header, payload = read_container(path)
        try:
            tokenizer, self.settings, self.classes, self.class_count, self.decision = meta(header)
            self.tokenizer = Tokenizer(tokenizer)
            self.n_features: int = check_header(header)
            self.summary: dict = summary(header) if self.n_features else {}
            self.vocab = vocabulary_index(header, payload, self.n_features)
            self.counts = section(header, payload, "counts")
            self.doc_freq = section(header, payload, "doc_freq") if self.settings.idf else None
            if self.doc_freq is not None and len(self.doc_freq) != self.n_features:
                raise ValueError("document frequencies do not match the vocabulary")
        except (KeyError, TypeError, ValueError) as e:
            raise ModelFileError(f"{path}: corrupt model file ({e.__class__.__name__}: {e})") from None
        except NbtextError as e:
            raise ModelFileError(f"{path}: corrupt model file ({e})") from None

    def token_id(self, token: str) -> int | None:
        return self.vocab.token_id(token.encode("utf-8", "surrogatepass"))

    def _column(self, tid: int) -> list[float]:
        V = self.n_features
        return [float(self.counts[c * V + tid]) for c in range(len(self.classes))]

    def bias(self) -> list[float]:
        """b_c of the linear view (nbtext.nb.estimators' _linear for each variant)."""
        total = sum(self.class_count)
        prior = [F.log_prior(n, total, math.log) if n > 0 else -math.inf for n in self.class_count]
        if self.settings.variant == "bernoulli":
            return [n + p for n, p in zip(self.summary.get("neg_sum", [0.0] * len(prior)), prior)]
        if self.settings.variant == "complement" and len(self.classes) > 1:
            return [0.0] * len(self.classes)
        return prior

    def token_weights(self, tid: int) -> list[float]:
        """w_ct of token ``tid`` for each class (nbtext.nb.weights)."""
        s, alpha, col, log = self.settings, self.settings.alpha, self._column(tid), math.log
        K = range(len(self.classes))
        if s.variant == "multinomial":
            return [F.multinomial_weight(col[c], self.summary["log_den"][c], alpha, log) for c in K]
        if s.variant == "bernoulli":
            return [F.bernoulli_weight(col[c], self.class_count[c], alpha, log) for c in K]
        if s.idf:
            df = self.doc_freq[tid]
            idf = F.idf_weight(df, sum(self.class_count), log) if df > 0 else 0.0
            col = [v * idf for v in col]
        all_t = sum(col)
        log_sum = self.summary.get("log_sum") if s.norm else None
        return [F.complement_weight(F.complement_logged(all_t, col[c], self.summary["log_den"][c], alpha, log),
                                    log_sum[c] if log_sum else None) for c in K]

    def features(self, ids: Counter) -> dict[int, float]:
        """The document's value per known token, as the variant counts it (its features())."""
        s = self.settings
        if s.variant == "bernoulli":
            return {tid: 1.0 for tid in ids}
        if s.variant != "complement":
            return {tid: float(n) for tid, n in ids.items()}
        values = {tid: math.log1p(n) if s.tf else float(n) for tid, n in ids.items()}
        if s.length_norm and values:
            length = math.sqrt(sum(v * v for v in values.values()))
            values = {tid: v / length for tid, v in values.items()}
        return values

    def contributions(self, tokens: Iterable[str]) -> tuple[list[float], dict[str, list[float]], int]:
        """(bias per class, each token's x_t w_ct per class, the count of unknown tokens):
        jll[c] = bias[c] + sum over tokens of contrib[token][c]."""
        occurrences = Counter(tokens)
        keys = {t: t.encode("utf-8", "surrogatepass") for t in occurrences}
        found = self.vocab.token_ids(keys.values())
        ids: Counter = Counter()
        names: dict[int, str] = {}
        unknown = 0
        for t, n in occurrences.items():
            tid = found.get(keys[t])
            if tid is None:
                unknown += n
            else:
                ids[tid], names[tid] = n, t
        contrib = {names[tid]: [x * w for w in self.token_weights(tid)]
                   for tid, x in self.features(ids).items()}
        return self.bias(), contrib, unknown

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
        """The verdict with the n tokens pushing hardest for and against it (nbtext.explain)."""
        from .explain import explanation

        bias, contrib, unknown = self.contributions(self.tokenizer(data))
        jll = list(bias)
        for row in contrib.values():
            for c, v in enumerate(row):
                jll[c] += v
        probs = self.posteriors(jll)
        label, unsure = decide(self.classes, self.decision, probs)
        k = self.classes.index(label)
        return {"label": label, "probability": probs[k], "unsure": unsure,
                **explanation(k, bias, contrib, unknown, n)}

    def score(self, data: bytes | str) -> tuple[str, float, bool, list[float]]:
        """(label, probability of that label, unsure, all posteriors) for one document."""
        probs = self.posteriors(self.joint_log_likelihood(self.tokenizer(data)))
        label, unsure = decide(self.classes, self.decision, probs)
        return label, probs[self.classes.index(label)], unsure, probs
