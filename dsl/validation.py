"""Structure checks of a GQA program: dependencies, arities, result kinds, the answer step.

A program is valid when
  * it has at most :data:`MAX_STEPS` steps (GQA's and CRIC's longest have about a dozen; later
    stages walk a program by recursion, which a program of hundreds of steps exhausted);
  * every dependency points to an earlier step, at most once per step;
  * each step has as many dependencies as its operation takes (select 0; filter,
    relate, query, verify, exist, choose and one-input same/different 1; and, or,
    common, choose COMP and two-input same/different 2);
  * each dependency yields what the step consumes (and/or consume yes/no results,
    everything else consumes objects; see `dsl.operations`);
  * the last step yields an answer (yes/no or open), and every other step is used by a
    later one. Real GQA programs satisfy this: they are trees (or, where two verifies
    share their input, DAGs) rooted at the last step; a dangling step would be dead
    code whose meaning nobody defined, so it is refused.

Argument shapes are checked earlier, when the step is built (dsl/parser.py);
`dsl.validate_program` checks both for a hand-built `Program`.
"""
from __future__ import annotations

from typing import Callable, Sequence

from .ast import Step
from .errors import ProgramError
from .operations import Kind

__all__ = ["check_structure", "MAX_STEPS", "too_long"]

#: The most steps a program may have.
MAX_STEPS = 128

# locate(step_index, part) -> (text, line, column); part is 'step' or 'dependencies'.
Locator = Callable[[int, str], "tuple[str, int, int] | None"]

_KIND_WORDS = {Kind.OBJECTS: "objects", Kind.BOOLEAN: "a yes/no result", Kind.ANSWER: "an open answer"}


def too_long(steps: int) -> str:
    """The refusal of a program of ``steps`` steps, more than :data:`MAX_STEPS`."""
    return f"the program has {steps:,} steps, more than {MAX_STEPS} (GQA's longest have about a dozen)"


def check_structure(steps: Sequence[Step], locate: Locator | None = None) -> None:
    """Raise `ProgramError` for the first structural problem of `steps` (see module doc)."""

    def fail(message: str, index: int, part: str) -> ProgramError:
        where = locate(index, part) if locate is not None else None
        if where is None:
            return ProgramError(message, step=index)
        text, line, column = where
        return ProgramError(message, text=text, line=line, column=column, step=index)

    if len(steps) > MAX_STEPS:
        raise fail(too_long(len(steps)), MAX_STEPS, "step")
    used = [False] * len(steps)
    for index, step in enumerate(steps):
        name = f"step {index} '{step.field}'"
        seen = set()
        for dep in step.dependencies:
            if not 0 <= dep < index:
                earlier = f"(0..{index - 1})" if index > 1 else "(0)" if index == 1 else "(step 0 has none)"
                raise fail(f"{name}: dependency [{dep}] must point to an earlier step {earlier}",
                           index, "dependencies")
            if dep in seen:
                raise fail(f"{name}: dependency [{dep}] is listed twice", index, "dependencies")
            seen.add(dep)
        arity = step.arity
        if len(step.dependencies) != arity:
            takes = {0: "no dependencies", 1: "1 dependency"}.get(arity, f"{arity} dependencies")
            raise fail(f"{name} takes {takes}, got {len(step.dependencies)}", index, "dependencies")
        for dep in step.dependencies:
            produced = steps[dep].yields
            if produced is not step.consumes:
                raise fail(f"{name} consumes {_KIND_WORDS[step.consumes]}, but step {dep} "
                           f"'{steps[dep].field}' yields {_KIND_WORDS[produced]}", index, "dependencies")
            used[dep] = True
    last = len(steps) - 1
    if steps[last].yields is Kind.OBJECTS:
        raise fail(f"the last step '{steps[last].field}' yields objects, not an answer: a program ends "
                   f"with a query, verify, choose, exist, and, or, same, different or common step",
                   last, "step")
    for index in range(last):
        if not used[index]:
            step = steps[index]
            if step.yields is Kind.ANSWER:
                raise fail(f"step {index} '{step.field}' yields the answer, so it must be the last step",
                           index, "step")
            raise fail(f"step {index} '{step.field}' is never used: every step but the last must "
                       f"feed a later one", index, "step")
