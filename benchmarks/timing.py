"""Wall-clock timing that is right on any device: wait for an accelerator's queued work before
reading the clock (a clock read right after a launch times the launch), best of some repeats;
the time spent in every call of a method, while a block runs."""
from __future__ import annotations

import contextlib
import time

import torch


def synchronizer(device=None):
    """What waits for ``device``'s queued work; nothing to wait for on the CPU.

    >>> synchronizer("cpu")() is None
    True
    """
    device = torch.device(device or "cpu")
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    backend = getattr(torch, device.type, None)  # torch.mps, torch.xpu: each has its synchronize()
    if device.type != "cpu":
        if not hasattr(backend, "synchronize"):
            raise ValueError(f"no way to wait for {device}'s work: its timings would be of launches only")
        return backend.synchronize
    return lambda: None


def timed(work, sync=lambda: None) -> float:
    """Seconds ``work()`` takes, its device work included."""
    sync()
    start = time.perf_counter()
    work()
    sync()
    return time.perf_counter() - start


def best_time(work, repeats: int, sync=lambda: None) -> float:
    """The best of ``repeats`` timings of ``work()``."""
    return min(timed(work, sync) for _ in range(repeats))


@contextlib.contextmanager
def calls_timed(owner, name: str, spent: dict, label: str, sync=lambda: None):
    """Adds the wall time of every call of ``owner.name`` to ``spent[label]`` while inside (its
    device work included: ``sync`` waits for the device before and after)."""
    original = getattr(owner, name)
    kept = owner.__dict__.get(name, None) if isinstance(owner, type) else None  # a classmethod stays one

    def timed(*args, **kwargs):
        sync()
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            sync()
            spent[label] += time.perf_counter() - start
    setattr(owner, name, timed)
    try:
        yield
    finally:
        if kept is not None:
            setattr(owner, name, kept)
        else:
            delattr(owner, name)
