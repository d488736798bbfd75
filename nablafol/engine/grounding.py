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

from nablafol.engine.answers import GroupReader
from nablafol.engine.lowering import CAP, CERTAIN, IMPOSSIBLE, OPEN
from nablafol.engine.planning import NEG_INF, SCALAR_CONSTANTS, BatchPlan, GroundingRows

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


class _Analysis(GroupReader):
    """One plan with its tables, and the lowering's reader of a group (:meth:`at`) in both passes:
    the up pass at construction, down passes per candidate entry."""

    def __init__(self, plan: BatchPlan, rows: Sequence[Optional[GroundingRows]], unary, binary,
                 object_mask):
        self.plan, self.object_mask = plan, object_mask
        self.device = device = object_mask.device
        n = object_mask.shape[1]
        self.idx = lambda a: torch.as_tensor(a, dtype=torch.long, device=device)  # noqa: E731
        # by arity: Kleene values of the tables (binary: the relates' neutral all-ones table last)
        self.tables = {k: None if t is None else (t > NEG_INF).to(torch.int8) + (t == 0)
                       for k, t in ((1, unary), (2, binary))}
        self.v_scene = self.idx(plan.v_scene)
        self.vectors = torch.zeros((len(plan.v_scene), n), dtype=torch.int8, device=device)
        self.scalars = torch.zeros(SCALAR_CONSTANTS + plan.n_scalars, dtype=torch.int8,
                                   device=device)
        self.scalars[0] = CERTAIN  # the constant rows: log 1, log 0
        super().__init__(None, [], 0, self.vectors, self.scalars, self.tables[1], self.tables[2],
                         None, None, like=object_mask)
        # a program not analysed has its rows used by no root: they pass no count
        self.analysed = np.fromiter((r is not None for r in rows), dtype=bool, count=len(rows))
        self._program_rows(rows)
        # an atom's slot: program * width + request (width: requests + 1)
        self.width = {1: len(plan.unary_keys) + 1, 2: len(plan.binary_keys) + 1}
        keys = {1: [np.zeros(0, np.int64)], 2: [np.zeros(0, np.int64)]}
        # each row's inputs: what an AllSame row's truths read (all_same_values)
        self.inputs = {name: np.full(size, -1, dtype=np.int64) for name, size in (
            ("in0", len(plan.v_scene)), ("in1", len(plan.v_scene)), ("vin", len(self.scalars)))}
        for vgroups, sgroups in plan.levels:  # up: Kleene values, and where counts go down
            for groups, values, first in ((vgroups, self.vectors, 0),
                                          (sgroups, self.scalars, SCALAR_CONSTANTS)):
                for g in groups:
                    rows = slice(first + g.start, first + g.stop)
                    for name in self.inputs.keys() & g.arrays.keys():
                        self.inputs[name][rows] = g.arrays[name]
                    for arity, name in ((1, "table"), (2, "tables")):
                        if name in g.arrays:
                            found, real = self.slot_keys(g, arity)
                            keys[arity].append(found[real])
                    values[rows] = g.operator.kleene(self.at(g))
        self.slots = {arity: np.unique(np.concatenate(k)) for arity, k in keys.items()}

    def at(self, g) -> "_Analysis":
        """Itself, reading the rows of group ``g``."""
        self.index, self.size, self.group = g.arrays, g.stop - g.start, g
        return self

    def slot_keys(self, g, arity: int) -> tuple[np.ndarray, np.ndarray]:
        """The slot key of each atom ``(G, atoms)`` of a group's rows, and which are real."""
        tables = g.arrays["table"][:, None] if arity == 1 else g.arrays["tables"]
        programs = self.plan.v_program[g.start:g.stop]
        real = (tables < self.width[arity] - 1) & self.analysed[programs][:, None]
        return programs[:, None] * self.width[arity] + tables, real

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

    def down(self, entry: int):
        """The use counts of one candidate entry: of vector and scalar rows, of atom slots."""
        plan, idx, n = self.plan, self.idx, self.object_mask.shape[1]
        zeros = lambda *shape: torch.zeros(shape, dtype=torch.int32, device=self.device)  # noqa: E731
        self.v_count = zeros(len(plan.v_scene), n)
        self.s_count = zeros(len(self.scalars))
        self.counts = {k: zeros(len(s), *(n,) * k) for k, s in self.slots.items()}
        self.merged = np.full(len(plan.v_scene), -1, dtype=np.int64)  # row -> (block, group) key
        roots = idx(self.roots[self.roots[:, 0] == entry, 1])
        self.s_count.index_add_(0, roots, torch.ones_like(roots, dtype=torch.int32))
        merges = self.merges[self.merges[:, 0] == entry]
        self.merged[merges[:, 1]] = merges[:, 2]
        # counts are capped when read (only "twice or more" matters), so no sum can overflow
        for vgroups, sgroups in reversed(plan.levels):
            for groups, count, values, first in (
                    (sgroups, self.s_count, self.scalars, SCALAR_CONSTANTS),
                    (vgroups, self.v_count, self.vectors, 0)):
                for g in groups:  # a row's uses pass on unless it is impossible or certain
                    rows = slice(first + g.start, first + g.stop)
                    uses = count[rows].clamp(max=CAP) * (values[rows] == OPEN)
                    g.operator.count_down(self.at(g), uses)

    def _to_input(self, c):
        """Counts to the first input; a block of many candidates': summed per candidate, maxed."""
        g = self.group
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

    def objects(self) -> torch.Tensor:
        """The objects of the rows' scenes (a truth's: those of the attention it reads)."""
        g = self.group
        rows = self.idx(self.index["vin"]) if "vin" in self.index else slice(g.start, g.stop)
        return self.object_mask[self.v_scene[rows]]

    def relation(self):
        """Kleene values of the conjunction of the rows' atoms, ``(G, N, N)``."""
        tables, reverse = self.idx(self.index["tables"]), self.index["reverse"]
        return torch.stack([_flipped(self.binary_table[tables[:, j]], reverse[:, j])
                            for j in range(tables.shape[1])]).amin(0)

    def add_vector(self, name: str, counts: torch.Tensor) -> None:
        if name == "in0":  # the last rows of a block of many candidates: within a candidate only
            self._to_input(counts)
        else:
            self.v_count.index_add_(0, self.idx(self.index[name]), counts)

    def add_atoms(self, uses: torch.Tensor) -> None:
        """``uses`` of each object ``(G, N)`` or pair ``(G, N, N)``: each atom used as often."""
        arity = uses.dim() - 1
        keys, real = self.slot_keys(self.group, arity)
        reverse = self.index["reverse"] if arity == 2 else np.zeros_like(real)
        for j in range(keys.shape[1]):
            mine = real[:, j]
            if mine.any():
                wj = _flipped(uses[torch.as_tensor(mine, device=self.device)], reverse[mine, j])
                slots = np.searchsorted(self.slots[arity], keys[mine, j])
                self.counts[arity].index_add_(0, self.idx(slots), wj)

    def add_truths(self, counts: torch.Tensor) -> None:
        """``counts`` ``(G, K)``: uses of each truth the rows combine (``(G,)``: the same for each)."""
        args = self.idx(self.index["args"])
        counts = counts[:, None].expand(args.shape) if counts.dim() == 1 else counts
        self.s_count.index_add_(0, args.reshape(-1), counts.reshape(-1).to(torch.int32))

    def all_same_values(self):
        """For AllSame rows: ((possible, valid) of the input, possible of each value's
        ``Filter_π[1]`` row ``(G, K, N)``, which values are real ``(G, K)``)."""
        args, inputs = self.index["args"], self.inputs
        x = self.idx(inputs["vin"][args[:, 0]])
        conjoined = inputs["vin"][args[:, 1:]]  # -1 at padding, whose rows are the constant ones
        value_rows = inputs["in0"][inputs["in1"][np.maximum(conjoined, 0)]]
        values = np.where(conjoined >= 0, value_rows, -1)
        real = torch.as_tensor(~self.index["pad"][:, 1:] & (values >= 0), device=self.device)
        value_poss = self.vectors[self.idx(np.maximum(values, 0))] > IMPOSSIBLE
        return (self.vectors[x] > IMPOSSIBLE, self.object_mask[self.v_scene[x]]), value_poss, real

    def add_all_same_input(self, counts: torch.Tensor) -> None:
        self.v_count.index_add_(0, self.idx(self.inputs["vin"][self.index["args"][:, 0]]), counts)


def _flipped(t: torch.Tensor, reverse: np.ndarray) -> torch.Tensor:
    """``(G, N, N)`` matrices, transposed where ``reverse`` (a reversed atom reads ``(y, x)``)."""
    if not reverse.any():
        return t
    flip = torch.as_tensor(reverse, device=t.device)[:, None, None]
    return torch.where(flip, t.transpose(1, 2), t)


def _uncertain(slots: np.ndarray, width: int, repeated: torch.Tensor, table) -> np.ndarray:
    """(program, request, object...) of each atom repeated and uncertain."""
    if len(slots):
        repeated &= table[torch.as_tensor(slots % width, device=repeated.device)] == OPEN
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
        n = object_mask.shape[1]  # by arity, (slots, N) / (slots, N, N): counted twice by an entry
        repeated = {k: torch.zeros((len(s),) + (n,) * k, dtype=torch.bool, device=a.device)
                    for k, s in a.slots.items()}
        for entry in range(a.n_entries):
            a.down(entry)
            for k in repeated:
                repeated[k] |= a.counts[k] >= CAP
        unary_atoms, binary_atoms = (_uncertain(a.slots[k], a.width[k], rep, a.tables[k])
                                     for k, rep in repeated.items())
    count = sum(np.bincount(atoms[:, 0], minlength=plan.n_programs)
                for atoms in (unary_atoms, binary_atoms))
    return RepeatedAtoms(unary_atoms, binary_atoms, count.astype(np.int64))
