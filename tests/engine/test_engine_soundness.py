"""Soundness of the engine (dfol.md, "Soundness"): crisp tables give classical truth; read-once
formulas with any tables give the exact probability of brute-force enumeration."""
import math

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples
import pytest

from engine_helpers import classical, run_engine
from nablafol.ir import Aggregate, AggregateEach, AnyOfGroups, Filter, Pairwise, Predicate, Program, Quantifier, Relate, Top
from nablafol.testing import brute_force, repeated_predicates
from nablafol.testing.strategies import attentions, default_vocabulary, scenes_and_programs


@pytest.mark.slow
@given(scenes_and_programs(crisp=True, max_objects=4))
def test_crisp_tables_give_classical_truth(case):
    answers = run_engine([case.program], [case.tables])
    got = answers.probs()[0, : case.program.n_candidates].tolist()
    want = [1.0 if classical(t, case.tables, case.n_objects) else 0.0 for t in case.program.truths()]
    assert got == want  # exactly 0 or 1, no rounding


@pytest.mark.slow
@given(scenes_and_programs(read_once=True, max_objects=3, enumerable=True))
def test_read_once_formulas_equal_brute_force(case):
    answers = run_engine([case.program], [case.tables])
    got = answers.probs()[0, : case.program.n_candidates].tolist()
    want = brute_force(case.program, case.tables)
    assert np.allclose(got, want, atol=1e-6, rtol=0), (case.program.formula(), got, want)


@pytest.mark.slow
@given(scenes_and_programs(read_once=True, max_objects=3, enumerable=True))
def test_read_once_formulas_equal_brute_force_in_float64(case):
    answers = run_engine([case.program], [case.tables], dtype=torch.float64)
    got = answers.probs()[0, : case.program.n_candidates].tolist()
    assert np.allclose(got, brute_force(case.program, case.tables), atol=1e-12, rtol=0)


def test_read_once_condition_is_needed():
    """A two-hop formula whose inner atom repeats: the engine's product differs from the
    exact probability (the paper's Lemma 3.1 approximation), so the property above is not
    vacuous."""
    chair, red, on = Predicate("chair"), Predicate("red"), Predicate("on", arity=2)
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(chair, Relate.of(on, Quantifier.EXISTS,
                                                                                    Filter(red, Top())))))
    tables = {chair: [1.0, 1.0], red: [0.0, 0.5], on: [[0.0, 1.0], [1.0, 1.0]]}
    assert red in repeated_predicates(program)
    exact = brute_force(program, tables)[0]
    got = run_engine([program], [tables], dtype=torch.float64).probs()[0, 0].item()
    assert exact == 0.5
    assert abs(got - 0.75) < 1e-12  # 1 - (1 - 0.5)(1 - 0.5): red(y1) counted as two coins


@settings(max_examples=examples(25))
@given(st.integers(100, 160), st.floats(1e-3, 0.05))
def test_many_objects_stay_finite_in_float32(n, p):
    """∀ over 100+ objects of small probabilities underflows linear float32; log space keeps it."""
    red = Predicate("red")
    forall = Program.yes_no(Aggregate(Quantifier.FORALL, Filter(red, Top())))
    none = Program.yes_no(Aggregate(Quantifier.NOT_EXISTS, Filter(red, Top())))
    answers = run_engine([forall, none], [{red: np.full(n, p)}])
    assert torch.isfinite(answers.log_probs).all()
    assert math.isclose(answers.log_probs[0, 0].item(), n * math.log(p), rel_tol=1e-5)
    assert math.isclose(answers.log_probs[1, 0].item(), n * math.log1p(-p), rel_tol=1e-5)


@pytest.mark.slow
@given(st.data())
def test_groups_of_truths_equal_the_disjunctions_they_stand_for(data):
    """``AnyOfGroups`` (GQA's ``common``) against its expansion into one ``Or`` per group, on
    tables of distinct probabilities (so that a group cut in the wrong place shows)."""
    unary, binary = default_vocabulary(n_unary=6)
    k = data.draw(st.integers(2, 6))
    values = tuple(data.draw(st.permutations(unary))[:k])
    cuts = sorted(data.draw(st.sets(st.integers(1, k - 1))))
    sizes = tuple(b - a for a, b in zip([0, *cuts], [*cuts, k]))
    q, negate = data.draw(st.sampled_from(list(Quantifier))), data.draw(st.booleans())
    x, y = data.draw(attentions(unary, binary, 2)), data.draw(attentions(unary, binary, 2))
    each = AggregateEach(q, values, x, negate)
    if data.draw(st.booleans()):
        each = Pairwise(each, AggregateEach(q, values, y, negate))
    grouped = AnyOfGroups(each, sizes)
    n, rnd = data.draw(st.integers(1, 3)), data.draw(st.randoms(use_true_random=False))
    tables = {p: np.array([rnd.uniform(0.05, 0.95) for _ in range(n ** p.arity)]).reshape((n,) * p.arity)
              for p in list(unary) + list(binary)}
    labels = tuple(f"g{j}" for j in range(len(sizes)))
    one_node = run_engine([Program((grouped,), labels)], [tables], dtype=torch.float64)
    expanded = run_engine([Program(grouped.truths(), labels)], [tables], dtype=torch.float64)
    assert torch.allclose(one_node.log_probs[0, :len(sizes)], expanded.log_probs[0, :len(sizes)], atol=1e-12, rtol=0)


@pytest.mark.slow
@settings(max_examples=examples(60))
@given(st.data())
def test_long_candidate_lists_equal_their_expansion(data):
    """An open question's ``AggregateEach`` over many predicates (planning numbers more than a few
    at once: ``PlanBuilder.unary_block``), some of them used before in the program or repeated in
    the list, against the same truths written one ``Aggregate`` each, in one batch of both."""
    unary, binary = default_vocabulary(n_unary=24)
    values = tuple(data.draw(st.permutations(unary))[:data.draw(st.integers(9, 24))])
    if data.draw(st.booleans()):  # a repeat
        values += (data.draw(st.sampled_from(values)),)
    k = len(values)
    q, negate = data.draw(st.sampled_from(list(Quantifier))), data.draw(st.booleans())
    x = data.draw(attentions(unary[:6], binary, 2))  # its predicates may be among the values, or not
    each = AggregateEach(q, values, x, negate)
    n, rnd = data.draw(st.integers(1, 3)), data.draw(st.randoms(use_true_random=False))
    tables = {p: np.array([rnd.uniform(0.05, 0.95) for _ in range(n ** p.arity)]).reshape((n,) * p.arity)
              for p in list(unary) + list(binary)}
    labels = tuple(f"v{j}" for j in range(k))
    got = run_engine([Program((each,), labels), Program(each.truths(), labels)], [tables, tables],
                     scenes=np.array([0, 1]), dtype=torch.float64)
    assert torch.equal(got.log_probs[0, :k], got.log_probs[1, :k])
