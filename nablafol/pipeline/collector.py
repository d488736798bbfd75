"""How a long run keeps Python's cyclic garbage collector off what it loaded.

An evaluation at GQA-validation scale holds millions of long-lived objects (scenes, compiled
programs) that hold no reference cycles. With the collector's defaults each full collection
rescans all of them, to free nothing (what that cost is measured in ``benchmarks/HISTORY.md``).
The remedies, in one place:

* :func:`loading` runs a bulk load with the collector off, then freezes what was loaded
  (:func:`gc.freeze`: no later collection scans it; reference counting still frees it);
* :func:`long_run` keeps the collector off for the whole run: what the answering loop keeps
  (compiled programs, plans, results) would otherwise be scanned by the young generations'
  collections once or twice each (a measurable share of a GQA-scale run even with generation 0
  every 20,000 allocations), while the cyclic garbage it makes is small (about 1,500 objects over 14,600
  questions, measured by one collection at the end); it goes at the first collection after the
  run, or, with ``collect_after=False``, at the first full one (the ``nablafol eval`` command,
  whose process ends after the run: :func:`nablafol.cli.entry` also freezes everything before
  exiting, since the interpreter's last collection would scan the whole working set, millions of
  objects at GQA-validation scale, to free memory the process is about to hand back whole);
* :func:`frozen_for_fork` freezes everything before worker processes are forked: a
  collection in a worker would otherwise write to every object it scans and copy its page.

Cyclic garbage made while loading is kept until :func:`long_run` ends (nothing the loaders
make has cycles).

    >>> import gc
    >>> with long_run():
    ...     with loading():
    ...         table = {str(k): [k] for k in range(1000)}
    ...     gc.get_freeze_count() >= 1000, gc.isenabled()
    (True, False)
    >>> gc.isenabled(), gc.get_freeze_count()
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

__all__ = ["loading", "long_run", "frozen_for_fork"]


@contextmanager
def _collector_off() -> Iterator[None]:
    """The collector off inside, and on again after if it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def loading() -> Iterator[None]:
    """The collector is off inside; what exists on leaving is frozen (out of later scans)."""
    with _collector_off():
        try:
            yield
        finally:
            gc.freeze()


@contextmanager
def long_run(collect_after: bool = True) -> Iterator[None]:
    """The collector is off inside; on leaving, it is on again if it was, and frozen objects are
    returned to it. ``collect_after``: what the run made stays in the young generation, so the
    run's cyclic garbage goes at the next (young) collection, which scans all of it; else everything goes to the oldest generation (a freeze and an unfreeze:
    two list splices, nothing scanned) and the garbage waits for a full collection, which may
    not come soon: for a run its process ends after (the ``nablafol eval`` command)."""
    with _collector_off():
        try:
            yield
        finally:
            if not collect_after:
                gc.freeze()
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
