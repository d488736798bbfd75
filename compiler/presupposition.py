"""What an open question presupposes, widened: the program an answer falls back to when the
objects it asks about are none under the ontology.

``select: man->relate: place,on,o [0]->query: name [1]`` presupposes that the man is on some
place. When the ontology files nothing the man is on under ``place`` (GQA's vocabulary files
``train car`` under ``vehicle`` only), every candidate has probability 0 and the argmax would
be a guess. The decision (docs/design.md, "Presupposition"): an open question (``query``,
``choose``) whose every candidate is at probability 0 is asked again with the category named
by the ``relate`` its objects come from (the last one before its filters) widened to every
class (``relate: _,on,o``): the relation still ties the answer to the objects the question
starts from. Its answer is flagged as a presupposition fallback. A ``select`` is not widened:
every object of the scene would then be its objects, and the answer a tie broken by the order
of the candidates, a guess under another name. ``exist``/``verify`` are never widened: an
empty set is their answer.

    >>> from nablafol import dsl
    >>> program = dsl.parse_program("select: man->relate: place,on,o [0]->filter color: red [1]->query: name [2]")
    >>> print(widened_program(program, dsl.Ontology.gqa()).to_semantic_str())
    select: man->relate: _,on,o [0]->filter color: red [1]->query: name [2]
    >>> widened_program(dsl.parse_program("select: man->relate: bus,on,o [0]->query: name [1]"), dsl.Ontology.gqa())
    >>> widened_program(dsl.parse_program("select: man->relate: place,on,o [0]->exist: ? [1]"), dsl.Ontology.gqa())
    >>> widened_program(dsl.parse_program("select: place->query: name [0]"), dsl.Ontology.gqa())
"""
from __future__ import annotations

from typing import Optional

from nablafol import dsl
from nablafol.dsl import ast as A

__all__ = ["widened_program", "OPEN_OPERATIONS"]

#: the answer steps that presuppose their objects (an empty set is no answer of theirs)
OPEN_OPERATIONS = frozenset({"query", "choose"})


def widened_program(program: A.Program, ontology: dsl.Ontology) -> Optional[A.Program]:
    """``program`` with the category its open answer presupposes widened to every class, or None
    when there is nothing to widen: not an open question (or a comparison of two sets), its
    objects not selected by a ``relate`` naming a category (a class, a pronoun, ``_``, a
    ``select``)."""
    steps = program.steps
    last = steps[-1]
    if last.operation not in OPEN_OPERATIONS or len(last.dependencies) != 1 or last.is_comparative:
        return None
    index = last.dependencies[0]
    while steps[index].operation == "filter" and len(steps[index].dependencies) == 1:
        index = steps[index].dependencies[0]
    step = steps[index]
    arg = step.argument
    if step.operation != "relate" or not isinstance(arg, A.Relation) or arg.any_name:
        return None
    name = ontology.normalize(arg.name)
    if not ontology.is_category(name) or name in ontology.pronouns:
        return None
    wider = A.Relation("_", arg.relations, arg.role, arg.ids)
    return A.Program(steps[:index] + (A.Step(step.operation, step.type, wider, step.dependencies),)
                     + steps[index + 1:])
