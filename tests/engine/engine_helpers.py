"""Shared helpers of the engine tests: a plain classical FOL evaluator and a runner."""
from __future__ import annotations

import numpy as np
import torch

from nablafol.engine import Engine
from nablafol.ir import Aggregate, And, Conjoin, Filter, Neg, Not, Or, Quantifier, Relate, Shorthand, Top
from nablafol.oracle import TableOracle


def classical(node, tables, n, i=None):
    """Truth of a formula over 0/1 tables, by the textbook definitions (no probabilities)."""
    def holds(p, *args):
        return bool(tables[p][args] >= 0.5)

    def q(quantifier, values):
        values = list(values)
        if quantifier is Quantifier.EXISTS:
            return any(values)
        if quantifier is Quantifier.FORALL:
            return all(values)
        return not any(values)

    if isinstance(node, Shorthand):
        node = node.expanded()
    if isinstance(node, Top):
        return True
    if isinstance(node, Filter):
        return holds(node.predicate, i) and classical(node.input, tables, n, i)
    if isinstance(node, Neg):
        return not classical(node.input, tables, n, i)
    if isinstance(node, Conjoin):
        return classical(node.left, tables, n, i) and classical(node.right, tables, n, i)
    if isinstance(node, Relate):
        def related(j):
            return all(holds(a.predicate, *((j, i) if a.reverse else (i, j))) for a in node.atoms)
        return q(node.quantifier, (related(j) and classical(node.input, tables, n, j) for j in range(n)))
    if isinstance(node, Aggregate):
        return q(node.quantifier, (classical(node.input, tables, n, j) for j in range(n)))
    if isinstance(node, Not):
        return not classical(node.input, tables, n)
    if isinstance(node, And):
        return all(classical(t, tables, n) for t in node.inputs)
    if isinstance(node, Or):
        return any(classical(t, tables, n) for t in node.inputs)
    raise TypeError(node)


def run_engine(programs, tables_per_scene, scenes=None, dtype=torch.float32, engine=None, device=None):
    """Evaluate programs with a TableOracle whose tables are on ``device`` (the CPU by default);
    returns the Answers."""
    oracle = TableOracle([{k: torch.as_tensor(np.asarray(v), dtype=dtype, device=device) for k, v in t.items()}
                          for t in tables_per_scene])
    return (engine or Engine())(programs, oracle, scenes)
