"""Exact reference semantics for DFOL programs, by enumerating possible worlds.

``brute_force(program, tables)`` computes, for each candidate of the program, the exact
probability that its closed formula is true when every ground atom is an independent coin
with the probability its table gives — what an exact probabilistic-logic system computes.
It enumerates every assignment of the *uncertain* atoms (probability strictly between 0
and 1) the program can touch, evaluating the formula classically in all worlds at once
with numpy, so it handles up to about 20 uncertain atoms.

The engine must agree with it whenever the program is read-once (no uncertain ground
atom occurs twice in the grounding; see ``docs`` and :func:`repeated_predicates`), and
always when every table is 0/1.

Example:
    >>> from nablafol.ir import Predicate, Program, Aggregate, Filter, Top, Quantifier
    >>> red = Predicate("red")
    >>> p = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Top())))
    >>> brute_force(p, {red: [0.5, 0.5]})
    [0.75]
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..errors import ProgramStructureError
from ..ir import (Aggregate, And, Conjoin, Filter, Neg, Node, Not, Or, Predicate, Program, Quantifier, Relate,
                  Shorthand, Top)

MAX_UNCERTAIN_ATOMS = 22


def _tables(tables: Mapping) -> dict[Predicate, np.ndarray]:
    out = {}
    for k, v in tables.items():
        arr = np.asarray(v.detach().cpu() if hasattr(v, "detach") else v, dtype=np.float64)
        pred = k if isinstance(k, Predicate) else Predicate(str(k), arity=arr.ndim)
        out[pred] = arr
    return out


def _scene_size(tables: dict[Predicate, np.ndarray], n_objects: int | None) -> int:
    if n_objects is not None:
        return int(n_objects)
    sizes = {t.shape[0] for t in tables.values()}
    if len(sizes) != 1:
        raise ProgramStructureError(f"tables disagree on the number of objects: {sorted(sizes)}")
    return sizes.pop()


def uncertain_atoms(program: Program, tables: Mapping) -> int:
    """How many ground atoms of ``program``'s predicates are uncertain (strictly between 0 and 1) in
    ``tables``: :func:`brute_force` enumerates ``2 ** that`` worlds, refused above
    ``MAX_UNCERTAIN_ATOMS``."""
    tables = _tables(tables)
    return sum(int(((tables[p] > 0) & (tables[p] < 1)).sum()) for p in program.predicates() if p in tables)


def brute_force(program: Program, tables: Mapping, n_objects: int | None = None) -> list[float]:
    """Exact probability of each candidate of ``program`` over one scene's ``tables``."""
    tables = _tables(tables)
    n = _scene_size(tables, n_objects)
    preds = program.predicates()
    missing = [p.name for p in preds if p not in tables]
    if missing:
        raise ProgramStructureError(f"no table for predicates {missing}")
    # each uncertain ground atom gets one bit of the world index
    uncertain = [(p, idx) for p in preds for idx in np.ndindex(tables[p].shape)
                 if 0.0 < tables[p][idx] < 1.0]
    k = len(uncertain)
    if k > MAX_UNCERTAIN_ATOMS:
        raise ProgramStructureError(f"{k} uncertain ground atoms: too many worlds to enumerate (max {MAX_UNCERTAIN_ATOMS})")
    worlds = 1 << k
    bits = (np.arange(worlds)[:, None] >> np.arange(k)[None, :]) & 1 if k else np.zeros((1, 0), dtype=np.int64)
    weight = np.ones(worlds)
    truth: dict[Predicate, np.ndarray] = {}
    for p in preds:  # atom truth in every world: shape table.shape + (worlds,)
        truth[p] = np.broadcast_to((tables[p] >= 1.0)[..., None], tables[p].shape + (worlds,)).copy()
    for b, (p, idx) in enumerate(uncertain):
        on = bits[:, b].astype(bool)
        truth[p][idx] = on
        prob = tables[p][idx]
        weight *= np.where(on, prob, 1.0 - prob)

    memo: dict[Node, np.ndarray] = {}

    def att(node) -> np.ndarray:  # (n, worlds) bool
        if node in memo:
            return memo[node]
        if isinstance(node, Top):
            out = np.ones((n, worlds), dtype=bool)
        elif isinstance(node, Filter):
            out = truth[node.predicate] & att(node.input)
        elif isinstance(node, Neg):
            out = ~att(node.input)
        elif isinstance(node, Conjoin):
            out = att(node.left) & att(node.right)
        elif isinstance(node, Relate):
            rel = np.ones((n, n, worlds), dtype=bool)
            for a in node.atoms:
                t = truth[a.predicate]
                rel &= t.transpose(1, 0, 2) if a.reverse else t
            both = rel & att(node.input)[None, :, :]
            out = _quantify(both, node.quantifier, axis=1)
        else:
            raise ProgramStructureError(f"unknown attention node {type(node).__name__}")
        memo[node] = out
        return out

    def tru(node) -> np.ndarray:  # (worlds,) bool
        if isinstance(node, Shorthand):
            node = node.expanded()
        if isinstance(node, Aggregate):
            return _quantify(att(node.input), node.quantifier, axis=0)
        if isinstance(node, Not):
            return ~tru(node.input)
        if isinstance(node, And):
            return np.logical_and.reduce([tru(t) for t in node.inputs])
        if isinstance(node, Or):
            return np.logical_or.reduce([tru(t) for t in node.inputs])
        raise ProgramStructureError(f"unknown truth node {type(node).__name__}")

    return [float(weight[tru(t)].sum()) for t in program.truths()]


def _quantify(values: np.ndarray, q: Quantifier, axis: int) -> np.ndarray:
    if q is Quantifier.EXISTS:
        return values.any(axis=axis)
    if q is Quantifier.FORALL:
        return values.all(axis=axis)
    return ~values.any(axis=axis)


def repeated_predicates(program: Program) -> set[Predicate]:
    """Predicates whose ground atoms may occur more than once in the program's grounding
    (:meth:`nablafol.ir.Program.repeated_predicates`). Making these predicates certain (0/1)
    makes the program read-once, the condition under which the engine's result is exact."""
    return set(program.repeated_predicates())
