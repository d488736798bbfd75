"""Multiple choice through Algorithm 1: the given choices as the candidates of one program.

A-OKVQA and VCR give each question its choices. Any closed formula can score a choice
(whatever program and oracle a user has); :func:`multiple_choice` makes the choices the
labelled candidates of one :class:`~nablafol.ir.Program`, so the engine answers with
Algorithm 1 (the argmax over the candidates' probabilities) and reports them all.
:func:`choose_among` is the common case: the choice whose predicate some object of an
attention satisfies, ``A_∃(Filter_{p(c)}[X])`` for each choice ``c`` (GQA's ``choose`` with
any number of options).

    >>> from nablafol.engine import Engine
    >>> from nablafol.ir import Predicate, Top
    >>> from nablafol.oracle import TableOracle
    >>> import torch
    >>> question = choose_among(Top(), ["cab", "train", "bus"], lambda c: Predicate(c))
    >>> oracle = TableOracle([{Predicate("cab"): torch.tensor([0.7, 0.1]), Predicate("train"): torch.tensor([0.2, 0.0]),
    ...                        Predicate("bus"): torch.tensor([0.5, 0.5])}])
    >>> answers = Engine()([question.program], oracle)
    >>> question.index_of(answers.predictions()[0])   # P(∃ bus) = 0.75 > P(∃ cab) = 0.73
    2

Choices that read the same (VCR's token lists can) are labelled ``"1: text"``, ``"2: text"``...
so that labels stay distinct; :meth:`MultipleChoice.index_of` maps a label back either way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from nablafol.ir import Aggregate, Attention, Filter, Predicate, Program, Quantifier, Truth

from .errors import CompileError

__all__ = ["MultipleChoice", "multiple_choice", "choose_among"]


@dataclass(frozen=True)
class MultipleChoice:
    """The choices as given, and the program whose labelled candidates they are (in order)."""

    choices: tuple[str, ...]
    program: Program

    def index_of(self, label: str) -> int:
        """The position of the choice an answer label names."""
        try:
            return self.program.labels.index(label)
        except ValueError:
            raise CompileError(f"{label!r} is not one of the {len(self.choices)} choices", reason="unsupported") from None


def multiple_choice(choices: Sequence[str], truths: Sequence[Truth], focus: Optional[Attention] = None) -> MultipleChoice:
    """One candidate per choice, in order: ``truths[i]`` is the formula that makes ``choices[i]`` right."""
    choices = tuple(choices)
    truths = tuple(truths)
    if not choices:
        raise CompileError("a multiple-choice question needs at least one choice", reason="unsupported")
    if len(truths) != len(choices):
        raise CompileError(f"{len(choices)} choices but {len(truths)} formulas", reason="unsupported")
    if not all(isinstance(c, str) for c in choices):
        raise CompileError("choices must be strings", reason="unsupported")
    labels = choices if len(set(choices)) == len(choices) else tuple(f"{i + 1}: {c}" for i, c in enumerate(choices))
    return MultipleChoice(choices, Program(truths, labels, focus))


def choose_among(attention: Attention, choices: Sequence[str], predicate: Callable[[str], Predicate],
                 quantifier: Quantifier = Quantifier.EXISTS) -> MultipleChoice:
    """``A_q(Filter_{predicate(c)}[attention])`` for each choice ``c``; focus on ``attention``."""
    return multiple_choice(choices, [Aggregate(quantifier, Filter(predicate(c), attention)) for c in choices],
                           focus=attention)
