"""From posteriors to a verdict: argmax, or a threshold and an unsure band for two classes.

Pure Python (no numpy): the one-message classify path uses it. How train fits a decision is
nbtext.batch.train's apply_decisions (with nbtext.nb.calibrate).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import SettingError, literal
from ..record import Record
from ..settings import check_unsure, number


# The calibration map's parameters, from a model file a stranger's: a temperature of 5e-324
# divided every score to infinity (posteriors NaN), a soft of 5e-324 made log-posteriors
# -Infinity. Past MIN_SCALE the map stays finite for any score a model can give (at most
# 1e100 in size: store.codec.MAX_SCORE): z = jll / scale and -g / soft stay below 1e200 and
# 1e260, and below MAX_SCALE the scale (times a length ** 2 under 1e16) stays below float64's
# largest. Fitting reaches neither bound (nbtext.nb.calibrate keeps its search inside them).
MIN_SCALE, MAX_SCALE = 1e-30, 1e250


class Decision(Record, frozen=False):
    """How posteriors become a verdict (two-class models use positive/threshold/unsure)."""

    positive: str | None = None     # the class whose probability the threshold applies to
    threshold: float = 0.5          # positive when P(positive) >= threshold
    unsure: tuple[float, float] | None = None  # P(positive) in [low, high) is "unsure"
    # The calibration map (fitted by nbtext.nb.calibrate; the defaults are no map at all):
    temperature: float = 1.0        # jll divided by temperature * length ** length_power,
    length_power: float = 0.0       # length: the document's known tokens (occurrences)
    soft: float = 0.0               # each class's gap below the best, g -> -soft asinh(-g / soft)
    floor: float = 0.0              # posteriors mixed with the uniform: (1 - floor) p + floor / K

    def __post_init__(self):
        # (a stored decision is a stranger's too: a temperature of -3 inverts every verdict)
        if self.positive is not None and not isinstance(self.positive, str):
            raise SettingError("positive", self.positive, "must be a class name")
        number("threshold", self.threshold, 0, 1)
        number("temperature", self.temperature, MIN_SCALE, MAX_SCALE)
        number("length_power", self.length_power, 0, 2)
        for name, hi in (("soft", MAX_SCALE), ("floor", 0.5)):
            number(name, getattr(self, name), MIN_SCALE, hi, zero=True)  # (0: that step of the map is off)
        if self.unsure is not None:
            check_unsure(self.unsure)

    def check_classes(self, classes: Sequence[str]) -> None:
        if self.positive is not None and self.positive not in classes:
            raise SettingError("positive", None, literal(f"{self.positive!r} is not one of the classes "
                                                         f"({', '.join(classes)})"))

    def choose(self, classes: Sequence[str], positive: str | None = None, threshold: float | None = None,
               unsure: tuple | None = None, max_fpr: float | None = None) -> None:
        """Set the positive class, the threshold and the unsure band (train's options, or a
        scoring run's overrides of the stored ones), each checked; a threshold, an unsure band
        or a max_fpr needs two classes and a positive one."""
        if positive is not None:
            Decision(positive=positive).check_classes(classes)
            self.positive = positive
        if (threshold is not None or unsure or max_fpr is not None) and (len(classes) != 2 or self.positive is None):
            raise SettingError("threshold", None, "{threshold}, {unsure} and {max_fpr} need two classes and a "
                               "positive one ({positive}; the classes are " + literal(", ".join(classes)) + ")")
        if threshold is not None:
            number("threshold", threshold, 0, 1)
            self.threshold = threshold
        if unsure:
            check_unsure(unsure)
            self.unsure = tuple(unsure)

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["unsure"] = list(self.unsure) if self.unsure else None
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Decision":
        d = dict(d)
        if d.get("unsure"):
            d["unsure"] = tuple(d["unsure"])
        return super().from_dict(d)


def calibrated(decision: Decision, jll: Sequence[float], length: float) -> list[float]:
    """One document's posteriors from its joint log-likelihoods and length (its known tokens'
    occurrences), through the decision's calibration map. Pure Python for classify's sake
    (importing numpy takes longer than a whole classify); nbtext.nb.calibrate.calibrated_log
    is the same map over many documents with numpy, and tests hold the two to 1e-9.
    A document with no known tokens has no evidence to temper: its jll is the bias alone (the
    prior), taken as it is (scale 1), so an empty message gets the prior, not the prior's
    log-odds divided by a temperature fitted to how words over-count."""
    scale = decision.temperature * max(length, 1.0) ** decision.length_power if length > 0 else 1.0
    z = [x / scale for x in jll]
    top = max(z)
    c = decision.soft
    g = [-c * math.asinh((top - v) / c) for v in z] if c else [v - top for v in z]
    exps = [math.exp(v) for v in g]
    total = sum(exps)
    return [(1.0 - decision.floor) * e / total + decision.floor / len(z) for e in exps]


def positive_of(classes: Sequence[str], positive: str | None) -> str | None:
    """The class a two-class model's threshold, exit status and ROC are about: the decision's
    positive class, else the second class in sorted order; none with more classes."""
    if len(classes) != 2:
        return None
    return positive if positive in classes else classes[1]


def default_positive(classes: Sequence[str]) -> str | None:
    """The class a threshold is about: "spam" when there is one, else none."""
    return "spam" if "spam" in classes else None


def decide(classes: Sequence[str], decision: Decision, probs: Sequence[float]) -> tuple[str, bool]:
    """(label, unsure) for one document's posteriors. Pure Python: classify uses it too."""
    best = max(range(len(classes)), key=probs.__getitem__)
    pos = decision.positive
    if len(classes) != 2 or pos not in classes:
        return classes[best], False
    i = classes.index(pos)
    p = probs[i]
    label = pos if p >= decision.threshold else classes[1 - i]
    unsure = bool(decision.unsure and decision.unsure[0] <= p < decision.unsure[1])
    return label, unsure
