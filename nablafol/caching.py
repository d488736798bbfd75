"""The project's one caching rule, in two helpers.

1. A value computed from an immutable object alone (a program's node order, a node's hash,
   a compiled question's formula) is kept *on that object*: :func:`memo`. It lives as long
   as the object, is found by one dictionary look-up, and is never part of equality or
   hashing (only fields are).
2. A value that also depends on someone else (an engine's predicate ids, a compiler's
   ontology, an answerer's perception) is kept *by that someone*, in a bounded
   least-recently-used cache it makes for itself: :func:`bounded_cache`. Keys are the inputs
   themselves (equal programs share one entry), and the bound keeps a stream of a million
   distinct programs from holding them all.

3. A file shipped with the package (the grammar, GQA's vocabulary) is read once:
   ``functools.cache`` on the function that reads it.

Nothing else caches: no ``object.__setattr__`` on frozen objects, no unbounded cache of
what users give.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Word:
    ...     text: str
    ...     def shout(self) -> str:
    ...         return memo(self, "_shout", lambda: self.text.upper())
    >>> w = Word("hi")
    >>> w.shout(), w.shout() is w.shout(), w == Word("hi")
    ('HI', True, True)
    >>> lengths = bounded_cache(len, size=2)
    >>> lengths("abc"), lengths.cache_info().currsize
    (3, 1)
"""
from __future__ import annotations

import functools
from typing import Callable, TypeVar

T = TypeVar("T")

__all__ = ["memo", "bounded_cache"]


def memo(obj, name: str, compute: Callable[[], T]) -> T:
    """``compute()``, kept on the immutable ``obj`` under ``name`` (rule 1).

    Written into the instance's ``__dict__`` directly, which a frozen dataclass allows: the
    object stays immutable in every field that equality and hashing read.
    """
    values = obj.__dict__
    try:
        return values[name]
    except KeyError:
        value = values[name] = compute()
        return value


def bounded_cache(function: Callable[..., T], size: int) -> Callable[..., T]:
    """``function`` with its results for the ``size`` most recently used arguments kept (rule 2);
    made by the owner of what the results depend on, usually in its ``__init__`` over a bound
    method. ``.cache_clear()`` empties it."""
    if not (isinstance(size, int) and size >= 1):
        raise ValueError(f"a cache holds at least 1 entry, got size={size!r}")
    return functools.lru_cache(maxsize=size)(function)
