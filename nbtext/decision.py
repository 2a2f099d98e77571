"""From posteriors to a verdict: argmax, or a threshold and an unsure band for two classes.

Pure Python (no numpy): the one-message classify path uses it.
"""
from __future__ import annotations

from collections.abc import Sequence

from .errors import NbtextError
from .record import Record


class Decision(Record, frozen=False):
    """How posteriors become a verdict (two-class models use positive/threshold/unsure)."""

    positive: str | None = None     # the class whose probability the threshold applies to
    threshold: float = 0.5          # positive when P(positive) >= threshold
    unsure: tuple[float, float] | None = None  # P(positive) in [low, high) is "unsure"
    temperature: float = 1.0        # posteriors = softmax(jll / temperature)

    def to_dict(self) -> dict:
        d = super().to_dict()
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


class DecisionOptions(Record):
    """How train turns posteriors into verdicts; fitted on internal folds where asked."""

    calibrate: bool = True               # temperature scaling on out-of-fold predictions
    threshold: float | None = None       # P(positive) at or above which a document is positive
    unsure: tuple | None = None          # (low, high): P(positive) in [low, high) is unsure
    max_fpr: float | None = None         # choose the threshold keeping negatives' FPR under this
    positive: str | None = None          # default: "spam" when that class exists
    folds: int = 5
    seed: int = 0

    def __post_init__(self):
        if self.threshold is not None and not (0 <= self.threshold <= 1):
            raise NbtextError(f"--threshold must be in [0, 1], got {self.threshold}")
        if self.unsure is not None and not (0 <= self.unsure[0] <= self.unsure[1] <= 1):
            raise NbtextError(f"--unsure needs 0 <= LOW <= HIGH <= 1, got {self.unsure[0]},{self.unsure[1]}")
        if self.threshold is not None and self.max_fpr is not None:
            raise NbtextError("give --threshold or --max-fpr, not both")
        if self.folds < 2:
            raise NbtextError(f"--folds must be at least 2, got {self.folds}")

    @property
    def needs_matrix(self) -> bool:
        return self.calibrate or self.max_fpr is not None


def override(decision: Decision, classes: Sequence[str], threshold: float | None,
             unsure: tuple[float, float] | None, positive: str | None = None) -> None:
    """Command-line --positive/--threshold/--unsure on top of a model's stored decision."""
    DecisionOptions(calibrate=False, threshold=threshold, unsure=unsure)  # validates the values
    if positive is not None:
        if positive not in classes:
            raise NbtextError(f"--positive {positive!r} is not one of the model's classes "
                              f"({', '.join(classes)})")
        decision.positive = positive
    if (threshold is not None or unsure) and (len(classes) != 2 or decision.positive is None):
        raise NbtextError("--threshold and --unsure need a two-class model with a positive class")
    if threshold is not None:
        decision.threshold = threshold
    if unsure:
        decision.unsure = unsure
