"""A batch's distinct oracle requests (planning.py, `_distinct`): marked in a table or sorted,
the same keys in the same order as ``np.unique``."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nablafol.engine.planning import _distinct


@settings(max_examples=200, deadline=None)
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
    monkeypatch.setattr(np, "unique", lambda keys: sorted_calls.append(len(keys)) or unique(keys))
    for n, bound in ((20_000, 100_000), (10, 10_000_000)):
        keys = rng.integers(0, bound, size=n)
        np.testing.assert_array_equal(_distinct(keys, bound), unique(keys))
    assert sorted_calls == [10]
