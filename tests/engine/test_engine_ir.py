"""DFOL nodes: structural equality and hashing, the checks on their predicate tuples, their
inputs, their formulas, and the read-once count."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nablafol import ir
from nablafol.errors import ProgramStructureError
from nablafol.ir import AggregateEach, Filter, Predicate, Quantifier, Top

NAMES = st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=6, unique=True)
QUANTIFIERS = st.sampled_from(list(Quantifier))


@given(NAMES, NAMES, QUANTIFIERS, st.booleans())
def test_aggregate_each_is_equal_and_hashed_by_content_not_by_tuple_identity(first, second, q, negate):
    x = Filter(Predicate("x"), Top())
    a = AggregateEach(q, tuple(Predicate(n) for n in first), x, negate)
    a_again = AggregateEach(q, tuple(Predicate(n) for n in first), Filter(Predicate("x"), Top()), negate)
    b = AggregateEach(q, tuple(Predicate(n) for n in second), x, negate)
    assert a.predicates is not a_again.predicates
    assert a == a_again and hash(a) == hash(a_again)
    assert (a == b) == (first == second)
    assert len({a, a_again, b}) == (1 if first == second else 2)


@pytest.mark.parametrize("bad, says", [
    ((Predicate("a"), Predicate("r", arity=2)), "needs unary predicates, 'r' is binary"),
    ((Predicate("a"), "b"), "expected Predicate, got str"),
    ((), "non-empty tuple"),
    ([Predicate("a")], "non-empty tuple"),
])
def test_aggregate_each_refuses_a_bad_tuple_even_after_a_good_one_of_the_same_look(bad, says):
    good = (Predicate("a"), Predicate("b"))
    AggregateEach(Quantifier.EXISTS, good, Top())
    with pytest.raises(ProgramStructureError, match=says):
        AggregateEach(Quantifier.EXISTS, bad, Top())


# --- AnyOfGroups (GQA's `common`) ---------------------------------------------------------

def _pairwise(k: int):
    values = tuple(Predicate(f"v{j}") for j in range(k))
    return ir.Pairwise(AggregateEach(Quantifier.EXISTS, values, Filter(Predicate("x"), Top())),
                       AggregateEach(Quantifier.EXISTS, values, Filter(Predicate("y"), Top())))


@pytest.mark.parametrize("sizes", [(2, 2), (1, 1), (), (3, 0), (1.0, 2), [1, 2], (-1, 4)])
def test_groups_must_cut_every_truth_of_the_input_once(sizes):
    with pytest.raises(ProgramStructureError, match="adding up to the 3 truths of its input"):
        ir.AnyOfGroups(_pairwise(3), sizes)


def test_groups_count_as_their_number_of_truths_and_print_per_group():
    grouped = ir.AnyOfGroups(_pairwise(3), (2, 1))
    program = ir.Program((grouped, ir.Aggregate(Quantifier.EXISTS, Top())), ("color", "material", "any"))
    assert program.n_candidates == 3 and grouped.n_truths == 2
    assert [len(t.inputs) for t in grouped.truths()] == [2, 1]
    assert program.formula().startswith("[T ∈ {color, material}: ∃π ∈ T: (∃X: π(X) ∧ x(X)) ∧ (∃Y: π(Y) ∧ y(Y))")
    with pytest.raises(ProgramStructureError, match="needs as many labels"):
        ir.Program((grouped,), ("color", "material", "shape"))
    with pytest.raises(ProgramStructureError, match="AnyOf input: expected AggregateEach or Pairwise"):
        ir.AnyOf(grouped)


def _every_node_class():
    x, y = Filter(Predicate("a"), Top()), Filter(Predicate("b"), Top())
    values = (Predicate("red"), Predicate("blue"))
    each = AggregateEach(Quantifier.EXISTS, values, x)
    on = ir.Atom(Predicate("on", 2), True)
    truth = ir.Aggregate(Quantifier.EXISTS, x)
    return [x, ir.Neg(x), on, ir.Relate((on,), Quantifier.FORALL, x), ir.Conjoin(x, y), truth, each,
            ir.Pairwise(each, AggregateEach(Quantifier.EXISTS, values, y)), ir.Not(truth), ir.And((truth, truth)),
            ir.Or((truth,)), ir.AnyOf(each), ir.AllOf(each), ir.AllSame(values, y),
            ir.AnyOfGroups(ir.Pairwise(each, each), (1, 1)), ir.Program((truth, each), ("t", "r", "b"), x)]


@pytest.mark.parametrize("node", _every_node_class(), ids=lambda node: type(node).__name__)
def test_a_node_made_again_from_its_fields_is_equal_hashed_and_printed_alike(node):
    from dataclasses import fields
    made = type(node)(*(getattr(node, f.name) for f in fields(node)))
    assert type(made) is type(node) and made == node and node == made and hash(made) == hash(node)
    assert repr(made) == repr(node) and str(made) == str(node)


def test_nodes_built_by_hand_are_still_checked():
    # the constructors refuse bad parts with one clear line
    with pytest.raises(ProgramStructureError, match="Filter needs a unary predicate, 'on' is binary"):
        Filter(Predicate("on", 2), Top())
    with pytest.raises(ProgramStructureError, match="Aggregate input: expected Attention, got Predicate"):
        ir.Aggregate(Quantifier.EXISTS, Predicate("a"))
    with pytest.raises(ProgramStructureError, match="a yes/no Program has exactly one Truth"):
        ir.Program((ir.Aggregate(Quantifier.EXISTS, Top()),) * 2)


@pytest.mark.slow
def test_a_program_pickled_in_one_process_is_found_by_an_equal_one_built_in_another():
    # string hashes differ between processes: a hash kept on a node must not travel with it
    import os
    import subprocess
    import sys
    make = ("from nablafol.ir import *\n"
            "man, left = Predicate('man'), Predicate('left', arity=2)\n"
            "p = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(man, Relate.of(left, Quantifier.EXISTS, Top()))))\n")
    dump = make + "import pickle, sys\nhash(p); [hash(n) for n in p.nodes()]\nsys.stdout.buffer.write(pickle.dumps(p))\n"
    load = make + ("import pickle, sys\nq = pickle.loads(sys.stdin.buffer.read())\n"
                   "print(q == p, hash(q) == hash(p), p in {q: 1}, sorted(map(hash, q.nodes())) == sorted(map(hash, p.nodes())))\n")
    env = lambda seed: {**os.environ, "PYTHONHASHSEED": seed}  # noqa: E731
    data = subprocess.run([sys.executable, "-c", dump], capture_output=True, check=True, env=env("1")).stdout
    out = subprocess.run([sys.executable, "-c", load], input=data, capture_output=True, check=True, env=env("2"))
    assert out.stdout.decode().split() == ["True"] * 4, out.stderr.decode()[-500:]


def test_a_copied_node_keeps_its_fields_and_nothing_kept():
    import copy
    import pickle
    man = Predicate("man")
    node = Filter(man, Top())
    hash(node)
    assert "_hash" in node.__dict__
    for twin in (copy.copy(node), copy.deepcopy(node), pickle.loads(pickle.dumps(node))):
        assert twin == node and hash(twin) == hash(node)
        assert set(vars(twin)) <= {"predicate", "input", "_hash"}


# --- AllSame's reading of its input --------------------------------------------------------

def test_an_all_same_over_two_values_reads_its_input_twice_and_over_one_value_once():
    """``AllSame_{π ∈ {red, blue}}[X]`` multiplies one factor per value, each reading X: X's atoms
    are repeated from two values on (with one value the node is ``∄X: X ∧ ¬π``, read once). Over an
    uncertain X with both values possible the fast path is therefore not exact, and exact mode
    enumerates: brute force's answer."""
    import numpy as np
    import torch

    from engine_helpers import run_engine
    from nablafol.engine import Engine
    from nablafol.ir import AllSame, Program
    from nablafol.testing import brute_force
    cup, red, blue = Predicate("cup"), Predicate("red"), Predicate("blue")
    two = Program.yes_no(AllSame((red, blue), Filter(cup, Top())))
    assert not two.read_once and two.repeated_predicates() == {cup}
    assert Program.yes_no(AllSame((red,), Filter(cup, Top()))).read_once
    tables = {cup: [0.6, 0.3], red: [0.5, 0.8], blue: [0.4, 0.7]}
    want = brute_force(two, tables)[0]
    fast = run_engine([two], [tables], dtype=torch.float64)
    exact = run_engine([two], [tables], dtype=torch.float64, engine=Engine(exact=True))
    assert not bool(fast.exact[0]) and not np.isclose(fast.probs()[0, 0].item(), want, atol=1e-6)
    assert bool(exact.exact[0]) and exact.probs()[0, 0].item() == pytest.approx(want, abs=1e-12)


# --- a predicate listed twice among the truths of one formula --------------------------------

def _twice(each_input):
    red, blue = Predicate("red"), Predicate("blue")
    return AggregateEach(Quantifier.EXISTS, (red, blue, red), each_input), (red, blue, red)


@pytest.mark.parametrize("make", [
    lambda x: ir.Program.yes_no(ir.AnyOf(_twice(x)[0])),
    lambda x: ir.Program.yes_no(ir.AllOf(_twice(x)[0])),
    lambda x: ir.Program.yes_no(ir.AllSame(_twice(x)[1], x)),
    lambda x: ir.Program.yes_no(ir.AnyOf(ir.Pairwise(_twice(x)[0], _twice(Top())[0]))),
    lambda x: ir.Program((ir.AnyOfGroups(_twice(x)[0], (3,)),), ("all",)),
], ids=["AnyOf", "AllOf", "AllSame", "AnyOf-Pairwise", "AnyOfGroups"])
def test_a_predicate_listed_twice_in_one_formula_repeats_its_atoms(make):
    """``AnyOf`` over (red, blue, red) is ``r ∨ b ∨ r``: red's atoms are read twice, so the formula
    is not read-once, the engine does not call its answer exact, and exact mode gives brute
    force's."""
    import torch

    from engine_helpers import run_engine
    from nablafol.engine import Engine
    from nablafol.testing import brute_force
    red, blue, cup = Predicate("red"), Predicate("blue"), Predicate("cup")
    program = make(Filter(cup, Top()))
    tables = {cup: [0.6, 1.0], red: [0.5, 0.3], blue: [0.2, 0.7]}
    assert red in program.repeated_predicates()
    want = brute_force(program, tables)
    fast = run_engine([program], [tables], dtype=torch.float64)
    exact = run_engine([program], [tables], dtype=torch.float64, engine=Engine(exact=True))
    assert not bool(fast.exact[0]) and bool(exact.exact[0])
    assert exact.probs()[0, :len(want)].tolist() == pytest.approx(want, abs=1e-12)


def test_a_predicate_listed_twice_among_candidates_is_read_once():
    # candidates are separate formulas: each reads red once
    each, _ = _twice(Top())
    assert ir.Program((each,), ("a", "b", "c")).read_once
    assert ir.Program((ir.AnyOfGroups(each, (2, 1)),), ("ab", "c")).read_once


def test_a_pairwise_truth_reads_its_own_predicate_on_both_sides():
    # (∃X: red(X) ∧ cup(X)) ∧ (∃Y: red(Y) ∧ mug(Y)): an object both cup and mug has red read twice
    red = Predicate("red")
    pair = ir.Pairwise(AggregateEach(Quantifier.EXISTS, (red,), Filter(Predicate("cup"), Top())),
                       AggregateEach(Quantifier.EXISTS, (red,), Filter(Predicate("mug"), Top())))
    assert ir.Program.yes_no(ir.AnyOf(pair)).repeated_predicates() == {red}
    assert ir.Program((pair,), ("red",)).repeated_predicates() == {red}


@pytest.mark.parametrize("node", [n for n in _every_node_class() if isinstance(n, ir.Node)],
                         ids=lambda node: type(node).__name__)
def test_a_nodes_inputs_are_its_node_fields_in_order(node):
    from dataclasses import fields
    if isinstance(node, ir.AllSame):  # computed from its two parts
        assert node.children() == (ir.Aggregate(Quantifier.EXISTS, node.input), node.each)
        return
    values = [getattr(node, f.name) for f in fields(node)]
    want = [c for v in values for c in (v if isinstance(v, tuple) else (v,))
            if isinstance(c, ir.Node)]
    assert list(node.children()) == want


def test_a_negation_is_bracketed_unless_it_negates_one_atom():
    a, b = Predicate("a"), Predicate("b")
    assert ir.formula(ir.Neg(Filter(a, Top()))) == "¬a(X)"
    assert ir.formula(ir.Neg(Filter(a, Filter(b, Top())))) == "¬(a(X) ∧ b(X))"
    on = Predicate("on", 2)
    assert ir.formula(ir.Neg(ir.Relate.of(on, Quantifier.EXISTS, Top()))) == "¬(∃Y: on(X, Y))"


def test_a_node_kind_the_count_does_not_know_has_every_predicate_below_it_repeated():
    # its own lowering may read its input any number of times: the engine's analysis decides
    from dataclasses import dataclass

    @dataclass(frozen=True, eq=True)
    class Twice(ir.Truth):
        input: ir.Attention

        def children(self):
            return (self.input,)

    red = Predicate("red")
    assert ir.Program.yes_no(Twice(Filter(red, Top()))).repeated_predicates() == {red}
    assert ir.Program.yes_no(ir.Aggregate(Quantifier.EXISTS, Filter(red, Top()))).read_once


# --- the DFOL term of each node kind ----------------------------------------------------------

_TERMS = ["Filter_a[1]", "Neg[Filter_a[1]]", "on⁻¹", "Relate_{on⁻¹,∀}[Filter_a[1]]",
          "(Filter_a[1] ⊙ Filter_b[1])", "A_∃(Filter_a[1])", "A_∃(Filter_π[Filter_a[1]])",
          "(A_∃(Filter_π[Filter_a[1]]) ∧ A_∃(Filter_π[Filter_b[1]]))", "¬A_∃(Filter_a[1])",
          "(A_∃(Filter_a[1]) ∧ A_∃(Filter_a[1]))", "(A_∃(Filter_a[1]))",
          "∨_{π ∈ {red, blue}} A_∃(Filter_π[Filter_a[1]])",
          "∧_{π ∈ {red, blue}} A_∃(Filter_π[Filter_a[1]])",
          "AllSame_{π ∈ {red, blue}}[Filter_b[1]]",
          "∨_{π ∈ T} (A_∃(Filter_π[Filter_a[1]]) ∧ A_∃(Filter_π[Filter_a[1]]))",
          "[t: A_∃(Filter_a[1]), π ∈ {r, b}: A_∃(Filter_π[Filter_a[1]])]"]


@pytest.mark.parametrize("node, term", list(zip(_every_node_class(), _TERMS)),
                         ids=[type(node).__name__ for node in _every_node_class()])
def test_each_node_kind_prints_its_fields_in_its_term(node, term):
    assert (str(node) if isinstance(node, ir.Atom) else node.term()) == term


def test_a_term_shows_every_atom_the_quantifier_the_negation_and_a_long_tuple_cut_short():
    a, on, by = Filter(Predicate("a"), Top()), Predicate("on", 2), Predicate("by", 2)
    assert Top().term() == "1"
    relate = ir.Relate((ir.Atom(on), ir.Atom(by, True)), Quantifier.NOT_EXISTS, a)
    assert relate.term() == "Relate_{on∧by⁻¹,∄}[Filter_a[1]]"
    negated = AggregateEach(Quantifier.FORALL, (Predicate("red"),), a, True)
    assert negated.term() == "A_∀((Filter_a[1] ⊙ Neg[Filter_π[1]]))"
    values = tuple(Predicate(f"v{i}") for i in range(8))
    shown = "AllSame_{π ∈ {v0, v1, v2, v3, v4, v5, … (8)}}[Filter_a[1]]"
    assert ir.AllSame(values, a).term() == shown


def test_a_node_kind_of_its_own_without_a_term_says_so_rather_than_printing_nothing():
    from dataclasses import dataclass

    @dataclass(frozen=True, eq=True)
    class Mute(ir.Truth):
        input: ir.Attention

    with pytest.raises(NotImplementedError, match="Mute has no DFOL term"):
        Mute(Top()).term()
