"""Accuracy and consistency of a run scored one question at a time, in memory that stays small.

:func:`nablafol.scoring.score` holds every question (ids, answers, entailed lists) at once; a
streaming ``nablafol eval`` over a million questions must not. :class:`RunningScore` keeps per
question only a 64-bit hash of its id and whether it was answered correctly (9 bytes), plus
the entailed links of correct anchors (8 bytes each: the only ones consistency reads), and
gives the same :class:`~nablafol.scoring.Scores` as ``score`` on the same questions.

Ids are compared by hash (Python's ``hash`` of the string: stable within one process, which
is where a RunningScore lives). Two different ids of one set sharing a 64-bit hash (odds
about n²/2⁶⁵, 3e-8 for a million questions) would make their consistency lookups confuse them.

    >>> from types import SimpleNamespace as Q
    >>> running = RunningScore()
    >>> running.add(Q(id="1", answer="red", entailed=("2", "99"), types={"structural": "query"}), "red")
    >>> running.add(Q(id="2", answer="yes", entailed=(), types={"structural": "verify"}), "no")
    >>> running.scores().to_json()["overall"]["all"]
    {'accuracy': 0.5, 'consistency': 0.0, 'count': 2}
"""
from __future__ import annotations

from array import array
from fractions import Fraction

import numpy as np

from nablafol.scoring.metrics import (ANSWER_GROUPS, UNKNOWN_STRUCTURAL, AccuracyResult, AnswerMatch, ConsistencyResult,
                              ScoringError, answer_group, exact_match, structural_type)
from nablafol.scoring.scores import Scores, SubsetScore

__all__ = ["RunningScore"]

_GROUP_CODE = {"open": 1, "binary": 2}


class RunningScore:
    """Add ``(question, prediction or None)`` one by one; :meth:`scores` at the end."""

    def __init__(self, match: AnswerMatch = exact_match):
        self.match = match
        self._keys = array("q")  # hash of every scored question's id, in order
        self._correct = bytearray()  # 1 where that question was answered correctly
        self._anchor_group = bytearray()  # per correct question with entailed ids: its group code
        self._link_ends = array("q")  # per such anchor: end of its links in _links
        self._links = array("q")  # hashes of the anchors' entailed ids, concatenated
        self._count = dict.fromkeys(ANSWER_GROUPS, 0)
        self._right = dict.fromkeys(ANSWER_GROUPS, 0)
        self._structural_count: dict[str, int] = {}
        self._structural_right: dict[str, int] = {}
        self._missing: list[str] = []

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, question, prediction: str | None) -> None:
        """Score one question (which must have a gold answer) against its prediction."""
        answer = question.answer
        if not isinstance(answer, str):
            raise ScoringError(f"question {question.id!r}: gold answer must be a string, got {answer!r}")
        correct = bool(self.match(prediction, answer))
        group = answer_group(question)
        structural = structural_type(question) or UNKNOWN_STRUCTURAL
        self._keys.append(hash(question.id))
        self._correct.append(correct)
        for key in ("all", group):
            self._count[key] += 1
            self._right[key] += correct
        self._structural_count[structural] = self._structural_count.get(structural, 0) + 1
        self._structural_right[structural] = self._structural_right.get(structural, 0) + correct
        if prediction is None:
            self._missing.append(question.id)
        if correct:
            entailed = [hash(e) for e in question.entailed or () if e != question.id]
            if entailed:
                self._links.extend(entailed)
                self._link_ends.append(len(self._links))
                self._anchor_group.append(_GROUP_CODE[group])

    def scores(self) -> Scores:
        tally = AccuracyResult(correct=dict(self._right), count=dict(self._count),
                               structural_correct=dict(self._structural_right),
                               structural_count=dict(self._structural_count), missing=tuple(sorted(self._missing)))
        return Scores(overall=SubsetScore(tally=tally, agreement=self._consistency()))

    def _consistency(self) -> ConsistencyResult:
        keys = np.frombuffer(self._keys, dtype=np.int64) if len(self._keys) else np.zeros(0, np.int64)
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        correct = np.frombuffer(bytes(self._correct), dtype=np.uint8)[order].astype(np.int64)
        links = np.frombuffer(self._links, dtype=np.int64) if len(self._links) else np.zeros(0, np.int64)
        ends = np.frombuffer(self._link_ends, dtype=np.int64) if len(self._link_ends) else np.zeros(0, np.int64)
        at = np.minimum(np.searchsorted(sorted_keys, links), max(len(sorted_keys) - 1, 0))
        present = (sorted_keys[at] == links) if len(sorted_keys) else np.zeros(len(links), bool)
        agree = np.where(present, correct[at] if len(sorted_keys) else 0, 0)
        starts = np.concatenate(([0], ends[:-1])) if len(ends) else ends
        # per anchor: how many of its entailed questions are in the set, and how many are right
        n_present = np.add.reduceat(present.astype(np.int64), starts) if len(ends) else ends
        n_agree = np.add.reduceat(agree, starts) if len(ends) else ends
        groups = np.frombuffer(bytes(self._anchor_group), dtype=np.uint8)
        totals, anchors = {}, {}
        for name in ANSWER_GROUPS:
            chosen = n_present > 0
            if name != "all":
                chosen &= groups == _GROUP_CODE[name]
            anchors[name] = int(chosen.sum())
            # exact: sum the numerators of each denominator, then add the few distinct fractions
            total = Fraction(0)
            for denominator in np.unique(n_present[chosen]).tolist():
                total += Fraction(int(n_agree[chosen & (n_present == denominator)].sum()), denominator)
            totals[name] = total
        return ConsistencyResult(
            consistency={g: float(totals[g] / anchors[g]) if anchors[g] else None for g in ANSWER_GROUPS},
            anchors=anchors)
