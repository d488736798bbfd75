"""Hypothesis strategies for DFOL programs and probability tables.

Use them to property-test a DSL built on the engine: generate programs and scenes, run
them through your compiler and the engine, and compare with :func:`brute_force` or with
your own crisp semantics::

    from hypothesis import given
    from nablafol.testing.strategies import scenes_and_programs

    @given(scenes_and_programs(read_once=True))
    def test_soundness(case):
        ...  # compare the engine with nablafol.testing.brute_force(case.program, case.tables)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

try:
    from hypothesis import assume
    from hypothesis import strategies as st
except ImportError as e:  # pragma: no cover - hypothesis is a test dependency
    raise ImportError("nablafol.testing.strategies needs hypothesis: pip install hypothesis") from e

from ..ir import (AllOf, AllSame, Aggregate, AggregateEach, And, AnyOf, AnyOfGroups, Atom, Attention, Conjoin, Filter,
                  Neg, Not, Or, Pairwise, Predicate, Program, Quantifier, Relate, Top, Truth, Truths)
from .reference import MAX_UNCERTAIN_ATOMS, repeated_predicates, uncertain_atoms

quantifiers = st.sampled_from(list(Quantifier))


def probabilities(crisp: bool = False):
    """Probabilities with exact 0 and 1 well represented (or only 0/1 when ``crisp``)."""
    if crisp:
        return st.sampled_from([0.0, 1.0])
    return st.one_of(st.sampled_from([0.0, 1.0, 0.5]), st.floats(0.0, 1.0, allow_nan=False, width=32))


def attentions(unary, binary, max_depth: int = 4) -> st.SearchStrategy[Attention]:
    """Random attention formulas over the given predicates (at most ``max_depth`` deep)."""
    unary, binary = list(unary), list(binary)
    base = st.just(Top()) | st.builds(Filter, st.sampled_from(unary), st.just(Top()))

    def extend(children):
        options = [
            st.builds(Filter, st.sampled_from(unary), children),
            st.builds(Neg, children),
            st.builds(Conjoin, children, children),
        ]
        if binary:
            atoms = st.lists(st.builds(Atom, st.sampled_from(binary), st.booleans()), min_size=1, max_size=2)
            options.append(st.builds(lambda a, q, x: Relate(tuple(a), q, x), atoms, quantifiers, children))
        return st.one_of(options)

    return st.recursive(base, extend, max_leaves=max_depth)


def each_nodes(unary, binary, max_depth: int = 3):
    """Random :class:`AggregateEach` (plain or negated) and :class:`Pairwise` nodes."""
    preds = st.lists(st.sampled_from(list(unary)), min_size=1, max_size=3, unique=True).map(tuple)
    att = attentions(unary, binary, max_depth)
    single = st.builds(AggregateEach, quantifiers, preds, att, st.booleans())
    pair = st.builds(lambda q, ps, x, y, n: Pairwise(AggregateEach(q, ps, x, n), AggregateEach(q, ps, y, n)),
                     quantifiers, preds, att, att, st.booleans())
    return single | pair


def grouped_nodes(unary, binary):
    """Random :class:`AnyOfGroups`: a per-predicate node's truths cut into consecutive groups."""
    @st.composite
    def grouped(draw):
        each = draw(each_nodes(unary, binary))
        n = each.n_truths
        cuts = sorted(draw(st.sets(st.integers(1, n - 1)))) if n > 1 else []
        bounds = [0, *cuts, n]
        return AnyOfGroups(each, tuple(b - a for a, b in zip(bounds, bounds[1:])))
    return grouped()


def truths(unary, binary, max_depth: int = 4) -> st.SearchStrategy[Truth]:
    """Random closed formulas: aggregations, AnyOf/AllOf of several, AllSame, and Not/And/Or over them."""
    values = st.lists(st.sampled_from(list(unary)), min_size=1, max_size=3, unique=True).map(tuple)
    agg = st.builds(Aggregate, quantifiers, attentions(unary, binary, max_depth)) | \
        st.builds(AnyOf, each_nodes(unary, binary)) | st.builds(AllOf, each_nodes(unary, binary)) | \
        st.builds(AllSame, values, attentions(unary, binary, max_depth - 1))

    def extend(children):
        lists = st.lists(children, min_size=1, max_size=3).map(tuple)
        return st.builds(Not, children) | st.builds(And, lists) | st.builds(Or, lists)

    return st.recursive(agg, extend, max_leaves=3)


def programs(unary, binary, max_depth: int = 4, max_candidates: int = 3) -> st.SearchStrategy[Program]:
    """Random yes/no programs and open programs with labelled candidates."""
    t = truths(unary, binary, max_depth)
    yes_no = st.builds(Program.yes_no, t)
    open_ = st.lists(t | each_nodes(unary, binary) | grouped_nodes(unary, binary), min_size=1,
                     max_size=max_candidates).map(_labelled)
    return st.one_of(yes_no, open_)


def _labelled(candidates) -> Program:
    n = sum(c.n_truths if isinstance(c, Truths) else 1 for c in candidates)
    return Program(tuple(candidates), tuple(f"c{i}" for i in range(n)))


def tables_for(predicates, n_objects: int, crisp: bool = False, certain=()):
    """A table per predicate for a scene of ``n_objects`` (``certain`` ones are 0/1)."""
    certain = set(certain)

    def table(p):
        probs = probabilities(crisp or p in certain)
        shape = (n_objects,) * p.arity
        return st.lists(probs, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))).map(
            lambda xs, shape=shape: np.asarray(xs, dtype=np.float64).reshape(shape))

    return st.fixed_dictionaries({p: table(p) for p in predicates})


@dataclass
class Case:
    """A program and the tables of one scene it runs on."""

    program: Program
    tables: dict
    n_objects: int


def default_vocabulary(n_unary: int = 3, n_binary: int = 2):
    return ([Predicate(f"p{i}") for i in range(n_unary)],
            [Predicate(f"r{i}", arity=2) for i in range(n_binary)])


@st.composite
def scenes_and_programs(draw, max_objects: int = 3, max_depth: int = 4, crisp: bool = False,
                        read_once: bool = False, vocabulary=None, enumerable: bool = False):
    """A random program with tables for one scene of 1..``max_objects`` objects.

    ``read_once=True`` makes certain (0/1) every predicate whose atoms could repeat in the
    grounding (:func:`repeated_predicates`), so the exact probability is what the engine
    must return. ``enumerable=True`` keeps only draws :func:`brute_force` can enumerate (at most
    ``MAX_UNCERTAIN_ATOMS`` uncertain atoms: three objects and the default vocabulary can hold 27).
    """
    unary, binary = vocabulary or default_vocabulary()
    program = draw(programs(unary, binary, max_depth))
    n = draw(st.integers(1, max_objects))
    certain = repeated_predicates(program) if read_once else ()
    tables = draw(tables_for(list(unary) + list(binary), n, crisp=crisp, certain=certain))
    if enumerable:
        assume(uncertain_atoms(program, tables) <= MAX_UNCERTAIN_ATOMS)
    return Case(program, tables, n)
