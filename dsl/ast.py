"""The typed, immutable AST of a GQA program.

A `Program` is a tuple of `Step`s; the last step is the answer. Each step has a
bare verb (`operation`), the rest of GQA's operation field (`type`), a typed
`argument` and the indices of the earlier steps it consumes (`dependencies`):

    select: wall (722332)->filter color: white [0]->relate: _,on,s (722335) [1]->query: name [2]

    Program(steps=(
        Step('select', None,    Objects('wall', ('722332',)),                ()),
        Step('filter', 'color', Value('white'),                              (0,)),
        Step('relate', None,    Relation('_', ('on',), 's', ('722335',)),    (1,)),
        Step('query',  None,    AttributeType('name'),                       (2,)),
    ))

Argument classes, by operation:

    select                          Objects(name, ids) or Scene()
    filter [TYPE]                   Value(value, negated)        not(VALUE) -> negated=True
    verify [TYPE]                   Value(value)
    relate, verify rel              Relation(name, (REL,), role, ids)
    choose rel                      Relation(name, (REL1, REL2), role, ids)
    choose [TYPE]                   Alternatives((V1, V2))
    query, one-input same/different AttributeType(name)
    exist                           Empty('?')
    and, or, common, choose COMP,   Empty()
    two-input same/different TYPE

Object ids are GQA's ground-truth annotation: `ids` is a tuple of id strings,
`()` for `(-)` and None when the text has no parentheses. Every object here is
a frozen dataclass, so programs are hashable and compare by value.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Union

from .operations import COMPARATIVES, CONSUMES, YIELDS, Kind

__all__ = ["Objects", "Scene", "Value", "Relation", "Alternatives", "AttributeType", "Empty",
           "Argument", "Step", "Program", "Kind"]


def _ids_text(ids: tuple[str, ...] | None) -> str:
    if ids is None:
        return ""
    return " (" + (",".join(ids) if ids else "-") + ")"


@dataclass(frozen=True, slots=True)
class Objects:
    """`NAME (ids)`: the objects named NAME (a class or a category). A select of `scene`
    without ids is the scene itself (`Scene`), never `Objects('scene')`."""

    name: str
    ids: tuple[str, ...] | None = None

    def __str__(self) -> str:
        return self.name + _ids_text(self.ids)

    def with_ids(self, ids: tuple[str, ...] | None) -> "Objects":
        return Objects(self.name, ids)


@dataclass(frozen=True, slots=True)
class Scene:
    """`scene`: the whole image, for scene-level questions (place, weather, location)."""

    def __str__(self) -> str:
        return "scene"


@dataclass(frozen=True, slots=True)
class Value:
    """`VALUE` or `not(VALUE)`: an attribute value (untyped filters also take names, e.g. `on`)."""

    value: str
    negated: bool = False

    def __str__(self) -> str:
        return f"not({self.value})" if self.negated else self.value


@dataclass(frozen=True, slots=True)
class Relation:
    """`NAME,REL[|REL2],ROLE (ids)`: the NAME objects in relation REL with the input.

    role 's': the NAME objects are the subject, REL(Y, X); role 'o': they are the
    object, REL(X, Y) (X the input objects, Y the NAME objects). `_` names anything.
    """

    name: str
    relations: tuple[str, ...]
    role: str
    ids: tuple[str, ...] | None = None

    @property
    def relation(self) -> str:
        """The relation of a one-relation argument (relate, verify rel)."""
        if len(self.relations) != 1:
            raise ValueError(f"{self} has {len(self.relations)} relations, not one")
        return self.relations[0]

    @property
    def any_name(self) -> bool:
        return self.name == "_"

    def __str__(self) -> str:
        return f"{self.name},{'|'.join(self.relations)},{self.role}" + _ids_text(self.ids)

    def with_ids(self, ids: tuple[str, ...] | None) -> "Relation":
        return Relation(self.name, self.relations, self.role, ids)


@dataclass(frozen=True, slots=True)
class Alternatives:
    """`V1|V2`: the two candidate values of a `choose`."""

    values: tuple[str, ...]

    def __str__(self) -> str:
        return "|".join(self.values)


@dataclass(frozen=True, slots=True)
class AttributeType:
    """`TYPE`: an attribute type such as `color`, `material`, `hposition` or `name`."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Empty:
    """No argument. GQA writes `exist: ?`, kept as marker '?'; everywhere else the marker is ''."""

    marker: str = ""

    def __str__(self) -> str:
        return self.marker


Argument = Union[Objects, Scene, Value, Relation, Alternatives, AttributeType, Empty]


@dataclass(frozen=True, slots=True)
class Step:
    """One GQA step: `operation` (bare verb), `type` (the rest of the operation field or
    None), `argument` and `dependencies` (indices of the earlier steps it consumes)."""

    operation: str
    type: str | None
    argument: Argument
    dependencies: tuple[int, ...] = ()

    @property
    def field(self) -> str:
        """GQA's operation field: 'filter color', 'verify rel', 'choose less healthy', 'select'."""
        return self.operation if self.type is None else f"{self.operation} {self.type}"

    @property
    def is_comparative(self) -> bool:
        """`choose COMP` over two objects (choose healthier, choose older, ...)."""
        return self.operation == "choose" and self.type in COMPARATIVES and isinstance(self.argument, Empty)

    @property
    def yields(self) -> Kind:
        """What the step produces: objects, a yes/no probability, or an open answer."""
        return YIELDS[self.operation]

    @property
    def consumes(self) -> Kind:
        """What the step's dependencies must produce."""
        return CONSUMES[self.operation]

    @property
    def arity(self) -> int:
        """How many dependencies the step takes."""
        verb = self.operation
        if verb == "select":
            return 0
        if verb in ("and", "or", "common"):
            return 2
        if verb == "choose":
            return 2 if self.is_comparative else 1
        if verb in ("same", "different"):
            return 2 if self.type is not None else 1
        return 1

    def argument_text(self) -> str:
        """The argument as GQA writes it ('wall (722332)', 'not(on)', '_,on,s (722335)', '')."""
        return str(self.argument)

    def __str__(self) -> str:
        text = f"{self.field}: {self.argument}"
        if self.dependencies:
            text += " [" + ", ".join(map(str, self.dependencies)) + "]"
        return text


@dataclass(frozen=True, slots=True)
class Program:
    """A GQA program: steps in order; the last one is the answer."""

    steps: tuple[Step, ...]

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def __getitem__(self, index: int) -> Step:
        return self.steps[index]

    def without_ids(self) -> "Program":
        """The program with every object-id annotation dropped (what reasoning may see).

            >>> from nablafol.dsl import parse_program
            >>> print(parse_program("select: cup (12)->relate: _,on,s (-) [0]->exist: ? [1]").without_ids().to_semantic_str())
            select: cup->relate: _,on,s [0]->exist: ? [1]
        """
        return Program(tuple(Step(s.operation, s.type, s.argument.with_ids(None), s.dependencies)
                             if getattr(s.argument, "ids", None) is not None else s for s in self.steps))

    @property
    def answer_step(self) -> Step:
        """The last step, whose result is the answer."""
        return self.steps[-1]

    @property
    def is_binary(self) -> bool:
        """True for yes/no questions (the last step is verify, exist, and, or, same or
        different); False for open ones (query, choose, common)."""
        return self.steps[-1].yields is Kind.BOOLEAN

    def to_semantic_str(self) -> str:
        """The program as GQA's `semanticStr` line.

        Arguments follow GQA's own writer, quirks included: an empty argument leaves two
        spaces before the dependencies (`or:  [1, 3]`), and the first step of the second
        branch of a two-input answer carries a trailing space (`select: nuts (-) ->`), so
        real lines come back verbatim.
        """
        spaced = _gqa_spaced_steps(self.steps)
        parts = []
        for index, step in enumerate(self.steps):
            text = f"{step.field}: {step.argument}"
            if index in spaced:
                text += " "
            if step.dependencies:
                text += " [" + ", ".join(map(str, step.dependencies)) + "]"
            parts.append(text)
        return "->".join(parts)

    def to_semantic(self) -> list[dict]:
        """The program as GQA's `semantic` list: [{'operation', 'dependencies', 'argument'}, ...]
        (GQA's key order and trailing-space quirk, see `to_semantic_str`)."""
        spaced = _gqa_spaced_steps(self.steps)
        return [{"operation": step.field,
                 "dependencies": list(step.dependencies),
                 "argument": str(step.argument) + (" " if index in spaced else "")}
                for index, step in enumerate(self.steps)]

    def __str__(self) -> str:
        if not self.steps:
            return "Program: no steps"
        answer = "yes/no" if self.is_binary else "open answer"
        width = max(len(step.field) for step in self.steps)
        lines = [f"Program: {len(self.steps)} steps, answer from step {len(self.steps) - 1} ({answer})"]
        for index, step in enumerate(self.steps):
            uses = f"  <- {list(step.dependencies)}" if step.dependencies else ""
            lines.append(f"  [{index}] {step.field:<{width}}  {step.argument!r}{uses}")
        return "\n".join(lines)


def _gqa_spaced_steps(steps: tuple[Step, ...]) -> frozenset[int]:
    """Indices of the steps GQA writes with a trailing space: for a last step with two
    inputs, the first step that only its second input needs (`select: nuts (-) `)."""
    if not steps or len(steps[-1].dependencies) != 2:
        return frozenset()
    first, second = steps[-1].dependencies
    if not (0 <= first < len(steps) and 0 <= second < len(steps)):
        return frozenset()
    only_second = _ancestors(steps, second) - _ancestors(steps, first)
    return frozenset({min(only_second)}) if only_second else frozenset()


def _ancestors(steps: tuple[Step, ...], index: int) -> set[int]:
    """`index` and every step it depends on, directly or not."""
    seen, todo = set(), [index]
    while todo:
        current = todo.pop()
        if current in seen or not 0 <= current < len(steps):
            continue
        seen.add(current)
        todo.extend(steps[current].dependencies)
    return seen
