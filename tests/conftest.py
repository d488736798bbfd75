"""Suite-wide settings: one torch thread; hypothesis runs without per-example deadlines (CI machines are shared
and noisy) and with a modest number of examples so the whole suite stays fast."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, max_examples=int(os.environ.get("NABLAFOL_HYPOTHESIS_EXAMPLES", "60")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("default")
# The fast tier (`-m "not slow"`, docs/testing.md) runs every property at a quarter of its examples:
# those without a count of their own through this profile, those with one through tests/tiers.py's
# examples(N); the full suite, which decides, keeps the full counts.
settings.register_profile("fast", parent=settings.get_profile("default"),
                          max_examples=int(os.environ.get("NABLAFOL_HYPOTHESIS_FAST_EXAMPLES", "15")))


def pytest_configure(config):
    if "not slow" in " ".join((config.getoption("markexpr") or "").split()):
        settings.load_profile("fast")


# One torch thread for the whole suite: its tensors are small, and on a 2-core machine that is
# busy with anything else, ops split over 2 threads stall (measured: the training test took
# 29 s on 1 thread and 284 s on 2 with one other job running). The demo and the benchmarks
# default to 1 thread for the same reason.
import torch  # noqa: E402

torch.set_num_threads(int(os.environ.get("NABLAFOL_TEST_THREADS", "1")))
