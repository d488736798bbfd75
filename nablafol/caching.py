"""The project's one caching rule, in three helpers.

1. A value computed from an immutable object alone (a program's node order, a node's hash,
   a compiled question's formula) is kept *on that object*: :func:`memo`. It lives as long
   as the object, is found by one dictionary look-up, and is never part of equality or
   hashing (only fields are).
2. A value that also depends on someone else (an engine's predicate ids, a compiler's
   ontology, an answerer's perception) is kept *by that someone*, in a bounded
   least-recently-used cache it makes for itself: :func:`bounded_cache`. Keys are the inputs
   themselves (equal programs share one entry), and the bound keeps a stream of a million
   distinct programs from holding them all. When results differ much in size (a packed open
   question weighs a hundred yes/no ones), the bound is on their summed weight instead:
   :func:`weighted_cache`.

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
from collections import OrderedDict
from typing import Callable, TypeVar

T = TypeVar("T")

__all__ = ["memo", "bounded_cache", "weighted_cache"]

_ABSENT = object()


def memo(obj, name: str, compute: Callable[[], T]) -> T:
    """``compute()``, kept on the immutable ``obj`` under ``name`` (rule 1).

    Written into the instance's ``__dict__`` directly, which a frozen dataclass allows: the
    object stays immutable in every field that equality and hashing read.
    """
    values = obj.__dict__
    value = values.get(name, _ABSENT)  # not try/except: a raised KeyError costs more than the look-up
    if value is _ABSENT:
        value = values[name] = compute()
    return value


def bounded_cache(function: Callable[..., T], size: int) -> Callable[..., T]:
    """``function`` with its results for the ``size`` most recently used arguments kept (rule 2);
    made by the owner of what the results depend on, usually in its ``__init__`` over a bound
    method. ``.cache_clear()`` empties it."""
    if not (isinstance(size, int) and size >= 1):
        raise ValueError(f"a cache holds at least 1 entry, got size={size!r}")
    return functools.lru_cache(maxsize=size)(function)


def weighted_cache(function: Callable[..., T], budget: int, weight: Callable[[T], int]) -> Callable[..., T]:
    """``function`` of one hashable argument with its most recently used results kept while
    their summed ``weight`` stays within ``budget`` (rule 2, bounded by size rather than count):
    the least recently used go first; a result heavier than the whole budget is not kept.
    ``cache_info()`` is ``lru_cache``'s, its ``maxsize`` the budget (in weight) and its
    ``currsize`` the results kept (a count).

        >>> squares = weighted_cache(lambda n: [n] * n, budget=5, weight=len)
        >>> _ = squares(3), squares(2), squares(1)    # 3 + 2 + 1 > 5: 3 goes
        >>> squares.cache_info()
        CacheInfo(hits=0, misses=3, maxsize=5, currsize=2)
    """
    if not (isinstance(budget, int) and budget >= 1):
        raise ValueError(f"a cache holds a weight of at least 1, got budget={budget!r}")
    kept: OrderedDict = OrderedDict()  # argument -> (result, weight), oldest first
    state = {"held": 0, "hits": 0, "misses": 0}

    def cached(argument):
        entry = kept.get(argument)
        if entry is not None:
            kept.move_to_end(argument)
            state["hits"] += 1
            return entry[0]
        state["misses"] += 1
        result = function(argument)
        w = int(weight(result))
        if w <= budget:
            kept[argument] = (result, w)
            state["held"] += w
            while state["held"] > budget:
                _, (_, gone) = kept.popitem(last=False)
                state["held"] -= gone
        return result

    def cache_info() -> functools._CacheInfo:
        return functools._CacheInfo(state["hits"], state["misses"], budget, len(kept))

    def cache_clear() -> None:
        kept.clear()
        state.update(held=0, hits=0, misses=0)

    def holds(argument) -> bool:
        """Whether ``argument``'s result is kept (a look, not a use: the order stays)."""
        return argument in kept

    def get(argument, default=None):
        """``argument``'s kept result (a use, as a call that finds it), else ``default``:
        nothing is computed."""
        entry = kept.get(argument)
        if entry is None:
            return default
        kept.move_to_end(argument)
        state["hits"] += 1
        return entry[0]

    cached.cache_info, cached.cache_clear, cached.holds, cached.get = cache_info, cache_clear, holds, get
    return cached
