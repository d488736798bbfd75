"""Compatibility names for callers not yet moved to :mod:`nablafol.scoring` (issue 17).

``nablafol.pipeline`` and the ``eval``/``demo`` commands import answer matching from here;
the names now live in :mod:`nablafol.scoring.answers` (and :class:`ScoringError` in
:mod:`nablafol.scoring.questions`). Import them from :mod:`nablafol.scoring`; this module goes
once no caller is left.

>>> vocabulary_match("ski", "skis")
True
"""
from nablafol.scoring.answers import exact_match, vocabulary_match
from nablafol.scoring.questions import ScoringError

__all__ = ["ScoringError", "exact_match", "vocabulary_match"]
