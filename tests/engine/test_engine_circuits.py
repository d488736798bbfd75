"""Exact mode by compiled circuits: equal to brute force and to ProbLog, differentiable, cached.

* a circuit compiled from any program and certainty pattern gives every candidate's exact
  probability and complement (brute-force enumeration, hypothesis);
* exact mode answers by circuits past its Shannon budget: equal to brute force on small
  scenes, to ProbLog on every generated GQA question that repeats up to 24 uncertain atoms;
* a warm call (every circuit kept) runs the circuits alone, bit for bit the first call's;
* gradients through the circuit's layers match finite differences (gradcheck, float64);
* a question's circuit is compiled once per certainty pattern and reused.
"""
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings

from engine_helpers import run_engine
from nablafol.engine import Engine
from nablafol.engine.circuits import CircuitCache, TableLayout, compile_circuit
from nablafol.engine.exact import COMPILE_WORLDS, circuit_preferred
from nablafol.ir import Aggregate, Filter, Not, Or, Predicate, Program, Quantifier, Relate, Top
from nablafol.oracle import TableOracle
from nablafol.testing import brute_force, devices
from nablafol.testing.strategies import scenes_and_programs
from tiers import examples

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, home of benchmarks/

CHAIR, RED, ON = Predicate("chair"), Predicate("red"), Predicate("on", arity=2)
#: ∃x chair(x) ∧ ∃y on(x, y) ∧ red(y), or ∀x ¬red(x): every red(y) is read once per x, and again
HOP = Program.yes_no(Or((Aggregate(Quantifier.EXISTS, Filter(CHAIR, Relate.of(ON, Quantifier.EXISTS,
                                                                                 Filter(RED, Top())))),
                         Not(Aggregate(Quantifier.EXISTS, Filter(RED, Top()))))))


def _flat(layout: TableLayout, tables: dict) -> np.ndarray:
    return np.concatenate([np.asarray(tables[p], dtype=np.float64)[(slice(0, layout.n),) * p.arity].reshape(-1)
                           for p in layout.predicates] + [np.zeros(0)])


@settings(max_examples=examples(40), deadline=None)
@given(scenes_and_programs(max_objects=3, max_depth=4))
def test_a_circuit_gives_every_candidates_exact_probability_and_complement(case):
    layout = TableLayout(case.program.predicates(), case.n_objects)
    circuit = compile_circuit(case.program, layout, layout.pattern(case.tables))
    log_p = torch.log(torch.as_tensor(_flat(layout, case.tables)[circuit.positions]))[None]
    got, complement = circuit.evaluate(log_p)
    want = np.array(brute_force(case.program, case.tables, case.n_objects))
    assert np.allclose(got[0].exp().numpy(), want, atol=1e-9, rtol=0), case.program.formula()
    assert np.allclose(complement[0].exp().numpy(), 1 - want, atol=1e-9, rtol=0), case.program.formula()


def _hop_tables(n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {CHAIR: rng.uniform(0.05, 0.95, n), RED: rng.uniform(0.05, 0.95, n),
            ON: np.where(rng.random((n, n)) < 0.5, rng.uniform(0.05, 0.95, (n, n)), 1.0)}


@pytest.mark.parametrize("device", devices())
def test_exact_mode_answers_past_its_budget_by_circuits_on_the_device(device):
    tables = [_hop_tables(n, seed) for seed, n in enumerate((3, 4, 2))]
    fast = run_engine([HOP] * 3, tables, dtype=torch.float64, device=device)
    assert not fast.exact.any()
    exact = run_engine([HOP] * 3, tables, dtype=torch.float64, device=device, engine=Engine(exact=True, exact_budget=0))
    assert exact.log_probs.device.type == torch.device(device).type and exact.exact.all()
    for i, t in enumerate(tables):
        want = brute_force(HOP, t)[0]
        assert exact.probs()[i, 0].item() == pytest.approx(want, abs=1e-9)
        assert exact.log_complement[i, 0].exp().item() == pytest.approx(1 - want, abs=1e-9)


def test_circuit_gradients_match_finite_differences():
    rng = np.random.default_rng(7)  # every atom uncertain: finite differences keep the certainty pattern
    leaves = tuple(torch.as_tensor(rng.uniform(0.05, 0.95, shape)).requires_grad_() for shape in ((2,), (2,), (2, 2)))
    engine = Engine(exact=True, exact_budget=0)  # every repeated atom through the circuit

    def f(chair, red, on):
        answers = engine([HOP], TableOracle([{CHAIR: chair, RED: red, ON: on}]))
        assert bool(answers.exact[0])
        return torch.cat([answers.log_probs[0, :1], answers.log_complement[0, :1]]).exp()

    assert torch.autograd.gradcheck(f, leaves, eps=1e-6, atol=1e-6, rtol=1e-5)
    assert engine.circuits.cache_info().currsize == 1  # the same certainty pattern throughout


def test_a_circuit_is_compiled_once_per_certainty_pattern_and_reused():
    engine = Engine(exact=True, exact_budget=0)
    tables = _hop_tables(4, 3)
    moved = {p: np.where((t > 0) & (t < 1), t * 0.9, t) for p, t in tables.items()}  # same pattern
    certain = {**tables, CHAIR: np.where(np.arange(4) == 0, 1.0, tables[CHAIR])}  # another pattern
    for t in (tables, moved, certain):
        answers = run_engine([HOP], [t], dtype=torch.float64, engine=engine)
        assert answers.probs()[0, 0].item() == pytest.approx(brute_force(HOP, t)[0], abs=1e-9)
    info = engine.circuits.cache_info()
    assert (info.misses, info.hits, info.currsize) == (2, 1, 2)


#: HOP with a focus: the red objects something is on (each object's attention repeats red(y))
FOCUSED = Program.yes_no(HOP.candidates[0], focus=Filter(RED, Relate.of(ON, Quantifier.EXISTS, Filter(RED, Top()))))


def _leaves(tables_per_scene):
    return [{p: torch.as_tensor(np.asarray(t), dtype=torch.float64).requires_grad_() for p, t in t.items()}
            for t in tables_per_scene]


def _call(engine, programs, leaves):
    answers = engine(programs, TableOracle(leaves), np.arange(len(programs)))
    loss = (answers.log_probs.exp() * 3 + answers.log_complement.exp() + answers.focus.exp().nan_to_num()).sum()
    grads = torch.autograd.grad(loss, [t for scene in leaves for t in scene.values()], allow_unused=True)
    return answers, grads


def test_a_warm_call_skips_the_fast_path_and_equals_the_first_call_bit_for_bit(monkeypatch):
    """The second call of the same questions (same programs, sizes and certainty patterns) runs
    only the kept circuits; its answers, focus and gradients are the first call's, bit for bit."""
    tables = [_hop_tables(n, seed) for seed, n in enumerate((3, 4, 3, 2))]  # padded: scenes of 2-4 objects
    programs = [HOP, FOCUSED, FOCUSED, HOP]
    engine = Engine(exact=True, exact_budget=0)
    cold, cold_grads = _call(engine, programs, _leaves(tables))
    monkeypatch.setattr(engine, "execute", lambda *a: pytest.fail("the warm call ran the fast path"))
    warm, warm_grads = _call(engine, programs, _leaves(tables))
    assert warm.exact.all() and cold.exact.all()
    for name in ("log_probs", "log_complement", "focus", "candidate_mask", "object_mask"):
        assert torch.equal(getattr(warm, name), getattr(cold, name)), name
    assert warm.labels == cold.labels
    assert all((a is None and b is None) or torch.equal(a, b) for a, b in zip(warm_grads, cold_grads))
    assert any(g is not None and g.abs().sum() > 0 for g in warm_grads)


def test_a_warm_call_with_read_once_programs_runs_the_fast_path_for_them_alone(monkeypatch):
    """Read-once programs in the batch: the warm call runs the fast path (their answers) but no
    look for repeated atoms; every answer and gradient is the first call's, bit for bit."""
    from nablafol.engine import exact as exact_mode
    read_once = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(RED, Top())))
    tables = [_hop_tables(n, seed) for seed, n in enumerate((3, 4, 2))]
    programs = [HOP, read_once, FOCUSED]
    engine = Engine(exact=True, exact_budget=0)
    cold, cold_grads = _call(engine, programs, _leaves(tables))
    monkeypatch.setattr(exact_mode, "shared_atoms", lambda *a: pytest.fail("the warm call looked for repeated atoms"))
    warm, warm_grads = _call(engine, programs, _leaves(tables))
    assert warm.exact.all() and cold.exact.all()
    for name in ("log_probs", "log_complement", "focus"):
        assert torch.equal(getattr(warm, name), getattr(cold, name)), name
    assert all((a is None and b is None) or torch.equal(a, b) for a, b in zip(warm_grads, cold_grads))
    assert warm.probs()[1, 0].item() == pytest.approx(brute_force(read_once, tables[1])[0], abs=1e-12)


def test_a_call_with_a_new_pattern_or_program_is_not_warm():
    """One question of the batch not kept (another certainty pattern): the whole call takes the
    first call's path, still exact."""
    engine = Engine(exact=True, exact_budget=0)
    tables = _hop_tables(3, 0)
    run_engine([HOP], [tables], dtype=torch.float64, engine=engine)
    calls = []
    real = engine.execute
    engine.execute = lambda *a: calls.append(1) or real(*a)
    other = {**tables, RED: np.array([1.0, *tables[RED][1:]])}
    answers = run_engine([HOP, HOP], [tables, other], dtype=torch.float64, engine=engine)
    assert calls and answers.exact.all()
    assert answers.probs()[1, 0].item() == pytest.approx(brute_force(HOP, other)[0], abs=1e-9)


def test_a_circuits_focus_is_exact_as_shannon_expansions():
    """Exact mode's focus by a circuit equals exact mode's by Shannon expansion (the exact
    attention of each object), not the fast path's."""
    tables = [_hop_tables(n, seed) for seed, n in enumerate((3, 4))]
    by_circuit = run_engine([FOCUSED] * 2, tables, dtype=torch.float64, engine=Engine(exact=True, exact_budget=0))
    shannon = Engine(exact=True, exact_budget=24)
    shannon.circuits = CircuitCache(max_nodes=2)  # no circuit fits: every question expanded
    by_worlds = run_engine([FOCUSED] * 2, tables, dtype=torch.float64, engine=shannon)
    fast = run_engine([FOCUSED] * 2, tables, dtype=torch.float64)
    assert torch.allclose(by_circuit.focus, by_worlds.focus, atol=1e-12, rtol=0)
    assert not torch.allclose(fast.focus, by_worlds.focus, atol=1e-6, rtol=0)


def test_the_cost_model_expands_a_new_question_with_few_worlds_and_compiles_the_others():
    cache, layout = CircuitCache(), TableLayout(HOP.predicates(), 2)
    key = (HOP, 2, layout.pattern(_hop_tables(2, 0)).tobytes())
    other = (HOP, 2, layout.pattern({**_hop_tables(2, 0), RED: [1.0, 0.5]}).tobytes())
    assert not circuit_preferred(cache, key, 1, 1, budget=12)  # new, 2 worlds: expanded
    assert circuit_preferred(cache, key, 1, 1, budget=12)  # asked again: compiled
    assert circuit_preferred(cache, other, 7, 1, budget=12)  # 128 worlds: compiled
    assert circuit_preferred(cache, other, 1, COMPILE_WORLDS, budget=12)  # 2 worlds, for many copies
    assert circuit_preferred(cache, other, 3, 1, budget=2)  # past the budget of Shannon expansion
    third = (HOP, 2, layout.pattern({**_hop_tables(2, 0), CHAIR: [1.0, 0.5]}).tobytes())
    assert third != key
    cache(third)
    assert circuit_preferred(cache, third, 1, 1, budget=12)  # compiled already: reused


def test_a_circuit_past_its_node_budget_leaves_the_fast_path_flagged():
    engine = Engine(exact=True, exact_budget=0)
    engine.circuits = CircuitCache(max_nodes=5)
    tables = _hop_tables(4, 1)
    exact = run_engine([HOP], [tables], dtype=torch.float64, engine=engine)
    fast = run_engine([HOP], [tables], dtype=torch.float64)
    assert not bool(exact.exact[0]) and torch.equal(exact.log_probs, fast.log_probs)
    run_engine([HOP], [tables], dtype=torch.float64, engine=engine)
    assert engine.circuits.cache_info().hits == 1  # the refusal is kept: not compiled again


def _problog_cases(per_bin: int, bins, seed: int):
    pytest.importorskip("problog", reason="ProbLog is in the test extra: pip install -e .[test]")
    from benchmarks.bench_circuits import questions_by_k
    return [c for cases in questions_by_k(np.random.default_rng(seed), per_bin, bins=bins).values() for c in cases]


def _equal_problog(cases):
    from benchmarks.problog_reference import problog_probabilities
    engine = Engine(exact=True)
    for program, tables, n, k in cases:
        answers = run_engine([program], [tables], dtype=torch.float64, engine=engine)
        want = problog_probabilities(program, tables, n)[0]
        assert bool(answers.exact[0]), (k, program.formula())
        assert answers.probs()[0, 0].item() == pytest.approx(want, abs=1e-6), (k, program.formula())


def test_generated_gqa_questions_repeating_up_to_12_atoms_equal_problog():
    cases = _problog_cases(1, ((7, 12),), seed=1)
    assert cases and all(1 << k > COMPILE_WORLDS for *_, k in cases)  # answered by a circuit
    _equal_problog(cases)


@pytest.mark.slow
def test_every_generated_gqa_question_repeating_up_to_24_atoms_is_exact_and_equals_problog():
    """Every question of the generated benchmark, two a bin of k up to 24 (the dense three-way
    joins among them), is answered exactly by exact mode and equals ProbLog to 1e-6."""
    bins = ((1, 4), (5, 8), (9, 12), (13, 16), (17, 20), (21, 24))
    cases = _problog_cases(2, bins, seed=2)
    assert all(any(lo <= k <= hi for *_, k in cases) for lo, hi in bins)  # every bin, the dense joins of 21-24 too
    _equal_problog(cases)


def test_a_circuit_past_its_buffer_runs_in_chunks_with_the_same_values(monkeypatch):
    from nablafol.engine import circuits
    tables = _hop_tables(4, 5)
    layout = TableLayout(FOCUSED.predicates(), 4)
    circuit = compile_circuit(FOCUSED, layout, layout.pattern(tables))
    rng = np.random.default_rng(3)
    log_p = torch.log(torch.as_tensor(rng.uniform(0.05, 0.95, (37, len(circuit.positions)))))
    whole = circuit.evaluate_all(log_p)
    monkeypatch.setattr(circuits, "BUFFER_VALUES", len(circuit) * 5)  # 5 assignments a chunk: 8 chunks
    runs = []
    one = circuits.Circuit._evaluate
    monkeypatch.setattr(circuits.Circuit, "_evaluate", lambda self, x: runs.append(len(x)) or one(self, x))
    chunked = circuit.evaluate_all(log_p)
    assert runs == [5] * 7 + [2]
    assert all(torch.equal(a, b) for a, b in zip(whole, chunked))
    assert whole[0].shape == (37, circuit.candidates + 4)
