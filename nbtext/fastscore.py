"""Scoring one document straight from a model file, in pure Python.

`nbtext classify` runs once per message from procmail, where start-up is the whole cost:
importing numpy alone takes longer than the whole budget. So this path reads the file's
sections as memoryviews, finds each token in the file's sorted vocabulary, and computes the
weights of the tokens the message has alone, with the formulas of nbtext.nb.weights (the ones
the numpy estimators use) and the per-class sums the file stores (tests check the two paths
agree to 1e-9).

That composition costs a Python loop per distinct token and class, on a list that holds every
token of the document with its n-grams; numpy's start-up is paid back once a document has
enough of them. So a document of more than LARGE_DOCUMENT bytes is scored as predict scores it
(nbtext.features.counting, with the compiled kernel when it is built, and the model's numpy
weights: the same numbers to 1e-9), at predict's cost per byte (docs/hostile.md, issue 32).
"""
from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable

from .errors import KernelError, ModelFileError, NbtextError
from .nb import weights as F
from .nb.decision import calibrated, decide
from .nb.layer import Layer
from .store.codec import (BAD_DOC_FREQ, ESCAPE, SPARSE_SECTIONS, check_empty_classes, check_header,
                          check_layer_ids_in_place, count_read, decode, documents_most, layer_header, meta,
                          sparse_row, summary, weights_read)
from .store.container import read_container, section
from .store.fields import MAX_COUNT
from .store.vocabfile import VocabularyError, vocabulary_index
from .text.tokenizer import Tokenizer


LARGE_DOCUMENT = 64 * 1024  # bytes: past this, a document is scored as predict scores it


class TableFile(Exception):
    """The model is a table model (nbtext.table), which this text scorer does not score."""

    def __init__(self, header: dict, payload):
        self.header, self.payload = header, payload


class FastScorer:
    def __init__(self, path: str):
        self.path = path
        header, payload = read_container(path)
        if header.get("kind") == "table":
            raise TableFile(header, payload)
        self.file = (header, payload, path)  # (decoded whole for a large document only)
        try:
            tokenizer, self.settings, self.classes, self.class_count, self.decision = meta(header)
            self.tokenizer = Tokenizer(tokenizer)
            self.variant = F.VARIANTS[self.settings.variant]
            self.n_features: int = check_header(header)
            self.summary: dict = summary(header) if self.n_features else {}
            self.vocab = vocabulary_index(header, payload, self.n_features)
            if "counts" in header["sections"]:
                self.counts, self.sparse = section(header, payload, "counts"), None
            else:  # (counts by token: a token's row read by its start and end, store.codec)
                self.counts, self.sparse = None, [section(header, payload, name) for name in SPARSE_SECTIONS]
                self.over = None if "counts_over" not in header["sections"] else (
                    section(header, payload, "counts_over_at"), section(header, payload, "counts_over"))
            self.doc_freq = section(header, payload, "doc_freq") if self.settings.idf else None
            if self.doc_freq is not None and len(self.doc_freq) != self.n_features:
                raise ValueError("document frequencies do not match the vocabulary")
            layer = layer_header(header, len(self.classes), self.n_features)
            if layer is not None:
                ids, weights = section(header, payload, "layer_ids"), section(header, payload, "layer_weights")
                check_layer_ids_in_place(ids, self.n_features)
                self.layer = Layer(ids, weights, layer["bias"], layer["den"], layer["den_not"], layer["alpha"],
                                   layer["strength"], layer["min_count"])
            else:
                self.layer = None
        except (KeyError, TypeError, ValueError) as e:
            raise ModelFileError(f"{path}: corrupt model file ({e.__class__.__name__}: {e})") from None
        except KernelError:
            raise
        except NbtextError as e:
            raise ModelFileError(f"{path}: corrupt model file ({e})") from None

    def token_id(self, token: str) -> int | None:
        return self.vocab.token_id(token.encode("utf-8", "surrogatepass"))

    def _column(self, tid: int) -> list[float]:
        """Token ``tid``'s counts per class, each checked as it is read (store.codec: what a
        message reads of the file is checked; store.load checks all of it)."""
        V, k = self.n_features, len(self.classes)
        try:
            if self.sparse is None:
                col = [count_read(self.counts[c * V + tid]) for c in range(k)]
            else:
                indptr, classes, values = self.sparse
                col = [0.0] * k
                entries, row = sparse_row(indptr, classes, values, tid, k)
                for j, c in zip(entries, row):
                    col[c] = count_read(values[j] if values[j] != ESCAPE or self.over is None else self._over(j),
                                        sparse=True)
            check_empty_classes(self.classes, self.class_count, col)
            return col
        except ValueError as e:
            raise ModelFileError(f"{self.path}: corrupt model file ({e})") from None

    def _over(self, j: int) -> float:
        """Sparse count j, stored apart (its byte is ESCAPE: store.codec)."""
        at, over = self.over
        i = bisect_left(at, j)
        if i == len(at) or at[i] != j or not ESCAPE <= over[i] <= MAX_COUNT:
            raise ModelFileError(f"{self.path}: corrupt model file (the sparse counts' large counts are not where "
                                 f"their bytes say)")
        return float(over[i])

    def bias(self) -> list[float]:
        """b_c of the linear view: the variant's bias terms summed (nbtext.nb.weights)."""
        total = sum(self.class_count)
        prior = [F.log_prior(n, total, math.log) if n > 0 else -math.inf for n in self.class_count]
        b = [0.0] * len(self.classes)
        for term in self.variant.bias_terms(len(self.classes), prior, self.summary):
            b = [x + y for x, y in zip(b, term)]
        return b

    def token_weights(self, tid: int) -> list[float]:
        """w_ct of token ``tid`` for each class (nbtext.nb.weights)."""
        try:
            df = count_read(self.doc_freq[tid], "document frequencies") if self.doc_freq is not None else 0
            if df > documents_most(self.class_count):
                raise ValueError(BAD_DOC_FREQ)
            return self.variant.token_weights(self.settings, self._column(tid), df, sum(self.class_count),
                                              self.class_count, self.summary, math.log)
        except ValueError as e:  # (also a math domain error: counts each in range, not together)
            raise ModelFileError(f"{self.path}: corrupt model file ({e})") from None

    def contributions(self, tokens: Iterable[str]) -> tuple[list[float], dict[str, list[float]], int, int, list | None]:
        """(bias per class, each token's x_t w_ct per class, the count of unknown tokens, the
        count of known ones, the decision layer's values d or None): jll[c] = bias[c] + sum over
        tokens of contrib[token][c]."""
        occurrences = Counter(tokens)
        keys = {t: t.encode("utf-8", "surrogatepass") for t in occurrences}
        try:
            found = self.vocab.token_ids(keys.values())
        except VocabularyError as e:
            raise ModelFileError(f"{self.path}: corrupt model file ({e})") from None
        ids: Counter = Counter()
        names: dict[int, str] = {}
        unknown = 0
        for t, n in occurrences.items():
            tid = found.get(keys[t])
            if tid is None:
                unknown += n
            else:
                ids[tid], names[tid] = n, t
        return self.contributions_of(ids, names, unknown)

    def contributions_of(self, ids: dict[int, int], names: dict[int, str], unknown: int) -> tuple:
        """contributions() of a document already counted: its known tokens' ids and occurrences
        (in the order the tokens were first seen: the sums are taken in that order), their
        names, and the count of unknown occurrences (nbtext.serve counts with the kernel)."""
        contrib = {names[tid]: [x * w for w in self.token_weights(tid)]
                   for tid, x in self.variant.values(self.settings, ids).items()}
        return self.bias(), contrib, unknown, sum(ids.values()), self.layer_values(ids)

    def layer_values(self, ids: dict[int, int]) -> list[float] | None:
        """The decision layer's d of a document's known tokens (ids: occurrences), or None."""
        if self.layer is None:
            return None
        return self.layer.values({tid: (self._column(tid), n) for tid, n in ids.items()}, self._layer_weights)

    def _layer_weights(self, tid: int) -> list[float] | None:
        """The layer's weights of token ``tid`` (None: it weighs 0)."""
        ids, j = self.layer.ids, len(self.layer.bias)
        i = bisect_left(ids, tid)
        if i == len(ids) or ids[i] != tid:
            return None
        try:
            return weights_read(self.layer.weights[i * j:(i + 1) * j].tolist())
        except ValueError as e:
            raise ModelFileError(f"{self.path}: corrupt model file ({e})") from None

    @staticmethod
    def _summed(bias: list, contrib: dict) -> list[float]:
        jll = list(bias)
        for row in contrib.values():
            for c, v in enumerate(row):
                jll[c] += v
        return jll

    def explain(self, data: bytes | str, n: int) -> dict:
        """The verdict with the n tokens pushing hardest for and against it (nbtext.explain)."""
        if len(data) > LARGE_DOCUMENT:
            from .explain import explain_rows

            model, batch, probs = self.as_predict(data)
            label, unsure = decide(self.classes, self.decision, probs)
            return {"label": label, "probability": probs[self.classes.index(label)], "unsure": unsure,
                    "scores": probs, **explain_rows(model, batch, [probs], [label], n)[0]}
        return self.explained(self.contributions(self.tokenizer(data)), n)

    def explained(self, contributions: tuple, n: int) -> dict:
        """explain() of a document's contributions()."""
        from .explain import explanation

        bias, contrib, unknown, _, _ = contributions
        label, prob, unsure, probs = self.verdict(contributions)
        k = self.classes.index(label)
        return {"label": label, "probability": prob, "unsure": unsure, "scores": probs,
                **explanation(k, bias, contrib, unknown, n)}

    def score(self, data: bytes | str) -> tuple[str, float, bool, list[float]]:
        """(label, probability of that label, unsure, all posteriors) for one document."""
        if len(data) > LARGE_DOCUMENT:
            probs = self.as_predict(data)[2]
            label, unsure = decide(self.classes, self.decision, probs)
            return label, probs[self.classes.index(label)], unsure, probs
        return self.verdict(self.contributions(self.tokenizer(data)))

    def verdict(self, contributions: tuple) -> tuple[str, float, bool, list[float]]:
        """score() of a document's contributions()."""
        bias, contrib, _, known, d = contributions
        return self.decided(self._summed(bias, contrib), known, d)

    def decided(self, jll: list[float], known: int, d: list | None = None) -> tuple[str, float, bool, list[float]]:
        """verdict() of a document's summed joint log-likelihoods and known tokens' occurrences
        (and the decision layer's values d, where the model has a layer)."""
        probs = calibrated(self.decision, jll, known)
        if d is not None:
            probs = self.layer.combined(probs, d)
        label, unsure = decide(self.classes, self.decision, probs)
        return label, probs[self.classes.index(label)], unsure, probs

    def as_predict(self, data: bytes | str) -> tuple:
        """(model, Batch, posteriors) of one document as predict computes them: the whole model
        decoded, the document counted by nbtext.features.counting, numpy's weights (with this
        scorer's decision, which a classify call may have overridden)."""
        from .features.counting import count_documents

        model = decode(*self.file)
        model.decision = self.decision
        batch = count_documents([data], model.tokenizer_settings)
        return model, batch, [float(p) for p in model.proba(batch.onto(model.vocab, grow=False))[0]]
