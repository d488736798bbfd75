"""Sound bounds ``[lower, upper]`` on the probability of an answer that is not exact.

The fast path multiplies the probabilities of subformulas as if they were independent; where
they share an uncertain ground atom its answer may be off, by up to 0.5 on generated data. This
module bounds the exact probability instead, in polynomial time, over any tables:

* every ground subformula gets an interval and a *support*, the uncertain ground atoms it
  depends on (empty where the prior already decides it: an exact 0 or 1);
* a conjunction, disjunction or quantifier combines its inputs' intervals by the independent
  rule where their supports are disjoint (independent events), and by the Fréchet–Hoeffding
  bounds (true under any dependence) within each group of inputs connected by shared atoms,
  the groups then independent of each other. ``docs/exactness.md`` derives every rule;
* **anytime**: with a budget ``k``, it conditions on (expands) the ``k`` shared atoms that
  occur most often in a Fréchet combination (ties: the probability nearest 0.5), bounds each
  of the ``2^k`` worlds and mixes the bounds by the worlds' probabilities. The width never
  grows with ``k`` and is zero once every shared atom is expanded.

The meaning bounded is :func:`nablafol.testing.brute_force`'s (every ground atom an independent
coin); bounds are numpy float64 and carry no gradient (a report on an answer, not a loss).

    >>> from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Relate, Top
    >>> red, on = Predicate("red"), Predicate("on", arity=2)
    >>> hop = Program.yes_no(Aggregate(Quantifier.EXISTS, Relate.of(on, Quantifier.EXISTS, Filter(red, Top()))))
    >>> tables = {red: [0.0, 0.5], on: [[0.0, 1.0], [1.0, 1.0]]}
    >>> [b.tolist() for b in program_bounds(hop, tables, budget=0)]  # exact: 0.5, fast path: 0.75
    [[0.5], [1.0]]
    >>> [b.tolist() for b in program_bounds(hop, tables, budget=1)]  # red(1) expanded
    [[0.5], [0.5]]
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import torch

from nablafol.ir import (AllOf, AllSame, Aggregate, AggregateEach, And, AnyOf, AnyOfGroups, Conjoin, Filter, Neg, Node,
                         Not, Or, Pairwise, Predicate, Program, Quantifier, Relate, Shorthand, Top, Truths)
from nablafol.engine.planning import request_key
from nablafol.errors import ProbabilityError, ProgramStructureError

__all__ = ["program_bounds", "answer_bounds", "scene_tables", "shared_atoms", "WORLDS_PER_PASS"]

#: Worlds bounded together in one pass over a formula (memory: a relate's terms are worlds x N x N)
WORLDS_PER_PASS = 256


class _Scene:
    """One scene's tables for a program, its uncertain ground atoms numbered (per predicate, in the
    program's predicate order, then by object indices)."""

    def __init__(self, program: Program, tables: Mapping, n_objects: int | None):
        self.tables: dict[Predicate, np.ndarray] = {}
        for p in program.predicates():
            if p not in tables:
                raise ProgramStructureError(f"no table for predicate {p.name!r}")
            self.tables[p] = np.asarray(tables[p], dtype=np.float64)
        sizes = {np.shape(t)[0] for t in tables.values()}
        if n_objects is None and len(sizes) != 1:
            raise ProgramStructureError(f"tables disagree on the number of objects: {sorted(sizes)}; give n_objects")
        self.n = int(n_objects) if n_objects is not None else sizes.pop()
        self.ids: dict[Predicate, np.ndarray] = {}
        probs = []
        for p, t in self.tables.items():
            if t.shape != (self.n,) * p.arity:
                raise ProgramStructureError(f"table of {p.name!r} is {t.shape}, expected {(self.n,) * p.arity}")
            outside = ~((t >= 0) & (t <= 1))  # NaN too
            if outside.any():
                at = tuple(int(i) for i in np.argwhere(outside)[0])
                raise ProbabilityError(f"table of {p.name!r} has probability {float(t[at])!r} at objects {at}, "
                                       f"outside [0, 1]")
            uncertain = (t > 0) & (t < 1)
            ids = np.full(t.shape, -1, dtype=np.int64)
            ids[uncertain] = np.arange(int(uncertain.sum())) + len(probs)
            probs.extend(t[uncertain].tolist())
            self.ids[p] = ids
        self.probs = np.asarray(probs, dtype=np.float64)  # (A,) the uncertain atoms' probabilities


class _Item:
    """An interval per world and ground formula: ``lo``, ``hi`` ``(W,) + shape``; ``key`` names its
    support (``shape + (A,)`` bool) in the evaluation's table of supports."""

    __slots__ = ("lo", "hi", "key")

    def __init__(self, lo, hi, key):
        self.lo, self.hi, self.key = lo, hi, key


class _Evaluation:
    """One pass over a program's formulas for a set of worlds.

    The first pass (``supports is None``) learns each ground formula's support, and counts how
    often each atom is shared in a Fréchet combination, over two worlds: Kleene's (each atom the
    interval [certain, possible], so every rule computes exact 0/1 values: which formulas are
    decided, with no rounding) and the prior (the tables). Later passes reuse the supports without
    the expanded atoms' columns (``keep``); ``leaves`` gives the atoms' values in the worlds
    (predicate -> ``(W,) + table shape``, or a pair ``(lower, upper)`` of them)."""

    def __init__(self, scene: _Scene, leaves: dict, keep: np.ndarray, supports: dict | None, decisions: dict):
        self.scene, self.leaves, self.keep = scene, leaves, keep
        self.learning = supports is None
        self.supports = {} if supports is None else supports
        self.decisions = decisions  # key -> how its inputs combine, for this ``keep``
        self.shared_count = np.zeros(len(scene.probs), dtype=np.int64)
        self.memo: dict = {}
        first = next(iter(leaves.values()), None)
        self.worlds = 2 if self.learning else 1 if first is None else first.shape[0]

    # -- supports and decisions ------------------------------------------------------------
    def support(self, key) -> np.ndarray:
        s = self.supports[key]
        return s if self.learning else s[..., self.keep]

    def _made(self, key, lo, hi, support) -> _Item:
        if self.learning:  # a formula Kleene's logic decides (world 0: certain or impossible) depends on nothing
            s = support() if callable(support) else support
            s = np.broadcast_to(s, lo.shape[1:] + s.shape[-1:]).copy()
            s[lo[0] == hi[0]] = False
            self.supports[key] = s
        return _Item(lo, hi, key)

    def _decided(self, key, make):
        if key not in self.decisions:
            self.decisions[key] = make()
        return self.decisions[key]

    # -- leaves ----------------------------------------------------------------------------
    def leaf(self, p: Predicate, reverse: bool = False) -> _Item:
        key = ("leaf", p, reverse)
        if key in self.memo:
            return self.memo[key]
        lo, hi = self._values(p)
        if reverse:
            lo, hi = np.swapaxes(lo, 1, 2), np.swapaxes(hi, 1, 2)
        ids = self.scene.ids[p].T if reverse else self.scene.ids[p]
        item = self._made(key, lo, hi, lambda: _one_hot(ids, len(self.scene.probs)))
        self.memo[key] = item
        return item

    def _values(self, p: Predicate) -> tuple[np.ndarray, np.ndarray]:
        """The lower and upper values of ``p``'s atoms in the worlds, ``(W,) + table shape``."""
        v = self.leaves.get(p)
        if v is None:
            v = np.broadcast_to(self.scene.tables[p], (self.worlds,) + self.scene.tables[p].shape)
        return v if isinstance(v, tuple) else (v, v)

    def leaves_of(self, predicates: tuple[Predicate, ...], key) -> _Item:
        """The unary ``predicates`` side by side: ``(W, V, N)``, support ``(V, N, A)``."""
        if key in self.memo:
            return self.memo[key]
        values = [self._values(p) for p in predicates]
        lo, hi = np.stack([v[0] for v in values], 1), np.stack([v[1] for v in values], 1)
        ids = np.stack([self.scene.ids[p] for p in predicates])
        item = self.memo[key] = self._made(key, lo, hi, lambda: _one_hot(ids, len(self.scene.probs)))
        return item

    def lifted(self, item: _Item, key) -> _Item:
        """``item`` with an axis of length one after the worlds' (its support's first axis too)."""
        if self.learning:
            self.supports[key] = self.supports[item.key][None]
        return _Item(item.lo[:, None], item.hi[:, None], key)

    # -- connectives -----------------------------------------------------------------------
    def both(self, key, a: _Item, b: _Item) -> _Item:
        """``a ∧ b`` elementwise (shapes broadcast): independent where the supports are disjoint,
        else ``[max(0, l_a + l_b - 1), min(u_a, u_b)]``."""
        shared = self._decided(key, lambda: (self.support(a.key) & self.support(b.key)).any(-1))
        if self.learning:
            both = self.support(a.key) & self.support(b.key)
            self.shared_count += both.sum(axis=tuple(range(both.ndim - 1)))
        lo = np.where(shared, np.maximum(0.0, a.lo + b.lo - 1.0), a.lo * b.lo)
        hi = np.where(shared, np.minimum(a.hi, b.hi), a.hi * b.hi)
        return self._made(key, lo, hi, lambda: self.support(a.key) | self.support(b.key))

    def negated(self, key, a: _Item) -> _Item:
        if self.learning:
            self.supports[key] = self.supports[a.key]
        return _Item(1.0 - a.hi, 1.0 - a.lo, key)

    def quantified(self, key, terms: _Item, q: Quantifier) -> _Item:
        """``q`` over the last axis of ``terms`` (``(W, G, T)``, support ``(G, T, A)``): the terms
        cut into groups connected by shared atoms, Fréchet within a group, independent across."""
        if q is Quantifier.NOT_EXISTS:
            return self.negated(key, self.quantified(("some", key), terms, Quantifier.EXISTS))
        if not terms.lo.shape[-1]:  # no object: ∃ is false, ∀ true
            empty = np.full(terms.lo.shape[:-1], 0.0 if q is Quantifier.EXISTS else 1.0)
            return self._made(key, empty, empty, lambda: self.support(terms.key).any(1))
        member = self._decided(key, lambda: _components(self.support(terms.key)))  # (G, C, T)
        if self.learning:
            per_atom = self.support(terms.key).sum(1)  # (G, A): terms of a group reading the atom
            self.shared_count += np.maximum(per_atom - 1, 0).sum(0)
        m = member[None]
        if q is Quantifier.EXISTS:  # [max_i l_i, min(1, Σ u_i)] per group; 1 - Π(1 - ·) across
            lo_c = np.where(m, terms.lo[:, :, None, :], 0.0).max(-1)
            hi_c = np.minimum(1.0, np.einsum("gct,wgt->wgc", member, terms.hi))
            lo, hi = 1.0 - np.prod(1.0 - lo_c, -1), 1.0 - np.prod(1.0 - hi_c, -1)
        else:  # ∀: [max(0, Σ l_i - (n - 1)), min_i u_i] per group; Π across
            size = member.sum(-1)[None]
            lo_c = np.maximum(0.0, np.einsum("gct,wgt->wgc", member, terms.lo) - (size - 1))
            hi_c = np.where(m, terms.hi[:, :, None, :], 1.0).min(-1)
            lo, hi = np.prod(lo_c, -1), np.prod(hi_c, -1)
        return self._made(key, lo, hi, lambda: self.support(terms.key).any(1))

    def stacked(self, key, items: Sequence[_Item]) -> _Item:
        """Truths as the terms of one group: ``(W, 1, T)``, support ``(1, T, A)``."""
        lo = np.stack([i.lo for i in items], -1)[:, None, :]
        hi = np.stack([i.hi for i in items], -1)[:, None, :]
        if self.learning:
            self.supports[key] = np.stack([self.support(i.key) for i in items], 0)[None]
        return _Item(lo, hi, key)

    # -- nodes -----------------------------------------------------------------------------
    def attention(self, node: Node) -> _Item:
        """``(W, N)`` per object."""
        if node in self.memo:
            return self.memo[node]
        n, a = self.scene.n, len(self.scene.probs)
        if isinstance(node, Top):
            ones = np.ones((self.worlds, n))
            out = self._made(node, ones, ones, lambda: np.zeros((n, a), dtype=bool))
        elif isinstance(node, Filter):
            out = self.both(node, self.leaf(node.predicate), self.attention(node.input))
        elif isinstance(node, Neg):
            out = self.negated(node, self.attention(node.input))
        elif isinstance(node, Conjoin):
            out = self.both(node, self.attention(node.left), self.attention(node.right))
        elif isinstance(node, Relate):
            rel = self.leaf(node.atoms[0].predicate, node.atoms[0].reverse)
            for j, atom in enumerate(node.atoms[1:]):
                rel = self.both((node, "atoms", j), rel, self.leaf(atom.predicate, atom.reverse))
            y_row = self.lifted(self.attention(node.input), (node, "input"))
            terms = self.both((node, "terms"), rel, y_row)  # (W, N_x, N_y)
            out = self.quantified(node, terms, node.quantifier)
        else:
            raise ProgramStructureError(f"no bounds for attention node {type(node).__name__}")
        self.memo[node] = out
        return out

    def candidates(self, program: Program) -> _Item:
        """``(W, K)``: every candidate of ``program``; the truths of a :class:`Truths` node at once."""
        items = [self.each(c) if isinstance(c, Truths) else self.lifted(self.truth(c), (c, "candidate"))
                 for c in program.candidates]
        if len(items) == 1:
            return items[0]
        return _Item(np.concatenate([i.lo for i in items], 1), np.concatenate([i.hi for i in items], 1), None)

    def each(self, node: Truths) -> _Item:
        """``(W, V)``: the truths of ``node`` side by side, every value in one pass (the same
        rules, on the same inputs, as its truths one by one)."""
        if node in self.memo:
            return self.memo[node]
        if isinstance(node, AggregateEach):  # A_q(Filter_π[α]), or A_q(α ⊙ Neg[Filter_π[1]])
            x_row = self.lifted(self.attention(node.input), (node, "input"))  # (W, 1, N)
            leaves = self.leaves_of(node.predicates, (node, "leaves"))  # (W, V, N)
            if node.negate:
                top = self.lifted(self.attention(Top()), (node, "top"))
                lacks = self.negated((node, "lacks"), self.both((node, "has"), leaves, top))
                body = self.both((node, "body"), x_row, lacks)
            else:
                body = self.both((node, "body"), leaves, x_row)
            out = self.quantified(node, body, node.quantifier)
        elif isinstance(node, Pairwise):  # a_k ∧ b_k
            out = self.quantified(node, self.side_by_side((node, "terms"), [self.each(node.left), self.each(node.right)]),
                                  Quantifier.FORALL)
        elif isinstance(node, AnyOfGroups):  # ∨ over each group, padded with false terms (their own groups)
            inner, sizes = self.each(node.each), np.asarray(node.sizes)
            at = np.cumsum(sizes) - sizes
            index = at[:, None] + np.arange(sizes.max())[None, :]
            valid = np.arange(sizes.max())[None, :] < sizes[:, None]  # (G, T)
            index = np.where(valid, index, 0)
            key = (node, "terms")
            if self.learning:
                self.supports[key] = self.supports[inner.key][index] & valid[..., None]
            terms = _Item(np.where(valid, inner.lo[:, index], 0.0), np.where(valid, inner.hi[:, index], 0.0), key)
            out = self.quantified(node, terms, Quantifier.EXISTS)
        else:
            raise ProgramStructureError(f"no bounds for truths node {type(node).__name__}")
        self.memo[node] = out
        return out

    def side_by_side(self, key, items: Sequence[_Item]) -> _Item:
        """``(W, V)`` items as the terms of ``V`` groups: ``(W, V, T)``, support ``(V, T, A)``."""
        if self.learning:
            self.supports[key] = np.stack([self.support(i.key) for i in items], 1)
        return _Item(np.stack([i.lo for i in items], -1), np.stack([i.hi for i in items], -1), key)

    def truth(self, node: Node) -> _Item:
        """``(W,)``."""
        if node in self.memo:
            return self.memo[node]
        if isinstance(node, (AnyOf, AllOf, AllSame)):  # over a Truths node: its truths at once
            if isinstance(node, AllSame):  # ∃π ∄X: α(X) ∧ ¬π(X)
                each = self.negated((node, "none lacks"), self.each(node.each))
            else:
                each = self.each(node.each)
            q = Quantifier.FORALL if isinstance(node, AllOf) else Quantifier.EXISTS
            out = self._squeezed(self.quantified((node, "grouped"), self.lifted(each, (node, "terms")), q), node)
            self.memo[node] = out
            return out
        if isinstance(node, Shorthand):
            node = node.expanded()
        if node in self.memo:
            return self.memo[node]
        if isinstance(node, Aggregate):
            terms = self.lifted(self.attention(node.input), (node, "terms"))
            out = self._squeezed(self.quantified((node, "grouped"), terms, node.quantifier), node)
        elif isinstance(node, Not):
            out = self.negated(node, self.truth(node.input))
        elif isinstance(node, (And, Or)):
            terms = self.stacked((node, "terms"), [self.truth(t) for t in node.inputs])
            q = Quantifier.FORALL if isinstance(node, And) else Quantifier.EXISTS
            out = self._squeezed(self.quantified((node, "grouped"), terms, q), node)
        else:
            raise ProgramStructureError(f"no bounds for truth node {type(node).__name__}")
        self.memo[node] = out
        return out

    def _squeezed(self, item: _Item, key) -> _Item:
        if self.learning:
            self.supports[key] = self.supports[item.key][0]
        return _Item(item.lo[:, 0], item.hi[:, 0], key)


def _one_hot(ids: np.ndarray, n_atoms: int) -> np.ndarray:
    out = np.zeros(ids.shape + (n_atoms,), dtype=bool)
    where = np.nonzero(ids >= 0)
    out[where + (ids[where],)] = True
    return out


def _components(support: np.ndarray) -> np.ndarray:
    """``(G, T, A)`` supports -> ``(G, C, T)`` bool: the terms of each group cut into components
    connected by shared atoms (component ``c`` is named by its first term, so ``C = T``)."""
    g, t = support.shape[:2]
    if (support.sum(1) <= 1).all():  # no atom in two terms: every term a component of its own
        return np.broadcast_to(np.eye(t, dtype=bool), (g, t, t))
    s = support.astype(np.float32)
    reach = (np.einsum("gta,gsa->gts", s, s) > 0) | np.eye(t, dtype=bool)[None]
    while True:
        r = reach.astype(np.float32)
        grown = np.einsum("gts,gsu->gtu", r, r) > 0
        if (grown == reach).all():
            break
        reach = grown
    first = reach.argmax(-1)  # (G, T): the component's first term
    return first[:, None, :] == np.arange(t)[None, :, None]


def _prior(program: Program, scene: _Scene):
    """The first pass: the supports, per atom how often it is shared where rules combine, and
    each candidate's bounds with nothing expanded (world 1 of its items)."""
    keep = np.ones(len(scene.probs), dtype=bool)
    leaves = {p: (np.stack([(t >= 1).astype(np.float64), t]), np.stack([(t > 0).astype(np.float64), t]))
              for p, t in scene.tables.items()}
    ev = _Evaluation(scene, leaves, keep, None, {})
    return ev, ev.candidates(program)


def shared_atoms(program: Program, tables: Mapping, n_objects: int | None = None) -> np.ndarray:
    """The uncertain atoms that some combination of ``program`` reads in two of its inputs, in
    the order they are expanded (most shared first, then the probability nearest 0.5): indices
    into the scene's uncertain atoms (per predicate in ``program.predicates()`` order)."""
    scene = _Scene(program, tables, n_objects)
    ev, _ = _prior(program, scene)
    return _ranked(ev.shared_count, scene.probs)


def _ranked(count: np.ndarray, probs: np.ndarray) -> np.ndarray:
    shared = np.nonzero(count > 0)[0]
    order = np.lexsort((np.abs(probs[shared] - 0.5), -count[shared]))
    return shared[order]


def program_bounds(program: Program, tables: Mapping, n_objects: int | None = None,
                   budget: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)``, each ``(K,)``: sound bounds on the probability of each candidate of
    ``program`` over one scene's ``tables`` (predicate -> probabilities), conditioning on the
    ``budget`` most shared atoms (``2 ** budget`` worlds, in passes of :data:`WORLDS_PER_PASS`)."""
    if not (type(budget) is int and budget >= 0):
        raise ProgramStructureError(f"budget must be a whole number of atoms >= 0, got {budget!r}")
    scene = _Scene(program, tables, n_objects)
    prior, items = _prior(program, scene)
    expand = _ranked(prior.shared_count, scene.probs)[:budget]
    if not expand.size:
        return _clipped(items.lo[1].copy(), items.hi[1].copy())
    keep = np.ones(len(scene.probs), dtype=bool)
    keep[expand] = False
    owner = _owners(scene, expand)
    decisions: dict = {}
    k = expand.size
    lower = np.zeros(items.lo.shape[1])
    upper = np.zeros(items.lo.shape[1])
    for start in range(0, 1 << k, WORLDS_PER_PASS):
        world = np.arange(start, min(1 << k, start + WORLDS_PER_PASS))
        bits = ((world[:, None] >> np.arange(k)[None, :]) & 1).astype(bool)  # (W, k)
        p = scene.probs[expand]
        weight = np.where(bits, p, 1.0 - p).prod(1)
        leaves = {}
        for pred, (atoms, index) in owner.items():
            v = np.broadcast_to(scene.tables[pred], (len(world),) + scene.tables[pred].shape).copy()
            v[(slice(None),) + index] = bits[:, atoms]
            leaves[pred] = v
        item = _Evaluation(scene, leaves, keep, prior.supports, decisions).candidates(program)
        lower += weight @ item.lo
        upper += weight @ item.hi
    return _clipped(lower, upper)


def _owners(scene: _Scene, expand: np.ndarray) -> dict:
    """Predicate -> (positions in ``expand`` of its atoms, their table indices as a tuple of arrays)."""
    out = {}
    for p, ids in scene.ids.items():
        at = np.nonzero(np.isin(ids, expand))
        if at[0].size:
            atoms = np.searchsorted(np.sort(expand), ids[at])
            order = np.argsort(expand)
            out[p] = (order[atoms], at)
    return out


def _clipped(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounds inside [0, 1] (a sum of world weights may pass 1 by a rounding)."""
    return np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)


def scene_tables(program: Program, plan, tables, i: int) -> tuple[dict, int]:
    """Program ``i``'s tables in its scene, as probabilities (predicate -> numpy float64), and
    the scene's object count: read from the engine's log-probability ``tables`` of ``plan``."""
    scene = int(plan.program_scene[i])
    n = int(tables.object_mask[scene].sum())
    pid = {p: j for j, p in enumerate(plan.predicates)}
    out = {}
    for p in program.predicates():
        keys, table = (plan.unary_keys, tables.unary) if p.arity == 1 else (plan.binary_keys, tables.binary)
        row = int(np.searchsorted(keys, request_key(scene, pid[p], len(plan.predicates))))
        t = table[row].detach().double().exp().cpu().numpy()
        out[p] = t[:n] if p.arity == 1 else t[:n, :n]
    return out, n


def answer_bounds(programs: Sequence[Program], plan, tables, answers, budget: int):
    """``(lower, upper)`` ``(P, K)`` tensors beside ``answers``: an exact answer's probability
    twice, else :func:`program_bounds` of its program conditioning on ``budget`` shared atoms;
    0 at padding."""
    probs = answers.log_probs.detach().double().exp().cpu()
    lower, upper = probs.clone(), probs.clone()
    exact = answers.exact.cpu().numpy()
    for i, program in enumerate(programs):
        if exact[i]:
            continue
        found, n = scene_tables(program, plan, tables, i)
        lo, hi = program_bounds(program, found, n, budget)
        k = program.n_candidates
        lower[i, :k], upper[i, :k] = torch.as_tensor(lo), torch.as_tensor(hi)
    device, dtype = answers.log_probs.device, answers.log_probs.dtype
    return lower.to(device=device, dtype=dtype), upper.to(device=device, dtype=dtype)
