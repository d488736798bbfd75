"""Compiling by skeleton: programs that differ only in their words share one translation.

Most GQA programs repeat a few structures with other names, values and relations ("select:
cup -> filter color: red -> exist" and "select: dog -> filter color: brown -> exist"). A
program's *skeleton key* is what the translation's structure depends on: every step's operation,
type (but a filtered or verified value's), argument form, dependencies and role, with the words that only name a predicate (a selected or related
name, a filtered or verified value, a relation) replaced by *slots*, and the words that decide
more kept as written:

* a ``query``'s type, and the name that selected its objects when it asks their name (the
  candidates are the classes under that name);
* ``choose``'s alternatives (they are the answers) and the compared objects' names;
* ``left``/``right``, ``_`` (a relate to anything), ``scene``, ``not(...)``;
* which slots name one predicate (two equal predicates make one node where two make two).

The first program of a key is translated and walked; the next ones only fill its predicates in
(:meth:`nablafol.ir.Program.refilled`): no translation, no walk; and a line of a key met before is
read from its text (:meth:`Skeletons.known`, :mod:`compiler.step_words`), not parsed. A program
whose slot names a
predicate the skeleton also holds as a constant (a filtered ``red`` under ``choose: red|blue``)
would merge nodes the skeleton keeps apart: it is translated alone.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

from nablafol.caching import bounded_cache, weighted_cache
from nablafol.dsl import ast as A
from nablafol.dsl import COMPARATIVES
from nablafol.ir import Predicate, Program

from .concepts import SCENE, Concepts
from .errors import CompileError
from .step_words import StepWords, words_of_program, words_of_template

_VALUE_VERBS = frozenset({"filter", "verify"})


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
        # weighted by one a skeleton: a count, with a look that computes nothing (``get``)
        self._skeleton = weighted_cache(self._skeleton_uncached, size, weight=lambda skeleton: 1)
        self._constants = bounded_cache(self._constants_uncached, 4096)

    def program(self, program: A.Program) -> Program:
        """``program`` translated: equal to ``translate(program)``."""
        try:
            reading = self.reading(program)
        except CompileError:  # an unknown word: translated alone, the error names its step
            return self._translate(program)
        keyed = self._keyed(reading, program)
        if keyed is None:
            return self._translate(program)
        skeleton = self._skeleton(keyed)
        if skeleton is None:  # a structure the shape does not know: translated alone
            return self._translate(program)
        if keyed.program is None:  # the skeleton was made of this very program
            return skeleton.program
        return _filled(skeleton, reading.slots)

    def known(self, template: str) -> Optional[Program]:
        """The program of an id template (``dsl.id_template``) whose skeleton key was met before,
        filled in from its text alone (:func:`compiler.step_words.words_of_template`: no parse,
        no translation); ``None`` otherwise (a new key, a line not in the strict form, a word the
        vocabulary refuses, a slot equal to a constant): such a line goes the whole way."""
        steps = words_of_template(template)
        if steps is None:
            return None
        try:
            reading = self.reading_of(steps)
        except CompileError:
            return None
        keyed = self._keyed(reading, None)
        if keyed is None:
            return None
        skeleton = self._skeleton.get(keyed)  # None: a key not met (or met, of a shape the engine lacks)
        return None if skeleton is None else _filled(skeleton, reading.slots)

    @staticmethod
    def _keyed(reading: Reading, program: Optional[A.Program]) -> Optional[_Keyed]:
        """The cache key of a reading, or ``None`` when a slot names a predicate the skeleton
        also holds as a constant (it would merge nodes the skeleton keeps apart)."""
        slots = reading.slots
        if any(not group.isdisjoint(slots) for group in reading.constants):
            return None
        first: dict = {}
        pattern = tuple([first.setdefault(p, k) for k, p in enumerate(slots)])
        return _Keyed((reading.key, pattern), program, slots)

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
        return self.reading_of(words_of_program(program))

    def reading_of(self, steps: tuple[StepWords, ...]) -> Reading:
        """The reading of a program's steps as words (:mod:`compiler.step_words`): from a parsed
        program or from its text, the same. Each entry starts with the step's verb, type,
        argument form, number of parts and dependencies: all that the parser's checks read, so a
        key met before is of a well-formed program."""
        c = self.c
        key: list = []
        slots: list[Predicate] = []
        constants: list = []
        names: list = []  # per step: (vocabulary form, raw name) of the objects' name, as the translator's ObjectSet
        for op, type_, form, parts, deps in steps:
            name = (None, None)
            # a filtered or verified value's type only names its predicate (a slot), but for `rel`
            head = (op, type_ == "rel" if op in _VALUE_VERBS and form != "relation" else type_, form, len(parts), deps)
            entry: tuple = head
            # a form its operation does not take (only text outside the grammar's checks gives
            # one) falls to the last case: its key is never met, so the parser reads it and refuses
            if op == "select" and form == "scene":
                constants.append(frozenset((SCENE,)))
                name = (None, "scene")
            elif op == "select" and form == "phrase":
                predicate = c.name(parts[0])
                slots.append(predicate)
                name = (predicate.name, parts[0])
            elif (op == "filter" and form in ("phrase", "negated")) or (op == "verify" and form == "phrase"):
                slots.append(c.value(parts[0], type_))
                name = _input(names, deps[0]) if op == "filter" and deps else (None, None)
            elif op in ("relate", "verify") and form == "relation":
                name = self._relation(parts, slots)
                entry = (head, parts[0] == "_", parts[-1])
                if op == "verify":
                    name = (None, None)
            elif op == "query" and form == "phrase":
                source = _input(names, deps[0])[0] if deps and c.type(parts[0]) == "name" else None
                constants.append(self._constants("candidates", parts[0], source))
                entry = (head, parts, source)
            elif op == "choose":
                entry = self._choose(head, parts, [_input(names, d) for d in deps], slots, constants)
            elif op in ("same", "different") and (type_ is not None or form == "phrase"):
                constants.append(self._constants("candidates", type_ if type_ is not None else parts[0], None))
                entry = (head, parts)
            elif op == "common":
                constants.append(self._constants("common", None, None))
            else:  # and, or, exist, and what the translator refuses (it says why)
                entry = (head, parts)
            key.append(entry)
            names.append(name)
        return Reading(tuple(key), tuple(slots), tuple(constants))

    def _relation(self, parts: tuple, slots: list, relation_slots: bool = True) -> tuple:
        """The slots of a relation's words ``(name, relation..., role)`` (its relation, unless
        ``relation_slots`` is false or it has two, and its name unless ``_``), and the name of
        the objects it gives."""
        if relation_slots and len(parts) == 3:
            slots.append(self.c.relation(parts[1]))
        if parts[0] == "_":
            return (None, None)
        predicate = self.c.name(parts[0])
        slots.append(predicate)
        return (predicate.name, parts[0])

    def _choose(self, head: tuple, parts: tuple, inputs: list, slots: list, constants: list) -> tuple:
        type_, form = head[1], head[2]
        if form == "empty" and type_ in COMPARATIVES:  # the answers are the compared objects' names
            constants.append(frozenset((self.c.comparative(type_),)))
            return (head, tuple(raw or vocabulary for vocabulary, raw in inputs))
        if form == "relation":  # the answers are the relations
            self._relation(parts, slots, relation_slots=False)
            constants.append(frozenset(self.c.relation(r) for r in parts[1:-1]))
            return (head, parts[0] == "_", parts[1:])
        if form == "alternatives":  # the answers are the values
            constants.append(frozenset(self.c.value(v, type_ or None) for v in parts))
        return (head, parts)

    def _constants_uncached(self, what: str, type_, source) -> frozenset:
        if what == "common":
            return frozenset(self.c.common_values[0])
        return frozenset(self.c.candidates(type_, source)[0])


def _input(names: list, dependency: int) -> tuple:
    """The (vocabulary form, raw name) of the objects a step reads from step ``dependency``."""
    return names[dependency] if 0 <= dependency < len(names) else (None, None)


def _filled(skeleton: Skeleton, slots: tuple) -> Program:
    """The skeleton's program with the slots' predicates in their places."""
    unary = {i: slots[k] for k, numbers in enumerate(skeleton.unary) for i in numbers}
    binary = {i: slots[k] for k, numbers in enumerate(skeleton.binary) for i in numbers}
    return skeleton.program.refilled(unary, binary)


def _numbers(predicates: tuple, predicate: Predicate) -> tuple:
    """The local number of ``predicate`` among ``predicates`` (a scan in C), as a tuple: ``()``
    where it is not there (a slot of the other arity)."""
    return (predicates.index(predicate),) if predicate in predicates else ()
