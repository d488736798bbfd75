"""The capturable path (``Engine(fixed_shapes=True)``): a batch run at shapes that repeat, with no host read.

A training step's work is small and launched op by op; an accelerator runs it faster when its
kernels are recorded once and replayed (CUDA graphs, ``torch.compile(mode="reduce-overhead")``).
A recording replays only at the shapes it was made at and cannot contain a host read (``.item()``,
``nonzero``, a copy to the host), so this path changes what decides shapes and what reads values:

* **shape buckets**: every operator group's rows, the programs, their candidates, the oracle's
  requests, the scenes and the objects are padded up to a bucket (:func:`bucket`: a power of two or
  one and a half times one), so batches of different programs of similar sizes run at one shape.
  A padded row repeats its group's first row (its inputs, its tables): it computes a copy that
  nothing reads, so it adds nothing to any answer or gradient. The engine's :class:`ShapeFloors`
  raise a batch's sizes to the largest met for its structure, so that layouts repeat;
* **masks, not data-dependent indexing**: scenes are always masked (an object past a scene's size
  is an exact 0 in every table, as the eager path's padded scenes), and the Q-product runs as
  plain dense passes (the eager CPU path looks at a block's terms to skip its ``-inf`` ones, a
  host read);
* **the batched executor's own loop** (:func:`~nablafol.engine.execution.run_fixed`), but its
  shape is a :class:`Layout` of Python values (what a recording is keyed by) and every index it
  reads is a tensor passed in, the whole plan's uploaded in one copy (pinned, not waiting for the
  device) before the first operator runs: a new batch at a layout met before replays its recording;
* **the oracle's tables checked on the device**: one flag, read once after the batch has run (the
  eager path reads one per table as it arrives); ``validate=False`` reads nothing.

What the batch computes is the eager path's arithmetic on the same values, so answers agree with
it to the bit where the reductions meet the same lengths, and within the tolerance written in
``docs/numerics.md`` otherwise (padding objects changes a vectorized sum's grouping).
"""
from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple, Optional

import numpy as np
import torch

from nablafol import operators as ops
from nablafol.engine.answers import (ANSWER_READING, Tables, answer_reading, asked_table, masked_table,
                                     not_probabilities)
from nablafol.engine.lowering import OPERATORS
from nablafol.engine.planning import BatchPlan, Group, split_key
from nablafol.errors import ProgramStructureError
from nablafol.oracle import scene_sizes

__all__ = ["bucket", "structure_of", "bucketed_sizes", "ShapeFloors", "padded_plan", "padded_requests", "upload",
           "fixed_tables", "trimmed", "Layout", "layout_of", "layout_levels", "dense_q_product",
           "PLAN_ARRAYS"]

NEG_INF = float("-inf")
SCALAR_CONSTANTS = 2  # the scalar store's first rows: log 1 and log 0 (planning's numbering)


def bucket(n: int) -> int:
    """The shape ``n`` rows are padded to: the least of ``2^k`` and ``3·2^(k-1)`` at least ``n``
    (at most a third of the rows are padding); 0 stays 0 (nothing to run).

        >>> [bucket(n) for n in (0, 1, 2, 3, 5, 7, 9, 13, 100)]
        [0, 1, 2, 3, 6, 8, 12, 16, 128]
    """
    if n <= 2:
        return n
    power = 1 << (n - 1).bit_length()
    return power * 3 // 4 if power * 3 // 4 >= n else power


def _repeat_first(size: int, padded: int) -> np.ndarray:
    """Positions of a group's padded rows: its own rows, then its first row again."""
    return np.concatenate([np.arange(size), np.zeros(padded - size, dtype=np.int64)])


def structure_of(plan: BatchPlan) -> tuple:
    """What a plan's run is made of, apart from its sizes: per level, each group's operator, the
    index arrays it reads and its relate columns."""
    def shape(g: Group) -> tuple:
        return g.operator.id, tuple(sorted(g.arrays)), g.arrays["tables"].shape[1] if "tables" in g.arrays else 0
    return tuple((tuple(map(shape, v)), tuple(map(shape, s))) for v, s in plan.levels)


def bucketed_sizes(plan: BatchPlan) -> tuple:
    """The sizes :func:`padded_plan` pads ``plan`` to by default: each group's rows, then the
    programs, the answers' entries, the candidates, the unary and the binary requests, bucketed."""
    sizes = [g.stop - g.start for v, s in plan.levels for g in v + s]
    sizes += [plan.n_programs, len(plan.candidate_rows), plan.candidate_width, len(plan.unary_keys),
              len(plan.binary_keys)]
    return tuple(map(bucket, sizes))


class ShapeFloors:
    """The largest sizes met so far for each plan structure (:func:`structure_of`), and for the
    scenes: a batch padded to at least these runs at the layout of the batches before it, so after
    a few batches of one structure every later one replays their recording. Padding rows, programs,
    candidates, requests or scenes changes no value (padded rows are copies nothing reads); objects
    are left to each batch's bucket (their padding regroups sums, and a run resumed with no floors
    would then differ from one that never stopped). The structures kept are bounded, least recently
    met dropped first."""

    def __init__(self, structures: int = 256):
        self.structures = structures
        self._sizes: dict = {}  # structure -> sizes (insertion order: least recently met first)
        self._scenes = 0

    def sizes(self, plan: BatchPlan) -> tuple:
        """``plan``'s padded sizes: its buckets, raised to the largest met for its structure."""
        key, sizes = structure_of(plan), bucketed_sizes(plan)
        met = self._sizes.pop(key, None)
        sizes = sizes if met is None else tuple(map(max, met, sizes))
        self._sizes[key] = sizes
        if len(self._sizes) > self.structures:
            del self._sizes[next(iter(self._sizes))]
        return sizes

    def scenes(self, n: int) -> int:
        """The scenes ``n`` are padded to: their bucket, raised to the most met."""
        self._scenes = max(self._scenes, bucket(n))
        return self._scenes


def padded_plan(plan: BatchPlan, sizes: Optional[tuple] = None) -> BatchPlan:
    """``plan`` with each operator group's rows, the programs and the candidates padded up to
    ``sizes`` (:func:`bucketed_sizes` by default); the unary and binary requests are padded after
    the plan's own (see :func:`padded_requests`), so a relate's neutral table moves to the binary
    requests' padded end."""
    sizes = bucketed_sizes(plan) if sizes is None else sizes
    padded_to = iter(sizes)
    v_map = np.zeros(len(plan.v_scene), dtype=np.int64)
    s_map = np.arange(plan.n_scalars + SCALAR_CONSTANTS, dtype=np.int64)  # the constants keep their rows
    old_neutral, new_neutral = len(plan.binary_keys), sizes[-1]
    v_source, levels, v_next, s_next = [], [], 0, 0
    for vgroups, sgroups in plan.levels:
        new_v, new_s = [], []
        for g in vgroups:
            size, padded = g.stop - g.start, next(padded_to)
            v_map[g.start:g.stop] = np.arange(v_next, v_next + size)
            rep = _repeat_first(size, padded)
            v_source.append(g.start + rep)
            new_v.append(Group(g.operator, v_next, v_next + padded,
                               _padded_arrays(g, rep, v_map, s_map, old_neutral, new_neutral)))
            v_next += padded
        for g in sgroups:
            size, padded = g.stop - g.start, next(padded_to)
            s_map[SCALAR_CONSTANTS + g.start:SCALAR_CONSTANTS + g.stop] = SCALAR_CONSTANTS + np.arange(s_next,
                                                                                                     s_next + size)
            rep = _repeat_first(size, padded)
            new_s.append(Group(g.operator, s_next, s_next + padded,
                               _padded_arrays(g, rep, v_map, s_map, old_neutral, new_neutral)))
            s_next += padded
        levels.append((new_v, new_s))
    source = np.concatenate(v_source) if v_source else np.zeros(0, dtype=np.int64)
    n_programs, n_entries, width = next(padded_to), next(padded_to), next(padded_to)
    extra = n_programs - plan.n_programs
    # the answers' entries too: a padded one writes its first entry's value into a row past the
    # programs' (cut off by the run: a repeated place would pass its gradient twice)
    entries = _repeat_first(len(plan.candidate_rows), n_entries)
    trash = np.arange(len(entries)) >= len(plan.candidate_rows)
    return replace(
        plan, n_programs=n_programs, levels=levels,
        program_scene=np.concatenate([plan.program_scene, np.zeros(extra, dtype=np.int64)]),
        v_scene=plan.v_scene[source], v_program=plan.v_program[source], v_step=plan.v_step[source],
        candidate_program=np.where(trash, n_programs, plan.candidate_program[entries]),
        candidate_position=np.where(trash, 0, plan.candidate_position[entries]),
        candidate_rows=s_map[plan.candidate_rows][entries], candidate_width=width,
        focus=np.concatenate([np.where(plan.focus >= 0, v_map[np.maximum(plan.focus, 0)], -1),
                              np.full(extra, -1, dtype=np.int64)]),
        labels=list(plan.labels) + [None] * extra,
        v_rank=None, s_rank=None, v_offset=None, s_offset=None, derived={})


def _padded_arrays(g: Group, rep: np.ndarray, v_map, s_map, old_neutral: int, new_neutral: int) -> dict:
    """A group's index arrays in the padded plan's numbering, its padded rows repeating its first."""
    out = {}
    for name, a in g.arrays.items():
        a = a[rep]
        if name in ("in0", "in1", "vin"):  # vector rows
            a = v_map[a]
        elif name == "args":  # scalar rows (the constants stay)
            a = s_map[a]
        elif name == "tables":  # binary requests; the neutral table moved to the bucket's end
            a = np.where(a == old_neutral, new_neutral, a)
        elif name not in ("table", "reverse", "pad"):  # unary requests and flags keep their values
            raise ProgramStructureError(f"fixed shapes: operator {g.operator.name!r} reads index array {name!r}, "
                                        f"which the padded plan does not know how to renumber")
        out[name] = a
    return out


def padded_requests(keys: np.ndarray, plan: BatchPlan, size: int) -> tuple[np.ndarray, np.ndarray, tuple]:
    """The requests of ``keys`` (scene, local predicate) padded up to ``size`` by repeating the
    first, and the distinct predicates they name."""
    scene, pid = split_key(keys, len(plan.predicates))
    distinct, local = np.unique(pid, return_inverse=True)
    rep = _repeat_first(len(keys), size)
    return scene[rep], local.reshape(-1)[rep], tuple(plan.predicates[i] for i in distinct.tolist())


def upload(arrays: list, device) -> list:
    """Integer or bool numpy arrays as tensors on ``device``, in one copy (from pinned memory where
    the device is an accelerator, without waiting for it): each result is a view of one buffer."""
    flat = [np.asarray(a, dtype=np.int64).reshape(-1) for a in arrays]
    host = torch.from_numpy(np.concatenate(flat) if flat else np.zeros(0, dtype=np.int64))
    device = torch.device(device)
    if device.type != "cpu":
        host = host.pin_memory() if torch.cuda.is_available() and device.type == "cuda" else host
        buffer = host.to(device, non_blocking=True)
    else:
        buffer = host
    out, at = [], 0
    for a, f in zip(arrays, flat):
        t = buffer[at:at + f.size].view(np.shape(a))
        out.append(t.bool() if np.asarray(a).dtype == bool else t)
        at += f.size
    return out


def trimmed(tables: Tables, n_objects: int, n_unary: int, n_binary: int, n_scenes: int) -> Tables:
    """The tables of the batch's own requests, scenes and objects (views): what the eager path
    would have asked for (the exactness flags read them)."""
    unary = None if tables.unary is None else tables.unary[:n_unary, :n_objects]
    binary = None if tables.binary is None else tables.binary[:n_binary, :n_objects, :n_objects]
    object_mask = tables.object_mask[:n_scenes, :n_objects]
    return replace(tables, unary=unary, binary=binary, object_mask=object_mask)


def fixed_tables(oracle, requests: dict, validate: bool, scenes: int) -> tuple:
    """The oracle asked for the padded requests (``requests``: arity -> :class:`Requests`), its
    tables padded to the objects' bucket and masked where a scene has fewer objects (``scenes``:
    the scenes padded to), with no value read on the host; with them the flag that some table
    held a value outside ``[0, 1]`` (a 0-dim bool tensor, ``None`` when not validated) and the
    objects the oracle gave."""
    sizes = scene_sizes(oracle.num_objects)
    device = sizes.device
    sizes = torch.nn.functional.pad(sizes, (0, scenes - sizes.shape[0]))  # no scene past the last: no objects
    tables, invalid, n_objects = {}, None, None
    for arity, req in requests.items():
        if not len(req):
            tables[arity] = None
            continue
        tables[arity] = asked_table(oracle, req, arity, device, n_objects)
        n_objects = tables[arity].shape[-1]
    if n_objects is None:  # a batch that asks the oracle nothing: its size is read (the one host read)
        n_objects = int(sizes.max()) if sizes.numel() else 0
    n = bucket(n_objects)
    object_mask = torch.arange(n, device=device)[None, :] < sizes[:, None]  # (scenes, objects)
    for arity, table in tables.items():
        if table is None:
            continue
        table = torch.nn.functional.pad(table, (0, n - table.shape[-1]) * arity, value=NEG_INF)
        tables[arity] = masked_table(table, requests[arity], object_mask)  # padding: an exact 0
        if validate:
            bad = not_probabilities(tables[arity]).any()
            invalid = bad if invalid is None else invalid | bad
    dtype = next((t.dtype for t in tables.values() if t is not None), torch.get_default_dtype())
    return Tables(tables[1], tables[2], object_mask, dtype, True, neutral=False), invalid, n_objects



# --- the run itself: static layout, index tensors as arguments ---------------------------------

class GroupLayout(NamedTuple):
    """What one operator group is, apart from its index tensors: its operator (by number), its first
    row in its store and its size, the names of the index arrays it reads (in the order they are
    passed), and how many relate columns follow them (each a table-rows tensor and a flip tensor)."""

    operator: int
    start: int
    size: int
    names: tuple
    columns: int


class Layout(NamedTuple):
    """A padded batch's shape, all Python values: equal layouts run the same operations at the same
    shapes (what a recording of the run is keyed by); per level, its vector and scalar groups."""

    levels: tuple  # ((vector GroupLayouts), (scalar GroupLayouts)) per level
    vector_rows: int
    programs: int
    candidates: int


#: The plan-wide index arrays a run reads, first in its list of tensors (then ANSWER_READING's)
PLAN_ARRAYS = ("v_scene", "v_program", "v_step", "program_scene")


def layout_of(fixed: BatchPlan) -> tuple[Layout, list]:
    """A padded plan (:func:`padded_plan`) as its :class:`Layout` and the numpy index arrays
    :func:`run_fixed` reads, in the order it reads them."""
    arrays = [getattr(fixed, name) for name in PLAN_ARRAYS] + answer_reading(fixed, fixed.n_programs + 1)
    levels = []
    for vgroups, sgroups in fixed.levels:
        level = []
        for groups in (vgroups, sgroups):
            laid = []
            for g in groups:
                names = tuple(sorted(n for n in g.arrays if n not in ("tables", "reverse")))
                arrays.extend(g.arrays[n] for n in names)
                columns = g.arrays["tables"].shape[1] if "tables" in g.arrays else 0
                for k in range(columns):  # a relate's atoms, column by column, each with where it is reversed
                    arrays.extend((np.ascontiguousarray(g.arrays["tables"][:, k]), g.arrays["reverse"][:, k, None, None]))
                laid.append(GroupLayout(g.operator.id, g.start, g.stop - g.start, names, columns))
            level.append(tuple(laid))
        levels.append(tuple(level))
    return Layout(tuple(levels), len(fixed.v_scene), fixed.n_programs, fixed.candidate_width), arrays


def layout_levels(layout: Layout, index: list) -> tuple[list, list]:
    """:func:`layout_of`'s arrays read back from their tensors ``index``: the plan-wide ones (as
    :data:`PLAN_ARRAYS`, then the answers' reading), and per level the vector and scalar groups, each
    ``(operator, rows, index, columns)``, as :func:`~nablafol.engine.execution.run_fixed` runs them."""
    tensors = iter(index)
    plan_wide = [next(tensors) for _ in range(len(PLAN_ARRAYS) + len(ANSWER_READING))]

    def group(g: GroupLayout) -> tuple:
        arrays = {name: next(tensors) for name in g.names}
        columns = [(next(tensors), next(tensors)) for _ in range(g.columns)]
        return OPERATORS[g.operator], slice(g.start, g.start + g.size), arrays, columns
    return plan_wide, [tuple([group(g) for g in groups] for groups in level) for level in layout.levels]


def dense_q_product(log_r, log_y, mask_x, mask_y, quantifier):
    """The Q-product as plain dense passes (the eager CPU path reads how many terms are ``-inf``)."""
    return ops.q_product(log_r, log_y, mask_x, mask_y, quantifier, block_elements=None)
