"""Planning, numpy only: each program's rows (:class:`ProgramPlan`, kept per shape by
:class:`Registry`), a batch's concatenated and grouped by ``(level, operator kind)`` (:class:`BatchPlan`)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import NamedTuple, Optional, Sequence

import numpy as np

from nablafol.caching import weighted_cache
from nablafol.errors import ProgramStructureError, ShapeError
from nablafol.engine.leveling import fewer_groups
from nablafol.engine.lowering import OPERATORS, Operator, lowering_of
from nablafol.ir import AnyOfGroups, Pairwise, Predicate, Program, number_predicates

__all__ = ["ProgramPlan", "BatchPlan", "build_batch_plan", "request_key", "split_key"]

NEG_INF = float("-inf")

SCALAR_CONSTANTS = 2  # the scalar store's rows 0 and 1 hold log 1 and log 0 (padding of And / Or)


class PlanBuilder:
    """One program's rows as its nodes' lowerings (:mod:`~nablafol.engine.lowering`) add them:
    vector rows ``(operator, level, first, second, predicate)`` with a relate's atoms beside,
    scalar rows ``(operator, level, attention)`` with the truths they combine beside. A row's
    level is one more than its deepest input's; truths count only truths (all run after the
    attentions, so a batch's groups grow no more with the spread of its programs' depths)."""

    def __init__(self):
        # a child may be an equal but distinct object of an earlier node: found by equality
        self.rows: dict = {}  # node -> its row, a range for a node of many truths
        self.v_rows, self.s_rows = _Rows(5), _Rows(3)
        self.atoms: list = []  # (vector row, local binary predicate, reversed)
        self.edges: list = []  # (n, 2) blocks of (scalar row, scalar input)
        self.steps: list = []  # ProgramPlan.attention_steps
        self.unary_index: dict = {}
        self.binary_index: dict = {}
        self.last_vector_rows: dict = {}  # AggregateEach -> its last vector rows

    def row(self, node):
        """The row of a node already lowered."""
        return self.rows[node]

    def unary(self, predicate: Predicate) -> int:
        """The local number of a unary predicate (:meth:`binary`: of a binary one)."""
        return self.unary_index.setdefault(predicate, len(self.unary_index))

    def binary(self, predicate: Predicate) -> int:
        return self.binary_index.setdefault(predicate, len(self.binary_index))

    def unary_block(self, predicates: tuple) -> np.ndarray:
        numbers = number_predicates(self.unary_index, predicates)
        return np.fromiter(numbers, dtype=np.int64, count=len(numbers))

    def vector(self, operator: Operator, node, first=-1, second=-1, predicate=-1, atoms=()):
        """Add the vector row computing ``node`` from rows ``first``, ``second`` and a unary
        predicate's local number (-1: none); ``atoms``: a relate's (binary predicate, reversed).
        Where one of them is an array, a row per truth of ``node`` (their range)."""
        many = any(isinstance(x, np.ndarray) for x in (first, second, predicate))
        inputs = [i for i in ((int(np.min(x)) if many else x) for x in (first, second)) if i >= 0]
        k = len(node.predicates) if many else 1  # a block's inputs: rows of one level
        rows = self.v_rows.add(k, inputs, operator.id, first, second, predicate)
        self.steps.append((node,) if many else node)  # (node,): a row per predicate, expanded later
        self.atoms.extend((rows.start, p, reverse) for p, reverse in atoms)
        return rows if many else rows.start

    def scalar(self, operator: Operator, attention=-1, truths=(), sizes=None):
        """Add truth rows of ``operator``: one reading the attention row ``attention`` (-1: none)
        or combining the truth rows ``truths``; or many: one per row of an array ``attention``, or
        per group of ``sizes`` consecutive ``truths``. Returns its row, or the range of them."""
        truths = np.asarray(truths, dtype=np.int64)
        counts = [len(truths)] if sizes is None else sizes
        n = len(counts) if len(truths) else np.size(attention)
        rows = self.s_rows.add(n, truths.tolist(), operator.id, attention)
        if len(truths):
            owners = np.repeat(np.arange(rows.start, rows.stop), counts)
            self.edges.append(np.stack([owners, truths], 1))
        return rows if sizes is not None or np.ndim(attention) else rows.start


@dataclass(frozen=True)
class ProgramPlan:
    """A program as row matrices of local indices; -1 in a column: none."""

    v: np.ndarray  # (nv, 5) vector rows: operator (in OPERATORS), level, in0, in1, unary predicate
    a: np.ndarray  # (na, 3) relate atoms: vector row, binary predicate, reversed
    s: np.ndarray  # (ns, 3) scalar rows: operator, level, vector input
    e: np.ndarray  # (ne, 2) the truths scalar rows combine: scalar row, scalar input
    focus: int  # local vector row, -1 when none
    unary: tuple[Predicate, ...]
    binary: tuple[Predicate, ...]
    _steps: Optional[tuple]  # attention_steps, an AggregateEach as (node,); None if kept by shape
    grounding: "GroundingRows" = field(repr=False, compare=False)

    @classmethod
    def of(cls, program: Program) -> "ProgramPlan":
        """``program``'s plan, built anew."""
        if not isinstance(program, Program):
            raise ProgramStructureError(f"expected a nablafol.ir.Program, got "
                                        f"{type(program).__name__} {program!r:.60}")
        plan = PlanBuilder()
        for node in program.nodes():  # each after its inputs
            lowering = lowering_of(type(node))
            if lowering is None:
                raise ProgramStructureError(f"unknown node {type(node).__name__}: no lowering is "
                                            "registered for it")
            plan.rows[node] = lowering(node, plan)
        edges = np.concatenate(plan.edges) if plan.edges else np.zeros((0, 2), dtype=np.int64)
        focus = plan.rows[program.focus] if program.focus is not None else -1
        return cls(plan.v_rows.array(), np.array(plan.atoms, dtype=np.int64).reshape(-1, 3),
                   plan.s_rows.array(), edges, focus, tuple(plan.unary_index),
                   tuple(plan.binary_index), tuple(plan.steps), GroundingRows.of(program, plan))

    @property
    def candidates(self) -> np.ndarray:
        """The local scalar rows of the answers."""
        return self.grounding.roots[:, 1]

    def weight(self) -> int:
        """What keeping it costs, in rows (what the engine's shape cache is bounded by)."""
        tables = (self.v, self.a, self.s, self.e, self.grounding.roots, self.grounding.merges)
        return sum(map(len, tables)) + _PACK_OVERHEAD_ROWS

    @property
    def attention_steps(self) -> tuple:
        """What each vector row computes, in the order of the engine's ``step``: an Attention
        node, or ``(AggregateEach node, predicate)`` for the rows such a node stands for. Only
        of a plan built by :meth:`of`: one kept by shape would name another program's nodes."""
        if self._steps is None:
            raise ProgramStructureError("a plan kept by shape names no program's nodes: take the "
                                        "attention steps of ProgramPlan.of(program)")
        return tuple(step for entry in self._steps for step in (
            ((entry[0], p) for p in entry[0].predicates) if isinstance(entry, tuple) else (entry,)))


@dataclass(frozen=True)
class GroundingRows:
    """What the grounding analysis (:mod:`nablafol.engine.grounding`) needs beyond the rows, in
    local row indices; it counts atoms once per *entry* of ``Program.candidates``:

    * ``roots`` ``(n, 2)``: (entry, scalar row) of every candidate truth;
    * ``merges`` ``(m, 4)``: (entry, vector row, block, group) for the last vector rows of the
      ``AggregateEach`` blocks of an entry that holds many candidates: what these rows pass to
      their shared input is summed within a group (one candidate) and maximized over groups.
    """

    roots: np.ndarray
    merges: np.ndarray

    @classmethod
    def of(cls, program: Program, plan: PlanBuilder) -> "GroundingRows":
        roots, merges = [], []
        for u, c in enumerate(program.candidates):
            rows = plan.row(c)
            if not isinstance(rows, range):
                roots.append(np.array([[u, rows]]))
                continue
            roots.append(_block(len(rows), u, np.arange(rows.start, rows.stop)))
            each, group = c, np.arange(len(rows))
            if isinstance(c, AnyOfGroups):
                each, group = c.each, np.repeat(group, c.sizes)
            inputs = (each.left, each.right) if isinstance(each, Pairwise) else (each,)
            for last in dict.fromkeys(plan.last_vector_rows[x] for x in inputs):  # self-pair: once
                merges.append(_block(len(last), u, np.arange(last.start, last.stop),
                                     last.start, group))
        return cls(roots=np.concatenate(roots).astype(np.int64),
                   merges=np.concatenate(merges) if merges else np.zeros((0, 4), dtype=np.int64))


class _Rows:
    """Rows of a plan table, numbered in order, added in blocks, each one level past its inputs."""

    def __init__(self, width: int):
        self.width, self.parts, self.levels = width, [], []

    def add(self, k: int, inputs: list, operator: int, *columns) -> range:
        level = 1 + max(map(self.levels.__getitem__, inputs), default=-1)
        self.parts.append(_block(k, operator, level, *columns))
        self.levels.extend([level] * k)
        return range(len(self.levels) - k, len(self.levels))

    def array(self) -> np.ndarray:
        return np.concatenate(self.parts) if self.parts else np.zeros((0, self.width), np.int64)


def _block(k: int, *columns) -> np.ndarray:
    """A ``(k, len(columns))`` int64 block of scalar or length-k columns."""
    out = np.empty((k, len(columns)), dtype=np.int64)
    for i, c in enumerate(columns):
        out[:, i] = c
    return out


class _Shape:
    """A shape's key as the plan cache's key, hashed once; ``program`` builds the plan when new."""

    __slots__ = ("key", "program", "_hash")

    def __init__(self, key: tuple, program: Program):
        self.key, self.program, self._hash = key, program, hash(key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return isinstance(other, _Shape) and (self.key is other.key or self.key == other.key)

    def plan(self) -> ProgramPlan:
        return replace(ProgramPlan.of(self.program), _steps=None)


@dataclass
class Group:
    """Rows ``start:stop`` of one level and operator in their store, and the index arrays their
    operator reads (``in0``, ``in1``, ``table``, ``tables``/``reverse``: a relate's atoms, ``vin``,
    ``args``/``pad``: the truths combined and which are padding)."""

    operator: Operator
    start: int
    stop: int
    arrays: dict = field(default_factory=dict)


@dataclass
class BatchPlan:
    """The merged plan of a batch: per level, contiguous groups of one operator kind."""

    n_programs: int
    program_scene: np.ndarray  # (P,) the scene of each program
    levels: list  # per level: (vector groups, scalar groups)
    v_scene: np.ndarray  # scene of each vector row (sorted order)
    v_program: np.ndarray
    v_step: np.ndarray
    unary_keys: np.ndarray  # distinct (scene, predicate id) pairs, sorted (request_key)
    binary_keys: np.ndarray
    predicates: list  # predicate id -> Predicate
    # the answers as entries (program, column, row): a (P, K) matrix of a batch with one open
    # question would be mostly padding
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
    # what executors derive from a plan, made once: a kept plan is run again and again
    derived: dict = field(default_factory=dict, repr=False, compare=False)

    def kept(self, key, make):
        """``make()``, computed once for this plan under the hashable ``key``."""
        if key not in self.derived:
            self.derived[key] = make()
        return self.derived[key]

    @property
    def n_scalars(self) -> int:
        """Scalar rows the batch computes (the store holds the constants before them)."""
        return sum(g.stop - g.start for _, sgroups in self.levels for g in sgroups)

    @property
    def kernel_groups(self) -> int:
        """Operator calls the batch makes."""
        return sum(len(v) + len(s) for v, s in self.levels)


def _padded(owner: np.ndarray, values: np.ndarray, a: int, b: int, fill: int) -> np.ndarray | None:
    """The ``values`` of owner rows ``a:b``, one row each, padded with ``fill`` (None: none)."""
    sel = (owner >= a) & (owner < b)
    if not sel.any():
        return None
    owner, values, n_rows = owner[sel] - a, values[sel].astype(np.int64), b - a
    order = np.argsort(owner, kind="stable")
    owner, values = owner[order], values[order]
    counts = np.bincount(owner, minlength=n_rows)
    pos = np.arange(owner.size) - (np.cumsum(counts) - counts)[owner]
    out = np.full((n_rows, max(1, int(counts.max()))), fill, dtype=np.int64)
    out[owner, pos] = values
    return out


#: Rows of shape plans an engine keeps, the most recently used: bounded by rows, not count,
#: since an open question's plan is a hundred times a yes/no one's
SHAPE_ROWS = 1 << 21
_PACK_OVERHEAD_ROWS = 16  # the arrays and objects of a plan weigh about this many rows


class Registry:
    """Predicate -> small int, per engine, and the plans of the program shapes it met."""

    def __init__(self, cache_rows: int = SHAPE_ROWS):
        self.ids: dict[Predicate, int] = {}
        self.predicates: list[Predicate] = []
        self._shaped = weighted_cache(_Shape.plan, cache_rows, ProgramPlan.weight)

    def packed(self, program: Program) -> Packed:
        """``program``'s shape's plan and the ids of the predicates that fill it in (a program of
        no shape: its own plan)."""
        shape = program.shape() if isinstance(program, Program) else None
        if shape is not None:
            return Packed(self._shaped(_Shape(shape.key, program)), self._ids(shape.unary + shape.binary))
        plan = ProgramPlan.of(program)  # raises, naming it, for what is not a program
        return Packed(plan, self._ids(plan.unary + plan.binary))

    def _ids(self, preds: tuple) -> np.ndarray:
        ids = self.ids
        if not all(map(ids.__contains__, preds)):  # in C: an open question has up to 1,232
            for p in preds:
                if p not in ids:
                    ids[p] = len(self.predicates)
                    self.predicates.append(p)
        return np.fromiter(map(ids.__getitem__, preds), dtype=np.int64, count=len(preds))


class Packed(NamedTuple):
    """One program's plan and the engine-wide ``ids`` of its predicates, unary then binary."""

    plan: ProgramPlan
    ids: np.ndarray


def _stacked(parts: list[np.ndarray], width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The programs' rows stacked (``width`` 0: vectors), their first rows, each row's program."""
    counts = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    rows = np.concatenate(parts) if parts else np.zeros((0, width) if width else 0, dtype=np.int64)
    return rows, np.cumsum(counts) - counts, np.repeat(np.arange(len(parts)), counts)


def _shifted(local: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Local row indices (-1: none) made batch-wide, ``first``: their program's first row."""
    return np.where(local >= 0, local + first, -1)


def request_key(scene, predicate, n_predicates: int):
    """The key of the oracle request ``(scene, predicate id)`` in a plan of ``n_predicates``
    predicates (numbers or arrays), as ``BatchPlan.unary_keys`` and ``binary_keys`` hold them."""
    return scene * max(1, n_predicates) + predicate


def split_key(keys, n_predicates: int) -> tuple:
    """``(scene, predicate id)`` of request keys (:func:`request_key`)."""
    n = max(1, n_predicates)
    return keys // n, keys % n


def _distinct(keys: np.ndarray, bound: int) -> np.ndarray:
    """``np.unique(keys)`` of keys in ``[0, bound)``, by flags where cheaper than sorting."""
    if bound > 8 * keys.size + 4096:
        return np.unique(keys)
    seen = np.zeros(bound, dtype=bool)
    seen[keys] = True
    return np.flatnonzero(seen)


def build_batch_plan(programs: Sequence[Program], scenes: np.ndarray, registry: Registry,
                     predicates: Optional[list] = None) -> BatchPlan:
    """The plan of ``programs``, program ``k`` on scene ``scenes[k]``, numbering ``predicates``
    (those of a batch they came from) or their own."""
    if scenes.size and scenes.min() < 0:
        raise ShapeError(f"scene index {int(scenes.min())} is negative")
    # a program object met again (a compiler hands out one per question text) is looked up once;
    # the list holds them all, so no id comes back for another (a sequence may make its items)
    programs = list(programs)
    by_object = {i: registry.packed(p) for i, p in {id(p): p for p in programs}.items()}
    packs, ids = [by_object[id(p)].plan for p in programs], [by_object[id(p)].ids for p in programs]
    n_prog = len(packs)
    v, v_off, v_program = _stacked([p.v for p in packs], 5)
    a, _, a_program = _stacked([p.a for p in packs], 3)
    s, s_off, s_program = _stacked([p.s for p in packs], 3)
    e, _, e_program = _stacked([p.e for p in packs], 2)
    v_kind, v_level = v[:, 0], v[:, 1]
    v_in0, v_in1 = _shifted(v[:, 2], v_off[v_program]), _shifted(v[:, 3], v_off[v_program])
    v_scene = scenes[v_program] if n_prog else v_program
    v_step = np.arange(len(v_kind)) - v_off[v_program]
    # predicates renumbered in a canonical order: what the oracle is asked depends on this batch
    # alone, not on what the engine met before (a resumed training run equals an uninterrupted one)
    ids, ids_off, _ = _stacked(ids, 0)
    if predicates is None:
        found = [registry.predicates[i] for i in _distinct(ids, len(registry.predicates)).tolist()]
        predicates = sorted(found, key=lambda p: (p.kind, p.name, p.arity))
    rank = np.zeros(len(registry.predicates), dtype=np.int64)
    rank[[registry.ids[p] for p in predicates]] = np.arange(len(predicates))
    ids = rank[ids]
    v_pred = v[:, 4].copy()
    has = v_pred >= 0
    v_pred[has] = ids[v_pred[has] + ids_off[v_program[has]]]
    a_node = a[:, 0] + v_off[a_program]
    binary_off = ids_off + np.fromiter((len(p.unary) for p in packs), dtype=np.int64, count=n_prog)
    a_pred = ids[a[:, 1] + binary_off[a_program]]
    s_kind, s_level = s[:, 0], s[:, 1] + int(v_level.max(initial=-1)) + 1  # truths after attentions
    s_vin = _shifted(s[:, 2], v_off[s_program])
    e_node, e_arg = e[:, 0] + s_off[e_program], e[:, 1] + s_off[e_program]
    v_level, s_level = fewer_groups(v_kind, v_level, v_in0, v_in1, s_kind, s_level, e_node, e_arg)

    u_key_per_node = np.where(has, request_key(v_scene, np.maximum(v_pred, 0), len(predicates)), -1)
    key_bound = request_key(int(scenes.max()) + 1, 0, len(predicates)) if n_prog else 0
    unary_keys = _distinct(u_key_per_node[has], key_bound)
    b_key_per_atom = request_key(v_scene[a_node], a_pred, len(predicates))
    binary_keys = _distinct(b_key_per_atom, key_bound)

    v_order, v_rank, v_runs = _grouped(v_kind, v_level)
    _, s_rank, s_runs = _grouped(s_kind, s_level)
    a_owner, a_req = v_rank[a_node], np.searchsorted(binary_keys, b_key_per_atom)
    e_owner, e_row = s_rank[e_node], s_rank[e_arg] + SCALAR_CONSTANTS

    def vrow(x):
        return np.where(x >= 0, v_rank[np.maximum(x, 0)], -1)

    max_level = int(max(v_level.max(initial=-1), s_level.max(initial=-1)))
    levels = [([], []) for _ in range(max_level + 1)]
    for level, g, orig in v_runs:
        for name, inputs in (("in0", v_in0), ("in1", v_in1)):
            if inputs[orig[0]] >= 0:  # a kind's rows all have the input or none
                g.arrays[name] = vrow(inputs[orig])
        if has[orig[0]]:
            g.arrays["table"] = np.searchsorted(unary_keys, u_key_per_node[orig])
        tables = _padded(a_owner, a_req, g.start, g.stop, len(binary_keys))
        if tables is not None:  # padded with the all-ones table after the oracle's
            g.arrays["tables"] = tables
            g.arrays["reverse"] = _padded(a_owner, a[:, 2], g.start, g.stop, 0).astype(bool)
        levels[level][0].append(g)
    for level, g, orig in s_runs:
        if s_vin[orig[0]] >= 0:
            g.arrays["vin"] = vrow(s_vin[orig])
        args = _padded(e_owner, e_row, g.start, g.stop, 0 if g.operator.pads_with_true else 1)
        if args is not None:  # padded with log 1 (row 0) or log 0 (row 1)
            g.arrays["args"], g.arrays["pad"] = args, args < SCALAR_CONSTANTS
        levels[level][1].append(g)

    cand_local, cand_first, cand_program = _stacked([p.candidates for p in packs], 0)
    cand_position = np.arange(len(cand_program)) - cand_first[cand_program]
    focus_local = np.fromiter((p.focus for p in packs), dtype=np.int64, count=n_prog)
    focus = np.where(focus_local >= 0, v_rank[np.maximum(focus_local + v_off, 0)] if v_rank.size else -1, -1)
    return BatchPlan(
        n_programs=n_prog, program_scene=scenes, levels=levels,
        v_scene=v_scene[v_order], v_program=v_program[v_order], v_step=v_step[v_order],
        unary_keys=unary_keys, binary_keys=binary_keys, predicates=predicates,
        candidate_program=cand_program, candidate_position=cand_position,
        candidate_rows=s_rank[cand_local + s_off[cand_program]] + SCALAR_CONSTANTS,
        candidate_width=int(cand_position.max(initial=0)) + 1,
        focus=focus, labels=[p.labels for p in programs],
        v_rank=v_rank, s_rank=s_rank, v_offset=v_off, s_offset=s_off,
    )


def _grouped(kind: np.ndarray, level: np.ndarray) -> tuple[np.ndarray, np.ndarray, list]:
    """Rows sorted by ``(level, kind)``: the order, the ranks, each run's (level, Group, rows)."""
    order = np.lexsort((kind, level))
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    key = level[order] * len(OPERATORS) + kind[order]
    starts = np.flatnonzero(np.diff(key, prepend=-1)).tolist()
    return order, rank, [(int(level[order[a]]), Group(OPERATORS[kind[order[a]]], a, b), order[a:b])
                  for a, b in zip(starts, starts[1:] + [order.size])]
