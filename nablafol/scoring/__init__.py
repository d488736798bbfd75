"""Scoring any predictions: every metric of GQA's evaluation, the paper's hard/easy split.

* :mod:`~nablafol.scoring.scorer`: :class:`Scorer`, the one scorer (update one question at a
  time, merge, compute): accuracy (all, open, binary, per structural and semantic type, steps,
  length), consistency, validity, plausibility, grounding, distribution;
* :mod:`~nablafol.scoring.answers`: how answers are compared (:data:`exact_match`,
  :data:`vocabulary_match`);
* :mod:`~nablafol.scoring.scores`: :func:`score` of a whole question set, the paper's
  reasoning evaluation score (hard/easy split, ``Acc_h``, ``Err_e``);
* :mod:`~nablafol.scoring.report`: the metrics printed as GQA's script prints them, and as
  report rows; :mod:`~nablafol.scoring.grounding`, :mod:`~nablafol.scoring.distribution`:
  those two definitions; :mod:`~nablafol.scoring.questions`: what is read of a question.

Torch-free. The definitions and every difference from GQA's script: ``docs/scoring.md``.
"""
from nablafol.scoring.answers import AnswerMatch, exact_match, vocabulary_match
from nablafol.scoring.questions import ScoringError
from nablafol.scoring.report import format_gqa, gqa_rows, score_run
from nablafol.scoring.scorer import Scorer, SubsetScore, Tally
from nablafol.scoring.scores import Scores, Split, make_split, score

__all__ = ["AnswerMatch", "Scorer", "Scores", "ScoringError", "Split", "SubsetScore", "Tally", "exact_match",
           "format_gqa", "gqa_rows", "make_split", "score", "score_run", "vocabulary_match"]
