"""How a long run keeps Python's cyclic garbage collector off what it loaded.

An evaluation at GQA-validation scale holds millions of long-lived objects (scenes, compiled
programs) that hold no reference cycles. With the collector's defaults each full collection
rescans all of them, to free nothing (what that cost is measured in ``benchmarks/README.md``).
The remedies, in one place:

* :func:`loading` runs a bulk load with the collector off, then freezes what was loaded
  (:func:`gc.freeze`: no later collection scans it; reference counting still frees it);
* :func:`long_run` makes the youngest generation collect every 20,000 allocations instead of
  700, so that the objects of a chunk are scanned fewer times; settings are restored after;
* :func:`frozen_for_fork` freezes everything before worker processes are forked: a
  collection in a worker would otherwise write to every object it scans and copy its page.

Cyclic garbage made while loading is kept until :func:`long_run` ends (nothing the loaders
make has cycles).

    >>> import gc
    >>> before = gc.get_threshold()
    >>> with long_run():
    ...     with loading():
    ...         table = {str(k): [k] for k in range(1000)}
    ...     gc.get_freeze_count() >= 1000, gc.isenabled()
    (True, True)
    >>> gc.get_threshold() == before, gc.get_freeze_count()
    (True, 0)
    >>> with long_run():
    ...     with loading():
    ...         table = {str(k): [k] for k in range(1000)}
    ...     with frozen_for_fork():
    ...         pass
    ...     gc.get_freeze_count() >= 1000  # what loading froze stays frozen until long_run ends
    True
    >>> with frozen_for_fork():
    ...     gc.get_freeze_count() >= 1000
    True
    >>> gc.get_freeze_count()
    0
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

__all__ = ["loading", "long_run", "frozen_for_fork", "LONG_RUN_THRESHOLDS"]

#: (generation 0, 1, 2) thresholds during a long run; the defaults are (700, 10, 10)
LONG_RUN_THRESHOLDS = (20_000, 50, 100)


@contextmanager
def loading() -> Iterator[None]:
    """The collector is off inside; what exists on leaving is frozen (out of later scans)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


@contextmanager
def long_run() -> Iterator[None]:
    """Fewer collections inside (:data:`LONG_RUN_THRESHOLDS`); on leaving, the thresholds are
    restored and frozen objects are returned to the collector."""
    thresholds = gc.get_threshold()
    gc.set_threshold(*LONG_RUN_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


@contextmanager
def frozen_for_fork() -> Iterator[None]:
    """Collect once, then freeze everything for the forked workers' lifetime; on leaving,
    unfreeze unless something had been frozen before (the :func:`loading` of an enclosing
    :func:`long_run`, which unfreezes at its own end)."""
    outermost = gc.get_freeze_count() == 0
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        if outermost:
            gc.unfreeze()
