"""Models that have nothing to do with DFOL, to score against the hard/easy split.

:class:`AnswerPrior` is the blind "language prior" baseline: for each kind of question it
answers what the training questions of that kind answer most often, without looking at the
image. Perception plays no part in it, so on the hard set it keeps whatever accuracy priors
give, while the base model (perception alone) has none there by construction.

    >>> from types import SimpleNamespace as Q
    >>> train = [Q(id="1", answer="red", types={"detailed": "queryColor"}),
    ...          Q(id="2", answer="red", types={"detailed": "queryColor"}),
    ...          Q(id="3", answer="no", types={"detailed": "verifyAttr"})]
    >>> prior = AnswerPrior().fit(train)
    >>> prior.predict([Q(id="9", answer=None, types={"detailed": "queryColor"}),
    ...                Q(id="8", answer=None, types={"detailed": "unseen"})])
    {'9': 'red', '8': 'red'}
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable


class AnswerPrior:
    """Most frequent training answer per question type (``types.detailed``, else ``structural``)."""

    def __init__(self):
        self.by_type: dict[str, str] = {}
        self.overall: str | None = None

    @staticmethod
    def _kind(question) -> str:
        types = getattr(question, "types", None) or {}
        return types.get("detailed") or types.get("structural") or ""

    def fit(self, questions: Iterable) -> "AnswerPrior":
        counts: dict[str, Counter] = {}
        everything: Counter = Counter()
        for q in questions:
            if q.answer is None:
                continue
            counts.setdefault(self._kind(q), Counter())[q.answer] += 1
            everything[q.answer] += 1
        self.by_type = {k: c.most_common(1)[0][0] for k, c in counts.items()}
        self.overall = everything.most_common(1)[0][0] if everything else None
        return self

    def predict(self, questions: Iterable) -> dict[str, str]:
        out = {}
        for q in questions:
            answer = self.by_type.get(self._kind(q), self.overall)
            if answer is not None:
                out[q.id] = answer
        return out
