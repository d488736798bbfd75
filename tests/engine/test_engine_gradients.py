"""Gradients: exact in the open interval (gradcheck, float64), finite everywhere (float32, exact 0/1)."""
import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.engine import Engine
from nablafol.ir import Predicate
from nablafol.oracle import TableOracle
from nablafol.testing.strategies import default_vocabulary, programs

UNARY, BINARY = default_vocabulary()


def _leaf_tables(n, gen, dtype, low=0.05, high=0.95):
    return {p: (torch.rand((n,) * p.arity, generator=gen, dtype=dtype) * (high - low) + low).requires_grad_()
            for p in UNARY + BINARY}


@pytest.mark.slow
@settings(max_examples=examples(20))
@given(programs(UNARY, BINARY, max_depth=3), st.integers(1, 3), st.integers(0, 2**31 - 1))
def test_gradcheck_float64(program, n, seed):
    assume(program.predicates())  # a formula with no predicate is a constant
    gen = torch.Generator().manual_seed(seed)
    tables = _leaf_tables(n, gen, torch.float64)
    preds = list(tables)
    engine = Engine()

    def f(*leaves):
        oracle = TableOracle([dict(zip(preds, leaves))])
        return engine([program], oracle).probs()[0, : program.n_candidates]

    assert torch.autograd.gradcheck(f, tuple(tables.values()), eps=1e-6, atol=1e-5, rtol=1e-4)


@settings(max_examples=examples(40))
@given(programs(UNARY, BINARY, max_depth=4), st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_gradients_are_finite_at_exact_zeros_and_ones(program, n, seed):
    assume(program.predicates())
    rng = np.random.default_rng(seed)
    tables = {p: torch.tensor(rng.choice([0.0, 1.0, 0.3, 0.999999], size=(n,) * p.arity), dtype=torch.float32,
                              requires_grad=True) for p in UNARY + BINARY}
    answers = Engine()([program], TableOracle([tables]))
    probs = answers.probs()[0, : program.n_candidates]
    probs.sum().backward()
    used = set(program.predicates())
    for p, t in tables.items():
        assert (t.grad is not None) == (p in used)
        if t.grad is not None:
            assert torch.isfinite(t.grad).all(), (p, program.formula())


def test_gradient_flows_to_the_tables_of_formula_1():
    """README example: ∃X ∀Y: Chair(X) ∧ Left(X, Y); d p / d Chair(x0) = (1 - a1) * Left(0,0) * Left(0,1)."""
    chair = torch.tensor([0.9, 0.2], requires_grad=True)
    left = torch.tensor([[1.0, 0.8], [0.1, 1.0]], requires_grad=True)
    from nablafol.ir import Aggregate, Filter, Program, Quantifier, Relate, Top
    c, l = Predicate("Chair"), Predicate("Left", arity=2)
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(c, Relate.of(l, Quantifier.FORALL, Top()))))
    p = Engine()([program], TableOracle([{c: chair, l: left}])).probs()[0, 0]
    p.backward()
    a1 = 0.2 * 0.1 * 1.0
    assert chair.grad[0].item() == pytest.approx((1 - a1) * 0.8, rel=1e-6)
    assert left.grad[0, 1].item() == pytest.approx((1 - a1) * 0.9 * 1.0, rel=1e-6)
