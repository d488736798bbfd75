"""The pair stage's fused ReLU + dropout: the same function as ``nn.Dropout(nn.ReLU(x))`` given
the same mask, its gradient, its drop rate per lane, and plain ReLU outside training."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples
from torch.nn import functional as F

from nablafol.neural.lane_dropout import LANES, LaneDropout, ReluDropout, keep_factor, lane_threshold, relu_dropout


@settings(max_examples=examples(40), deadline=None)
@given(p=st.floats(0.0, 0.9), seed=st.integers(0, 2**31 - 1), shape=st.lists(st.integers(1, 7), min_size=1, max_size=4))
def test_value_and_gradient_match_relu_then_dropout_with_the_same_mask(p, seed, shape):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    x[x.abs() < 1e-3] = 0.0  # zeros included: ReLU's kink passes no gradient in both forms
    keep = keep_factor(shape, p, torch.float64, generator=g)
    drop = keep == 0
    _, p_eff = lane_threshold(p)
    upstream = torch.randn(shape, generator=g, dtype=torch.float64)

    mine = x.clone().requires_grad_()
    relu_dropout(mine, keep, p_eff).backward(upstream)
    reference = x.clone().requires_grad_()
    expected = F.relu(reference) * (~drop) / (1 - p_eff)  # nn.Dropout's formula with this mask
    expected.backward(upstream)

    assert torch.allclose(relu_dropout(x, keep, p_eff), expected.detach(), rtol=1e-15, atol=0)
    assert torch.allclose(mine.grad, reference.grad, rtol=1e-15, atol=0)


def test_every_lane_of_a_word_drops_at_the_rate_asked():
    p = 0.1
    k, p_eff = lane_threshold(p)
    assert k == round(p * LANES) and abs(p_eff - p) <= 0.5 / LANES
    mask = keep_factor((400_000, 4), p, generator=torch.Generator().manual_seed(1)) == 0
    rates = mask.double().mean(0)  # column c: lane c of every 64-bit word
    sigma = (p_eff * (1 - p_eff) / 400_000) ** 0.5
    assert ((rates - p_eff).abs() < 5 * sigma).all(), rates
    # neighbouring lanes independent: both dropped as often as p_eff squared
    both = (mask[:, 0] & mask[:, 1]).double().mean()
    assert abs(both - p_eff ** 2) < 5 * (p_eff ** 2 / 400_000) ** 0.5


def test_the_keep_factor_is_zero_or_the_scale():
    keep = keep_factor((5, 7, 9), 0.3, generator=torch.Generator().manual_seed(8))
    drop = keep == 0
    _, p_eff = lane_threshold(0.3)
    assert 0 < drop.sum() < drop.numel()
    assert torch.equal(keep[~drop], torch.full_like(keep[~drop], 1.0 / (1.0 - p_eff)))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_dropout_keeps_the_input_dtype(dtype):
    x = torch.randn(4, 8, 8, dtype=dtype)
    for layer in (LaneDropout(0.2), ReluDropout(0.2)):
        assert layer.train()(x).dtype == dtype


def test_masks_follow_the_seed_and_have_the_shape_asked():
    a = keep_factor((3, 5, 7), 0.3, torch.float64, generator=torch.Generator().manual_seed(4))
    b = keep_factor((3, 5, 7), 0.3, torch.float64, generator=torch.Generator().manual_seed(4))
    assert a.shape == (3, 5, 7) and a.dtype == torch.float64 and torch.equal(a, b)
    assert keep_factor((0, 4), 0.3).shape == (0, 4)


def test_evaluation_mode_and_zero_rate_are_plain_relu():
    x = torch.randn(4, 6, 6, 8)
    assert torch.equal(ReluDropout(0.3).eval()(x), F.relu(x))
    assert torch.equal(ReluDropout(0.0).train()(x), F.relu(x))


def test_training_mode_drops_and_scales():
    torch.manual_seed(0)
    x = torch.rand(50_000) + 0.5  # all positive: a zero output is a dropped unit
    y = ReluDropout(0.25).train()(x)
    dropped = y == 0
    assert abs(dropped.double().mean().item() - 0.25) < 0.01
    assert torch.allclose(y[~dropped], x[~dropped] / 0.75)


@pytest.mark.parametrize("p", [1.0, 1 - 2 ** -18, -0.1])
def test_a_rate_outside_zero_to_the_largest_is_refused(p):
    # 1 - 2**-18 rounds to a rate of 1 (every unit dropped, a division by zero): refused in one line
    with pytest.raises(ValueError, match="dropout probability must be a number from 0 to 0.9999"):
        ReluDropout(p)
    from nablafol.errors import NablafolError
    from nablafol.neural.model import NeuralOracleConfig
    with pytest.raises(NablafolError, match="dropout must be a number from 0 to 0.9999"):
        NeuralOracleConfig(feature_dim=4, num_unary=1, num_binary=1, dropout=p)


def test_lane_dropout_is_dropout_with_the_lane_mask():
    x = torch.randn(6, 9, 5)
    assert torch.equal(LaneDropout(0.4).eval()(x), x) and torch.equal(LaneDropout(0.0).train()(x), x)
    torch.manual_seed(3)
    y = LaneDropout(0.4).train()(x)
    torch.manual_seed(3)
    drop = keep_factor(x.shape, 0.4) == 0
    _, p_eff = lane_threshold(0.4)
    assert torch.equal(y, x.masked_fill(drop, 0.0) * (1.0 / (1.0 - p_eff)))
    assert 0 < drop.sum() < drop.numel()


def test_the_oracle_model_keeps_its_checkpoint_keys():
    # the dropouts hold no state: swapping nn.Dropout for the lane dropouts changes no key
    from neural_helpers import small_model
    model = small_model()
    lanes = [m for m in model.modules() if isinstance(m, LaneDropout)]
    assert len(lanes) == model.config.hidden_layers + 2  # the encoder's, the scene encoder's, the pair stage's
    assert all(not list(m.parameters()) and not list(m.buffers()) and not m.state_dict() for m in lanes)
    keys = set(model.state_dict())
    assert not any("pair_activation" in k or "dropout" in k.lower() for k in keys)
