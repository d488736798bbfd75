"""Hypothesis strategies for DFOL programs and probability tables.

Use them to property-test a DSL built on the engine: generate programs and scenes, run
them through your compiler and the engine, and compare with :func:`brute_force` or with
your own crisp semantics (:func:`nablafol.testing.check_dsl` does the latter in one call).
Every case :func:`scenes_and_programs` draws is one :func:`brute_force` enumerates:

    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> from nablafol import Engine, TableOracle
    >>> from nablafol.testing import brute_force
    >>> @settings(max_examples=25, derandomize=True, database=None)
    ... @given(scenes_and_programs(read_once=True, max_objects=6))
    ... def test_soundness(case):
    ...     answers = Engine()([case.program], TableOracle([case.tables]))
    ...     got = answers.probs()[0, : case.program.n_candidates].tolist()
    ...     assert np.allclose(got, brute_force(case.program, case.tables), atol=1e-5, rtol=0)
    >>> test_soundness()
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

try:
    from hypothesis import strategies as st
except ImportError as e:  # pragma: no cover - hypothesis is a test dependency
    raise ImportError("nablafol.testing.strategies needs hypothesis: pip install hypothesis") from e

from ..ir import (AllOf, AllSame, Aggregate, AggregateEach, And, AnyOf, AnyOfGroups, Atom, Attention, Conjoin, Filter,
                  Neg, Not, Or, Pairwise, Predicate, Program, Quantifier, Relate, Top, Truth, Truths)
from ..caching import bounded_cache
from .reference import MAX_UNCERTAIN_ATOMS, repeated_predicates

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


#: Uncertain ground atoms of a drawn case at most, by default: :func:`~nablafol.testing.brute_force`
#: enumerates ``2 ** 12`` worlds at most, a few milliseconds (it refuses more than ``MAX_UNCERTAIN_ATOMS``)
DEFAULT_MAX_UNCERTAIN = 12


def uncertain_probabilities():
    """Probabilities strictly between 0 and 1 (an uncertain atom's), 0.5 well represented."""
    return st.one_of(st.just(0.5), st.floats(0.0, 1.0, exclude_min=True, exclude_max=True, width=32))


@st.composite
def scenes_and_programs(draw, max_objects: int = 3, max_depth: int = 4, crisp: bool = False,
                        read_once: bool = False, vocabulary=None, enumerable: bool = True,
                        max_uncertain: int = DEFAULT_MAX_UNCERTAIN):
    """A random program with tables for one scene of 1..``max_objects`` objects, of which at most
    ``max_uncertain`` ground atoms of the program's predicates are uncertain (strictly between 0
    and 1; the program's other atoms are 0 or 1): every case is one :func:`brute_force` enumerates.

    The object count and the share of uncertain atoms are drawn first, each uniformly over its
    range (hypothesis spreads its first draws; one drawn after a program leans to its minimum),
    then the program, then which of its atoms are uncertain: ``k`` of ``max_uncertain`` drawn,
    ``k · min(max_uncertain, A) / max_uncertain`` of the program's ``A`` atoms that may be. ``read_once=True`` makes certain
    (0/1) every predicate whose atoms could repeat in the grounding
    (:func:`repeated_predicates`), so the exact probability is what the engine must return;
    ``crisp=True`` makes every atom certain. ``enumerable`` is kept for older callers: every
    case is enumerable (``max_uncertain`` at most ``MAX_UNCERTAIN_ATOMS``).
    """
    if not 0 <= max_uncertain <= MAX_UNCERTAIN_ATOMS:
        raise ValueError(f"max_uncertain must be 0..{MAX_UNCERTAIN_ATOMS} (what brute_force enumerates), "
                         f"got {max_uncertain}")
    unary, binary = vocabulary or default_vocabulary()
    n = 1 + draw(_SPREAD) % max_objects
    wanted = 0 if crisp else draw(_SPREAD) % (max_uncertain + 1)
    program = draw(_programs_of(tuple(unary), tuple(binary), max_depth))
    certain = repeated_predicates(program) if read_once else set()
    atoms = [(p, idx) for p in program.predicates() if p not in certain for idx in np.ndindex(*(n,) * p.arity)]
    k = round(wanted * min(max_uncertain, len(atoms)) / max_uncertain) if max_uncertain else 0  # scaled to what it has
    chosen = draw(st.lists(st.integers(0, len(atoms) - 1), min_size=k, max_size=k, unique=True)) if k else []
    values = iter(draw(st.lists(_UNCERTAIN, min_size=k, max_size=k))) if k else iter(())
    used = set(program.predicates())
    tables = {}
    for p in list(unary) + list(binary):
        shape = (n,) * p.arity
        size = int(np.prod(shape))
        cells = np.asarray(draw(st.lists(_CRISP if p in used or crisp else _ANY, min_size=size, max_size=size)),
                           dtype=np.float64).reshape(shape)
        tables[p] = cells
    for i in sorted(chosen):  # the chosen atoms: uncertain values in place of their 0/1
        p, idx = atoms[i]
        tables[p][idx] = next(values)
    return Case(program, tables, n)


_CRISP, _ANY, _UNCERTAIN = probabilities(crisp=True), probabilities(), uncertain_probabilities()
# a count is a wide integer's remainder: hypothesis's small integers cluster on the ends of their range
# (a draw of 1..5 gave one value 2 times in 150), a wide one's remainders spread over it
_SPREAD = st.integers(0, 2 ** 31 - 1)


def _new_programs(unary: tuple, binary: tuple, max_depth: int):
    """:func:`programs`, made once per vocabulary (:data:`_programs_of`): hypothesis validates a new
    recursive strategy on its first draw, most of a case's drawing when made anew for each case."""
    return programs(unary, binary, max_depth)


_programs_of = bounded_cache(_new_programs, 64)
