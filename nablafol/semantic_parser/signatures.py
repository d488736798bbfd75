"""What each operation field may be written with: its argument *forms* and, for each, how many
steps it consumes, of which kind, and what it yields. Read from ``nablafol.dsl`` itself, by
parsing a small probe program per (field, form): nothing here restates which operation takes
which argument, so the decoder follows the dsl wherever the dsl goes.

A form is the sequence of grammar terminals an argument is written with, token by token (the
grammar's fall-through rules: ``not(`` PHRASE ``)``, PHRASE ``|`` PHRASE, ...); ``NAME`` is the
relation's name slot, a PHRASE or ``_``.

    >>> [(s.form, s.arity, s.consumes.name, s.yields.name) for s in step_signatures("filter color")]
    [('phrase', 1, 'OBJECTS', 'OBJECTS'), ('negated', 1, 'OBJECTS', 'OBJECTS')]
    >>> [(s.form, s.arity) for s in step_signatures("choose larger")], step_signatures("frobnicate")
    ([('empty', 2)], ())
    >>> form_of(parse_program("select: x->relate: _,on,s [0]->exist: ? [1]").steps[1].argument)
    'relation'
"""
from __future__ import annotations

from dataclasses import dataclass

from nablafol.caching import bounded_cache
from nablafol.dsl import (Alternatives, AttributeType, Empty, Kind, Objects, ProgramError, Relation, Scene,
                          Value, parse_program)

__all__ = ["FORMS", "Signature", "step_signatures", "form_of"]

#: Form name -> the terminals it is written with, in order.
FORMS: dict[str, tuple[str, ...]] = {
    "phrase": ("PHRASE",),
    "negated": ("NOT", "PHRASE", "_RPAR"),
    "alternatives": ("PHRASE", "_BAR", "PHRASE"),
    "relation": ("NAME", "_COMMA", "PHRASE", "_COMMA", "ROLE"),
    "relations": ("NAME", "_COMMA", "PHRASE", "_BAR", "PHRASE", "_COMMA", "ROLE"),
    "question": ("QUESTION",),
    "empty": (),
}
# A text of each form, for the probes.
_SAMPLES = {"phrase": "x", "negated": "not(x)", "alternatives": "x|y", "relation": "x,y,s",
            "relations": "x,y|z,s", "question": "?", "empty": ""}


@dataclass(frozen=True)
class Signature:
    """One way to write a step: ``field`` (``filter color``), ``form``, and the dsl's reading of
    it: ``arity`` steps consumed, each yielding ``consumes``; the step ``yields``."""

    field: str
    form: str
    arity: int
    consumes: Kind
    yields: Kind


def form_of(argument) -> str:
    """The form a parsed argument is written in."""
    if isinstance(argument, (Objects, Scene, AttributeType)):
        return "phrase"
    if isinstance(argument, Value):
        return "negated" if argument.negated else "phrase"
    if isinstance(argument, Alternatives) and len(argument.values) == 2:
        return "alternatives"
    if isinstance(argument, Relation) and len(argument.relations) in (1, 2):
        return "relation" if len(argument.relations) == 1 else "relations"
    if isinstance(argument, Empty):
        return "question" if argument.marker == "?" else "empty"
    raise ValueError(f"no form writes {argument!r}")


def _probe(field: str, form: str) -> Signature | None:
    """The signature the dsl gives ``field: SAMPLE`` inside a well-formed program, or None."""
    for arity in (0, 1, 2):
        for kind in ((Kind.OBJECTS,) if arity == 0 else (Kind.OBJECTS, Kind.BOOLEAN)):
            if kind is Kind.OBJECTS:
                inputs, deps = ["select: x"] * arity, list(range(arity))
            else:
                inputs = [s for k in range(arity) for s in ("select: x", f"exist: ? [{2 * k}]")]
                deps = [2 * k + 1 for k in range(arity)]
            step = f"{field}: {_SAMPLES[form]}" + (f" [{', '.join(map(str, deps))}]" if deps else "")
            for ending in ("", f"->exist: ? [{len(inputs)}]"):
                try:
                    parsed = parse_program("->".join(inputs + [step]) + ending).steps[len(inputs)]
                except ProgramError:
                    continue
                if form_of(parsed.argument) != form:
                    continue
                return Signature(field, form, parsed.arity, parsed.consumes, parsed.yields)
    return None


def _step_signatures(field: str) -> tuple[Signature, ...]:
    """Every form ``field`` can be written with, in :data:`FORMS` order (empty: an unknown field)."""
    return tuple(s for s in (_probe(field, form) for form in FORMS) if s is not None)


#: :func:`_step_signatures`, probed once per field: fields come from parser folders, so the cache is
#: bounded (caching rule 2; what it depends on, the dsl, is the module's own).
step_signatures = bounded_cache(_step_signatures, 4096)
