"""VCR's metrics (Zellers et al., CVPR 2019, section 2): Q→A, QA→R and Q→AR accuracy.

A model picks the answer choice of highest probability (Q→A right when it is
``answer_label``); given the *right* answer it picks a rationale (QA→R right when it is
``rationale_label``); Q→AR counts a question right only when both are, i.e. the model
answers right and then picks the right rationale for its answer. From the leaderboard's
probabilities (``nablafol.data.vcr``): the choice is the argmax (the first of equal
probabilities, as ``numpy.argmax`` in r2c's ``eval_q2ar.py``), and the rationale is read
from the columns conditioned on the answer in question. QA→R and Q→AR need rationale
probabilities: predictions without them (GD-VCR's, answers only) are scored on Q→A alone.
A question with no prediction is wrong on every task.

    >>> from nablafol.data.vcr import VcrItem, VcrPrediction as P
    >>> items = [VcrItem("a", ("person",), ("?",), (("x",),) * 4, 1, (("r",),) * 4, 2),
    ...          VcrItem("b", ("person",), ("?",), (("x",),) * 4, 0, (("r",),) * 4, 0)]
    >>> flat = (0.25,) * 4
    >>> right_r = ((0.1, 0.1, 0.7, 0.1),) * 4
    >>> metric = VcrScore()
    >>> metric.update(items, {"a": P((0.1, 0.6, 0.2, 0.1), right_r), "b": P((0.1, 0.6, 0.2, 0.1), (flat,) * 4)})
    >>> metric.compute().metrics()   # a: all right; b: answer wrong, rationale (first of a tie) right
    {'q2a': 0.5, 'qa2r': 1.0, 'q2ar': 0.5}
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nablafol.scoring.ledger import QuestionLedger
from nablafol.scoring.questions import ScoringError

__all__ = ["VcrScore", "VcrResult", "argmax"]


def argmax(values: Sequence[float]) -> int:
    """The index of the largest value, the first of equal ones."""
    return max(range(len(values)), key=values.__getitem__)


@dataclass(frozen=True)
class VcrResult:
    q2a_correct: int
    qa2r_correct: int
    q2ar_correct: int
    count: int
    rationales: bool  # whether QA→R and Q→AR were scored
    missing: tuple[str, ...]

    def _fraction(self, n: int) -> float | None:
        return n / self.count if self.count else None

    def metrics(self) -> dict[str, float | None]:
        return {"q2a": self._fraction(self.q2a_correct),
                "qa2r": self._fraction(self.qa2r_correct) if self.rationales else None,
                "q2ar": self._fraction(self.q2ar_correct) if self.rationales else None}


@dataclass
class VcrScore:
    """Q→A, QA→R, Q→AR accuracy (update / compute / merge / reset). ``rationales``: score
    QA→R and Q→AR (the scoring command turns it off for answer-only predictions)."""

    rationales: bool = True
    _counts: list = field(init=False, repr=False)
    _ledger: QuestionLedger = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._counts = [0, 0, 0]
        self._ledger = QuestionLedger("VcrScore")

    def update(self, items: Iterable, predictions: Mapping) -> None:
        batch = list(items)
        self._ledger.check_new(item.annot_id for item in batch)
        for item in batch:
            if item.answer_label is None or (self.rationales and item.rationale_label is None):
                raise ScoringError(f"question {item.annot_id!r} has no {'answer' if item.answer_label is None else 'rationale'}"
                                   f"_label (a test split cannot be scored)")
            p = predictions.get(item.annot_id)
            if p is not None and len(p.answers) != len(item.answer_choices):
                raise ScoringError(f"question {item.annot_id!r}: {len(p.answers)} answer probabilities for "
                                   f"{len(item.answer_choices)} choices")
            if self.rationales and p is not None and p.rationales is None:
                raise ScoringError(f"question {item.annot_id!r}: the prediction has no rationale probabilities")
        for item in batch:
            p = predictions.get(item.annot_id)
            self._ledger.count(item.annot_id, p is not None)
            if p is None:
                continue
            answer = argmax(p.answers)
            q2a = answer == item.answer_label
            self._counts[0] += q2a
            if self.rationales:
                qa2r = argmax(p.rationales[item.answer_label]) == item.rationale_label
                self._counts[1] += qa2r
                self._counts[2] += q2a and qa2r  # right answer: the rationale given it is the one just judged

    def merge(self, other: "VcrScore") -> "VcrScore":
        if not isinstance(other, VcrScore):
            raise ScoringError(f"cannot merge {type(other).__name__} into VcrScore")
        self._ledger.merge(other._ledger)
        self._counts = [a + b for a, b in zip(self._counts, other._counts)]
        return self

    def compute(self) -> VcrResult:
        return VcrResult(*self._counts, len(self._ledger.seen), self.rationales, self._ledger.missing)
