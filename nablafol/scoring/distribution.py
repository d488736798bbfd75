"""GQA's distribution score: how far the predicted answers' distribution is from the true one.

The definition of GQA's ``eval.py`` (``chiSquare``): balanced questions are grouped by their
``groups.global`` (questions without one are left out); in each group ``g``, ``e_a`` counts
the questions whose gold answer is ``a`` and ``o_a`` those whose prediction is ``a``, and

    χ²_g = Σ_{a : e_a > 0} (o_a − e_a)² / e_a        (predicted answers no question has are not read)
    distribution = (Σ_g n_g · χ²_g) / (Σ_g n_g) / 100,    n_g = Σ_a e_a (the group's questions)

Lower is better; 0 when every group's predicted counts equal its gold counts. The score is
``None`` where the script divides by zero (no question with a global group).

>>> gold = {"color": {"red": 2, "blue": 1}, "shape": {"round": 1}}
>>> predicted = {"color": {"red": 1, "green": 2}, "shape": {"round": 1}}
>>> distribution_score(gold, predicted)  # color: (1-2)²/2 + (0-1)²/1 = 1.5, weight 3; shape: 0, weight 1
0.01125
"""
from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

__all__ = ["distribution_score"]


def distribution_score(gold: Mapping[str, Mapping[str, int]],
                       predicted: Mapping[str, Mapping[str, int]]) -> float | None:
    """The score from per-group answer counts (``group -> answer -> count``), computed exactly."""
    weighted, total = Fraction(0), 0
    for group, answers in gold.items():
        observed = predicted.get(group, {})
        chi_square = sum((Fraction((observed.get(answer, 0) - expected) ** 2, expected)
                          for answer, expected in answers.items()), Fraction(0))
        size = sum(answers.values())
        weighted += chi_square * size
        total += size
    return float(weighted / total / 100) if total else None
