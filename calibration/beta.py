"""The Beta-calibration function (paper, section 5, eq. 16), in log space.

    C(α) = c·α^a / (c·α^a + d·(1-c)·(1-α)^b)

the posterior ``Pr(F ⇔ ⊤ | α)`` when the attention values of true and false instances follow
two Beta distributions (Kull et al., 2017). ``a = b = d = 1, c = 1/2`` is the identity;
other values sharpen, blur, suppress or excite attention (the paper's Figure 2). Exact 0 and
1 stay exact for ``a, b > 0``.

    >>> import torch
    >>> alpha = torch.tensor([0.0, 0.2, 0.9, 1.0])
    >>> one, half = torch.ones(4), torch.full((4,), 0.5)
    >>> beta_calibrate(alpha.log(), one, one, half.log(), half.log(), one.log()).exp()
    tensor([0.0000, 0.2000, 0.9000, 1.0000])
"""
from __future__ import annotations

import torch

from nablafol.numerics import log1mexp, log_add_exp


def beta_calibrate(log_alpha: torch.Tensor, a: torch.Tensor, b: torch.Tensor, log_c: torch.Tensor,
                   log_1mc: torch.Tensor, log_d: torch.Tensor) -> torch.Tensor:
    """``log C(α)`` from ``log α``; parameters broadcast against ``log_alpha``.

    ``log_c`` and ``log_1mc`` are ``log c`` and ``log(1 - c)`` (given separately so that both
    stay accurate near 0 and 1, e.g. from ``logsigmoid(±z)``).
    """
    # a·log α and b·log(1-α), with the exact ends kept exact and their gradients finite
    neg_inf = torch.full_like(log_alpha, float("-inf"))
    zero_a = torch.isneginf(log_alpha)
    up = log_c + torch.where(zero_a, neg_inf, a * torch.where(zero_a, torch.zeros_like(log_alpha), log_alpha))
    log_1ma = log1mexp(log_alpha)
    one_a = torch.isneginf(log_1ma)
    down = log_d + log_1mc + torch.where(one_a, neg_inf, b * torch.where(one_a, torch.zeros_like(log_1ma), log_1ma))
    total = log_add_exp(up, down)
    dead = torch.isneginf(up)
    return torch.where(dead, neg_inf, up - torch.where(dead, torch.zeros_like(total), total))
