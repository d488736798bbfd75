"""A-OKVQA's metrics, as its official script computes them: multiple-choice accuracy and
direct-answer (VQA) accuracy.

``evaluation/eval_predictions.py`` of https://github.com/allenai/aokvqa (commit 42e8c44,
"Correction", the one the README points to):

- **Multiple choice**: over every question of the annotation file, 1 when the predicted
  string equals ``choices[correct_choice_idx]``, else 0; computed only when the predictions
  give at least one ``multiple_choice`` answer.
- **Direct answer**: over the questions with ``difficult_direct_answer`` false only,
  ``min(1, #{annotators whose answer equals the prediction} / 3)`` over the ten
  ``direct_answers``; computed only when the predictions give a ``direct_answer``.

The paper cites "the standard VQA evaluation", whose script averages that score over the
ten subsets of nine annotators and normalizes answers (punctuation, articles, numbers).
The official A-OKVQA script does neither: exact string equality over all ten answers.
nablafol follows the official script (``docs/benchmarks.md``). A question with no answer
from the model scores 0. Sums are exact (fractions), so shards merge exactly.

    >>> from nablafol.data.aokvqa import AokvqaQuestion as Q, AokvqaPrediction as P
    >>> qs = [Q("a", "1", "?", ("cab", "bus"), 0, ("cab",) * 2 + ("taxi",) * 8, False, ()),
    ...       Q("b", "2", "?", ("red", "blue"), 1, ("blue",) * 10, True, ())]
    >>> metric = AokvqaScore()
    >>> metric.update(qs, {"a": P("cab", "cab"), "b": P("red", "blue")})
    >>> r = metric.compute()
    >>> r.multiple_choice, r.direct_answer, r.direct_answer_count   # b is difficult: not in DA
    (0.5, 0.6666666666666666, 1)
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from nablafol.scoring.ledger import QuestionLedger
from nablafol.scoring.questions import ScoringError

__all__ = ["AokvqaScore", "AokvqaResult", "direct_answer_score"]


def direct_answer_score(prediction: str | None, direct_answers: Iterable[str]) -> Fraction:
    """``min(1, #matches / 3)``: exact matches among the annotators' answers (official script).

    >>> direct_answer_score("taxi", ["cab", "taxi", "taxi"] + ["ride"] * 7), direct_answer_score("taxi", ["taxi"] * 4)
    (Fraction(2, 3), Fraction(1, 1))
    """
    if prediction is None:
        return Fraction(0)
    return min(Fraction(1), Fraction(sum(prediction == a for a in direct_answers), 3))


@dataclass(frozen=True)
class AokvqaResult:
    """Counts and exact sums; fractions are None where nothing was scored."""

    mc_correct: int
    mc_count: int
    da_total: Fraction
    direct_answer_count: int
    count: int
    missing: tuple[str, ...]

    @property
    def multiple_choice(self) -> float | None:
        return float(Fraction(self.mc_correct, self.mc_count)) if self.mc_count else None

    @property
    def direct_answer(self) -> float | None:
        return float(self.da_total / self.direct_answer_count) if self.direct_answer_count else None

    def metrics(self) -> dict[str, float | None]:
        return {"multiple_choice": self.multiple_choice, "direct_answer": self.direct_answer}


@dataclass
class AokvqaScore:
    """MC and DA accuracy (update / compute / merge / reset). ``multiple_choice`` and
    ``direct_answer`` say which settings are scored (the scoring command turns off a setting
    the predictions file never answers, as the official script does)."""

    multiple_choice: bool = True
    direct_answer: bool = True
    _mc: list = field(init=False, repr=False)
    _da: list = field(init=False, repr=False)
    _ledger: QuestionLedger = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._mc, self._da = [0, 0], [Fraction(0), 0]
        self._ledger = QuestionLedger("AokvqaScore")

    def update(self, questions: Iterable, predictions: Mapping) -> None:
        batch = list(questions)
        self._ledger.check_new(q.id for q in batch)
        for q in batch:  # checked whole before any state changes
            if self.multiple_choice and q.correct_choice_idx is None:
                raise ScoringError(f"question {q.id!r} has no correct_choice_idx (a test split cannot be scored)")
            if self.direct_answer and not q.difficult_direct_answer and q.direct_answers is None:
                raise ScoringError(f"question {q.id!r} has no direct_answers (a test split cannot be scored)")
        for q in batch:
            p = predictions.get(q.id)
            self._ledger.count(q.id, p is not None)
            if self.multiple_choice:
                self._mc[0] += p is not None and p.multiple_choice == q.correct_choice
                self._mc[1] += 1
            if self.direct_answer and not q.difficult_direct_answer:
                self._da[0] += direct_answer_score(None if p is None else p.direct_answer, q.direct_answers)
                self._da[1] += 1

    def merge(self, other: "AokvqaScore") -> "AokvqaScore":
        if not isinstance(other, AokvqaScore):
            raise ScoringError(f"cannot merge {type(other).__name__} into AokvqaScore")
        self._ledger.merge(other._ledger)
        self._mc = [a + b for a, b in zip(self._mc, other._mc)]
        self._da = [a + b for a, b in zip(self._da, other._da)]
        return self

    def compute(self) -> AokvqaResult:
        return AokvqaResult(self._mc[0], self._mc[1], self._da[0], self._da[1], len(self._ledger.seen),
                            self._ledger.missing)
