"""Each DFOL node kind lowered once: the plan rows a node adds, and what each row's operator means.

A plan (:mod:`~nablafol.engine.planning`) has *vector* rows (an attention) and *scalar* rows (a
truth, ``(log p, log(1 - p))``). Each row names its :class:`Operator`, which says what its rows
mean to each consumer through a reader of the same methods (``vector``, ``unary``, ``relation``,
``truths``, ``pad``, ``objects``): values (``run``), Kleene values and uses (``kleene``,
``count_down``, for :mod:`~nablafol.engine.grounding`), ground formulas (``ground``, for
:mod:`~nablafol.engine.circuits`). A new node kind is one class, one :func:`register_lowering`
and, if no operator computes it, one :class:`Operator` (``tests/engine/test_engine_new_node.py``).

Example: the operators of ``A_∃(Filter_red[1])``'s rows, in the order a level runs them:
    >>> from nablafol.ir import Aggregate, Filter, Predicate, Program, Top
    >>> from nablafol.engine.planning import ProgramPlan
    >>> red = Filter(Predicate("red"), Top())
    >>> plan = ProgramPlan.of(Program.yes_no(Aggregate(Quantifier.EXISTS, red)))
    >>> [OPERATORS[k].name for k in plan.v[:, 0].tolist() + plan.s[:, 0].tolist()]
    ['top', 'filter', 'aggregate ∃']
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np
import torch

from nablafol import operators as ops
from nablafol.errors import ProgramStructureError
from nablafol.ir import (Aggregate, AggregateEach, AllOf, AllSame, And, AnyOf, AnyOfGroups,
                         Conjoin, Filter, Neg, Not, Or, Pairwise, Relate, Top)
from nablafol.operators import Quantifier

__all__ = ["Operator", "OPERATORS", "register_lowering", "lowering_of", "TOP",
           "IMPOSSIBLE", "OPEN", "CERTAIN"]

CAP = 2  # use counts are capped here: all that matters to exactness is "twice or more"
#: Kleene's values (int8): ``and`` is their minimum, ``or`` their maximum, ``not x`` ``CERTAIN - x``
IMPOSSIBLE, OPEN, CERTAIN = 0, 1, 2

#: Every operator, by its number in a plan's row matrices (the order a level runs them in)
OPERATORS: list["Operator"] = []


class Operator:
    """What the rows of one kind compute, registered in :data:`OPERATORS` when made."""

    vector = True  # its rows are attentions, else truths
    pads_with_true = True  # rows of fewer truths than their group's widest pad with log 1, else 0

    def __init__(self, name: str):
        self.name = name
        self.id = len(OPERATORS)
        OPERATORS.append(self)

    def __repr__(self) -> str:
        return f"Operator({self.name!r})"

    def run(self, rows) -> torch.Tensor:
        """The rows' values: ``(G, N)`` log-attentions, or ``(G, 2)`` truth pairs."""
        raise NotImplementedError

    def kleene(self, rows) -> torch.Tensor:
        """Kleene's values of the rows (:data:`IMPOSSIBLE`, :data:`OPEN` or :data:`CERTAIN`):
        ``(G, N)`` per object, or ``(G,)`` for truths."""
        raise NotImplementedError

    def count_down(self, rows, counts: torch.Tensor) -> None:
        """Pass the rows' use ``counts`` (``(G, N)`` or ``(G,)``, 0 where constant) to what they
        read, through ``rows.add_vector`` / ``add_atoms`` / ``add_truths``."""
        raise NotImplementedError

    def ground(self, rows):
        """One row's ground formula: a list of one formula per object, or one formula for a truth.
        An operator without it is answered by Shannon expansion, never compiled."""
        raise NotImplementedError


class _Top(Operator):
    def run(self, rows):
        return rows.all_objects()

    def kleene(self, rows):
        return CERTAIN * rows.objects()

    def count_down(self, rows, counts):
        pass

    def ground(self, rows):
        return [rows.true for _ in rows.objects()]


class _Conjoin(Operator):
    """``α ⊙ β`` per object: of two attentions, or (``filter``) of one and a unary predicate."""

    def __init__(self, name: str, filter_: bool):
        super().__init__(name)
        self.filter = filter_

    def _inputs(self, rows):
        return rows.vector("in0"), rows.unary() if self.filter else rows.vector("in1")

    def run(self, rows):
        x, y = self._inputs(rows)
        return (ops.filter_ if self.filter else ops.conjoin)(x, y, rows.objects())

    def kleene(self, rows):
        return torch.minimum(*self._inputs(rows))

    def count_down(self, rows, counts):
        rows.add_vector("in0", counts)
        if self.filter:
            rows.add_atoms(counts)
        else:
            rows.add_vector("in1", counts)

    def ground(self, rows):
        return [rows.all(pair) for pair in zip(*self._inputs(rows))]


class _Neg(Operator):
    def run(self, rows):
        return ops.neg(rows.vector("in0"), rows.objects())

    def kleene(self, rows):
        return (CERTAIN - rows.vector("in0")) * rows.objects()

    def count_down(self, rows, counts):
        rows.add_vector("in0", counts)

    def ground(self, rows):
        return [rows.neg(x) for x in rows.vector("in0")]


class _Quantified(Operator):
    def __init__(self, kind: str, quantifier: Quantifier):
        super().__init__(f"{kind} {quantifier.symbol}")
        self.quantifier = quantifier

    def quantify(self, terms, valid):
        if self.quantifier is Quantifier.FORALL:
            return terms.masked_fill(~valid, CERTAIN).amin(-1)
        some = (terms * valid).amax(-1)
        return some if self.quantifier is Quantifier.EXISTS else CERTAIN - some

    def ground_quantified(self, rows, terms):
        if self.quantifier is Quantifier.FORALL:
            return rows.all(terms)
        some = rows.any(terms)
        return some if self.quantifier is Quantifier.EXISTS else rows.neg(some)


class _Relate(_Quantified):
    """``q Y: ∧Π(X, Y) ∧ G(Y)``: the Q-product of the atoms' relation and the input."""

    def run(self, rows):
        mask = rows.objects()
        return rows.q_product(rows.relation(), rows.vector("in0"), mask, mask, self.quantifier)

    def _terms(self, rows):
        return torch.minimum(rows.relation(), rows.vector("in0")[:, None, :]), rows.objects()

    def kleene(self, rows):
        terms, valid = self._terms(rows)
        return self.quantify(terms, valid[:, None, :]) * valid

    def count_down(self, rows, counts):
        terms, valid = self._terms(rows)
        # a pair's term ∧Π(x, y) ∧ G(y) is used once per use of x, unless impossible or certain
        uses = counts[:, :, None] * ((terms == OPEN) & valid[:, None, :])
        rows.add_vector("in0", uses.sum(1, dtype=torch.int32).clamp_(max=CAP))
        rows.add_atoms(uses)

    def ground(self, rows):
        inner = rows.vector("in0")
        return [self.ground_quantified(rows, [rows.all(pair) for pair in zip(related, inner)])
                for related in rows.relation()]


class _Aggregate(_Quantified):
    """``A_q(α)``: the attention's variable quantified away."""

    vector = False

    def run(self, rows):
        return torch.cat(self.pair(rows), dim=-1)

    def pair(self, rows) -> tuple:  # the rows' (log p, log(1 - p)), (G, 1) each
        return ops.aggregate_pair(rows.vector("vin"), rows.objects(), self.quantifier, keepdim=True)

    def kleene(self, rows):
        return self.quantify(rows.vector("vin"), rows.objects())

    def count_down(self, rows, counts):
        rows.add_vector("vin", counts[:, None] * rows.objects())

    def ground(self, rows):
        return self.ground_quantified(rows, rows.vector("vin"))


class _Not(Operator):
    vector = False

    def run(self, rows):
        return rows.truths()[:, 0].flip(-1)

    def kleene(self, rows):
        return CERTAIN - rows.truths()[:, 0]

    def count_down(self, rows, counts):
        rows.add_truths(counts)

    def ground(self, rows):
        return rows.neg(rows.truths()[0])


class _Junction(_Not):
    """``and`` of the rows' truths, or (``disjunction``) ``or``: none of them fails to hold."""

    def __init__(self, name: str, disjunction: bool):
        super().__init__(name)
        self.disjunction = disjunction
        self.pads_with_true = not disjunction

    def run(self, rows):
        log_p = ops.and_(rows.truths()[..., int(self.disjunction)])  # an or's: that none holds
        pair = [log_p, ops.not_(log_p)]
        return torch.stack(pair[::-1] if self.disjunction else pair, dim=-1)

    def kleene(self, rows):
        return (torch.amax if self.disjunction else torch.amin)(rows.truths(), 1)

    def ground(self, rows):
        return (rows.any if self.disjunction else rows.all)(rows.truths())


class _AllSame(Operator):
    """GQA's ``same``: truths ``A_∃(α)``, then ``A_∃(α ⊙ Neg[Filter_π[1]])`` per value."""

    vector = False

    def run(self, rows):
        args = rows.truths()
        return torch.stack(ops.all_same(args[:, 0, 0], args[:, 1:, 0], rows.pad()[:, 1:]), dim=-1)

    def kleene(self, rows):  # "no one attended" (¬ first truth) or "all have π" (¬ some other one)
        return CERTAIN - rows.truths().amin(1)  # padding reads log 1, which lowers no minimum

    def count_down(self, rows, counts):
        # exact when at most one value is used (possible for some attended object, its term
        # open); with two or more, the input must be crisp: every atom of the input counts twice
        (input_poss, valid), value_poss, real = rows.all_same_values()
        reachable = (value_poss & (input_poss & valid)[:, None, :]).any(-1)
        used = (rows.truths() == OPEN)[:, 1:] & reachable & real
        n_used = used.sum(1)
        nonempty = (counts * (n_used == 0))[:, None]
        rows.add_truths(torch.cat([nonempty, counts[:, None] * used], 1).to(torch.int32))
        rows.add_all_same_input((CAP * counts * (n_used >= 2))[:, None] * valid)

    def ground(self, rows):  # no one is attended, or no one attended lacks some value
        return rows.any([rows.neg(t) for t in rows.truths()])


_QUANTIFIERS = (Quantifier.EXISTS, Quantifier.FORALL, Quantifier.NOT_EXISTS)
TOP, FILTER = _Top("top"), _Conjoin("filter", filter_=True)
NEG, CONJOIN = _Neg("neg"), _Conjoin("conjoin", filter_=False)
RELATE = {q: _Relate("relate", q) for q in _QUANTIFIERS}
AGGREGATE = {q: _Aggregate("aggregate", q) for q in _QUANTIFIERS}
NOT, AND, OR = _Not("not"), _Junction("and", disjunction=False), _Junction("or", disjunction=True)
ALL_SAME = _AllSame("all same")


_LOWERINGS: dict[type, Callable] = {}


def register_lowering(node_class: type) -> Callable[[Callable], Callable]:
    """Decorator: ``lowering(node, builder)`` adds a ``node_class`` node's rows to a plan
    (:class:`~nablafol.engine.planning.PlanBuilder`) and returns its row: an int, or a ``range``
    for a node of many truths. A subclass without its own is lowered as its closest base's."""
    def register(lowering: Callable) -> Callable:
        if node_class in _LOWERINGS:
            raise ProgramStructureError(f"{node_class.__name__} already has a lowering")
        _LOWERINGS[node_class] = lowering
        return lowering
    return register


def lowering_of(node_class: type) -> Optional[Callable]:
    """The lowering of ``node_class`` (or of its closest registered base), None if there is none."""
    return next((_LOWERINGS[cls] for cls in node_class.__mro__ if cls in _LOWERINGS), None)


def _one_row(operator: Operator) -> Callable:
    def lower(node, plan) -> int:
        inputs = [plan.row(child) for child in node.children()]
        if operator.vector:
            return plan.vector(operator, node, *inputs)
        truths = np.concatenate([_indices(r) for r in inputs])
        return plan.scalar(operator, truths=truths)
    return lower


for _kind, _operator in ((Top, TOP), (Neg, NEG), (Conjoin, CONJOIN), (Not, NOT), (And, AND),
                         (Or, OR), (AnyOf, OR), (AllOf, AND), (AllSame, ALL_SAME)):
    register_lowering(_kind)(_one_row(_operator))


@register_lowering(Filter)
def _lower_filter(node: Filter, plan) -> int:
    return plan.vector(FILTER, node, plan.row(node.input), predicate=plan.unary(node.predicate))


@register_lowering(Relate)
def _lower_relate(node: Relate, plan) -> int:
    return plan.vector(RELATE[node.quantifier], node, plan.row(node.input),
                       atoms=[(plan.binary(a.predicate), a.reverse) for a in node.atoms])


@register_lowering(Aggregate)
def _lower_aggregate(node: Aggregate, plan) -> int:
    return plan.scalar(AGGREGATE[node.quantifier], attention=plan.row(node.input))


@register_lowering(AggregateEach)
def _lower_aggregate_each(node: AggregateEach, plan) -> range:
    # K rows per operator on the shared input, then K aggregations: blocks, as K may be large
    vin, predicates = plan.row(node.input), plan.unary_block(node.predicates)
    if not node.negate:  # A_q(Filter_π[α])
        last = plan.vector(FILTER, node, vin, predicate=predicates)
    else:  # A_q(α ⊙ Neg[Filter_π[1]])
        top = plan.rows[_TOP] if _TOP in plan.rows else plan.vector(TOP, _TOP)
        values = plan.vector(FILTER, node, top, predicate=predicates)
        negs = plan.vector(NEG, node, _indices(values))
        last = plan.vector(CONJOIN, node, vin, _indices(negs))
    plan.last_vector_rows[node] = last
    return plan.scalar(AGGREGATE[node.quantifier], attention=_indices(last))


@register_lowering(Pairwise)
def _lower_pairwise(node: Pairwise, plan) -> range:  # one And row per pair
    pairs = np.stack([_indices(plan.row(node.left)), _indices(plan.row(node.right))], 1)
    return plan.scalar(AND, truths=pairs.ravel(), sizes=np.full(len(pairs), 2))


@register_lowering(AnyOfGroups)
def _lower_any_of_groups(node: AnyOfGroups, plan) -> range:  # one Or row per group
    return plan.scalar(OR, truths=_indices(plan.row(node.each)), sizes=node.sizes)


def _indices(rows: int | range) -> np.ndarray:
    return np.arange(rows.start, rows.stop) if isinstance(rows, range) else np.array([rows])


_TOP = Top()
