"""The torch devices this machine can run on, for tests that run everywhere the engine can."""
from __future__ import annotations

import torch


def devices() -> list[str]:
    """``"cpu"``, then ``"cuda"`` and ``"mps"`` where present.

    >>> devices()[0]
    'cpu'
    """
    mps = getattr(torch.backends, "mps", None)
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else []) + (
        ["mps"] if mps is not None and mps.is_available() else [])
