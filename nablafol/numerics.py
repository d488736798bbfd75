"""Numerical stability, in one place: log-space primitives with exact 0/1 and finite gradients.

The engine carries every probability ``p`` as ``log p`` (in float32 a product of hundreds does
not underflow). Delicate here: ``log p`` from ``p`` (:func:`safe_log`), ``log(1 - p)`` from
``log p`` (:func:`log1mexp`, Mächler, 2012), both exact at 0 and 1, and their gradients, finite
(0 through an exact 0) where the chain rule meets ``0 · inf``. Oracles owning logits should hand
the engine ``logsigmoid(z)``.

Example:
    >>> import torch
    >>> x = torch.log(torch.tensor([0.0, 0.25, 1.0]))
    >>> log1mexp(x).exp()
    tensor([1.0000, 0.7500, 0.0000])
"""
from __future__ import annotations

import torch

#: ``-log 2``, where :func:`log1mexp` switches branches; a tensor compares it in its own dtype
LOG_HALF = -0.6931471805599453
# made once: a Python float is converted on every comparison (benchmarks/README.md)
_LOG_HALF_IN = {dtype: torch.tensor(LOG_HALF, dtype=dtype, device="cpu")
                for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64)}


def log_half(dtype: torch.dtype) -> torch.Tensor:
    """:data:`LOG_HALF` as the 0-dim CPU tensor of ``dtype`` a comparison rounds it to."""
    found = _LOG_HALF_IN.get(dtype)
    return found if found is not None else torch.tensor(LOG_HALF, dtype=dtype, device="cpu")


def _log1mexp_forward(x: torch.Tensor, guard: bool = True) -> torch.Tensor:
    # log(-expm1(x)) above -log 2, log1p(-exp(x)) below, each in place on a tensor of its own
    x = x.clamp(max=0.0) if guard else x  # log-probabilities are <= 0; guard against round-off above 0
    near = torch.expm1(x).neg_().log_()
    return torch.where(x > log_half(x.dtype), near, torch.exp(x).neg_().log1p_(), out=near)


def log1mexp_derivative(x: torch.Tensor, guard: bool = True) -> torch.Tensor:
    """``d/dx log(1 - e^x) = -1 / expm1(-x)``: finite everywhere, 0 at the exact end ``x = 0``
    (``guard`` False for an ``x`` that cannot be above 0)."""
    if guard:
        x = x.clamp(max=0.0)
    slope = torch.expm1(x.neg()).clamp_(min=torch.finfo(x.dtype).tiny).reciprocal_().neg_()
    return slope.masked_fill_(x == 0, 0.0)


def log1mexp_slope(x: torch.Tensor) -> torch.Tensor:
    """``d/dx log(1 - e^x) = -exp(x - log(1 - e^x))``, 0 at ``x = 0``, in operations autograd
    differentiates again (0 at ``x = -inf``, where ``-1 / expm1(-x)``'s derivative is ``0 · inf``).

    >>> log1mexp_slope(torch.log(torch.tensor([0.0, 0.5, 1.0]))).tolist()
    [-0.0, -1.0, 0.0]
    """
    end = x >= 0
    inside = x.masked_fill(end, -1.0)  # the end's values are replaced below: nothing flows through them
    return (-torch.exp(inside - log1mexp(inside))).masked_fill(end, 0.0)


class _Log1mExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, guard):
        ctx.save_for_backward(x)
        ctx.guard = guard
        return _log1mexp_forward(x, guard)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: this backward is differentiated in turn
            return grad * log1mexp_slope(x), None
        return grad * log1mexp_derivative(x, ctx.guard), None


def log1mexp(x: torch.Tensor, guard: bool = True) -> torch.Tensor:
    """``log(1 - exp(x))`` for log-probabilities ``x <= 0``, the log-space ``Neg``: exact at the
    ends, relatively accurate between, its gradient finite (``guard``: round-off above 0 clamped).

    >>> import torch
    >>> log1mexp(torch.tensor([-1e-9])).item()  # log(1e-9), kept although p = 1 - 1e-9
    -20.723...
    """
    if torch.is_grad_enabled() and x.requires_grad:
        return _Log1mExp.apply(x, guard)
    return _log1mexp_forward(x, guard)


def log1mexp_nonpositive(x: torch.Tensor) -> torch.Tensor:
    """:func:`log1mexp` of an ``x`` that cannot be above 0 (a sum of its outputs), unguarded."""
    return log1mexp(x, guard=False)


class _SafeLog(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p):
        ctx.save_for_backward(p)
        return torch.log(p)

    @staticmethod
    def backward(ctx, grad):
        (p,) = ctx.saved_tensors
        safe = torch.where(p > 0, p, torch.ones_like(p))
        return torch.where(p > 0, grad / safe, torch.zeros_like(grad))


def safe_log(p: torch.Tensor) -> torch.Tensor:
    """``log p`` for probabilities, ``-inf`` at 0 with a finite (zero) gradient there.

    >>> import torch
    >>> p = torch.tensor([0.0, 0.5], requires_grad=True)
    >>> safe_log(p).sum().backward(); p.grad
    tensor([0., 2.])
    """
    if torch.is_grad_enabled() and p.requires_grad:
        return _SafeLog.apply(p)
    return torch.log(p)


class _LogSum(torch.autograd.Function):
    """A log-sum (``reduce`` keeps its dimension); a term's gradient: its share, 0 at a -inf sum."""

    @staticmethod
    def forward(ctx, reduce, *terms):
        out = reduce(*terms)
        ctx.save_for_backward(out, *terms)
        return out

    @staticmethod
    def backward(ctx, grad):
        out, *terms = ctx.saved_tensors
        dead = torch.isneginf(out)
        total = out.masked_fill(dead, 0.0)
        return (None,) + tuple(grad * torch.exp(t - total).masked_fill(dead, 0.0) for t in terms)


def log_add_exp(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``log(e^a + e^b)`` whose gradient stays finite when both terms are ``-inf``."""
    a, b = torch.broadcast_tensors(a, b) if a.shape != b.shape else (a, b)
    return _LogSum.apply(torch.logaddexp, a, b)


def log_sum_exp(x: torch.Tensor, dim: int) -> torch.Tensor:
    """``log Σ e^x`` over ``dim`` whose gradient stays finite when every term is ``-inf``.

    >>> import torch
    >>> log_sum_exp(torch.log(torch.tensor([[0.25, 0.5], [0.0, 0.0]])), dim=1).exp()
    tensor([0.7500, 0.0000])
    """
    if torch.is_grad_enabled() and x.requires_grad:
        return _LogSum.apply(lambda t: torch.logsumexp(t, dim, keepdim=True), x).squeeze(dim)
    return torch.logsumexp(x, dim)


def masked_sum(x: torch.Tensor, mask: torch.Tensor | None, keepdim: bool = False) -> torch.Tensor:
    """Sum of log-space terms over the last dimension where ``mask`` holds: padding adds log 1 = 0."""
    if mask is not None:
        x = x.masked_fill(~mask, 0.0)
    return x.sum(-1, keepdim=keepdim)
