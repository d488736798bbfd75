"""Exactness (issue 19): which answers are exact, and exact mode where they are not.

* exact mode (``Engine(exact=True)``) equals brute-force enumeration on random programs, read-once
  or not, to 1e-9 in float64, batched over scenes of different sizes, differentiably;
* the ``exact`` flag is never true on an answer of the fast path that differs from brute force;
* past the budget, circuits (knowledge compilation) answer exactly; past theirs too, exact mode
  returns the fast path's answers bit for bit.
"""
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from tiers import examples

from engine_helpers import run_engine
from nablafol.engine import Engine
from nablafol.engine.circuits import CircuitCache
from nablafol.errors import ProgramStructureError
from nablafol.ir import (Aggregate, AllOf, AllSame, AggregateEach, AnyOf, Atom, Conjoin, Filter, Not, Pairwise,
                         Predicate, Program, Quantifier, Relate, Top)
from nablafol.testing import brute_force
from nablafol.testing.strategies import default_vocabulary, programs, scenes_and_programs

CHAIR, RED, ON = Predicate("chair"), Predicate("red"), Predicate("on", arity=2)
#: the two-hop formula of dfol.md: red(y1) is read once per x
HOP = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(CHAIR, Relate.of(ON, Quantifier.EXISTS, Filter(RED, Top())))))
HOP_TABLES = {CHAIR: [1.0, 1.0], RED: [0.0, 0.5], ON: [[0.0, 1.0], [1.0, 1.0]]}


def _candidates(answers, i, program, complement=False):
    values = answers.log_complement if complement else answers.log_probs
    return values[i, : program.n_candidates].exp().tolist()


@pytest.mark.slow
@given(scenes_and_programs(max_objects=3, enumerable=True))
def test_exact_mode_equals_brute_force_on_any_program(case):
    answers = run_engine([case.program], [case.tables], dtype=torch.float64, engine=Engine(exact=True, exact_budget=22))
    want = brute_force(case.program, case.tables)
    assert bool(answers.exact[0])
    assert np.allclose(_candidates(answers, 0, case.program), want, atol=1e-9, rtol=0), case.program.formula()
    assert np.allclose(_candidates(answers, 0, case.program, complement=True), [1 - w for w in want], atol=1e-9,
                       rtol=0)


@pytest.mark.slow
@given(scenes_and_programs(max_objects=3, enumerable=True))
def test_the_flag_is_never_true_on_an_answer_that_differs_from_brute_force(case):
    answers = run_engine([case.program], [case.tables], dtype=torch.float64)
    if bool(answers.exact[0]):
        want = brute_force(case.program, case.tables)
        assert np.allclose(_candidates(answers, 0, case.program), want, atol=1e-9, rtol=0), case.program.formula()


@pytest.mark.slow
@given(scenes_and_programs(max_objects=3, crisp=True))
def test_every_answer_over_crisp_tables_is_exact(case):
    assert bool(run_engine([case.program], [case.tables]).exact[0])


@pytest.mark.slow
@given(scenes_and_programs(max_objects=3, enumerable=True))
def test_read_once_programs_are_exact_over_any_tables(case):
    answers = run_engine([case.program], [case.tables], dtype=torch.float64)
    if case.program.read_once:
        assert bool(answers.exact[0])
        assert np.allclose(_candidates(answers, 0, case.program), brute_force(case.program, case.tables),
                           atol=1e-9, rtol=0)


@pytest.mark.slow
@settings(max_examples=examples(30))
@given(st.lists(scenes_and_programs(max_objects=3, enumerable=True), min_size=2, max_size=5), st.integers(0, 5),
       st.booleans())
def test_a_batch_is_exact_by_shannon_or_circuits_and_the_fast_path_past_both(cases, budget, circuits):
    """Within the budget, Shannon expansion (or a circuit); past it, a circuit; with every
    circuit past its own budget, the fast path's answer, bit for bit, flagged."""
    programs_, tables = [c.program for c in cases], [c.tables for c in cases]
    engine = Engine(exact=True, exact_budget=budget)
    if not circuits:
        engine.circuits = CircuitCache(max_nodes=2)  # no room past the two constants: no circuit compiles
    exact = run_engine(programs_, tables, dtype=torch.float64, engine=engine)
    fast = run_engine(programs_, tables, dtype=torch.float64)
    shared = Engine().shared_atoms(programs_, _oracle(tables))
    for i, c in enumerate(cases):
        assert bool(exact.exact[i]) == (circuits or shared[i] <= budget)
        if bool(exact.exact[i]):
            assert np.allclose(_candidates(exact, i, c.program), brute_force(c.program, c.tables), atol=1e-9, rtol=0)
            assert np.allclose(_candidates(exact, i, c.program, complement=True),
                               [1 - w for w in brute_force(c.program, c.tables)], atol=1e-9, rtol=0)
        else:  # past both budgets: the fast path's answer, bit for bit, flagged
            assert torch.equal(exact.log_probs[i], fast.log_probs[i]) and not bool(fast.exact[i])
        assert bool(fast.exact[i]) == (shared[i] == 0)
    assert torch.equal(exact.candidate_mask, fast.candidate_mask)


def _oracle(tables):
    from nablafol.oracle import TableOracle
    return TableOracle([{k: torch.as_tensor(np.asarray(v), dtype=torch.float64) for k, v in t.items()} for t in tables])


def test_the_two_hop_formula_of_the_spec():
    fast = run_engine([HOP], [HOP_TABLES], dtype=torch.float64)
    exact = run_engine([HOP], [HOP_TABLES], dtype=torch.float64, engine=Engine(exact=True))
    assert fast.probs()[0, 0].item() == pytest.approx(0.75, abs=1e-12) and not bool(fast.exact[0])
    assert exact.probs()[0, 0].item() == pytest.approx(0.5, abs=1e-12) and bool(exact.exact[0])
    assert Engine().shared_atoms([HOP], _oracle([HOP_TABLES])).tolist() == [1]  # red(y1)
    # red(y1) read by one x only: the same formula is exact on the fast path
    sparse = {**HOP_TABLES, ON: [[0.0, 1.0], [0.0, 0.0]]}
    assert bool(run_engine([HOP], [sparse]).exact[0])


@pytest.mark.slow
@settings(max_examples=examples(15))
@given(programs(*default_vocabulary(), max_depth=3), st.integers(1, 3), st.integers(0, 2**31 - 1))
def test_exact_mode_is_differentiable(program, n, seed):
    assume(program.predicates())  # a formula with no predicate is a constant
    gen = torch.Generator().manual_seed(seed)
    unary, binary = default_vocabulary()
    leaves = [(torch.rand((n,) * p.arity, generator=gen, dtype=torch.float64) * 0.9 + 0.05).requires_grad_()
              for p in unary + binary]
    engine = Engine(exact=True, exact_budget=8)  # up to 256 worlds: gradcheck runs the engine once per input entry

    def f(*values):
        from nablafol.oracle import TableOracle
        answers = engine([program], TableOracle([dict(zip(unary + binary, values))]))
        k = program.n_candidates
        return torch.cat([answers.log_probs[0, :k], answers.log_complement[0, :k]]).exp()

    assert torch.autograd.gradcheck(f, tuple(leaves), eps=1e-6, atol=1e-5, rtol=1e-4)


def test_exact_mode_gradients_are_finite_at_exact_zeros_and_ones():
    from nablafol.oracle import TableOracle
    values = {CHAIR: torch.tensor([1.0, 0.5, 0.0]), RED: torch.tensor([0.0, 0.5, 1.0]),
              ON: torch.tensor([[0.0, 1.0, 0.5], [1.0, 1.0, 0.0], [0.5, 0.5, 1.0]])}
    leaves = {p: v.clone().requires_grad_() for p, v in values.items()}
    answers = Engine(exact=True)([HOP], TableOracle([leaves]))
    assert bool(answers.exact[0])
    (answers.log_probs[0, 0] + answers.log_complement[0, 0]).backward()
    assert all(torch.isfinite(v.grad).all() for v in leaves.values())


def test_exact_mode_refuses_a_calibrator_and_a_bad_budget():
    with pytest.raises(ProgramStructureError, match="calibrator"):
        Engine(calibration=lambda a, m, p, s: a, exact=True)
    for budget in (-1, 2.0, 99, None):
        with pytest.raises(ProgramStructureError, match="exact_budget"):
            Engine(exact=True, exact_budget=budget)


def test_calibrated_answers_are_never_flagged_exact():
    answers = run_engine([HOP], [{CHAIR: [1.0, 1.0], RED: [0.0, 1.0], ON: [[0.0, 1.0], [1.0, 1.0]]}],
                         engine=Engine(calibration=lambda a, m, p, s: a))
    assert answers.exact.tolist() == [False]


# --- one-input same (GQA's AllSame) ----------------------------------------------------------

CUP = Predicate("cup")
COLORS = tuple(Predicate(c) for c in ("red", "blue", "green"))
UNUSED = tuple(Predicate(f"unused{k}") for k in range(40))


def _paper_same(values, x):
    return Not(AllOf(AggregateEach(Quantifier.EXISTS, values, x, negate=True)))


@settings(max_examples=examples(40))
@given(st.integers(1, 4), st.integers(0, 2**31 - 1), st.integers(0, 40))
def test_all_same_does_not_depend_on_values_no_object_has(n, seed, extra):
    rnd = np.random.default_rng(seed)
    tables = {CUP: rnd.uniform(0.05, 0.95, n), **{c: rnd.uniform(0.0, 1.0, n) for c in COLORS},
              **{u: np.zeros(n) for u in UNUSED}}
    x = Filter(CUP, Top())
    few, many = (Program.yes_no(AllSame(COLORS + UNUSED[:k], x)) for k in (0, extra))
    answers = run_engine([few, many], [tables], scenes=[0, 0])
    assert torch.equal(answers.log_probs[0], answers.log_probs[1])  # bit for bit
    paper = run_engine([Program.yes_no(_paper_same(COLORS + UNUSED[:k], x)) for k in (0, 40)], [tables], scenes=[0, 0])
    assert paper.probs()[1, 0] > paper.probs()[0, 0]  # the formula it replaces drifted with them


@given(st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_all_same_is_exact_when_its_input_is_crisp_or_one_value_is_possible(n, seed):
    rnd = np.random.default_rng(seed)
    crisp = {CUP: (rnd.random(n) < 0.6).astype(float), **{c: rnd.uniform(0.0, 1.0, n) for c in COLORS}}
    one_value = {CUP: rnd.uniform(0.05, 0.95, n), COLORS[0]: rnd.uniform(0.0, 1.0, n),
                 COLORS[1]: np.zeros(n), COLORS[2]: np.zeros(n)}
    program = Program.yes_no(AllSame(COLORS, Filter(CUP, Top())))
    for tables in (crisp, one_value):
        answers = run_engine([program], [tables], dtype=torch.float64)
        assert bool(answers.exact[0])
        assert answers.probs()[0, 0].item() == pytest.approx(brute_force(program, tables)[0], abs=1e-12)


def test_all_same_of_no_object_is_true_and_prints_its_formula():
    program = Program.yes_no(AllSame(COLORS, Filter(CUP, Top())))
    answers = run_engine([program], [{CUP: [0.0, 0.0], **{c: [0.5, 0.5] for c in COLORS}}])
    assert answers.probs()[0, 0].item() == 1.0 and bool(answers.exact[0])
    assert program.formula() == "∃π ∈ {red, blue, green}: ∄X: cup(X) ∧ ¬π(X)"
    assert not program.read_once and program.repeated_predicates() == {CUP}



@given(st.integers(2, 4), st.integers(0, 2**31 - 1))
def test_all_same_with_exactly_two_possible_values_needs_a_crisp_input(n, seed):
    """Two values some attended object may have: exact only with a crisp input, so the input's
    atoms are counted twice. Here each object's colour is certain (red or blue, both present), so
    a value's own path reads an object's ``cup`` only where the object lacks that colour (once in
    all): the rule alone finds the repetition (the cup of each of them, n atoms)."""
    rnd = np.random.default_rng(seed)
    red = np.array([1.0, 0.0] + list(rnd.integers(0, 2, n - 2)))
    tables = {CUP: rnd.uniform(0.05, 0.95, n), COLORS[0]: red, COLORS[1]: 1.0 - red, COLORS[2]: np.zeros(n)}
    program = Program.yes_no(AllSame(COLORS, Filter(CUP, Top())))
    assert Engine().shared_atoms([program], _oracle([tables])).tolist() == [n]
    fast = run_engine([program], [tables], dtype=torch.float64)
    want = brute_force(program, tables)[0]
    assert not bool(fast.exact[0]) and abs(fast.probs()[0, 0].item() - want) > 1e-6
    exact = run_engine([program], [tables], dtype=torch.float64, engine=Engine(exact=True))
    assert bool(exact.exact[0]) and exact.probs()[0, 0].item() == pytest.approx(want, abs=1e-12)



@pytest.mark.slow
@settings(max_examples=examples(20), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cases=st.lists(scenes_and_programs(max_objects=3, enumerable=True), min_size=2, max_size=4))
def test_worlds_split_over_many_runs_still_equal_brute_force(monkeypatch, cases):
    """Shannon expansion in runs of three worlds (a batch's worlds cut across programs and runs)."""
    monkeypatch.setattr("nablafol.engine.exact.WORLDS_PER_RUN", 3)  # the same for every example
    programs_, tables = [c.program for c in cases], [c.tables for c in cases]
    engine = Engine(exact=True, exact_budget=22)
    engine.circuits = CircuitCache(max_nodes=2)  # no circuit compiles: every answer by expansion
    answers = run_engine(programs_, tables, dtype=torch.float64, engine=engine)
    for i, c in enumerate(cases):
        assert bool(answers.exact[i])
        want = brute_force(c.program, c.tables)
        assert np.allclose(_candidates(answers, i, c.program), want, atol=1e-9, rtol=0), c.program.formula()
        assert np.allclose(_candidates(answers, i, c.program, complement=True), [1 - w for w in want], atol=1e-9,
                           rtol=0)


def test_a_run_of_one_world_reads_its_own_relation_tables(monkeypatch):
    """A run holding one world is answered row by row, over a world table whose rows are numbered
    as the world plan's requests (it once read another's row, or none, and failed)."""
    monkeypatch.setattr("nablafol.engine.exact.WORLDS_PER_RUN", 3)  # runs of three: one holds a single world
    forall = Quantifier.FORALL
    p0, p1, p2, r0 = Predicate("p0"), Predicate("p1"), Predicate("p2"), Predicate("r0", arity=2)
    both = Relate((Atom(r0), Atom(r0)), forall, Top())
    first = Program((Aggregate(forall, Top()), AggregateEach(forall, (p0,), both, False)), ("a", "b"))
    on = Conjoin(Conjoin(Top(), Filter(p0, Top())), Relate((Atom(r0),), forall, Filter(p2, Top())))
    second = Program.yes_no(AnyOf(Pairwise(AggregateEach(forall, (p0, p1), Filter(p0, Top()), True),
                                           AggregateEach(forall, (p0, p1), on, True))))
    tables = [{p0: [0.0, 0.0], p1: [0.0, 0.0], p2: [0.0, 0.0], r0: [[0.5, 0.5], [0.5, 0.5]]},
              {p0: [0.5, 1.0], p1: [0.5, 0.0], p2: [0.5, 0.5], r0: [[0.5, 0.5], [0.5, 0.5]]}]
    engine = Engine(exact=True, exact_budget=22)
    engine.circuits = CircuitCache(max_nodes=2)  # no circuit compiles: every answer by expansion
    answers = run_engine([first, second], tables, dtype=torch.float64, engine=engine)
    for i, (program, table) in enumerate(zip((first, second), tables)):
        assert bool(answers.exact[i])
        want = brute_force(program, table)
        assert np.allclose(_candidates(answers, i, program), want, atol=1e-9, rtol=0)
        assert np.allclose(_candidates(answers, i, program, complement=True), [1 - w for w in want],
                           atol=1e-9, rtol=0)
