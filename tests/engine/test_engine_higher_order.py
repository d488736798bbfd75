"""Gradients of every order: gradgradcheck in float64 through every operator (filter, relate under
each quantifier, negation, every aggregate, the truth connectives, exact mode), on one question
(the row-by-row executor) and on a padded batch (the batched executor); second-order gradients
finite at exact 0 and 1."""
import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.engine import Engine
from nablafol.ir import (AllOf, AllSame, Aggregate, AggregateEach, And, AnyOf, AnyOfGroups, Atom, Conjoin, Filter,
                         Neg, Not, Or, Pairwise, Predicate, Program, Quantifier, Relate, Top)
from nablafol.oracle import TableOracle
from nablafol.testing.strategies import default_vocabulary, programs

(P0, P1, P2), (R0, R1) = UNARY, BINARY = default_vocabulary()
E, A, N = Quantifier.EXISTS, Quantifier.FORALL, Quantifier.NOT_EXISTS


def _relate(q, x=Filter(P1, Top())):
    return Program.yes_no(Aggregate(E, Filter(P0, Relate((Atom(R0), Atom(R1, True)), q, x))))


PROGRAMS = {
    "filter": Program.yes_no(Aggregate(E, Filter(P0, Filter(P1, Top())))),
    "relate-forall": _relate(A),
    "relate-exists": _relate(E),
    "relate-not-exists": _relate(N),
    "negation": Program.yes_no(Aggregate(A, Neg(Conjoin(Filter(P0, Top()), Neg(Filter(P1, Top())))))),
    "aggregate-forall": Program.yes_no(Aggregate(A, Filter(P0, Top()))),
    "aggregate-not-exists": Program.yes_no(Aggregate(N, Filter(P0, Top()))),
    "not-and-or": Program.yes_no(Or((Not(Aggregate(E, Filter(P0, Top()))),
                                     And((Aggregate(E, Filter(P1, Top())), Aggregate(A, Filter(P2, Top()))))))),
    "aggregate-each": Program((AggregateEach(E, (P0, P1, P2), Relate.of(R0, E, Top())),), ("a", "b", "c")),
    "pairwise": Program((Pairwise(AggregateEach(E, (P0, P1), Filter(P2, Top())),
                                  AggregateEach(E, (P0, P1), Neg(Filter(P2, Top())))),), ("a", "b")),
    "any-of": Program.yes_no(AnyOf(AggregateEach(A, (P0, P1), Filter(P2, Top()), True))),
    "all-of": Program.yes_no(AllOf(AggregateEach(N, (P0, P1), Filter(P2, Top())))),
    "any-of-groups": Program((AnyOfGroups(AggregateEach(E, (P0, P1, P2), Top()), (1, 2)),), ("x", "y")),
    "all-same": Program.yes_no(AllSame((P0, P1), Filter(P2, Top()))),
}
# the fast path approximates these (an atom of P0 read twice); exact mode conditions on it
REPEATING = {f"exact-{q.value}": Program.yes_no(Aggregate(E, Filter(P0, Relate.of(R0, q, Filter(P0, Top())))))
             for q in Quantifier}


def _tables(sizes, seed):
    gen = torch.Generator().manual_seed(seed)
    return [{p: (torch.rand((n,) * p.arity, generator=gen, dtype=torch.float64) * 0.8 + 0.1).requires_grad_()
             for p in UNARY + BINARY} for n in sizes]


def _gradgradcheck(program, sizes, exact=False, seed=0):
    """gradgradcheck of the program's probabilities over scenes of ``sizes`` objects, one copy of
    the program per scene (several scenes of different sizes: the batched, padded executor)."""
    scenes = _tables(sizes, seed)
    keys = [(b, p) for b in range(len(sizes)) for p in UNARY + BINARY]
    engine = Engine(exact=exact)

    def probabilities(*leaves):
        tables = [{} for _ in sizes]
        for (b, p), leaf in zip(keys, leaves):
            tables[b][p] = leaf
        answers = engine([program] * len(sizes), TableOracle(tables))
        return answers.log_probs.masked_fill(~answers.candidate_mask, 0.0)

    leaves = tuple(scenes[b][p] for b, p in keys)
    return torch.autograd.gradgradcheck(probabilities, leaves, eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("sizes", [pytest.param((3,), id="one-question"),
                                   pytest.param((2, 3), id="padded-batch", marks=pytest.mark.slow)])
def test_second_order_gradients_are_exact(name, sizes):
    assert _gradgradcheck(PROGRAMS[name], sizes)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REPEATING))
def test_second_order_gradients_are_exact_in_exact_mode(name):
    program = REPEATING[name]
    scene = TableOracle(_tables((3,), 0))
    assert not Engine()([program], scene).exact.item()  # the fast path would approximate: worlds are summed
    assert Engine(exact=True)([program], scene).exact.item()
    assert _gradgradcheck(program, (3,), exact=True)
    assert _gradgradcheck(program, (2, 3), exact=True, seed=1)


def test_the_issues_gqa_program_has_second_order_gradients():
    """The friction replayed: ``select: chair->relate: _,to the left of,s [0]->exist: ? [1]`` raised
    ``add(): functions with out=... arguments don't support automatic differentiation`` from the
    Q-product's backward under ``create_graph=True``."""
    from nablafol.compiler import Compiler
    program = Compiler().compile_text("select: chair->relate: _,to the left of,s [0]->exist: ? [1]").program
    chair, left = sorted(program.predicates(), key=lambda p: p.arity)
    gen = torch.Generator().manual_seed(3)
    c = (torch.rand(4, generator=gen, dtype=torch.float64) * 0.8 + 0.1).requires_grad_()
    r = (torch.rand(4, 4, generator=gen, dtype=torch.float64) * 0.8 + 0.1).requires_grad_()

    def p_yes(c, r):
        return Engine()([program], TableOracle([{chair: c, left: r}])).log_probs

    assert torch.autograd.gradgradcheck(p_yes, (c, r))
    # a Hessian-vector product, as a user writes it
    (g,) = torch.autograd.grad(p_yes(c, r).sum(), c, create_graph=True)
    (hv,) = torch.autograd.grad(g @ torch.ones_like(c), c)
    assert torch.isfinite(hv).all() and hv.abs().sum() > 0


@pytest.mark.slow
@settings(max_examples=examples(8), deadline=None)
@given(programs(UNARY, BINARY, max_depth=3), st.integers(1, 3), st.integers(0, 2**31 - 1))
def test_second_order_gradients_of_random_programs(program, n, seed):
    assume(program.predicates())
    assert _gradgradcheck(program, (n,), seed=seed)


@settings(max_examples=examples(30), deadline=None)
@given(programs(UNARY, BINARY, max_depth=4), st.lists(st.integers(1, 4), min_size=1, max_size=2),
       st.integers(0, 2**31 - 1), st.booleans())
def test_second_order_gradients_are_finite_at_exact_zeros_and_ones(program, sizes, seed, exact):
    """Exact 0 (``-inf``) and 1 (``0``) carry padding's and certainty's values through the
    backward of the backward: a ``0 · inf`` there would be NaN."""
    assume(program.predicates())
    rng = np.random.default_rng(seed)
    leaves = [{p: torch.tensor(rng.choice([0.0, 1.0, 0.3, 0.999999], size=(n,) * p.arity), dtype=torch.float64,
                               requires_grad=True) for p in UNARY + BINARY} for n in sizes]
    answers = Engine(exact=exact, exact_budget=6)([program] * len(sizes), TableOracle(leaves))
    flat = [t for tables in leaves for t in tables.values()]
    total = answers.probs().masked_fill(~answers.candidate_mask, 0.0).sum()
    first = torch.autograd.grad(total, flat, create_graph=True, allow_unused=True)
    assert all(g is None or torch.isfinite(g).all() for g in first)
    used = [g for g in first if g is not None and g.requires_grad]
    if used:
        second = torch.autograd.grad(sum(g.sum() for g in used), flat, allow_unused=True)
        assert all(g is None or torch.isfinite(g).all() for g in second), program.formula()
