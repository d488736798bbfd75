"""Dropout with a mask drawn four units per random 64-bit word, and ``dropout(relu(x))`` in one step.

The neural oracle's pair stage holds ``(S, M, M, H)`` hidden units (36 objects, 46 scenes:
15M); ``nn.Dropout`` after ``nn.ReLU`` drew one Bernoulli number per unit (``bernoulli_``),
multiplied by the mask and kept it for the backward pass, besides
what ReLU keeps: a sixth of a training step at 36 objects (``benchmarks/bench_limits.py``).
Here one 64-bit random word gives four 16-bit lanes, a unit is dropped where its lane falls
below ``k = round(p · 2^16)`` values of its range (probability ``p_eff = k / 2^16``, within
``2^-17`` of ``p``), and the output alone is kept for the backward pass::

    y = relu(x) · keep / (1 - p_eff),        ∂y/∂x = 1 / (1 - p_eff) where y > 0, else 0

Example (evaluation mode is plain ReLU; training drops units and scales the rest):
    >>> import torch
    >>> layer = ReluDropout(0.5)
    >>> x = torch.tensor([-1.0, 2.0, 3.0])
    >>> layer.eval()(x)
    tensor([0., 2., 3.])
    >>> y = layer.train()(x)  # each unit kept with probability 1/2, and then doubled
    >>> all(v in (0.0, 2 * max(u, 0.0)) for u, v in zip(x.tolist(), y.tolist()))
    True
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

LANES = 1 << 16  # values of one 16-bit lane: p is rounded to a multiple of 1 / LANES
DROPOUT_MAX = 0.9999  # above 1 - 2^-17 the rate would round to 1: every unit dropped


def lane_threshold(p: float) -> tuple[int, float]:
    """``(k, p_eff)``: a unit is dropped where its lane is among the ``k`` lowest values."""
    k = round(p * LANES)
    return k, k / LANES


def keep_factor(shape, p: float, dtype=torch.float32, device=None,
                generator: torch.Generator | None = None) -> torch.Tensor:
    """What dropout multiplies by, a tensor of ``shape``: ``0`` (dropped) with probability
    ``p_eff`` (:func:`lane_threshold`), else ``1 / (1 - p_eff)``, each element independent (four
    16-bit lanes of one uniform 64-bit word per four elements); written straight from the lanes'
    comparison (a boolean mask's ``masked_fill`` cost three times the multiplication)."""
    k, p_eff = lane_threshold(p)
    keep = torch.empty(tuple(shape), dtype=dtype, device=device)
    lowest_kept = -(1 << 15) + k  # int16 lanes run from -2^15: the k lowest values drop
    return torch.ge(_lanes(shape, device, generator), lowest_kept, out=keep).mul_(1.0 / (1.0 - p_eff))


def _lanes(shape, device, generator) -> torch.Tensor:
    count = 1
    for size in shape:
        count *= int(size)
    words = torch.randint(-(1 << 63), (1 << 63) - 1, ((count + 3) // 4,), dtype=torch.int64, device=device,
                          generator=generator)
    return words.view(torch.int16)[:count].view(tuple(shape))


def _factor_dtype(dtype: torch.dtype) -> torch.dtype:
    # the factor 1 / (1 - p) in at least float32: half precision would round it
    return torch.promote_types(dtype, torch.float32)


class _ReluDrop(torch.autograd.Function):
    """``relu(x) · keep``; keeps only its output (the gradient passes where it is positive)."""

    @staticmethod
    def forward(ctx, x, keep, scale):
        out = torch.relu(x).mul_(keep)
        ctx.save_for_backward(out)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        # a unit passes gradient where it is kept and positive, exactly where its output is > 0
        return torch.ops.aten.threshold_backward(grad, out, 0).mul_(ctx.scale), None, None


def _checked(p: float) -> float:
    if not 0 <= p <= DROPOUT_MAX:
        raise ValueError(f"dropout probability must be a number from 0 to {DROPOUT_MAX}, got {p!r}")
    return p


def relu_dropout(x: torch.Tensor, keep: torch.Tensor, p_eff: float) -> torch.Tensor:
    """``relu(x) · keep``, ``keep`` a :func:`keep_factor` of ``p_eff`` (0 or ``1 / (1 - p_eff)``);
    differentiable in ``x``."""
    return _ReluDrop.apply(x, keep, 1.0 / (1.0 - p_eff))


class LaneDropout(nn.Module):
    """``nn.Dropout(p)`` with the lanes' mask: ``x · keep_factor``; in
    evaluation mode, or with ``p = 0``, ``x`` itself. No parameters, no state: a checkpoint
    does not see it."""

    def __init__(self, p: float):
        super().__init__()
        self.p = _checked(p)

    def _drawn(self, x: torch.Tensor):
        """``(keep, p_eff)`` for ``x`` while training with ``p_eff > 0``; else None."""
        k, p_eff = lane_threshold(self.p)
        if not self.training or k == 0:
            return None
        return keep_factor(x.shape, self.p, _factor_dtype(x.dtype), x.device), p_eff

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        drawn = self._drawn(x)
        return x if drawn is None else (x * drawn[0]).to(x.dtype)  # the factor may be wider than x

    def extra_repr(self) -> str:
        return f"p={self.p}"


class ReluDropout(LaneDropout):
    """``nn.Dropout(p)(nn.ReLU()(x))`` with the cheaper mask, in one step (:func:`relu_dropout`).
    In evaluation mode, or with ``p = 0``, plain ReLU."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        drawn = self._drawn(x)
        return F.relu(x) if drawn is None else relu_dropout(x, *drawn)
