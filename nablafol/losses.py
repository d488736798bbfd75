"""The answer loss: the negative log-likelihood of the right answers (the paper's Algorithm 1).

* a yes/no program: ``-log P(yes)`` when the answer is yes, ``-log P(no)`` when it is no, with
  ``log P(no)`` the engine's exact complement (:attr:`~nablafol.engine.Answers.log_complement`), so
  a confidently wrong "yes" keeps a finite, informative gradient;
* an open program: ``-log`` of the right candidate's share of its candidates' probabilities
  (:meth:`~nablafol.engine.Answers.normalized_log_probs`: a softmax over the candidates'
  log-probabilities).

An exact zero probability (``-inf``, where no gradient exists) counts as
:data:`~nablafol.engine.answers.LOG_FLOOR`, so the loss is finite on every batch, a scene of no
objects included. The same function trains the neural oracle (``nablafol train``).

    >>> import torch
    >>> from nablafol import Engine, Predicate, Program, Aggregate, Filter, Top, Quantifier, TableOracle
    >>> from nablafol.ir import AggregateEach
    >>> red, cube, ball = Predicate("red"), Predicate("cube"), Predicate("ball")
    >>> is_red = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Top())))
    >>> shape = Program((AggregateEach(Quantifier.EXISTS, (cube, ball), Filter(red, Top())),), ("cube", "ball"))
    >>> p = torch.tensor([0.9, 0.2], requires_grad=True)
    >>> oracle = TableOracle([{red: p, cube: [1.0, 0.0], ball: [0.0, 1.0]}])
    >>> answers = Engine()([is_red, shape], oracle, scenes=[0, 0])
    >>> loss = answer_loss(answers, ["no", "cube"])
    >>> loss.backward()
    >>> round(loss.item(), 4)  # (-log(0.1 · 0.8) - log(0.9 / (0.9 + 0.2))) / 2
    1.3632
    >>> [round(g, 3) for g in p.grad.tolist()]  # a step against it makes both objects less red
    [4.899, 1.08]
"""
from __future__ import annotations

from typing import Sequence, Union

import torch

from nablafol.engine.answers import LOG_FLOOR, Answers, floor_zeros
from nablafol.errors import ShapeError

__all__ = ["answer_loss", "answer_targets", "LOG_FLOOR"]

_REDUCTIONS = ("mean", "sum", "none")


def answer_targets(answers: Answers, targets: Union[torch.Tensor, Sequence]) -> torch.Tensor:
    """``(P,)`` int64 on the answers' device: each program's right answer as an index (a yes/no
    program: 0 yes, 1 no; an open program: its candidate's position), from indices or labels
    (``"yes"``/``"no"``, a candidate's label). A target that names no candidate is refused in one
    line naming the program."""
    n = answers.log_probs.shape[0]
    device = answers.log_probs.device
    if torch.is_tensor(targets):
        if targets.shape != (n,) or targets.dtype.is_floating_point or targets.dtype == torch.bool:
            raise ShapeError(f"answer targets: expected {n} whole-number indices (one per program), got a tensor of "
                             f"shape {tuple(targets.shape)} and dtype {targets.dtype}")
        out = targets.to(device=device, dtype=torch.long)
        width = torch.tensor([2 if lbl is None else len(lbl) for lbl in answers.labels], device=device)
        bad = (out < 0) | (out >= width)
        if bool(bad.any()):
            i = int(bad.nonzero()[0])
            raise ShapeError(f"answer targets: program {i}: index {int(out[i])} is not one of its "
                             f"{int(width[i])} answers")
        return out
    targets = list(targets)
    if len(targets) != n:
        raise ShapeError(f"answer targets: {len(targets)} targets for {n} programs")
    out = []
    for i, (target, labels) in enumerate(zip(targets, answers.labels)):
        names = ("yes", "no") if labels is None else tuple(labels)
        if isinstance(target, str):
            if target not in names:
                shown = ", ".join(map(repr, names[:8])) + (", ..." if len(names) > 8 else "")
                raise ShapeError(f"answer targets: program {i}: {target!r} is not one of its answers ({shown})")
            out.append(names.index(target))
        elif isinstance(target, int) and not isinstance(target, bool) and 0 <= target < len(names):
            out.append(target)
        else:
            raise ShapeError(f"answer targets: program {i}: {target!r} is neither one of its answers nor an index "
                             f"below {len(names)}")
    return torch.tensor(out, dtype=torch.long, device=device)


def answer_loss(answers: Answers, targets: Union[torch.Tensor, Sequence], binary: torch.Tensor | None = None,
                reduction: str = "mean") -> torch.Tensor:
    """The negative log-likelihood of the right answers (see the module docstring), differentiable
    into whatever made the oracle's tables.

    ``targets``: per program, its right answer, as a label (``"yes"``, ``"no"``, a candidate's) or
    an index (:func:`answer_targets`); ``binary`` ``(P,)`` bool: which programs are yes/no (by
    default those without labels); ``reduction``: ``"mean"`` (the default), ``"sum"`` or ``"none"``
    (``(P,)``, one loss per program).
    """
    if reduction not in _REDUCTIONS:
        raise ShapeError(f"answer_loss: reduction must be one of {', '.join(_REDUCTIONS)}, got {reduction!r}")
    lp = answers.log_probs
    if binary is None:
        binary = torch.tensor(answers.is_yes_no, dtype=torch.bool, device=lp.device)
        targets = answer_targets(answers, targets)
    elif not torch.is_tensor(targets):
        targets = answer_targets(answers, targets)
    binary_ll = torch.where(targets == 0, lp[:, 0], answers.log_complement[:, 0])
    open_ll = answers.normalized_log_probs().gather(1, targets.clamp(max=lp.shape[1] - 1)[:, None])[:, 0]
    losses = -floor_zeros(torch.where(binary, binary_ll, open_ll))
    return losses if reduction == "none" else losses.sum() if reduction == "sum" else losses.mean()
