"""A node kind added in one module (this one): a generalized quantifier ``Most``, its lowering and
its operator registered here, and nowhere else. The engine, both executors, the exactness analysis
and the circuits' grounding run it; its answers equal its brute-force meaning wherever the engine
says they are exact, and always in exact mode, by Shannon expansion or by a compiled circuit."""
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.engine import Engine, execution
from nablafol.engine.circuits import TableLayout, compile_circuit
from nablafol.engine.lowering import CERTAIN, OPEN, Operator, register_lowering
from nablafol.engine.rowwise import steps_of
from nablafol.ir import Attention, Conjoin, Filter, Neg, Program, Quantifier, Relate, Top, Truth
from nablafol.oracle import TableOracle
from nablafol.testing.strategies import attentions, default_vocabulary, tables_for


@dataclass(frozen=True, eq=True)
class Most(Truth):
    """More than half of the objects satisfy the attention's formula."""

    input: Attention

    def children(self):
        return (self.input,)

    def term(self) -> str:
        return f"Most({self.input.term()})"


class _Most(Operator):
    vector = False

    def run(self, rows):
        """``P(#{x: F(x)} > n / 2)`` for independent ``F(x)``: the count's distribution, object by object."""
        p, mask = rows.vector("vin").exp(), rows.objects()
        if mask is not None:
            p = p * mask
        g, n = p.shape
        valid = p.new_full((g,), n) if mask is None else mask.sum(1).to(p.dtype)
        dist = torch.zeros((g, n + 1), dtype=p.dtype, device=p.device)
        dist[:, 0] = 1
        for i in range(n):
            dist = torch.cat([dist[:, :1] * (1 - p[:, i:i + 1]), dist[:, 1:] * (1 - p[:, i:i + 1])
                              + dist[:, :-1] * p[:, i:i + 1]], 1)
        more = torch.arange(n + 1, device=p.device)[None, :] > valid[:, None] / 2
        yes = (dist * more).sum(1)
        return torch.stack([yes.log(), (dist * ~more).sum(1).log()], -1)

    def kleene(self, rows):  # a majority possible, then one certain: OPEN, then CERTAIN
        x, valid = rows.vector("vin"), rows.objects()
        half = valid.sum(-1) / 2
        possible, certain = ((x >= OPEN) & valid).sum(-1) > half, ((x == CERTAIN) & valid).sum(-1) > half
        return possible.to(torch.int8) + certain

    def count_down(self, rows, counts):
        rows.add_vector("vin", counts[:, None] * rows.objects())  # each object's formula once

    def ground(self, rows):
        """Some majority of the objects all satisfy the formula (``n // 2 + 1`` of them suffice)."""
        formulas = rows.vector("vin")
        return rows.any([rows.all(chosen) for chosen in combinations(formulas, len(formulas) // 2 + 1)])


MOST = _Most("most")


@register_lowering(Most)
def _lower_most(node: Most, plan) -> int:
    return plan.scalar(MOST, attention=plan.row(node.input))


def _crisp(node, world: dict, n: int) -> np.ndarray:
    """The attention's truth per object in one world (predicate -> 0/1 table)."""
    if isinstance(node, Top):
        return np.ones(n, dtype=bool)
    if isinstance(node, Filter):
        return world[node.predicate] & _crisp(node.input, world, n)
    if isinstance(node, Neg):
        return ~_crisp(node.input, world, n)
    if isinstance(node, Conjoin):
        return _crisp(node.left, world, n) & _crisp(node.right, world, n)
    assert isinstance(node, Relate)
    rel = np.ones((n, n), dtype=bool)
    for a in node.atoms:
        rel &= world[a.predicate].T if a.reverse else world[a.predicate]
    both = rel & _crisp(node.input, world, n)[None, :]
    q = node.quantifier
    return both.any(1) if q is Quantifier.EXISTS else both.all(1) if q is Quantifier.FORALL else ~both.any(1)


def _brute_force_most(node: Most, tables: dict, n: int) -> float:
    atoms = [(p, i) for p, t in tables.items() for i in np.ndindex(t.shape) if 0 < t[i] < 1]
    total = 0.0
    for bits in range(1 << len(atoms)):
        world = {p: t >= 1 for p, t in tables.items()}
        weight = 1.0
        for b, (p, i) in enumerate(atoms):
            on = bool(bits >> b & 1)
            world[p][i] = on
            weight *= tables[p][i] if on else 1 - tables[p][i]
        if _crisp(node.input, world, n).sum() > n / 2:
            total += weight
    return total


@st.composite
def most_cases(draw):
    unary, binary = default_vocabulary(2, 1)
    node = Most(draw(attentions(unary, binary, max_depth=3)))
    n = draw(st.integers(1, 3))
    tables = draw(tables_for(unary + binary, n))
    return Program.yes_no(node), {p: np.asarray(t) for p, t in tables.items()}, n


@settings(max_examples=examples(60), deadline=None)
@given(most_cases())
def test_most_equals_its_meaning_where_exact_and_in_exact_mode(case):
    program, tables, n = case
    oracle = TableOracle([{p: torch.as_tensor(t) for p, t in tables.items()}])
    want = _brute_force_most(program.candidates[0], tables, n)
    fast = Engine()([program], oracle)
    if bool(fast.exact[0]):
        assert abs(fast.probs().item() - want) < 1e-9
    exact = Engine(exact=True)([program], oracle)
    assert bool(exact.exact[0]) and abs(exact.probs().item() - want) < 1e-9


@settings(max_examples=examples(40), deadline=None)
@given(most_cases())
def test_most_runs_row_by_row_as_batched(case):
    program, tables, _ = case
    oracle = TableOracle([{p: torch.as_tensor(t) for p, t in tables.items()}])
    engine = Engine()
    assert steps_of(engine.plan([program])) is not None
    alone, batched = engine([program], oracle), engine([program, program], oracle, scenes=[0, 0])
    assert torch.equal(alone.log_probs[0], batched.log_probs[0])
    assert torch.equal(alone.log_complement[0], batched.log_complement[0])


def test_the_analysis_sees_most_read_each_object_once():
    unary, binary = default_vocabulary(1, 1)
    red, near = unary[0], binary[0]
    tables = {red: np.array([0.5, 0.5, 0.5]), near: np.ones((3, 3))}
    oracle = TableOracle([{p: torch.as_tensor(t) for p, t in tables.items()}])
    once = Program.yes_no(Most(Filter(red, Top())))
    hop = Program.yes_no(Most(Relate.of(near, Quantifier.EXISTS, Filter(red, Top()))))  # red(y) read per x
    assert Engine()([once, hop], oracle).exact.tolist() == [True, False]
    assert Engine()([once], oracle).probs().item() == 0.5  # two or three of three reds
    for program in (once, hop):
        assert abs(Engine(exact=True)([program], oracle).probs().item()
                   - _brute_force_most(program.candidates[0], tables, 3)) < 1e-12


def test_most_runs_on_the_batched_path_when_scenes_are_padded(monkeypatch):
    unary, _ = default_vocabulary(1, 0)
    red = unary[0]
    oracle = TableOracle([{red: torch.tensor([0.9, 0.9, 0.0])}, {red: torch.tensor([0.9, 0.2])}])
    monkeypatch.setattr(execution, "steps_of", lambda plan: None)
    got = Engine()([Program.yes_no(Most(Filter(red, Top())))] * 2, oracle).probs()[:, 0].tolist()
    assert np.allclose(got, [0.81, 0.9 * 0.2])  # two of three, then both of two


@settings(max_examples=examples(40), deadline=None)
@given(most_cases())
def test_most_compiles_into_a_circuit_of_its_meaning(case):
    program, tables, n = case
    layout = TableLayout(program.predicates(), n)
    circuit = compile_circuit(program, layout, layout.pattern(tables))
    flat = np.concatenate([tables[p].reshape(-1) for p in layout.predicates] + [np.zeros(0)])
    log_p, log_not = circuit.evaluate(torch.log(torch.as_tensor(flat[circuit.positions]))[None])
    want = _brute_force_most(program.candidates[0], tables, n)
    assert abs(log_p.exp().item() - want) < 1e-9 and abs(log_not.exp().item() - (1 - want)) < 1e-9


def test_exact_mode_answers_most_by_its_circuit():
    unary, binary = default_vocabulary(1, 1)
    red, near = unary[0], binary[0]
    tables = {red: np.array([0.5, 0.3, 0.8]), near: np.array([[1.0, 0.4, 0.0], [1.0, 1.0, 0.7], [0.2, 1.0, 1.0]])}
    oracle = TableOracle([{p: torch.as_tensor(t) for p, t in tables.items()}])
    hop = Program.yes_no(Most(Relate.of(near, Quantifier.EXISTS, Filter(red, Top()))))
    engine = Engine(exact=True, exact_budget=0)  # every repeated atom through a circuit
    answers = engine([hop], oracle)
    assert engine.circuits.cache_info().currsize == 1 and bool(answers.exact[0])
    assert abs(answers.probs().item() - _brute_force_most(hop.candidates[0], tables, 3)) < 1e-12


def test_an_operator_without_ground_is_answered_by_shannon_expansion(monkeypatch):
    unary, binary = default_vocabulary(1, 1)
    red, near = unary[0], binary[0]
    tables = {red: np.array([0.5, 0.3, 0.8]), near: np.array([[1.0, 0.4, 0.0], [1.0, 1.0, 0.7], [0.2, 1.0, 1.0]])}
    oracle = TableOracle([{p: torch.as_tensor(t) for p, t in tables.items()}])
    hop = Program.yes_no(Most(Relate.of(near, Quantifier.EXISTS, Filter(red, Top()))))
    monkeypatch.delattr(_Most, "ground")
    engine = Engine(exact=True)
    for _ in range(2):  # asked again, the question is compiled: no circuit, so it is expanded
        answers = engine([hop], oracle)
        assert bool(answers.exact[0])
        assert abs(answers.probs().item() - _brute_force_most(hop.candidates[0], tables, 3)) < 1e-12
    assert engine.circuits.cache_info().currsize == 1 and engine.circuits.cache_info().misses == 1
