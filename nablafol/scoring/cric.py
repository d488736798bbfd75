"""CRIC's metrics (Gao et al., TPAMI 2023, section 3 "Evaluation Protocol", Tables 2 and 3).

For each question a model gives an answer and one object chosen among the image's
candidate objects. The **answer** is right when it equals the gold answer (exact string).
The **grounding** is right when the chosen object is one of the question's ``target``
objects; a question answered "no" asks for *no* object, so there the grounding is right
when the model points at none. A question counts as **final**-correct only when both are
right (CRIC's site: ``final_score = answer_correctness * grounding_correctness``). Each is
reported for the Verify questions (answer yes or no), the Recognize ones (any other
answer) and all of them, the columns of the paper's Table 2.

The **per-module score** (Table 3) is the IoU of the objects a step found and the step's
ground-truth ``output``: ``|O_pred ∩ O_gt| / |O_pred ∪ O_gt|``, averaged over the steps of
each function (1 when both sets are empty). Only steps the predictions give (``modules``)
count, so a model that reports none is scored on answers and grounding alone.

Decisions (``docs/benchmarks.md``): a question without a prediction is wrong on all three
and adds no module; a "yes" or Recognize question whose ``target`` is empty is grounded
right only by pointing at nothing.

    >>> from nablafol.data.cric import CricQuestion as Q, CricPrediction as P
    >>> prog = ({"function": "Initial", "output": [1, 2]}, {"function": "Find", "text_input": ["fork"], "output": [1]},
    ...         {"function": "Recognition", "text_input": ["color"], "output": [1]})
    >>> qs = [Q("a", "9", None, None, "silver", ("1",), prog), Q("b", "9", None, None, "no", (), prog)]
    >>> metric = CricScore()
    >>> metric.update(qs, {"a": P("silver", "2", ((), ("1", "2"), None)), "b": P("no", None)})
    >>> r = metric.compute()
    >>> r.metrics()
    {'answer': 1.0, 'grounding': 0.5, 'final': 0.5}
    >>> r.module_iou()   # Initial: {} vs {1, 2}; Find: {1, 2} vs {1}
    {'Find': 0.5, 'Initial': 0.0}
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from nablafol.data.cric import RECOGNIZE, VERIFY
from nablafol.dsl import ProgramError
from nablafol.dsl.cric import cric_program_from_json
from nablafol.scoring.ledger import QuestionLedger
from nablafol.scoring.answers import exact_match
from nablafol.scoring.questions import ScoringError

__all__ = ["CricScore", "CricResult", "GROUPS", "iou"]

#: Table 2's column groups.
GROUPS = (VERIFY, RECOGNIZE, "Overall")
_PARTS = ("answer", "grounding", "final")


def iou(predicted: Iterable[str], truth: Iterable[str]) -> Fraction:
    """``|P ∩ G| / |P ∪ G|`` (1 when both are empty).

    >>> iou({"1", "2"}, {"2", "3"}), iou((), ())
    (Fraction(1, 3), Fraction(1, 1))
    """
    p, g = set(predicted), set(truth)
    union = p | g
    return Fraction(len(p & g), len(union)) if union else Fraction(1)


@dataclass(frozen=True)
class CricResult:
    """Counts per group (``Verify``, ``Recognize``, ``Overall``) and module IoU sums."""

    correct: Mapping[str, Mapping[str, int]]  # group -> part -> count
    counts: Mapping[str, int]  # group -> questions
    module_sum: Mapping[str, Fraction]
    module_count: Mapping[str, int]
    missing: tuple[str, ...]

    @property
    def count(self) -> int:
        return self.counts["Overall"]

    def fraction(self, group: str, part: str) -> float | None:
        n = self.counts[group]
        return self.correct[group][part] / n if n else None

    def metrics(self) -> dict[str, float | None]:
        """Overall answer, grounding and final accuracy."""
        return {part: self.fraction("Overall", part) for part in _PARTS}

    def table(self) -> dict[str, dict[str, float | None]]:
        """Group -> part -> accuracy (Table 2's layout)."""
        return {g: {part: self.fraction(g, part) for part in _PARTS} for g in GROUPS}

    def module_iou(self) -> dict[str, float]:
        """Function -> mean IoU over its predicted steps (Table 3), by function name."""
        return {f: float(self.module_sum[f] / n) for f, n in sorted(self.module_count.items())}


@dataclass
class CricScore:
    """Answer, grounding and final accuracy, and per-module IoU (update / compute / merge / reset)."""

    match: Callable[[str | None, str], bool] = exact_match  # how an answer is compared with the gold one
    _correct: dict = field(init=False, repr=False)
    _count: dict = field(init=False, repr=False)
    _module_sum: dict = field(init=False, repr=False)
    _module_count: dict = field(init=False, repr=False)
    _ledger: QuestionLedger = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._correct = {g: dict.fromkeys(_PARTS, 0) for g in GROUPS}
        self._count = dict.fromkeys(GROUPS, 0)
        self._module_sum, self._module_count = {}, {}
        self._ledger = QuestionLedger("CricScore")

    def update(self, questions: Iterable, predictions: Mapping) -> None:
        questions = list(questions)
        self._ledger.check_new(q.id for q in questions)
        batch = []
        for q in questions:  # checked whole before any state changes
            if q.answer is None:
                raise ScoringError(f"question {q.id!r} has no answer (a test split cannot be scored)")
            p = predictions.get(q.id)
            steps = None
            if p is not None and p.modules is not None:
                try:
                    steps = cric_program_from_json(list(q.program)).steps
                except ProgramError as e:
                    raise ScoringError(f"question {q.id!r}: its program cannot be read: {str(e).splitlines()[0]}") from None
                if len(p.modules) != len(steps):
                    raise ScoringError(f"question {q.id!r}: modules has {len(p.modules)} steps, "
                                       f"the program {len(steps)}")
            batch.append((q, p, steps))
        for q, p, steps in batch:
            self._ledger.count(q.id, p is not None)
            if p is None:
                answer_ok = grounding_ok = False
            else:
                answer_ok = self.match(p.answer, q.answer)
                expected = set() if q.answer == "no" else set(q.target)
                grounding_ok = p.grounding in expected if expected else p.grounding is None
            for group in (q.group, "Overall"):
                self._count[group] += 1
                parts = self._correct[group]
                parts["answer"] += answer_ok
                parts["grounding"] += grounding_ok
                parts["final"] += answer_ok and grounding_ok
            for step, found in zip(steps or (), p.modules if steps else ()):
                if found is None or step.output is None:
                    continue
                self._module_sum[step.function] = self._module_sum.get(step.function, Fraction(0)) + iou(found, step.output)
                self._module_count[step.function] = self._module_count.get(step.function, 0) + 1

    def merge(self, other: "CricScore") -> "CricScore":
        if not isinstance(other, CricScore):
            raise ScoringError(f"cannot merge {type(other).__name__} into CricScore")
        self._ledger.merge(other._ledger)
        for g in GROUPS:
            self._count[g] += other._count[g]
            for part in _PARTS:
                self._correct[g][part] += other._correct[g][part]
        for f, n in other._module_count.items():
            self._module_count[f] = self._module_count.get(f, 0) + n
            self._module_sum[f] = self._module_sum.get(f, Fraction(0)) + other._module_sum[f]
        return self

    def compute(self) -> CricResult:
        return CricResult({g: dict(parts) for g, parts in self._correct.items()}, dict(self._count),
                          dict(self._module_sum), dict(self._module_count), self._ledger.missing)
