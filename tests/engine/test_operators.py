"""The Q-product against its definition (paper, eq. 9 and 12), on every path ``q_product`` takes.

``C_i = A_q(R_{i,·} ⊙ α_Y)``: ``∃`` is ``1 - Π_j (1 - r_ij y_j)``, ``∄`` is ``Π_j (1 - r_ij y_j)``,
``∀`` is ``Π_j r_ij y_j``, computed here by hand in float64 (the paths are compared with each
other in ``test_engine_qproduct_paths.py``; these tests compare them with the formula). A column
that ``mask_y`` marks as padding is no column at all: the answer is that of the table without it.
"""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.operators import Quantifier, q_product, q_product_fused

BLOCKS = [1, 7, 1 << 18, None, "auto"]


def by_definition(r: np.ndarray, y: np.ndarray, quantifier: Quantifier) -> np.ndarray:
    """``(R, N)`` probabilities from ``r`` ``(R, N, M)`` and ``y`` ``(R, M)``, as the paper writes them."""
    terms = r * y[:, None, :]
    if quantifier is Quantifier.FORALL:
        return terms.prod(-1)
    none_true = (1.0 - terms).prod(-1)
    return none_true if quantifier is Quantifier.NOT_EXISTS else 1.0 - none_true


def every_path(log_r, log_y, mask_x, mask_y, quantifier):
    """``(path, probabilities)`` of each way of computing the Q-product: each block size, under
    autograd or not, and the fused form."""
    for block in BLOCKS:
        with torch.no_grad():
            yield f"block {block}", q_product(log_r, log_y, mask_x, mask_y, quantifier, block).exp()
        tracked = q_product(log_r.clone().requires_grad_(), log_y.clone().requires_grad_(), mask_x, mask_y,
                            quantifier, block)
        yield f"block {block}, tracked", tracked.detach().exp()
    with torch.no_grad():
        yield "fused", q_product_fused(log_r, log_y, mask_x, mask_y, quantifier).exp()


@pytest.mark.parametrize("m", [1, 2, 3, 7, 40])
def test_entries_of_one_half_give_the_closed_forms(m):
    # r_ij = y_j = 1/2: each term is 1/4, so ∃ = 1 - 0.75^m, ∄ = 0.75^m, ∀ = 0.25^m
    log_r = torch.full((3, 5, m), 0.5, dtype=torch.float64).log()
    log_y = torch.full((3, m), 0.5, dtype=torch.float64).log()
    want = {Quantifier.EXISTS: 1 - 0.75 ** m, Quantifier.NOT_EXISTS: 0.75 ** m, Quantifier.FORALL: 0.25 ** m}
    for quantifier, p in want.items():
        for path, got in every_path(log_r, log_y, None, None, quantifier):
            assert torch.allclose(got, torch.full((3, 5), p, dtype=torch.float64), rtol=1e-12, atol=0), \
                (quantifier, path, got[0, 0].item(), p)


PROBABILITIES = st.sampled_from([0.0, 1.0, 0.5]) | st.floats(0.0, 1.0)


@settings(max_examples=examples(60), deadline=None)
@given(rows=st.integers(1, 4), n=st.integers(1, 4), m=st.integers(1, 5), data=st.data(),
       quantifier=st.sampled_from(list(Quantifier)))
def test_the_q_product_is_its_definition(rows, n, m, data, quantifier):
    r = np.array(data.draw(st.lists(PROBABILITIES, min_size=rows * n * m, max_size=rows * n * m))).reshape(rows, n, m)
    y = np.array(data.draw(st.lists(PROBABILITIES, min_size=rows * m, max_size=rows * m))).reshape(rows, m)
    want = torch.as_tensor(by_definition(r, y, quantifier))
    log_r, log_y = torch.as_tensor(r).log(), torch.as_tensor(y).log()
    for path, got in every_path(log_r, log_y, None, None, quantifier):
        assert torch.allclose(got, want, rtol=1e-9, atol=1e-12), (quantifier, path, got, want)


@settings(max_examples=examples(60), deadline=None)
@given(rows=st.integers(1, 4), n=st.integers(1, 4), m=st.integers(1, 6), seed=st.integers(0, 2**31 - 1),
       quantifier=st.sampled_from(list(Quantifier)), padding=st.sampled_from(["certain", "random"]))
def test_a_column_masked_in_mask_y_is_the_same_as_removing_it(rows, n, m, seed, quantifier, padding):
    """Row by row, the columns ``mask_y`` marks as padding (whatever the tables hold there:
    certain pairs and objects, or any finite value) change nothing: the answer is the Q-product
    of the table without them. ``mask_x``'s padding answers ``log 0``."""
    g = torch.Generator().manual_seed(seed)
    log_r = torch.rand(rows, n, m, generator=g, dtype=torch.float64).log()
    log_y = torch.rand(rows, m, generator=g, dtype=torch.float64).log()
    mask_y = torch.rand(rows, m, generator=g) < 0.6
    mask_x = torch.rand(rows, n, generator=g) < 0.8
    if padding == "certain":  # the padding's values that would change the answer most
        log_r = log_r.masked_fill(~mask_y[:, None, :], 0.0)
        log_y = log_y.masked_fill(~mask_y, 0.0)
    else:
        log_r = torch.where(mask_y[:, None, :], log_r, torch.randn(rows, n, m, generator=g, dtype=torch.float64))
        log_y = torch.where(mask_y, log_y, torch.randn(rows, m, generator=g, dtype=torch.float64))
    want = torch.zeros(rows, n, dtype=torch.float64)
    for i in range(rows):
        kept = mask_y[i]
        with torch.no_grad():
            want[i] = q_product(log_r[i:i + 1][:, :, kept], log_y[i:i + 1][:, kept], None, None, quantifier,
                                None).exp()[0]
    want = want.masked_fill(~mask_x, 0.0)
    for path, got in every_path(log_r, log_y, mask_x, mask_y, quantifier):
        assert torch.allclose(got, want, rtol=1e-12, atol=1e-15), (quantifier, path, got, want)
    # and by the definition, over the kept columns alone
    for i in range(rows):
        kept = mask_y[i].numpy()
        r, y = log_r[i:i + 1, :, kept].exp().numpy(), log_y[i:i + 1, kept].exp().numpy()
        assert np.allclose(want[i].numpy(), by_definition(r, y, quantifier)[0] * mask_x[i].numpy(), rtol=1e-9,
                           atol=1e-12)
