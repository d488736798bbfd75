"""The paper's Figure 2 shapes of the Beta calibration, and their classification."""
import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from nablafol.calibration import classify_shape
from nablafol.calibration.shapes import SHAPE_GRID, SHAPE_TOLERANCE, beta_curve

# an independent grid (not the classifier's) on which the readings are checked
ALPHAS = np.concatenate([np.linspace(0.0, 1.0, 257), [1e-6, 0.3333, 0.5, 0.7777, 1 - 1e-6]])


def direct(alpha, a, b, c, d):
    """C(α) by the formula itself, in float64."""
    alpha = np.asarray(alpha, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        up = c * alpha ** a
        value = up / (up + d * (1 - c) * (1 - alpha) ** b)
    return np.where(alpha <= 0, 0.0, np.where(alpha >= 1, 1.0, value))


steep, flat = st.floats(1.3, 6.0), st.floats(0.1, 0.75)
low_c, high_c = st.floats(0.02, 0.4), st.floats(0.6, 0.98)
big_d, small_d = st.floats(1.5, 50.0), st.floats(0.02, 0.67)


@given(steep)
def test_sharpen_moves_values_away_from_one_half(a):
    out = direct(ALPHAS, a, a, 0.5, 1.0)
    below, above = ALPHAS < 0.5, ALPHAS > 0.5
    assert (out[below] <= ALPHAS[below]).all() and (out[above] >= ALPHAS[above]).all()
    assert beta_curve([0.5], a, a, 0.5, 1.0)[0] == pytest.approx(0.5, abs=1e-15)
    assert classify_shape(a, a, 0.5, 1.0) == "sharpen"


@given(flat)
def test_blur_moves_values_toward_one_half(a):
    out = direct(ALPHAS, a, a, 0.5, 1.0)
    assert (np.abs(out - 0.5) <= np.abs(ALPHAS - 0.5) + 1e-12).all()
    assert (np.sign(out - 0.5) == np.sign(ALPHAS - 0.5)).all()  # toward 1/2, never across
    assert classify_shape(a, a, 0.5, 1.0) == "blur"


@pytest.mark.parametrize("shift", ["c", "d"])
@given(c=low_c, d=big_d)
def test_suppress_lowers_every_value(shift, c, d):
    c, d = (c, 1.0) if shift == "c" else (0.5, d)
    assert (direct(ALPHAS, 1, 1, c, d) <= ALPHAS + 1e-12).all()
    assert classify_shape(1, 1, c, d) == "suppress"


@pytest.mark.parametrize("shift", ["c", "d"])
@given(c=high_c, d=small_d)
def test_excite_raises_every_value(shift, c, d):
    c, d = (c, 1.0) if shift == "c" else (0.5, d)
    assert (direct(ALPHAS, 1, 1, c, d) >= ALPHAS - 1e-12).all()
    assert classify_shape(1, 1, c, d) == "excite"


@pytest.mark.parametrize("a,c,d,shape", [
    (1, 0.5, 1, "identity"), (1.01, 0.5, 1, "identity"),  # within the tolerance: no visible change
    (4, 0.2, 1, "sharpen+suppress"), (4, 0.5, 0.2, "sharpen+excite"),
    (0.5, 0.2, 1, "blur+suppress"), (0.5, 0.8, 1, "blur+excite"),
])
def test_combined_readings(a, c, d, shape):
    assert classify_shape(a, a, c, d) == shape


def test_unequal_exponents_on_either_side_of_one():
    # a > 1 > b: logit C - logit α = m + (a-1)·log α - (b-1)·log(1-α) has a maximum inside;
    # at m = log 2 that maximum is 0 (C touches the diagonal at 1/2 and stays below it)
    assert classify_shape(1.5, 0.5, 0.5, 0.5) == "suppress"
    assert classify_shape(3.0, 0.2, 0.5, 0.1) == "sharpen+blur+excite"  # below, above (at 1/2), below
    assert classify_shape(0.2, 3.0, 0.5, 10.0) == "sharpen+blur+suppress"  # its mirror image


positive, prob = st.floats(0.05, 8.0), st.floats(0.01, 0.99)
scale = st.floats(-4.0, 4.0).map(math.exp)


def _margin(a, b, c, d):
    """How far the curve stays from the tolerance boundary (readings flip there)."""
    points = np.concatenate([SHAPE_GRID, [0.5]])
    return float(np.min(np.abs(np.abs(direct(points, a, b, c, d) - points) - SHAPE_TOLERANCE)))


@given(positive, positive, prob, scale)
def test_readings_hold_on_the_curve(a, b, c, d):
    """What a reading says is true of C by the formula: suppress ⇒ C ≤ α (+tol), excite ⇒
    C ≥ α (-tol), identity ⇒ |C - α| ≤ tol, sharpen/blur ⇒ the curve crosses the diagonal."""
    assume(_margin(a, b, c, d) > 1e-9)
    shape = classify_shape(a, b, c, d)
    delta = direct(SHAPE_GRID, a, b, c, d) - SHAPE_GRID
    if shape == "identity":
        assert np.abs(delta).max() <= SHAPE_TOLERANCE
    elif shape == "suppress":
        assert delta.max() <= SHAPE_TOLERANCE and delta.min() < -SHAPE_TOLERANCE
    elif shape == "excite":
        assert delta.min() >= -SHAPE_TOLERANCE and delta.max() > SHAPE_TOLERANCE
    else:
        assert delta.max() > SHAPE_TOLERANCE and delta.min() < -SHAPE_TOLERANCE
        first = delta[np.abs(delta) > SHAPE_TOLERANCE][0]
        assert shape.split("+")[0] == ("sharpen" if first < 0 else "blur") or shape.startswith("sharpen+blur")
        middle = direct([0.5], a, b, c, d)[0] - 0.5
        assert shape.endswith("+suppress") == (middle < -SHAPE_TOLERANCE)
        assert shape.endswith("+excite") == (middle > SHAPE_TOLERANCE)


MIRROR = {"suppress": "excite", "excite": "suppress"}


@given(positive, positive, prob, scale)
def test_mirror_swaps_suppress_and_excite(a, b, c, d):
    # 1 - C(1 - α) is the Beta calibration with (b, a, 1 - c, 1/d): sharpen and blur stay,
    # suppress and excite trade places
    assume(_margin(a, b, c, d) > 1e-9)
    assert np.allclose(direct(ALPHAS, b, a, 1 - c, 1 / d), 1 - direct(1 - ALPHAS, a, b, c, d), atol=1e-12)
    shape = classify_shape(a, b, c, d)
    assert classify_shape(b, a, 1 - c, 1 / d) == "+".join(MIRROR.get(w, w) for w in shape.split("+"))


@pytest.mark.parametrize("params", [(0, 1, 0.5, 1), (1, -1, 0.5, 1), (1, 1, 1.5, 1), (1, 1, 0.5, 0),
                                    (float("nan"), 1, 0.5, 1)])
def test_invalid_parameters_are_refused(params):
    with pytest.raises(ValueError, match="not Beta-calibration parameters"):
        classify_shape(*params)
