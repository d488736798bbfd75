"""A GQA program's steps as words: what a skeleton key reads, from a parsed program or its text.

A step is its verb, its type, the *form* of its argument (``phrase``, ``scene``, ``negated``,
``alternatives``, ``relation``, ``question``, ``empty``), the argument's words and its
dependencies:

    >>> words_of_template("select: wall (-)->relate: _,on,s (-) [0]->exist: ? [1]")
    (StepWords(verb='select', type=None, form='phrase', parts=('wall',), dependencies=()), \
StepWords(verb='relate', type=None, form='relation', parts=('_', 'on', 's'), dependencies=(0,)), \
StepWords(verb='exist', type=None, form='question', parts=(), dependencies=(1,)))

:func:`words_of_template` reads an id template (``dsl.id_template``) with regular expressions
alone: no Lark parse, no AST. It reads a strict part of the grammar (``dsl/grammar/gqa.lark``,
the one-token forms, whose patterns it shares) and gives ``None`` for anything else, so a line it
reads is one the parser reads into the same words (a property test checks it against
:func:`words_of_program` of the parsed line). What the parser would still refuse of a line it
reads (an argument of another operation's shape, a dependency that points forward) is decided by
the verbs, types, forms, part counts and dependencies, which every skeleton key holds: a line
whose key was met before is well formed. A line whose key is new is parsed, and refused there
with its one-line error.
"""
from __future__ import annotations

import re
from typing import NamedTuple, Optional

from nablafol.caching import bounded_cache
from nablafol.dsl import ast as A

__all__ = ["StepWords", "words_of_program", "words_of_template"]


class StepWords(NamedTuple):
    """One step as words (``parts``: a phrase's text; a relation's name, relations and role; the
    alternatives; nothing for ``scene``, ``question`` and ``empty``)."""

    verb: str
    type: Optional[str]
    form: str
    parts: tuple
    dependencies: tuple


# -- from a parsed program ---------------------------------------------------------------------

def _step_words(step: A.Step) -> StepWords:
    arg = step.argument
    cls = arg.__class__
    if cls is A.Objects or cls is A.AttributeType:
        form, parts = "phrase", (arg.name,)
    elif cls is A.Value:
        form, parts = ("negated" if arg.negated else "phrase"), (arg.value,)
    elif cls is A.Relation:
        form, parts = "relation", (arg.name, *arg.relations, arg.role)
    elif cls is A.Alternatives:
        form, parts = "alternatives", tuple(arg.values)
    elif cls is A.Scene:
        form, parts = "scene", ()
    elif cls is A.Empty:
        form, parts = ("question" if arg.marker == "?" else "empty"), ()
    else:  # pragma: no cover - the readers build only the classes above
        raise TypeError(f"unknown argument {arg!r}")
    return StepWords(step.operation, step.type, form, parts, tuple(step.dependencies))


def words_of_program(program: A.Program) -> tuple[StepWords, ...]:
    """The steps of a parsed program as words (object ids are not words)."""
    return tuple([_step_words(step) for step in program.steps])


# -- from an id template's text ----------------------------------------------------------------
# The grammar's own patterns: OPERATION, WORD and PHRASE, OBJECT_IDS as a template writes them
# (" (-)"), DEPENDENCIES and TRAILING_SPACE.
_WORD = r"[^\W_]+(?:['-][^\W_]+)*"
_PHRASE = rf"{_WORD}(?: {_WORD})*"
_HEAD = r"(?P<verb>[a-z]+)(?: (?P<type>[A-Za-z]+(?: [A-Za-z]+)*))?: "
_TAIL = r"(?P<deps> +\[[0-9]{1,6}(?:, [0-9]{1,6})*\])? *"
_IDS = r"(?P<ids> \(-\))?"
_ARGUMENT = {
    "phrase": rf"(?P<a>{_PHRASE}){_IDS}",
    "negated": rf"not\((?P<a>{_PHRASE})\)",
    "alternatives": rf"(?P<a>{_PHRASE}(?:\|{_PHRASE})+)",
    "relation": rf"(?P<a>_|{_PHRASE}), ?(?P<b>{_PHRASE}(?:\|{_PHRASE})*), ?(?P<c>[so]){_IDS}",
    "question": r"\?",
    "empty": "",
}
# each form alone (tried in this order: their texts are disjoint, so at most one reads a step)
_STEP = {form: re.compile(_HEAD + pattern + _TAIL) for form, pattern in _ARGUMENT.items()}
_ARROW = "->"


def _template_step_uncached(piece: str) -> Optional[StepWords]:
    for form, pattern in _STEP.items():
        m = pattern.fullmatch(piece)
        if m is None:
            continue
        verb, type_, deps = m.group("verb"), m.group("type"), m.group("deps")
        dependencies = () if deps is None else tuple([int(d) for d in deps.strip()[1:-1].split(", ")])
        if form == "phrase":
            phrase = m.group("a")
            if m.group("ids") is not None:  # only a select's name carries ids (the parser says so)
                if verb != "select":
                    return None
            elif verb == "select" and phrase == "scene":
                return StepWords(verb, type_, "scene", (), dependencies)
            return StepWords(verb, type_, form, (phrase,), dependencies)
        if form == "relation":
            parts = (m.group("a"), *m.group("b").split("|"), m.group("c"))
        elif form == "negated":
            parts = (m.group("a"),)
        elif form == "alternatives":
            parts = tuple(m.group("a").split("|"))
        else:
            parts = ()
        return StepWords(verb, type_, form, parts, dependencies)
    return None


# a program's steps repeat across programs far more than its lines do ("exist: ? [2]")
_template_step = bounded_cache(_template_step_uncached, 1 << 16)


def words_of_template(template: str) -> Optional[tuple[StepWords, ...]]:
    """The steps of an id template (every id group written `` (-)``) as words, read without the
    parser; ``None`` where the line is not in the strict form this reads (the parser then reads
    it, or says what is wrong with it)."""
    steps = tuple(map(_template_step, template.split(_ARROW)))
    return None if None in steps else steps
