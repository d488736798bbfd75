"""One walk of a program (``nablafol.ir._walk``) makes its node order, its predicates and its
shape: each must be what the plain definitions give (the node order feeds planning and the
exactness analysis), with equal but distinct subterms merged by structural equality."""
import copy

from hypothesis import given
from hypothesis import strategies as st

from nablafol.ir import (Aggregate, AggregateEach, And, AnyOf, Conjoin, Filter, Neg, Not, Pairwise, Predicate, Program,
                         Quantifier, Relate, Top, Truths, number_predicates)
from nablafol.testing.strategies import default_vocabulary, programs
from test_engine_shapes import renamed

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


def walks_counted(monkeypatch) -> list:
    """The programs ``nablafol.ir._walk`` is called on, from now on."""
    import nablafol.ir as ir
    walked, walk = [], ir._walk
    monkeypatch.setattr(ir, "_walk", lambda program: walked.append(program) or walk(program))
    return walked


def test_a_program_is_walked_once_whatever_is_asked_of_it(monkeypatch):
    program = Program.yes_no(Aggregate(E, Filter(UNARY[0], Relate.of(BINARY[0], E, Top()))))
    walked = walks_counted(monkeypatch)
    program.predicates(), program.shape(), tuple(program.nodes()), hash(program), program.shape()
    assert walked == [program]
    assert "_walk" in vars(program) and not {"_nodes", "_predicates", "_shape", "_shape_key"} & set(vars(program))


def unchecked(cls, *values):
    """A node of ``cls`` made without its constructor's checks, as unpickling makes one."""
    import dataclasses
    node = object.__new__(cls)
    node.__dict__.update(zip((f.name for f in dataclasses.fields(cls)), values))
    return node


def test_a_predicate_both_unary_and_binary_is_numbered_in_both_roles():
    # made without the constructors' checks (as unpickling does): the walk numbers the one
    # predicate twice, once a role
    from nablafol.ir import Atom
    odd = Predicate("odd", arity=2)
    program = Program.yes_no(Aggregate(E, unchecked(Filter, odd, unchecked(Relate, (unchecked(Atom, odd, False),), E,
                                                                          Top()))))
    assert program.shape().unary == program.shape().binary == (odd,) and program.predicates() == (odd,)


def injective_renamings():
    """A renaming of the vocabulary that keeps every program's shape: one to one, arity kept."""
    return st.tuples(st.permutations(UNARY), st.permutations(BINARY)).map(
        lambda t: {**dict(zip(UNARY, t[0])), **dict(zip(BINARY, t[1]))})


@given(programs(UNARY, BINARY, max_depth=4), st.lists(st.integers(0, 5), max_size=2), st.integers(-1, 8),
       injective_renamings(), st.data())
def test_a_refilled_program_is_the_program_with_those_predicates_without_a_walk(program, picks, focus, rename, data):
    import pytest

    from nablafol.ir import Attention
    program = with_copies(program, picks) if picks else program
    attentions = [n for n in program.nodes() if isinstance(n, Attention)]
    if focus >= 0 and attentions:  # a focus: one more root, walked after the candidates
        program = Program(program.candidates, program.labels, attentions[focus % len(attentions)])
    shape = program.shape()
    # some of the local numbers given other predicates (the others keep theirs, as a compiler's
    # constants do), renamed one to one: the shape is kept
    unary = {i: rename[p] for i, p in enumerate(shape.unary) if data.draw(st.booleans())}
    binary = {i: rename[p] for i, p in enumerate(shape.binary) if data.draw(st.booleans())}
    kept = {**{shape.unary[i]: p for i, p in unary.items()}, **{shape.binary[i]: p for i, p in binary.items()}}
    expected = renamed(program, {p: kept.get(p, p) for p in UNARY + BINARY})
    if len(set(kept.get(p, p) for p in program.predicates())) < len(program.predicates()):
        return  # two predicates made one: not a refill (the caller keeps the shape)
    with pytest.MonkeyPatch.context() as patch:
        walked = walks_counted(patch)
        got = program.refilled(unary, binary)
        repeated = got.repeated_predicates()
        assert "_walk" not in vars(got)  # the skeleton's count, renamed: no node made
        made = tuple(got.nodes()), got.predicates(), got.shape()
        assert walked == []
    fresh = copy.deepcopy(expected)
    assert got == expected and hash(got) == hash(fresh) and repeated == fresh.repeated_predicates()
    assert made == (tuple(fresh.nodes()), fresh.predicates(), fresh.shape())
    if not unary and not binary:  # nothing replaced: the program's own nodes
        assert all(a is b for a, b in zip(made[0], program.nodes()))


def test_a_fill_that_makes_two_predicates_one_counts_its_repeats_from_its_nodes():
    # outside the refill contract, yet the read-once count stays the program's own (exact mode reads it)
    from nablafol.ir import Aggregate, And, Filter, Predicate, Program, Quantifier, Top
    red, blue = Predicate("red"), Predicate("blue")
    skeleton = Program.yes_no(And((Aggregate(Quantifier.EXISTS, Filter(red, Top())),
                                   Aggregate(Quantifier.EXISTS, Filter(blue, Top())))))
    filled = skeleton.refilled({skeleton.shape().unary.index(blue): red}, {})
    fresh = Program(filled.candidates, filled.labels, filled.focus)
    assert filled.repeated_predicates() == fresh.repeated_predicates() == frozenset({red})
    assert not filled.read_once
