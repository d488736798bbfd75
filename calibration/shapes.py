"""Reading a Beta calibration ``C(α)`` as the shapes of the paper's Figure 2.

The paper names four effects of ``C(α) = c·α^a / (c·α^a + d·(1-c)·(1-α)^b)`` on an attention
value ``α``: *sharpen* (``a = b > 1``: values below the crossing go down, above it go up),
*blur* (``a = b < 1``: values move toward the crossing), *suppress* (``c < 1/2`` or ``d > 1``:
``C(α) <= α`` everywhere) and *excite* (``c > 1/2`` or ``d < 1``: ``C(α) >= α``).

:func:`classify_shape` reads them from the curve itself, so that any parameters get a
reading: with ``Δ(α) = C(α) - α`` on the grid ``α = 0.001, 0.002, ..., 0.999`` and a
tolerance ``tol`` (probability units; ``|Δ| <= tol`` counts as unchanged), the signs of
``Δ`` left to right, runs merged, give

* no sign: ``identity``; only ``-``: ``suppress``; only ``+``: ``excite``;
* ``- +``: ``sharpen`` (``C`` crosses the diagonal upward: values move away from the crossing);
* ``+ -``: ``blur`` (crosses downward: values move toward it);
* ``- + -`` or ``+ - +`` (``a`` and ``b`` on either side of 1): ``sharpen+blur``;

and a curve that crosses gets ``+suppress`` when ``Δ(1/2) < -tol``, ``+excite`` when
``Δ(1/2) > tol`` (e.g. ``sharpen+suppress``: steeper, with its crossing above 1/2). Since
``logit C(α) - logit α = logit c - log d + (a-1)·log α - (b-1)·log(1-α)`` has at most one
turning point, ``Δ`` changes sign at most twice: the list is complete.

    >>> classify_shape(1, 1, 0.5, 1), classify_shape(3, 3, 0.5, 1), classify_shape(0.4, 0.4, 0.5, 1)
    ('identity', 'sharpen', 'blur')
    >>> classify_shape(1, 1, 0.2, 1), classify_shape(1, 1, 0.5, 0.25), classify_shape(3, 3, 0.2, 1)
    ('suppress', 'excite', 'sharpen+suppress')
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .beta import beta_calibrate

__all__ = ["SHAPE_TOLERANCE", "SHAPE_GRID", "beta_curve", "classify_shape"]

SHAPE_TOLERANCE = 0.01
SHAPE_GRID = np.arange(1, 1000) / 1000.0


def beta_curve(alpha, a: float, b: float, c: float, d: float) -> np.ndarray:
    """``C(α)`` in float64 for an array of attention values ``α`` in [0, 1]."""
    log_alpha = torch.as_tensor(np.asarray(alpha, dtype=np.float64)).log()
    t = lambda v: torch.tensor(float(v), dtype=torch.float64)  # noqa: E731
    log_c = math.log(c) if c > 0 else float("-inf")
    log_1mc = math.log1p(-c) if c < 1 else float("-inf")
    return beta_calibrate(log_alpha, t(a), t(b), t(log_c), t(log_1mc), t(math.log(d))).exp().numpy()


def classify_shape(a: float, b: float, c: float, d: float, tol: float = SHAPE_TOLERANCE) -> str:
    """The Figure-2 reading of ``C`` with parameters ``(a, b, c, d)`` (see the module docstring)."""
    if not (a > 0 and b > 0 and 0 <= c <= 1 and d > 0):
        raise ValueError(f"not Beta-calibration parameters: a={a}, b={b} (> 0), c={c} (in [0, 1]), d={d} (> 0)")
    delta = beta_curve(SHAPE_GRID, a, b, c, d) - SHAPE_GRID
    signs = np.sign(delta[np.abs(delta) > tol])
    runs = [int(s) for k, s in enumerate(signs) if k == 0 or s != signs[k - 1]]
    if not runs:
        return "identity"
    if runs == [-1]:
        return "suppress"
    if runs == [1]:
        return "excite"
    shape = {(-1, 1): "sharpen", (1, -1): "blur"}.get(tuple(runs), "sharpen+blur")
    middle = float(beta_curve([0.5], a, b, c, d)[0]) - 0.5
    if middle < -tol:
        return shape + "+suppress"
    if middle > tol:
        return shape + "+excite"
    return shape
