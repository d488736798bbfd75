"""CRIC's function programs (Gao et al., TPAMI 2023) as a typed AST, read from CRIC's JSON.

CRIC stores a question's program in its question files as a list of steps (the layout on
https://cricvqa.github.io; see ``tests/fixtures/cric/SOURCE.md``)::

    "program": [{"function": "Initial",        "text_input": [],                  "output": [1, 2, 3, 4]},
                {"function": "Find",           "text_input": ["plate"],           "output": [2]},
                {"function": "Relate Reverse", "text_input": ["on"],              "output": [3]},
                {"function": "Find KG",        "text_input": ["CapableOf", "lift"], "output": [1]},
                {"function": "Recognition",    "text_input": ["name"],            "output": [1]}]

``output`` is the ground-truth result of the step (object ids). The steps carry no
dependencies: the layout runs in order on a stack of results, as neural module networks
run theirs. ``Initial`` pushes all objects; a one-input function pops one result and pushes
its own; ``And`` pops two; the program ends with one answer on the stack. The dependencies
this reading gives are made explicit on each :class:`CricStep`:

    >>> program = cric_program_from_json([
    ...     {"function": "Initial", "text_input": [], "output": []},
    ...     {"function": "Find", "text_input": ["plate"], "output": [2]},
    ...     {"function": "Relate Reverse", "text_input": ["on"], "output": [3]},
    ...     {"function": "Find KG", "text_input": ["CapableOf", "lift"], "output": [1]},
    ...     {"function": "Recognition", "text_input": ["name"], "output": [1]}])
    >>> print(program)
    Initial() -> Find(plate) -> Relate Reverse(on) -> Find KG(CapableOf, lift) -> Recognition(name)
    >>> program.steps[3].dependencies, program.is_binary, program.steps[2].output
    ((2,), False, ('3',))

The ten functions and what each one's ``text_input`` holds (our reading where CRIC's page
documents only ``Find``; ``docs/benchmarks.md`` gives the reasons):

==================  =====================  ======================================================
function            text_input             result (X: the input objects)
==================  =====================  ======================================================
``Initial``         ``[]``                 all objects
``Find``            ``[WORD, ...]``        the X that are every WORD (a name or an attribute value)
``Find Hyponym``    ``[CATEGORY]``         the X under the category (``vehicle``, ``food``)
``Relate``          ``[PREDICATE]``        the objects Y with ``PREDICATE(x, Y)`` for some x in X
``Relate Reverse``  ``[PREDICATE]``        the objects Y with ``PREDICATE(Y, x)`` for some x in X
``Find KG``         ``[RELATION, TAIL]``   the objects Y whose class fills the head of
                                           ``<Y, RELATION, TAIL + x>`` for some x in X; right
                                           after ``Initial`` the tail is the text alone
``Find KG Reverse`` ``[RELATION, PHRASE]`` the objects Y with ``<x, RELATION, PHRASE + Y>``
                                           (both KG functions: ``[RELATION]`` alone when the
                                           tail is the region's name, no phrase before it)
``Verify``          ``[WORD, ...]``        yes/no: some x in X is every WORD (``[]``: X is not empty)
``Recognition``     ``[TYPE]``             the answer: X's ``name`` or attribute of that type
``And``             ``[]``                 two object sets: both; two yes/no results: both
==================  =====================  ======================================================

Function names are matched without regard to case, spaces or underscores, and CRIC's two
spellings of the category function (``Find Hyponym``, ``Find_Hypernym``) are one. Anything
else is a :class:`~nablafol.dsl.ProgramError` naming the step. Torch-free.
"""
from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from .errors import ProgramError
from .validation import MAX_STEPS, too_long

__all__ = ["CRIC_FUNCTIONS", "CricKind", "CricStep", "CricProgram", "cric_program_from_json",
           "canonical_function"]

#: CRIC's ten functions, in the order of its paper's function catalogue.
CRIC_FUNCTIONS = ("Initial", "Find", "Relate", "Relate Reverse", "Recognition", "Find KG",
                  "Find KG Reverse", "Find Hyponym", "Verify", "And")

# lower-case, spaces for underscores -> the canonical name (both spellings of the category function)
_SPELLINGS = {name.lower(): name for name in CRIC_FUNCTIONS}
_SPELLINGS["find hypernym"] = "Find Hyponym"

# text_input: (fewest items, most items or None for no limit, what the items are)
_TEXT_INPUT = {
    "Initial": (0, 0, "nothing"),
    "Find": (1, None, "one or more names or attribute values"),
    "Find Hyponym": (1, 1, "[CATEGORY]"),
    "Relate": (1, 1, "[PREDICATE]"),
    "Relate Reverse": (1, 1, "[PREDICATE]"),
    "Find KG": (1, 2, "[RELATION, TAIL] or [RELATION]"),
    "Find KG Reverse": (1, 2, "[RELATION, PHRASE] or [RELATION]"),
    "Verify": (0, None, "zero or more names or attribute values"),
    "Recognition": (1, 1, "[TYPE]"),
    "And": (0, 0, "nothing"),
}


class CricKind(enum.Enum):
    """What a step leaves on the stack."""

    OBJECTS = "objects"
    BOOLEAN = "yes/no"
    ANSWER = "answer"


def canonical_function(name: str) -> str | None:
    """The canonical name of a CRIC function as written in a file, or None.

    >>> canonical_function("find_kg_reverse"), canonical_function("Find_Hypernym"), canonical_function("Select")
    ('Find KG Reverse', 'Find Hyponym', None)
    """
    return _SPELLINGS.get(" ".join(name.replace("_", " ").split()).lower())


@dataclass(frozen=True, slots=True)
class CricStep:
    """One step: the canonical ``function``, its ``text_input``, the ground-truth ``output``
    (object ids as strings; None when the file gives none) and the earlier steps it consumes."""

    function: str
    text_input: tuple[str, ...]
    output: tuple[str, ...] | None = None
    dependencies: tuple[int, ...] = ()

    @property
    def yields(self) -> CricKind:
        if self.function == "Verify":
            return CricKind.BOOLEAN
        if self.function == "Recognition":
            return CricKind.ANSWER
        return CricKind.OBJECTS  # And over yes/no results is told apart by CricProgram.kinds

    def __str__(self) -> str:
        return f"{self.function}({', '.join(self.text_input)})"


@dataclass(frozen=True, slots=True)
class CricProgram:
    """A CRIC program: its steps in order, each with its dependencies; the last one answers."""

    steps: tuple[CricStep, ...]

    def __iter__(self) -> Iterator[CricStep]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def __getitem__(self, index: int) -> CricStep:
        return self.steps[index]

    @property
    def kinds(self) -> tuple[CricKind, ...]:
        """What each step yields (an ``And`` yields what its inputs do)."""
        out: list[CricKind] = []
        for step in self.steps:
            out.append(out[step.dependencies[0]] if step.function == "And" else step.yields)
        return tuple(out)

    @property
    def is_binary(self) -> bool:
        """True for yes/no questions (CRIC's Verify group), False for Recognize ones."""
        return self.kinds[-1] is CricKind.BOOLEAN

    def __str__(self) -> str:
        return " -> ".join(map(str, self.steps))


def cric_program_from_json(steps: Any) -> CricProgram:
    """Read CRIC's ``program`` list (decoded JSON, or its JSON text) into a :class:`CricProgram`.

    Raises :class:`~nablafol.dsl.ProgramError` naming the step and what is wrong.
    """
    if isinstance(steps, str):
        try:
            steps = json.loads(steps)
        except json.JSONDecodeError as error:
            raise ProgramError(f"a CRIC program is a JSON list of steps: {error.msg}") from None
    if not isinstance(steps, Sequence) or isinstance(steps, (str, bytes)) or not steps:
        raise ProgramError("a CRIC program is a non-empty list of steps")
    if len(steps) > MAX_STEPS:
        raise ProgramError(too_long(len(steps)), step=MAX_STEPS)
    read = [_step(index, raw) for index, raw in enumerate(steps)]
    return CricProgram(_with_dependencies(read))


def _step(index: int, raw: Any) -> CricStep:
    if not isinstance(raw, dict):
        raise ProgramError(f"step {index}: a step is an object with 'function' and 'text_input', "
                           f"found {type(raw).__name__}", step=index)
    written = raw.get("function")
    if not isinstance(written, str):
        raise ProgramError(f"step {index}: 'function' must be a string", step=index)
    function = canonical_function(written)
    if function is None:
        raise ProgramError(f"step {index}: {written!r} is not a CRIC function",
                           expected=tuple(repr(f) for f in CRIC_FUNCTIONS), step=index)
    where = f"step {index} {function!r}"
    text = raw.get("text_input", [])
    if text is None:
        text = []
    if not isinstance(text, list) or not all(isinstance(t, str) for t in text):
        raise ProgramError(f"{where}: text_input must be a list of strings", step=index)
    text = [" ".join(t.split()) for t in text]
    if any(not t for t in text):
        raise ProgramError(f"{where}: text_input holds an empty string", step=index)
    low, high, what = _TEXT_INPUT[function]
    if len(text) < low or (high is not None and len(text) > high):
        raise ProgramError(f"{where}: text_input must be {what}, found {len(text)} item(s)", step=index)
    return CricStep(function, tuple(text), _output(where, index, raw.get("output")))


def _output(where: str, index: int, value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise ProgramError(f"{where}: output must be a list of object ids", step=index)
    ids = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise ProgramError(f"{where}: output must be a list of object ids (integers or strings)", step=index)
        ids.append(str(item))
    return tuple(ids)


def _with_dependencies(steps: list[CricStep]) -> tuple[CricStep, ...]:
    """Run the layout on a stack of step indices: each step learns which results it consumes."""
    stack: list[tuple[int, CricKind]] = []
    out: list[CricStep] = []
    for index, step in enumerate(steps):
        where = f"step {index} {step.function!r}"
        if step.function == "Initial":
            deps: tuple[int, ...] = ()
            kind = CricKind.OBJECTS
        elif step.function == "And":
            if len(stack) < 2:
                raise ProgramError(f"{where}: needs two earlier results, the layout has {len(stack)}", step=index)
            (a, kind_a), (b, kind_b) = stack.pop(-2), stack.pop()
            if kind_a is not kind_b or kind_a is CricKind.ANSWER:
                raise ProgramError(f"{where}: combines two object sets or two yes/no results, "
                                   f"found {kind_a.value} and {kind_b.value}", step=index)
            deps, kind = (a, b), kind_a
        else:
            if not stack:
                raise ProgramError(f"{where}: has no input (start a branch with 'Initial')", step=index)
            a, kind_a = stack.pop()
            if kind_a is not CricKind.OBJECTS:
                raise ProgramError(f"{where}: needs objects as input, step {a} gives {kind_a.value}", step=index)
            deps, kind = (a,), step.yields
        stack.append((index, kind))
        out.append(CricStep(step.function, step.text_input, step.output, deps))
    if len(stack) != 1:
        raise ProgramError(f"the layout leaves {len(stack)} results, not one answer "
                           f"(steps {', '.join(str(i) for i, _ in stack)})", step=len(steps) - 1)
    if stack[0][1] is CricKind.OBJECTS:
        raise ProgramError("the last step gives objects, not an answer (end with 'Verify' or 'Recognition')",
                           step=len(steps) - 1)
    return tuple(out)
