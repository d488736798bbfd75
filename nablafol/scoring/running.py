"""Compatibility wrapper for ``nablafol eval`` until it moves to :class:`nablafol.scoring.Scorer`
(issue 17): the old ``add(question, prediction)`` / ``scores()`` names over one Scorer.

    >>> from types import SimpleNamespace as Q
    >>> running = RunningScore()
    >>> running.add(Q(id="1", answer="red", entailed=("2", "99"), types={"structural": "query"}), "red")
    >>> running.add(Q(id="2", answer="yes", entailed=(), types={"structural": "verify"}), "no")
    >>> running.scores().to_json()["overall"]["all"]
    {'accuracy': 0.5, 'consistency': 0.0, 'count': 2}
"""
from __future__ import annotations

from nablafol.scoring.answers import AnswerMatch, exact_match
from nablafol.scoring.scorer import Scorer
from nablafol.scoring.scores import Scores

__all__ = ["RunningScore"]


class RunningScore:
    """``add(question, prediction or None)`` one by one (``Scorer.update``); :meth:`scores` at the end."""

    def __init__(self, match: AnswerMatch = exact_match):
        self.scorer = Scorer(match)

    def __len__(self) -> int:
        return len(self.scorer)

    def add(self, question, prediction: str | None) -> None:
        self.scorer.update(question, prediction)

    def scores(self) -> Scores:
        return Scores(overall=self.scorer.compute())
