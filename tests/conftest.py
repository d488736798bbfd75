"""Suite-wide settings: hypothesis runs without per-example deadlines (CI machines are shared
and noisy) and with a modest number of examples so the whole suite stays fast."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, max_examples=int(os.environ.get("NABLAFOL_HYPOTHESIS_EXAMPLES", "60")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("default")
