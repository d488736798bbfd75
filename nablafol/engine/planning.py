"""Planning a batch of DFOL programs: each program flattened once into row matrices, a batch's
plans concatenated and ordered by ``(level, operator kind)`` for :mod:`nablafol.engine.execution`.

Numpy only: no tensor is made here. A program's packed plan depends on the program and on the
registry's predicate ids, so the registry keeps it (``_Registry.packed``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import NamedTuple, Sequence

import numpy as np

from nablafol.caching import bounded_cache, memo, weighted_cache
from nablafol.errors import ProgramStructureError, ShapeError
from nablafol.ir import (Aggregate, AggregateEach, AllOf, AllSame, And, AnyOf, AnyOfGroups, Attention, Conjoin, Filter,
                         Neg, Not, Or, Pairwise, Predicate, Program, Relate, Top, Truths, number_predicates)
from nablafol.operators import Quantifier

__all__ = ["ProgramPlan", "BatchPlan", "build_batch_plan"]

NEG_INF = float("-inf")
_QUANTS = (Quantifier.EXISTS, Quantifier.FORALL, Quantifier.NOT_EXISTS)

# operator kinds (vector-valued, then scalar-valued); the order is the order of execution within a level
V_TOP, V_FILTER, V_NEG, V_CONJOIN, V_RELATE_E, V_RELATE_A, V_RELATE_N = range(7)
S_AGG_E, S_AGG_A, S_AGG_N, S_NOT, S_AND, S_OR, S_ALLSAME = range(7)
_V_RELATE = {Quantifier.EXISTS: V_RELATE_E, Quantifier.FORALL: V_RELATE_A, Quantifier.NOT_EXISTS: V_RELATE_N}
_S_AGG = {Quantifier.EXISTS: S_AGG_E, Quantifier.FORALL: S_AGG_A, Quantifier.NOT_EXISTS: S_AGG_N}
RELATE_QUANTIFIER = {kind: q for q, kind in _V_RELATE.items()}  # a relate kind's quantifier (executors)
AGGREGATE_QUANTIFIER = {kind: q for q, kind in _S_AGG.items()}  # an aggregation kind's quantifier
SCALAR_CONSTANTS = 2  # the scalar store's rows 0 and 1 hold log 1 and log 0 (padding of And / Or)


# --- one program, flattened ------------------------------------------------------------

_TOP = Top()


class _NodeIndex:
    """node -> value, looked up by identity; an equal but distinct node (a child that
    ``Program.nodes()`` merged with an equal one) is found by structural equality, in a table made
    on the first such miss (most programs have none: no node is hashed for them)."""

    __slots__ = ("by_id", "items", "by_node")

    def __init__(self):
        self.by_id: dict[int, object] = {}
        self.items: list = []  # (node, value) in order; holding the nodes keeps their ids their own
        self.by_node: dict | None = None

    def __setitem__(self, node, value):
        self.by_id[id(node)] = value
        self.items.append((node, value))
        if self.by_node is not None:
            self.by_node[node] = value

    def __getitem__(self, node):
        try:
            return self.by_id[id(node)]
        except KeyError:
            if self.by_node is None:
                self.by_node = dict(self.items)
            value = self.by_node[node]
            self.by_id[id(node)] = value
            return value

    def get(self, node, default=None):
        try:
            return self[node]
        except KeyError:
            return default

    def __contains__(self, node):
        return self.get(node, _MISSING) is not _MISSING


_MISSING = object()

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
    grounding: "_GroundingRows | None" = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, program: Program) -> "ProgramPlan":
        if not isinstance(program, Program):
            raise ProgramStructureError(f"expected a nablafol.ir.Program, got {type(program).__name__} {program!r:.60}")
        return memo(program, "_plan", lambda: cls._build(program))

    @classmethod
    def _build(cls, program: Program) -> "ProgramPlan":
        # node -> its row(s). Nodes come from Program.nodes(), already deduplicated; a child may
        # still be an equal but distinct object, so a miss by identity falls back to equality
        vec, sca, each = _NodeIndex(), _NodeIndex(), _NodeIndex()
        tops, values = _NodeIndex(), _NodeIndex()  # AggregateEach -> its last vector rows, its Filter_π[1] rows
        allsame: list = []  # (AllSame row, input row, Filter_π[1] rows), for the grounding analysis
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
                    values[node] = filters
                tops[node] = last
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
            elif isinstance(node, AllSame):  # arguments: A_∃(α), then A_∃(α ⊙ Neg[Filter_π[1]]) per value
                nonempty, rows = sca[node.nonempty], each[node.each]
                level = 1 + max(s_rows.levels[nonempty], s_rows.levels[rows.start])
                j = sca[node] = s_rows.add((S_ALLSAME, level, -1))
                edges.append((j, nonempty))
                edges.append(_block(len(rows), j, np.arange(rows.start, rows.stop)))
                allsame.append((j, vec[node.input], values[node.each]))
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
        grounding = _GroundingRows.of(program, sca, each, tops, allsame)
        return cls(
            v_kind=v[:, 0], v_level=v[:, 1], v_in0=v[:, 2], v_in1=v[:, 3], v_pred=v[:, 4],
            a_node=a[:, 0], a_pred=a[:, 1], a_rev=a[:, 2].astype(bool),
            s_kind=s[:, 0], s_level=s[:, 1], s_vin=s[:, 2],
            e_node=e[:, 0], e_arg=e[:, 1],
            candidates=candidates,
            focus=vec[program.focus] if program.focus is not None else -1,
            unary=tuple(unary), binary=tuple(binary), _steps=tuple(steps), _tables=(v, a, s, e),
            grounding=grounding,
        )

    def weight(self) -> int:
        """What keeping it costs, in rows (:func:`_weight`; computed once)."""
        return memo(self, "_weight", lambda: _weight(self._tables, self.candidates, self.grounding))

    @property
    def attention_steps(self) -> tuple:
        """What each vector row computes, in the order of the engine's ``step``: an Attention
        node, or ``(AggregateEach node, predicate)`` for the rows such a node stands for."""
        return memo(self, "_attention_steps", self._expanded_steps)

    def _expanded_steps(self) -> tuple:
        out = []
        for entry in self._steps:
            if isinstance(entry, tuple):  # (AggregateEach, operator rows per predicate)
                node, repeat = entry
                out.extend((node, p) for _ in range(repeat) for p in node.predicates)
            else:
                out.append(entry)
        return tuple(out)


@dataclass(frozen=True)
class _GroundingRows:
    """What the grounding analysis (:mod:`nablafol.engine.grounding`) needs of a program beyond
    its rows, in local row indices. Candidates are separate formulas, so the analysis counts
    atoms once per candidate *entry* of ``Program.candidates``:

    * ``roots`` ``(n, 2)``: (entry, scalar row) of every candidate truth;
    * ``merges`` ``(m, 4)``: (entry, vector row, block, group) for the last vector rows of the
      ``AggregateEach`` blocks of an entry that holds many candidates: what these rows pass to
      their shared input is summed within a group (one candidate) and maximized over groups;
    * ``allsame`` ``(a, 2)`` and ``allsame_values`` ``(b, 2)``: (AllSame row, input row) and
      (AllSame index, ``Filter_π[1]`` row of each value).
    """

    roots: np.ndarray
    merges: np.ndarray
    allsame: np.ndarray
    allsame_values: np.ndarray

    @classmethod
    def of(cls, program: Program, sca, each, tops, allsame: list) -> "_GroundingRows":
        roots, merges = [], []
        for u, c in enumerate(program.candidates):
            if not isinstance(c, Truths):
                roots.append(np.array([[u, sca[c]]]))
                continue
            rows = each[c]
            roots.append(_block(len(rows), u, np.arange(rows.start, rows.stop)))
            inner = c.each if isinstance(c, AnyOfGroups) else c
            group = (np.repeat(np.arange(len(c.sizes)), c.sizes) if isinstance(c, AnyOfGroups)
                     else np.arange(inner.n_truths))
            blocks = {tops[b].start: tops[b] for b in ((inner.left, inner.right) if isinstance(inner, Pairwise) else (inner,))}
            for start, block in blocks.items():  # a Pairwise of one node with itself: one block
                merges.append(_block(len(block), u, np.arange(block.start, block.stop), start, group))
        values = [_block(len(v), k, np.arange(v.start, v.stop)) for k, (_, _, v) in enumerate(allsame)]
        return cls(roots=np.concatenate(roots).astype(np.int64),
                   merges=np.concatenate(merges) if merges else np.zeros((0, 4), dtype=np.int64),
                   allsame=np.array([(j, x) for j, x, _ in allsame], dtype=np.int64).reshape(-1, 2),
                   allsame_values=np.concatenate(values) if values else np.zeros((0, 2), dtype=np.int64))


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
    numbers = number_predicates(index, predicates)
    return np.fromiter(numbers, dtype=np.int64, count=len(numbers))


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


class _Shape:
    """A program with its predicates written as local ids, numbered as :meth:`ProgramPlan._build`
    numbers them (unary and binary, in node order): programs of one shape have one plan up to
    their predicates, so a plan is built once per shape. Hashed and compared by ``key`` alone;
    ``program`` is the one a plan is built from, ``unary``/``binary`` its predicates by local id."""

    __slots__ = ("key", "program", "unary", "binary", "_hash")

    def __init__(self, key: tuple, program: Program, unary: tuple, binary: tuple):
        self.key, self.program, self.unary, self.binary = key, program, unary, binary
        self._hash = hash(key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return isinstance(other, _Shape) and self.key == other.key

    def plan(self) -> ProgramPlan:
        return ProgramPlan._build(self.program)

    @classmethod
    def of(cls, program: Program) -> "_Shape | None":
        # every field _build reads, node by node (Program.shape: children by position in the
        # node order, predicates by local number, numbered as _build numbers them)
        shape = program.shape()
        if shape is None:  # a subclass or an unknown node: no shape, the program is planned alone
            return None
        return cls(shape.key, program, shape.unary, shape.binary)


# --- a batch of programs, as sorted index arrays ----------------------------------------

@dataclass
class _Group:
    kind: int
    start: int  # first row (sorted order) of this group in its store
    stop: int
    arrays: dict = field(default_factory=dict)  # numpy index arrays the kernel needs


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
    # the answers' scalar rows as entries (program, column, row), in program order: an open question
    # may have 1,232 candidates, and a (P, K) matrix of a batch with a few of them is 99% padding
    candidate_program: np.ndarray
    candidate_position: np.ndarray
    candidate_rows: np.ndarray  # scalar rows (sorted order)
    candidate_width: int  # K: the most candidates of one program (at least 1)
    focus: np.ndarray  # (P,) vector row or -1
    labels: list
    # a program's local row r is sorted row v_rank[v_offset[p] + r] (scalars: s_rank[...] + 2)
    v_rank: np.ndarray = field(default=None, repr=False)
    s_rank: np.ndarray = field(default=None, repr=False)
    v_offset: np.ndarray = field(default=None, repr=False)
    s_offset: np.ndarray = field(default=None, repr=False)

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


#: Packed programs an engine keeps, the most recently used, bounded by their summed rows
#: (caching rule 2: nablafol.caching): a GQA validation run meets ~73,000 distinct programs, nearly
#: all of ~20 rows, and a few thousand open questions of ~2,500 rows each (a block per candidate):
#: a count bound that holds the small ones held the open ones too (0.7 GB at GQA's size)
PACKED_ROWS = 1 << 21
_PACK_OVERHEAD_ROWS = 16  # the arrays and objects of a pack weigh about this many rows
#: Plans of program shapes an engine keeps (most recently used, bounded by their rows)
SHAPE_ROWS = 1 << 20
#: Whole plans of one-program batches an engine keeps (a model calling it one question at a time)
SINGLE_PLANS = 1 << 10


class _Registry:
    """Predicate -> small int, per engine, and the programs packed with those ids (kept here,
    since they depend on this registry's ids)."""

    def __init__(self, cache_rows: int = PACKED_ROWS):
        self.ids: dict[Predicate, int] = {}
        self.predicates: list[Predicate] = []
        self._packed = weighted_cache(self._pack, cache_rows, _Packed.weight)
        self._shaped = weighted_cache(_Shape.plan, SHAPE_ROWS, ProgramPlan.weight)
        self._single = bounded_cache(self._single_plan, SINGLE_PLANS)

    def single(self, program: Program, scene: int) -> "BatchPlan":
        """The plan of a batch of one: kept whole, since one question at a time spent a third of
        each call merging a batch of one (the plan depends only on the program and its scene)."""
        if not isinstance(program, Program):
            return build_batch_plan([program], np.array([scene], dtype=np.int64), self)  # raises, naming it
        return self._single(program, scene)

    def _single_plan(self, program: Program, scene: int) -> "BatchPlan":
        return build_batch_plan([program], np.array([scene], dtype=np.int64), self)

    def packed(self, program: Program) -> "_Packed":
        """``program``'s plan as row matrices with this engine's predicate ids."""
        if not isinstance(program, Program):
            ProgramPlan.of(program)  # raises, naming what it was given
        packed = self._packed(program)
        # hashing the program kept its shape on it for _pack; a cache hit for an equal program, or a
        # plan kept on it, never took it: dropped here (an open question's shape holds its candidates)
        program.__dict__.pop("_shape", None)
        return packed

    def _pack(self, program: Program) -> "_Packed":
        # the plan is built for packing only, not kept: the packed rows are all a batch needs;
        # programs of one shape (GQA: ~1,700 shapes for ~73,000 programs) share one plan
        # (a program whose plan is kept on it, or with a node of a subclass, which the shape's key
        # cannot see through as _build's isinstance does, is packed from its own plan)
        plan = program.__dict__.get("_plan")
        shape = _Shape.of(program) if plan is None else None
        if shape is not None:
            return _Packed.of(self._shaped(shape), self._ids(shape.unary + shape.binary))
        plan = plan or ProgramPlan._build(program)
        return _Packed.of(plan, self._ids(plan.unary + plan.binary))

    def _ids(self, preds) -> np.ndarray:
        found = list(map(self.ids.get, preds))  # in C: an open question has up to 1,232
        if None in found:
            for i, p in enumerate(preds):
                if found[i] is None:
                    j = self.ids.get(p)  # a repeat within `preds` was added just before
                    if j is None:
                        j = self.ids[p] = len(self.predicates)
                        self.predicates.append(p)
                    found[i] = j
        return np.fromiter(found, dtype=np.int64, count=len(found))


class _Packed(NamedTuple):
    """One program's plan as four row matrices (local row indices, local predicate ids) and its
    predicates' engine-wide ids (``ids``: the unary ones, then the binary ones): a batch
    concatenates four arrays per program instead of a dozen, and relabels every program's
    predicates in one pass (planning is per-program work). A named tuple: one is made per
    distinct program, and a frozen dataclass cost more to make."""

    v: np.ndarray  # (nv, 5): kind, level, in0, in1, local unary predicate (-1: none); the plan's own
    a: np.ndarray  # (na, 3): node, local binary predicate, reversed
    s: np.ndarray  # (ns, 3): kind, level, vector input
    e: np.ndarray  # (ne, 2): node, scalar argument
    candidates: np.ndarray
    focus: int
    grounding: _GroundingRows
    rows: int  # its weight (_weight), its plan's
    ids: np.ndarray  # engine-wide id of each local predicate, unary then binary
    n_unary: int

    @classmethod
    def of(cls, plan: ProgramPlan, ids: np.ndarray) -> "_Packed":
        """``plan`` with the engine-wide ``ids`` of its unary predicates, then of its binary ones."""
        v, a, s, e = plan._tables
        return cls(v, a, s, e, plan.candidates, plan.focus, plan.grounding, plan.weight(), ids, len(plan.unary))

    def weight(self) -> int:
        """What keeping it costs, in rows (:func:`_weight`: its plan's)."""
        return self.rows


_GROUNDING_ARRAYS = tuple(f.name for f in fields(_GroundingRows))  # once: dataclasses.fields is slow


def _weight(tables, candidates: np.ndarray, grounding: _GroundingRows) -> int:
    """What keeping a plan or a pack costs, in rows: its tables', its candidates', its grounding
    rows', and a fixed part for its arrays and objects (what the engine's caches are bounded by)."""
    grounding_rows = sum(len(getattr(grounding, name)) for name in _GROUNDING_ARRAYS)
    return sum(map(len, tables)) + len(candidates) + grounding_rows + _PACK_OVERHEAD_ROWS


def _rows_of(parts: list[np.ndarray], width: int) -> tuple[np.ndarray, np.ndarray]:
    """The row matrices of a batch stacked, and each program's row count (``width`` 0: vectors)."""
    counts = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    rows = np.concatenate(parts) if parts else np.zeros((0, width) if width else 0, dtype=np.int64)
    return rows, counts


def _shifted(local: np.ndarray, offsets: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Local row indices (-1: none) made batch-wide: each program's rows shifted by its offset."""
    if not local.size:
        return local
    return np.where(local >= 0, local + np.repeat(offsets, counts), -1)


def _distinct(keys: np.ndarray, bound: int) -> np.ndarray:
    """``np.unique(keys)`` of int64 keys in ``[0, bound)``: marked in a table of ``bound`` flags
    when that is not much larger than the keys (a GQA batch asks ~25,000 unary keys below ~10^5:
    marking them cost a tenth of sorting them), else sorted."""
    if bound > 8 * keys.size + 4096:
        return np.unique(keys)
    seen = np.zeros(bound, dtype=bool)
    seen[keys] = True
    return np.flatnonzero(seen)


def build_batch_plan(programs: Sequence[Program], scenes: np.ndarray, registry: _Registry) -> BatchPlan:
    if scenes.size and scenes.min() < 0:  # an index into the oracle's batch (a request's key is scene * n + id)
        raise ShapeError(f"scene index {int(scenes.min())} is negative")
    # a program object met again in the batch (a compiler hands out one object per question text)
    # is looked up once: the registry's look-up compares an equal program of another compiler
    # node by node (5-9 µs, most of planning a batch)
    by_object: dict = {}  # id -> (the program, its pack): holding the program keeps its id its own
    packs = []
    for p in programs:
        entry = by_object.get(id(p))
        if entry is None:
            entry = by_object[id(p)] = (p, registry.packed(p))
        packs.append(entry[1])
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
    # predicates: each program's local ids made engine-wide, in one pass for the batch
    ids, n_ids = _rows_of([p.ids for p in packs], 0)
    ids_off = np.cumsum(n_ids) - n_ids
    v_pred = v[:, 4].copy()
    has = v_pred >= 0
    v_pred[has] = ids[v_pred[has] + np.repeat(ids_off, nv)[has]]
    # relate atoms
    a_node = _shifted(a[:, 0], v_off, na)
    binary_off = ids_off + np.fromiter((p.n_unary for p in packs), dtype=np.int64, count=n_prog)
    a_pred = ids[a[:, 1] + np.repeat(binary_off, na)] if a.size else a[:, 1]
    a_rev = a[:, 2].astype(bool)
    # scalar nodes
    s_kind, s_level = s[:, 0], s[:, 1]
    s_vin = _shifted(s[:, 2], v_off, ns)
    e_node, e_arg = _shifted(e[:, 0], s_off, ne), _shifted(e[:, 1], s_off, ne)

    # the batch's predicates, renumbered in a canonical order: what the oracle is asked (and in
    # which order) depends on this batch alone, not on what the engine has seen before, so
    # results are bit-for-bit reproducible (a resumed training run equals an uninterrupted one)
    used = _distinct(np.concatenate([v_pred[has], a_pred]), len(registry.predicates))
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
    key_bound = (int(scenes.max()) + 1) * n_pred_ids if n_prog else 0
    unary_keys = _distinct(u_key_per_node[has], key_bound)
    b_key_per_atom = v_scene[a_node] * n_pred_ids + a_pred if a_node.size else np.zeros(0, dtype=np.int64)
    binary_keys = _distinct(b_key_per_atom, key_bound)

    # sort rows by (level, kind): each level's kinds become contiguous groups
    v_order = np.lexsort((v_kind, v_level))
    v_rank = np.empty_like(v_order)
    v_rank[v_order] = np.arange(v_order.size)
    s_order = np.lexsort((s_kind, s_level))
    s_rank = np.empty_like(s_order)
    s_rank[s_order] = np.arange(s_order.size)
    CONST = SCALAR_CONSTANTS

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
                if kind == S_ALLSAME:  # its values' padding is masked (a ratio of 1), its first argument is A_∃(α)
                    g.arrays["pad"] = g.arrays["args"][:, 1:] < CONST
            sgroups.append(g)
        levels.append((vgroups, sgroups))

    cand_local, n_cand = _rows_of([p.candidates for p in packs], 1)
    cand_program = np.repeat(np.arange(n_prog), n_cand)
    cand_first = np.cumsum(n_cand) - n_cand  # each program's first entry
    cand_rows = s_rank[_shifted(cand_local, s_off, n_cand)] + CONST if n_prog else np.zeros(0, dtype=np.int64)
    focus_local = np.fromiter((p.focus for p in packs), dtype=np.int64, count=n_prog)
    focus = np.where(focus_local >= 0, v_rank[np.maximum(focus_local + v_off, 0)] if v_rank.size else -1, -1)
    return BatchPlan(
        n_programs=n_prog, program_scene=scenes, levels=levels,
        v_scene=v_scene[v_order], v_program=v_program[v_order], v_step=v_step[v_order],
        unary_keys=unary_keys, binary_keys=binary_keys, predicates=predicates,
        candidate_program=cand_program, candidate_position=np.arange(len(cand_program)) - cand_first[cand_program],
        candidate_rows=cand_rows, candidate_width=max(1, int(n_cand.max(initial=0))),
        focus=focus, labels=[p.labels for p in programs],
        v_rank=v_rank, s_rank=s_rank, v_offset=v_off, s_offset=s_off,
    )


