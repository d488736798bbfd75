"""One small program's plan run row by row, each row's inputs Python references (no store, index
tensors or gathers), unless calibrated, over padded scenes or compiled; scalar steps keep their
group's padding, so the answers are the batched executor's, bit for bit.

Example (:mod:`~nablafol.engine.execution`'s example runs so too):
    >>> from nablafol.engine import Engine
    >>> from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Top
    >>> program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(Predicate("Chair"), Top())))
    >>> len(steps_of(Engine().plan([program]))[0])  # one program of three rows: run row by row
    3
"""
from __future__ import annotations

from typing import Callable, Optional

import torch

from nablafol.engine.answers import Answers, GroupReader, Tables
from nablafol.engine.planning import NEG_INF, SCALAR_CONSTANTS, BatchPlan

__all__ = ["steps_of", "run_rows", "MAX_ROWS"]

#: The most rows a plan may have to run row by row; beyond, batched costs less
MAX_ROWS = 48


def steps_of(plan: BatchPlan) -> Optional[tuple]:
    """The plan's rows to run one by one (None: not one program of at most :data:`MAX_ROWS` rows),
    each its operator's method, whether it writes an attention, its row and its reader's index and
    relate columns, in Python numbers; then the stores' sizes, the candidate rows, the focus row."""
    return plan.kept("rowwise", lambda: _steps(plan))


def _steps(plan: BatchPlan) -> Optional[tuple]:
    if plan.n_programs != 1 or len(plan.v_scene) + plan.n_scalars > MAX_ROWS:
        return None
    neutral = len(plan.binary_keys)  # the relates' padding table adds log 1: left out
    steps, read = [], set()
    for vgroups, sgroups in plan.levels:
        for groups, first in ((vgroups, 0), (sgroups, SCALAR_CONSTANTS)):
            for g in groups:
                a = g.arrays
                for i in range(g.stop - g.start):
                    index = {name: int(a[name][i]) for name in ("in0", "in1", "vin") if name in a}
                    if "table" in a:
                        index["table"] = slice(int(a["table"][i]), int(a["table"][i]) + 1)
                    if "args" in a:
                        index["args"], index["pad"] = tuple(map(int, a["args"][i])), a["pad"][i:i + 1]
                        read.update(index["args"])
                    atoms = zip(a["tables"][i], a["reverse"][i]) if "tables" in a else ()
                    columns = [(slice(int(t), int(t) + 1), True if r else None)
                               for t, r in atoms if t != neutral]
                    steps.append([g.operator, g.operator.vector, first + g.start + i, index, columns])
    candidates = plan.candidate_rows.tolist()
    for step in steps:  # a yes/no answer no truth reads, of an operator giving its two halves: not joined
        alone = len(candidates) == 1 and step[1:3] == [False, candidates[0]] and candidates[0] not in read
        step[0] = step[0].pair if alone and hasattr(step[0], "pair") else step[0].run
    sizes = len(plan.v_scene), SCALAR_CONSTANTS + plan.n_scalars
    return tuple(map(tuple, steps)), *sizes, candidates, int(plan.focus[0])


def run_rows(steps: tuple, plan: BatchPlan, tables: Tables, q_product: Callable) -> Answers:
    """Run ``steps`` (from :func:`steps_of`) over ``tables``; the batched executor's answers."""
    program_steps, n_vec, n_sca, candidates, focus = steps
    dtype, device, n = tables.dtype, tables.object_mask.device, tables.object_mask.shape[1]
    vec, sca = [None] * n_vec, [None] * n_sca
    sca[0], sca[1], like = plan.kept(("constants", dtype, device, n), lambda: _constants(dtype, device, n))
    row = GroupReader(None, None, 1, vec, sca, tables.unary, tables.binary, None, q_product, like)
    for run, vector, out, row.index, row.columns in program_steps:
        (vec if vector else sca)[out] = run(row)
    picked = sca[candidates[0]] if len(candidates) == 1 else torch.stack([sca[r] for r in candidates], dim=2)
    if type(picked) is tuple:  # an aggregate's two halves: copies where autograd may have saved them
        log_probs, log_complement = (t.clone() for t in picked) if picked[0].requires_grad else picked
    else:  # one truth's (1, 2), no stack, or the candidates' (1, 2, K)
        log_probs, log_complement = (picked[:, :1], picked[:, 1:]) if picked.dim() == 2 else picked.unbind(1)
    focus = vec[focus] if focus >= 0 else torch.full((1, n), NEG_INF, dtype=dtype, device=device)
    if focus.requires_grad:  # the user gets a row to edit: a copy where autograd may have saved it
        focus = focus.clone()
    candidate_mask = torch.ones((1, len(candidates)), dtype=torch.bool, device=device)
    object_mask = torch.ones((1, n), dtype=torch.bool, device=device)
    return Answers(log_probs, candidate_mask, plan.labels, focus, object_mask, log_complement)


def _constants(dtype, device, n: int) -> tuple:
    """Rows 0 and 1, log 1 and log 0 (never written into), and a row of the stores' dtype and size."""
    true = torch.tensor([[0.0, NEG_INF]], dtype=dtype, device=device)
    return true, true.flip(-1), true.new_zeros((1, n))
