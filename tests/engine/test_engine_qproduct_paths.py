"""The ∃/∄ Q-product's eager paths — under autograd or not, a row at a time in reused buffers
or all rows in one block, on every device this machine has (the default block size differs on an
accelerator) — give the same bits and the same dtype (``log_r``'s)."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.operators import Quantifier, q_product
from nablafol.testing import devices

DTYPES = [(torch.float32, torch.float32), (torch.float64, torch.float64), (torch.float32, torch.float64),
          (torch.float64, torch.float32)]


@pytest.mark.parametrize("device", devices())
@settings(max_examples=examples(60), deadline=None)
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


def _bits(x):
    return x.view(torch.int32 if x.dtype == torch.float32 else torch.int64)


@settings(max_examples=examples(80), deadline=None)
@given(rows=st.integers(1, 6), n=st.integers(1, 6), m=st.integers(1, 9), seed=st.integers(0, 2**31 - 1),
       live=st.sampled_from([0.0, 0.05, 0.15, 0.5, 1.0]), y_live=st.sampled_from([0.3, 1.0]),
       dtypes=st.sampled_from(DTYPES), quantifier=st.sampled_from([Quantifier.EXISTS, Quantifier.NOT_EXISTS]),
       block_elements=st.sampled_from([1, 7, 1 << 18]), nan=st.booleans(), tracked=st.booleans())
def test_mostly_impossible_terms_are_summed_from_the_others_to_the_dense_passes_bits(
        rows, n, m, seed, live, y_live, dtypes, quantifier, block_elements, nan, tracked):
    """A block whose terms are mostly -inf (few related pairs, a narrow attention) computes only its
    other terms (``operators._sparse_log1mexp``): the sums are the dense passes' to the bit (the
    sign of a zero, a NaN's bits), under autograd's forward too."""
    import nablafol.operators as ops
    g = torch.Generator().manual_seed(seed)
    r_dtype, y_dtype = dtypes
    log_r = torch.rand(rows, n, m, generator=g, dtype=torch.float64).log()
    log_r[torch.rand(rows, n, m, generator=g) >= live] = float("-inf")
    log_y = torch.rand(rows, m, generator=g, dtype=torch.float64).log()
    log_y[torch.rand(rows, m, generator=g) >= y_live] = float("-inf")
    if nan:  # not a valid table, but the paths must still agree
        log_r[0, 0, 0] = float("nan")
    log_r[-1, -1, 0], log_y[-1, 0] = 0.0, 0.0  # a certain pair
    log_r, log_y = log_r.to(r_dtype), log_y.to(y_dtype)

    def run():
        if tracked:
            return q_product(log_r.clone().requires_grad_(), log_y, None, None, quantifier, block_elements).detach()
        with torch.no_grad():
            return q_product(log_r, log_y, None, None, quantifier, block_elements)

    taken = []
    sparse_terms = ops._sparse_log1mexp
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ops, "_crisp_none_true", lambda *a: None)  # a crisp table's own path aside
        patch.setattr(ops, "SPARSE_SHARE", -1.0)  # every block dense
        dense = run()
        patch.setattr(ops, "SPARSE_SHARE", 0.15)
        patch.setattr(ops, "SPARSE_MIN_TERMS", 1)  # every block looked at, however small
        patch.setattr(ops, "_sparse_log1mexp",
                      lambda *a, **k: taken.append(sparse_terms(*a, **k)) or taken[-1])
        sparse = run()
    assert sparse.dtype == dense.dtype == r_dtype
    assert torch.equal(_bits(sparse), _bits(dense))
    if live == 0.0 and y_live == 1.0 and not nan and m * n > 10:  # one finite term in the last block, none before
        assert taken and all(t is not None for t in taken)  # so the sparse sums were what was compared


def test_a_dense_block_is_left_to_the_passes_after_one_look():
    import nablafol.operators as ops
    g = torch.Generator().manual_seed(5)
    t = torch.rand(40, 30, 30, generator=g).log()
    def sparse(t):
        return ops._sparse_log1mexp(t, out=None, guard=False)
    assert t.numel() >= ops.SPARSE_MIN_TERMS and sparse(t) is None
    t[:, :, 3:] = float("-inf")  # a tenth of the terms finite: summed from them alone
    assert sparse(t) is not None
    assert sparse(t[:2]) is None  # too small a block to be worth the look


@settings(max_examples=examples(80), deadline=None)
@given(rows=st.integers(1, 7), n=st.integers(1, 9), seed=st.integers(0, 2**31 - 1),
       live=st.sampled_from([0.0, 0.02, 0.15, 0.5, 1.0]), dtype=st.sampled_from([torch.float32, torch.float64]),
       quantifier=st.sampled_from(list(Quantifier)), padded=st.booleans(),
       odd=st.sampled_from([None, "nan", "above0"]))
def test_an_aggregation_of_mostly_impossible_terms_sums_the_dense_passes_bits(
        rows, n, seed, live, dtype, quantifier, padded, odd):
    """``aggregate`` and ``aggregate_pair`` over rows that are mostly -inf (an open question's
    candidate rows over a scene graph) compute ``log(1 - a)`` only where ``a > 0``: the results
    are the dense passes' to the bit (the sign of a zero, a NaN's bits, the guard against
    round-off above 0, padding), and the sparse path is taken when it may be."""
    import nablafol.operators as ops
    from nablafol.numerics import log1mexp
    from nablafol.operators import aggregate, aggregate_pair
    g = torch.Generator().manual_seed(seed)
    log_a = torch.rand(rows, n, generator=g, dtype=torch.float64).log()
    log_a[torch.rand(rows, n, generator=g) >= live] = float("-inf")
    log_a[-1, 0] = 0.0  # a certain object
    if odd == "nan":  # not a valid attention, but the paths must still agree
        log_a[0, -1] = float("nan")
    elif odd == "above0":  # round-off above log 1: the guard's case
        log_a[0, -1] = 1e-7
    log_a = log_a.to(dtype)
    mask = (torch.rand(rows, n, generator=g) < 0.8) if padded else None

    def run():
        return [aggregate(log_a, mask, quantifier), *aggregate_pair(log_a, mask, quantifier)]

    looked = []
    sparse_log1mexp = ops._sparse_log1mexp
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ops, "SPARSE_SHARE", -1.0)  # every tensor dense
        dense = run()
        patch.setattr(ops, "SPARSE_SHARE", 1.0)  # every tensor from its finite terms, however many
        patch.setattr(ops, "SPARSE_MIN_TERMS", 1)  # ... and however small
        patch.setattr(ops, "_sparse_log1mexp", lambda *a, **k: looked.append(sparse_log1mexp(*a, **k)) or looked[-1])
        sparse = run()
    for d, s in zip(dense, sparse):
        assert s.dtype == d.dtype == dtype and s.shape == d.shape
        assert torch.equal(_bits(s), _bits(d))
    if quantifier is not Quantifier.FORALL:
        assert len(looked) == 2 and all(t is not None for t in looked)  # the sparse terms were what was compared
        # the terms themselves, before any sum: log1mexp's to the bit (-0.0 where a = 0)
        assert torch.equal(_bits(looked[0]), _bits(log1mexp(log_a)))


def test_an_aggregation_of_one_number_or_one_row_takes_either_path_alike():
    """A 0-dim or 1-D input (a user's own call): no first row to look at, the same bits."""
    import nablafol.operators as ops
    for log_a in (torch.tensor(-0.5), torch.tensor([float("-inf"), -0.25, float("-inf")])):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ops, "SPARSE_SHARE", -1.0)
            dense = ops.aggregate(log_a, None, Quantifier.EXISTS)
            patch.setattr(ops, "SPARSE_SHARE", 1.0)
            patch.setattr(ops, "SPARSE_MIN_TERMS", 1)
            assert ops._sparse_log1mexp(log_a, out=None, guard=True) is not None
            assert torch.equal(_bits(ops.aggregate(log_a, None, Quantifier.EXISTS)), _bits(dense))


def test_an_aggregation_under_autograd_keeps_its_dense_gradient():
    """Where a gradient is asked for, the dense passes run (their backward is log1mexp's)."""
    import nablafol.operators as ops
    log_a = torch.full((4, 8192), float("-inf"))
    log_a[:, 0] = -0.5
    log_a.requires_grad_()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ops, "_sparse_log1mexp", lambda *a, **k: pytest.fail("the sparse path under autograd"))
        none_true = ops.aggregate(log_a, None, Quantifier.NOT_EXISTS)
    none_true.sum().backward()
    assert torch.allclose(log_a.grad[:, 0], torch.full((4,), -1 / torch.expm1(torch.tensor(0.5))))
    assert torch.equal(log_a.grad[:, 1:], torch.zeros(4, 8191))
    with torch.no_grad():  # the same tensor without a gradient: from its finite terms
        assert ops._sparse_log1mexp(log_a, out=None, guard=True) is not None


@pytest.mark.parametrize("quantifier", [Quantifier.EXISTS, Quantifier.NOT_EXISTS])
def test_no_rows_under_autograd_give_empty_answers_and_gradients(quantifier):
    """A batch of no relate rows (R = 0) whose inputs require grad: the blocks step through none,
    forward and backward (a block of 0 rows made the backward's range() fail)."""
    log_r = torch.zeros((0, 3, 4), requires_grad=True)
    log_y = torch.zeros((0, 4), requires_grad=True)
    out = q_product(log_r, log_y, None, None, quantifier)
    assert out.shape == (0, 3)
    out.sum().backward()
    assert log_r.grad.shape == (0, 3, 4) and log_y.grad.shape == (0, 4)


@settings(max_examples=examples(100), deadline=None)
@given(rows=st.integers(1, 6), n=st.integers(1, 6), m=st.integers(1, 9), seed=st.integers(0, 2**31 - 1),
       live=st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]), dtypes=st.sampled_from(DTYPES),
       quantifier=st.sampled_from(list(Quantifier)), block_elements=st.sampled_from([1, 7, 1 << 18]),
       y_ends=st.lists(st.sampled_from([0.0, -0.0, float("-inf"), float("nan")]), max_size=3),
       negative_zero=st.booleans(), spoiled=st.booleans(), masked=st.booleans(), strided=st.booleans(),
       tracked=st.booleans())
def test_a_crisp_table_sums_to_the_dense_passes_bits(rows, n, m, seed, live, dtypes, quantifier, block_elements,
                                                      y_ends, negative_zero, spoiled, masked, strided, tracked):
    """A relation whose entries are all 0 or -inf (``to_the_left_of`` from coordinates, a scene
    graph) takes its own path, with no transcendental pass over the table: the answers are the
    dense passes' to the bit (the sign of a zero, a NaN's bits, a certain object's -inf), with
    masks, under autograd's forward too; one entry in between sends the table back to them."""
    import nablafol.operators as ops
    g = torch.Generator().manual_seed(seed)
    r_dtype, y_dtype = dtypes
    log_r = torch.where(torch.rand(rows, n, m, generator=g) < live, 0.0, float("-inf")).double()
    if negative_zero:  # -0.0 == 0: a true entry too
        log_r[0, 0, 0] = -0.0
    if spoiled:
        log_r[-1, -1, -1] = -0.25
    log_y = torch.rand(rows, m, generator=g, dtype=torch.float64).log()
    for value in y_ends:  # the exact ends of an attention (and a NaN: the paths must still agree)
        log_y[torch.randint(rows, (1,), generator=g), torch.randint(m, (1,), generator=g)] = value
    log_r, log_y = log_r.to(r_dtype), log_y.to(y_dtype)
    if strided:  # the same values, not contiguous (a reversed relate)
        log_r = log_r.transpose(1, 2).contiguous().transpose(1, 2)
    mask_x = torch.rand(rows, n, generator=g) < 0.8 if masked else None
    mask_y = torch.rand(rows, m, generator=g) < 0.8 if masked else None

    def run():
        if tracked:
            return q_product(log_r.clone().requires_grad_(), log_y, mask_x, mask_y, quantifier,
                             block_elements).detach()
        with torch.no_grad():
            return q_product(log_r, log_y, mask_x, mask_y, quantifier, block_elements)

    taken = []
    crisp = ops._crisp_none_true
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ops, "SPARSE_SHARE", -1.0)  # however few pairs a table relates
        patch.setattr(ops, "SPARSE_MIN_TERMS", 1)  # ... and however small it is
        patch.setattr(ops, "_crisp_none_true", lambda *a: None)  # every table by the dense passes
        dense = run()
        patch.setattr(ops, "_crisp_none_true", lambda *a: taken.append(crisp(*a)) or taken[-1])
        got = run()
    assert got.dtype == dense.dtype
    assert torch.equal(_bits(got), _bits(dense))
    if quantifier is not Quantifier.FORALL and spoiled:  # the spoiled block refused
        assert not taken or taken[-1] is None
    elif quantifier is not Quantifier.FORALL and not any(v != v for v in y_ends):  # the crisp sums compared
        assert taken and all(t is not None for t in taken)
