"""The neural oracle's own error type (everything else it raises is a :mod:`nablafol.errors` type).

Kept here until the lead decides whether it belongs in :mod:`nablafol.errors`.
"""
from __future__ import annotations

from nablafol.errors import NablafolError


class NeuralOracleError(NablafolError, ValueError):
    """A concept vocabulary, model configuration or feature batch that cannot be used:
    one line saying what is wrong and where."""
