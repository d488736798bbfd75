"""What a batch of programs evaluates to (:class:`Answers`), the oracle's tables it was computed
from (:class:`Tables`), and how a batched operator group reads them (:class:`GroupReader`).

    >>> import torch
    >>> answers = Answers(torch.log(torch.tensor([[0.8], [0.3]])), torch.ones(2, 1, dtype=torch.bool), [None, None],
    ...                   torch.zeros(2, 1), torch.ones(2, 1, dtype=torch.bool))
    >>> answers.predictions(), answers.exact.tolist()
    (['yes', 'no'], [False, False])
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Union

import numpy as np
import torch

from nablafol.errors import ShapeError
from nablafol.numerics import log1mexp

__all__ = ["Answers", "Tables", "GroupReader", "LOG_FLOOR", "floor_zeros", "asked_table", "masked_table",
           "not_probabilities", "answer_reading", "ANSWER_READING"]

NEG_INF = float("-inf")
#: The log-probability an exact zero counts as where answers are normalized or scored
LOG_FLOOR = -100.0


def floor_zeros(log_p: torch.Tensor) -> torch.Tensor:
    """Exact zeros (``-inf``) as :data:`LOG_FLOOR`; every finite value, and its gradient, untouched."""
    return torch.where(torch.isneginf(log_p), torch.full_like(log_p, LOG_FLOOR), log_p)


@dataclass
class Tables:
    """The log-probability tables of a plan's requests: ``unary`` ``(R, N)``, ``binary``
    ``(R', N, N)`` (then the relates' all-ones table where ``neutral``), ``object_mask`` ``(B, N)``;
    ``padded`` False when every scene has all ``N`` objects (the mask is all True)."""

    unary: Optional[torch.Tensor]
    binary: Optional[torch.Tensor]
    object_mask: torch.Tensor
    dtype: torch.dtype
    padded: bool = True
    neutral: bool = field(kw_only=True)  # said, never assumed

    def with_neutral(self) -> "Tables":
        """The tables with the neutral table last in ``binary``, read by a relate of fewer atoms
        than its group's widest."""
        if self.neutral or self.binary is None:
            return self
        n = self.binary.shape[-1]
        return replace(self, binary=torch.cat([self.binary, self.binary.new_zeros((1, n, n))]), neutral=True)

    def detached(self) -> "Tables":
        """The same tables cut from autograd's graph."""
        if not any(t is not None and t.requires_grad for t in (self.unary, self.binary)):
            return self
        d = lambda t: None if t is None else t.detach()  # noqa: E731
        return replace(self, unary=d(self.unary), binary=d(self.binary))


def asked_table(oracle, requests, arity: int, device, n: Optional[int] = None) -> torch.Tensor:
    """The oracle's table of ``requests``, refused unless it is ``(R,) + (N,) * arity`` on
    ``device`` (``n``: the ``N`` expected, else any one)."""
    table = oracle.unary(requests) if arity == 1 else oracle.binary(requests)
    name = f"{type(oracle).__name__}.{('unary', 'binary')[arity - 1]}"
    if n is None and torch.is_tensor(table) and table.dim() == 1 + arity:
        n = table.shape[-1]
    expected = (len(requests),) + ("N" if n is None else n,) * arity
    if not torch.is_tensor(table) or table.shape != expected:
        shape = tuple(table.shape) if torch.is_tensor(table) else type(table).__name__
        raise ShapeError(f"{name} returned {shape}, expected ({', '.join(map(str, expected))}) "
                         f"(requests x objects{' x objects' if arity == 2 else ''})")
    if table.device != device:  # else a torch error deep in an operator
        raise ShapeError(f"{name} returned a table on {table.device}, its num_objects is on "
                         f"{device}: an oracle gives both on one device")
    return table


def masked_table(table: torch.Tensor, requests, object_mask: torch.Tensor) -> torch.Tensor:
    """``table`` (of ``requests``) with its entries past each scene's objects an exact 0."""
    valid = object_mask[requests.scene]
    return table.masked_fill(~(valid[:, :, None] & valid[:, None, :] if table.dim() == 3 else valid), NEG_INF)


def not_probabilities(table: torch.Tensor) -> torch.Tensor:
    """Where a log-probability table holds NaN or a value above log 1."""
    return torch.isnan(table) | (table > 0)


#: The arrays :func:`answer_reading` gives, in order
ANSWER_READING = ("candidate rows", "candidate mask", "focus rows", "no focus")


def answer_reading(plan, programs: int) -> list:
    """What a plan's answers read from its stores, as host arrays: ``(programs, K)`` each candidate's
    scalar row (row 1, log 0, where none) and whether it is one; ``(P,)`` each focus row (0 where
    none) and where there is none. ``programs``: the plan's, or more (their rows padding)."""
    shape, at = (programs, plan.candidate_width), (plan.candidate_program, plan.candidate_position)
    rows, mask = np.ones(shape, dtype=np.int64), np.zeros(shape, dtype=bool)
    rows[at], mask[at] = plan.candidate_rows, True
    return [rows, mask, np.maximum(plan.focus, 0), plan.focus < 0]


class GroupReader:
    """What a group of ``size`` rows reads (the reader :mod:`~nablafol.engine.lowering` describes):
    ``index``, by array name, what selects its rows from the stores ``vec`` / ``sca`` or the tables;
    ``columns``, a relate's ``(table rows, flip)``, ``flip`` None, True (transposed) or a mask.
    Stores may be lists of rows (one program run row by row; ``like``: a row's dtype and size)."""

    __slots__ = ("index", "columns", "size", "vec", "sca", "unary_table", "binary_table", "mask",
                 "q_product", "like")

    def __init__(self, index: dict, columns: list, size: int, vec, sca, unary, binary, mask,
                 q_product, like=None):
        self.index, self.columns, self.size, self.vec, self.sca = index, columns, size, vec, sca
        self.unary_table, self.binary_table, self.mask = unary, binary, mask
        self.q_product, self.like = q_product, vec if like is None else like

    def vector(self, name: str) -> torch.Tensor:
        return self.vec[self.index[name]]

    def unary(self) -> torch.Tensor:
        return _whole_rows(self.unary_table, self.index["table"])

    def relation(self) -> torch.Tensor:
        log_r = None
        for rows, flip in self.columns:
            t = _whole_rows(self.binary_table, rows)
            if flip is True:
                t = t.transpose(1, 2)
            elif flip is not None:
                t = torch.where(flip, t.transpose(1, 2), t)
            log_r = t if log_r is None else log_r + t
        return log_r

    def truths(self) -> torch.Tensor:
        if isinstance(self.sca, list):
            return torch.stack([self.sca[r] for r in self.index["args"]], dim=1)
        return _whole_rows(self.sca, self.index["args"])  # (G, K, 2)

    def pad(self) -> torch.Tensor:
        pad = self.index["pad"]
        return pad if torch.is_tensor(pad) else torch.as_tensor(pad, device=self.like.device)

    def objects(self) -> Optional[torch.Tensor]:
        return self.mask

    def all_objects(self) -> torch.Tensor:
        top = self.like.new_zeros((self.size, self.like.shape[1]))
        return top if self.mask is None else top.masked_fill(~self.mask, NEG_INF)


def _whole_rows(source: torch.Tensor, at) -> torch.Tensor:
    """``source[at]``; an index tensor's rows copied whole (``index_select``: faster)."""
    if not torch.is_tensor(at):
        return source[at]
    return source.index_select(0, at.reshape(-1)).view(tuple(at.shape) + tuple(source.shape[1:]))


@dataclass
class Answers:
    """What a batch of programs evaluates to: ``log_probs`` ``(P, K)``, each candidate's
    log-probability (a yes/no program's one: *yes*), ``-inf`` where ``candidate_mask`` pads;
    ``focus`` ``(P, N)``: the log-attention of each program's focus node (``-inf`` for none)."""

    log_probs: torch.Tensor
    candidate_mask: torch.Tensor
    labels: list
    focus: torch.Tensor
    object_mask: torch.Tensor  # (P, N)
    log_complement: Optional[torch.Tensor] = None  # (P, K): log(1 - p), exact where p is close to 1
    # (P,) bool, or how to compute it when first asked
    _exact: Union[torch.Tensor, Callable[[], torch.Tensor], None] = field(default=None, repr=False)
    # ``Engine(bounds=True)``: (lower, upper) ``(P, K)``, sound bounds on each candidate's probability
    bounds: Optional[tuple] = None

    def __post_init__(self):
        if self.log_complement is None:
            self.log_complement = log1mexp(self.log_probs).masked_fill(~self.candidate_mask, 0.0)

    @property
    def exact(self) -> torch.Tensor:
        """``(P,)`` bool, on the CPU: whether each program's probabilities are exact (every ground
        atom an independent coin), not the fast path's approximation: read-once, the atoms it
        repeats all certain, or exact mode; always False with a calibrator."""
        if callable(self._exact):
            self._exact = self._exact()
        if self._exact is None:
            self._exact = torch.zeros(len(self.labels), dtype=torch.bool)
        return self._exact

    def probs(self) -> torch.Tensor:
        return self.log_probs.exp()

    @property
    def is_yes_no(self) -> list[bool]:
        return [lbl is None for lbl in self.labels]

    def predictions(self, threshold: float = 0.5) -> list[str]:
        """Algorithm 1: ``yes`` iff ``α(F) > θ`` for yes/no programs, else the argmax label."""
        if not (isinstance(threshold, (int, float)) and 0.0 <= threshold <= 1.0):
            raise ShapeError(f"threshold θ must be a number in [0, 1], got {threshold!r}")
        lp = self.log_probs.detach()
        yes = (lp[:, 0] > float(np.log(threshold)) if threshold > 0 else lp[:, 0] > NEG_INF).tolist()
        # the argmax only of the programs with labels: most rows of a mixed batch are padding
        labelled = [i for i, lbl in enumerate(self.labels) if lbl is not None]
        if len(labelled) < len(self.labels):
            lp = lp[labelled]
        best = iter(lp.argmax(dim=1).tolist() if labelled else ())
        return [("yes" if y else "no") if lbl is None else lbl[next(best)] for lbl, y in zip(self.labels, yes)]

    def guessed(self) -> list[bool]:
        """Per program, whether its prediction is a guess: every candidate of a program with labels
        has probability 0 (a yes/no program never guesses)."""
        if all(lbl is None for lbl in self.labels):  # no reduction, no read of the device
            return [False] * len(self.labels)
        nothing = (self.log_probs.detach().amax(dim=1).exp() == 0).tolist()
        return [lbl is not None and g for lbl, g in zip(self.labels, nothing)]

    def candidate_probabilities(self, i: int) -> dict[str, float]:
        """Candidate -> the probability of its own formula, for program ``i`` (they need not sum
        to 1); a yes/no program: ``{"yes": p, "no": 1 - p}``."""
        p = self.log_probs[i].detach().exp().tolist()
        if self.labels[i] is None:
            return {"yes": p[0], "no": float(self.log_complement[i, 0].detach().exp())}
        return dict(zip(self.labels[i], p))  # padding past its labels left out

    def answer_distribution(self, i: int) -> dict[str, float]:
        """Candidate -> probability that it is *the* answer, for program ``i``
        (:meth:`normalized_log_probs`); a yes/no program as :meth:`candidate_probabilities`."""
        if self.labels[i] is None:
            return self.candidate_probabilities(i)
        return dict(zip(self.labels[i], self.normalized_log_probs()[i].detach().exp().tolist()))

    def normalized_log_probs(self) -> torch.Tensor:
        """``(P, K)``: the candidates' log-probabilities normalized per program (``-inf`` at
        padding), an exact zero counted as :data:`LOG_FLOOR`: all zeros give a uniform
        distribution, never NaN. A yes/no program's one candidate normalizes to 1."""
        scores = floor_zeros(self.log_probs).masked_fill(~self.candidate_mask, NEG_INF)
        return torch.log_softmax(scores, dim=1)
