"""log1mexp (nablafol.numerics): the two accurate branches, bit for bit, whatever the dtype, and accurate."""
import decimal

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.numerics import log1mexp, log1mexp_nonpositive, log_half, safe_log

SWITCH = -0.6931471805599453
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def _plain(x: torch.Tensor) -> torch.Tensor:
    """The textbook form: out of place, the threshold a Python float."""
    x = x.clamp(max=0.0)
    return torch.where(x > SWITCH, torch.log(-torch.expm1(x)), torch.log1p(-torch.exp(x)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_log1mexp_is_the_two_branch_formula_bit_for_bit(dtype):
    """Around the switch (where a threshold rounded otherwise would pick the other branch), at the
    exact ends, and above 0 (round-off, clamped)."""
    near = torch.tensor(np.linspace(SWITCH - 2e-3, SWITCH + 2e-3, 40001), dtype=dtype)
    ends = torch.tensor([SWITCH, 0.0, -0.0, float("-inf"), 1e-7, -1e-30, -80.0], dtype=dtype)
    x = torch.cat([near, ends, torch.rand(5000, dtype=torch.float64).log().mul(7).to(dtype)])
    with torch.no_grad():
        assert torch.equal(log1mexp(x), _plain(x))
    assert log_half(dtype).dtype == dtype and log_half(dtype).item() == torch.tensor(SWITCH, dtype=dtype).item()


@settings(max_examples=examples(200), deadline=None)
@given(st.floats(-100.0, 0.0, allow_nan=False, width=32), st.sampled_from([torch.float32, torch.float64]))
def test_log1mexp_is_accurate(x, dtype):
    """Within 2 ulps of log(1 - e^x) computed with 60 decimal digits (exact -inf at x = 0)."""
    got = log1mexp(torch.tensor([x], dtype=dtype)).item()
    if x == 0.0:
        assert got == float("-inf")
        return
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        want = float((1 - decimal.Decimal(x).exp()).ln())
    ulp = abs(float(np.spacing(np.float32(want) if dtype == torch.float32 else np.float64(want))))
    assert abs(got - want) <= 2 * ulp


def test_log1mexp_gradient_path_gives_the_same_values():
    x = torch.rand(1000, dtype=torch.float64).log()
    x[0], x[1] = 0.0, float("-inf")
    tracked = log1mexp(x.clone().requires_grad_())
    assert torch.equal(tracked.detach(), log1mexp(x))


def _probe(dtype):
    """Around the switch, the exact ends, above 0, NaN and a spread of log-probabilities."""
    near = torch.tensor(np.linspace(SWITCH - 2e-3, SWITCH + 2e-3, 801), dtype=dtype)
    ends = torch.tensor([SWITCH, 0.0, -0.0, float("-inf"), 1e-7, 3.0, float("inf"), float("nan"), -1e-30, -80.0],
                        dtype=dtype)
    return torch.cat([near, ends, torch.rand(300, dtype=torch.float64).log().mul(7).to(dtype)])


def _same_bits(a, b):
    return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(0.5), b.nan_to_num(0.5)) and \
        torch.equal(a.signbit(), b.signbit())


@pytest.mark.parametrize("dtype", DTYPES)
def test_log1mexp_of_one_number_is_the_two_branch_formula_bit_for_bit(dtype):
    """One number on the CPU takes only the branch the comparison picks: the formula's value on the
    same one-element tensor, bit for bit (sign of zero and NaN included), and on the gradient path."""
    with torch.no_grad():
        for x in _probe(dtype):
            one = x.reshape(1)
            assert _same_bits(log1mexp(one), _plain(one)), x
    one = torch.tensor([-0.3], dtype=torch.float64, requires_grad=True)
    out = log1mexp(one)
    out.backward()
    assert torch.equal(out.detach(), _plain(one.detach())) and torch.allclose(one.grad, -1 / torch.expm1(-one.detach()))


@pytest.mark.parametrize("dtype", DTYPES)
def test_log1mexp_nonpositive_is_log1mexp_where_x_is_not_above_0(dtype):
    """Without the guard: the same bits on every input not above 0 (a vector and each number alone)."""
    x = _probe(dtype)
    x = x[~(x > 0)]
    with torch.no_grad():
        assert _same_bits(log1mexp_nonpositive(x), log1mexp(x))
        for v in x[::7]:
            assert _same_bits(log1mexp_nonpositive(v.reshape(1)), log1mexp(v.reshape(1))), v
    tracked = x.to(torch.float64).clone().requires_grad_()
    log1mexp_nonpositive(tracked).nan_to_num(0.0).sum().backward()
    want = x.to(torch.float64).clone().requires_grad_()
    log1mexp(want).nan_to_num(0.0).sum().backward()
    assert _same_bits(tracked.grad, want.grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_safe_log_is_log_with_no_gradient_through_an_exact_zero(dtype):
    """Values ``torch.log``'s bit for bit; gradient ``1 / p``, and 0 (not inf) at ``p = 0``."""
    p = torch.cat([torch.tensor([0.0, 1e-30, 0.25, 1.0], dtype=dtype), torch.rand(200, dtype=dtype)])
    tracked = p.clone().requires_grad_()
    out = safe_log(tracked)
    (grad,) = torch.autograd.grad(out.sum(), tracked)
    assert torch.equal(out.detach(), torch.log(p))
    assert torch.equal(grad, torch.where(p > 0, 1.0 / p.masked_fill(p == 0, 1.0), 0.0))
