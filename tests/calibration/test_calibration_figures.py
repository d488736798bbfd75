"""Expected calibration error, reliability bins, and the two calibration pictures."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nablafol.calibration import StepParameters
from nablafol.calibration.figures import (calibration_shapes, expected_calibration_error, reliability_bins,
                                 reliability_diagram)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_ece_by_hand():
    # bins of 0.25: [0, .25) holds .1, .2 (1 of 2 right); [.5, .75) holds .6 (right);
    # [.75, 1] holds .8, 1.0 (1 of 2 right)
    conf = [0.1, 0.2, 0.6, 0.8, 1.0]
    right = [True, False, True, False, True]
    # |0.5 - 0.15|·2 + |1 - 0.6|·1 + |0.5 - 0.9|·2 = 0.7 + 0.4 + 0.8 = 1.9, over 5 answers
    assert expected_calibration_error(conf, right, bins=4) == pytest.approx(0.38, abs=1e-12)
    count, mean_conf, accuracy = reliability_bins(conf, right, bins=4)
    assert count.tolist() == [2, 0, 1, 2] and np.isnan(mean_conf[1]) and np.isnan(accuracy[1])
    assert mean_conf[[0, 2, 3]] == pytest.approx([0.15, 0.6, 0.9]) and accuracy[[0, 2, 3]] == pytest.approx([.5, 1, .5])


def test_bin_edges_left_closed_last_bin_closed():
    count, _, _ = reliability_bins([0.0, 0.5, 0.4999, 1.0], [True] * 4, bins=2)
    assert count.tolist() == [2, 2]


def test_perfect_and_worst_calibration():
    assert expected_calibration_error([1.0, 1.0, 0.0], [True, True, False]) == 0.0
    assert expected_calibration_error([1.0, 1.0], [False, False]) == 1.0
    # 80% confident, right 8 times in 10: calibrated
    assert expected_calibration_error([0.8] * 10, [True] * 8 + [False] * 2) == pytest.approx(0.0, abs=1e-12)


@given(st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=60), st.integers(1, 20))
def test_ece_is_between_0_and_1_and_one_bin_is_the_gap_of_the_means(pairs, bins):
    conf, right = [p[0] for p in pairs], [p[1] for p in pairs]
    ece = expected_calibration_error(conf, right, bins)
    assert 0.0 <= ece <= 1.0 + 1e-12
    assert expected_calibration_error(conf, right, 1) == pytest.approx(abs(np.mean(right) - np.mean(conf)), abs=1e-12)


@pytest.mark.parametrize("conf,right,bins,message", [
    ([], [], 10, "no confidences"), ([0.5], [True, False], 10, "1 confidences for 2"),
    ([1.5], [True], 10, "probabilities"), ([float("nan")], [True], 10, "probabilities"), ([0.5], [True], 0, "bins"),
])
def test_bad_input_is_refused(conf, right, bins, message):
    with pytest.raises(ValueError, match=message):
        expected_calibration_error(conf, right, bins)


@pytest.mark.slow
def test_pictures_are_written(tmp_path):
    params = [StepParameters(1, "name:chair", 3.0, 3.0, 0.5, 1.0, "sharpen"),
              StepParameters(2, "attr:red", 1.0, 1.0, 0.2, 1.0, "suppress")]
    shapes = calibration_shapes(params, tmp_path / "sub" / "shapes.png", title="one question")
    rng = np.random.default_rng(0)
    conf = rng.uniform(0.3, 1.0, 200)
    curves = {"base": (conf, rng.uniform(size=200) < conf ** 2), "calibrated": (conf, rng.uniform(size=200) < conf)}
    reliability = reliability_diagram(curves, tmp_path / "reliability.png", bins=8)
    for path in (shapes, reliability):
        assert path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 10_000
