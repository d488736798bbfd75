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

from .numerics import log1mexp, log1mexp_nonpositive, log1mexp_slope, masked_sum

NEG_INF = float("-inf")
_SYMBOLS = {"forall": "∀", "exists": "∃", "not_exists": "∄"}


class Quantifier(str, enum.Enum):
    """A quantifier and its aggregation ``A_q`` (paper, eqs. 6-8): ``FORALL`` is ``∀`` (``A_∀``),
    ``EXISTS`` is ``∃`` (``A_∃``), ``NOT_EXISTS`` is ``∄`` (``A_∄``, "none"). Each is found by its
    value, its symbol or its name:

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
    """``Neg[α] = 1 - α`` (Lemma 3.3 A), in log space: ``log(1 - e^{log α})``."""
    return _pad(log1mexp(log_a), mask)


def filter_(log_a: torch.Tensor, log_pi: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """``Filter_π[α] = α ⊙ α(π | X)`` (Lemma 3.3 B): conjunction with a unary predicate."""
    return _pad(log_a + log_pi, mask)


def conjoin(log_a: torch.Tensor, log_b: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """``α ⊙ β``: two formulas on the same variable, both true (``F(X) ∧ G(X)``)."""
    return _pad(log_a + log_b, mask)


# terms per block of the ∃/∄ Q-product on the CPU: its passes stay in cache (4 MiB a float32 tensor),
# and each block costs about fifty operator calls forward and backward, so a training step's relate
# of a few hundred rows runs as one block, not as many as its rows fill (docs/design.md, decisions)
BLOCK_ELEMENTS = 1 << 20
# On an accelerator each pass is a kernel launch and there is no cache to stay in: the CPU's small
# blocks made many launches each of little work (benchmarks/README.md). Blocks of up to 256 MiB a
# tensor there (2^26 float32 terms; three at once, and as many again under autograd's backward).
ACCELERATOR_BLOCK_BYTES = 1 << 28
# A block whose terms are mostly -inf (the pairs a scene graph relates are few; an attention after
# a filter holds few objects, as an open question's candidate rows) computes only its other terms:
# at most this share of them, in blocks of at least SPARSE_MIN_TERMS (below it the dense passes
# cost less than the look); for an aggregation as for the Q-product
SPARSE_SHARE = 0.15  # under the measured break-even share (benchmarks/README.md)
SPARSE_MIN_TERMS = 1 << 14
_LOG_HALF = -0.6931471805599453


def q_product(
    log_r: torch.Tensor,
    log_y: torch.Tensor,
    mask_x: torch.Tensor | None,
    mask_y: torch.Tensor | None,
    quantifier: Quantifier,
    block_elements: int | None | str = "auto",
) -> torch.Tensor:
    """The Q-product ``C = R ×_q α_Y``, ``C_i = A_q(R_{i,·} ⊙ α_Y)`` (paper, eq. 9 and 12).

    ``log_r`` is ``(R, N, M)``: ``log α(Π | x_i, y_j)`` for the conjunction ``Π`` of the
    relate's binary predicates (any value but NaN or ``+inf`` at padding); ``log_y`` is
    ``(R, M)``. Returns ``(R, N)``:

    * ``∀``: ``Σ_j log r_ij + Σ_j log y_j`` (the product factorizes);
    * ``∃``: ``log(1 - Π_j (1 - r_ij y_j))``;
    * ``∄``: ``log Π_j (1 - r_ij y_j)``.

    ∃ and ∄ take ``R·N·M`` evaluations of ``log(1 - e^t)``, the engine's only quadratic
    work. :class:`_NoneTrue` does it over blocks of ``block_elements`` terms, so its
    passes stay in cache and nothing quadratic is kept for the backward
    pass (``"auto"``: :data:`BLOCK_ELEMENTS` on the CPU, :data:`ACCELERATOR_BLOCK_BYTES` a tensor
    elsewhere; ``None``: plain tensor operations in one block, the form ``torch.compile`` fuses).
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
    if block_elements is None:  # contiguous: the sums' order is the blocks' whatever log_r's layout
        none_true = log1mexp(log_r.contiguous() + log_y[:, None, :]).sum(-1)
    elif torch.is_grad_enabled() and (log_r.requires_grad or log_y.requires_grad):
        none_true = _NoneTrue.apply(log_r, log_y, block_elements)
    else:  # the same blocks without autograd's bookkeeping (a small call's main cost)
        none_true = _none_true_blocks(log_r, log_y, _block_rows(log_r, block_elements))
    out = none_true if quantifier is Quantifier.NOT_EXISTS else log1mexp_nonpositive(none_true)
    return _pad(out, mask_x)


def q_product_fused(log_r, log_y, mask_x, mask_y, quantifier: Quantifier) -> torch.Tensor:
    """:func:`q_product` as plain tensor operations: the form to hand to ``torch.compile``.

    Without autograd it skips :func:`~nablafol.numerics.log1mexp`'s guard against round-off
    above 0 (the terms are sums of log-probabilities, never above 0), which leaves one fused
    loop with nothing but the two branches of ``log(1 - e^t)``.
    """
    if torch.is_grad_enabled() and (log_r.requires_grad or log_y.requires_grad):
        return q_product(log_r, log_y, mask_x, mask_y, quantifier, block_elements=None)
    if mask_y is not None:
        log_y = log_y.masked_fill(~mask_y, NEG_INF)
    if quantifier is Quantifier.FORALL:
        return q_product(log_r, log_y, mask_x, mask_y, quantifier, block_elements=None)
    none_true = _log1m_exp_terms(log_r.contiguous() + log_y[:, None, :]).sum(-1)
    out = none_true if quantifier is Quantifier.NOT_EXISTS else _log1m_exp_terms(none_true)
    return _pad(out, mask_x)


def _log1m_exp_terms(t: torch.Tensor) -> torch.Tensor:
    """``log(1 - e^t)`` for ``t <= 0`` (the two accurate branches, no guard): fused by the compiler
    (out of place, its threshold a Python float: a constant in the fused loop)."""
    return torch.where(t > _LOG_HALF, torch.log(-torch.expm1(t)), torch.log1p(-torch.exp(t)))


def _block_rows(log_r: torch.Tensor, block_elements: int) -> int:
    rows, n, m = log_r.shape
    return max(1, min(rows, block_elements // max(1, n * m)))  # at least 1: no rows still steps through none


def _none_true_blocks(log_r: torch.Tensor, log_y: torch.Tensor, step: int) -> torch.Tensor:
    """``Σ_j log(1 - e^{log r_ij + log y_j})`` in ``log_r``'s dtype, ``step`` rows at a time, each
    block's terms a contiguous tensor of their own (so the sums' order is theirs whatever
    ``log_r``'s layout)."""
    rows, head = log_r.shape[0], log_r[:1]
    # a quick look at one row: a neural oracle's tables are not crisp; a scene graph's are, but
    # relate so few pairs that the sparse terms cost less
    crisp = log_r.is_cpu and rows > 0 and _is_crisp(head) and int((head == 0).count_nonzero()) > SPARSE_SHARE * head.numel()
    sums = [_block_none_true(log_r[s:s + step], log_y[s:s + step], crisp) for s in range(0, max(rows, 1), step)]
    return sums[0] if len(sums) == 1 else torch.cat(sums)


def _block_none_true(log_r: torch.Tensor, log_y: torch.Tensor, crisp: bool) -> torch.Tensor:
    sums = _crisp_none_true(log_r, log_y) if crisp else None
    if sums is not None:
        return sums
    t = torch.add(log_r, log_y[:, None, :], out=log_r.new_empty(log_r.shape))
    terms = _sparse_log1mexp(t, out=t, guard=False)
    return (log1mexp_nonpositive(t) if terms is None else terms).sum(-1)


def _is_crisp(t: torch.Tensor) -> bool:
    """Every entry 0 or ``-inf`` (a NaN is neither)."""
    return torch.equal(t != 0, torch.isneginf(t))


def _crisp_none_true(log_r: torch.Tensor, log_y: torch.Tensor) -> torch.Tensor | None:
    """The same sums over a crisp table, with no transcendental pass over it: each column's term
    at a true entry by the dense passes, times 1 or 0 (``0 · t`` is a false entry's ``-0.0``,
    or NaN where ``t`` is ``-inf``, a certain object); ``None`` for a table that is not crisp,
    or a NaN in ``log_y``."""
    if not _is_crisp(log_r):
        return None
    true_terms = log1mexp_nonpositive(log_y.to(log_r.dtype))  # log 1 + log y_j: log y_j
    if bool(true_terms.isnan().any()):
        return None
    ones = torch.clamp(log_r, min=-1.0, out=log_r.new_empty(log_r.shape)).add_(1.0)
    return ones.mul_(true_terms[:, None, :]).nan_to_num_(nan=-0.0, neginf=NEG_INF).sum(-1)


def _sparse_log1mexp(t: torch.Tensor, out: torch.Tensor | None, guard: bool) -> torch.Tensor | None:
    """``log(1 - e^t)`` of a tensor whose terms are mostly ``-inf`` (a scene graph relates few
    pairs; an attention after a filter holds few objects), computed at the other terms only and
    written into ``out`` (a new tensor when ``None``); ``None``, nothing written, when ``t`` is
    small, not on the CPU (an accelerator's dense passes are cheap, and each look would wait for
    it), not contiguous, or more than :data:`SPARSE_SHARE` of its terms are finite (a quick look
    at its first row first: a neural oracle's terms are dense). ``guard``: as
    :func:`~nablafol.numerics.log1mexp` (else :func:`~nablafol.numerics.log1mexp_nonpositive`).

    A ``-inf`` term is ``log(1 - 0) = -0.0``: the result is filled with it, the other terms are
    written where they were, each by the same operations as the dense passes' (NaN counts as
    finite, as there): the same tensor to the bit.
    """
    if not (t.is_cpu and t.is_contiguous()) or t.numel() < SPARSE_MIN_TERMS:
        return None
    if t.dim() > 1 and t.shape[0] > 1 and int(torch.count_nonzero(t[0] != NEG_INF)) > SPARSE_SHARE * t[0].numel():
        return None
    # the -inf terms counted by isneginf, a pass under half the time of `t != -inf` here
    dead = torch.isneginf(t)
    if t.numel() - int(torch.count_nonzero(dead)) > SPARSE_SHARE * t.numel():
        return None
    at, flat = dead.logical_not_().view(-1).nonzero().squeeze(1), t.view(-1)
    values = flat[at]
    terms = log1mexp(values) if guard else log1mexp_nonpositive(values)
    out = torch.full_like(t, -0.0) if out is None else out.fill_(-0.0)
    out.view(-1)[at] = terms
    return out


class _NoneTrue(torch.autograd.Function):
    """``S_i = Σ_j log(1 - e^{T_ij})``, ``T_ij = log r_ij + log y_j``, block by block.

    Backward: ``∂S_i/∂T_ij = -1 / expm1(-T_ij)``, 0 at the exact end ``T_ij = 0``
    (as :func:`nablafol.numerics.log1mexp`), recomputed from the inputs per block.
    """

    @staticmethod
    def forward(ctx, log_r, log_y, block_elements):
        step = _block_rows(log_r, block_elements)
        ctx.save_for_backward(log_r, log_y)
        ctx.step = step
        return _none_true_blocks(log_r, log_y, step)

    @staticmethod
    def backward(ctx, grad):
        log_r, log_y = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: the backward itself is differentiated
            d = log1mexp_slope(log_r + log_y[:, None, :]) * grad[:, :, None]
            return (d if ctx.needs_input_grad[0] else None), (d.sum(1) if ctx.needs_input_grad[1] else None), None
        rows = log_r.shape[0]
        if rows <= ctx.step:  # one block: its slopes are the gradients, nothing copied into place
            d = _none_true_slopes(_terms(log_r, log_y), grad)
            return (d if ctx.needs_input_grad[0] else None), (d.sum(1) if ctx.needs_input_grad[1] else None), None
        grad_r = torch.empty_like(log_r) if ctx.needs_input_grad[0] else None
        grad_y = torch.empty_like(log_y) if ctx.needs_input_grad[1] else None
        for s in range(0, rows, ctx.step):
            e = min(rows, s + ctx.step)
            d = _none_true_slopes(_terms(log_r[s:e], log_y[s:e]), grad[s:e])
            if grad_r is not None:
                grad_r[s:e] = d
            if grad_y is not None:
                grad_y[s:e] = d.sum(1)
        return grad_r, grad_y, None


def _terms(log_r: torch.Tensor, log_y: torch.Tensor) -> torch.Tensor:
    """``log r_ij + log y_j`` into a contiguous tensor of its own: the sum over rows of its slopes
    adds in one order whatever ``log_r``'s layout (a reversed atom's table is a transposed view)."""
    out = log_r.new_empty(log_r.shape, dtype=torch.promote_types(log_r.dtype, log_y.dtype))
    return torch.add(log_r, log_y[:, None, :], out=out)


def _none_true_slopes(t: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """``grad · ∂/∂t log(1 - e^t) = grad · -1 / expm1(-t)`` of a block of terms ``t`` (a tensor of
    the caller's own, overwritten), 0 at the exact end ``t = 0``."""
    end = t == 0
    d = t.neg_().expm1_().clamp_(min=torch.finfo(t.dtype).tiny).reciprocal_().neg_()
    return d.masked_fill_(end, 0.0).mul_(grad[:, :, None])


def aggregate(log_a: torch.Tensor, mask: torch.Tensor | None, quantifier: Quantifier) -> torch.Tensor:
    """``A_q(α)`` over the last dimension (Lemma 3.1): ``(R, N) -> (R,)``.

    ``A_∀ = Π a_i``, ``A_∃ = 1 - Π (1 - a_i)``, ``A_∄ = Π (1 - a_i)``; padding is skipped.
    """
    return aggregate_pair(log_a, mask, quantifier)[0]


def _none_true(log_a: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """``Σ_i log(1 - a_i)`` over the last dimension, padding skipped: from the finite terms alone
    when most are ``-inf`` and no gradient is asked for (:func:`_sparse_log1mexp`: an open
    question's candidate rows are 99.7% ``-inf`` over a scene graph), the same bits."""
    terms = None
    if not (torch.is_grad_enabled() and log_a.requires_grad):
        terms = _sparse_log1mexp(log_a, out=None, guard=True)
    return masked_sum(log1mexp(log_a) if terms is None else terms, mask)


def aggregate_pair(log_a: torch.Tensor, mask: torch.Tensor | None,
                   quantifier: Quantifier) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log A_q(α), log(1 - A_q(α)))``, each from the side where it is accurate (``(R,)`` each).

    ``A_∃`` is ``1 - Π(1 - a_i)``: its complement ``Π(1 - a_i)`` is a plain sum of logs, kept
    exactly (a confidently wrong "yes" still has a finite, informative ``log P(no)``).
    """
    if quantifier is Quantifier.FORALL:
        log_p = masked_sum(log_a, mask)
        return log_p, log1mexp(log_p)
    none_true = _none_true(log_a, mask)  # log1mexp's outputs' sum: never above 0
    if quantifier is Quantifier.NOT_EXISTS:
        return none_true, log1mexp_nonpositive(none_true)
    return log1mexp_nonpositive(none_true), none_true


def all_same(log_nonempty: torch.Tensor, log_lacks: torch.Tensor,
             pad: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """GQA's one-input ``same``, ``∃π: ∀X: F(X) → π(X)`` (:class:`nablafol.ir.AllSame`), as
    ``(log p, log(1 - p))``.

    ``log_nonempty`` ``(R,)`` is ``log e``, ``e = A_∃(α)``; ``log_lacks`` ``(R, K)`` is
    ``log s_π``, ``s_π = A_∃(α ⊙ Neg[Filter_π[1]])``; ``pad`` ``(R, K)`` marks values that are
    not there. ``1 - p = e · Π_π (s_π / e)``: given that someone is attended, the values are
    taken independent. ``s_π ≤ e``; a value no attended object can have gives ``s_π = e``
    exactly, a factor 1 (the answer does not depend on it). ``e = 0`` (no one attended) gives
    ``p = 1``, as the formula is then vacuously true.

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


def not_(log_s: torch.Tensor) -> torch.Tensor:
    """Scalar negation ``1 - s``."""
    return log1mexp(log_s)


def and_(log_s: torch.Tensor) -> torch.Tensor:
    """Conjunction of independent scalars over the last dimension: ``Π s_k``."""
    return log_s.sum(-1)

