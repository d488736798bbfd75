"""Exact answers by knowledge compilation: a question's grounding as an arithmetic circuit.

Exact mode's Shannon expansion (:mod:`nablafol.engine.exact`) costs ``2^k`` runs of the fast
path for ``k`` repeated uncertain atoms. Here the grounded formula of each candidate is
compiled instead, once per question and *certainty pattern* (which atoms of its scene are
certainly true, certainly false, or uncertain), into a circuit whose value is the exact
probability, evaluated as batched torch layers over any number of probability assignments:

1. **Grounding** (:func:`ground`): the formula over the scene's objects as a hash-consed
   Boolean DAG (and / or / not over one variable per uncertain atom; certain atoms are
   constants and fold away), the same semantics as :func:`nablafol.testing.brute_force`.
2. **Compilation** (:func:`compile_circuit`): a decision-DNNF, built top-down. An ``and`` /
   ``or`` whose children share no variable splits into independent components (a
   decomposable node); one connected component branches on its most shared variable
   (Shannon expansion, ``x ? F|x : F|¬x``), each branch simplified by the value. Branches are
   cached by their residual formula (equal residuals are one node, by hash-consing): the read-
   once parts never branch, and only the repeated atoms do, once per distinct residual.
3. **Arithmetic** (:class:`Circuit`): every compiled node gives two arithmetic nodes, its
   probability and its complement's, from sums and products only: a decision node is
   ``p·F1 + (1 - p)·F0`` (deterministic), a decomposable ``and`` is a product, its complement
   ``¬L + L·¬R`` (a deterministic sum, split in halves so depth stays logarithmic), and ``or``
   the dual. Literals are the leaves ``p`` and ``1 - p``. The complement is computed, never
   taken as ``1 - P``, so it stays exact near 1. Smoothness is not needed: weights of a
   variable's two literals sum to one.
4. **Layers**: every sum and product has two children; nodes are grouped by depth, and a
   layer is two row gathers and one addition (products, in log space) or log-add-exp (sums)
   over a node-major ``(nodes, B)`` buffer, as KLay lays circuits out. Log space because the engine's answers are log-probabilities and a ``∀`` over
   many objects underflows a float32 product; the price is an ``exp``/``log`` per sum node.

    >>> from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Relate, Top
    >>> red, on = Predicate("red"), Predicate("on", arity=2)
    >>> hop = Program.yes_no(Aggregate(Quantifier.EXISTS, Relate.of(on, Quantifier.EXISTS, Filter(red, Top()))))
    >>> layout = TableLayout(hop.predicates(), 2)
    >>> pattern = layout.pattern({red: [0.0, 0.5], on: [[0.0, 1.0], [1.0, 1.0]]})
    >>> circuit = compile_circuit(hop, layout, pattern)
    >>> log_p = torch.log(torch.tensor([[0.5], [0.25]], dtype=torch.float64))  # two assignments of its one variable
    >>> [round(v, 6) for v in circuit.evaluate(log_p)[0][:, 0].exp().tolist()]
    [0.5, 0.25]
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import torch

from nablafol.caching import bounded_cache, weighted_cache
from nablafol.engine.planning import request_key
from nablafol.errors import ProgramStructureError, ShapeError
from nablafol.engine.lowering import OPERATORS, Operator
from nablafol.engine.planning import ProgramPlan
from nablafol.ir import Predicate, Program
from nablafol.numerics import log1mexp

__all__ = ["TableLayout", "Circuit", "CircuitTooLarge", "NoGrounding", "CircuitJobs", "compile_circuit", "ground", "CircuitCache",
           "answer_by_circuits", "padded", "MAX_CIRCUIT_NODES",
           "FALSE_ATOM", "TRUE_ATOM", "UNCERTAIN_ATOM"]

#: Arithmetic nodes one question's circuit may have: past it the compilation stops (the budget per question)
MAX_CIRCUIT_NODES = 500_000
#: Values (nodes × assignments) one evaluation's buffer holds at most: more assignments run in turn
BUFFER_VALUES = 1 << 24
#: Codes of a certainty pattern: an atom certainly false, certainly true, or uncertain
FALSE_ATOM, TRUE_ATOM, UNCERTAIN_ATOM = 0, 1, 2


class CircuitTooLarge(ProgramStructureError):
    """The compilation of one question went past its budget of arithmetic nodes."""


class NoGrounding(ProgramStructureError):
    """A node kind the grounding does not know (one registered by a user): Shannon expansion,
    which runs the node's own lowering, answers it instead."""


class TableLayout:
    """Where each ground atom of a program's predicates sits in one flat vector: the tables in
    ``predicates`` order, a unary table as its ``n`` entries, a binary one as its ``n × n``
    entries row by row. A certainty pattern and the probabilities a circuit reads are such vectors."""

    def __init__(self, predicates: Sequence[Predicate], n_objects: int):
        self.predicates, self.n = tuple(predicates), int(n_objects)
        self.offset, at = {}, 0
        for p in self.predicates:
            self.offset[p] = at
            at += self.n ** p.arity
        self.size = at

    def pattern(self, tables: Mapping[Predicate, object]) -> np.ndarray:
        """The certainty pattern of probability tables (``{predicate: array}``, probabilities):
        ``uint8`` codes, :data:`FALSE_ATOM` at 0, :data:`TRUE_ATOM` at 1, else
        :data:`UNCERTAIN_ATOM`."""
        flat = np.concatenate([np.asarray(tables[p], dtype=np.float64)[(slice(0, self.n),) * p.arity].reshape(-1)
                               for p in self.predicates] or [np.zeros(0)])
        out = np.full(flat.shape, UNCERTAIN_ATOM, dtype=np.uint8)
        out[flat <= 0.0] = FALSE_ATOM
        out[flat >= 1.0] = TRUE_ATOM
        return out


# ---------------------------------------------------------------------------------------------
# Grounding: a hash-consed Boolean DAG

_FALSE, _TRUE = 0, 1
_VAR, _NOT, _AND, _OR, _CONST = "v", "n", "a", "o", "c"


class _Formulas:
    """Boolean formulas as numbered nodes; equal formulas (up to the order of an and's / or's
    children) are one node. ``mask[i]``: the variables of node ``i``, as bits of an int."""

    def __init__(self):
        self.kind, self.kids, self.mask = [_CONST, _CONST], [(), ()], [0, 0]
        self.index: dict = {}

    def _node(self, kind: str, kids: tuple, mask: int) -> int:
        key = (kind, kids)
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.kind)
            self.kind.append(kind)
            self.kids.append(kids)
            self.mask.append(mask)
        return found

    def var(self, v: int) -> int:
        return self._node(_VAR, (v,), 1 << v)

    def neg(self, f: int) -> int:
        if f <= _TRUE:
            return 1 - f
        if self.kind[f] == _NOT:
            return self.kids[f][0]
        return self._node(_NOT, (f,), self.mask[f])

    def junction(self, kind: str, fs) -> int:
        """``and`` (``kind`` :data:`_AND`) or ``or`` of ``fs``, flattened and simplified."""
        unit, zero = (_TRUE, _FALSE) if kind == _AND else (_FALSE, _TRUE)
        kids = set()
        for f in fs:
            if f == zero:
                return zero
            if f == unit:
                continue
            if self.kind[f] == kind:
                kids.update(self.kids[f])
            else:
                kids.add(f)
        if not kids:
            return unit
        if len(kids) == 1:
            return kids.pop()
        mask = 0
        for f in kids:
            mask |= self.mask[f]
        return self._node(kind, tuple(sorted(kids)), mask)

    def restrict(self, f: int, v: int, value: bool, memo: dict) -> int:
        """``f`` with variable ``v`` set to ``value``, simplified."""
        if not self.mask[f] >> v & 1:
            return f
        got = memo.get(f)
        if got is not None:
            return got
        kind = self.kind[f]
        if kind == _VAR:
            got = _TRUE if value else _FALSE
        elif kind == _NOT:
            got = self.neg(self.restrict(self.kids[f][0], v, value, memo))
        else:  # children without v are kept as they are (no call)
            mask = self.mask
            got = self.junction(kind, [self.restrict(g, v, value, memo) if mask[g] >> v & 1 else g
                                       for g in self.kids[f]])
        memo[f] = got
        return got


class _GroundRows:
    """What an operator's ``ground`` reads of one plan row (the reader
    :mod:`~nablafol.engine.lowering` describes): the formulas of the rows it reads, one per object
    for an attention, over one certainty pattern; ``all`` / ``any`` / ``neg`` build new ones."""

    def __init__(self, plan: ProgramPlan, layout: TableLayout, pattern: np.ndarray):
        self.plan, self.layout, self.pattern = plan, layout, pattern
        self.formulas = _Formulas()
        self.true = _TRUE
        self.positions: list[int] = []  # variable -> its atom's place in the layout
        self.var_of: dict[int, int] = {}
        self.vec: list = []  # each vector row's formulas, then each scalar row's
        self.sca: list = []
        self.atoms = [[] for _ in range(len(plan.v))]  # a relate row's (binary predicate, reversed)
        for row, predicate, reverse in plan.a.tolist():
            self.atoms[row].append((plan.binary[predicate], reverse))
        self.args = [[] for _ in range(len(plan.s))]  # the truths a scalar row combines, in order
        for row, truth in plan.e[np.argsort(plan.e[:, 0], kind="stable")].tolist():
            self.args[row].append(truth)
        self.at, self.row = -1, None  # the plan row being grounded: its number, its columns

    def atom(self, predicate: Predicate, *objects: int) -> int:
        n, at = self.layout.n, self.layout.offset[predicate]
        place = at + (objects[0] * n + objects[1] if len(objects) == 2 else objects[0])
        code = self.pattern[place]
        if code != UNCERTAIN_ATOM:
            return _TRUE if code == TRUE_ATOM else _FALSE
        v = self.var_of.get(place)
        if v is None:
            v = self.var_of[place] = len(self.positions)
            self.positions.append(place)
        return self.formulas.var(v)

    def all(self, fs) -> int:
        return self.formulas.junction(_AND, fs)

    def any(self, fs) -> int:
        return self.formulas.junction(_OR, fs)

    def neg(self, f: int) -> int:
        return self.formulas.neg(f)

    def objects(self) -> range:
        return range(self.layout.n)

    def vector(self, name: str) -> list[int]:
        return self.vec[self.row[_INPUT_COLUMN[name]]]

    def unary(self) -> list[int]:
        predicate = self.plan.unary[self.row[4]]
        return [self.atom(predicate, x) for x in self.objects()]

    def relation(self) -> list[list[int]]:
        """The conjunction of the row's atoms at each pair ``(x, y)``, as rows ``x``."""
        atoms = self.atoms[self.at]
        return [[self.all([self.atom(p, *((y, x) if reverse else (x, y))) for p, reverse in atoms])
                 for y in self.objects()] for x in self.objects()]

    def truths(self) -> list[int]:
        return [self.sca[t] for t in self.args[self.at]]


_INPUT_COLUMN = {"in0": 2, "in1": 3, "vin": 2}  # where a row of the plan names the rows it reads


def ground(program: Program, layout: TableLayout, pattern: np.ndarray) -> tuple[_Formulas, list[int], list[int]]:
    """The candidates' ground formulas: the DAG, each candidate's root then, where the program
    has a focus, the focus attention's root at each object, and each variable's place in the
    layout. Each row of the program's plan is grounded by its operator (:meth:`Operator.ground`),
    the attentions first (no attention reads a truth)."""
    plan = ProgramPlan.of(program)
    rows = _GroundRows(plan, layout, pattern)
    for table, out in ((plan.v, rows.vec), (plan.s, rows.sca)):
        for at, row in enumerate(table.tolist()):
            operator = OPERATORS[row[0]]
            if type(operator).ground is Operator.ground:
                raise NoGrounding(f"no grounding for the rows of operator {operator.name!r}")
            rows.at, rows.row = at, row
            out.append(operator.ground(rows))
    roots = [rows.sca[r] for r in plan.candidates.tolist()]
    if plan.focus >= 0:
        roots += rows.vec[plan.focus]
    return rows.formulas, roots, rows.positions


# ---------------------------------------------------------------------------------------------
# Compilation: decision-DNNF, written directly as an arithmetic circuit of sums and products

_ONE, _ZERO = 0, 1  # arithmetic constants: log 1 and log 0
_LEAF, _PRODUCT, _SUM = "l", "*", "+"


class _Arithmetic:
    """Sum and product nodes of two children each over literal leaves, hash-consed and simplified."""

    def __init__(self, max_nodes: int):
        self.kind, self.kids = [_LEAF, _LEAF], [(), ()]
        self.index: dict = {}
        self.max_nodes = max_nodes

    def _node(self, kind: str, kids: tuple) -> int:
        key = (kind, kids)
        found = self.index.get(key)
        if found is None:
            if len(self.kind) >= self.max_nodes:
                raise CircuitTooLarge(f"the circuit passed {self.max_nodes} nodes")
            found = self.index[key] = len(self.kind)
            self.kind.append(kind)
            self.kids.append(kids)
        return found

    def literal(self, v: int, positive: bool) -> int:
        return self._node(_LEAF, (v, positive))

    def product(self, a: int, b: int) -> int:
        if a == _ZERO or b == _ZERO:
            return _ZERO
        if a == _ONE or b == _ONE:
            return b if a == _ONE else a
        return self._node(_PRODUCT, (a, b) if a < b else (b, a))

    def sum(self, a: int, b: int) -> int:
        if a == _ZERO or b == _ZERO:
            return b if a == _ZERO else a
        return self._node(_SUM, (a, b) if a < b else (b, a))


class _Compiler:
    def __init__(self, formulas: _Formulas, max_nodes: int):
        self.f, self.ac = formulas, _Arithmetic(max_nodes)
        self.done: dict[int, tuple[int, int]] = {_TRUE: (_ONE, _ZERO), _FALSE: (_ZERO, _ONE)}
        # restrictions by (variable, value), kept across decisions: a sub-formula met under several
        # decisions on one variable is restricted once (restriction is a function of the node alone)
        self.restricted: dict[tuple[int, bool], dict] = {}

    def compile(self, node: int) -> tuple[int, int]:
        """``node``'s (probability, complement) as arithmetic nodes."""
        got = self.done.get(node)
        if got is not None:
            return got
        f, kind = self.f, self.f.kind[node]
        if kind == _VAR:
            v = f.kids[node][0]
            got = (self.ac.literal(v, True), self.ac.literal(v, False))
        elif kind == _NOT:
            pos, neg = self.compile(f.kids[node][0])
            got = (neg, pos)
        else:
            kids = f.kids[node]
            groups = _components([f.mask[g] for g in kids])
            if len(groups) > 1:
                got = self._decomposed(kind, [self._connected(kind, [kids[i] for i in g]) for g in groups])
            else:
                got = self._decided(node)
        self.done[node] = got
        return got

    def _connected(self, kind: str, kids: list[int]) -> tuple[int, int]:
        """The ``and`` (or ``or``) of ``kids``, one component already: compiled without
        looking for components again."""
        if len(kids) == 1:
            return self.compile(kids[0])
        node = self.f.junction(kind, kids)
        got = self.done.get(node)
        if got is None:
            got = self.done[node] = self._decided(node)
        return got

    def _decomposed(self, kind: str, parts: list) -> tuple[int, int]:
        """The ``and`` (or ``or``) of independent parts: a product, and its complement as a
        deterministic sum, halving so that the depth grows with the log of the parts."""
        if len(parts) == 1:
            return parts[0]
        half = len(parts) // 2
        (lp, ln), (rp, rn) = self._decomposed(kind, parts[:half]), self._decomposed(kind, parts[half:])
        if kind == _AND:  # ¬(L ∧ R) = ¬L + L·¬R
            return self.ac.product(lp, rp), self.ac.sum(ln, self.ac.product(lp, rn))
        return self.ac.sum(lp, self.ac.product(ln, rp)), self.ac.product(ln, rn)  # L ∨ R = L + ¬L·R

    def _decided(self, node: int) -> tuple[int, int]:
        """Shannon expansion on the variable most of ``node``'s children share."""
        f = self.f
        masks = [f.mask[g] for g in f.kids[node]]
        seen = shared = 0
        for m in masks:
            shared |= seen & m
            seen |= m
        v, best, bits = -1, 0, shared
        while bits:
            low = bits & -bits
            b = low.bit_length() - 1
            uses = sum(1 for m in masks if m >> b & 1)
            if uses > best:
                v, best = b, uses
            bits ^= low
        hi = self.compile(f.restrict(node, v, True, self.restricted.setdefault((v, True), {})))
        lo = self.compile(f.restrict(node, v, False, self.restricted.setdefault((v, False), {})))
        yes, no = self.ac.literal(v, True), self.ac.literal(v, False)
        ac = self.ac
        return (ac.sum(ac.product(yes, hi[0]), ac.product(no, lo[0])),
                ac.sum(ac.product(yes, hi[1]), ac.product(no, lo[1])))


def _components(masks: list[int]) -> list[list[int]]:
    """The children (by index) grouped into sets that share no variable (transitively)."""
    groups: list[tuple[int, list[int]]] = []
    for i, m in enumerate(masks):
        merged_mask, merged = m, [i]
        rest = []
        for gm, members in groups:
            if gm & merged_mask:
                merged_mask |= gm
                merged.extend(members)
            else:
                rest.append((gm, members))
        rest.append((merged_mask, merged))
        groups = rest
    return [sorted(members) for _, members in groups]


def compile_circuit(program: Program, layout: TableLayout, pattern: np.ndarray,
                    max_nodes: int = MAX_CIRCUIT_NODES) -> "Circuit":
    """The circuit of ``program``'s candidates over tables of ``pattern`` (:class:`TableLayout`
    codes). Raises :class:`CircuitTooLarge` past ``max_nodes`` arithmetic nodes."""
    if pattern.shape != (layout.size,):
        raise ShapeError(f"a certainty pattern of {pattern.shape} for a layout of {layout.size} atoms")
    formulas, roots, positions = ground(program, layout, pattern)
    compiler = _Compiler(formulas, max_nodes)
    outputs = [compiler.compile(r) for r in roots]
    return Circuit(compiler.ac, outputs, np.asarray(positions, dtype=np.int64), len(program.truths()))


class Circuit:
    """A compiled question: ``positions`` (its variables' places in the layout), and layers of
    sums and products that :meth:`evaluate` runs over a batch of probability assignments. Its
    outputs are the ``candidates`` first, then the focus attention at each object, if any."""

    def __init__(self, ac: _Arithmetic, outputs: list[tuple[int, int]], positions: np.ndarray, candidates: int):
        self.positions, self.candidates = positions, int(candidates)
        live = _reachable(ac, [x for pair in outputs for x in pair])  # increasing ids: children first
        kind = np.frombuffer("".join(ac.kind[i] for i in live).encode(), dtype=np.uint8)
        inner = kind != ord(_LEAF)
        kids = np.asarray([ac.kids[i] for i in live if ac.kind[i] != _LEAF], dtype=np.int64).reshape(-1, 2)
        depth = _depths(len(ac.kind), live, inner, kids)
        # leaves in three runs: positive literals, negative literals, then the constants log 1 and log 0
        leaves = [i for i in live if ac.kind[i] == _LEAF]
        positive = [i for i in leaves if i > _ZERO and ac.kids[i][1]]
        negative = [i for i in leaves if i > _ZERO and not ac.kids[i][1]]
        constants = [i for i in leaves if i <= _ZERO]
        leaves = positive + negative + constants
        order = np.full(len(ac.kind), -1, dtype=np.int64)
        order[leaves] = np.arange(len(leaves))
        self.positive = np.array([ac.kids[i][0] for i in positive], dtype=np.int64)  # each one's variable
        self.negative = np.array([ac.kids[i][0] for i in negative], dtype=np.int64)
        self.constants = [0.0 if i == _ONE else float("-inf") for i in constants]
        # the inner nodes by depth, products before sums within a depth, by id within each
        nodes, is_sum = np.asarray(live, dtype=np.int64)[inner], kind[inner] == ord(_SUM)
        rank = np.lexsort((nodes, is_sum, depth))
        nodes, kids, d, is_sum = nodes[rank], kids[rank], depth[rank], is_sum[rank]
        order[nodes] = len(leaves) + np.arange(len(nodes))
        ends = np.searchsorted(d, np.arange(1, int(d.max(initial=0)) + 1), side="right")
        starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
        splits = starts + np.bincount(d[~is_sum], minlength=len(ends) + 1)[1:]  # a depth's products come first
        edges = order[kids]
        self.layers: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = [  # products', sums' children
            (edges[a:m, 0], edges[a:m, 1], edges[m:b, 0], edges[m:b, 1]) for a, m, b in zip(starts, splits, ends)]
        self.outputs = order[np.asarray(outputs, dtype=np.int64).reshape(-1, 2)]
        self.size = len(leaves) + len(nodes)
        self._on: dict = {}

    def __len__(self) -> int:
        return self.size

    def positions_on(self, device: torch.device) -> torch.Tensor:
        """:attr:`positions` as an index tensor on ``device``, made once."""
        return self._arrays(device)[-1]

    def _arrays(self, device: torch.device):
        got = self._on.get(device)
        if got is None:
            t = lambda a: torch.as_tensor(a, dtype=torch.long, device=device)  # noqa: E731
            got = self._on[device] = (t(self.positive), t(self.negative),
                                      [tuple(t(x) for x in layer) for layer in self.layers], t(self.outputs.reshape(-1)),
                                      t(self.positions))
        return got

    def evaluate(self, log_p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(B, variables)`` log-probabilities of the variables, one row per assignment, to the
        candidates' ``(log P, log(1 - P))``, each ``(B, candidates)``; differentiable."""
        log_p, log_c = self.evaluate_all(log_p)
        return log_p[:, : self.candidates], log_c[:, : self.candidates]

    def evaluate_all(self, log_p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """As :meth:`evaluate`, for every output: the candidates, then the focus at each object.

        Node-major: one ``(nodes, B)`` buffer, each layer's values written below the previous
        ones and read by row gathers (contiguous rows of ``B`` values); no layer copies the buffer.
        A buffer past :data:`BUFFER_VALUES` runs in chunks of assignments (the same values)."""
        rows = max(1, BUFFER_VALUES // max(1, self.size))
        if log_p.shape[0] > rows:
            parts = [self._evaluate(chunk) for chunk in log_p.split(rows)]
            return torch.cat([p for p, _ in parts]), torch.cat([c for _, c in parts])
        return self._evaluate(log_p)

    def _evaluate(self, log_p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        positive, negative, layers, outputs, _ = self._arrays(log_p.device)
        b, n_pos, n_neg = log_p.shape[0], len(positive), len(negative)
        values = log_p.new_empty((self.size, b))
        if n_pos:
            values[:n_pos] = log_p.index_select(1, positive).t()
        if n_neg:  # the complement of only the variables read negatively
            values[n_pos: n_pos + n_neg] = log1mexp(log_p.index_select(1, negative)).t()
        at = n_pos + n_neg
        for constant in self.constants:
            values[at] = constant
            at += 1
        for p_left, p_right, s_left, s_right in layers:
            n_p, n_s = len(p_left), len(s_left)
            if n_p:
                values[at: at + n_p] = values.index_select(0, p_left) + values.index_select(0, p_right)
            if n_s:
                values[at + n_p: at + n_p + n_s] = _log_add_exp(values.index_select(0, s_left),
                                                               values.index_select(0, s_right))
            at += n_p + n_s
        out = values.index_select(0, outputs).t().reshape(b, -1, 2)
        return out[..., 0], out[..., 1]


def _reachable(ac: _Arithmetic, roots: list[int]) -> list[int]:
    """The nodes below ``roots`` (themselves included), by increasing id: a sweep down the ids,
    since every node's children have smaller ids than itself."""
    seen = bytearray(len(ac.kind))
    for r in roots:
        seen[r] = 1
    kinds, kids = ac.kind, ac.kids
    for i in range(len(seen) - 1, -1, -1):
        if seen[i] and kinds[i] != _LEAF:
            a, b = kids[i]
            seen[a] = seen[b] = 1
    return [i for i, x in enumerate(seen) if x]


def _depths(n: int, live: list[int], inner: np.ndarray, kids: np.ndarray) -> np.ndarray:
    """The depth of each inner node of ``live`` (in that order; leaves are depth 0): one past its
    deeper child's."""
    depth = [0] * n
    inner_nodes = [i for i, x in zip(live, inner.tolist()) if x]
    for i, (a, b) in zip(inner_nodes, kids.tolist()):
        da, db = depth[a], depth[b]
        depth[i] = 1 + (da if da > db else db)
    return np.asarray([depth[i] for i in inner_nodes], dtype=np.int64)


def _log_add_exp(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``log(e^a + e^b)``; two ``-inf`` give ``-inf`` with a zero gradient (``torch.logaddexp``'s is
    nan, and its values differ in the last bit with the batch's length: chunks must equal the whole).
    Without a gradient to keep, the same operations in place (the same values, fewer buffers)."""
    top = torch.maximum(a, b).detach()
    top.masked_fill_(torch.isneginf(top), 0.0)
    if not (torch.is_grad_enabled() and (a.requires_grad or b.requires_grad)):
        return a.sub(top).exp_().add_(b.sub(top).exp_()).log_().add_(top)
    total = torch.exp(a - top) + torch.exp(b - top)
    empty = total == 0
    return torch.log(total.masked_fill(empty, 1.0)).masked_fill(empty, float("-inf")) + top


# ---------------------------------------------------------------------------------------------
# A batch's answers by circuits

class CircuitCache:
    """A bounded store of compiled questions, kept by an engine: the circuits of recent questions
    by ``(program, objects, certainty pattern)`` while their summed size (arithmetic nodes) stays
    within ``budget``, each compiled within ``max_nodes`` (past it, ``None`` is kept, weight 1:
    not tried again each step); and the keys of the last ``remembered`` questions asked, so that
    a question asked again (a training step, an epoch) can be told from a new one."""

    def __init__(self, budget: int = 4 * MAX_CIRCUIT_NODES, max_nodes: int = MAX_CIRCUIT_NODES,
                 remembered: int = 1 << 16):
        def compiled(key: tuple) -> Circuit | None:
            program, n, pattern = key
            try:
                circuit = compile_circuit(program, TableLayout(program.predicates(), n),
                                          np.frombuffer(pattern, dtype=np.uint8), max_nodes)
            except (CircuitTooLarge, NoGrounding):
                return None
            self._programs(program)
            return circuit

        self._circuits = weighted_cache(compiled, budget, lambda c: 1 if c is None else max(1, len(c)))
        self._asked = bounded_cache(lambda key: None, remembered)
        # the programs that had a circuit compiled, a look before the keys are made (a superset of
        # those whose circuits are still kept): a batch of other programs skips the warm path at once
        self._programs = weighted_cache(lambda program: True, remembered, lambda _: 1)

    def __call__(self, key: tuple) -> Circuit | None:
        """The circuit of ``key``, compiled now if not kept (``None``: past the node budget)."""
        return self._circuits(key)

    def holds(self, key: tuple) -> bool:
        return self._circuits.holds(key)

    def knows(self, program: Program) -> bool:
        """Whether a circuit of ``program`` was compiled (over some scene size and pattern) lately."""
        return self._programs.holds(program)

    def asked_before(self, key: tuple) -> bool:
        """Whether ``key`` was asked before (among the last ``remembered``); remembers it."""
        misses = self._asked.cache_info().misses
        self._asked(key)
        return self._asked.cache_info().misses == misses

    def cache_info(self):
        return self._circuits.cache_info()


class CircuitJobs:
    """The programs of a batch grouped for circuits: per ``(program, objects, certainty pattern)``,
    the cache key, its programs (rows of the batch) and their flat log-probability vectors."""

    def __init__(self, programs: Sequence[Program], plan, tables, rows: np.ndarray):
        self.keys: list[tuple] = []
        self.members: list[np.ndarray] = []
        self.log_p: list[torch.Tensor] = []
        for (program, n), members in _by_question(programs, plan, tables, rows).items():
            flat = _flat_tables(program, n, plan, tables, members)
            patterns, which = _distinct_rows(_codes(flat.detach()))
            for u, pattern in enumerate(patterns):
                mine = np.nonzero(which == u)[0]
                self.keys.append((program, n, pattern.tobytes()))
                self.members.append(members if len(patterns) == 1 else members[mine])
                self.log_p.append(flat if len(patterns) == 1 else flat[torch.as_tensor(mine, device=flat.device)])

    def keeping(self, keep: Sequence[int]) -> "CircuitJobs":
        """Only the jobs numbered ``keep``."""
        kept = object.__new__(CircuitJobs)
        kept.keys, kept.members, kept.log_p = ([x[j] for j in keep] for x in (self.keys, self.members, self.log_p))
        return kept


def _by_question(programs: Sequence[Program], plan, tables, rows: np.ndarray) -> dict:
    """``rows`` grouped by (program, scene size): by identity first (a batch repeats one program
    object), then equal programs merged."""
    sizes = tables.object_mask.sum(1).cpu().numpy()[plan.program_scene[rows]]
    if not len(rows):
        return {}
    if (len(rows) == len(programs) and isinstance(programs, list) and programs.count(programs[0]) == len(rows)
            and (sizes == sizes[:1]).all()):  # one question (count: a C loop, identity first) over scenes of one size
        return {(programs[0], int(sizes[0])): rows}
    first: dict = {}
    which = np.fromiter((first.setdefault(id(programs[i]), len(first)) for i in rows), dtype=np.int64, count=len(rows))
    if len(first) == 1 and (sizes == sizes[:1]).all():
        return {(programs[rows[0]], int(sizes[0])): rows}
    distinct = [programs[rows[j]] for j in np.unique(which, return_index=True)[1]]
    span = int(sizes.max(initial=0)) + 1
    combined, inverse = np.unique(which * span + sizes, return_inverse=True)
    groups: dict = {}
    for u, c in enumerate(combined.tolist()):
        key, members = (distinct[c // span], c % span), rows[inverse.reshape(-1) == u]
        groups[key] = np.sort(np.concatenate([groups[key], members])) if key in groups else members
    return groups


def _flat_tables(program: Program, n: int, plan, tables, members: np.ndarray) -> torch.Tensor:
    """``(members, layout size)``: the log-probabilities of the programs ``members``, over scenes
    of ``n`` objects, laid out as :class:`TableLayout` of the program's predicates."""
    pid = {p: i for i, p in enumerate(plan.predicates)}
    scenes = plan.program_scene[members]
    parts = []
    for p in program.predicates():
        keys, table = (plan.unary_keys, tables.unary) if p.arity == 1 else (plan.binary_keys, tables.binary)
        at = np.searchsorted(keys, request_key(scenes, pid[p], len(plan.predicates)))
        if len(at) and at[-1] - at[0] == len(at) - 1 and (np.diff(at) == 1).all():  # consecutive rows: a view
            rows = table[int(at[0]): int(at[-1]) + 1]
        else:
            rows = table[torch.as_tensor(at, device=table.device)]
        parts.append(rows[(slice(None),) + (slice(0, n),) * p.arity].reshape(len(members), -1))
    return torch.cat(parts, 1) if parts else tables.object_mask.new_zeros((len(members), 0), dtype=tables.dtype)


def _codes(log_p: torch.Tensor) -> np.ndarray:
    """The certainty pattern (``uint8`` codes, numpy) of log-probabilities: 0 is certainly true,
    ``-inf`` certainly false."""
    if log_p.device.type != "cpu":  # coded where the values are: a quarter (or an eighth) of the bytes to copy
        codes = torch.full(log_p.shape, UNCERTAIN_ATOM, dtype=torch.uint8, device=log_p.device)
        return codes.masked_fill_(log_p == 0, TRUE_ATOM).masked_fill_(torch.isneginf(log_p), FALSE_ATOM).cpu().numpy()
    x = (log_p.float() if log_p.dtype == torch.bfloat16 else log_p).numpy()  # numpy has no bfloat16
    codes = np.full(x.shape, UNCERTAIN_ATOM, dtype=np.uint8)
    codes[x == 0] = TRUE_ATOM
    codes[x == -np.inf] = FALSE_ATOM
    return codes


def _distinct_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, axis=0, return_inverse=True)``: at once where every row is the first (a
    batch's copies of one question mostly share one pattern), else by a hash of each row first
    (sorting long rows costs more than hashing)."""
    if (codes == codes[:1]).all():
        return codes[:1], np.zeros(len(codes), dtype=np.int64)
    weights = np.random.default_rng(0).integers(1, 1 << 62, codes.shape[1], dtype=np.int64)
    hashes = codes.astype(np.int64) @ weights  # wraps around: a hash, checked below
    _, first, which = np.unique(hashes, return_index=True, return_inverse=True)
    which = which.reshape(-1)
    if not (codes == codes[first[which]]).all():  # two patterns share a hash: sort the rows themselves
        patterns, which = np.unique(codes, axis=0, return_inverse=True)
        return patterns, which.reshape(-1)
    return codes[first], which


def answer_by_circuits(cache, jobs: CircuitJobs, width: int, n_objects: int, dtype_like: torch.Tensor):
    """The answers of the jobs whose circuit compiles within the budget: their rows, their
    ``(log P, log(1 - P))`` padded to ``width`` candidates (``-inf`` and ``0`` beyond a program's),
    and their focus over ``n_objects`` (``-inf`` beyond a scene's objects; ``None`` when no
    program has a focus)."""
    rows, log_p, log_c, focus = [], [], [], []
    for key, members, flat in zip(jobs.keys, jobs.members, jobs.log_p):
        circuit = cache(key)
        if circuit is None:
            continue
        p, c = circuit.evaluate_all(flat[:, circuit.positions_on(flat.device)])
        k = circuit.candidates
        rows.append(members)
        log_p.append(padded(p[:, :k], width, float("-inf")))
        log_c.append(padded(c[:, :k], width, 0.0))
        focus.append(padded(p[:, k:], n_objects, float("-inf")))
    if not rows:
        return np.zeros(0, dtype=np.int64), None, None, None
    dtype = dtype_like.dtype
    one = lambda parts: (parts[0] if len(parts) == 1 else torch.cat(parts)).to(dtype)  # noqa: E731
    return np.concatenate(rows) if len(rows) > 1 else rows[0], one(log_p), one(log_c), one(focus)


def padded(t: torch.Tensor, width: int, fill: float) -> torch.Tensor:
    """``t`` with columns of ``fill`` up to ``width`` (itself when as wide)."""
    return t if t.shape[1] == width else torch.nn.functional.pad(t, (0, width - t.shape[1]), value=fill)
