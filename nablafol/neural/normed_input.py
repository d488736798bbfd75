"""The oracle's first layer over its fixed inputs: a LayerNorm's output (and the boxes) into a Linear.

The encoder reads ``y = [γ ⊙ x̂ + β, g] Wᵀ + b`` (``x̂`` the features normalized per object,
``g`` the box features; neither needs a gradient). Autograd would pass the gradient back through
the Linear to its input, a ``(rows, 2057)`` product as large as the layer's own weight gradient,
only to reduce it to the LayerNorm's two vectors. Here, with ``G`` the gradient at ``y`` and
``W = [W_x, W_g]``::

    P = Gᵀ x̂                        (the one large product, hidden x features)
    ∂/∂W_x = P ⊙ γ + (Gᵀ1) βᵀ,       ∂/∂W_g = Gᵀ g,       ∂/∂b = Gᵀ1
    ∂/∂γ = Σ_j W_x[j] ⊙ P[j],        ∂/∂β = W_xᵀ (Gᵀ1)

One large product in the backward pass instead of two (a training step at 36 objects spent
about an eighth of its time on the other). The forward pass is the LayerNorm's and the
Linear's own kernels, so in eager mode the outputs are bit for bit those of the plain modules
(under ``torch.compile`` or on other devices' kernels that is not promised); the gradients are
the same sums in another order.

Example:
    >>> import torch
    >>> norm, linear = torch.nn.LayerNorm(4), torch.nn.Linear(5, 3)
    >>> x, g = torch.randn(2, 4), torch.randn(2, 1)
    >>> torch.equal(normed_linear(x, g, norm, linear), linear(torch.cat([norm(x), g], -1)))
    True
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class _NormedLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, g, gamma, beta, eps, weight, bias):
        width = x.shape[-1]
        normed, mean, rstd = torch.ops.aten.native_layer_norm(x, [width], gamma, beta, eps)
        out = F.linear(torch.cat([normed, g], dim=-1), weight, bias)
        ctx.save_for_backward(x, mean, rstd, g, gamma, beta, weight)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, mean, rstd, g, gamma, beta, weight = ctx.saved_tensors
        width, dtype = x.shape[-1], weight.dtype  # one dtype for the products: on CUDA a half
        flat = grad.reshape(-1, grad.shape[-1]).to(dtype)  # input's statistics stay float32
        x_hat = ((x - mean) * rstd).reshape(-1, width).to(dtype)  # (rows, features)
        p = flat.T @ x_hat  # (hidden, features): the one large product
        column = flat.sum(0)  # Gᵀ1
        w_x = weight[:, :width]
        grad_gamma = (w_x * p).sum(0).to(gamma.dtype) if ctx.needs_input_grad[2] else None
        grad_beta = (column @ w_x).to(beta.dtype) if ctx.needs_input_grad[3] else None
        grad_weight = grad_bias = None
        if ctx.needs_input_grad[5]:
            boxes = g.reshape(-1, g.shape[-1]).to(dtype)
            grad_weight = torch.cat([p * gamma.to(dtype) + column[:, None] * beta.to(dtype), flat.T @ boxes], dim=1)
        if ctx.needs_input_grad[6]:
            grad_bias = column
        return None, None, grad_gamma, grad_beta, None, grad_weight, grad_bias


def normed_linear(x: torch.Tensor, g: torch.Tensor, norm: nn.LayerNorm, linear: nn.Linear) -> torch.Tensor:
    """``linear(cat([norm(x), g], -1))`` for inputs that need no gradient, with the cheaper
    backward pass above; anything else (an input that needs a gradient, a LayerNorm without
    weights, a Linear without bias, a norm over more than the last dimension, autocast) runs the
    plain modules."""
    plain = (x.requires_grad or g.requires_grad or norm.weight is None or norm.bias is None
             or linear.bias is None or tuple(norm.normalized_shape) != (x.shape[-1],)
             or torch.is_autocast_enabled(x.device.type))  # autocast: the plain modules' dtype rules
    if plain:
        return linear(torch.cat([norm(x), g], dim=-1))
    return _NormedLinear.apply(x, g, norm.weight, norm.bias, norm.eps, linear.weight, linear.bias)
