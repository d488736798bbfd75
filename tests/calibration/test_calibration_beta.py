"""The Beta-calibration function (paper, eq. 16) in log space."""
import math

import torch
from hypothesis import given
from hypothesis import strategies as st

from nablafol.calibration import beta_calibrate

probs = st.floats(0.0, 1.0, allow_nan=False)
positive = st.floats(0.05, 5.0)


def _calibrate(alpha, a, b, c, d, dtype=torch.float64):
    t = lambda v: torch.tensor([v], dtype=dtype)  # noqa: E731
    return beta_calibrate(t(alpha).log(), t(a), t(b), t(c).log(), t(1 - c).log(), t(d).log()).exp().item()


@given(probs, positive, positive, st.floats(0.01, 0.99), positive)
def test_matches_the_formula(alpha, a, b, c, d):
    want = c * alpha ** a / (c * alpha ** a + d * (1 - c) * (1 - alpha) ** b) if 0 < alpha < 1 else alpha
    assert math.isclose(_calibrate(alpha, a, b, c, d), want, rel_tol=1e-9, abs_tol=1e-12)


@given(probs)
def test_identity_parameters_change_nothing(alpha):
    assert math.isclose(_calibrate(alpha, 1, 1, 0.5, 1), alpha, rel_tol=1e-12, abs_tol=1e-15)


@given(st.lists(probs, min_size=2, max_size=2), positive, positive, st.floats(0.01, 0.99), positive)
def test_monotone_in_the_attention(pair, a, b, c, d):
    lo, hi = sorted(pair)
    assert _calibrate(lo, a, b, c, d) <= _calibrate(hi, a, b, c, d) + 1e-12


def test_exact_ends_stay_exact_and_gradients_finite():
    log_alpha = torch.tensor([0.0, 0.3, 1.0]).log()
    params = [torch.tensor([v], requires_grad=True) for v in (2.0, 0.5, math.log(0.3), math.log(0.7), 0.4)]
    out = beta_calibrate(log_alpha, *params).exp()
    assert out[0].item() == 0.0 and out[2].item() == 1.0
    out.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in params)
