"""Scoring any predictions: GQA's metrics, the paper's hard/easy split, scores of a run.

* :mod:`~nablafol.scoring.metrics`: accuracy and consistency as mergeable metric objects, and
  how answers are compared;
* :mod:`~nablafol.scoring.scores`: the paper's reasoning evaluation score (hard/easy split,
  ``Acc_h``, ``Err_e``);
* :mod:`~nablafol.scoring.running`: the same scores, one question at a time in small memory.

Torch-free.
"""
from nablafol.scoring.scores import Scores, Split, SubsetScore, make_split, score

__all__ = ["Scores", "Split", "SubsetScore", "make_split", "score"]
