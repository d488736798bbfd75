"""Tools to property-test DFOL programs and DSLs built on the engine.

* :func:`brute_force`: the exact probability of a program's formulas, by enumerating worlds;
* :func:`repeated_predicates`: which predicates to make certain for a program to be read-once;
* :func:`devices`: the torch devices this machine can run on (tests parametrized over them);
* :mod:`nablafol.testing.strategies` (needs hypothesis): random programs and tables.
"""
from .devices import devices
from .reference import brute_force, repeated_predicates

__all__ = ["brute_force", "devices", "repeated_predicates"]
