"""Models that never see a program, to score against the hard/easy split.

* :class:`AnswerPrior` (``prior``): the blind answer prior, no torch;
* :class:`BlackBoxBaseline` (``blackbox``): question words and object features, no program
  (imported on first use: it needs torch).
"""
from nablafol.baselines.prior import AnswerPrior

__all__ = ["AnswerPrior", "BlackBoxBaseline"]


def __getattr__(name):
    if name == "BlackBoxBaseline":
        from nablafol.baselines.blackbox import BlackBoxBaseline
        return BlackBoxBaseline
    raise AttributeError(f"module 'nablafol.baselines' has no attribute {name!r}")
