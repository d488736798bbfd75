"""Counting what a piece of work launches: the aten calls ``torch.profiler`` sees, never a timing
(the count is the same on any machine, under any load)."""
from __future__ import annotations

from typing import Callable

__all__ = ["aten_calls"]


def aten_calls(work: Callable[[], object]) -> tuple[int, int]:
    """``(outer, every)``: the aten calls ``work()`` makes from Python and autograd (an aten call
    not inside another one: what a device would launch, one kernel or a view each), and all of
    them, counted on the CPU."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        work()
    calls = [e for e in prof.events() if e.name.startswith("aten::")]
    outer = [e for e in calls if e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::")]
    return len(outer), len(calls)
