"""Adam for the oracle's training, fused where the device allows: :func:`adam`.

torch's default Adam on CPU updates one parameter tensor after another, several passes each;
the fused kernel does every update in one pass, several times faster on one thread, and the
unfused optimizer was a noticeable share of a training step at 10 objects (measured by
``python -m benchmarks.run --only limits``; figures in ``benchmarks/HISTORY.md``). The fused update rounds differently in the last
place (2.4e-7 at most after 10 steps of unit-scale gradients): trainings are reproducible run
to run, not bit-identical to the unfused update.

    >>> import torch
    >>> w = torch.nn.Parameter(torch.ones(3))
    >>> optimizer = adam([w], lr=0.1)
    >>> w.grad = torch.ones(3); optimizer.step(); w.detach()
    tensor([0.9000, 0.9000, 0.9000])
"""
from __future__ import annotations

from typing import Iterable

import torch

__all__ = ["adam"]

_FUSED_DEVICES = {"cpu", "cuda"}


def adam(parameters: Iterable[torch.nn.Parameter], **settings) -> torch.optim.Adam:
    """``torch.optim.Adam(parameters, **settings)``, fused when every parameter is a floating
    point tensor on a device with the fused kernel (CPU, CUDA); the per-tensor update otherwise."""
    parameters = list(parameters)
    fused = bool(parameters) and all(p.is_floating_point() and p.device.type in _FUSED_DEVICES for p in parameters)
    return torch.optim.Adam(parameters, fused=fused or None, **settings)
