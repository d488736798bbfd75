"""One program's plan run row by row: each node one operator call on its own ``(1, N)`` row.

A model that embeds the engine asks one question about one scene per call. The batched
executor (:mod:`~nablafol.engine.execution`) then spends most of the call on bookkeeping
that pays off only for many rows: a store the rows of each level are copied into, index
tensors, gathers. Here the plan is turned once into a list of steps (kept on the plan); each
step is the batched kernel's arithmetic (the same :mod:`nablafol.operators` function, or the
same operations in fewer calls) on the one row, its inputs the Python references to the rows
it reads. Scalar steps keep their group's
argument width (its padding rows too), so every sum adds the same terms in the same order as
the batched kernel: the answers are the batched executor's, bit for bit. Gradients are the
same terms, to rounding: where a row feeds several steps, autograd adds their gradients in
another order than the batched gather's accumulation.

Plans with many rows (an open question asks about hundreds of candidates) stay batched:
:func:`steps_of` returns None for them. So do calls with a calibrator, scenes of several sizes
(padded) or ``Engine(compile=True)`` (:meth:`Engine.execute` decides).

Example:
    >>> import torch
    >>> from nablafol.engine import Engine
    >>> from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Relate, Top
    >>> from nablafol.oracle import TableOracle
    >>> chair, left = Predicate("Chair"), Predicate("Left", arity=2)
    >>> program = Program.yes_no(Aggregate(Quantifier.EXISTS,
    ...                                    Filter(chair, Relate.of(left, Quantifier.FORALL, Top()))))
    >>> oracle = TableOracle([{chair: [0.9, 0.2], left: [[1.0, 0.8], [0.1, 1.0]]}])
    >>> engine = Engine()
    >>> steps_of(engine.plan([program])) is not None  # one program, four rows: run row by row
    True
    >>> engine([program], oracle).probs()
    tensor([[0.7256]])
"""
from __future__ import annotations

from typing import Callable, Optional

import torch

from nablafol import operators as ops

from nablafol.engine.answers import Answers, Tables
from nablafol.engine.planning import (AGGREGATE_QUANTIFIER, NEG_INF, RELATE_QUANTIFIER, S_AGG_N, S_ALLSAME,
                                      SCALAR_CONSTANTS, V_CONJOIN, V_FILTER, V_NEG, V_TOP, BatchPlan)
from nablafol.engine.truth_kernels import combine_truths

__all__ = ["steps_of", "run_rows", "MAX_ROWS"]

#: The most rows (vector and scalar) a plan may have to run row by row; beyond, one call per
#: operator kind and level costs less than one per row
MAX_ROWS = 48

# step codes
_TOP, _FILTER, _NEG, _CONJOIN, _RELATE, _AGG, _TRUTH, _UNARY, _ANSWER = range(9)


def steps_of(plan: BatchPlan) -> Optional[tuple]:
    """The plan as steps to run row by row, or None when it is not one program with at most
    :data:`MAX_ROWS` rows. Kept on the plan."""
    cached = plan.__dict__.get("_rowwise", False)
    if cached is False:
        cached = plan.__dict__["_rowwise"] = _build(plan)
    return cached


def _build(plan: BatchPlan) -> Optional[tuple]:
    rows = len(plan.v_scene) + plan.n_scalars
    if plan.n_programs != 1 or rows > MAX_ROWS:
        return None
    neutral = len(plan.binary_keys)  # the relates' padding table: adds log 1, left out here
    steps = []
    for vgroups, sgroups in plan.levels:
        for g in vgroups:
            a = g.arrays
            for i in range(g.stop - g.start):
                out = g.start + i
                if g.kind == V_TOP:
                    steps.append((_TOP, out))
                elif g.kind == V_FILTER:
                    steps.append((_FILTER, out, int(a["in0"][i]), int(a["table"][i])))
                elif g.kind == V_NEG:
                    steps.append((_NEG, out, int(a["in0"][i])))
                elif g.kind == V_CONJOIN:
                    steps.append((_CONJOIN, out, int(a["in0"][i]), int(a["in1"][i])))
                else:
                    atoms = tuple((int(t), bool(r)) for t, r in zip(a["tables"][i], a["reverse"][i]) if t != neutral)
                    steps.append((_RELATE, out, int(a["in0"][i]), RELATE_QUANTIFIER[g.kind], atoms))
        for g in sgroups:
            a = g.arrays
            for i in range(g.stop - g.start):
                out = SCALAR_CONSTANTS + g.start + i
                if g.kind <= S_AGG_N:
                    steps.append((_AGG, out, int(a["vin"][i]), AGGREGATE_QUANTIFIER[g.kind]))
                    continue
                args = tuple(int(r) for r in a["args"][i])  # the group's width, its padding rows too
                pad = a["pad"][i:i + 1] if g.kind == S_ALLSAME else None
                steps.append((_TRUTH, out, g.kind, args, pad if pad is not None and pad.any() else None))
    candidates = tuple(plan.candidate_rows.tolist())  # a program has at least one
    focus = int(plan.focus[0])
    steps = _unary_rows(steps, focus)
    if len(candidates) == 1 and not any(s[0] == _TRUTH and candidates[0] in s[3] for s in steps):
        # the answer's own aggregate: its pair as the answer's two (1, 1) fields, not stacked and split
        steps = tuple((_ANSWER,) + s[1:] if s[0] == _AGG and s[1] == candidates[0] else s for s in steps)
    return (steps, len(plan.v_scene), SCALAR_CONSTANTS + plan.n_scalars, candidates, focus)


def _unary_rows(steps: list, focus: int) -> tuple:
    """Filter over a Top that no other step reads (nor the focus): the unary table's row plus
    ``0.0``, one operation where the Top's zeros and the sum were two; bit for bit the batched
    ``0 + x`` (a ``-0.0`` in the table becomes ``+0.0`` in both: a logsigmoid oracle gives ``-0.0``
    for large logits), and a new tensor, so the table itself is never handed out."""
    readers: dict = {}
    for s in steps:
        if s[0] in (_FILTER, _NEG, _CONJOIN, _RELATE, _AGG):
            for r in _vector_inputs(s):
                readers.setdefault(r, []).append(s[0])
    alone = {s[1] for s in steps if s[0] == _TOP and s[1] != focus and readers.get(s[1]) == [_FILTER]}
    folded = ((_UNARY, s[1], s[3]) if s[0] == _FILTER and s[2] in alone else s for s in steps)
    return tuple(s for s in folded if not (s[0] == _TOP and s[1] in alone))


def _vector_inputs(step: tuple) -> tuple:
    return (step[2], step[3]) if step[0] == _CONJOIN else (step[2],)


def _row(table: torch.Tensor, i: int) -> torch.Tensor:
    """Row ``i`` of ``table`` as a ``(1, ...)`` view: the table itself when it has one row (no slice)."""
    return table if table.shape[0] == 1 else table[i:i + 1]


_CONSTANTS: dict = {}


def _constants(dtype, device) -> tuple:
    """The scalar rows ``log 1`` and ``log 0`` as ``(1, 2)`` pairs, and a 0-dim ``+0.0``, made once
    per dtype and device (no step writes into what it reads, and every output is a new tensor, so
    sharing them is safe; adding a Python ``0.0`` cost four more operations than this tensor)."""
    key = (dtype, device)
    made = _CONSTANTS.get(key)
    if made is None:
        true = torch.tensor([[0.0, NEG_INF]], dtype=dtype, device=device)
        made = _CONSTANTS[key] = (true, true.flip(-1), torch.zeros((), dtype=dtype, device=device))
    return made


def run_rows(steps: tuple, plan: BatchPlan, tables: Tables, q_product: Callable) -> Answers:
    """Run ``steps`` (from :func:`steps_of`) over ``tables``; the batched executor's answers."""
    program_steps, n_vec, n_sca, candidates, focus_row = steps
    unary, binary, object_mask, dtype = tables.unary, tables.binary, tables.object_mask, tables.dtype
    device, n = object_mask.device, object_mask.shape[1]
    vec: list = [None] * n_vec
    sca: list = [None] * n_sca
    # scalars carry (log p, log(1 - p)); rows 0 and 1 are log 1 and log 0 (padding of And / Or)
    sca[0], sca[1], zero = _constants(dtype, device)
    for step in program_steps:
        code, out = step[0], step[1]
        if code == _FILTER:
            vec[out] = ops.filter_(vec[step[2]], _row(unary, step[3]))
        elif code == _UNARY:  # Filter over Top: the row plus 0.0 (_unary_rows)
            vec[out] = _row(unary, step[2]) + zero
        elif code == _RELATE:
            log_r = None
            for table, reverse in step[4]:
                t = _row(binary, table)
                if reverse:
                    t = t.transpose(1, 2)
                log_r = t if log_r is None else log_r + t
            vec[out] = q_product(log_r, vec[step[2]], None, None, step[3])
        elif code == _AGG:
            sca[out] = torch.cat(ops.aggregate_pair(vec[step[2]], None, step[3], keepdim=True), dim=-1)
        elif code == _ANSWER:  # (1, 1) each: the answer's log_probs and log_complement
            sca[out] = ops.aggregate_pair(vec[step[2]], None, step[3], keepdim=True)
        elif code == _TOP:
            vec[out] = torch.zeros((1, n), dtype=dtype, device=device)
        elif code == _NEG:
            vec[out] = ops.neg(vec[step[2]])
        elif code == _CONJOIN:
            vec[out] = ops.conjoin(vec[step[2]], vec[step[3]])
        else:  # Not, And, Or, AllSame: the batched kernel's own function, on this row's arguments
            args = torch.stack([sca[r] for r in step[3]], dim=1)  # (1, K, 2)
            pad = None if step[4] is None else torch.as_tensor(step[4], device=device)
            sca[out] = combine_truths(step[2], args, pad)
    if len(candidates) == 1:
        picked = sca[candidates[0]]
        if type(picked) is not tuple:
            log_probs, log_complement = picked[:, :1], picked[:, 1:]
        else:  # the answer's own aggregate: copies where autograd may have saved them, as the focus
            log_probs, log_complement = (t.clone() for t in picked) if picked[0].requires_grad else picked
    else:
        picked = torch.stack([sca[r] for r in candidates], dim=2)  # (1, 2, K)
        log_probs, log_complement = picked[:, 0], picked[:, 1]
    if focus_row < 0:
        focus = torch.full((1, n), NEG_INF, dtype=dtype, device=device)
    else:  # the user gets a row to edit: a copy where autograd may have saved it
        focus = vec[focus_row]
        focus = focus.clone() if focus.requires_grad else focus
    cand_mask = torch.ones((1, len(candidates)), dtype=torch.bool, device=device)
    # a new mask (the tables' stays with `exact`); unpadded (checked by the caller): all True
    object_mask = torch.ones((1, n), dtype=torch.bool, device=device)
    return Answers(log_probs, cand_mask, plan.labels, focus, object_mask, log_complement)
