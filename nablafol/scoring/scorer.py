"""The scorer: every metric of GQA's evaluation, one question at a time, in small memory.

:class:`Scorer` has one life cycle (as in torchmetrics): ``update(question, prediction)`` per
question, ``compute()`` for the result (a :class:`SubsetScore`), ``merge(other)`` to fold in a
scorer updated elsewhere (another process, another shard: states pickle), ``reset()``.
Merging shards gives exactly the scores of one scorer updated with everything, in any order.

Memory per question: a 64-bit key of its id and whether it was answered correctly (9
bytes), plus 8 bytes per entailed link of the correctly answered balanced questions (the only
links consistency reads); everything else is counts (per type, per answer of a group). Ids
are compared by key (:func:`id_key`, the same in every process): GQA's numeric ids exactly;
other ids by a 63-bit hash, where two ids of one set sharing a hash (odds about n²/2⁶⁴: 5e-8
for a million questions) would confuse their consistency lookups.

The definitions are those of GQA's ``eval.py`` (``docs/scoring.md`` gives each with its
source and every place nablafol differs), for the *balanced* questions (``isBalanced``;
others are counted only as entailed questions):

- accuracy: all, open (``structural == "query"``), binary; per structural type, semantic
  type, number of reasoning steps and question length in words;
- consistency: over the balanced questions answered correctly whose entailed questions (other
  than themselves) are in the set, the mean of the accuracy on those entailed questions;
- validity / plausibility: the share of predictions among the question's valid / plausible
  answers (``update(..., choices=...)``);
- grounding: the mean of :func:`~nablafol.scoring.grounding.grounding_score`
  (``update(..., attention=..., scene=...)``);
- distribution: :func:`~nablafol.scoring.distribution.distribution_score` of the per-group
  answer counts.

Where GQA's script fails, nablafol goes on: a question without a prediction is wrong (and
listed), an entailed id outside the set is ignored, a question without choices is neither
valid nor plausible, a question without attention has grounding 0 (each counted).

    >>> from types import SimpleNamespace as Q
    >>> scorer = Scorer()
    >>> scorer.update(Q(id="1", answer="red", entailed=("2", "99"), types={"structural": "query"}), "red")
    >>> scorer.update(Q(id="2", answer="yes", entailed=(), types={"structural": "verify"}), "no")
    >>> scorer.update(Q(id="3", answer="no", entailed=(), types={}, is_balanced=False), "no")
    >>> result = scorer.compute()
    >>> result.accuracy, result.consistency["all"], result.unbalanced
    ({'all': 0.5, 'open': 1.0, 'binary': 0.0}, 0.0, 1)
"""
from __future__ import annotations

import hashlib
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple, Union

import numpy as np

from nablafol.scoring.answers import AnswerMatch, exact_match
from nablafol.scoring.distribution import distribution_score
from nablafol.scoring.grounding import grounding_score
from nablafol.scoring.questions import (
    ANSWER_GROUPS, UNKNOWN, BinaryOverride, ScorableQuestion, ScoringError, answer_group, check_entailed,
    global_group, is_balanced, question_types, steps_number, words_number,
)

__all__ = ["BREAKDOWNS", "Scorer", "SubsetScore", "Tally", "id_key"]

#: The accuracy breakdowns, as GQA's script names them.
BREAKDOWNS = {"structural": "accuracyPerStructuralType", "semantic": "accuracyPerSemanticType",
              "steps": "accuracyPerSteps", "length": "accuracyPerLength"}
_GROUP_CODE = {"open": 1, "binary": 2}
# eval.py's `belongs`: a `common` question's valid (and plausible) answers are these types
_COMMON_ANSWERS = ("color", "material", "shape")

BreakdownKey = Union[str, int]


def id_key(question_id: str) -> int:
    """The 64-bit key of a question id, the same in every process (unlike ``hash``): the number
    itself for a decimal id without leading zeros below 10^18 (GQA's ids: no collision at all),
    else a BLAKE2b hash with the top bit set (so it never equals a number's key).

    >>> id_key("20968244"), id_key("020968244") < 0
    (20968244, True)
    """
    if question_id.isdecimal() and len(question_id) <= 18 and (question_id[0] != "0" or question_id == "0") \
            and question_id.isascii():
        return int(question_id)
    digest = int.from_bytes(hashlib.blake2b(question_id.encode("utf-8"), digest_size=8).digest(), "little")
    return (digest | (1 << 63)) - (1 << 64)  # as a signed 64-bit number: negative


class Tally(NamedTuple):
    """How many questions, and how many of them were answered correctly."""

    count: int
    correct: int

    @property
    def accuracy(self) -> float | None:
        return _fraction(self.correct, self.count)

    @property
    def error(self) -> float | None:
        return _fraction(self.count - self.correct, self.count)


def _fraction(numerator: int | Fraction, denominator: int) -> float | None:
    return float(Fraction(numerator) / denominator) if denominator else None


def breakdown_order(key: BreakdownKey) -> tuple:
    """Numbers first (by value), then names, ``unknown`` last: the order tables print keys in."""
    if isinstance(key, int):
        return (0, key, "")
    return (2 if key == UNKNOWN else 1, 0, key)


@dataclass(frozen=True)
class SubsetScore:
    """Every metric of one question set (fractions in [0, 1]; ``None`` where undefined).

    ``groups`` are the all / open / binary tallies and ``breakdowns`` the tallies per
    structural type, semantic type, steps and length, over the balanced questions;
    ``unbalanced`` counts the questions left out of them (``isBalanced`` false), ``missing``
    lists the questions without a prediction, ``without_choices`` / ``without_attention``
    count balanced questions scored without choices / attention (invalid / grounding 0).
    ``validity``, ``plausibility`` and ``grounding`` are ``None`` when not asked for.
    """

    groups: Mapping[str, Tally]
    breakdowns: Mapping[str, Mapping[BreakdownKey, Tally]]
    consistency: Mapping[str, float | None]
    anchors: Mapping[str, int]
    validity: float | None = None
    plausibility: float | None = None
    grounding: float | None = None
    distribution: float | None = None
    missing: tuple[str, ...] = ()
    unbalanced: int = 0
    without_choices: int = 0
    without_attention: int = 0

    @property
    def accuracy(self) -> dict[str, float | None]:
        """Group (all / open / binary) -> correct / count."""
        return {g: self.groups[g].accuracy for g in ANSWER_GROUPS}

    @property
    def error(self) -> dict[str, float | None]:
        """Group -> (count - correct) / count, computed from counts (no ``1 - x`` rounding)."""
        return {g: self.groups[g].error for g in ANSWER_GROUPS}

    @property
    def count(self) -> dict[str, int]:
        return {g: self.groups[g].count for g in ANSWER_GROUPS}

    @property
    def correct(self) -> dict[str, int]:
        return {g: self.groups[g].correct for g in ANSWER_GROUPS}

    def by(self, breakdown: str) -> dict[BreakdownKey, float | None]:
        """Accuracy per key of a breakdown (``structural``, ``semantic``, ``steps``, ``length``)."""
        tallies = self.breakdowns[breakdown]
        return {key: tallies[key].accuracy for key in sorted(tallies, key=breakdown_order)}

    @property
    def by_structural(self) -> dict[BreakdownKey, float | None]:
        """Structural type (verify, query, ...; ``unknown`` when untyped) -> accuracy."""
        return self.by("structural")

    def to_json(self, rate: str = "accuracy") -> dict:
        """``{S: {rate, "consistency", "count"}}``; ``rate`` is ``accuracy`` or ``error``."""
        rates = getattr(self, rate)
        return {g: {rate: rates[g], "consistency": self.consistency[g], "count": self.count[g]}
                for g in ANSWER_GROUPS}

    def gqa_json(self) -> dict:
        """Every metric of GQA's script under its names (fractions; ``distribution`` as the
        script's value), each breakdown as ``{key: {"accuracy", "count"}}``, and the counts."""
        result = {"accuracy": self.accuracy["all"], "binary": self.accuracy["binary"], "open": self.accuracy["open"],
                  "consistency": self.consistency["all"], "validity": self.validity,
                  "plausibility": self.plausibility, "grounding": self.grounding, "distribution": self.distribution}
        for name, title in BREAKDOWNS.items():
            tallies = self.breakdowns[name]
            result[title] = {str(key): {"accuracy": tallies[key].accuracy, "count": tallies[key].count}
                             for key in sorted(tallies, key=breakdown_order)}
        result["questions"] = {"balanced": self.count["all"], "unbalanced": self.unbalanced,
                               "missing": len(self.missing), "withoutChoices": self.without_choices,
                               "withoutAttention": self.without_attention}
        return result


def _add(table: dict, key, count: int, correct: int) -> None:
    tally = table.get(key)
    if tally is None:
        table[key] = [count, int(correct)]  # a number, not a question's bool
    else:
        tally[0] += count
        tally[1] += correct


class Scorer:
    """GQA's evaluation of one question set, updated one question at a time (see the module doc).

    ``match`` compares answers (:data:`~nablafol.scoring.answers.exact_match`, GQA's, by
    default); ``is_binary`` overrides the open / binary rule; ``validity`` / ``grounding``
    say that choices / attentions are scored (then a question given none counts as invalid /
    grounding 0, and the scores are reported; otherwise they are ``None``).
    """

    def __init__(self, match: AnswerMatch = exact_match, *, is_binary: BinaryOverride = None,
                 validity: bool = False, grounding: bool = False):
        if not isinstance(match, AnswerMatch):
            raise ScoringError(f"match must be an AnswerMatch (exact_match, vocabulary_match), got {match!r}")
        self.match, self.is_binary = match, is_binary
        self.with_validity, self.with_grounding = validity, grounding
        self.reset()

    def reset(self) -> None:
        """Forget every update."""
        self._keys = array("q")  # id_key of every question updated, in order
        self._correct = bytearray()  # 1 where that question was answered correctly
        self._anchor_group = bytearray()  # per balanced correct question with entailed ids: its group code
        self._link_ends = array("q")  # per such anchor: end of its links in _links
        self._links = array("q")  # id_keys of the anchors' entailed ids, concatenated
        # (group, structural, semantic, steps, length) -> [count, correct] of the balanced questions
        # (one count per question; the groups' and breakdowns' tallies are its sums)
        self._tallies: dict[tuple, list[int]] = {}
        self._missing: list[str] = []
        self._unbalanced = 0
        self._choices = [0, 0, 0]  # questions with choices, valid predictions, plausible predictions
        self._attended = 0  # questions with attention
        self._grounding = Fraction(0)  # their grounding scores' sum (exact: merges in any order agree)
        self._gold: dict[str, dict[str, int]] = {}  # global group -> answer form -> questions
        self._predicted: dict[str, dict[str, int]] = {}

    def __len__(self) -> int:
        """How many questions were updated (balanced or not)."""
        return len(self._keys)

    def update(self, question: ScorableQuestion, prediction: str | None, *, choices=None, attention=None,
               scene=None) -> None:
        """Score one question (which must have a gold answer) against its prediction (None: none).

        ``choices`` is the question's :class:`~nablafol.data.choices.Choices` (or any object with
        ``valid`` and ``plausible``); ``attention`` the model's attention entry and ``scene``
        its image's scene graph (for the gold regions). The question is checked whole before
        any state changes.
        """
        update_together((self,), question, prediction, choices, attention, scene)

    def merge(self, other: Scorer) -> Scorer:
        """Add ``other``'s state to this one's (the two must not share questions); returns self."""
        if not isinstance(other, Scorer):
            raise ScoringError(f"cannot merge {type(other).__name__} into a Scorer")
        if (other.match.name, other.with_validity, other.with_grounding) != (
                self.match.name, self.with_validity, self.with_grounding):
            raise ScoringError("cannot merge Scorers that compare answers differently or score other metrics")
        self._link_ends.extend(end + len(self._links) for end in other._link_ends)
        self._links.extend(other._links)
        self._anchor_group.extend(other._anchor_group)
        self._keys.extend(other._keys)
        self._correct.extend(other._correct)
        for key, (count, correct) in other._tallies.items():
            _add(self._tallies, key, count, correct)
        self._missing += other._missing
        self._unbalanced += other._unbalanced
        self._choices = [a + b for a, b in zip(self._choices, other._choices)]
        self._attended += other._attended
        self._grounding += other._grounding
        for mine, theirs in ((self._gold, other._gold), (self._predicted, other._predicted)):
            for group, answers in theirs.items():
                for answer, n in answers.items():
                    _count(mine, group, answer, n)
        return self

    def compute(self) -> SubsetScore:
        """Every metric over the questions updated so far (the state is kept)."""
        keys = np.frombuffer(self._keys, dtype=np.int64) if len(self._keys) else np.zeros(0, np.int64)
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        repeated = int(np.count_nonzero(sorted_keys[1:] == sorted_keys[:-1]))
        if repeated:
            raise ScoringError(f"{repeated} question id(s) were scored twice (each question must be updated once)")
        correct = np.frombuffer(bytes(self._correct), dtype=np.uint8)[order].astype(np.int64)
        consistency, anchors = self._consistency(sorted_keys, correct)
        groups, breakdowns = self._sums()
        balanced = groups["all"][0]
        seen, valid, plausible = self._choices
        return SubsetScore(
            groups={g: Tally(*groups[g]) for g in ANSWER_GROUPS},
            breakdowns={name: {key: Tally(*tally) for key, tally in table.items()}
                        for name, table in breakdowns.items()},
            consistency=consistency, anchors=anchors,
            validity=_fraction(valid, balanced) if self.with_validity else None,
            plausibility=_fraction(plausible, balanced) if self.with_validity else None,
            grounding=_fraction(self._grounding, balanced) if self.with_grounding else None,
            distribution=distribution_score(self._gold, self._predicted),
            missing=tuple(sorted(self._missing)), unbalanced=self._unbalanced,
            without_choices=balanced - seen if self.with_validity else 0,
            without_attention=balanced - self._attended if self.with_grounding else 0,
        )

    def _sums(self) -> tuple[dict, dict]:
        """The tallies per group (all, open, binary) and per key of each breakdown, the keys in
        the order the questions first had them (``unknown`` for a question without one)."""
        groups: dict[str, list[int]] = {g: [0, 0] for g in ANSWER_GROUPS}
        breakdowns: dict[str, dict] = {name: {} for name in BREAKDOWNS}
        tables = tuple(breakdowns.values())
        for (group, *keys), (count, correct) in self._tallies.items():
            for tally in (groups["all"], groups[group]):
                tally[0] += count
                tally[1] += correct
            for table, key in zip(tables, keys):
                _add(table, UNKNOWN if key is None else key, count, correct)
        return groups, breakdowns

    def _consistency(self, sorted_keys: np.ndarray, correct: np.ndarray) -> tuple[dict, dict]:
        """Per group: the mean over anchors of the share of their entailed questions (those in
        the set) answered correctly; anchors with no entailed question in the set are dropped."""
        links = np.frombuffer(self._links, dtype=np.int64) if len(self._links) else np.zeros(0, np.int64)
        ends = np.frombuffer(self._link_ends, dtype=np.int64) if len(self._link_ends) else np.zeros(0, np.int64)
        if len(sorted_keys):
            at = np.minimum(np.searchsorted(sorted_keys, links), len(sorted_keys) - 1)
            present = sorted_keys[at] == links
            agree = np.where(present, correct[at], 0)
        else:
            present, agree = np.zeros(len(links), bool), np.zeros(len(links), np.int64)
        starts = np.concatenate(([0], ends[:-1])) if len(ends) else ends
        # per anchor: how many of its entailed questions are in the set, and how many are right
        n_present = np.add.reduceat(present.astype(np.int64), starts) if len(ends) else ends
        n_agree = np.add.reduceat(agree, starts) if len(ends) else ends
        groups = np.frombuffer(bytes(self._anchor_group), dtype=np.uint8)
        consistency, anchors = {}, {}
        for name in ANSWER_GROUPS:
            chosen = n_present > 0
            if name != "all":
                chosen &= groups == _GROUP_CODE[name]
            anchors[name] = int(chosen.sum())
            # exact: sum the numerators of each denominator, then add the few distinct fractions
            total = Fraction(0)
            for denominator in np.unique(n_present[chosen]).tolist():
                total += Fraction(int(n_agree[chosen & (n_present == denominator)].sum()), denominator)
            consistency[name] = _fraction(total, anchors[name])
        return consistency, anchors


def update_together(scorers: tuple[Scorer, ...], question: ScorableQuestion, prediction: str | None,
                    choices=None, attention=None, scene=None) -> None:
    """:meth:`Scorer.update` of every one of ``scorers``, made alike (the same match, override and
    metrics), the question read once: the whole set's scorer and its subset's (a split)."""
    first = scorers[0]
    answer = question.answer
    if not isinstance(answer, str):
        raise ScoringError(f"question {question.id!r}: gold answer must be a string, got {answer!r}")
    if prediction is not None and not isinstance(prediction, str):
        raise ScoringError(f"prediction for question {question.id!r} must be a string, "
                           f"got {type(prediction).__name__}")
    if choices is not None and not first.with_validity:
        raise ScoringError("choices given to a Scorer made without validity=True")
    if attention is not None and not first.with_grounding:
        raise ScoringError("attention given to a Scorer made without grounding=True")
    entailed = check_entailed(question)
    match = first.match
    form = match.kept_form
    answer_form = form(answer)
    predicted_form = None if prediction is None else form(prediction)
    correct = prediction is not None and predicted_form == answer_form  # AnswerMatch's rule, forms kept
    balanced = is_balanced(question)
    grounding = None
    if balanced and attention is not None:
        if scene is None:
            raise ScoringError(f"question {question.id!r}: grounding needs the scene graph of its image")
        grounding = grounding_score(question, scene, attention)

    qid = question.id
    key = id_key(qid)
    if not balanced:
        for scorer in scorers:
            scorer._keys.append(key)
            scorer._correct.append(correct)
            if prediction is None:
                scorer._missing.append(qid)
            scorer._unbalanced += 1
        return
    structural, semantic, detailed = question_types(question)
    group = answer_group(question, first.is_binary, structural=structural)
    tally = (group, structural, semantic, steps_number(question), words_number(question))
    links = [id_key(e) for e in entailed if e != qid] if correct and entailed else None
    if choices is not None:
        common = "Common" in (detailed or "")
        valid = match.member(prediction, _COMMON_ANSWERS if common else choices.valid)
        plausible = match.member(prediction, _COMMON_ANSWERS if common else choices.plausible)
    distribution_group = global_group(question)
    for scorer in scorers:
        scorer._keys.append(key)
        scorer._correct.append(correct)
        if prediction is None:
            scorer._missing.append(qid)
        _add(scorer._tallies, tally, 1, correct)
        if links:
            scorer._links.extend(links)
            scorer._link_ends.append(len(scorer._links))
            scorer._anchor_group.append(_GROUP_CODE[group])
        if choices is not None:
            scorer._choices[0] += 1
            scorer._choices[1] += valid
            scorer._choices[2] += plausible
        if grounding is not None:
            scorer._attended += 1
            scorer._grounding += Fraction(grounding)
        if distribution_group is not None:
            _count(scorer._gold, distribution_group, answer_form)
            if prediction is not None:  # no prediction matches no gold answer: it adds to no count read
                _count(scorer._predicted, distribution_group, predicted_form)


def _count(table: dict[str, dict[str, int]], group: str, answer: str, n: int = 1) -> None:
    answers = table.setdefault(group, {})
    answers[answer] = answers.get(answer, 0) + n
