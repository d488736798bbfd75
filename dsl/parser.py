"""Readers: GQA program text (`semanticStr`) and GQA's `semantic` list -> `Program`.

    >>> from nablafol.dsl import parse_program, program_from_semantic
    >>> p = parse_program("select: scene->choose location: indoors|outdoors [0]")
    >>> p.answer_step
    Step(operation='choose', type='location', argument=Alternatives(values=('indoors', 'outdoors')), dependencies=(0,))
    >>> program_from_semantic(p.to_semantic()) == p
    True

How a line is read:
  1. The grammar (grammar/gqa.lark, LALR) turns the text into step syntax; a Lark
     Transformer turns that into `Step`s, checking each operation's argument shape.
  2. `dsl.validation` checks dependencies, arities and result kinds.

Both stages depend on the line only up to its object ids, so a line is first reduced
to a *template* (every ` (ids)` written ` (-)`) and the parsed, validated template is
cached, as einops caches its parsed recipes; the ids are then filled back in. Across
GQA's questions most templates, and most steps, repeat, which is what makes reading
132k programs fast. Any failure on that path is re-read on the exact text by the
reference path (`_read_exactly`), so every error carries the column of the original
text. The two paths agree by construction (the template changes only ids) and by test.

Errors are `ProgramError`s; no Lark or Python exception escapes the two readers.
"""
from __future__ import annotations

from nablafol.caching import bounded_cache

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Mapping, NamedTuple, Sequence

from lark import Lark, Token, Transformer
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from .ast import (Alternatives, AttributeType, Empty, Objects, Program, Relation, Scene, Step,
                  Value)
from .errors import ProgramError
from .operations import COMPARATIVES, NO_TYPE_VERBS, VERBS
from .validation import check_structure

__all__ = ["parse_program", "program_from_semantic", "validate_program", "clear_caches"]

# Same pattern as OBJECT_IDS in the grammar: the template replaces each by " (-)".
_OBJECT_IDS = re.compile(r" \((?:-|[0-9]+(?:, ?[0-9]+)*)\)")
_PLACEHOLDER = " (-)"
_ARROW = "->"

# Readable words for the grammar's terminals, in the order they are listed in errors.
_TERMINAL_WORDS = {
    "OPERATION": "an operation (select, filter color, relate, ...)",
    "COLON": "': '",
    "PHRASE": "a name or value",
    "NOT": "'not('",
    "ANY": "'_'",
    "QUESTION": "'?'",
    "_BAR": "'|'",
    "_COMMA": "','",
    "ROLE": "a role 's' or 'o'",
    "_RPAR": "')'",
    "OBJECT_IDS": "object ids ' (123)' or ' (-)'",
    "TRAILING_SPACE": "a space",
    "DEPENDENCIES": "dependencies ' [0, 1]'",
    "_ARROW": "'->'",
    "$END": "the end",
}
# HEAD, NEGATED, ALTERNATIVES and RELATION are not listed: wherever they are expected,
# their token-by-token forms (OPERATION, NOT, PHRASE, ANY) are too, and say the same.
# Tokens that start with a space: point the caret at the bracket, not at the space.
_SPACE_LED = {"OBJECT_IDS", "DEPENDENCIES"}


# ----------------------------------------------------------------------------- syntax

@dataclass(frozen=True, slots=True)
class _ArgumentSyntax:
    """An argument as written: its form, its parts and where it starts."""

    form: str                 # 'phrase' | 'negated' | 'alternatives' | 'relation' | 'question'
    parts: tuple[str, ...]    # phrase: (text,); relation: (name, rel1, ..., role)
    ids: tuple[str, ...] | None
    line: int
    column: int
    text: str                 # as written, for messages


@dataclass(frozen=True, slots=True)
class _StepSyntax:
    operation: str            # the operation field, e.g. 'filter color'
    line: int
    column: int               # of the operation
    start: int                # offset of the operation in the text
    argument_column: int      # where the argument starts (or would start)
    argument: _ArgumentSyntax | None
    dependencies: Token | None


def _ids(token: Token | None) -> tuple[str, ...] | None:
    if token is None:
        return None
    inner = token[2:-1]  # " (1,2)" -> "1,2"
    return () if inner == "-" else tuple(i.strip() for i in inner.split(","))


def _with_ids_text(text: str, ids: Token | None) -> str:
    return text if ids is None else text + str(ids)


class _ToSyntax(Transformer):
    """Lark parse tree -> `_StepSyntax` records (applied during the LALR parse).

    Each argument form arrives either as one token (well-formed text) or token by token
    (the fall-through rules of the grammar); both give the same record."""

    def program(self, steps):
        return steps

    def step(self, children):
        if children[0].type == "HEAD":
            head, argument, _trailing, dependencies, _after = children
            operation = str(head)[:-2]
        else:
            head, _colon, argument, _trailing, dependencies, _after = children
            operation = str(head)
        return _StepSyntax(operation, head.line, head.column, head.start_pos,
                           head.column + len(operation) + 2, argument, dependencies)

    def phrase(self, children):
        phrase, ids = children
        return _ArgumentSyntax("phrase", (str(phrase),), _ids(ids), phrase.line, phrase.column,
                               _with_ids_text(str(phrase), ids))

    def negated(self, children):
        first = children[0]
        value = str(children[1]) if len(children) == 2 else str(first)[4:-1]  # "not(v)" -> "v"
        return _ArgumentSyntax("negated", (value,), None, first.line, first.column, f"not({value})")

    def alternatives(self, children):
        first = children[0]
        values = tuple(str(first).split("|")) if len(children) == 1 else tuple(map(str, children))
        return _ArgumentSyntax("alternatives", values, None, first.line, first.column, "|".join(values))

    def relation(self, children):
        first, ids = children[0], children[-1]
        if first.type == "RELATION":
            name, relations, role = (part.strip() for part in str(first).split(","))
            parts = (name, *relations.split("|"), role)
        else:
            parts = tuple(map(str, children[:-1]))
        text = f"{parts[0]},{'|'.join(parts[1:-1])},{parts[-1]}"
        return _ArgumentSyntax("relation", parts, _ids(ids), first.line, first.column,
                               _with_ids_text(text, ids))

    def question(self, children):
        (mark,) = children
        return _ArgumentSyntax("question", ("?",), None, mark.line, mark.column, "?")


@functools.cache  # the grammar shipped with the package, compiled once
def _lark() -> Lark:
    """The grammar, compiled once (LALR, contextual lexer, transformer applied while parsing)."""
    grammar = resources.files(__package__).joinpath("grammar/gqa.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="contextual", start=["program", "step"],
                transformer=_ToSyntax(), maybe_placeholders=True)


# ----------------------------------------------------------------------------- steps

def _build_step(syntax: _StepSyntax, index: int, text: str) -> Step:
    """Typed `Step` from step syntax, or `ProgramError` when the operation is unknown or
    its argument has the wrong shape. `text` and the tokens' positions place the caret."""
    field = syntax.operation
    verb, _, type_text = field.partition(" ")
    step_type = type_text or None
    argument = syntax.argument
    dependencies = () if syntax.dependencies is None else \
        tuple(int(d) for d in syntax.dependencies.strip()[1:-1].split(", "))

    def fail(message, line, column, expected=()):
        return ProgramError(message, text=text, line=line, column=column, expected=expected, step=index)

    def shape_error(wanted: str) -> ProgramError:
        if argument is None:
            return fail(f"step {index} '{field}' needs {wanted}", syntax.line, syntax.argument_column)
        return fail(f"step {index} '{field}' takes {wanted}, not '{argument.text}'", argument.line,
                    argument.column)

    if verb not in VERBS:
        raise fail(f"step {index}: unknown operation '{verb}'", syntax.line, syntax.column,
                   expected=tuple(f"'{v}'" for v in VERBS))
    if step_type is not None and verb in NO_TYPE_VERBS:
        raise fail(f"step {index}: '{verb}' takes no type, got '{field}'", syntax.line,
                   syntax.column + len(verb) + 1)

    form = argument.form if argument is not None else None
    plain = form == "phrase" and argument.ids is None  # a phrase without ids

    if verb == "select":
        if form != "phrase":
            raise shape_error("a name with object ids, like 'bird (329774)', or 'scene'")
        if argument.parts[0] == "scene" and argument.ids is None:
            value = Scene()
        else:
            value = Objects(argument.parts[0], argument.ids)
    elif verb == "filter":
        if not (plain or form == "negated"):
            raise shape_error("a value or not(value), like 'white' or 'not(white)'")
        value = Value(argument.parts[0], form == "negated")
    elif verb == "relate" or (verb == "verify" and step_type == "rel"):
        if form != "relation" or len(argument.parts) != 3:
            raise shape_error("a relation 'NAME,REL,ROLE (ids)', like '_,on,s (722335)'")
        name, relation, role = argument.parts
        value = Relation(name, (relation,), role, argument.ids)
    elif verb == "verify":
        if not plain:
            raise shape_error("a value, like 'white'")
        value = Value(argument.parts[0])
    elif verb == "choose" and step_type == "rel":
        if form != "relation" or len(argument.parts) != 4:
            raise shape_error("two relations 'NAME,REL1|REL2,ROLE (ids)', like "
                              "'surfer,to the left of|to the right of,s (429131)'")
        name, first, second, role = argument.parts
        value = Relation(name, (first, second), role, argument.ids)
    elif verb == "choose" and step_type in COMPARATIVES:
        if argument is not None:
            raise shape_error("no argument (it compares its two inputs)")
        value = Empty()
    elif verb == "choose":
        if form != "alternatives" or len(argument.parts) != 2:
            raise shape_error("two values 'V1|V2', like 'left|right'")
        value = Alternatives(argument.parts)
    elif verb == "query" or (verb in ("same", "different") and step_type is None):
        if not plain:
            raise shape_error("an attribute type, like 'color' or 'name'")
        value = AttributeType(argument.parts[0])
    elif verb == "exist":
        if form != "question":
            raise shape_error("the argument '?'")
        value = Empty("?")
    else:  # and, or, common, two-input same/different TYPE
        if argument is not None:
            raise shape_error("no argument")
        value = Empty()
    return Step(verb, step_type, value, dependencies)


# ----------------------------------------------------------------------------- errors

def _syntax_error(error: UnexpectedInput, text: str) -> ProgramError:
    """A Lark error as a `ProgramError`: what was found, what was expected, where."""
    if isinstance(error, UnexpectedCharacters):
        names = error.allowed or set()
        found = text[error.pos_in_stream] if error.pos_in_stream < len(text) else ""
        message = "unexpected line break" if found == "\n" else f"unexpected {found!r}"
        line, column = error.line, error.column
        position = error.pos_in_stream
    elif isinstance(error, UnexpectedToken):
        token = error.token
        names = error.expected or set()
        if token.type == "$END":
            message = "the text ends too early"
            line = text.count("\n") + 1
            column = len(text) - (text.rfind("\n") + 1) + 1
            position = len(text)
        else:
            message = f"unexpected {str(token)!r}"
            shift = len(token) - len(str(token).lstrip(" ")) if token.type in _SPACE_LED else 0
            line, column, position = token.line, token.column + shift, token.start_pos + shift
    else:  # pragma: no cover - LALR raises only the two above
        names, message, line, column, position = set(), "cannot read the program", None, None, 0
    if "_ARROW" in names:  # wherever another step may follow, the program may also end
        names = set(names) | {"$END"}
    if not text.strip():
        message, names = "the program is empty", {"OPERATION"}
    elif message.endswith("'('") and "OBJECT_IDS" not in names:
        message += " (object ids follow a name after one space: 'bird (329774)', 'nuts (-)')"
    elif message.endswith("'['"):
        message += " (dependencies follow the argument after one space: 'query: name [0]', 'or:  [1, 3]')"
    expected = tuple(words for name, words in _TERMINAL_WORDS.items() if name in names)
    return ProgramError(message, text=text, line=line, column=column, expected=expected,
                        step=text.count(_ARROW, 0, position))


# ----------------------------------------------------------------------------- reference path

def _read_exactly(text: str) -> Program:
    """Parse and validate `text` as a whole line, with positions: the reference path,
    used for every error (and, in tests, to check the cached path)."""
    try:
        syntaxes = _lark().parse(text, start="program")
    except UnexpectedInput as error:
        raise _syntax_error(error, text) from None
    steps = [_build_step(syntax, index, text) for index, syntax in enumerate(syntaxes)]

    def locate(index: int, part: str):
        syntax = syntaxes[index]
        if part == "dependencies":
            if syntax.dependencies is not None:
                token = syntax.dependencies
                return text, token.line, token.column + len(token) - len(str(token).lstrip(" "))
            end = text.find(_ARROW, syntax.start)
            end = len(text) if end < 0 else end
            return text, syntax.line, end + 1
        return text, syntax.line, syntax.column

    check_structure(steps, locate)
    return Program(tuple(steps))


def _read_step_exactly(text: str, index: int) -> Step:
    """Parse one step's own text (`operation: argument`) with positions."""
    try:
        syntax = _lark().parse(text, start="step")
    except UnexpectedInput as error:
        found = _syntax_error(error, text)
        raise ProgramError(f"step {index}: {found.message}", text=text, line=found.line,
                           column=found.column, expected=found.expected, step=index) from None
    return _build_step(syntax, index, text)


# ----------------------------------------------------------------------------- cached path

@dataclass(frozen=True, slots=True)
class _Recipe:
    """A parsed, validated template: the program with placeholder ids, the indices of the
    steps whose ids are to be filled in, in text order, and the program without any ids
    (what a compiler reads: made once per template, not once per reader)."""

    program: Program
    slots: tuple[int, ...]
    bare: Program


class _StepRecipe(NamedTuple):
    """A step template parsed: the step (placeholder ids), and the step without ids (itself
    when it has none)."""

    step: Step
    bare: Step


def _step_recipe_uncached(piece: str) -> _StepRecipe:
    """A step template (ids written ' (-)'), parsed and built; cached."""
    step = _build_step(_lark().parse(piece, start="step"), 0, piece)
    return _StepRecipe(step, Program((step,)).without_ids().steps[0])


_step_recipe = bounded_cache(_step_recipe_uncached, 1 << 16)


# Skeletons (each step's operation, type, argument class and dependencies) that passed
# `check_structure`: the check depends on nothing else, and GQA has few skeletons (a set
# emptied when it reaches _SKELETONS_KEPT, so odd input cannot grow it without bound).
_VALID_SKELETONS: set[tuple] = set()
_SKELETONS_KEPT = 1 << 12


def _line_recipe_uncached(template: str) -> _Recipe:
    """A line template, parsed step by step (cached) and validated; cached. The steps without
    ids come from the step cache too (a line's steps are shared with thousands of lines)."""
    recipes = tuple(map(_step_recipe, template.split(_ARROW)))
    steps = tuple([r.step for r in recipes])
    skeleton = tuple((s.operation, s.type, s.argument.__class__, s.dependencies) for s in steps)
    if skeleton not in _VALID_SKELETONS:
        check_structure(steps)
        if len(_VALID_SKELETONS) >= _SKELETONS_KEPT:
            _VALID_SKELETONS.clear()
        _VALID_SKELETONS.add(skeleton)
    slots = tuple([i for i, r in enumerate(recipes) if r.bare is not r.step])
    return _Recipe(Program(steps), slots, Program(tuple([r.bare for r in recipes])))


_line_recipe = bounded_cache(_line_recipe_uncached, 1 << 15)


def _recipe_of(template: str, id_groups: int) -> _Recipe | None:
    """The cached recipe of a line template with ``id_groups`` id groups, or None when the
    template does not read as one (the caller reads the line exactly, for the error's place)."""
    try:
        recipe = _line_recipe(template)
    except (ProgramError, LarkError):
        return None
    return recipe if len(recipe.slots) == id_groups else None


def _with_ids(step: Step, group: str) -> Step:
    inner = group[2:-1]
    ids = () if inner == "-" else tuple(i.strip() for i in inner.split(","))
    return Step(step.operation, step.type, step.argument.with_ids(ids), step.dependencies)


def clear_caches() -> None:
    """Forget every cached template (for cold-cache timing)."""
    _step_recipe.cache_clear()
    _line_recipe.cache_clear()
    _VALID_SKELETONS.clear()


# ----------------------------------------------------------------------------- readers

def parse_program(text: str) -> Program:
    """Read a GQA `semanticStr` line into a `Program`; raise `ProgramError` if it is not one.

        >>> parse_program("select: bird (329774)->query: name [0]").steps[0]
        Step(operation='select', type=None, argument=Objects(name='bird', ids=('329774',)), dependencies=())
    """
    if not isinstance(text, str):
        raise ProgramError(f"a program is text (str), got {type(text).__name__}")
    groups = _OBJECT_IDS.findall(text)
    recipe = _recipe_of(id_template(text) if groups else text, len(groups))
    if recipe is None:
        return _read_exactly(text)  # raises the error at its place in `text`
    if not groups:
        return recipe.program
    steps = list(recipe.program.steps)
    for slot, group in zip(recipe.slots, groups):
        steps[slot] = _with_ids(steps[slot], group)
    return Program(tuple(steps))


_FIELDS = ("operation", "argument", "dependencies")


def _step_fields(raw: Any, index: int) -> tuple[str, str, tuple[int, ...]]:
    """Type-check one entry of the `semantic` list."""
    if not isinstance(raw, Mapping):
        raise ProgramError(f"step {index} must be a dict with 'operation', 'argument' and "
                           f"'dependencies', got {type(raw).__name__}", step=index)
    missing = [key for key in _FIELDS if key not in raw]
    if missing:
        raise ProgramError(f"step {index} lacks {', '.join(repr(k) for k in missing)}", step=index)
    operation, argument, dependencies = raw["operation"], raw["argument"], raw["dependencies"]
    for key, value in (("operation", operation), ("argument", argument)):
        if not isinstance(value, str):
            raise ProgramError(f"step {index}: '{key}' must be a string, got {type(value).__name__}",
                               step=index)
    if not isinstance(dependencies, (list, tuple)) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in dependencies):
        raise ProgramError(f"step {index}: 'dependencies' must be a list of step indices, got "
                           f"{dependencies!r}", step=index)
    return operation, argument, tuple(dependencies)


def program_from_semantic(steps: Sequence[Mapping[str, Any]]) -> Program:
    """Read GQA's `semantic` list ([{'operation', 'argument', 'dependencies'}, ...]) into a
    `Program`; raise `ProgramError` naming the step if it is not one.

    The list is written as the `semanticStr` line GQA would write for it and read by
    `parse_program` (same cache); anything unusual (wrong types, a failure, text that
    would read as structure) is re-read step by step, so the error names the step and
    points into its own `operation: argument [dependencies]` text.
    """
    line = semantic_line(steps)
    if line is not None:
        try:
            return parse_program(line)
        except ProgramError:
            pass
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
        raise ProgramError(f"the semantic form is a list of steps, got {type(steps).__name__}")
    if not steps:
        raise ProgramError("a program needs at least one step")
    return _read_semantic_exactly([_step_fields(raw, index) for index, raw in enumerate(steps)])


def semantic_line(steps: Any) -> str | None:
    """The `semanticStr` line GQA would write for a `semantic` list, or None when the list is
    unusual (wrong types, text that would read as structure): such lists are read step by step.

        >>> semantic_line([{"operation": "select", "argument": "bird (329774)", "dependencies": []},
        ...                {"operation": "query", "argument": "name", "dependencies": [0]}])
        'select: bird (329774)->query: name [0]'
    """
    if not (isinstance(steps, (list, tuple)) and steps):
        return None
    parts = []
    for raw in steps:
        try:
            operation, argument, dependencies = raw["operation"], raw["argument"], raw["dependencies"]
        except (TypeError, KeyError, IndexError):
            return None
        if (type(operation) is not str or type(argument) is not str
                or type(dependencies) is not list or "[" in argument
                or _ARROW in argument or _ARROW in operation):
            return None
        if dependencies:
            for d in dependencies:  # a loop, not all(...): this runs for every question read
                if type(d) is not int:
                    return None
            parts.append(f"{operation}: {argument} [{', '.join(map(str, dependencies))}]")
        else:
            parts.append(f"{operation}: {argument}")
    return _ARROW.join(parts)


def id_template(text: str) -> str:
    """A `semanticStr` line with every object-id group written ``(-)``: lines with the same
    template read as the same program up to ids (what reasoning never sees).

        >>> id_template("select: wall (722332)->relate: _,on,s (1,2) [0]->exist: ? [1]")
        'select: wall (-)->relate: _,on,s (-) [0]->exist: ? [1]'
    """
    return _OBJECT_IDS.sub(_PLACEHOLDER, text)


def parse_template(template: str, without_ids: bool = False) -> Program:
    """`parse_program` of an :func:`id_template` line, without putting ids back: its object
    arguments carry ``ids=()``, or, ``without_ids``, no ids at all (``ids=None``: what a
    compiler that drops ids needs; both read from the cache).

        >>> parse_template("select: wall (-)->exist: ? [0]").steps[0].argument
        Objects(name='wall', ids=())
        >>> parse_template("select: wall (-)->exist: ? [0]", without_ids=True).steps[0].argument
        Objects(name='wall', ids=None)
    """
    recipe = _recipe_of(template, len(_OBJECT_IDS.findall(template)))
    if recipe is None:  # the general path: raises at the error's place
        program = parse_program(template)
        return program.without_ids() if without_ids else program
    return recipe.bare if without_ids else recipe.program


def _read_semantic_exactly(fields: list[tuple[str, str, tuple[int, ...]]]) -> Program:
    """The `semantic` list step by step, with each step's own text for error positions."""
    built = []
    for index, (operation, argument, dependencies) in enumerate(fields):
        own_text = f"{operation}: {argument}"
        step = _read_step_exactly(own_text, index)
        if step.dependencies:
            column = own_text.rindex(" [") + 2
            raise ProgramError(f"step {index}: dependencies go in the 'dependencies' field, not in "
                               f"the argument", text=own_text, line=1, column=column, step=index)
        built.append(Step(step.operation, step.type, step.argument, dependencies))

    def locate(index: int, part: str):
        operation, argument, dependencies = fields[index]
        own_text = f"{operation}: {argument}"
        shown = own_text + (" [" + ", ".join(map(str, dependencies)) + "]" if dependencies else "")
        column = 1 if part == "step" else len(own_text) + (2 if dependencies else 1)
        return shown, 1, column

    check_structure(built, locate)
    return Program(tuple(built))


def validate_program(program: Program) -> Program:
    """Check a `Program` built by hand as the readers check theirs: it must be what
    reading its own `semanticStr` gives (so every argument has its operation's shape
    and can be written as GQA text) and pass the structure checks. Return it, or raise
    `ProgramError` naming the step."""
    if not isinstance(program, Program) or not isinstance(program.steps, tuple) or not program.steps:
        raise ProgramError("a program is a Program with at least one step")
    for index, step in enumerate(program.steps):
        if not isinstance(step, Step):
            raise ProgramError(f"step {index} is a {type(step).__name__}, not a Step", step=index)
    text = program.to_semantic_str()
    read = parse_program(text)
    for index, (mine, theirs) in enumerate(zip(program.steps, read.steps)):
        if mine != theirs:
            got, wanted = ((theirs.argument, mine.argument) if (mine.operation, mine.type, mine.dependencies)
                           == (theirs.operation, theirs.type, theirs.dependencies) else (theirs, mine))
            raise ProgramError(f"step {index} '{mine}' reads back as {got!r}, not {wanted!r}", step=index)
    return program

