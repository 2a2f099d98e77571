"""From posteriors to a verdict: argmax, or a threshold and an unsure band for two classes.

Pure Python (no numpy): the one-message classify path uses it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence


@dataclass
class Decision:
    """How posteriors become a verdict (two-class models use positive/threshold/unsure)."""

    positive: str | None = None     # the class whose probability the threshold applies to
    threshold: float = 0.5          # positive when P(positive) >= threshold
    unsure: tuple[float, float] | None = None  # P(positive) in [low, high) is "unsure"
    temperature: float = 1.0        # posteriors = softmax(jll / temperature)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["unsure"] = list(self.unsure) if self.unsure else None
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Decision":
        d = dict(d)
        if d.get("unsure"):
            d["unsure"] = tuple(d["unsure"])
        return cls(**d)


def default_positive(classes: Sequence[str]) -> str | None:
    """The class a threshold is about: "spam" when there is one, else none."""
    return "spam" if "spam" in classes else None


def decide(classes: Sequence[str], decision: Decision, probs: Sequence[float]) -> tuple[str, bool]:
    """(label, unsure) for one document's posteriors. Pure Python: classify uses it too."""
    best = max(range(len(classes)), key=lambda i: probs[i])
    pos = decision.positive
    if len(classes) != 2 or pos not in classes:
        return classes[best], False
    i = classes.index(pos)
    p = probs[i]
    label = pos if p >= decision.threshold else classes[1 - i]
    unsure = bool(decision.unsure and decision.unsure[0] <= p < decision.unsure[1])
    return label, unsure
