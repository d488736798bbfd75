"""The DFOL operators (paper, Lemmas 3.1-3.3) on batches of log-space attention vectors.

Every function works on many rows at once: ``R`` attention vectors over at most ``N``
objects, ``log_a`` of shape ``(R, N)``, with a boolean ``mask`` ``(R, N)`` that is False on
padding (scenes of different sizes share one batch). Padding never changes a result:
reductions skip it and outputs carry ``log 0 = -inf`` there.

The executor (:mod:`nablafol.engine`) calls these once per operator kind and program level;
users can call them directly to build their own reasoning layers.

Example (the paper's formula (1), ``∃X ∀Y: Chair(X) ∧ Left(X, Y)``, over 2 objects):
    >>> import torch
    >>> from nablafol.numerics import safe_log
    >>> chair = safe_log(torch.tensor([[0.9, 0.2]]))
    >>> left = safe_log(torch.tensor([[[1.0, 0.8], [0.1, 1.0]]]))
    >>> mask = torch.ones(1, 2, dtype=torch.bool)
    >>> top = torch.zeros(1, 2)
    >>> att = filter_(q_product(left, top, mask, mask, Quantifier.FORALL), chair, mask)
    >>> aggregate(att, mask, Quantifier.EXISTS).exp()
    tensor([0.7256])
"""
from __future__ import annotations

import enum

import torch

from .numerics import log1mexp, masked_sum

NEG_INF = float("-inf")


class Quantifier(str, enum.Enum):
    """A quantifier and its aggregation ``A_q`` (paper, eqs. 6-8)."""

    FORALL = "forall"
    EXISTS = "exists"
    NOT_EXISTS = "not_exists"

    @property
    def symbol(self) -> str:
        return {"forall": "∀", "exists": "∃", "not_exists": "∄"}[self.value]

    def __str__(self) -> str:
        return self.symbol


def _pad(log_a: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    return log_a if mask is None else log_a.masked_fill(~mask, NEG_INF)


def neg(log_a: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """``Neg[α] = 1 - α`` (Lemma 3.3 A), in log space: ``log(1 - e^{log α})``."""
    return _pad(log1mexp(log_a), mask)


def filter_(log_a: torch.Tensor, log_pi: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """``Filter_π[α] = α ⊙ α(π | X)`` (Lemma 3.3 B): conjunction with a unary predicate."""
    return _pad(log_a + log_pi, mask)


def conjoin(log_a: torch.Tensor, log_b: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """``α ⊙ β``: two formulas on the same variable, both true (``F(X) ∧ G(X)``)."""
    return _pad(log_a + log_b, mask)


BLOCK_ELEMENTS = 1 << 16  # terms per block of the ∃/∄ Q-product: a few cache-resident passes


def q_product(
    log_r: torch.Tensor,
    log_y: torch.Tensor,
    mask_x: torch.Tensor | None,
    mask_y: torch.Tensor | None,
    quantifier: Quantifier,
    block_elements: int | None = BLOCK_ELEMENTS,
) -> torch.Tensor:
    """The Q-product ``C = R ×_q α_Y``, ``C_i = A_q(R_{i,·} ⊙ α_Y)`` (paper, eq. 9 and 12).

    ``log_r`` is ``(R, N, M)``: ``log α(Π | x_i, y_j)`` for the conjunction ``Π`` of the
    relate's binary predicates; ``log_y`` is ``(R, M)``. Returns ``(R, N)``:

    * ``∀``: ``Σ_j log r_ij + Σ_j log y_j`` (the product factorizes);
    * ``∃``: ``log(1 - Π_j (1 - r_ij y_j))``;
    * ``∄``: ``log Π_j (1 - r_ij y_j)``.

    ∃ and ∄ take ``R·N·M`` evaluations of ``log(1 - e^t)``, the engine's only quadratic
    work; it runs over blocks of ``block_elements`` terms so that its intermediate passes
    stay in cache (``None``: one block, which is what ``torch.compile`` fuses best).
    """
    if quantifier is Quantifier.FORALL:
        mask_j = None if mask_y is None else mask_y[:, None, :]
        out = masked_sum(log_r, mask_j) + masked_sum(log_y, mask_y)[:, None]
        return _pad(out, mask_x)
    rows, n, m = log_r.shape
    step = rows if block_elements is None else max(1, block_elements // max(1, n * m))
    blocks = [
        _none_true(log_r[s : s + step], log_y[s : s + step], None if mask_y is None else mask_y[s : s + step])
        for s in range(0, rows, step)
    ]
    none_true = blocks[0] if len(blocks) == 1 else torch.cat(blocks)
    out = none_true if quantifier is Quantifier.NOT_EXISTS else log1mexp(none_true)
    return _pad(out, mask_x)


def q_product_fused(log_r, log_y, mask_x, mask_y, quantifier: Quantifier) -> torch.Tensor:
    """:func:`q_product` in one block: the form to hand to ``torch.compile``."""
    return q_product(log_r, log_y, mask_x, mask_y, quantifier, block_elements=None)


def _none_true(log_r: torch.Tensor, log_y: torch.Tensor, mask_y: torch.Tensor | None) -> torch.Tensor:
    """``Σ_j log(1 - r_ij y_j)``: the log-probability that no ``j`` is both related and attended."""
    return masked_sum(log1mexp(log_r + log_y[:, None, :]), None if mask_y is None else mask_y[:, None, :])


def aggregate(log_a: torch.Tensor, mask: torch.Tensor | None, quantifier: Quantifier) -> torch.Tensor:
    """``A_q(α)`` over the last dimension (Lemma 3.1): ``(R, N) -> (R,)``.

    ``A_∀ = Π a_i``, ``A_∃ = 1 - Π (1 - a_i)``, ``A_∄ = Π (1 - a_i)``; padding is skipped.
    """
    if quantifier is Quantifier.FORALL:
        return masked_sum(log_a, mask)
    none_true = masked_sum(log1mexp(log_a), mask)
    return none_true if quantifier is Quantifier.NOT_EXISTS else log1mexp(none_true)


def not_(log_s: torch.Tensor) -> torch.Tensor:
    """Scalar negation ``1 - s``."""
    return log1mexp(log_s)


def and_(log_s: torch.Tensor) -> torch.Tensor:
    """Conjunction of independent scalars over the last dimension: ``Π s_k``."""
    return log_s.sum(-1)


def or_(log_s: torch.Tensor) -> torch.Tensor:
    """Disjunction of independent scalars over the last dimension: ``1 - Π (1 - s_k)``."""
    return log1mexp(log1mexp(log_s).sum(-1))
