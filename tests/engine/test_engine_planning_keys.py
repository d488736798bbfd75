"""A batch's distinct oracle requests (planning.py, `_distinct`): marked in a table or sorted,
the same keys in the same order as ``np.unique``."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.engine.planning import _distinct


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(1, 50_000), st.data())
def test_distinct_keys_equal_numpy_unique_on_either_path(bound, data):
    keys = np.array(data.draw(st.lists(st.integers(0, bound - 1), max_size=300)), dtype=np.int64)
    got = _distinct(keys, bound)
    want = np.unique(keys)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_both_paths_are_taken(monkeypatch):
    # the table is used while it is at most ~8 flags a key, else the keys are sorted (np.unique)
    rng = np.random.default_rng(0)
    unique, sorted_calls = np.unique, []
    monkeypatch.setattr(np, "unique", lambda keys, *args, **kwargs: sorted_calls.append(len(keys))
                        or unique(keys, *args, **kwargs))
    for n, bound in ((20_000, 100_000), (10, 10_000_000)):
        keys = rng.integers(0, bound, size=n)
        np.testing.assert_array_equal(_distinct(keys, bound), unique(keys))
    assert sorted_calls == [10]


def test_a_negative_scene_is_refused_not_read_as_another_scene():
    # a request's key is scene * predicates + id: a negative scene would alias another scene's keys
    import pytest

    from nablafol.engine import Engine
    from nablafol.errors import ShapeError
    from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Top
    red, blue = Predicate("red"), Predicate("blue")
    programs = [Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(p, Top()))) for p in (red, blue)]
    for scenes in ([-1, 0], [0, -3], [-2]):
        with pytest.raises(ShapeError, match="scene index -[0-9]+ is negative"):
            Engine().plan(programs[:len(scenes)], scenes)
