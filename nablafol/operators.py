"""The DFOL operators (paper, Lemmas 3.1-3.3) on batches of log-space attention vectors.

Each takes ``R`` attention vectors over at most ``N`` objects, ``log_a`` ``(R, N)``, with a boolean
``mask`` ``(R, N)``, False on padding (scenes of different sizes share a batch), which reductions
skip and outputs carry as ``log 0 = -inf``. The engine calls each once per operator kind and level.

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

from .numerics import (LOG_HALF, log1mexp, log1mexp_derivative, log1mexp_nonpositive,
                       log1mexp_slope, masked_sum)

NEG_INF = float("-inf")
_SYMBOLS = {"forall": "∀", "exists": "∃", "not_exists": "∄"}

# terms per CPU block of the ∃/∄ Q-product, its passes in cache (docs/design.md, decisions); on
# an accelerator, with no cache to stay in, blocks of 256 MiB a tensor (each pass is a launch)
BLOCK_ELEMENTS = 1 << 20
ACCELERATOR_BLOCK_BYTES = 1 << 28
# a CPU tensor of at least SPARSE_MIN_TERMS terms, at most SPARSE_SHARE of them finite (under the
# break-even), computes those alone; a smaller one's dense passes cost less than a look
SPARSE_SHARE = 0.15
SPARSE_MIN_TERMS = 1 << 14


class Quantifier(str, enum.Enum):
    """A quantifier and its aggregation ``A_q`` (paper, eqs. 6-8), found by value, symbol or name:

        >>> Quantifier("∄") is Quantifier("NOT_EXISTS") is Quantifier("not_exists") is Quantifier.NOT_EXISTS
        True
        >>> [q.symbol for q in Quantifier]
        ['∀', '∃', '∄']
    """

    FORALL = "forall"
    EXISTS = "exists"
    NOT_EXISTS = "not_exists"

    @property
    def symbol(self) -> str:
        return _SYMBOLS[self.value]

    @classmethod
    def _missing_(cls, value):
        if isinstance(value, str):
            for q in cls:
                if value in (q.name, _SYMBOLS[q.value]):
                    return q
        return None

    def __str__(self) -> str:
        return self.symbol


def _pad(log_a: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    return log_a if mask is None else log_a.masked_fill(~mask, NEG_INF)


def neg(log_a: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """``Neg[α] = 1 - α`` (Lemma 3.3 A), in log space; of scalars, ``not_``."""
    return _pad(log1mexp(log_a), mask)


def conjoin(log_a: torch.Tensor, log_b: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """``α ⊙ β``: two formulas on the same variable, both true (``F(X) ∧ G(X)``); with a unary
    predicate's ``α(π | X)``, ``Filter_π[α]`` (Lemma 3.3 B), as ``filter_``."""
    return _pad(log_a + log_b, mask)


filter_, not_ = conjoin, neg


def q_product(log_r: torch.Tensor, log_y: torch.Tensor, mask_x: torch.Tensor | None,
              mask_y: torch.Tensor | None, quantifier: Quantifier,
              block_elements: int | None | str = "auto") -> torch.Tensor:
    """The Q-product ``C = R ×_q α_Y``, ``C_i = A_q(R_{i,·} ⊙ α_Y)`` (paper, eq. 9 and 12): (R, N).

    ``log_r`` ``(R, N, M)`` is ``log α(Π | x_i, y_j)`` for the conjunction ``Π`` of the relate's
    binary predicates (any value but NaN or ``+inf`` at padding), ``log_y`` is ``(R, M)``. ∃ and
    ∄, the engine's only quadratic work, run over blocks of ``block_elements`` terms that stay in
    cache, nothing quadratic kept for the backward pass (``"auto"``: :data:`BLOCK_ELEMENTS` on the
    CPU, :data:`ACCELERATOR_BLOCK_BYTES` a tensor elsewhere; ``None``: plain operations in one
    block, the form ``torch.compile`` fuses).
    """
    if block_elements == "auto":
        block_elements = BLOCK_ELEMENTS if log_r.is_cpu else ACCELERATOR_BLOCK_BYTES // log_r.element_size()
    if mask_y is not None:
        log_y = log_y.masked_fill(~mask_y, NEG_INF)  # padding attends nothing: its terms vanish
    if quantifier is Quantifier.FORALL:
        log_r = log_r if mask_y is None else log_r.masked_fill(~mask_y[:, None, :], 0.0)
        # summed in one layout: a reversed atom's table is a transposed view, and a sum along
        # strided memory adds in another order (last bits would depend on the batch's other rows)
        return _pad(log_r.contiguous().sum(-1) + masked_sum(log_y, mask_y)[:, None], mask_x)
    tracked = torch.is_grad_enabled() and (log_r.requires_grad or log_y.requires_grad)
    complement = log1mexp_nonpositive
    if block_elements is None:  # contiguous: the sums' order is the blocks' whatever log_r's layout
        complement = log1mexp if tracked else _two_branches
        none_true = complement(log_r.contiguous() + log_y[:, None, :]).sum(-1)
    elif tracked:
        none_true = _NoneTrue.apply(log_r, log_y, block_elements)
    else:  # the same blocks without autograd's bookkeeping (a small call's main cost)
        none_true = _none_true_blocks(log_r, log_y, _row_blocks(log_r, block_elements))
    out = none_true if quantifier is Quantifier.NOT_EXISTS else complement(none_true)
    return _pad(out, mask_x)


def q_product_fused(log_r, log_y, mask_x, mask_y, quantifier: Quantifier) -> torch.Tensor:
    """:func:`q_product` in one block of plain operations, the form ``torch.compile`` fuses."""
    return q_product(log_r, log_y, mask_x, mask_y, quantifier, block_elements=None)


def _two_branches(t: torch.Tensor) -> torch.Tensor:
    # log1mexp out of place, the threshold a Python float: a constant in the fused loop
    t = t.clamp(max=0.0)
    return torch.where(t > LOG_HALF, torch.log(-torch.expm1(t)), torch.log1p(-torch.exp(t)))


def _row_blocks(log_r: torch.Tensor, block_elements: int) -> list[slice]:
    rows, n, m = log_r.shape
    step = max(1, min(rows, block_elements // max(1, n * m)))
    return [slice(s, s + step) for s in range(0, max(rows, 1), step)]  # no rows: one empty block


def _none_true_blocks(log_r: torch.Tensor, log_y: torch.Tensor, blocks: list) -> torch.Tensor:
    """``Σ_j log(1 - e^{log r_ij + log y_j})`` in ``log_r``'s dtype, block by block of rows."""
    if len(blocks) == 1 and log_r.numel() < SPARSE_MIN_TERMS:  # one small block: no look, no slice
        return _block_none_true(log_r, log_y, crisp=False)
    # a quick look at one row: a neural oracle's tables are not crisp; a scene graph's are, but
    # relate so few pairs that the sparse terms cost less
    head = log_r[:1]
    crisp = log_r.is_cpu and log_r.numel() >= SPARSE_MIN_TERMS and _is_crisp(head)
    crisp = crisp and int((head == 0).count_nonzero()) > SPARSE_SHARE * head.numel()
    parts = [_block_none_true(log_r[rows], log_y[rows], crisp) for rows in blocks]
    return parts[0] if len(parts) == 1 else torch.cat(parts)


def _block_none_true(log_r: torch.Tensor, log_y: torch.Tensor, crisp: bool) -> torch.Tensor:
    sums = _crisp_none_true(log_r, log_y) if crisp else None
    if sums is not None:
        return sums
    # the terms a contiguous tensor of their own: the sums' order is theirs whatever the layout
    if log_r.is_contiguous() and log_r.dtype == log_y.dtype:  # laid out as log_r, a new tensor already
        t = log_r + (log_y if log_r.shape[0] == 1 else log_y[:, None, :])  # one row: (1, M) broadcasts
    else:
        t = torch.add(log_r, log_y[:, None, :], out=log_r.new_empty(log_r.shape))
    terms = _sparse_log1mexp(t, out=t, guard=False)
    return (log1mexp_nonpositive(t) if terms is None else terms).sum(-1)


def _is_crisp(t: torch.Tensor) -> bool:
    """Every entry 0 or ``-inf`` (a NaN is neither)."""
    return torch.equal(t != 0, torch.isneginf(t))


def _crisp_none_true(log_r: torch.Tensor, log_y: torch.Tensor) -> torch.Tensor | None:
    """The dense passes' sums over a crisp table, without a log pass (None: not crisp, or a NaN)."""
    if not _is_crisp(log_r):
        return None
    true_terms = log1mexp_nonpositive(log_y.to(log_r.dtype))  # log 1 + log y_j: log y_j
    if bool(true_terms.isnan().any()):
        return None
    ones = torch.clamp(log_r, min=-1.0, out=log_r.new_empty(log_r.shape)).add_(1.0)
    # 0 · t is a false entry's term -0.0, but NaN where t is -inf (a certain object)
    return ones.mul_(true_terms[:, None, :]).nan_to_num_(nan=-0.0, neginf=NEG_INF).sum(-1)


def _sparse_log1mexp(t: torch.Tensor, out: torch.Tensor | None, guard: bool) -> torch.Tensor | None:
    """The dense passes' ``log(1 - e^t)`` of a mostly ``-inf`` ``t``, from its other terms."""
    if not (t.is_cpu and t.is_contiguous()) or t.numel() < SPARSE_MIN_TERMS:
        return None
    # a quick look at one row first: a neural oracle's terms are dense
    head = t[0] if t.dim() > 1 and t.shape[0] > 1 else None
    if head is not None and int(torch.count_nonzero(head != NEG_INF)) > SPARSE_SHARE * head.numel():
        return None
    dead = torch.isneginf(t)  # a pass under half the time of `t != -inf`
    if t.numel() - int(torch.count_nonzero(dead)) > SPARSE_SHARE * t.numel():
        return None
    at, flat = dead.logical_not_().view(-1).nonzero().squeeze(1), t.view(-1)
    values = flat[at]
    terms = log1mexp(values) if guard else log1mexp_nonpositive(values)
    out = torch.full_like(t, -0.0) if out is None else out.fill_(-0.0)
    out.view(-1)[at] = terms
    return out


class _NoneTrue(torch.autograd.Function):
    """:func:`_none_true_blocks` with a backward recomputed from the inputs block by block."""

    @staticmethod
    def forward(ctx, log_r, log_y, block_elements):
        ctx.blocks = _row_blocks(log_r, block_elements)
        ctx.save_for_backward(log_r, log_y)
        return _none_true_blocks(log_r, log_y, ctx.blocks)

    @staticmethod
    def backward(ctx, grad):
        log_r, log_y = ctx.saved_tensors
        need_r, need_y = ctx.needs_input_grad[:2]
        if torch.is_grad_enabled():  # create_graph=True: the backward itself is differentiated
            d = log1mexp_slope(log_r + log_y[:, None, :]) * grad[:, :, None]
            return (d if need_r else None), (d.sum(1) if need_y else None), None
        dtype, whole = torch.promote_types(log_r.dtype, log_y.dtype), len(ctx.blocks) == 1
        # each block's slopes written into place: nothing quadratic kept beyond one block
        grad_r = torch.empty_like(log_r) if need_r and not whole else None
        grad_y = torch.empty_like(log_y) if need_y and not whole else None
        for rows in ctx.blocks:
            # the terms a tensor of their own: their sum over rows adds in one order whatever
            # log_r's layout (a reversed atom's table is a transposed view)
            t = log_r.new_empty(log_r[rows].shape, dtype=dtype)
            torch.add(log_r[rows], log_y[rows, None, :], out=t)
            d = log1mexp_derivative(t, guard=False).mul_(grad[rows, :, None])
            if whole:  # one block: its slopes are the gradients, nothing copied into place
                return (d if need_r else None), (d.sum(1) if need_y else None), None
            if need_r:
                grad_r[rows] = d
            if need_y:
                grad_y[rows] = d.sum(1)
        return grad_r, grad_y, None


def aggregate(log_a: torch.Tensor, mask: torch.Tensor | None, quantifier: Quantifier) -> torch.Tensor:
    """``A_q(α)`` over the last dimension (Lemma 3.1), padding skipped: ``A_∀ = Π a_i``, ``A_∃ = 1 -
    Π (1 - a_i)``, ``A_∄ = Π (1 - a_i)``."""
    return aggregate_pair(log_a, mask, quantifier)[0]


def aggregate_pair(log_a: torch.Tensor, mask: torch.Tensor | None, quantifier: Quantifier,
                   keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log A_q(α), log(1 - A_q(α)))``, each from the side where it is accurate (``(R,)`` each):
    ``A_∃``'s complement ``Π(1 - a_i)`` is a plain sum of logs, kept exactly (a confidently wrong
    "yes" still has a finite, informative ``log P(no)``)."""
    if quantifier is Quantifier.FORALL:
        log_p = masked_sum(log_a, mask, keepdim)
        return log_p, log1mexp(log_p)
    tracked = torch.is_grad_enabled() and log_a.requires_grad
    # from the finite terms alone where most are -inf (an open question's candidate rows)
    terms = None if tracked else _sparse_log1mexp(log_a, None, guard=True)
    none_true = masked_sum(log1mexp(log_a) if terms is None else terms, mask, keepdim)  # never above 0
    if quantifier is Quantifier.NOT_EXISTS:
        return none_true, log1mexp_nonpositive(none_true)
    return log1mexp_nonpositive(none_true), none_true


def all_same(log_nonempty: torch.Tensor, log_lacks: torch.Tensor,
             pad: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """GQA's one-input ``same``, ``∃π: ∀X: F(X) → π(X)`` (:class:`nablafol.ir.AllSame`), as
    ``(log p, log(1 - p))``: ``log_nonempty`` ``(R,)`` is ``log e``, ``e = A_∃(α)``; ``log_lacks``
    ``(R, K)`` is ``log s_π``, ``s_π = A_∃(α ⊙ Neg[Filter_π[1]])``; ``pad`` ``(R, K)`` marks values
    that are not there. ``1 - p = e · Π_π (s_π / e)``, the values taken independent given that
    someone is attended; ``e = 0`` gives ``p = 1`` (the formula is then vacuously true).

        >>> import torch
        >>> e, s = torch.tensor([0.8]).log(), torch.tensor([[0.8, 0.8, 0.5]]).log()
        >>> all_same(e, s)[0].exp()  # two values no one has: 1 - 0.8 · 1 · 1 · 0.625
        tensor([0.5000])
    """
    ratio = torch.where(torch.isneginf(log_lacks), NEG_INF, log_lacks - log_nonempty[:, None]).clamp(max=0.0)
    if pad is not None:
        ratio = ratio.masked_fill(pad, 0.0)
    log_q = log_nonempty + ratio.sum(-1)
    return log1mexp(log_q), log_q


def and_(log_s: torch.Tensor) -> torch.Tensor:
    """Conjunction of independent scalars over the last dimension: ``Π s_k``."""
    return log_s.sum(-1)
