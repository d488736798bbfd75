"""Hypothesis strategies for GQA programs (needs the `hypothesis` test extra).

Not imported by `dsl` itself. Use it in any room's tests:

    from hypothesis import given
    from nablafol.dsl.testing import programs

    @given(programs())
    def test_compiles(program):
        ...

`programs()` draws valid `Program`s of every operation and argument form: chains of
select/filter/relate, the yes/no steps (verify, verify rel, exist, same/different with
one or two inputs, and/or, also sharing an input as GQA's `verify A and verify B`),
and the open ones (query, choose, choose rel, choose COMP, common). Names, values and
relations come from GQA's vocabulary or are made up (valid phrases); object ids are
None, `()` or digit strings. Every drawn program passes `validate_program` and
round-trips through `to_semantic_str` and `to_semantic`.
"""
from __future__ import annotations

from hypothesis import strategies as st

from .ast import (Alternatives, AttributeType, Empty, Objects, Program, Relation, Scene, Step,
                  Value)
from .ontology import Ontology
from .operations import COMPARATIVES

__all__ = ["words", "phrases", "type_names", "object_ids", "names", "values", "relations",
           "programs", "program_lines"]

_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"


def words() -> st.SearchStrategy[str]:
    """One word as the grammar allows: letters/digits, inner '-' or "'" ('t-shirt')."""
    part = st.text(_ALNUM, min_size=1, max_size=6)
    return st.builds(lambda first, rest: first + "".join(rest), part,
                     st.lists(st.tuples(st.sampled_from("-'"), part).map("".join), max_size=1))


def phrases(max_words: int = 3) -> st.SearchStrategy[str]:
    """Words separated by single spaces ('coffee table', 'to the left of')."""
    return st.lists(words(), min_size=1, max_size=max_words).map(" ".join)


def type_names() -> st.SearchStrategy[str]:
    """An attribute type as it may appear in an operation field (letters only):
    GQA's ('color', 'sportActivity', 'face expression') or made up."""
    made_up = st.lists(st.text("abcdefghijklmnopqrstuvwxyzA", min_size=1, max_size=7),
                       min_size=1, max_size=2).map(" ".join)
    return st.one_of(st.sampled_from(sorted(Ontology.gqa().attribute_types) + ["name"]), made_up)


def object_ids() -> st.SearchStrategy[tuple[str, ...] | None]:
    """None (no parentheses), () for '(-)', or 1-4 id strings."""
    return st.one_of(st.none(), st.just(()),
                     st.lists(st.text("0123456789", min_size=1, max_size=8), min_size=1,
                              max_size=4).map(tuple))


def _from_vocabulary(forms: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(forms), phrases())


def names() -> st.SearchStrategy[str]:
    """Object names (classes, categories, raw forms) or made-up phrases; never 'scene'."""
    gqa = Ontology.gqa()
    forms = sorted({gqa.raw_form(c) for c in gqa.classes} | set(gqa.categories))
    return _from_vocabulary(forms).filter(lambda name: name != "scene")


def values() -> st.SearchStrategy[str]:
    gqa = Ontology.gqa()
    return _from_vocabulary(sorted({gqa.raw_form(v) for vs in gqa.attribute_types.values() for v in vs}))


def relations() -> st.SearchStrategy[str]:
    return _from_vocabulary(sorted(Ontology.gqa().relations))


def _value_type() -> st.SearchStrategy[str | None]:
    """The type of a filter/verify/choose over values: none, or any but 'rel' and the
    comparatives (which change what the operation takes)."""
    return st.one_of(st.none(), type_names().filter(lambda t: t != "rel" and t not in COMPARATIVES))


@st.composite
def programs(draw, max_depth: int = 2) -> Program:
    """A valid GQA `Program` (see the module doc)."""
    steps: list[Step] = []

    def add(step: Step) -> int:
        steps.append(step)
        return len(steps) - 1

    def objects(depth: int) -> int:
        """select, then 0..depth+1 filters/relates; the index of the last."""
        if draw(st.integers(0, 9)) == 0:
            index = add(Step("select", None, Scene()))
        else:
            index = add(Step("select", None, Objects(draw(names()), draw(object_ids()))))
        for _ in range(draw(st.integers(0, depth + 1))):
            if draw(st.booleans()):
                value = Value(draw(values()), draw(st.booleans()))
                index = add(Step("filter", draw(_value_type()), value, (index,)))
            else:
                index = add(Step("relate", None, _relation(1), (index,)))
        return index

    def _relation(count: int) -> Relation:
        name = draw(st.one_of(st.just("_"), names()))
        return Relation(name, tuple(draw(relations()) for _ in range(count)), draw(st.sampled_from("so")),
                        draw(object_ids()))

    def boolean(depth: int) -> int:
        form = draw(st.sampled_from(["verify", "verify rel", "exist", "same one", "same two",
                                     "logic", "logic shared"] if depth > 0 else
                                    ["verify", "verify rel", "exist", "same one", "same two"]))
        if form == "verify":
            return add(Step("verify", draw(_value_type()), Value(draw(values())), (objects(depth),)))
        if form == "verify rel":
            return add(Step("verify", "rel", _relation(1), (objects(depth),)))
        if form == "exist":
            return add(Step("exist", None, Empty("?"), (objects(depth),)))
        verb = draw(st.sampled_from(["same", "different"]))
        if form == "same one":
            return add(Step(verb, None, AttributeType(draw(type_names())), (objects(depth),)))
        if form == "same two":
            first, second = objects(depth), objects(depth)
            return add(Step(verb, draw(type_names()), Empty(), (first, second)))
        logic = draw(st.sampled_from(["and", "or"]))
        if form == "logic shared":  # verify A [k] and verify B [k], as GQA writes it
            shared = objects(depth - 1)
            first = add(Step("verify", draw(_value_type()), Value(draw(values())), (shared,)))
            second = add(Step("verify", draw(_value_type()), Value(draw(values())), (shared,)))
            return add(Step(logic, None, Empty(), (first, second)))
        first, second = boolean(depth - 1), boolean(depth - 1)
        return add(Step(logic, None, Empty(), (first, second)))

    answer = draw(st.sampled_from(["boolean", "query", "choose", "choose rel", "compare", "common"]))
    if answer == "boolean":
        boolean(max_depth)
    elif answer == "query":
        add(Step("query", None, AttributeType(draw(type_names())), (objects(max_depth),)))
    elif answer == "choose":
        pair = tuple(draw(st.lists(values(), min_size=2, max_size=2)))
        add(Step("choose", draw(_value_type()), Alternatives(pair), (objects(max_depth),)))
    elif answer == "choose rel":
        add(Step("choose", "rel", _relation(2), (objects(max_depth),)))
    elif answer == "compare":
        first, second = objects(max_depth), objects(max_depth)
        add(Step("choose", draw(st.sampled_from(sorted(COMPARATIVES))), Empty(), (first, second)))
    else:
        first, second = objects(max_depth), objects(max_depth)
        add(Step("common", None, Empty(), (first, second)))
    return Program(tuple(steps))


def program_lines(max_depth: int = 2) -> st.SearchStrategy[str]:
    """Valid `semanticStr` lines (GQA's writer, quirks included)."""
    return programs(max_depth).map(Program.to_semantic_str)
