"""Compiling by skeleton: programs that differ only in their words share one translation.

Most GQA programs repeat a few structures with other names, values and relations ("select:
cup -> filter color: red -> exist" and "select: dog -> filter color: brown -> exist"). A
program's *skeleton key* is what the translation's structure depends on: every step's operation,
type, dependencies and role, with the words that only name a predicate (a selected or related
name, a filtered or verified value, a relation) replaced by *slots*, and the words that decide
more kept as written:

* a ``query``'s type, and the name that selected its objects when it asks their name (the
  candidates are the classes under that name);
* ``choose``'s alternatives (they are the answers) and the compared objects' names;
* ``left``/``right``, ``_`` (a relate to anything), ``scene``, ``not(...)``;
* which slots name one predicate (two equal predicates make one node where two make two).

The first program of a key is translated and walked; the next ones only fill its predicates in
(:meth:`nablafol.ir.Program.refilled`): no translation, no walk. A program whose slot names a
predicate the skeleton also holds as a constant (a filtered ``red`` under ``choose: red|blue``)
would merge nodes the skeleton keeps apart: it is translated alone.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

from nablafol.caching import bounded_cache
from nablafol.dsl import ast as A
from nablafol.ir import Predicate, Program

from .concepts import SCENE, Concepts
from .errors import CompileError

SLOT = "slot"  # a word that names a predicate, in a key


class Reading(NamedTuple):
    """What a program's skeleton key is made of: ``key`` (one entry per step), the slots'
    predicates in order, and the skeleton's constant predicates as sets (to find collisions)."""

    key: tuple
    slots: tuple
    constants: tuple


class Skeleton(NamedTuple):
    """A translated program and where each slot's predicate sits in its shape (``unary[k]``:
    the local unary numbers of slot ``k``'s predicate; likewise ``binary``)."""

    program: Program
    unary: tuple
    binary: tuple


class _Keyed:
    """A cache key: a skeleton key, carrying the first program of that key until it is translated."""

    __slots__ = ("key", "program", "slots", "_hash")

    def __init__(self, key: tuple, program: A.Program, slots: tuple):
        self.key, self.program, self.slots = key, program, slots
        self._hash = hash(key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return isinstance(other, _Keyed) and other.key == self.key


class Skeletons:
    """Translates GQA programs through their skeletons (``translate`` translates one alone)."""

    def __init__(self, concepts: Concepts, translate: Callable[[A.Program], Program], size: int = 1 << 14):
        self.c = concepts
        self._translate = translate
        self._skeleton = bounded_cache(self._skeleton_uncached, size)
        self._constants = bounded_cache(self._constants_uncached, 4096)

    def program(self, program: A.Program) -> Program:
        """``program`` translated: equal to ``translate(program)``."""
        try:
            reading = self.reading(program)
        except CompileError:  # an unknown word: translated alone, the error names its step
            return self._translate(program)
        slots = reading.slots
        if any(not group.isdisjoint(slots) for group in reading.constants):
            return self._translate(program)
        first: dict = {}
        pattern = tuple([first.setdefault(p, k) for k, p in enumerate(slots)])
        keyed = _Keyed((reading.key, pattern), program, slots)
        skeleton = self._skeleton(keyed)
        if skeleton is None:  # a structure the shape does not know: translated alone
            return self._translate(program)
        if keyed.program is None:  # the skeleton was made of this very program
            return skeleton.program
        unary = {i: slots[k] for k, numbers in enumerate(skeleton.unary) for i in numbers}
        binary = {i: slots[k] for k, numbers in enumerate(skeleton.binary) for i in numbers}
        return skeleton.program.refilled(unary, binary)

    def _skeleton_uncached(self, keyed: _Keyed) -> Optional[Skeleton]:
        program, slots = keyed.program, keyed.slots
        keyed.program = keyed.slots = None  # the cache keeps the key, not the question
        translated = self._translate(program)
        shape = translated.shape()
        if shape is None:
            return None
        # a predicate is a local number of its shape once; a slot repeated names that number again
        return Skeleton(translated, tuple(_numbers(shape.unary, p) for p in slots),
                        tuple(_numbers(shape.binary, p) for p in slots))

    # -- the key --------------------------------------------------------------------------
    def reading(self, program: A.Program) -> Reading:
        """The skeleton key of ``program``, its slots and its constants (see the module's
        docstring); raises :class:`CompileError` for a word the vocabulary refuses."""
        c = self.c
        key: list = []
        slots: list[Predicate] = []
        constants: list = []
        names: list = []  # per step: (vocabulary form, raw name) of the objects' name, as the translator's ObjectSet
        for step in program.steps:
            op, arg, deps = step.operation, step.argument, step.dependencies
            inputs = [names[d] if 0 <= d < len(names) else (None, None) for d in deps]
            name = (None, None)
            entry: tuple = (op, deps)
            if op == "select":
                if isinstance(arg, A.Scene):
                    constants.append(frozenset((SCENE,)))
                    entry, name = (op, deps, "scene"), (None, "scene")
                else:
                    predicate = c.name(arg.name)
                    slots.append(predicate)
                    name = (predicate.name, arg.name)
            elif op == "filter" or (op == "verify" and isinstance(arg, A.Value)):
                slots.append(c.value(arg.value, step.type))
                entry = (op, deps, arg.negated)
                name = inputs[0] if op == "filter" and inputs else (None, None)
            elif op in ("relate", "verify") and isinstance(arg, A.Relation):
                name = self._relation(arg, arg.relations, slots)
                entry = (op, deps, step.type, arg.role, arg.any_name, len(arg.relations))
                if op == "verify":
                    name = (None, None)
            elif op == "query" and isinstance(arg, A.AttributeType):
                source = inputs[0][0] if inputs and c.type(arg.name) == "name" else None
                constants.append(self._constants("candidates", arg.name, source))
                entry = (op, deps, step.type, arg, source)
            elif op == "choose":
                entry = self._choose(step, inputs, slots, constants)
            elif op in ("same", "different") and (step.type is not None or isinstance(arg, A.AttributeType)):
                constants.append(self._constants("candidates", step.type if step.type is not None else arg.name, None))
                entry = (op, deps, step.type, arg)
            elif op == "common":
                constants.append(self._constants("common", None, None))
            else:  # and, or, exist, and what the translator refuses (it says why)
                entry = (op, deps, step.type, arg)
            key.append(entry)
            names.append(name)
        return Reading(tuple(key), tuple(slots), tuple(constants))

    def _relation(self, arg: A.Relation, relations, slots: list, relation_slots: bool = True) -> tuple:
        """The slots of a relate (its relation, unless ``relation_slots`` is false, and its name
        unless ``_``), and the name of the objects it gives."""
        if relation_slots and len(relations) == 1:
            slots.append(self.c.relation(relations[0]))
        if arg.any_name:
            return (None, None)
        predicate = self.c.name(arg.name)
        slots.append(predicate)
        return (predicate.name, arg.name)

    def _choose(self, step: A.Step, inputs: list, slots: list, constants: list) -> tuple:
        op, arg, deps = step.operation, step.argument, step.dependencies
        if step.is_comparative:  # the answers are the compared objects' names
            constants.append(frozenset((self.c.comparative(step.type),)))
            return (op, deps, step.type, tuple(raw or form for form, raw in inputs))
        if isinstance(arg, A.Relation):  # the answers are the relations
            self._relation(arg, arg.relations, slots, relation_slots=False)
            constants.append(frozenset(self.c.relation(r) for r in arg.relations))
            return (op, deps, step.type, arg.role, arg.any_name, arg.relations)
        type_ = None if step.type in (None, "") else step.type
        if isinstance(arg, A.Alternatives):  # the answers are the values
            constants.append(frozenset(self.c.value(v, type_) for v in arg.values))
        return (op, deps, step.type, arg)

    def _constants_uncached(self, what: str, type_, source) -> frozenset:
        if what == "common":
            return frozenset(self.c.common_values[0])
        return frozenset(self.c.candidates(type_, source)[0])


def _numbers(predicates: tuple, predicate: Predicate) -> tuple:
    """The local number of ``predicate`` among ``predicates`` (a scan in C), as a tuple: ``()``
    where it is not there (a slot of the other arity)."""
    return (predicates.index(predicate),) if predicate in predicates else ()
