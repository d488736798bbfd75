"""What a calibrator does to one question: its ``(a, b, c, d)`` per attention step, read as
the shapes of the paper's Figure 2 (:mod:`calibration.shapes`).

    >>> from nablafol import dsl
    >>> from nablafol.compiler import Compiler
    >>> program = Compiler(dsl.Ontology.gqa()).compile_text("select: ball->verify color: red [0]").program
    >>> calibrator = TopDownCalibrator(["name:ball", "attr:red"])  # fresh: the identity
    >>> print(format_step_parameters(step_parameters(calibrator, program)))
    step  token      a      b      c      d      shape
       0  <top>      1.000  1.000  0.500  1.000  unused
       1  name:ball  1.000  1.000  0.500  1.000  identity
       2  attr:red   1.000  1.000  0.500  1.000  identity
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from nablafol.engine import ProgramPlan
from nablafol.ir import Top

from .calibrator import TopDownCalibrator, constrained_parameters, step_token
from .shapes import SHAPE_TOLERANCE, classify_shape

__all__ = ["StepParameters", "step_parameters", "format_step_parameters"]

UNUSED = "unused"  # ⊤ is all ones and C(1) = 1 for any parameters: the engine skips it


@dataclass(frozen=True)
class StepParameters:
    """The Beta-calibration parameters of one attention step and their reading."""

    step: int  # position in ``ProgramPlan.attention_steps``
    token: str
    a: float
    b: float
    c: float
    d: float
    shape: str  # see :func:`calibration.shapes.classify_shape`; "unused" for ⊤


def step_parameters(calibrator: TopDownCalibrator, program, tol: float = SHAPE_TOLERANCE) -> list[StepParameters]:
    """One :class:`StepParameters` per attention step of ``program`` (a ``nablafol.ir.Program``,
    or a compiled question holding one), in the order of ``ProgramPlan.attention_steps``.

    A step of an open question's candidates is named ``<each> PREDICATE`` (with ``<not>`` and
    ``<and>`` for the rows of a negated one, e.g. "is any of them not red").
    """
    program = getattr(program, "program", program)
    steps = ProgramPlan.of(program).attention_steps
    with torch.no_grad():
        raw, _ = calibrator.raw_parameters([program])
        a, b, log_c, _, log_d = (v[:, 0].double().cpu() for v in constrained_parameters(raw))
    tokens = _tokens(steps)
    out = []
    for k, step in enumerate(steps):
        values = float(a[k]), float(b[k]), float(log_c[k].exp()), float(log_d[k].exp())
        shape = UNUSED if isinstance(step, Top) else classify_shape(*values, tol=tol)
        out.append(StepParameters(k, tokens[k], *values, shape))
    return out


def _tokens(steps) -> list[str]:
    """Readable tokens; an AggregateEach's rows come as blocks of its predicates
    (one block, or filter / not / and blocks when negated)."""
    seen: dict[int, int] = {}
    out = []
    for step in steps:
        if not isinstance(step, tuple):
            out.append(step_token(step))
            continue
        node, predicate = step
        row = seen.get(id(node), 0)
        seen[id(node)] = row + 1
        role = ("", "<not> ", "<and> ")[row // len(node.predicates)] if node.negate else ""
        out.append(f"<each> {role}{predicate.kind}:{predicate.name}")
    return out


def format_step_parameters(params: Sequence[StepParameters]) -> str:
    """An aligned table: step, token, a, b, c, d, shape."""
    width = max([len("token")] + [len(p.token) for p in params])
    lines = [f"{'step':>4}  {'token':<{width}}  {'a':<5}  {'b':<5}  {'c':<5}  {'d':<5}  shape"]
    lines += [f"{p.step:>4}  {p.token:<{width}}  {_number(p.a)}  {_number(p.b)}  {_number(p.c)}  {_number(p.d)}  "
              f"{p.shape}" for p in params]
    return "\n".join(lines)


def _number(v: float) -> str:
    """Five characters: 0.500, 12.34, 1.2e5."""
    text = f"{v:.3f}" if v < 9.9995 else f"{v:.2f}" if v < 99.995 else f"{v:.1e}".replace("e+0", "e")
    return f"{text:<5}"
