"""A model file as the daemon scores with it: `nbtext classify`'s scorer (nbtext.fastscore), kept.

classify reads a model for one message; the daemon reads it once for many, so what classify
does per message and could do once is done once here, and nothing else changes:

- a message is counted as train and predict count it (nbtext.features.counting: the compiled
  kernel where there is one), which gives its distinct tokens in the order classify's tokenizer
  first yields them, each with its occurrences;
- its tokens are found through the vocabulary's 64-bit key index (built once from the file's
  vocabulary) and each hit is checked against the token's bytes, where classify searches the
  front-coded vocabulary token by token;
- a token's weights, computed by fastscore's own function, are kept (one float per class and
  token, in an array made once), where classify computes them per message.

The contributions then go through fastscore's own sums, calibration and decision in classify's
order, so a verdict and its probability are classify's bit for bit (tests/test_serve.py holds
them equal on real mail). With the compiled kernel, the lookups, the byte checks and the sums
of a message are one call (nbtext/_c/score.c: the same additions in the same order, so the
same sums to the bit; counted_contributions stays as the reference, and the explanation's
path, and tests/test_serve.py holds the two equal). A model's decision layer is summed in the
same call (each token's r and w computed once, as its weights are, then Layer.values' sums in
its order): classify's d.
"""
from __future__ import annotations

import math
from array import array
from dataclasses import dataclass

from ..errors import NbtextError
from ..fastscore import FastScorer
from ..nb.decision import positive_of
from ..store.codec import decode

# spamd's and rspamd's clients read a score against a threshold on SpamAssassin's scale (a
# required score of 5 by default; Exim's $spam_score_int is ten times the score): the
# probability of the positive class times SCALE, against the model's threshold times SCALE.
SCALE = 10.0


@dataclass(frozen=True)
class Verdict:
    label: str               # the verdict's class (classify's first column)
    probability: float       # P(label) (classify's second column)
    unsure: bool             # within the model's unsure band (classify --exit-code's 2)
    spam: bool               # the positive class, and sure: what spamd's "Spam: True" says
    p_positive: float        # P(positive class)
    threshold: float         # the model's threshold on P(positive class)
    explanation: dict | None = None  # nbtext.explain.explanation's, when asked for

    @property
    def score(self) -> float:
        return self.p_positive * SCALE

    @property
    def required(self) -> float:
        return self.threshold * SCALE

    @property
    def shown_label(self) -> str:
        """The label as classify --passthrough writes it in X-Nbtext-Class."""
        return "unsure" if self.unsure else self.label


class ServedModel(FastScorer):
    """FastScorer for a long-lived process: the same verdicts, without per-message lookups."""

    def __init__(self, path: str):
        super().__init__(path)
        if len(self.classes) != 2:
            raise NbtextError(f"{path}: serve needs a model of two classes (spam and ham); this one has "
                              f"{len(self.classes)} ({', '.join(self.classes)})")
        self.path = path
        self.positive = positive_of(self.classes, self.decision.positive)
        self.index = self._key_index()
        k = len(self.classes)
        self._weights = array("d", [math.nan]) * (self.n_features * k)
        self._bias = array("d", self.bias())
        self._sums = self._kernel_sums()
        # (the decision layer's r and w of each token, V x 2J, NaN until a message has it)
        self._layer_rows = (None if self.layer is None
                            else array("d", [math.nan]) * (self.n_features * 2 * len(self.layer.bias)))

    def _kernel_sums(self):
        """(kernel, key index, feature mode, mail reader) for the compiled kernel's sums, or None
        for the Python path: no kernel, or a variant whose feature values need the whole
        document."""
        from ..features import kernel

        compiled = kernel.compiled()
        mode = self.variant.kernel_values(self.settings)
        keyindex = self.index.compiled_index() if compiled is not None else None
        if keyindex is None or mode is None:
            return None
        return compiled, keyindex, mode, kernel.mail_parts(compiled, self.tokenizer)

    def _key_index(self):
        """The vocabulary's key -> id index, from the file decoded whole by store.codec.decode:
        so the daemon refuses at load every file the other commands refuse (classify checks
        what a message reads of the file; a daemon reading it lazily answered NaN, an internal
        error or silently other numbers at the message that first read the damage:
        docs/hostile.md). The decoded model is let go but for its vocabulary."""
        from ..features.vocabulary import token_spans

        index = decode(*self.file).vocab
        self._blob = index.encoded()
        self._starts, self._lengths = token_spans(self._blob)
        return index

    @property
    def learned(self) -> dict[str, int]:
        """Documents learned per class."""
        return dict(zip(self.classes, (int(n) for n in self.class_count)))

    def token_weights(self, tid: int) -> array:
        k = len(self.classes)
        w = self._weights[tid * k:(tid + 1) * k]
        if w[0] != w[0]:  # (NaN: not computed yet)
            w = array("d", super().token_weights(tid))
            self._weights[tid * k:(tid + 1) * k] = w
        return w

    def counted_contributions(self, data: bytes) -> tuple:
        """fastscore's contributions() of one message, counted by nbtext.features.counting."""
        from ..features.counting import count_documents

        batch = count_documents([data], self.tokenizer.settings)
        tokens = batch.blob.split(b"\x00")
        rows = batch.rows
        cols = rows.indices[rows.indptr[0]:rows.indptr[1]].tolist()  # (sorted: first-seen order)
        counts = rows.data[rows.indptr[0]:rows.indptr[1]].tolist()
        found = self.index.find_keys(batch.keys[cols]) if cols else self._starts[:0]
        tids = found.tolist()
        starts, lengths = self._starts[found].tolist(), self._lengths[found].tolist()
        blob = self._blob
        ids: dict[int, int] = {}
        names: dict[int, str] = {}
        unknown = 0
        for j, n, tid, start, length in zip(cols, counts, tids, starts, lengths):
            token = tokens[j]
            # (a key is a 64-bit hash: a hit is the token only when its bytes are)
            if tid >= 0 and length == len(token) and blob[start:start + length] == token:
                ids[tid], names[tid] = int(n), token.decode("utf-8", "surrogatepass")
            else:
                unknown += int(n)
        return self.contributions_of(ids, names, unknown)

    def counted_sums(self, data: bytes) -> tuple[list[float], int, int, list | None]:
        """(jll, unknown occurrences, known occurrences, the decision layer's d or None) of one
        message, counted and summed by the compiled kernel: fastscore's sums of
        counted_contributions(), bit for bit, and its d (to rounding: numpy's sums)."""
        from ..features.kernel import count_bytes

        compiled, keyindex, mode, parts = self._sums
        blob, keys, counts, columns, _, _ = count_bytes(compiled, self.tokenizer, [data], parts)
        jll = array("d", self._bias)
        J = 0 if self.layer is None else len(self.layer.bias)
        layer = () if self.layer is None else (self._layer_rows, self.layer_row, array("d", [0.0]) * (2 * J))
        unknown, known = compiled.score_counted(keyindex, blob, keys, columns, counts, self._blob, self._starts,
                                                self._lengths, self._weights, mode, jll, self.token_weights, *layer)
        d = None if self.layer is None else self.layer.summed(layer[2][:J], layer[2][J:], known > 0)
        return jll.tolist(), unknown, known, d

    def layer_row(self, tid: int) -> None:
        """Token ``tid``'s r and w (Layer.token_ratios, FastScorer's weights; 0 where it has none)
        into the layer's rows, which the kernel's sums read."""
        J = len(self.layer.bias)
        r, w = self.layer.token_ratios(self._column(tid)), self._layer_weights(tid)
        self._layer_rows[tid * 2 * J:(tid + 1) * 2 * J] = array("d", (r or [0.0] * J) + (w or [0.0] * J))

    def judge(self, data: bytes, explain: int = 0) -> Verdict:
        """The verdict on one message, with the ``explain`` tokens that pushed hardest each way."""
        why = None
        if explain or self._sums is None:
            contributions = self.counted_contributions(data)
            label, prob, unsure, probs = self.verdict(contributions)
            why = self.explained(contributions, explain) if explain else None
        else:
            jll, _, known, d = self.counted_sums(data)
            label, prob, unsure, probs = self.decided(jll, known, d)
        p = probs[self.classes.index(self.positive)]
        return Verdict(label, prob, unsure, label == self.positive and not unsure, p,
                       self.decision.threshold, why)
