"""One call that property-tests a DSL built on the engine against the DSL's own crisp meaning.

A user who writes a DSL on nablafol has two functions: ``compile_fn`` (their program -> a nablafol
:class:`~nablafol.ir.Program`) and a crisp ``reference`` (their program, a scene whose facts are
all true or false -> the answer). :func:`check_dsl` draws programs from the user's strategy and
crisp scenes over the predicates each compiled program names, runs the compiled program through
the engine and asks the reference, and on a disagreement lets hypothesis shrink the case to a
minimal program (drawn first, so shrunk first) and scene, raised as :class:`DSLMismatch`.

With crisp facts the engine's answer is the formula's classical truth (docs: Soundness), so a
disagreement is the compiler's (or the reference's) fault, never the approximation's:

    >>> from hypothesis import strategies as st
    >>> from nablafol import Aggregate, Filter, Predicate, Program, Quantifier, Top
    >>> QUANTIFIER = {"some": Quantifier.EXISTS, "every": Quantifier.FORALL, "no": Quantifier.NOT_EXISTS}
    >>> def compile_(q):  # a program: ("some" | "every" | "no", colour)
    ...     return Program.yes_no(Aggregate(QUANTIFIER[q[0]], Filter(Predicate(q[1]), Top())))
    >>> def meaning(q, scene):
    ...     holds = scene[q[1]]
    ...     return {"some": holds.any(), "every": holds.all(), "no": not holds.any()}[q[0]]
    >>> questions = st.tuples(st.sampled_from(["some", "every", "no"]), st.sampled_from(["red", "blue"]))
    >>> check_dsl(compile_, meaning, questions, max_examples=30)
    30
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError as e:  # pragma: no cover - hypothesis is a test dependency
    raise ImportError("nablafol.testing.dsl_check needs hypothesis: pip install hypothesis") from e

from ..errors import NablafolError
from ..ir import Predicate, Program

__all__ = ["check_dsl", "CrispScene", "DSLMismatch"]


class DSLMismatch(NablafolError, AssertionError):
    """The engine's answer to a compiled program and the user's crisp reference disagree."""


@dataclass(frozen=True)
class CrispScene:
    """A scene whose facts are all true or false: ``n_objects`` objects and, per predicate, a
    bool array ``(n,)`` or ``(n, n)`` (row: the first argument). ``scene[name]`` finds a table by
    its predicate or by its plain name (when one predicate of the scene has it);
    ``scene.holds(name, *objects)`` reads one fact."""

    n_objects: int
    facts: Mapping[Predicate, np.ndarray]

    def __getitem__(self, key) -> np.ndarray:
        if isinstance(key, Predicate):
            return self.facts[key]
        found = [p for p in self.facts if p.name == key]
        if len(found) != 1:
            raise KeyError(f"{'no' if not found else 'several'} predicates named {key!r} in this scene: "
                           f"{sorted(p.name for p in self.facts)}")
        return self.facts[found[0]]

    def holds(self, key, *objects: int) -> bool:
        return bool(self[key][objects])

    def __repr__(self) -> str:
        facts = "; ".join(f"{p.name}{'' if p.arity == 1 else '/2'}: " + _true_of(t) for p, t in self.facts.items())
        return f"CrispScene({self.n_objects} objects; {facts})"


def _true_of(table: np.ndarray) -> str:
    at = [i[0] if len(i) == 1 else i for i in zip(*np.nonzero(table))]
    return "true of " + ", ".join(map(str, at)) if at else "false of all"


def check_dsl(compile_fn: Callable[[Any], Any], reference: Callable[[Any, CrispScene], Any], programs,
              *, max_objects: int = 4, max_examples: int = 100, seed: int | None = 0) -> int:
    """Property-test ``compile_fn`` against ``reference`` over ``programs`` (a hypothesis strategy of
    the user's programs) and crisp scenes of 1..``max_objects`` objects; returns how many cases
    ran, or raises :class:`DSLMismatch` naming a minimal failing program and scene.

    ``compile_fn(program)`` returns a :class:`~nablafol.ir.Program` (or anything with a ``program``
    attribute holding one, as the GQA compiler's questions); ``reference(program, scene)`` returns
    the answer: for a yes/no program a bool (or ``"yes"``/``"no"``), which the engine's
    probability must equal (1 or 0); for a program with candidates one label, which must be among
    the engine's most probable candidates (a tie is no disagreement: a crisp scene can make two
    candidates true). ``seed``: hypothesis draws the same cases each run (None: new ones).
    """
    from ..engine import Engine
    from ..oracle import TableOracle

    engine, ran = Engine(), [0]

    @settings(max_examples=max_examples, deadline=None, database=None, derandomize=seed is not None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.data())
    def case(data):
        program = data.draw(programs, label="program")
        compiled = compile_fn(program)
        compiled = getattr(compiled, "program", compiled)
        if not isinstance(compiled, Program):
            raise DSLMismatch(f"compile_fn({program!r}) returned {type(compiled).__name__}, not a nablafol Program")
        n = data.draw(st.integers(1, max_objects), label="objects")
        facts = {p: np.asarray(data.draw(st.lists(st.booleans(), min_size=n ** p.arity, max_size=n ** p.arity)),
                               dtype=bool).reshape((n,) * p.arity) for p in compiled.predicates()}
        scene = CrispScene(n, facts)
        expected = reference(program, scene)
        tables = {p: t.astype(np.float64) for p, t in facts.items()}
        answers = engine([compiled], TableOracle([tables], num_objects=[n]))
        _compare(program, compiled, scene, expected, answers)
        ran[0] += 1

    case()
    return ran[0]


def _compare(program, compiled: Program, scene: CrispScene, expected, answers) -> None:
    probabilities = answers.candidate_probabilities(0)
    if compiled.labels is None:
        if isinstance(expected, str) and expected in ("yes", "no"):
            expected = expected == "yes"
        if not isinstance(expected, (bool, np.bool_)):
            raise DSLMismatch(f"reference({program!r}, ...) answered {expected!r} to a yes/no program: "
                              f"give a bool or 'yes'/'no'")
        p_yes = probabilities["yes"]
        if p_yes != float(bool(expected)):
            raise DSLMismatch(f"program {program!r}: the engine says P(yes) = {p_yes:g}, the reference says "
                              f"{'yes' if expected else 'no'}, over {scene!r}; compiled: {compiled.formula()}")
        return
    if expected not in probabilities:
        raise DSLMismatch(f"program {program!r}: the reference's answer {expected!r} is none of the compiled "
                          f"program's candidates {list(probabilities)[:8]}")
    best = max(probabilities.values())
    if probabilities[expected] != best:
        top = [a for a, p in probabilities.items() if p == best]
        raise DSLMismatch(f"program {program!r}: the engine answers {top} (probability {best:g}), the reference "
                          f"{expected!r} (probability {probabilities[expected]:g}), over {scene!r}; compiled: "
                          f"{compiled.formula()}")
