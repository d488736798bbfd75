"""The collector's settings around a long run (``nablafol.pipeline.collector``), checked by the
collections that start, never by time."""
import gc

from nablafol.pipeline.collector import long_run


def test_leaving_a_long_run_leaves_no_collection_of_what_it_made_waiting():
    # with the run's objects left in the young generation, the first allocation after the run
    # started a collection over all of them (0.6 s after a GQA-scale eval)
    started = []

    def heard(phase, info):
        if phase == "start":
            started.append(info["generation"])

    was_enabled = gc.isenabled()
    gc.enable()
    try:
        gc.callbacks.append(heard)  # hears the leaving too (nothing is collected inside)
        try:
            with long_run():
                made = [[k] for k in range(20000)]
                assert not gc.isenabled()
            after = [[k] for k in range(100)]
        finally:
            gc.callbacks.remove(heard)
        assert gc.isenabled() and gc.get_freeze_count() == 0
        assert started == [] and len(made) == 20000 and len(after) == 100
    finally:
        if not was_enabled:
            gc.disable()
