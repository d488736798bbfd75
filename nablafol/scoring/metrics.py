"""GQA's evaluation metrics as mergeable metric objects: accuracy and consistency.

Every metric has one life cycle (as in torchmetrics): ``update(questions, predictions)``
any number of times, ``compute()`` for the result, ``reset()`` to start over, and
``merge(other)`` to fold in the state of the same metric updated elsewhere (another
process, another shard). States are plain counts, sets and dicts, so they pickle and
merge exactly: updating two metrics with two disjoint shards and merging them gives the
same result as updating one metric with everything.

The definitions are those of GQA's official evaluation script (``eval.py`` of the GQA
challenge, Hudson & Manning 2019), where it is explicit:

- a prediction is correct iff it equals the gold answer as a string (no lower-casing,
  no stripping: ``"White" != "white"``) -- :func:`exact_match`, the default; nablafol's own
  commands compare with :func:`vocabulary_match` instead, which also accepts two surface
  forms of one vocabulary concept (``skis`` = ``ski``), because a reasoner over a
  vocabulary answers in its forms (see ``docs/design.md``);
- a question is *open* iff ``types["structural"] == "query"``, else *binary* (verify,
  logical, choose, compare -- ``choose`` and ``compare`` answers are not yes/no);
- consistency: see :class:`Consistency`.

Where GQA is silent (this module's decisions):

- a question of the evaluated set with no prediction counts as wrong (for accuracy and
  when looked up by consistency) and is reported in ``missing``;
- questions without ``types`` (or without ``types["structural"]``) are binary iff their
  gold answer is ``"yes"`` or ``"no"``; an explicit ``is_binary`` override (a callable,
  or a mapping questionId -> bool used for the ids it names) takes precedence over both;
- a question without a gold answer cannot be scored: the update is refused;
- an empty group has accuracy / consistency ``None``, never 0.

Pure Python: no torch, so any model's predictions can be scored.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Protocol, Union

from nablafol.errors import NablafolError

__all__ = [
    "ANSWER_GROUPS",
    "Accuracy",
    "AccuracyResult",
    "BinaryOverride",
    "Consistency",
    "ConsistencyResult",
    "ScorableQuestion",
    "ScoringError",
    "AnswerMatch",
    "answer_group",
    "structural_type",
    "exact_match",
    "vocabulary_match",
    "check_predictions",
    "check_questions",
    "prediction_of",
]

#: The groups every metric reports, in table order: all questions, open, binary.
ANSWER_GROUPS: tuple[str, ...] = ("all", "open", "binary")

#: Structural type of questions whose ``types`` do not say (reported under this key).
UNKNOWN_STRUCTURAL = "unknown"

_BINARY_ANSWERS = frozenset({"yes", "no"})

#: How a prediction is compared with a gold answer.
AnswerMatch = Callable[[Union[str, None], str], bool]


def exact_match(prediction: str | None, answer: str) -> bool:
    """GQA's ``eval.py``: the same string."""
    return prediction == answer


def vocabulary_match(prediction: str | None, answer: str) -> bool:
    """The same string, or the same concept of GQA's vocabulary (``dsl.normalize``: ``skis`` = ``ski``).

    >>> vocabulary_match("ski", "skis"), vocabulary_match("tennis", "tenni"), vocabulary_match("red", "blue")
    (True, True, False)
    """
    if prediction is None:
        return False
    if prediction == answer:
        return True
    from nablafol.dsl import normalize  # torch-free; imported here so exact scoring needs nothing else
    return normalize(prediction) == normalize(answer)


class ScoringError(NablafolError, ValueError):
    """Questions, predictions or a split cannot be scored; the message says what and where."""


class ScorableQuestion(Protocol):
    """What scoring needs of a question (GQA field names, any object that has them).

    ``types`` is GQA's ``{"structural": ..., "semantic": ..., "detailed": ...}`` and may
    be empty; ``entailed`` lists the ids of questions whose answers it logically implies.
    """

    @property
    def id(self) -> str: ...

    @property
    def answer(self) -> str | None: ...

    @property
    def entailed(self) -> tuple[str, ...]: ...

    @property
    def types(self) -> Mapping[str, str]: ...


#: Says which questions are binary where ``types`` cannot (see :func:`answer_group`).
BinaryOverride = Union[Callable[[ScorableQuestion], bool], Mapping[str, bool], None]


def structural_type(question: ScorableQuestion) -> str | None:
    """GQA's ``types.structural`` of a question (``query``, ``verify``, ...), or None."""
    types = getattr(question, "types", None) or {}
    structural = types.get("structural") if isinstance(types, Mapping) else None
    return structural if isinstance(structural, str) and structural else None


def answer_group(question: ScorableQuestion, is_binary: BinaryOverride = None) -> str:
    """``"open"`` or ``"binary"``: the override, else GQA's rule, else the answer.

    >>> from types import SimpleNamespace as Q
    >>> answer_group(Q(id="1", answer="tree", entailed=(), types={"structural": "compare"}))
    'binary'
    >>> answer_group(Q(id="2", answer="yes", entailed=(), types={}))
    'binary'
    >>> answer_group(Q(id="2", answer="yes", entailed=(), types={}), {"2": False})
    'open'
    """
    if callable(is_binary):
        return "binary" if is_binary(question) else "open"
    if is_binary is not None and question.id in is_binary:
        return "binary" if is_binary[question.id] else "open"
    structural = structural_type(question)
    if structural is not None:
        return "open" if structural == "query" else "binary"
    return "binary" if question.answer in _BINARY_ANSWERS else "open"


def check_questions(questions: Iterable[ScorableQuestion]) -> list[ScorableQuestion]:
    """The questions as a list, after checking that every one can be scored.

    Refuses (:class:`ScoringError`, one line) duplicate ids, non-string ids or answers,
    a malformed ``entailed``, and questions without a gold answer (how many, one example).
    """
    checked = list(questions)
    seen: set[str] = set()
    unanswered: list[str] = []
    for position, question in enumerate(checked):
        qid = getattr(question, "id", None)
        if not isinstance(qid, str) or not qid:
            raise ScoringError(f"question #{position}: id must be a non-empty string, got {qid!r}")
        if qid in seen:
            raise ScoringError(f"question {qid!r} appears twice in the evaluated set")
        seen.add(qid)
        answer = getattr(question, "answer", None)
        if answer is None:
            unanswered.append(qid)
        elif not isinstance(answer, str):
            raise ScoringError(
                f"question {qid!r}: gold answer must be a string, got {type(answer).__name__}"
            )
        entailed = getattr(question, "entailed", None) or ()
        if isinstance(entailed, str) or not all(isinstance(e, str) for e in entailed):
            raise ScoringError(f"question {qid!r}: entailed must be a sequence of question ids")
    if unanswered:
        raise ScoringError(
            f"{len(unanswered)} question(s) have no gold answer and cannot be scored "
            f"(e.g. {unanswered[0]!r}); score a split that has answers (train/val/testdev)"
        )
    return checked


def prediction_of(predictions: Mapping[str, str], qid: str) -> str | None:
    """The prediction for ``qid`` (``None`` when absent); a non-string one is refused."""
    predicted = predictions.get(qid)
    if predicted is not None and not isinstance(predicted, str):
        raise ScoringError(
            f"prediction for question {qid!r} must be a string, got {type(predicted).__name__}"
        )
    return predicted


def check_predictions(predictions: object) -> Mapping[str, str]:
    """``predictions`` itself, once it is known to be a mapping questionId -> answer."""
    if not isinstance(predictions, Mapping):
        raise ScoringError(
            f"predictions must be a mapping questionId -> answer, got {type(predictions).__name__}"
        )
    return predictions


def _fraction(numerator: int | Fraction, denominator: int) -> float | None:
    return float(Fraction(numerator) / denominator) if denominator else None


@dataclass(frozen=True)
class AccuracyResult:
    """Counts and fractions of :class:`Accuracy`; every fraction is ``None`` on no questions."""

    correct: Mapping[str, int]
    count: Mapping[str, int]
    structural_correct: Mapping[str, int]
    structural_count: Mapping[str, int]
    missing: tuple[str, ...]

    @property
    def accuracy(self) -> dict[str, float | None]:
        """Group (all / open / binary) -> correct / count."""
        return {g: _fraction(self.correct[g], self.count[g]) for g in ANSWER_GROUPS}

    @property
    def error(self) -> dict[str, float | None]:
        """Group -> (count - correct) / count, computed from counts (no ``1 - x`` rounding)."""
        return {g: _fraction(self.count[g] - self.correct[g], self.count[g]) for g in ANSWER_GROUPS}

    @property
    def by_structural(self) -> dict[str, float | None]:
        """Structural type (verify, query, ...; ``unknown`` when untyped) -> accuracy."""
        return {
            t: _fraction(self.structural_correct[t], n) for t, n in sorted(self.structural_count.items())
        }


@dataclass
class Accuracy:
    """Exact-match accuracy, for all / open / binary questions and per structural type.

    ``accuracy[g] = #{q in g : prediction(q) == answer(q)} / #g``; a question with no
    prediction is wrong and listed in ``missing``. Predictions for questions outside the
    updated batch are ignored (each shard may receive the whole predictions mapping).

    >>> from types import SimpleNamespace as Q
    >>> qs = [Q(id="1", answer="red", entailed=(), types={"structural": "query"}),
    ...       Q(id="2", answer="yes", entailed=(), types={"structural": "verify"}),
    ...       Q(id="3", answer="no", entailed=(), types={"structural": "verify"})]
    >>> metric = Accuracy()
    >>> metric.update(qs, {"1": "red", "2": "no"})
    >>> result = metric.compute()
    >>> result.accuracy
    {'all': 0.3333333333333333, 'open': 1.0, 'binary': 0.0}
    >>> result.missing, result.by_structural
    (('3',), {'query': 1.0, 'verify': 0.0})
    """

    is_binary: BinaryOverride = None
    match: AnswerMatch = exact_match
    _correct: dict[str, int] = field(init=False, repr=False)
    _count: dict[str, int] = field(init=False, repr=False)
    _structural_correct: dict[str, int] = field(init=False, repr=False)
    _structural_count: dict[str, int] = field(init=False, repr=False)
    _missing: set[str] = field(init=False, repr=False)
    _seen: set[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget every update."""
        self._correct = dict.fromkeys(ANSWER_GROUPS, 0)
        self._count = dict.fromkeys(ANSWER_GROUPS, 0)
        self._structural_correct = {}
        self._structural_count = {}
        self._missing = set()
        self._seen = set()

    def update(self, questions: Iterable[ScorableQuestion], predictions: Mapping[str, str]) -> None:
        """Score a batch of questions; the batch is checked whole before any state changes."""
        batch = check_questions(questions)
        predictions = check_predictions(predictions)
        already = next((q.id for q in batch if q.id in self._seen), None)
        if already is not None:
            raise ScoringError(f"question {already!r} was already counted by this Accuracy")
        outcomes = []
        for question in batch:
            predicted = prediction_of(predictions, question.id)
            structural = structural_type(question) or UNKNOWN_STRUCTURAL
            outcomes.append((question.id, predicted, self.match(predicted, question.answer),
                             answer_group(question, self.is_binary), structural))
        for qid, predicted, correct, group, structural in outcomes:
            self._seen.add(qid)
            if predicted is None:
                self._missing.add(qid)
            for key in ("all", group):
                self._count[key] += 1
                self._correct[key] += correct
            self._structural_count[structural] = self._structural_count.get(structural, 0) + 1
            self._structural_correct[structural] = self._structural_correct.get(structural, 0) + correct

    def merge(self, other: Accuracy) -> Accuracy:
        """Add ``other``'s counts to this one's (shards must not share questions)."""
        if not isinstance(other, Accuracy):
            raise ScoringError(f"cannot merge {type(other).__name__} into Accuracy")
        shared = self._seen & other._seen
        if shared:
            raise ScoringError(
                f"cannot merge Accuracy states that both counted {len(shared)} question(s) "
                f"(e.g. {min(shared)!r})"
            )
        for key in ANSWER_GROUPS:
            self._correct[key] += other._correct[key]
            self._count[key] += other._count[key]
        for key, n in other._structural_count.items():
            self._structural_count[key] = self._structural_count.get(key, 0) + n
            self._structural_correct[key] = (
                self._structural_correct.get(key, 0) + other._structural_correct[key]
            )
        self._missing |= other._missing
        self._seen |= other._seen
        return self

    def compute(self) -> AccuracyResult:
        """The counts so far (fractions are properties of the result)."""
        return AccuracyResult(
            correct=dict(self._correct),
            count=dict(self._count),
            structural_correct=dict(self._structural_correct),
            structural_count=dict(self._structural_count),
            missing=tuple(sorted(self._missing)),
        )


@dataclass(frozen=True)
class ConsistencyResult:
    """Consistency per group (``None`` where no anchor exists) and the anchor counts."""

    consistency: Mapping[str, float | None]
    anchors: Mapping[str, int]


@dataclass
class Consistency:
    """GQA challenge consistency of answers over logically entailed questions.

    Let ``T`` be the evaluated set (every question passed to ``update``), ``c(q)`` 1 when
    ``q`` is answered correctly else 0, and ``E(q) = [e in entailed(q) : e != q, e in T]``.
    The anchors of group ``g`` are ``A_g = {q in T ∩ g : c(q) = 1 and E(q) nonempty}`` and

        consistency_g = (1 / |A_g|) · Σ_{q in A_g} (1 / |E(q)|) · Σ_{e in E(q)} c(e)

    (``None`` when ``A_g`` is empty). Only the anchor is grouped: an open question's
    entailed questions are usually binary and count wherever they are. ``E(q)`` keeps
    duplicates, as GQA's script does. Entailed ids outside ``T`` are ignored; entailed
    questions in ``T`` without a prediction are wrong. To score a subset (the hard or easy
    set) as a test set of its own, update a fresh metric with that subset only.

    The lookups happen in :meth:`compute`, so shards may hold each other's entailed
    questions; the sum is exact (fractions), so the result is independent of order.

    >>> from types import SimpleNamespace as Q
    >>> qs = [Q(id="1", answer="red", entailed=("2", "3", "99"), types={"structural": "query"}),
    ...       Q(id="2", answer="yes", entailed=("1",), types={"structural": "verify"}),
    ...       Q(id="3", answer="no", entailed=(), types={"structural": "verify"})]
    >>> metric = Consistency()
    >>> metric.update(qs, {"1": "red", "2": "yes", "3": "yes"})
    >>> metric.compute().consistency  # anchor 1: 1/2; anchor 2: 1/1
    {'all': 0.75, 'open': 0.5, 'binary': 1.0}
    """

    is_binary: BinaryOverride = None
    match: AnswerMatch = exact_match
    _correct: dict[str, bool] = field(init=False, repr=False)
    _group: dict[str, str] = field(init=False, repr=False)
    _entailed: dict[str, tuple[str, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget every update."""
        self._correct = {}
        self._group = {}
        self._entailed = {}

    def update(self, questions: Iterable[ScorableQuestion], predictions: Mapping[str, str]) -> None:
        """Record the batch's correctness and entailment links; checked whole first."""
        batch = check_questions(questions)
        predictions = check_predictions(predictions)
        already = next((q.id for q in batch if q.id in self._correct), None)
        if already is not None:
            raise ScoringError(f"question {already!r} was already recorded by this Consistency")
        records = [
            (q.id, self.match(prediction_of(predictions, q.id), q.answer), answer_group(q, self.is_binary),
             tuple(e for e in getattr(q, "entailed", None) or () if e != q.id))
            for q in batch
        ]
        for qid, correct, group, entailed in records:
            self._correct[qid] = correct
            self._group[qid] = group
            if entailed:  # most questions entail nothing; keep the state small
                self._entailed[qid] = entailed

    def merge(self, other: Consistency) -> Consistency:
        """Take the union of both states (shards must not share questions)."""
        if not isinstance(other, Consistency):
            raise ScoringError(f"cannot merge {type(other).__name__} into Consistency")
        shared = self._correct.keys() & other._correct.keys()
        if shared:
            raise ScoringError(
                f"cannot merge Consistency states that both recorded {len(shared)} question(s) "
                f"(e.g. {min(shared)!r})"
            )
        self._correct.update(other._correct)
        self._group.update(other._group)
        self._entailed.update(other._entailed)
        return self

    def compute(self) -> ConsistencyResult:
        """Consistency per group over the anchors of every question recorded so far."""
        totals = dict.fromkeys(ANSWER_GROUPS, Fraction(0))
        anchors = dict.fromkeys(ANSWER_GROUPS, 0)
        for qid, entailed in self._entailed.items():
            if not self._correct[qid]:
                continue
            present = [e for e in entailed if e in self._correct]
            if not present:
                continue
            agreement = Fraction(sum(self._correct[e] for e in present), len(present))
            for key in ("all", self._group[qid]):
                totals[key] += agreement
                anchors[key] += 1
        return ConsistencyResult(
            consistency={g: _fraction(totals[g], anchors[g]) for g in ANSWER_GROUPS},
            anchors=anchors,
        )
