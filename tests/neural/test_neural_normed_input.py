"""normed_linear: the oracle's first layer with the cheaper backward pass, against the plain
LayerNorm + Linear (outputs bit for bit, gradients to rounding) and against finite differences."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples
from neural_helpers import random_batch, small_model
from torch import nn

from nablafol.neural.model import box_features
from nablafol.neural.normed_input import normed_linear


def _layers(seed, features, boxes, hidden, dtype):
    torch.manual_seed(seed)
    norm, linear = nn.LayerNorm(features).to(dtype), nn.Linear(features + boxes, hidden).to(dtype)
    with torch.no_grad():  # weights away from LayerNorm's 1 and 0, so that both enter the gradients
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.uniform_(-0.5, 0.5)
    return norm, linear


def _grads(out, upstream, modules):
    params = [p for m in modules for p in m.parameters()]
    return torch.autograd.grad(out, params, upstream)


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), scenes=st.integers(1, 3), objects=st.integers(0, 5),
       features=st.integers(2, 9), boxes=st.integers(1, 3), hidden=st.integers(1, 6),
       dtype=st.sampled_from([torch.float32, torch.float64]))
def test_outputs_bit_for_bit_and_gradients_as_the_plain_modules(seed, scenes, objects, features, boxes, hidden, dtype):
    norm, linear = _layers(seed, features, boxes, hidden, dtype)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(scenes, objects, features, generator=g, dtype=torch.float64).to(dtype) * 3 + 1
    b = torch.randn(scenes, objects, boxes, generator=g, dtype=torch.float64).to(dtype)
    mine, plain = normed_linear(x, b, norm, linear), linear(torch.cat([norm(x), b], dim=-1))
    assert torch.equal(mine, plain)  # the same kernels forward
    upstream = torch.randn(mine.shape, generator=g, dtype=torch.float64).to(dtype)
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == torch.float64 else dict(rtol=1e-4, atol=1e-4)
    for a, e in zip(_grads(mine, upstream, (norm, linear)), _grads(plain, upstream, (norm, linear))):
        assert torch.allclose(a, e, **tol)


def test_gradients_against_finite_differences():
    norm, linear = _layers(1, 5, 2, 3, torch.float64)
    x, b = torch.randn(2, 4, 5, dtype=torch.float64), torch.randn(2, 4, 2, dtype=torch.float64)

    def f(weight, bias, w, c):
        return normed_linear(x, b, _With(norm, weight, bias), _With(linear, w, c))
    assert torch.autograd.gradcheck(f, tuple(p.detach().clone().requires_grad_() for p in
                                             (norm.weight, norm.bias, linear.weight, linear.bias)))


class _With:
    """A module's hyper-parameters with other parameter tensors (for gradcheck)."""

    def __init__(self, module, weight, bias):
        self.weight, self.bias = weight, bias
        self.eps, self.normalized_shape = getattr(module, "eps", None), getattr(module, "normalized_shape", None)

    def __call__(self, *args):
        raise AssertionError("the plain path is not the one under test")


def test_inputs_that_need_a_gradient_run_the_plain_modules():
    norm, linear = _layers(2, 4, 1, 3, torch.float64)
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, 1, dtype=torch.float64)
    normed_linear(x, b, norm, linear).sum().backward()
    expected = x.detach().clone().requires_grad_()
    linear(torch.cat([norm(expected), b], dim=-1)).sum().backward()
    assert x.grad is not None and torch.allclose(x.grad, expected.grad, rtol=1e-12, atol=1e-12)


def test_the_model_encodes_as_before_and_trains_its_first_layer_the_same():
    model = small_model(seed=3, dropout=0.0)
    batch = random_batch([3, 5, 0, 4], seed=2)
    hidden = model.encode(batch).hidden
    g = box_features(batch.boxes, batch.image_size)
    plain = model.encoder(torch.cat([model.input_norm(batch.features), g], dim=-1))
    assert torch.equal(hidden, plain)
    upstream = torch.randn(hidden.shape, generator=torch.Generator().manual_seed(5))
    first = (model.input_norm, model.encoder[0])
    for a, e in zip(_grads(hidden, upstream, first), _grads(plain, upstream, first)):
        assert torch.allclose(a, e, rtol=1e-4, atol=1e-5)


def _plain_and_mine_gradients(norm, linear, x, b, params):
    upstream = torch.randn(x.shape[:-1] + (linear.out_features,), generator=torch.Generator().manual_seed(7),
                           dtype=x.dtype)
    mine = torch.autograd.grad(normed_linear(x, b, norm, linear), params, upstream, allow_unused=True)
    plain = torch.autograd.grad(linear(torch.cat([norm(x), b], dim=-1)), params, upstream, allow_unused=True)
    return mine, plain


def test_each_frozen_parameter_leaves_the_others_their_gradients():
    for frozen in range(4):
        norm, linear = _layers(4, 6, 2, 3, torch.float64)
        params = [norm.weight, norm.bias, linear.weight, linear.bias]
        params[frozen].requires_grad_(False)
        trained = [p for p in params if p.requires_grad]
        x, b = torch.randn(2, 5, 6, dtype=torch.float64), torch.randn(2, 5, 2, dtype=torch.float64)
        mine, plain = _plain_and_mine_gradients(norm, linear, x, b, trained)
        assert all(torch.allclose(m, e, rtol=1e-10, atol=1e-10) for m, e in zip(mine, plain)), frozen


def test_boxes_that_need_a_gradient_get_it_from_the_plain_modules():
    norm, linear = _layers(5, 4, 2, 3, torch.float64)
    x = torch.randn(3, 4, dtype=torch.float64)
    b = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
    mine, plain = _plain_and_mine_gradients(norm, linear, x, b, [b])
    assert mine[0] is not None and torch.allclose(mine[0], plain[0], rtol=1e-12, atol=1e-12)


def test_a_layer_norm_without_weights_or_over_two_dimensions_runs_the_plain_modules():
    x, b = torch.randn(3, 2, 4, dtype=torch.float64), torch.randn(3, 2, 1, dtype=torch.float64)
    bare, linear = nn.LayerNorm(4, elementwise_affine=False).double(), nn.Linear(5, 3).double()
    mine, plain = _plain_and_mine_gradients(bare, linear, x, b, [linear.weight, linear.bias])
    assert all(torch.allclose(m, e, rtol=1e-12, atol=1e-12) for m, e in zip(mine, plain))
    wide, linear = nn.LayerNorm((2, 4)).double(), nn.Linear(5, 3).double()  # over objects and features
    with torch.no_grad():
        wide.weight.uniform_(0.5, 1.5)
    assert torch.equal(normed_linear(x, b, wide, linear), linear(torch.cat([wide(x), b], dim=-1)))
    mine, plain = _plain_and_mine_gradients(wide, linear, x, b, [wide.weight, wide.bias])
    assert all(torch.allclose(m, e, rtol=1e-12, atol=1e-12) for m, e in zip(mine, plain))


def test_under_autocast_the_gradients_are_the_plain_modules():
    norm, linear = _layers(6, 8, 2, 4, torch.float32)
    x, b = torch.randn(2, 3, 8), torch.randn(2, 3, 2)
    params = [norm.weight, norm.bias, linear.weight, linear.bias]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mine, plain = _plain_and_mine_gradients(norm, linear, x, b, params)
    assert all(torch.equal(m, e) for m, e in zip(mine, plain))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_gradients_keep_their_dtypes(dtype):
    norm, linear = _layers(7, 8, 2, 4, dtype)
    x, b = torch.randn(2, 3, 8).to(dtype), torch.randn(2, 3, 2).to(dtype)
    params = [norm.weight, norm.bias, linear.weight, linear.bias]
    mine, plain = _plain_and_mine_gradients(norm, linear, x, b, params)
    for m, e in zip(mine, plain):
        assert m.dtype == e.dtype == dtype and torch.allclose(m.float(), e.float(), rtol=0.05, atol=0.05)
