"""Programs of one shape share one plan (planning.py, `_Shape`): a program planned from another
program's plan must be planned exactly as if it were planned alone."""
import dataclasses

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples
import pytest

from engine_helpers import run_engine
from nablafol.engine import Engine
from nablafol.engine.planning import ProgramPlan, Registry
from nablafol.ir import (AggregateEach, And, Aggregate, AnyOfGroups, Atom, Conjoin, Filter, Node, Not, Or, Pairwise,
                         Predicate, Program, Quantifier, Relate, Top)
from nablafol.testing.strategies import default_vocabulary, programs, tables_for

UNARY, BINARY = default_vocabulary(n_unary=4, n_binary=3)


def renamed(value, rename):
    """``value`` with every predicate ``p`` replaced by ``rename[p]`` (nodes rebuilt)."""
    if isinstance(value, Predicate):
        return rename[value]
    if isinstance(value, tuple):
        return tuple(renamed(v, rename) for v in value)
    if isinstance(value, (Node, Atom, Program)):
        changes = {f.name: renamed(getattr(value, f.name), rename) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **changes)
    return value


def perturbed(value, site: int, counter=None):
    """``value`` with its ``site``-th field that is neither a predicate nor a node changed
    (a quantifier, an atom's direction, a negation): the same predicates, another shape."""
    counter = counter if counter is not None else [0]
    if isinstance(value, Predicate):
        return value
    if isinstance(value, tuple):
        return tuple(perturbed(v, site, counter) for v in value)
    if not isinstance(value, (Node, Atom, Program)):
        return value
    changes = {}
    for f in dataclasses.fields(value):
        old = getattr(value, f.name)
        if isinstance(old, (Quantifier, bool)) and f.name in ("quantifier", "reverse", "negate"):
            counter[0] += 1
            if counter[0] - 1 == site:
                old = (not old) if isinstance(old, bool) else QUANTIFIERS[(QUANTIFIERS.index(old) + 1) % 3]
            changes[f.name] = old
        else:
            changes[f.name] = perturbed(old, site, counter)
    return dataclasses.replace(value, **changes)


QUANTIFIERS = [Quantifier.EXISTS, Quantifier.FORALL, Quantifier.NOT_EXISTS]


def rewired(value, site: int, counter=None):
    """``value`` with its ``site``-th wiring changed, predicates and fields kept: two inputs
    swapped (Conjoin, Pairwise, And, Or), a grouping's sizes reversed (AnyOfGroups); site -1:
    the candidates reversed, site -2: the focus dropped."""
    if isinstance(value, Program):
        if site == -1:
            return Program(value.candidates[::-1], None if value.labels is None else tuple(
                f"x{i}" for i in range(len(value.labels))), value.focus)
        if site == -2:
            return Program(value.candidates, value.labels, None)
    counter = counter if counter is not None else [0]
    if isinstance(value, Predicate) or not isinstance(value, (Node, Atom, Program, tuple)):
        return value
    if isinstance(value, tuple):
        return tuple(rewired(v, site, counter) for v in value)
    changes = {f.name: rewired(getattr(value, f.name), site, counter) for f in dataclasses.fields(value)}
    if isinstance(value, (Conjoin, Pairwise, And, Or, AnyOfGroups)):
        counter[0] += 1
        if counter[0] - 1 == site:
            if isinstance(value, (Conjoin, Pairwise)):
                changes["left"], changes["right"] = changes["right"], changes["left"]
            elif isinstance(value, AnyOfGroups):
                changes["sizes"] = changes["sizes"][::-1]
            else:
                changes["inputs"] = changes["inputs"][::-1]
    return dataclasses.replace(value, **changes)


def renamings():
    """A map of the vocabulary onto itself, arity kept: a permutation or a merge of predicates."""
    def of(predicates):
        return st.lists(st.sampled_from(predicates), min_size=len(predicates), max_size=len(predicates))
    return st.tuples(of(UNARY), of(BINARY)).map(
        lambda t: {**dict(zip(UNARY, t[0])), **dict(zip(BINARY, t[1]))})


def packed_with_predicates(registry, program):
    """The packed tables with each predicate id written as its predicate (ids differ by registry)."""
    pack, ids = registry.packed(program)
    # local ids made engine-wide, as a batch's plan makes them (ids: the unary ones, then the binary)
    v, a = pack.v.copy(), pack.a.copy()
    has = v[:, 4] >= 0
    v[has, 4] = ids[v[has, 4]]
    a[:, 1] = ids[a[:, 1] + len(pack.unary)]
    v = [tuple(row[:4]) + ((registry.predicates[row[4]] if row[4] >= 0 else None),) for row in v.tolist()]
    a = [(row[0], registry.predicates[row[1]], row[2]) for row in a.tolist()]
    return v, a, pack.s.tolist(), pack.e.tolist(), pack.candidates.tolist(), pack.focus, [
        x.tolist() for x in dataclasses.astuple(pack.grounding)]


@pytest.mark.slow
@settings(max_examples=examples(150), deadline=None)
@given(programs(UNARY, BINARY, max_depth=4), renamings())
def test_a_program_planned_from_its_shape_is_packed_as_if_planned_alone(program, rename):
    other = renamed(program, rename)
    shared = Registry()
    shared.packed(program)  # the shape's plan is built from `program`
    alone = Registry()
    assert packed_with_predicates(shared, other) == packed_with_predicates(alone, other)
    assert (other.shape().key == program.shape().key) == (len(set(rename[p] for p in program.predicates()))
                                                          == len(program.predicates()))


@pytest.mark.slow
@settings(max_examples=examples(150), deadline=None)
@given(programs(UNARY, BINARY, max_depth=4), st.integers(0, 5))
def test_programs_differing_beyond_their_predicates_do_not_share_a_plan(program, site):
    other = perturbed(program, site)
    shared = Registry()
    shared.packed(program)
    assert packed_with_predicates(shared, other) == packed_with_predicates(Registry(), other)


@pytest.mark.slow
@settings(max_examples=examples(150), deadline=None)
@given(programs(UNARY, BINARY, max_depth=4), st.integers(-2, 4))
def test_programs_wired_otherwise_do_not_share_a_plan(program, site):
    other = rewired(program, site)
    shared = Registry()
    shared.packed(program)
    assert packed_with_predicates(shared, other) == packed_with_predicates(Registry(), other)


def _wirings():
    """Pairs of programs with the same predicates in the same node order, wired otherwise."""
    p, q, r = UNARY[:3]
    E = Quantifier.EXISTS
    fp, fq = Filter(p, Top()), Filter(q, Relate.of(BINARY[0], E, Filter(r, Top())))
    a = Aggregate(E, fp)
    each_p, each_q = AggregateEach(E, (p, q, r), fp), AggregateEach(E, (p, q, r), fq)
    return [
        (Program((Not(a), a), ("x", "y")), Program((a, Not(a)), ("x", "y"))),  # one node order, candidates swapped
        (Program.yes_no(a), Program.yes_no(a, focus=fp)),  # a focus, or none
        (Program.yes_no(Aggregate(E, fq), focus=fq), Program.yes_no(Aggregate(E, fq), focus=fq.input)),
        (Program((AnyOfGroups(each_p, (1, 2)),), ("x", "y")), Program((AnyOfGroups(each_p, (2, 1)),), ("x", "y"))),
        (Program((each_p, each_q, Pairwise(each_p, each_q)), tuple("abcdefghi")),
         Program((each_p, each_q, Pairwise(each_q, each_p)), tuple("abcdefghi"))),
    ]


def test_the_shape_tells_apart_programs_wired_otherwise():
    for first, second in _wirings():
        for a, b in ((first, second), (second, first)):
            shared = Registry()
            shared.packed(a)
            assert packed_with_predicates(shared, b) == packed_with_predicates(Registry(), b), (a, b)


def test_a_program_with_a_node_of_a_subclass_is_planned_alone():
    class MyFilter(Filter):
        pass
    p, q = UNARY[:2]
    odd = Program.yes_no(And((Aggregate(Quantifier.EXISTS, MyFilter(p, Top())), Aggregate(Quantifier.EXISTS, Filter(q, Top())),
                              Aggregate(Quantifier.EXISTS, Filter(p, Top())))))
    plain = Program.yes_no(And((Aggregate(Quantifier.EXISTS, Filter(p, Top())), Aggregate(Quantifier.EXISTS, Filter(q, Top())),
                                Aggregate(Quantifier.EXISTS, Filter(p, Top())))))
    assert odd.shape() is None
    shared = Registry()
    shared.packed(plain)
    assert packed_with_predicates(shared, odd) == packed_with_predicates(Registry(), odd)
    assert [row[4] for row in packed_with_predicates(shared, odd)[0] if row[4] is not None] == [p, q, p]


@pytest.mark.slow
@settings(max_examples=examples(60), deadline=None)
@given(programs(UNARY, BINARY, max_depth=4), renamings(), st.data())
def test_answers_of_a_program_planned_from_its_shape_equal_those_planned_alone(program, rename, data):
    other = renamed(program, rename)
    tables = data.draw(tables_for(UNARY + BINARY, data.draw(st.integers(1, 3))))
    engine = Engine()
    run_engine([program], [tables], engine=engine)
    shared, alone = run_engine([other], [tables], engine=engine), run_engine([other], [tables])
    assert torch.equal(shared.probs(), alone.probs()) and torch.equal(shared.focus, alone.focus)
    assert torch.equal(shared.exact, alone.exact)


def test_programs_that_differ_in_predicates_only_build_one_plan():
    registry = Registry()
    made = [Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(p, Top()))) for p in UNARY]
    for program in made:
        registry.packed(program)
    info = registry._shaped.cache_info()
    assert (info.misses, info.hits) == (1, len(made) - 1)
    # a program whose plan is kept on it (ProgramPlan.of) is packed by its shape all the same
    # (the registry reads nothing another module keeps on a program), to the same rows
    kept = Program.yes_no(Aggregate(Quantifier.FORALL, Filter(UNARY[0], Top())))
    ProgramPlan.of(kept)
    fresh = Registry()
    assert np.array_equal(fresh.packed(kept).plan.v, ProgramPlan.of(kept).v)
    assert fresh._shaped.cache_info().misses == 1


def test_a_plan_kept_by_shape_names_no_other_programs_nodes():
    """The plan a shape keeps was built from the shape's first program: its attention steps would
    name that program's nodes for every later one, so it refuses; ``ProgramPlan.of`` names them."""
    from nablafol.errors import ProgramStructureError
    registry = Registry()
    first, second = (Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(p, Top()))) for p in UNARY[:2])
    registry.packed(first)
    kept = registry.packed(second).plan
    with pytest.raises(ProgramStructureError, match="ProgramPlan.of"):
        kept.attention_steps
    assert [s.predicate for s in ProgramPlan.of(second).attention_steps if isinstance(s, Filter)] == [UNARY[1]]
    assert np.array_equal(kept.v, ProgramPlan.of(second).v)
