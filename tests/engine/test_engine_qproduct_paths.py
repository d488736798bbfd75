"""The ∃/∄ Q-product's eager paths — under autograd or not, a row at a time in reused buffers
or all rows in one block, on every device this machine has (the default block size differs on an
accelerator) — give the same bits and the same dtype (``log_r``'s)."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nablafol.operators import Quantifier, q_product
from nablafol.testing import devices

DTYPES = [(torch.float32, torch.float32), (torch.float64, torch.float64), (torch.float32, torch.float64),
          (torch.float64, torch.float32)]


@pytest.mark.parametrize("device", devices())
@settings(max_examples=60, deadline=None)
@given(rows=st.integers(0, 6), n=st.integers(1, 5), m=st.integers(1, 5), seed=st.integers(0, 2**31 - 1),
       dtypes=st.sampled_from(DTYPES), quantifier=st.sampled_from([Quantifier.EXISTS, Quantifier.NOT_EXISTS]),
       block_elements=st.sampled_from([1, 7, 1 << 18, "auto"]))
def test_the_eager_paths_agree_bit_for_bit(device, rows, n, m, seed, dtypes, quantifier, block_elements):
    g = torch.Generator().manual_seed(seed)
    r_dtype, y_dtype = dtypes
    log_r = torch.rand(rows, n, m, generator=g, dtype=torch.float64).log().to(device, r_dtype)
    log_y = torch.rand(rows, m, generator=g, dtype=torch.float64).log().to(device, y_dtype)
    if rows:  # the exact ends: a certain pair and an impossible one
        log_r[0, 0, 0], log_y[0, 0] = 0.0, 0.0
        log_r[-1, -1, -1] = float("-inf")
    with torch.no_grad():
        plain = q_product(log_r, log_y, None, None, quantifier, block_elements)
    tracked = q_product(log_r.clone().requires_grad_(), log_y.clone().requires_grad_(), None, None, quantifier,
                        block_elements).detach()
    assert plain.dtype == tracked.dtype == r_dtype
    assert torch.equal(plain, tracked)
    strided = log_r.transpose(1, 2).contiguous().transpose(1, 2)  # the same values, not contiguous (a reversed relate)
    with torch.no_grad():  # a row at a time in reused buffers, or all rows in one block
        for r in (log_r, strided):
            assert torch.equal(plain, q_product(r, log_y, None, None, quantifier, 1))
            assert torch.equal(plain, q_product(r, log_y, None, None, quantifier, 1 << 30))


def test_a_relate_read_transposed_sums_as_a_contiguous_one():
    # a reversed relate's table arrives transposed: one block must sum it in the buffers' order
    g = torch.Generator().manual_seed(3)
    log_r, log_y = torch.rand(7, 36, 36, generator=g).log(), torch.rand(7, 36, generator=g).log()
    strided = log_r.transpose(1, 2).contiguous().transpose(1, 2)
    with torch.no_grad():
        buffered = q_product(log_r, log_y, None, None, Quantifier.EXISTS, 36 * 36)  # a row at a time
        for r in (log_r, strided):
            assert torch.equal(buffered, q_product(r, log_y, None, None, Quantifier.EXISTS, 1 << 30))


def test_the_plain_form_sums_a_transposed_table_as_a_contiguous_one():
    """``block_elements=None`` (the form ``torch.compile`` fuses, and the path under autograd with
    ``Engine(compile=True)``): a reversed relate's transposed table sums in the contiguous order."""
    for n in (8, 16, 33):
        g = torch.Generator().manual_seed(n)
        log_r = torch.rand(3, n, n, generator=g).log()
        log_y = torch.rand(3, n, generator=g).log()
        strided = log_r.transpose(1, 2).contiguous().transpose(1, 2)
        for quantifier in Quantifier:
            with torch.no_grad():
                want = q_product(log_r, log_y, None, None, quantifier, None)
                assert torch.equal(want, q_product(strided, log_y, None, None, quantifier, None)), (n, quantifier)
            tracked = q_product(strided.clone().requires_grad_(), log_y, None, None, quantifier, None).detach()
            assert torch.equal(want, tracked), (n, quantifier)
