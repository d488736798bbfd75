"""Pictures of calibration: the learned curves ``C(α)`` per step, and reliability diagrams.

PNG files through matplotlib's non-interactive backend (the helpers of
:mod:`nablafol.plotting`).

    >>> round(expected_calibration_error([0.9, 0.9, 0.6, 0.6], [True, False, True, False]), 6)
    0.25
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from nablafol.plotting import pyplot, save_figure

from .inspect import StepParameters
from .shapes import beta_curve

__all__ = ["calibration_shapes", "reliability_diagram", "expected_calibration_error", "reliability_bins"]


def calibration_shapes(params: Sequence[StepParameters], path, title: str = "calibration per step") -> Path:
    """``C(α)`` over ``α`` in [0, 1] for each step (legend: token and shape), with the identity."""
    plt = pyplot()
    alpha = np.linspace(0.0, 1.0, 401)
    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    ax.plot(alpha, alpha, color="grey", linestyle="--", linewidth=1, label="identity")
    for p in params:
        ax.plot(alpha, beta_curve(alpha, p.a, p.b, p.c, p.d), linewidth=1.6, label=f"{p.step}: {p.token} ({p.shape})")
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="attention α", ylabel="calibrated C(α)", title=title)
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return save_figure(plt, fig, path)


def reliability_bins(confidences: Sequence[float], correct: Sequence[bool], bins: int = 10):
    """``(count, mean confidence, accuracy)`` per bin, arrays of length ``bins``.

    Bin ``k`` holds confidences in ``[k/bins, (k+1)/bins)``, the last one also 1.0; an empty
    bin has count 0 and NaN means.
    """
    conf = np.asarray(confidences, dtype=np.float64).reshape(-1)
    hit = np.asarray(correct, dtype=bool).reshape(-1)
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    if conf.shape != hit.shape:
        raise ValueError(f"{conf.size} confidences for {hit.size} correctness flags")
    if conf.size == 0:
        raise ValueError("no confidences: a calibration measure needs at least one answer")
    if np.isnan(conf).any() or (conf < 0).any() or (conf > 1).any():
        raise ValueError("confidences must be probabilities in [0, 1]")
    which = np.minimum((conf * bins).astype(np.int64), bins - 1)
    count = np.bincount(which, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(which, weights=conf, minlength=bins) / count
        accuracy = np.bincount(which, weights=hit.astype(np.float64), minlength=bins) / count
    return count, mean_conf, accuracy


def expected_calibration_error(confidences: Sequence[float], correct: Sequence[bool], bins: int = 10) -> float:
    """ECE: ``Σ_k (n_k / n)·|accuracy_k - mean confidence_k|`` over equal-width bins
    (:func:`reliability_bins`), ``confidences`` those of the chosen answers."""
    return _ece(*reliability_bins(confidences, correct, bins))


def _ece(count, mean_conf, accuracy) -> float:
    used = count > 0
    return float(np.sum(count[used] * np.abs(accuracy[used] - mean_conf[used])) / count.sum())


def reliability_diagram(curves: dict[str, tuple[Sequence[float], Sequence[bool]]], path, bins: int = 10,
                        title: str = "reliability") -> Path:
    """For each named model ``(confidences of its chosen answers, whether each was right)``:
    accuracy against mean confidence per bin, with the diagonal (perfect calibration) and the
    ECE in the legend; below, how many answers fall in each bin."""
    plt = pyplot()
    fig, (ax, ax_count) = plt.subplots(2, 1, figsize=(6, 7), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="perfectly calibrated")
    edges = np.linspace(0.0, 1.0, bins + 1)
    for name, (confidences, correct) in curves.items():
        count, mean_conf, accuracy = reliability_bins(confidences, correct, bins)
        ece = _ece(count, mean_conf, accuracy)
        used = count > 0
        line, = ax.plot(mean_conf[used], accuracy[used], marker="o", label=f"{name} (ECE {100 * ece:.1f}%)")
        ax_count.stairs(count / count.sum(), edges, color=line.get_color(), linewidth=1.5)
    ax.set(xlim=(0, 1), ylim=(0, 1), ylabel="accuracy", title=title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    ax_count.set(xlabel="confidence of the chosen answer", ylabel="share of answers")
    ax_count.grid(alpha=0.3)
    return save_figure(plt, fig, path)
