"""normed_linear: the oracle's first layer with the cheaper backward pass, against the plain
LayerNorm + Linear (outputs bit for bit, gradients to rounding) and against finite differences."""
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
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


@settings(max_examples=40, deadline=None)
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
