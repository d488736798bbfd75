"""Which uncertain ground atoms repeat in a batch's groundings: when the engine's answer is exact.

Per program of a :class:`~nablafol.engine.planning.BatchPlan`, over its scene's tables: the
uncertain atoms (probability strictly between 0 and 1) occurring twice where it matters
(``dfol.md``, soundness, clause 2). A program with none is exact; exact mode conditions on them
(:mod:`nablafol.engine.exact`). Two passes through the rows' operators: *up*, Kleene's possible /
certain per node and object; *down*, per candidate entry, how often each node is used through
open nodes, capped at 2 (``docs/exactness.md``, "Exact in this scene").

    >>> import torch
    >>> from nablafol.engine import Engine
    >>> from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Relate, Top
    >>> from nablafol.oracle import TableOracle
    >>> red, on = Predicate("red"), Predicate("on", arity=2)
    >>> hop = Program.yes_no(Aggregate(Quantifier.EXISTS, Relate.of(on, Quantifier.EXISTS, Filter(red, Top()))))
    >>> dense = TableOracle([{red: [0.5, 0.5], on: [[0.0, 1.0], [1.0, 1.0]]}])
    >>> sparse = TableOracle([{red: [0.5, 0.5], on: [[0.0, 1.0], [0.0, 0.0]]}])
    >>> [Engine()([hop], o).exact.tolist() for o in (dense, sparse)]  # red(y1) is read twice, then once
    [[False], [True]]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import torch

from nablafol.engine.lowering import CAP
from nablafol.engine.planning import SCALAR_CONSTANTS, BatchPlan, GroundingRows

__all__ = ["RepeatedAtoms", "repeated_atoms"]


@dataclass
class RepeatedAtoms:
    """The repeated uncertain ground atoms of each program of a plan.

    ``unary`` ``(n, 3)``: (program, unary request row of the plan, object); ``binary``
    ``(m, 4)``: (program, binary request row, first object, second object); ``count``
    ``(P,)``: how many each program has (0: the engine's answer is exact). numpy, int64.
    """

    unary: np.ndarray
    binary: np.ndarray
    count: np.ndarray


class _Analysis:
    """One plan with its tables: the up pass at construction, down passes per candidate entry."""

    def __init__(self, plan: BatchPlan, rows: Sequence[Optional[GroundingRows]], unary, binary,
                 object_mask):
        self.plan, self.object_mask = plan, object_mask
        self.device = device = object_mask.device
        n = object_mask.shape[1]
        self.idx = lambda a: torch.as_tensor(a, dtype=torch.long, device=device)  # noqa: E731
        kleene = lambda t: (None, None) if t is None else (t > float("-inf"), t == 0)  # noqa: E731
        self.u_poss, self.u_cert = kleene(unary)
        self.b_poss, self.b_cert = kleene(binary)  # the relates' neutral all-ones table last
        self.v_scene = self.idx(plan.v_scene)
        self.vp = torch.zeros((len(plan.v_scene), n), dtype=torch.bool, device=device)
        self.vc = torch.zeros_like(self.vp)
        self.sp = torch.zeros(SCALAR_CONSTANTS + plan.n_scalars, dtype=torch.bool, device=device)
        self.sc = torch.zeros_like(self.sp)
        self.sp[0] = self.sc[0] = True  # the constant rows: log 1, log 0
        # a program not analysed has its rows used by no root: they pass no count
        self.analysed = np.fromiter((r is not None for r in rows), dtype=bool, count=len(rows))
        self._program_rows(rows)
        # an atom's slot: program * width + request (width: requests + 1)
        self.u_width, self.b_width = len(plan.unary_keys) + 1, len(plan.binary_keys) + 1
        u_keys, b_keys = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        # each row's inputs: what an AllSame row's truths read (_Rows.all_same_values)
        self.v_in = np.full((2, len(plan.v_scene)), -1, dtype=np.int64)
        self.s_vin = np.full(SCALAR_CONSTANTS + plan.n_scalars, -1, dtype=np.int64)
        for vgroups, sgroups in plan.levels:  # up: Kleene values, and where counts go down
            for g in vgroups:
                if "table" in g.arrays:
                    keys, mine = self.unary_keys(g)
                    u_keys.append(keys[mine])
                if "tables" in g.arrays:
                    keys, real = self.binary_keys(g)
                    b_keys.append(keys[real])
                for k in (0, 1):
                    if f"in{k}" in g.arrays:
                        self.v_in[k, g.start:g.stop] = g.arrays[f"in{k}"]
                self.vp[g.start:g.stop], self.vc[g.start:g.stop] = g.operator.kleene(_Rows(self, g))
            for g in sgroups:
                at = slice(SCALAR_CONSTANTS + g.start, SCALAR_CONSTANTS + g.stop)
                if "vin" in g.arrays:
                    self.s_vin[at] = g.arrays["vin"]
                self.sp[at], self.sc[at] = g.operator.kleene(_Rows(self, g))
        self.u_slots, self.b_slots = (np.unique(np.concatenate(k)) for k in (u_keys, b_keys))

    def unary_keys(self, g) -> tuple[np.ndarray, np.ndarray]:
        """The slot key of each row of a filtering group, and which are analysed."""
        programs = self.plan.v_program[g.start:g.stop]
        return programs * self.u_width + g.arrays["table"], self.analysed[programs]

    def binary_keys(self, g) -> tuple[np.ndarray, np.ndarray]:
        """The slot key of each atom ``(G, atoms)`` of a relating group, and which are real."""
        programs, tables = self.plan.v_program[g.start:g.stop], g.arrays["tables"]
        real = (tables < self.b_width - 1) & self.analysed[programs][:, None]
        return programs[:, None] * self.b_width + tables, real

    def _program_rows(self, rows: Sequence[Optional[GroundingRows]]):
        """The programs' grounding rows, in the plan's sorted numbering."""
        plan = self.plan

        def stacked(name: str, width: int):  # every program's rows in one table, each row's program
            parts = [np.zeros((0, width), dtype=np.int64)]
            parts += [parts[0] if g is None else getattr(g, name) for g in rows]
            counts = np.fromiter(map(len, parts[1:]), dtype=np.int64, count=len(rows))
            return np.concatenate(parts), np.repeat(np.arange(len(rows)), counts)

        v_at = lambda p, r: plan.v_rank[plan.v_offset[p] + r]  # noqa: E731
        s_at = lambda p, r: plan.s_rank[plan.s_offset[p] + r] + SCALAR_CONSTANTS  # noqa: E731
        r, rp = stacked("roots", 2)
        m, mp = stacked("merges", 4)
        self.group_width = 1 + int(m[:, 3].max(initial=0))  # a merge key is block * group_width + group
        self.roots = np.stack([r[:, 0], s_at(rp, r[:, 1])], 1)
        block = v_at(mp, m[:, 2])
        self.merges = np.stack([m[:, 0], v_at(mp, m[:, 1]), block * self.group_width + m[:, 3]], 1)
        self.n_entries = int(self.roots[:, 0].max()) + 1 if len(self.roots) else 0

    def repeated(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Masks ``(slots, N)``, ``(slots, N, N)``: atoms counted twice by some candidate."""
        n = self.object_mask.shape[1]
        u_rep = torch.zeros((len(self.u_slots), n), dtype=torch.bool, device=self.device)
        b_rep = torch.zeros((len(self.b_slots), n, n), dtype=torch.bool, device=self.device)
        for entry in range(self.n_entries):
            self._down(entry)
            u_rep |= self.u_count >= CAP
            b_rep |= self.b_count >= CAP
        return u_rep, b_rep

    def _down(self, entry: int):
        """The use counts of one candidate entry: of vector and scalar rows, of atom slots."""
        plan, idx, n = self.plan, self.idx, self.object_mask.shape[1]
        zeros = lambda *shape: torch.zeros(shape, dtype=torch.int32, device=self.device)  # noqa: E731
        self.v_count = zeros(len(plan.v_scene), n)
        self.s_count = zeros(SCALAR_CONSTANTS + plan.n_scalars)
        self.u_count, self.b_count = zeros(len(self.u_slots), n), zeros(len(self.b_slots), n, n)
        self.merged = np.full(len(plan.v_scene), -1, dtype=np.int64)  # row -> (block, group) key
        roots = idx(self.roots[self.roots[:, 0] == entry, 1])
        self.s_count.index_add_(0, roots, torch.ones_like(roots, dtype=torch.int32))
        merges = self.merges[self.merges[:, 0] == entry]
        self.merged[merges[:, 1]] = merges[:, 2]
        # counts are capped when read (only "twice or more" matters), so no sum can overflow
        for vgroups, sgroups in reversed(plan.levels):
            for g in sgroups:
                rows = slice(SCALAR_CONSTANTS + g.start, SCALAR_CONSTANTS + g.stop)
                c = self.s_count[rows].clamp(max=CAP) * (self.sp[rows] & ~self.sc[rows])
                g.operator.count_down(_Rows(self, g), c)
            for g in vgroups:
                rows = slice(g.start, g.stop)
                c = self.v_count[rows].clamp(max=CAP) * (self.vp[rows] & ~self.vc[rows])
                g.operator.count_down(_Rows(self, g), c)

    def to_input(self, g, c):
        """Counts to the first input; a block of many candidates': summed per candidate, maxed."""
        inputs, key = g.arrays["in0"], self.merged[g.start:g.stop]
        if (key < 0).all():
            self.v_count.index_add_(0, self.idx(inputs), c)
            return
        own = (len(self.merged) + np.arange(g.start, g.stop)) * self.group_width  # a block of its own
        keys, key_at = np.unique(np.where(key < 0, own, key), return_inverse=True)
        sums = torch.zeros((len(keys), c.shape[1]), dtype=c.dtype, device=self.device)
        sums.index_add_(0, self.idx(key_at.reshape(-1)), c)
        blocks, block_at = np.unique(keys // self.group_width, return_inverse=True)
        best = torch.zeros((len(blocks), c.shape[1]), dtype=c.dtype, device=self.device)
        best.scatter_reduce_(0, self.idx(block_at.reshape(-1))[:, None].expand_as(sums), sums, "amax")
        block_input = np.empty(len(blocks), dtype=np.int64)
        block_input[block_at.reshape(-1)[key_at.reshape(-1)]] = inputs  # a block's rows share their input
        self.v_count.index_add_(0, self.idx(block_input), best)


class _Rows:
    """The reader of :mod:`~nablafol.engine.lowering` in both passes: Kleene values, counts."""

    def __init__(self, analysis: _Analysis, g):
        self.analysis, self.group = analysis, g

    def vector(self, name: str):
        a, x = self.analysis, self.analysis.idx(self.group.arrays[name])
        return a.vp[x], a.vc[x]

    def unary(self):
        t = self.analysis.idx(self.group.arrays["table"])
        return self.analysis.u_poss[t], self.analysis.u_cert[t]

    def relation(self):
        """Possible / certain of the conjunction of the rows' atoms, ``(G, N, N)``."""
        a, g = self.analysis, self.group
        tables, reverse = a.idx(g.arrays["tables"]), g.arrays["reverse"]
        poss = cert = None
        for j in range(tables.shape[1]):
            p, c = (_flipped(t[tables[:, j]], reverse[:, j]) for t in (a.b_poss, a.b_cert))
            poss, cert = (p, c) if poss is None else (poss & p, cert & c)
        return poss, cert

    def truths(self):
        a, args = self.analysis, self.analysis.idx(self.group.arrays["args"])
        return a.sp[args], a.sc[args]

    def pad(self) -> torch.Tensor:
        return torch.as_tensor(self.group.arrays["pad"], device=self.analysis.device)

    def objects(self) -> torch.Tensor:
        """The objects of the rows' scenes (a truth's: those of the attention it reads)."""
        a, arrays = self.analysis, self.group.arrays
        rows = a.idx(arrays["vin"]) if "vin" in arrays else slice(self.group.start, self.group.stop)
        return a.object_mask[a.v_scene[rows]]

    def add_vector(self, name: str, counts: torch.Tensor) -> None:
        if name == "in0":  # the last rows of a block of many candidates: within a candidate only
            self.analysis.to_input(self.group, counts)
        else:
            self.analysis.v_count.index_add_(0, self.analysis.idx(self.group.arrays[name]), counts)

    def add_unary(self, counts: torch.Tensor) -> None:
        a = self.analysis
        keys, mine = a.unary_keys(self.group)
        slots = np.searchsorted(a.u_slots, keys[mine])
        a.u_count.index_add_(0, a.idx(slots), counts[torch.as_tensor(mine, device=a.device)])

    def add_relation(self, uses: torch.Tensor) -> None:
        """``uses`` ``(G, N, N)`` of each (x, y) pair: each atom of the pair used as often."""
        a, reverse = self.analysis, self.group.arrays["reverse"]
        keys, real = a.binary_keys(self.group)
        for j in range(keys.shape[1]):
            mine = real[:, j]
            if mine.any():
                wj = _flipped(uses[torch.as_tensor(mine, device=a.device)], reverse[mine, j])
                a.b_count.index_add_(0, a.idx(np.searchsorted(a.b_slots, keys[mine, j])), wj)

    def add_truths(self, counts: torch.Tensor) -> None:
        """``counts`` ``(G, K)``: uses of each truth the rows combine (``(G,)``: the same for each)."""
        args = self.analysis.idx(self.group.arrays["args"])
        counts = counts[:, None].expand(args.shape) if counts.dim() == 1 else counts
        self.analysis.s_count.index_add_(0, args.reshape(-1), counts.reshape(-1).to(torch.int32))

    def all_same_values(self):
        """For AllSame rows: ((possible, valid) of the input, possible of each value's
        ``Filter_π[1]`` row ``(G, K, N)``, which values are real ``(G, K)``)."""
        a, args = self.analysis, self.group.arrays["args"]
        x = a.idx(a.s_vin[args[:, 0]])
        conjoined = a.s_vin[args[:, 1:]]  # -1 at padding, whose rows are the constant ones
        values = np.where(conjoined >= 0, a.v_in[0, a.v_in[1, np.maximum(conjoined, 0)]], -1)
        real = torch.as_tensor(~self.group.arrays["pad"][:, 1:] & (values >= 0), device=a.device)
        return (a.vp[x], a.object_mask[a.v_scene[x]]), a.vp[a.idx(np.maximum(values, 0))], real

    def add_all_same_input(self, counts: torch.Tensor) -> None:
        a = self.analysis
        a.v_count.index_add_(0, a.idx(a.s_vin[self.group.arrays["args"][:, 0]]), counts)


def _flipped(t: torch.Tensor, reverse: np.ndarray) -> torch.Tensor:
    """``(G, N, N)`` matrices, transposed where ``reverse`` (a reversed atom reads ``(y, x)``)."""
    if not reverse.any():
        return t
    flip = torch.as_tensor(reverse, device=t.device)[:, None, None]
    return torch.where(flip, t.transpose(1, 2), t)


def _uncertain(slots: np.ndarray, width: int, repeated: torch.Tensor, table_poss, table_cert) -> np.ndarray:
    """(program, request, object...) of each atom repeated and uncertain."""
    if len(slots):
        request = torch.as_tensor(slots % width, dtype=torch.long, device=repeated.device)
        repeated = repeated & table_poss[request] & ~table_cert[request]
    hit = repeated.nonzero().cpu().numpy()
    at = slots[hit[:, 0]]
    return np.concatenate([(at // width)[:, None], (at % width)[:, None], hit[:, 1:]], 1).astype(np.int64)


def repeated_atoms(plan: BatchPlan, rows: Sequence[Optional[GroundingRows]], unary, binary,
                   object_mask) -> RepeatedAtoms:
    """The repeated uncertain atoms of each program of ``plan`` (``rows[p]``: program ``p``'s
    grounding rows, None: not analysed) over the engine's log-probability tables ``unary``
    ``(R, N)`` and ``binary`` ``(R', N, N)`` (the relates' neutral table last)."""
    with torch.no_grad():
        a = _Analysis(plan, rows, unary, binary, object_mask)
        u_rep, b_rep = a.repeated()
        unary_atoms = _uncertain(a.u_slots, a.u_width, u_rep, a.u_poss, a.u_cert)
        binary_atoms = _uncertain(a.b_slots, a.b_width, b_rep, a.b_poss, a.b_cert)
    count = (np.bincount(unary_atoms[:, 0], minlength=plan.n_programs)
             + np.bincount(binary_atoms[:, 0], minlength=plan.n_programs))
    return RepeatedAtoms(unary_atoms, binary_atoms, count.astype(np.int64))
