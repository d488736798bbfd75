"""One walk of a program (``nablafol.ir._walk``) makes its node order, its predicates and its
shape: each must be what the plain definitions give (the node order feeds planning and the
exactness analysis), with equal but distinct subterms merged by structural equality."""
import copy

from hypothesis import given
from hypothesis import strategies as st

from nablafol.ir import (Aggregate, AggregateEach, And, AnyOf, Conjoin, Filter, Neg, Not, Pairwise, Predicate, Program,
                         Quantifier, Relate, Top, Truths, number_predicates)
from nablafol.testing.strategies import default_vocabulary, programs

UNARY, BINARY = default_vocabulary(n_unary=4, n_binary=3)
E = Quantifier.EXISTS


def reference_nodes(program) -> tuple:
    """Every distinct node after its inputs: depth first by identity, merged by equality."""
    seen_ids, seen, order = set(), set(), []
    for root in list(program.candidates) + ([program.focus] if program.focus is not None else []):
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in seen_ids:
                continue
            if expanded:
                seen_ids.add(id(node))
                if node not in seen:
                    seen.add(node)
                    order.append(node)
            else:
                stack.append((node, True))
                stack.extend((c, False) for c in reversed(node.children()) if id(c) not in seen_ids)
    return tuple(order)


def reference_predicates(nodes) -> tuple:
    out = {}
    for node in nodes:
        if isinstance(node, Filter):
            out.setdefault(node.predicate)
        elif isinstance(node, AggregateEach):
            out.update(dict.fromkeys(node.predicates))
        elif isinstance(node, Relate):
            for a in node.atoms:
                out.setdefault(a.predicate)
    return tuple(out)


def assert_walked_as_defined(program):
    fresh = copy.deepcopy(program)  # nothing kept from an earlier walk
    expected = reference_nodes(program)
    got = tuple(fresh.nodes())
    # the same nodes (the first of each class of equal ones met, not an equal one), in order
    assert [id(n) for n in got] == [id(n) for n in reference_nodes(fresh)]
    assert got == expected
    predicates = reference_predicates(expected)
    assert fresh.predicates() == predicates
    # the shape numbers the same predicates, unary and binary apart, one key entry a node (and
    # one for the candidates and focus); what the key tells apart is test_engine_shapes' part
    shape = fresh.shape()
    if shape is None:  # only a program with a node of a class of its own has none
        assert any(type(n).__module__ != "nablafol.ir" for n in expected)
        return
    assert shape.unary == tuple(p for p in predicates if p.arity == 1)
    assert shape.binary == tuple(p for p in predicates if p.arity == 2)
    assert len(shape.key) == len(expected) + 1


def with_copies(program, picks):
    """``program`` with some of its candidates again, as deep copies (equal, distinct objects)."""
    candidates = program.candidates + tuple(copy.deepcopy(program.candidates[k % len(program.candidates)])
                                            for k in picks)
    n = sum(c.n_truths if isinstance(c, Truths) else 1 for c in candidates)
    return Program(candidates, tuple(f"c{i}" for i in range(n)))


@given(programs(UNARY, BINARY, max_depth=4))
def test_the_walk_gives_the_nodes_and_predicates_of_their_definitions(program):
    assert_walked_as_defined(program)


@given(programs(UNARY, BINARY, max_depth=4), st.lists(st.integers(0, 5), min_size=1, max_size=3))
def test_equal_but_distinct_subterms_are_merged_as_by_equality(program, picks):
    assert_walked_as_defined(with_copies(program, picks))


def test_a_node_of_a_subclass_is_merged_by_its_equality_and_leaves_no_shape():
    class MyFilter(Filter):
        pass
    p, q = UNARY[:2]
    odd = MyFilter(p, Filter(q, Top()))
    program = Program((Aggregate(E, odd), Aggregate(E, copy.deepcopy(odd)), Aggregate(E, Filter(p, Filter(q, Top())))),
                      ("a", "b", "c"))
    assert_walked_as_defined(program)
    assert len(tuple(program.nodes())) == 6 and program.shape() is None
    assert program.predicates() == (q, p)
    again = copy.deepcopy(program)
    assert hash(again) == hash(program) and {program: 1}[again] == 1


def test_shared_inputs_several_inputs_and_a_focus_are_walked_in_order():
    p, q, r = UNARY[:3]
    x = Filter(p, Top())
    y = Relate.of(BINARY[0], Quantifier.FORALL, Filter(q, x))
    both = Conjoin(y, Neg(Filter(r, copy.deepcopy(x))))
    each = AggregateEach(E, (r, p, UNARY[3]), both)
    program = Program((And((Aggregate(E, y), Not(Aggregate(E, both)))), AnyOf(Pairwise(each, copy.deepcopy(each)))),
                      ("yes", "any"), focus=copy.deepcopy(both))
    assert_walked_as_defined(program)
    shape = program.shape()
    assert shape.unary == (p, q, r, UNARY[3]) and shape.binary == (BINARY[0],)


def test_a_deep_program_is_walked_without_recursion():
    x = Top()
    for k in range(5000):
        x = Filter(UNARY[k % 4], x)
    program = Program.yes_no(Aggregate(E, x))
    assert len(tuple(program.nodes())) == 5002 and program.predicates() == tuple(UNARY[:4])
    assert len(program.shape().key) == 5003


@given(st.lists(st.sampled_from(UNARY), max_size=4, unique=True),
       st.lists(st.sampled_from(UNARY + [Predicate("new"), Predicate("other")]), min_size=1, max_size=8))
def test_predicates_are_numbered_in_order_of_first_use(known, predicates):
    index = {p: k for k, p in enumerate(known)}
    expected = dict(index)
    for p in predicates:
        expected.setdefault(p, len(expected))
    numbers = number_predicates(index, tuple(predicates))
    assert list(numbers) == [expected[p] for p in predicates] and index == expected
    # one way of writing each sequence (a shape's key compares them): a run as a range
    run = all(b == a + 1 for a, b in zip(numbers, numbers[1:]))
    assert type(numbers) is (range if run else tuple)


@given(programs(UNARY, BINARY, max_depth=4), st.lists(st.integers(0, 5), max_size=2), st.booleans())
def test_equal_programs_hash_equal_whichever_walk_made_the_hash(program, picks, nodes_first):
    program = with_copies(program, picks) if picks else program
    again = copy.deepcopy(program)
    if nodes_first:
        tuple(again.nodes())
    assert again == program and hash(again) == hash(program) and {program: 1}[again] == 1


def test_the_shape_is_kept_only_until_planning_takes_it():
    from nablafol.engine.planning import Registry
    program = Program.yes_no(Aggregate(E, Filter(UNARY[0], Relate.of(BINARY[0], E, Top()))))
    program.predicates()  # the walk made the shape too
    assert program.__dict__.get("_shape") is not None
    Registry().packed(program)
    assert "_shape" not in program.__dict__  # taken: a shape weighs as much as the predicates
    assert program.shape() == program.shape() and "_shape" not in program.__dict__


def test_an_equal_program_served_from_the_cache_keeps_no_shape_either():
    import copy

    from nablafol.engine.planning import Registry
    program = Program.yes_no(Aggregate(E, Filter(UNARY[0], Relate.of(BINARY[0], E, Top()))))
    registry = Registry()
    registry.packed(program)
    twin = copy.deepcopy(program)
    hash(twin)  # the walk keeps its shape for packing; the pack comes from the cache instead
    registry.packed(twin)
    assert "_shape" not in twin.__dict__


def walks_counted(monkeypatch) -> list:
    """The programs ``nablafol.ir._walk`` is called on, from now on."""
    import nablafol.ir as ir
    walked, walk = [], ir._walk
    monkeypatch.setattr(ir, "_walk", lambda program: walked.append(program) or walk(program))
    return walked


@given(programs(UNARY, BINARY, max_depth=4), st.lists(st.integers(0, 5), max_size=2), st.integers(-1, 8))
def test_a_shape_asked_for_again_is_the_walks_without_a_walk(program, picks, focus):
    import pytest

    from nablafol.ir import Attention
    program = with_copies(program, picks) if picks else program
    attentions = [n for n in program.nodes() if isinstance(n, Attention)]
    if focus >= 0 and attentions:  # a focus: one more root, walked after the candidates
        program = Program(program.candidates, program.labels, attentions[focus % len(attentions)])
    program = copy.deepcopy(program)  # nothing kept from the walk above
    fresh = copy.deepcopy(program)
    program.shape()  # walked; the shape taken, as packing takes it
    with pytest.MonkeyPatch.context() as patch:
        walked = walks_counted(patch)
        again = program.shape()
        assert walked == []
    assert again == fresh.shape()  # key, unary and binary predicates: what a fresh walk gives


def test_programs_of_one_shape_keep_one_object_of_it():
    p, q, r = UNARY[:3]
    one = Program.yes_no(Aggregate(E, Filter(p, Relate.of(BINARY[0], E, Filter(q, Top())))))
    two = Program.yes_no(Aggregate(E, Filter(r, Relate.of(BINARY[1], E, Filter(p, Top())))))
    one.shape(), two.shape()
    assert one.__dict__["_shape_key"] is two.__dict__["_shape_key"]


def unchecked(cls, *values):
    """A node of ``cls`` made without its constructor's checks, as unpickling makes one."""
    import dataclasses
    node = object.__new__(cls)
    node.__dict__.update(zip((f.name for f in dataclasses.fields(cls)), values))
    return node


def test_a_predicate_both_unary_and_binary_keeps_no_shape_and_is_walked_again(monkeypatch):
    # made without the constructors' checks (as unpickling does): the walk numbers the one
    # predicate twice, which its predicates in order of first use cannot tell again
    from nablafol.ir import Atom
    odd = Predicate("odd", arity=2)
    program = Program.yes_no(Aggregate(E, unchecked(Filter, odd, unchecked(Relate, (Atom(odd, False),), E, Top()))))
    first = program.shape()
    assert first.unary == first.binary == (odd,) and "_shape_key" not in program.__dict__
    walked = walks_counted(monkeypatch)
    assert program.shape() == first and walked == [program]


def test_a_shape_is_made_again_by_the_nodes_kinds_not_the_predicates_arities(monkeypatch):
    # unchecked parts of the wrong arity, no predicate in both roles: the unary one is the Filter's
    import nablafol.ir as ir
    from nablafol.ir import Atom
    monkeypatch.setattr(ir, "_SHAPE_KEYS", {})  # the shape's kept positions made from this program
    two, one = Predicate("two", arity=2), Predicate("one")
    program = Program.yes_no(Aggregate(E, unchecked(Filter, two, unchecked(Relate, (unchecked(Atom, one, False),), E,
                                                                         Top()))))
    fresh = copy.deepcopy(program)
    program.shape()
    again = program.shape()
    assert again == fresh.shape() and again.unary == (two,) and again.binary == (one,)


def test_a_program_packed_again_after_its_pack_was_evicted_is_not_walked_again(monkeypatch):
    from nablafol.engine.planning import Registry
    registry = Registry(cache_rows=1)  # room for no pack: each is evicted at once
    program = Program.yes_no(Aggregate(E, Filter(UNARY[0], Relate.of(BINARY[0], E, Top()))))
    first = registry.packed(program)
    walked = walks_counted(monkeypatch)
    again = registry.packed(program)
    assert walked == [] and again is not first
    assert all((x == y).all() for x, y in zip(first[:4], again[:4])) and (first.ids == again.ids).all()
