"""Fewer operator groups for a batch: rows moved between the levels their inputs and readers allow.

A batch runs one group of rows per ``(level, operator kind)``, and a row's level is first one more
than its deepest input's. A batch of many distinct programs then meets one kind at several levels
(a ``Filter`` one level after a ``Top`` in one program, after a ``Neg`` in another), and each
extra group is an operator call, forward and backward, with its gathers: the calls of a training
step grew with its programs' variety. :func:`merged_levels` moves each row as late as its
readers allow to a level where its kind already runs, which empties the groups whose rows all
could wait: a row only joins rows of its kind, so no group and no level is added.

What a row computes does not depend on its level or on the rows beside it in its group, so the
answers are the same to the bit; a row read by several others sums their gradients in the order
their groups run, so gradients agree within ``docs/numerics.md``'s tolerance
(``tests/engine/test_engine_leveling.py``).
"""
from __future__ import annotations

import numpy as np

__all__ = ["merged_levels", "fewer_groups"]


def merged_levels(kinds: np.ndarray, levels: np.ndarray, edges: np.ndarray, first: int, last: int) -> np.ndarray:
    """New levels for rows of ``kinds`` at ``levels`` (each one more than its deepest input's):
    ``edges`` ``(E, 2)`` holds ``(reader, input)`` pairs of rows; a row read by none of them may
    run up to ``last``. Every row moves, the rows of later levels first, to the latest level
    before its readers where its kind runs already (its own level at least, where it stays when it
    cannot move): every input stays before its reader, and no group is added. ``first``: the
    lowest level.

        >>> kinds, levels = np.array([0, 1, 2, 1]), np.array([0, 1, 1, 2])
        >>> merged_levels(kinds, levels, np.array([[1, 0], [2, 0], [3, 2]]), 0, 3).tolist()
        [0, 2, 1, 2]
    """
    levels = np.asarray(levels, dtype=np.int64).copy()
    if levels.size == 0:
        return levels
    n_kinds = int(kinds.max()) + 1
    runs = np.zeros((max(int(levels.max()), last) + 1, n_kinds), dtype=np.int64)
    np.add.at(runs, (levels, kinds), 1)
    if int(np.count_nonzero(runs)) == np.unique(kinds).size:  # every kind runs at one level: nothing to merge
        return levels
    start = levels.copy()  # each row is placed when its starting level comes, after its readers
    reader, read = edges[:, 0], edges[:, 1]
    order = np.argsort(start[read], kind="stable")
    reader, read, edge_level = reader[order], read[order], start[read][order]
    rows = np.argsort(start, kind="stable")
    row_level = start[rows]
    latest = np.full(levels.size, last, dtype=np.int64)
    for level in range(int(start.max()), first - 1, -1):
        a, b = np.searchsorted(row_level, [level, level + 1])
        if a == b:
            continue
        here = rows[a:b]
        e0, e1 = np.searchsorted(edge_level, [level, level + 1])
        np.minimum.at(latest, read[e0:e1], levels[reader[e0:e1]] - 1)  # the readers are placed
        to = np.full(here.size, level, dtype=np.int64)
        for target in range(last, level, -1):
            join = (to == level) & (latest[here] >= target) & (runs[target, kinds[here]] > 0)
            to[join] = target
        np.add.at(runs, (levels[here], kinds[here]), -1)
        np.add.at(runs, (to, kinds[here]), 1)
        levels[here] = to
    return levels


def fewer_groups(v_kind, v_level, v_in0, v_in1, s_kind, s_level, e_node, e_arg) -> tuple[np.ndarray, np.ndarray]:
    """A batch's levels (:func:`~nablafol.engine.planning.build_batch_plan`'s arrays) with groups
    merged: attentions among the attention levels (inputs ``v_in0``, ``v_in1``, -1: none), truths
    among the truth levels after them (``e_node`` reads ``e_arg``)."""
    last_vector = int(v_level.max(initial=-1))
    rows = np.arange(len(v_level))
    v_edges = np.concatenate([np.stack([rows[x >= 0], x[x >= 0]], 1) for x in (v_in0, v_in1)])
    return (merged_levels(v_kind, v_level, v_edges, 0, last_vector),
            merged_levels(s_kind, s_level, np.stack([e_node, e_arg], 1), last_vector + 1,
                          int(s_level.max(initial=last_vector + 1))))
