"""One program over many scenes: its plan made once and repeated along the scene axis.

A batch that runs one program over ``S`` scenes (a question asked of many images, one program
over perturbed tables) planned as ``S`` programs concatenates, renumbers and sorts ``S`` copies
of the same rows: per-program work, most of such a call. :func:`tiled_plan` instead repeats the
one program's plan: every group of ``k`` rows becomes ``S·k`` rows, the program's rows one scene
after another, which is the order :func:`~nablafol.engine.planning.build_batch_plan` sorts them
into (stable sort by level and operator kind of rows numbered program by program). The result
is the same :class:`~nablafol.engine.planning.BatchPlan`, array for array
(``tests/engine/test_engine_tiling.py`` compares them), computed with a few numpy calls whatever
``S``.
"""
from __future__ import annotations

import itertools
import operator

import numpy as np

from nablafol.caching import weighted_cache
from nablafol.engine.planning import (SCALAR_CONSTANTS, BatchPlan, Group, Registry,
                                      build_batch_plan, request_key)

__all__ = ["tiled_plan", "TiledPlans", "TILED_ARRAYS", "TILED_ROWS", "one_object"]

#: Rows of tiled plans an engine keeps (most recently used): one program run again and again over
#: the same scenes (a question over a fixed set of images, perturbed tables) is planned once, and
#: what the executor derives from its plan (index tensors, oracle requests) is made once too
TILED_ROWS = 1 << 18

#: the group arrays a plan's groups may hold, and how each is repeated: vector rows, scalar rows
#: (past the constants), unary or binary table indices, or values that repeat as they are
TILED_ARRAYS = {"in0": "vector", "in1": "vector", "vin": "vector", "args": "scalar", "table": "unary",
                "tables": "binary", "reverse": "same", "pad": "same"}


def one_object(items: list) -> bool:
    """Whether every item of a non-empty list is its first (the same object, not an equal one): a
    scan that stops at the first other, without the set of ids a whole batch would build."""
    return all(map(operator.is_, items, itertools.repeat(items[0])))


class _RowMap:
    """Where row ``x`` of the one program's sorted store goes for scene ``i``: its group (rows
    ``a:a+k``) becomes rows ``S·a .. S·(a+k)``, scene ``i``'s copy at ``S·a + i·k + (x - a)``."""

    def __init__(self, groups: list, rows: int, scenes: int):
        self.start = np.zeros(rows, dtype=np.int64)
        self.size = np.zeros(rows, dtype=np.int64)
        for g in groups:
            self.start[g.start:g.stop], self.size[g.start:g.stop] = g.start, g.stop - g.start
        self.scenes = scenes

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """``(S,) + x.shape``: every scene's copy of row indices ``x`` (-1 stays -1)."""
        at = np.maximum(x, 0)
        start, size = self.start[at], self.size[at]
        i = np.arange(self.scenes).reshape((-1,) + (1,) * x.ndim)
        out = self.scenes * start + i * size + (at - start)
        return np.where(x >= 0, out, -1)


def _keys(single_keys: np.ndarray, scenes: np.ndarray, n_ids: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct requests of the tiled batch (sorted keys, ``request_key``) and, per scene,
    the key of each of the single plan's requests."""
    per_scene = request_key(scenes[:, None], single_keys[None, :], n_ids)  # single: on scene 0
    if scenes.size < 2 or bool((scenes[1:] > scenes[:-1]).all()):  # ascending scenes: sorted and distinct as they are
        return per_scene.reshape(-1), per_scene
    return np.unique(per_scene), per_scene


def tiled_plan(single: BatchPlan, scenes: np.ndarray, labels) -> BatchPlan:
    """The plan of ``single``'s one program run on each of ``scenes`` (``single`` planned on scene
    0), as :func:`~nablafol.engine.planning.build_batch_plan` plans that batch. ``labels``: the
    program's candidate labels."""
    s_count = int(scenes.shape[0])
    vgroups = [g for vg, _ in single.levels for g in vg]
    sgroups = [g for _, sg in single.levels for g in sg]
    nv, ns = len(single.v_scene), sum(g.stop - g.start for g in sgroups)
    vmap, smap = _RowMap(vgroups, nv, s_count), _RowMap(sgroups, ns, s_count)
    n_ids = len(single.predicates)
    unary_keys, unary_per_scene = _keys(single.unary_keys, scenes, n_ids)
    binary_keys, binary_per_scene = _keys(single.binary_keys, scenes, n_ids)
    unary_at = np.searchsorted(unary_keys, unary_per_scene)  # (S, single's requests): tiled request index
    binary_at = np.concatenate([np.searchsorted(binary_keys, binary_per_scene),
                                np.full((s_count, 1), len(binary_keys), dtype=np.int64)], 1)  # neutral after

    def scalar_rows(x: np.ndarray) -> np.ndarray:
        y = x - SCALAR_CONSTANTS
        return np.where(y >= 0, smap(np.maximum(y, 0)) + SCALAR_CONSTANTS, np.broadcast_to(x, (s_count,) + x.shape))

    def tiled(kind: str, a: np.ndarray) -> np.ndarray:
        if kind == "vector":
            out = vmap(a)
        elif kind == "scalar":
            out = scalar_rows(a)
        elif kind in ("unary", "binary"):
            table = unary_at if kind == "unary" else binary_at
            out = table[np.arange(s_count).reshape((-1,) + (1,) * a.ndim), a]
        else:
            out = np.broadcast_to(a, (s_count,) + a.shape)
        return np.ascontiguousarray(out).reshape((-1,) + a.shape[1:])

    def group(g: Group) -> Group:
        return Group(g.operator, s_count * g.start, s_count * g.stop,
                     {name: tiled(TILED_ARRAYS[name], a) for name, a in g.arrays.items()})

    def per_row(values: np.ndarray, groups: list) -> np.ndarray:
        """A per-row array of the single plan, laid out as the tiled rows are: each group's rows
        once per scene."""
        parts = [np.tile(values[g.start:g.stop], s_count) for g in groups]
        return np.concatenate(parts) if parts else values[:0]

    levels = [([group(g) for g in vg], [group(g) for g in sg]) for vg, sg in single.levels]
    scene_of = lambda groups: np.concatenate(  # noqa: E731
        [np.repeat(scenes, g.stop - g.start) for g in groups]) if groups else np.zeros(0, dtype=np.int64)
    program_of = lambda groups: np.concatenate(  # noqa: E731
        [np.repeat(np.arange(s_count), g.stop - g.start) for g in groups]) if groups else np.zeros(0, dtype=np.int64)
    n_cand = len(single.candidate_rows)
    return BatchPlan(
        n_programs=s_count, program_scene=scenes, levels=levels,
        v_scene=scene_of(vgroups), v_program=program_of(vgroups), v_step=per_row(single.v_step, vgroups),
        unary_keys=unary_keys, binary_keys=binary_keys, predicates=list(single.predicates),
        candidate_program=np.repeat(np.arange(s_count), n_cand),
        candidate_position=np.tile(single.candidate_position, s_count),
        candidate_rows=scalar_rows(single.candidate_rows).reshape(-1), candidate_width=single.candidate_width,
        focus=vmap(single.focus).reshape(-1), labels=[labels] * s_count,
        v_rank=vmap(single.v_rank).reshape(-1), s_rank=smap(single.s_rank).reshape(-1),
        v_offset=np.arange(s_count, dtype=np.int64) * nv, s_offset=np.arange(s_count, dtype=np.int64) * ns,
    )


class TiledPlans:
    """The tiled plans of one engine's registry, kept by ``(program, scenes)`` within
    :data:`TILED_ROWS` rows (a plan heavier than that is made, not kept)."""

    def __init__(self, registry: Registry, rows: int = TILED_ROWS):
        self.registry = registry
        self._kept = weighted_cache(self._tile, rows, _rows)

    def __call__(self, program, scenes: np.ndarray) -> BatchPlan:
        """The plan of ``program`` run on each of ``scenes`` (non-negative scene indices)."""
        return self._kept((program, scenes.tobytes()))

    def _tile(self, key: tuple) -> BatchPlan:
        program, scenes = key
        scenes = np.frombuffer(scenes, dtype=np.int64).copy()
        if len(scenes) == 1:  # one question at a time: its plan kept whole
            return build_batch_plan([program], scenes, self.registry)
        return tiled_plan(self(program, np.zeros(1, dtype=np.int64)), scenes, program.labels)


def _rows(plan: BatchPlan) -> int:
    return len(plan.v_scene) + plan.n_scalars + len(plan.candidate_rows)
