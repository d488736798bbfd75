"""Sound bounds on answers that are not exact (``nablafol.engine.bounds``, ``docs/exactness.md``).

* brute-force enumeration is always inside the interval, at every budget, on generated programs
  that are not read-once over probabilistic scenes; the fast path's estimate is inside the
  interval of budget 0 (but for one-input ``same``, whose formula is its own); widths never grow with the budget and are zero once every shared atom
  is expanded;
* ``Engine(bounds=True)`` gives them beside the answers: an exact answer's interval is its value.
"""
import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from engine_helpers import run_engine
from nablafol.engine import Engine
from nablafol.engine.bounds import WORLDS_PER_PASS, program_bounds, shared_atoms
from nablafol.errors import ProbabilityError, ProgramStructureError
from nablafol.ir import Aggregate, AllSame, And, Filter, Not, Predicate, Program, Quantifier, Relate, Top
from nablafol.testing import brute_force
from nablafol.testing.strategies import scenes_and_programs
from tiers import examples

RED, BIG, ON = Predicate("red"), Predicate("big"), Predicate("on", arity=2)
HOP = Program.yes_no(Aggregate(Quantifier.EXISTS, Relate.of(ON, Quantifier.EXISTS, Filter(RED, Top()))))
HOP_TABLES = {RED: [0.0, 0.5], ON: [[0.0, 1.0], [1.0, 1.0]]}
TOL = 1e-9
MOST_EXPANDED = 8  # budgets tried per case: 0 .. min(this, shared atoms)


def _has_all_same(program) -> bool:
    """Whether the program holds a one-input ``same``: the engine's formula for it is not the
    independent combination of its meaning (docs/exactness.md), so its fast path may lie outside."""
    def walk(node):
        return isinstance(node, AllSame) or any(walk(c) for c in node.children())
    return any(walk(c) for c in program.candidates)


def test_the_fast_path_of_one_input_same_may_lie_outside_an_exact_interval():
    # the disjunction's terms share no atom here: the interval is the exact value, and the engine's
    # 1 - e Π(s_v / e) (flagged not exact) is not it
    p0, p1, p2 = (Predicate(f"p{i}") for i in range(3))
    program = Program.yes_no(AllSame((p2, p0), Filter(p1, Top())))
    tables = {p0: [1.0, 0.0], p1: [0.5, 0.5], p2: [0.5, 1.0]}
    lower, upper = program_bounds(program, tables)
    assert lower[0] == upper[0] == pytest.approx(brute_force(program, tables)[0]) == pytest.approx(0.875)
    fast = run_engine([program], [tables], dtype=torch.float64)
    assert fast.probs()[0, 0].item() == pytest.approx(1 - 0.75 * (0.25 / 0.75) * (0.5 / 0.75))
    assert not bool(fast.exact[0])


def _inside(lower, value, upper) -> bool:
    value = np.asarray(value)
    return bool((lower <= value + TOL).all() and (value <= upper + TOL).all())


@settings(max_examples=examples(150))
@given(scenes_and_programs(max_objects=3))
def test_brute_force_is_inside_the_bounds_and_widths_shrink_to_zero_with_the_budget(case):
    assume(not case.program.read_once)
    want = brute_force(case.program, case.tables)
    fast = run_engine([case.program], [case.tables], dtype=torch.float64).probs()[0, : case.program.n_candidates]
    shared = len(shared_atoms(case.program, case.tables))
    widths = []
    for budget in range(min(shared, MOST_EXPANDED) + 1):
        lower, upper = program_bounds(case.program, case.tables, budget=budget)
        assert _inside(lower, want, upper), (budget, lower, want, upper, case.program.formula())
        if budget == 0 and not _has_all_same(case.program):  # the fast path combines as if independent
            assert _inside(lower, fast.numpy(), upper), (lower, fast, upper, case.program.formula())
        widths.append(upper - lower)
    for budget in range(1, len(widths)):
        assert (widths[budget] <= widths[budget - 1] + TOL).all(), (widths, case.program.formula())
    if shared <= MOST_EXPANDED:  # every shared atom expanded: the exact probability
        assert (widths[-1] <= TOL).all() and np.allclose(program_bounds(case.program, case.tables, budget=shared)[0],
                                                         want, atol=TOL, rtol=0)


@pytest.mark.slow
@settings(max_examples=examples(40))
@given(st.lists(scenes_and_programs(max_objects=3), min_size=1, max_size=4), st.integers(0, 3), st.booleans())
def test_the_engine_returns_sound_bounds_beside_its_answers(cases, budget, exact):
    programs, tables = [c.program for c in cases], [c.tables for c in cases]
    answers = run_engine(programs, tables, dtype=torch.float64,
                         engine=Engine(exact=exact, exact_budget=budget, bounds=True))
    lower, upper = answers.bounds
    assert lower.shape == upper.shape == answers.log_probs.shape
    for i, c in enumerate(cases):
        k = c.program.n_candidates
        assert _inside(lower[i, :k].numpy(), brute_force(c.program, c.tables), upper[i, :k].numpy())
        if bool(answers.exact[i]):  # an exact answer's interval is its value
            assert torch.equal(lower[i, :k], upper[i, :k]) and torch.allclose(lower[i, :k], answers.probs()[i, :k])


def test_the_two_hop_formula_is_bounded_then_exact_once_its_shared_atom_is_expanded():
    # red(1) is read by both y: the fast path says 0.75, the exact answer is 0.5
    lower, upper = program_bounds(HOP, HOP_TABLES, budget=0)
    assert (lower.tolist(), upper.tolist()) == ([0.5], [1.0])
    assert shared_atoms(HOP, HOP_TABLES).tolist() == [0]  # the only uncertain atom
    lower, upper = program_bounds(HOP, HOP_TABLES, budget=1)
    assert (lower.tolist(), upper.tolist()) == ([0.5], [0.5])


def test_independent_inputs_combine_exactly_and_shared_ones_by_frechet():
    tables = {RED: [0.6], BIG: [0.3]}
    red, big = (Aggregate(Quantifier.EXISTS, Filter(p, Top())) for p in (RED, BIG))
    lower, upper = program_bounds(Program.yes_no(And((red, big))), tables)
    assert np.allclose([lower[0], upper[0]], [0.18, 0.18])  # disjoint supports: the product
    lower, upper = program_bounds(Program.yes_no(And((red, Not(Not(red))))), tables)
    assert np.allclose([lower[0], upper[0]], [0.2, 0.6])  # red ∧ red: Fréchet, [0.6 + 0.6 - 1, 0.6]


def test_many_worlds_are_bounded_in_passes():
    # more shared atoms than one pass of worlds holds: the passes' mixtures add up to the exact value
    n = int(np.log2(WORLDS_PER_PASS)) + 1
    x = Filter(RED, Top())
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Relate.of(ON, Quantifier.FORALL, x)))
    tables = {RED: np.linspace(0.2, 0.8, n), ON: np.ones((n, n))}
    lower, upper = program_bounds(program, tables, budget=n)
    assert np.allclose(lower, brute_force(program, tables), atol=TOL) and np.allclose(lower, upper, atol=TOL)


def test_bounds_over_scenes_of_different_sizes_read_each_scene_s_own_objects():
    small = {RED: [0.0, 0.5], ON: [[0.0, 1.0], [1.0, 1.0]]}
    large = {RED: [0.5, 0.5, 0.9], ON: [[0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.3, 1.0, 1.0]]}
    answers = run_engine([HOP, HOP], [small, large], dtype=torch.float64, engine=Engine(bounds=True, exact_budget=0))
    for i, tables in enumerate((small, large)):
        lower, upper = program_bounds(HOP, tables)
        assert answers.bounds[0][i, 0].item() == pytest.approx(lower[0]) and answers.bounds[1][i, 0].item() == \
            pytest.approx(upper[0])


def test_bounds_with_a_calibrator_a_bad_budget_or_bad_tables_are_refused():
    with pytest.raises(ProgramStructureError, match="calibrator"):
        Engine(calibration=lambda log_a, *_: log_a, bounds=True)
    with pytest.raises(ProgramStructureError, match="budget"):
        program_bounds(HOP, HOP_TABLES, budget=-1)
    with pytest.raises(ProgramStructureError, match="no table for predicate 'on'"):
        program_bounds(HOP, {RED: [0.5, 0.5]})
    with pytest.raises(ProbabilityError, match=r"'red' has probability nan at objects \(1,\), outside \[0, 1\]"):
        program_bounds(HOP, {**HOP_TABLES, RED: [0.5, float("nan")]})
