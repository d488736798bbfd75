"""Tools to property-test DFOL programs and DSLs built on the engine.

* :func:`brute_force`: the exact probability of a program's formulas, by enumerating worlds;
* :func:`repeated_predicates`: which predicates to make certain for a program to be read-once;
* :func:`devices`: the torch devices this machine can run on (tests parametrized over them);
* :func:`aten_calls` (:mod:`nablafol.testing.launches`): the aten calls a piece of work makes,
  counted with ``torch.profiler`` (what a step launches, never timed);
* :mod:`nablafol.testing.strategies` (needs hypothesis): random programs and tables;
* :func:`check_dsl` (:mod:`nablafol.testing.dsl_check`, needs hypothesis): property-tests a DSL's
  compiler against the DSL's own crisp meaning, in one call.
"""
from .devices import devices
from .launches import aten_calls
from .reference import brute_force, repeated_predicates

__all__ = ["aten_calls", "brute_force", "check_dsl", "devices", "repeated_predicates"]


def __getattr__(name):
    if name == "check_dsl":  # loaded on first use: it needs hypothesis, the rest of the kit does not
        from .dsl_check import check_dsl
        return check_dsl
    raise AttributeError(f"module 'nablafol.testing' has no attribute {name!r}")
