"""Which questions a benchmark metric has counted, and which of them had no prediction.

Every benchmark metric (:mod:`~nablafol.scoring.cric`, :mod:`~nablafol.scoring.aokvqa`,
:mod:`~nablafol.scoring.vcr`) keeps one: a question may be counted once, and two states
merge only when they counted different questions (shards of one set).

    >>> a, b = QuestionLedger("M"), QuestionLedger("M")
    >>> a.count("q1", predicted=True); b.count("q2", predicted=False)
    >>> sorted(a.merge(b).seen), a.missing
    (['q1', 'q2'], ('q2',))
"""
from __future__ import annotations

from collections.abc import Iterable

from nablafol.scoring.questions import ScoringError

__all__ = ["QuestionLedger"]


class QuestionLedger:
    """The ids a metric named ``owner`` has counted and those it counted without a prediction."""

    def __init__(self, owner: str):
        self.owner = owner
        self.seen: set[str] = set()
        self._missing: set[str] = set()

    def check_new(self, ids: Iterable[str]) -> None:
        """Refuse a batch holding a question already counted."""
        again = next((i for i in ids if i in self.seen), None)
        if again is not None:
            raise ScoringError(f"question {again!r} was already counted by this {self.owner}")

    def count(self, question_id: str, predicted: bool) -> None:
        self.seen.add(question_id)
        if not predicted:
            self._missing.add(question_id)

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(sorted(self._missing))

    def merge(self, other: "QuestionLedger") -> "QuestionLedger":
        shared = self.seen & other.seen
        if shared:
            raise ScoringError(f"cannot merge {self.owner} states that both counted question {min(shared)!r}")
        self.seen |= other.seen
        self._missing |= other._missing
        return self
