"""The collector's settings around a long run (``nablafol.pipeline.collector``), checked by the
collections that start and the objects they free, never by time."""
import gc
import weakref

import pytest

from nablafol.pipeline.collector import long_run


class _Cycle:
    def __init__(self):
        self.me = self


@pytest.mark.parametrize("collect_after", [True, False])
def test_leaving_a_long_run_collects_what_it_made_or_leaves_it_to_a_full_collection(collect_after):
    # collect_after: the run's cyclic garbage goes at the next collection, a scan of all the run
    # made (0.6 s after a GQA-scale eval); without: no scan waits (for a process that ends after
    # the run), the garbage waits for a full collection
    started = []

    def heard(phase, info):
        if phase == "start":
            started.append(info["generation"])

    was_enabled = gc.isenabled()
    gc.enable()
    gc.callbacks.append(heard)  # hears the leaving too (nothing is collected inside)
    try:
        with long_run(collect_after=collect_after):
            made = [[k] for k in range(20000)]
            garbage = _Cycle()
            gone = weakref.ref(garbage)
            del garbage
            assert not gc.isenabled()
        after = [[k] for k in range(100)]
    finally:
        gc.callbacks.remove(heard)
        if not was_enabled:
            gc.disable()
    assert gc.get_freeze_count() == 0 and len(made) == 20000 and len(after) == 100
    if collect_after:
        assert started and gone() is None
    else:
        assert started == [] and gone() is not None
        gc.collect()
        assert gone() is None  # a full collection frees it
