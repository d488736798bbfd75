"""Not, And, Or and AllSame over scalar truths carried as ``(log p, log(1 - p))`` pairs: the one
definition both executors call (the batched one on a group's rows, the row-by-row one on one row),
so their answers cannot drift apart.

Example (``And`` of 0.5 and 0.5, ``Or`` of the same):
    >>> import torch
    >>> half = torch.log(torch.tensor([[[0.5, 0.5], [0.5, 0.5]]]))  # (rows, arguments, pair)
    >>> combine_truths(S_AND, half).exp(), combine_truths(S_OR, half).exp()
    (tensor([[0.2500, 0.7500]]), tensor([[0.7500, 0.2500]]))
"""
from __future__ import annotations

import torch

from nablafol import operators as ops
from nablafol.engine.planning import S_ALLSAME, S_AND, S_NOT, S_OR

__all__ = ["combine_truths", "S_NOT", "S_AND", "S_OR", "S_ALLSAME"]


def combine_truths(kind: int, args: torch.Tensor, pad: torch.Tensor | None = None) -> torch.Tensor:
    """``(G, 2)`` pairs of ``kind``'s rows from their arguments' pairs ``args`` ``(G, K, 2)`` (padded
    with the pairs of log 1 for And, log 0 for Or); ``pad`` ``(G, K - 1)`` marks AllSame's absent values."""
    if kind == S_NOT:
        return args[:, 0].flip(-1)
    if kind == S_AND:
        log_p = ops.and_(args[..., 0])
        return torch.stack([log_p, ops.not_(log_p)], dim=-1)
    if kind == S_ALLSAME:
        return torch.stack(ops.all_same(args[:, 0, 0], args[:, 1:, 0], pad), dim=-1)
    if kind != S_OR:
        raise ValueError(f"not a truth kernel: {kind!r}")
    log_q = ops.and_(args[..., 1])  # Or: none of them holds
    return torch.stack([ops.not_(log_q), log_q], dim=-1)
