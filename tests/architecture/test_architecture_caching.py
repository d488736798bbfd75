"""One caching rule (nablafol.caching): memo on immutable objects, bounded caches owned by who
depends on them, functools.cache only for files shipped with the package."""
from __future__ import annotations

import re

from architecture_house import ROOT, modules

OTHER_WAYS = {
    "lru_cache": re.compile(r"lru_cache"),
    "cached_property": re.compile(r"cached_property"),
    "a private attribute written onto a frozen object": re.compile(r"object\.__setattr__\([^,]+,\s*[\"']_"),
    "a value kept on a program for a user token": re.compile(r"cached_for"),
}


def test_no_module_caches_another_way():
    found = []
    for name, path in modules().items():
        if name == "nablafol.caching":
            continue
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{path.relative_to(ROOT)}:{lineno}: {what}" for what, pattern in OTHER_WAYS.items()
                      if pattern.search(line)]
    assert found == [], "\n".join(found)


def test_functools_cache_only_reads_shipped_files():
    uses = [(name, line) for name, path in modules().items()
            for line in path.read_text(encoding="utf-8").splitlines() if "@functools.cache" in line]
    assert uses and all("shipped with the package" in line for _, line in uses), uses


def test_a_weighted_cache_keeps_the_most_recent_results_within_its_budget():
    from nablafol.caching import weighted_cache
    calls = []

    def rows(n):
        calls.append(n)
        return [0] * n

    cached = weighted_cache(rows, budget=10, weight=len)
    for n in (4, 4, 3):  # 4 + 3 kept; the second 4 is a hit
        cached(n)
    assert calls == [4, 3] and cached.cache_info().hits == 1
    cached(4)  # most recent now: 3 goes first when room is needed
    cached(5)  # 3 + 4 + 5 > 10: 3 goes, 4 + 5 stay
    cached(4), cached(5)
    assert calls == [4, 3, 5] and cached.cache_info().currsize == 2
    cached(3)  # 5 + 3 <= 10 after 4 (least recent) goes
    assert calls == [4, 3, 5, 3] and cached.cache_info().currsize == 2
    cached(11)  # heavier than the budget: computed, not kept, nothing pushed out
    cached(11)
    assert calls[-2:] == [11, 11] and cached.cache_info().currsize == 2
    cached.cache_clear()
    assert cached.cache_info() == (0, 0, 10, 0)


def test_a_weighted_cache_looked_up_computes_nothing_and_counts_a_use():
    from nablafol.caching import weighted_cache
    calls = []
    cached = weighted_cache(lambda n: calls.append(n) or [0] * n, budget=7, weight=len)
    assert cached.get(3, "absent") == "absent" and calls == [] and cached.cache_info().currsize == 0
    cached(3), cached(4)
    assert cached.get(3) == [0, 0, 0] and cached.cache_info().hits == 1  # 3 is now the most recent
    cached(2)  # 3 + 4 + 2 > 7: 4, the least recently used, goes
    assert cached.holds(3) and not cached.holds(4) and calls == [3, 4, 2]


def test_an_engine_keeps_plans_of_shapes_by_their_rows_not_their_number():
    from nablafol.engine.planning import ProgramPlan, Registry
    from nablafol.ir import Aggregate, AggregateEach, Filter, Predicate, Program, Quantifier, Top
    names = tuple(Predicate(f"n{i}") for i in range(300))

    def chain(k):  # k filters: one shape a length
        node = Top()
        for i in range(k):
            node = Filter(Predicate(f"s{i}"), node)
        return node
    small = [Program.yes_no(Aggregate(Quantifier.EXISTS, chain(k))) for k in range(1, 41)]
    big = [Program((AggregateEach(Quantifier.EXISTS, names, chain(k)),), tuple(p.name for p in names))
           for k in range(1, 11)]
    weight = {id(p): ProgramPlan.of(p).weight() for p in small + big}
    heavy, light = max(weight[id(p)] for p in big), sum(weight[id(p)] for p in small[:5])
    assert heavy > 2 * light
    registry = Registry(cache_rows=heavy + light)  # one open program's shape and five yes/no ones
    for program in small + big:
        registry.packed(program)
    assert registry._shaped.cache_info().currsize == 1  # the last open shape pushed out the rest
    registry.packed(big[-1])
    assert registry._shaped.cache_info().hits == 1
    for program in small[:5]:
        registry.packed(program)
    assert registry._shaped.cache_info().currsize == 6
