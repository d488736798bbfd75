"""The batched DFOL executor: many different programs, one tensor operation per operator kind.

How a batch runs:

1. every program is flattened once into a :class:`ProgramPlan`, kept on the program as row
   matrices with the engine's predicate ids: its distinct nodes in topological order, each
   with its *level* (1 + the level of its deepest input) and its inputs as local indices;
2. the plans of the batch are concatenated with numpy, and nodes are sorted by
   ``(level, operator kind)`` so that each level's nodes of one kind are contiguous rows;
3. the oracle is asked once for all distinct ``(scene, unary predicate)`` pairs and once
   for all ``(scene, binary predicate)`` pairs of the batch;
4. level by level, each operator kind runs as **one** call of its :mod:`operators` function
   on all its rows (``Filter`` rows of every program together, every ∃-``Relate`` together,
   ...), reading its inputs from the rows of earlier levels.

So a batch costs a handful of tensor operations per level whatever its size; the only
Python work per program is the flattening, cached per program and done once.

Example (the paper's formula (1) on one scene of two objects):
    >>> import torch
    >>> from nablafol.ir import Predicate, Program, Aggregate, Filter, Relate, Top
    >>> from nablafol.oracle import TableOracle
    >>> chair, left = Predicate("Chair"), Predicate("Left", arity=2)
    >>> program = Program.yes_no(Aggregate(Quantifier.EXISTS,
    ...                                    Filter(chair, Relate.of(left, Quantifier.FORALL, Top()))))
    >>> oracle = TableOracle([{chair: [0.9, 0.2], left: [[1.0, 0.8], [0.1, 1.0]]}])
    >>> Engine()([program], oracle).probs()
    tensor([[0.7256]])
"""
from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol, Sequence

import numpy as np
import torch

from . import operators as ops
from .errors import ProbabilityError, ProgramStructureError, ShapeError
from .ir import (Aggregate, AggregateEach, AllOf, And, AnyOf, AnyOfGroups, Attention, Conjoin, Filter, Neg, Not, Or,
                 Pairwise, Predicate, Program, Relate, Top)
from .operators import Quantifier
from .oracle import Oracle, Requests

__all__ = ["Engine", "Answers", "Calibration", "ProgramPlan", "BatchPlan", "Quantifier"]

NEG_INF = float("-inf")
_QUANTS = (Quantifier.EXISTS, Quantifier.FORALL, Quantifier.NOT_EXISTS)

# operator kinds (vector-valued, then scalar-valued); the order is the order of execution within a level
V_TOP, V_FILTER, V_NEG, V_CONJOIN, V_RELATE_E, V_RELATE_A, V_RELATE_N = range(7)
S_AGG_E, S_AGG_A, S_AGG_N, S_NOT, S_AND, S_OR = range(6)
_V_RELATE = {Quantifier.EXISTS: V_RELATE_E, Quantifier.FORALL: V_RELATE_A, Quantifier.NOT_EXISTS: V_RELATE_N}
_S_AGG = {Quantifier.EXISTS: S_AGG_E, Quantifier.FORALL: S_AGG_A, Quantifier.NOT_EXISTS: S_AGG_N}


class Calibration(Protocol):
    """A function the engine calls on every attention it computes (except ``Top``).

    If it has a ``prepare(programs, device)`` method, the engine calls it first with the
    batch's programs (in batch order), so that it can compute per-program parameters.

    ``log_a`` ``(G, N)`` are the rows of one operator kind at one level, ``mask`` their
    objects, ``program`` ``(G,)`` the index of each row's program in the batch and ``step``
    ``(G,)`` the row's position in ``ProgramPlan.attention_steps`` of that program. It
    returns calibrated log-attentions of the same shape. The engine does not import any
    calibrator; ``calibration/`` implements this protocol.
    """

    def __call__(self, log_a: torch.Tensor, mask: torch.Tensor, program: torch.Tensor,
                 step: torch.Tensor) -> torch.Tensor: ...


# --- one program, flattened ------------------------------------------------------------

_TOP = Top()


class _NodeIndex:
    """node -> value, looked up by identity first (no hashing), then by structural equality."""

    __slots__ = ("by_id", "by_node")

    def __init__(self):
        self.by_id: dict[int, object] = {}
        self.by_node: dict = {}

    def __setitem__(self, node, value):
        self.by_id[id(node)] = value
        self.by_node[node] = value

    def __getitem__(self, node):
        try:
            return self.by_id[id(node)]
        except KeyError:
            value = self.by_node[node]
            self.by_id[id(node)] = value
            return value

    def get(self, node, default=None):
        try:
            return self[node]
        except KeyError:
            return default

    def __contains__(self, node):
        return id(node) in self.by_id or node in self.by_node

@dataclass(frozen=True)
class ProgramPlan:
    """A program as arrays of local indices (see the module docstring)."""

    # vector (attention) nodes
    v_kind: np.ndarray
    v_level: np.ndarray
    v_in0: np.ndarray  # local vector input (-1: none)
    v_in1: np.ndarray
    v_pred: np.ndarray  # local unary predicate (Filter), else -1
    # relate atoms: (node, local binary predicate, reversed)
    a_node: np.ndarray
    a_pred: np.ndarray
    a_rev: np.ndarray
    # scalar (truth) nodes
    s_kind: np.ndarray
    s_level: np.ndarray
    s_vin: np.ndarray  # local vector input (Aggregate), else -1
    # scalar arguments of Not/And/Or: (node, local scalar input)
    e_node: np.ndarray
    e_arg: np.ndarray
    candidates: np.ndarray  # local scalar rows of the answers
    focus: int  # local vector row, -1 when none
    unary: tuple[Predicate, ...]
    binary: tuple[Predicate, ...]
    _steps: tuple  # compact form of `attention_steps` (AggregateEach blocks not expanded)
    # the row matrices the columns above are views of (what packing copies in one go)
    _tables: tuple = field(default=(), repr=False, compare=False)

    @classmethod
    def of(cls, program: Program) -> "ProgramPlan":
        if not isinstance(program, Program):
            raise ProgramStructureError(f"expected a nablafol.ir.Program, got {type(program).__name__} {program!r:.60}")
        cached = program.__dict__.get("_plan")
        if cached is not None:
            return cached
        plan = cls._build(program)
        object.__setattr__(program, "_plan", plan)
        return plan

    @classmethod
    def _build(cls, program: Program) -> "ProgramPlan":
        # node -> its row(s). Nodes come from Program.nodes(), already deduplicated; a child may
        # still be an equal but distinct object, so a miss by identity falls back to equality
        vec, sca, each = _NodeIndex(), _NodeIndex(), _NodeIndex()
        unary: dict = {}
        binary: dict = {}
        v_rows, s_rows = _Rows(5), _Rows(3)  # (kind, level, in0, in1, pred), (kind, level, vin)
        atoms, edges, steps = [], [], []
        for node in program.nodes():
            if isinstance(node, Attention):
                i = vec[node] = v_rows.n
                steps.append(node)
                in0 = in1 = pred = -1
                if isinstance(node, Top):
                    kind = V_TOP
                elif isinstance(node, Filter):
                    kind, in0 = V_FILTER, vec[node.input]
                    pred = unary.setdefault(node.predicate, len(unary))
                elif isinstance(node, Neg):
                    kind, in0 = V_NEG, vec[node.input]
                elif isinstance(node, Conjoin):
                    kind, in0, in1 = V_CONJOIN, vec[node.left], vec[node.right]
                elif isinstance(node, Relate):
                    kind, in0 = _V_RELATE[node.quantifier], vec[node.input]
                    for a in node.atoms:
                        atoms.append((i, binary.setdefault(a.predicate, len(binary)), a.reverse))
                else:
                    raise ProgramStructureError(f"unknown attention node {type(node).__name__}")
                level = 0 if in0 < 0 else 1 + max(v_rows.levels[in0], v_rows.levels[in1] if in1 >= 0 else 0)
                v_rows.add((kind, level, in0, in1, pred))
            elif isinstance(node, AggregateEach):
                # K rows per operator on the shared input, then K aggregations: numpy blocks,
                # since an open question may have 1,232 candidates
                vin, k = vec[node.input], len(node.predicates)
                preds = _local_ids(unary, node.predicates)
                ks = np.arange(k)
                if not node.negate:  # A_q(Filter_π[α])
                    level = 1 + v_rows.levels[vin]
                    last = v_rows.add_block(_block(k, V_FILTER, level, vin, -1, preds), level)
                    steps.append((node, 1))
                else:  # A_q(α ⊙ Neg[Filter_π[1]])
                    top = vec.get(_TOP)
                    if top is None:
                        top = vec[_TOP] = v_rows.add((V_TOP, 0, -1, -1, -1))
                        steps.append(_TOP)
                    filters = v_rows.add_block(_block(k, V_FILTER, 1, top, -1, preds), 1)
                    negs = v_rows.add_block(_block(k, V_NEG, 2, filters.start + ks, -1, -1), 2)
                    level = 1 + max(2, v_rows.levels[vin])
                    last = v_rows.add_block(_block(k, V_CONJOIN, level, vin, negs.start + ks, -1), level)
                    steps.append((node, 3))
                each[node] = s_rows.add_block(_block(k, _S_AGG[node.quantifier], level + 1, last.start + ks), level + 1)
            elif isinstance(node, Pairwise):
                left, right = each[node.left], each[node.right]
                level = 1 + max(s_rows.levels[left.start], s_rows.levels[right.start])
                rows = s_rows.add_block(_block(len(left), S_AND, level, -1), level)
                ks = np.arange(len(left))
                pairs = np.empty((2 * len(left), 2), dtype=np.int64)
                pairs[:, 0] = np.concatenate([rows.start + ks] * 2)
                pairs[:, 1] = np.concatenate([left.start + ks, right.start + ks])
                edges.append(pairs)
                each[node] = rows
            elif isinstance(node, AnyOfGroups):  # one Or row per group, its arguments in one block
                rows = each[node.each]
                level = 1 + s_rows.levels[rows.start]
                groups = s_rows.add_block(_block(len(node.sizes), S_OR, level, -1), level)
                pairs = np.empty((len(rows), 2), dtype=np.int64)
                pairs[:, 0] = np.repeat(np.arange(groups.start, groups.stop), node.sizes)
                pairs[:, 1] = np.arange(rows.start, rows.stop)
                edges.append(pairs)
                each[node] = groups
            elif isinstance(node, (AnyOf, AllOf)):
                rows = each[node.each]
                level = 1 + s_rows.levels[rows.start]
                j = sca[node] = s_rows.add((S_OR if isinstance(node, AnyOf) else S_AND, level, -1))
                edges.append(_block(len(rows), j, np.arange(rows.start, rows.stop)))
            else:
                if isinstance(node, Aggregate):
                    kind, vin = _S_AGG[node.quantifier], vec[node.input]
                    level = 1 + v_rows.levels[vin]
                    args = ()
                elif isinstance(node, (Not, And, Or)):
                    kind = S_NOT if isinstance(node, Not) else S_AND if isinstance(node, And) else S_OR
                    vin = -1
                    args = [sca[a] for a in node.children()]
                    level = 1 + max(s_rows.levels[a] for a in args)
                else:
                    raise ProgramStructureError(f"unknown truth node {type(node).__name__}")
                j = sca[node] = s_rows.add((kind, level, vin))
                edges.extend((j, a) for a in args)
        v, s = v_rows.array(), s_rows.array()
        a = np.array(atoms, dtype=np.int64).reshape(-1, 3)
        e = _stack_pairs(edges)
        candidates = np.concatenate([np.arange(each[c].start, each[c].stop) if c in each else [sca[c]]
                                     for c in program.candidates]).astype(np.int64)
        return cls(
            v_kind=v[:, 0], v_level=v[:, 1], v_in0=v[:, 2], v_in1=v[:, 3], v_pred=v[:, 4],
            a_node=a[:, 0], a_pred=a[:, 1], a_rev=a[:, 2].astype(bool),
            s_kind=s[:, 0], s_level=s[:, 1], s_vin=s[:, 2],
            e_node=e[:, 0], e_arg=e[:, 1],
            candidates=candidates,
            focus=vec[program.focus] if program.focus is not None else -1,
            unary=tuple(unary), binary=tuple(binary), _steps=tuple(steps), _tables=(v, a, s, e),
        )

    @property
    def attention_steps(self) -> tuple:
        """What each vector row computes, in the order of the engine's ``step``: an Attention
        node, or ``(AggregateEach node, predicate)`` for the rows such a node stands for."""
        cached = self.__dict__.get("_attention_steps")
        if cached is None:
            out = []
            for entry in self._steps:
                if isinstance(entry, tuple):  # (AggregateEach, operator rows per predicate)
                    node, repeat = entry
                    out.extend((node, p) for _ in range(repeat) for p in node.predicates)
                else:
                    out.append(entry)
            cached = tuple(out)
            object.__setattr__(self, "_attention_steps", cached)
        return cached


class _Rows:
    """Rows of a plan table: single rows (tuples) and numpy blocks, numbered in order."""

    def __init__(self, width: int):
        self.width, self.n = width, 0
        self.parts: list = []
        self.pending: list = []
        self.levels: list[int] = []  # the level of every row, for its consumers

    def add(self, row: tuple) -> int:
        self.pending.append(row)
        self.levels.append(row[1])
        self.n += 1
        return self.n - 1

    def add_block(self, block: np.ndarray, level: int) -> range:
        if self.pending:
            self.parts.append(np.array(self.pending, dtype=np.int64).reshape(-1, self.width))
            self.pending = []
        self.parts.append(block)
        self.levels.extend([level] * len(block))
        first, self.n = self.n, self.n + len(block)
        return range(first, self.n)

    def array(self) -> np.ndarray:
        if self.pending:
            self.parts.append(np.array(self.pending, dtype=np.int64).reshape(-1, self.width))
            self.pending = []
        return np.concatenate(self.parts) if self.parts else np.zeros((0, self.width), dtype=np.int64)


def _block(k: int, *columns) -> np.ndarray:
    """A ``(k, len(columns))`` int64 block; each column a scalar or a length-k array."""
    out = np.empty((k, len(columns)), dtype=np.int64)
    for i, c in enumerate(columns):
        out[:, i] = c
    return out


def _local_ids(index: dict, predicates: tuple) -> np.ndarray:
    """The local ids of ``predicates`` in ``index``, adding the new ones (dense numbering)."""
    for p in predicates:
        if p not in index:
            index[p] = len(index)
    return np.fromiter(map(index.__getitem__, predicates), dtype=np.int64, count=len(predicates))


def _stack_pairs(edges: list) -> np.ndarray:
    """Edges given as (node, arg) tuples and as (n, 2) arrays -> one (E, 2) array."""
    parts, pending = [], []
    for e in edges:
        if isinstance(e, np.ndarray):
            if pending:
                parts.append(np.array(pending, dtype=np.int64).reshape(-1, 2))
                pending = []
            parts.append(e.astype(np.int64))
        else:
            pending.append(e)
    if pending:
        parts.append(np.array(pending, dtype=np.int64).reshape(-1, 2))
    return np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int64)


# --- a batch of programs, as sorted index arrays ----------------------------------------

@dataclass
class _Group:
    kind: int
    start: int  # first row (sorted order) of this group in its store
    stop: int
    arrays: dict = field(default_factory=dict)  # numpy index arrays the kernel needs


class _Store:
    """The rows computed so far, level after level (groups arrive in row order).

    Without autograd the rows go into one buffer of the final size: concatenating the store
    anew at every level copies it once per level, quadratic in program length. With autograd
    a concatenation per level keeps the backward pass free of in-place bookkeeping."""

    def __init__(self, first: torch.Tensor, total: int):
        self.filled = first.shape[0]
        if torch.is_grad_enabled():
            self.rows = first
            self._buffer = None
        else:
            self._buffer = first.new_empty((first.shape[0] + total,) + tuple(first.shape[1:]))
            self._buffer[: self.filled] = first
            self.rows = self._buffer  # rows past `filled` are written before anything reads them

    def extend(self, outs: list) -> None:
        if not outs:
            return
        if self._buffer is None:
            self.rows = torch.cat([self.rows] + outs)
            return
        for out in outs:
            self._buffer[self.filled: self.filled + out.shape[0]] = out
            self.filled += out.shape[0]


@dataclass
class BatchPlan:
    """The merged plan of a batch: per level, contiguous groups of one operator kind."""

    n_programs: int
    program_scene: np.ndarray  # (P,) the scene of each program
    levels: list  # per level: (vector groups, scalar groups)
    v_scene: np.ndarray  # scene of each vector row (sorted order)
    v_program: np.ndarray
    v_step: np.ndarray
    unary_keys: np.ndarray  # distinct (scene, predicate id) pairs, as scene * P + id
    binary_keys: np.ndarray
    predicates: list  # predicate id -> Predicate
    candidates: np.ndarray  # (P, K) scalar rows (sorted order), -1 padding
    focus: np.ndarray  # (P,) vector row or -1
    labels: list

    @property
    def n_scalars(self) -> int:
        """Scalar rows the batch computes (the store holds two constant rows before them)."""
        return sum(g.stop - g.start for _, sgroups in self.levels for g in sgroups)

    @property
    def kernel_groups(self) -> int:
        """Operator calls the batch makes (a measure of batching: independent of batch size)."""
        return sum(len(v) + len(s) for v, s in self.levels)


def _padded(owner: np.ndarray, values: np.ndarray, n_rows: int, fill: int) -> np.ndarray:
    """Scatter ``values`` into an ``(n_rows, width)`` matrix by ``owner`` row, padding with ``fill``."""
    if owner.size == 0:
        return np.full((n_rows, 1), fill, dtype=np.int64)
    order = np.argsort(owner, kind="stable")
    owner, values = owner[order], values[order]
    counts = np.bincount(owner, minlength=n_rows)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pos = np.arange(owner.size) - starts[owner]
    out = np.full((n_rows, max(1, int(counts.max()))), fill, dtype=np.int64)
    out[owner, pos] = values
    return out


class _Registry:
    """Predicate -> small int, per engine (a cache of the programs' predicate ids)."""

    _tokens = itertools.count()

    def __init__(self):
        self.ids: dict[Predicate, int] = {}
        self.predicates: list[Predicate] = []
        self.token = next(self._tokens)  # names this registry in the programs' caches, without a reference

    def packed(self, program: Program) -> "_Packed":
        """``program``'s plan as row matrices with this engine's predicate ids, cached on the program
        (a lookup by identity: a weak-keyed dictionary cost a third of planning)."""
        if not isinstance(program, Program):
            ProgramPlan.of(program)  # raises, naming what it was given
        return program.cached_for("_packed", self.token, lambda: self._pack(program))

    def _pack(self, program: Program) -> "_Packed":
        # the plan is built for packing only, not kept: the packed rows are all a batch needs
        plan = program.__dict__.get("_plan") or ProgramPlan._build(program)
        return _Packed.of(plan, self._ids(plan.unary), self._ids(plan.binary))

    def _ids(self, preds) -> np.ndarray:
        out = np.empty(len(preds), dtype=np.int64)
        for i, p in enumerate(preds):
            j = self.ids.get(p)
            if j is None:
                j = self.ids[p] = len(self.predicates)
                self.predicates.append(p)
            out[i] = j
        return out


@dataclass(frozen=True)
class _Packed:
    """One program's plan as four row matrices (local row indices, engine-wide predicate ids):
    a batch concatenates four arrays per program instead of a dozen (planning is per-program work)."""

    v: np.ndarray  # (nv, 5): kind, level, in0, in1, unary predicate id (-1: none)
    a: np.ndarray  # (na, 3): node, binary predicate id, reversed
    s: np.ndarray  # (ns, 3): kind, level, vector input
    e: np.ndarray  # (ne, 2): node, scalar argument
    candidates: np.ndarray
    focus: int

    @classmethod
    def of(cls, plan: ProgramPlan, unary_ids: np.ndarray, binary_ids: np.ndarray) -> "_Packed":
        v, a, s, e = plan._tables
        v = v.copy()
        pred = v[:, 4]
        has = pred >= 0
        pred[has] = unary_ids[pred[has]]
        if a.size:
            a = a.copy()
            a[:, 1] = binary_ids[a[:, 1]]
        return cls(v=v, a=a, s=s, e=e, candidates=plan.candidates, focus=plan.focus)


def _rows_of(parts: list[np.ndarray], width: int) -> tuple[np.ndarray, np.ndarray]:
    """The row matrices of a batch stacked, and each program's row count."""
    counts = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    rows = np.concatenate(parts) if parts else np.zeros((0, width), dtype=np.int64)
    return rows, counts


def _shifted(local: np.ndarray, offsets: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Local row indices (-1: none) made batch-wide: each program's rows shifted by its offset."""
    if not local.size:
        return local
    return np.where(local >= 0, local + np.repeat(offsets, counts), -1)


def build_batch_plan(programs: Sequence[Program], scenes: np.ndarray, registry: _Registry) -> BatchPlan:
    packs = [registry.packed(p) for p in programs]
    n_prog = len(packs)
    # one vectorized pass per table for the whole batch (numpy calls per program dominated planning)
    v, nv = _rows_of([p.v for p in packs], 5)
    a, na = _rows_of([p.a for p in packs], 3)
    s, ns = _rows_of([p.s for p in packs], 3)
    e, ne = _rows_of([p.e for p in packs], 2)
    v_off = np.concatenate([[0], np.cumsum(nv)[:-1]]).astype(np.int64) if n_prog else nv
    s_off = np.concatenate([[0], np.cumsum(ns)[:-1]]).astype(np.int64) if n_prog else ns

    # vector nodes (global unsorted index = v_off[prog] + local)
    v_kind, v_level = v[:, 0], v[:, 1]
    v_in0, v_in1 = _shifted(v[:, 2], v_off, nv), _shifted(v[:, 3], v_off, nv)
    v_program = np.repeat(np.arange(n_prog), nv)
    v_scene = scenes[v_program] if n_prog else v_program
    v_step = np.arange(len(v_kind)) - np.repeat(v_off, nv)
    v_pred = v[:, 4]
    has = v_pred >= 0
    # relate atoms
    a_node = _shifted(a[:, 0], v_off, na)
    a_pred = a[:, 1]
    a_rev = a[:, 2].astype(bool)
    # scalar nodes
    s_kind, s_level = s[:, 0], s[:, 1]
    s_vin = _shifted(s[:, 2], v_off, ns)
    e_node, e_arg = _shifted(e[:, 0], s_off, ne), _shifted(e[:, 1], s_off, ne)

    # the batch's predicates, renumbered in a canonical order: what the oracle is asked (and in
    # which order) depends on this batch alone, not on what the engine has seen before, so
    # results are bit-for-bit reproducible (a resumed training run equals an uninterrupted one)
    used = np.unique(np.concatenate([v_pred[has], a_pred]))
    canonical = sorted(used.tolist(), key=lambda i: (registry.predicates[i].kind, registry.predicates[i].name,
                                                     registry.predicates[i].arity))
    rank = np.zeros(len(registry.predicates) + 1, dtype=np.int64)
    rank[canonical] = np.arange(len(canonical))
    v_pred = np.where(has, rank[np.maximum(v_pred, 0)], -1)
    a_pred = rank[a_pred] if a_pred.size else a_pred
    predicates = [registry.predicates[i] for i in canonical]
    n_pred_ids = max(1, len(predicates))

    # distinct oracle requests, as keys scene * n_pred_ids + predicate id
    u_key_per_node = np.where(has, v_scene * n_pred_ids + np.maximum(v_pred, 0), -1)
    unary_keys = np.unique(u_key_per_node[has])
    b_key_per_atom = v_scene[a_node] * n_pred_ids + a_pred if a_node.size else np.zeros(0, dtype=np.int64)
    binary_keys = np.unique(b_key_per_atom)

    # sort rows by (level, kind): each level's kinds become contiguous groups
    v_order = np.lexsort((v_kind, v_level))
    v_rank = np.empty_like(v_order)
    v_rank[v_order] = np.arange(v_order.size)
    s_order = np.lexsort((s_kind, s_level))
    s_rank = np.empty_like(s_order)
    s_rank[s_order] = np.arange(s_order.size)
    CONST = 2  # scalar store rows 0 and 1 hold log 1 and log 0 (padding of And / Or)

    def vrow(x):
        return np.where(x >= 0, v_rank[np.maximum(x, 0)], -1)

    levels = []
    max_level = int(max(v_level.max(initial=-1), s_level.max(initial=-1)))
    v_sorted_kind, v_sorted_level = v_kind[v_order], v_level[v_order]
    s_sorted_kind, s_sorted_level = s_kind[s_order], s_level[s_order]
    # relate atoms and scalar args, grouped by their (sorted) owner row
    a_owner = v_rank[a_node] if a_node.size else a_node
    a_req = np.searchsorted(binary_keys, b_key_per_atom) if a_node.size else a_node
    e_owner = s_rank[e_node] if e_node.size else e_node
    e_row = s_rank[e_arg] + CONST if e_arg.size else e_arg
    for level in range(max_level + 1):
        vgroups, sgroups = [], []
        lo, hi = np.searchsorted(v_sorted_level, [level, level + 1])
        kinds = v_sorted_kind[lo:hi]
        for kind in np.unique(kinds):
            a, b = lo + np.searchsorted(kinds, kind), lo + np.searchsorted(kinds, kind, side="right")
            g = _Group(int(kind), int(a), int(b))
            orig = v_order[a:b]
            if kind == V_FILTER:
                g.arrays["in0"] = vrow(v_in0[orig])
                g.arrays["table"] = np.searchsorted(unary_keys, u_key_per_node[orig])
            elif kind in (V_NEG,) or kind >= V_RELATE_E:
                g.arrays["in0"] = vrow(v_in0[orig])
            elif kind == V_CONJOIN:
                g.arrays["in0"], g.arrays["in1"] = vrow(v_in0[orig]), vrow(v_in1[orig])
            if kind >= V_RELATE_E:
                sel = (a_owner >= a) & (a_owner < b)
                neutral = len(binary_keys)  # an all-ones table appended after the oracle's
                g.arrays["tables"] = _padded(a_owner[sel] - a, a_req[sel], b - a, neutral)
                g.arrays["reverse"] = _padded(a_owner[sel] - a, a_rev[sel].astype(np.int64), b - a, 0).astype(bool)
            vgroups.append(g)
        lo, hi = np.searchsorted(s_sorted_level, [level, level + 1])
        kinds = s_sorted_kind[lo:hi]
        for kind in np.unique(kinds):
            a, b = lo + np.searchsorted(kinds, kind), lo + np.searchsorted(kinds, kind, side="right")
            g = _Group(int(kind), int(a), int(b))
            orig = s_order[a:b]
            if kind <= S_AGG_N:
                g.arrays["vin"] = vrow(s_vin[orig])
            else:
                sel = (e_owner >= a) & (e_owner < b)
                fill = 1 if kind == S_OR else 0  # Or pads with log 0, And/Not with log 1
                g.arrays["args"] = _padded(e_owner[sel] - a, e_row[sel], b - a, fill)
            sgroups.append(g)
        levels.append((vgroups, sgroups))

    cand_local, n_cand = _rows_of([p.candidates for p in packs], 1)
    if n_prog:
        cand_rows = s_rank[_shifted(cand_local, s_off, n_cand)] + CONST
        candidates = _padded(np.repeat(np.arange(n_prog), n_cand), cand_rows, n_prog, -1)
    else:
        candidates = np.full((0, 1), -1, dtype=np.int64)
    focus_local = np.fromiter((p.focus for p in packs), dtype=np.int64, count=n_prog)
    focus = np.where(focus_local >= 0, v_rank[np.maximum(focus_local + v_off, 0)] if v_rank.size else -1, -1)
    return BatchPlan(
        n_programs=n_prog, program_scene=scenes, levels=levels,
        v_scene=v_scene[v_order], v_program=v_program[v_order], v_step=v_step[v_order],
        unary_keys=unary_keys, binary_keys=binary_keys, predicates=predicates,
        candidates=candidates, focus=focus, labels=[p.labels for p in programs],
    )


# --- results ------------------------------------------------------------------------------

@dataclass
class Answers:
    """What a batch of programs evaluates to.

    ``log_probs`` ``(P, K)``: per program, the log-probability of each candidate (a yes/no
    program has one candidate, the probability of *yes*); ``-inf`` pads programs with
    fewer candidates (``candidate_mask`` False there). ``focus`` ``(P, N)``: the
    log-attention of each program's focus node (``-inf`` rows when it has none).
    """

    log_probs: torch.Tensor
    candidate_mask: torch.Tensor
    labels: list
    focus: torch.Tensor
    object_mask: torch.Tensor  # (P, N)
    log_complement: Optional[torch.Tensor] = None  # (P, K): log(1 - p), exact where p is close to 1

    def __post_init__(self):
        if self.log_complement is None:
            from .numerics import log1mexp
            self.log_complement = log1mexp(self.log_probs).masked_fill(~self.candidate_mask, 0.0)

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
        best = lp.argmax(dim=1).tolist()
        yes = (lp[:, 0] > float(np.log(threshold)) if threshold > 0 else lp[:, 0] > NEG_INF).tolist()
        return [("yes" if y else "no") if lbl is None else lbl[b] for lbl, b, y in zip(self.labels, best, yes)]

    def distribution(self, i: int) -> dict[str, float]:
        """Candidate -> probability for program ``i`` (``{"yes": p, "no": 1 - p}`` for yes/no)."""
        p = self.log_probs[i].detach().exp().tolist()
        if self.labels[i] is None:
            return {"yes": p[0], "no": 1.0 - p[0]}
        return dict(zip(self.labels[i], p))


# --- the engine ---------------------------------------------------------------------------

class _CompiledQProduct:
    """The Q-product through ``torch.compile``: one fused loop instead of a dozen passes.

    The row count varies from batch to batch, so it is marked dynamic; the object count stays
    static (one compilation per scene size seen), which keeps the inner loop vectorized.
    """

    def __init__(self):
        self._fn = torch.compile(ops.q_product_fused, dynamic=None)
        self.failed: Optional[str] = None  # why compiling failed, once it has: eager from then on

    def __call__(self, log_r, log_y, mask_x, mask_y, quantifier):
        if log_r.shape[0] < 2 or self.failed:  # size-0/1 dims cannot be marked dynamic; not worth compiling either
            return ops.q_product(log_r, log_y, mask_x, mask_y, quantifier)
        if mask_y is not None:  # masked here, not in the kernel: a mask inside its loop halves its speed
            log_y = log_y.masked_fill(~mask_y, NEG_INF)
        for t in (log_r, log_y, mask_x):
            torch._dynamo.mark_dynamic(t, 0)
        try:
            return self._fn(log_r, log_y, mask_x, None, quantifier)
        except Exception as e:  # no C compiler, an unsupported backend...: the eager Q-product is exact too
            self.failed = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            warnings.warn(f"torch.compile of the Q-product failed ({self.failed[:200]}); using the eager Q-product",
                          RuntimeWarning, stacklevel=2)
            return ops.q_product(log_r, log_y, mask_x, None, quantifier)


class Engine(torch.nn.Module):
    """Evaluates batches of DFOL programs over an oracle; a parameter-free ``nn.Module``.

    ``calibration`` (optional) is called after every attention step (see
    :class:`Calibration`); when it is a module its parameters belong to the engine.
    ``validate`` checks what oracles return (shape, NaN, probabilities above 1) and names
    the offending predicate. ``compile=True`` runs the Q-product through ``torch.compile``
    (fused, several times faster for large scenes; costs a compilation on first use).
    """

    def __init__(self, calibration: Optional[Callable] = None, validate: bool = True, compile: bool = False):
        super().__init__()
        self.calibration = calibration
        self.validate = validate
        self._registry = _Registry()
        self._q_product = _CompiledQProduct() if compile else ops.q_product

    def plan(self, programs: Sequence[Program], scenes=None) -> BatchPlan:
        scenes = np.zeros(len(programs), dtype=np.int64) if scenes is None else np.asarray(scenes, dtype=np.int64)
        return build_batch_plan(programs, scenes, self._registry)

    def forward(self, programs: Sequence[Program], oracle: Oracle, scenes=None) -> Answers:
        """Evaluate ``programs``; program ``k`` runs on scene ``scenes[k]`` of the oracle's batch.

        ``scenes`` defaults to ``0, 1, 2, ...`` when the oracle holds one scene per program,
        and to all zeros when it holds a single scene.
        """
        programs = list(programs)
        num_objects = oracle.num_objects
        n_scenes = int(num_objects.shape[0])
        if scenes is None:
            if n_scenes == len(programs):
                scenes = np.arange(len(programs))
            elif n_scenes == 1:
                scenes = np.zeros(len(programs), dtype=np.int64)
            else:
                raise ShapeError(f"{len(programs)} programs over {n_scenes} scenes: pass scenes= to say which is which")
        scenes = np.asarray(scenes.cpu() if torch.is_tensor(scenes) else scenes, dtype=np.int64).reshape(-1)
        if scenes.shape[0] != len(programs):
            raise ShapeError(f"scenes has {scenes.shape[0]} entries for {len(programs)} programs")
        if scenes.size and (scenes.min() < 0 or scenes.max() >= n_scenes):
            raise ShapeError(f"scene index {int(scenes.max() if scenes.max() >= n_scenes else scenes.min())} "
                             f"out of range for an oracle of {n_scenes} scenes")
        plan = self.plan(programs, scenes)
        prepare = getattr(self.calibration, "prepare", None)
        if prepare is not None:  # a calibrator that reads the programs first (e.g. their predicate sequences)
            prepare(programs, device=oracle.num_objects.device)
        return self.run(plan, oracle)

    # -- execution ---------------------------------------------------------------------
    def _requests(self, keys: np.ndarray, plan: BatchPlan, device) -> Requests:
        n_ids = max(1, len(plan.predicates))
        scene, pid = keys // n_ids, keys % n_ids
        distinct, local = np.unique(pid, return_inverse=True)
        return Requests(
            torch.as_tensor(scene, device=device),
            torch.as_tensor(local.reshape(-1), device=device),
            tuple(plan.predicates[i] for i in distinct),
        )

    def _ask(self, oracle, requests: Requests, arity: int, n: int, object_mask: torch.Tensor) -> torch.Tensor:
        name = "unary" if arity == 1 else "binary"
        table = oracle.unary(requests) if arity == 1 else oracle.binary(requests)
        expected = (len(requests),) + (n,) * arity
        if not torch.is_tensor(table) or tuple(table.shape) != expected:
            shape = tuple(table.shape) if torch.is_tensor(table) else type(table).__name__
            raise ShapeError(f"{type(oracle).__name__}.{name} returned {shape}, expected {expected} "
                             f"(requests x objects{' x objects' if arity == 2 else ''})")
        if not len(requests):
            return table
        valid = object_mask[requests.scene]
        if arity == 2:
            valid = valid[:, :, None] & valid[:, None, :]
        if self.validate:
            bad = (torch.isnan(table) | (table > 0)) & valid
            if bool(bad.any()):
                r = int(bad.flatten(1).any(1).nonzero()[0])
                pred = requests.predicates[int(requests.predicate[r])]
                idx = tuple(int(i) for i in bad[r].nonzero()[0])
                value = float(table[r][idx].exp()) if not torch.isnan(table[r][idx]) else float("nan")
                raise ProbabilityError(f"{type(oracle).__name__}: predicate {pred.name!r} (scene "
                                       f"{int(requests.scene[r])}, objects {idx}) has probability {value!r}, "
                                       f"outside [0, 1]")
        return table.masked_fill(~valid, NEG_INF)  # whatever the oracle put at padding: an exact 0

    def run(self, plan: BatchPlan, oracle: Oracle) -> Answers:
        num_objects = oracle.num_objects
        device = num_objects.device
        n = int(num_objects.max()) if num_objects.numel() else 0
        object_mask = torch.arange(n, device=device)[None, :] < num_objects[:, None]  # (B, N)
        idx = lambda a: torch.as_tensor(a, dtype=torch.long, device=device)  # noqa: E731

        u_req = self._requests(plan.unary_keys, plan, device)
        b_req = self._requests(plan.binary_keys, plan, device)
        unary = self._ask(oracle, u_req, 1, n, object_mask) if len(u_req) else None
        binary = self._ask(oracle, b_req, 2, n, object_mask) if len(b_req) else None
        dtype = unary.dtype if unary is not None else binary.dtype if binary is not None else torch.get_default_dtype()
        if binary is not None:  # the neutral all-ones table that pads relates with fewer atoms
            binary = torch.cat([binary, binary.new_zeros((1, n, n))])

        v_scene = idx(plan.v_scene)
        vec = _Store(torch.zeros((0, n), dtype=dtype, device=device), len(plan.v_scene))
        # scalars carry (log p, log(1 - p)): complements stay exact through ∃, ∄, ¬ and ∨
        sca = _Store(torch.tensor([[0.0, NEG_INF], [NEG_INF, 0.0]], dtype=dtype, device=device), plan.n_scalars)
        for vgroups, sgroups in plan.levels:
            outs = []
            for g in vgroups:
                rows = slice(g.start, g.stop)
                mask = object_mask[v_scene[rows]]
                out = self._vector_kernel(g, vec.rows, unary, binary, mask, idx)
                if self.calibration is not None and g.kind != V_TOP:
                    out = self.calibration(out, mask, idx(plan.v_program[rows]), idx(plan.v_step[rows]))
                    out = out.masked_fill(~mask, NEG_INF)
                outs.append(out)
            vec.extend(outs)
            sca.extend([self._scalar_kernel(g, vec.rows, sca.rows, object_mask, v_scene, idx) for g in sgroups])
        vec, sca = vec.rows, sca.rows

        cand = idx(plan.candidates)
        cand_mask = cand >= 0
        picked = sca[cand.clamp(min=0)]
        log_probs = picked[..., 0].masked_fill(~cand_mask, NEG_INF)
        log_complement = picked[..., 1].masked_fill(~cand_mask, 0.0)
        focus_rows = idx(plan.focus)
        has_focus = focus_rows >= 0
        focus = vec[focus_rows.clamp(min=0)] if vec.shape[0] else vec.new_full((len(focus_rows), n), NEG_INF)
        focus = focus.masked_fill(~has_focus[:, None], NEG_INF)
        return Answers(log_probs, cand_mask, plan.labels, focus, object_mask[idx(plan.program_scene)], log_complement)

    def _vector_kernel(self, g: _Group, vec, unary, binary, mask, idx) -> torch.Tensor:
        if g.kind == V_TOP:
            return torch.zeros(mask.shape, dtype=vec.dtype, device=vec.device).masked_fill(~mask, NEG_INF)
        x = vec[idx(g.arrays["in0"])]
        if g.kind == V_FILTER:
            return ops.filter_(x, unary[idx(g.arrays["table"])], mask)
        if g.kind == V_NEG:
            return ops.neg(x, mask)
        if g.kind == V_CONJOIN:
            return ops.conjoin(x, vec[idx(g.arrays["in1"])], mask)
        tables, reverse = idx(g.arrays["tables"]), g.arrays["reverse"]
        log_r = None
        for k in range(tables.shape[1]):
            t = binary[tables[:, k]]
            if reverse[:, k].any():
                flip = torch.as_tensor(reverse[:, k], device=t.device)[:, None, None]
                t = torch.where(flip, t.transpose(1, 2), t)
            log_r = t if log_r is None else log_r + t
        quantifier = {V_RELATE_E: Quantifier.EXISTS, V_RELATE_A: Quantifier.FORALL,
                      V_RELATE_N: Quantifier.NOT_EXISTS}[g.kind]
        return self._q_product(log_r, x, mask, mask, quantifier)

    def _scalar_kernel(self, g: _Group, vec, sca, object_mask, v_scene, idx) -> torch.Tensor:
        if g.kind <= S_AGG_N:
            rows = idx(g.arrays["vin"])
            quantifier = {S_AGG_E: Quantifier.EXISTS, S_AGG_A: Quantifier.FORALL,
                          S_AGG_N: Quantifier.NOT_EXISTS}[g.kind]
            return torch.stack(ops.aggregate_pair(vec[rows], object_mask[v_scene[rows]], quantifier), dim=-1)
        args = sca[idx(g.arrays["args"])]  # (G, K, 2)
        if g.kind == S_NOT:
            return args[:, 0].flip(-1)
        if g.kind == S_AND:
            log_p = ops.and_(args[..., 0])
            return torch.stack([log_p, ops.not_(log_p)], dim=-1)
        log_q = ops.and_(args[..., 1])  # Or: none of them holds
        return torch.stack([ops.not_(log_q), log_q], dim=-1)
