"""Each DFOL node kind lowered once: the plan rows a node adds, and what each row's operator means.

A plan (:mod:`~nablafol.engine.planning`) is rows: *vector* rows (an attention, one value per
object) and *scalar* rows (a truth, carried as ``(log p, log(1 - p))``). Every row names its
:class:`Operator`, and the operator says, in one place, what its rows mean to every consumer:

* :meth:`Operator.run`: their values. The batched executor calls it on a group of rows of one
  level, the one-row executor on a single row; both hand it a reader of the same methods
  (``vector``, ``unary``, ``relation``, ``truths``, ``pad``, ``objects``, ``q_product``);
* :meth:`Operator.kleene`: whether each row's formula is possible / certain, per object (the
  exactness analysis' up pass, :mod:`~nablafol.engine.grounding`), through a reader of the same
  methods returning ``(possible, certain)`` pairs of booleans;
* :meth:`Operator.count_down`: how often a row uses its inputs (the analysis' down pass);
* :meth:`Operator.ground`: one row's ground formula (per object for an attention), for knowledge
  compilation (:func:`~nablafol.engine.circuits.ground`), through a reader of the same methods
  returning formula numbers, that also builds them (``all``, ``any``, ``neg``, ``true``).

A node kind's lowering, registered once with :func:`register_lowering` (as
``torch.distributions.kl.register_kl`` registers one function per pair of types), adds the
node's rows to a plan through the planner's builder (:class:`~nablafol.engine.planning.PlanBuilder`)
as :class:`VectorRow` / :class:`ScalarRow`. A new node kind is one class, one lowering and, if
no operator computes it yet, one :class:`Operator`: the engine, both executors and the exactness
analysis then run it, and exact mode compiles it (``tests/engine/test_engine_new_node.py`` adds a
generalized quantifier).

Example: the operators of ``A_∃(Filter_red[1])``'s rows, in the order a level runs them:
    >>> from nablafol.ir import Aggregate, Filter, Predicate, Program, Top
    >>> from nablafol.engine.planning import ProgramPlan
    >>> plan = ProgramPlan.of(Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(Predicate("red"), Top()))))
    >>> [OPERATORS[k].name for k in plan.v[:, 0].tolist() + plan.s[:, 0].tolist()]
    ['top', 'filter', 'aggregate ∃']
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import numpy as np
import torch

from nablafol import operators as ops
from nablafol.errors import ProgramStructureError
from nablafol.ir import (Aggregate, AggregateEach, AllOf, AllSame, And, AnyOf, AnyOfGroups, Conjoin, Filter, Neg, Not,
                         Or, Pairwise, Relate, Top)
from nablafol.operators import Quantifier

__all__ = ["Operator", "OPERATORS", "VectorRow", "ScalarRow", "register_lowering", "lowering_of", "TOP", "FILTER",
           "NEG", "CONJOIN", "RELATE", "AGGREGATE", "NOT", "AND", "OR", "ALL_SAME", "quantify",
           "ground_quantified"]

NEG_INF = float("-inf")
CAP = 2  # use counts are capped here: all that matters to exactness is "twice or more"

#: Every operator, by its number in a plan's row matrices (the order a level runs them in)
OPERATORS: list["Operator"] = []


class Operator:
    """What the rows of one kind compute (see the module docstring); made once, registered in
    :data:`OPERATORS` when made. ``vector``: its rows are attentions, else truths."""

    vector = True
    pads_with_true = True  # a group's rows of fewer truths than its widest are padded with log 1, else log 0

    def __init__(self, name: str):
        self.name = name
        self.id = len(OPERATORS)
        OPERATORS.append(self)

    def __repr__(self) -> str:
        return f"Operator({self.name!r})"

    def run(self, rows) -> torch.Tensor:
        """The rows' values: ``(G, N)`` log-attentions, or ``(G, 2)`` truth pairs."""
        raise NotImplementedError

    def kleene(self, rows) -> tuple[torch.Tensor, torch.Tensor]:
        """``(possible, certain)``: ``(G, N)`` per object, or ``(G,)`` for truths."""
        raise NotImplementedError

    def count_down(self, rows, counts: torch.Tensor) -> None:
        """Pass the rows' use ``counts`` (``(G, N)`` or ``(G,)``, zero where a row is constant) to
        what they read, through ``rows.add_vector`` / ``add_unary`` / ``add_relation`` / ``add_truths``."""
        raise NotImplementedError

    def ground(self, rows):
        """One row's ground formula: a list of one formula per object, or one formula for a truth.
        An operator without it is answered by Shannon expansion, never compiled."""
        raise NotImplementedError


class VectorRow(NamedTuple):
    """One attention row of a plan: its operator, its inputs (rows of the plan, -1: none), its
    unary predicate (local number, -1: none). A relate's atoms are added beside it."""

    operator: Operator
    first: int = -1
    second: int = -1
    predicate: int = -1


class ScalarRow(NamedTuple):
    """One truth row of a plan: its operator, the attention it reads (-1: none) and the truths it
    combines (rows of the plan)."""

    operator: Operator
    attention: int = -1
    truths: tuple = ()


def quantify(possible, certain, valid, quantifier: Quantifier):
    """Kleene values of ∃ / ∀ / ∄ over the last dimension (``valid`` objects only)."""
    if quantifier is Quantifier.FORALL:
        return (possible | ~valid).all(-1), (certain | ~valid).all(-1)
    some_p, some_c = (possible & valid).any(-1), (certain & valid).any(-1)
    return (some_p, some_c) if quantifier is Quantifier.EXISTS else (~some_c, ~some_p)


def ground_quantified(rows, terms, quantifier: Quantifier):
    """The ground formula of ∃ / ∀ / ∄ over ``terms`` (one formula per object)."""
    if quantifier is Quantifier.FORALL:
        return rows.all(terms)
    some = rows.any(terms)
    return some if quantifier is Quantifier.EXISTS else rows.neg(some)


# --- the operators ------------------------------------------------------------------------

class _Top(Operator):
    def run(self, rows):
        return rows.all_objects()

    def kleene(self, rows):
        valid = rows.objects()
        return valid, valid

    def count_down(self, rows, counts):
        pass

    def ground(self, rows):
        return [rows.true for _ in rows.objects()]


class _Filter(Operator):
    def run(self, rows):
        return ops.filter_(rows.vector("in0"), rows.unary(), rows.objects())

    def kleene(self, rows):
        (xp, xc), (up, uc) = rows.vector("in0"), rows.unary()
        return xp & up, xc & uc

    def count_down(self, rows, counts):
        rows.add_vector("in0", counts)
        rows.add_unary(counts)

    def ground(self, rows):
        return [rows.all(pair) for pair in zip(rows.unary(), rows.vector("in0"))]


class _Neg(Operator):
    def run(self, rows):
        return ops.neg(rows.vector("in0"), rows.objects())

    def kleene(self, rows):
        (xp, xc), valid = rows.vector("in0"), rows.objects()
        return ~xc & valid, ~xp & valid

    def count_down(self, rows, counts):
        rows.add_vector("in0", counts)

    def ground(self, rows):
        return [rows.neg(x) for x in rows.vector("in0")]


class _Conjoin(Operator):
    def run(self, rows):
        return ops.conjoin(rows.vector("in0"), rows.vector("in1"), rows.objects())

    def kleene(self, rows):
        (xp, xc), (yp, yc) = rows.vector("in0"), rows.vector("in1")
        return xp & yp, xc & yc

    def count_down(self, rows, counts):
        rows.add_vector("in0", counts)
        rows.add_vector("in1", counts)

    def ground(self, rows):
        return [rows.all(pair) for pair in zip(rows.vector("in0"), rows.vector("in1"))]


class _Relate(Operator):
    """``q Y: ∧Π(X, Y) ∧ G(Y)``: the Q-product of the atoms' relation and the input."""

    def __init__(self, quantifier: Quantifier):
        super().__init__(f"relate {quantifier.symbol}")
        self.quantifier = quantifier

    def run(self, rows):
        mask = rows.objects()
        return rows.q_product(rows.relation(), rows.vector("in0"), mask, mask, self.quantifier)

    def _terms(self, rows):
        (rp, rc), (yp, yc), valid = rows.relation(), rows.vector("in0"), rows.objects()
        return rp & yp[:, None, :], rc & yc[:, None, :], valid

    def kleene(self, rows):
        poss, cert, valid = self._terms(rows)
        poss, cert = quantify(poss, cert, valid[:, None, :], self.quantifier)
        return poss & valid, cert & valid

    def count_down(self, rows, counts):
        poss, cert, valid = self._terms(rows.kleene)
        # a pair's term ∧Π(x, y) ∧ G(y) is used once per use of x, unless impossible or certain
        uses = counts[:, :, None] * (poss & ~cert & valid[:, None, :])
        rows.add_vector("in0", uses.sum(1, dtype=torch.int32).clamp_(max=CAP))
        rows.add_relation(uses)

    def ground(self, rows):
        inner = rows.vector("in0")
        return [ground_quantified(rows, [rows.all(pair) for pair in zip(related, inner)], self.quantifier)
                for related in rows.relation()]


class _Aggregate(Operator):
    """``A_q(α)``: the attention's variable quantified away."""

    vector = False

    def __init__(self, quantifier: Quantifier):
        super().__init__(f"aggregate {quantifier.symbol}")
        self.quantifier = quantifier

    def run(self, rows):
        return torch.stack(ops.aggregate_pair(rows.vector("vin"), rows.objects(), self.quantifier), dim=-1)

    def kleene(self, rows):
        (xp, xc), valid = rows.vector("vin"), rows.objects()
        return quantify(xp, xc, valid, self.quantifier)

    def count_down(self, rows, counts):
        rows.add_vector("vin", counts[:, None] * rows.objects())

    def ground(self, rows):
        return ground_quantified(rows, rows.vector("vin"), self.quantifier)


class _Not(Operator):
    vector = False

    def run(self, rows):
        return rows.truths()[:, 0].flip(-1)

    def kleene(self, rows):
        ap, ac = rows.truths()
        return ~ac[:, 0], ~ap[:, 0]

    def count_down(self, rows, counts):
        rows.add_truths(counts[:, None].expand(-1, rows.width()))

    def ground(self, rows):
        return rows.neg(rows.truths()[0])


class _And(_Not):
    def run(self, rows):
        log_p = ops.and_(rows.truths()[..., 0])
        return torch.stack([log_p, ops.not_(log_p)], dim=-1)

    def kleene(self, rows):
        ap, ac = rows.truths()
        return ap.all(1), ac.all(1)

    def ground(self, rows):
        return rows.all(rows.truths())


class _Or(_Not):
    pads_with_true = False

    def run(self, rows):
        log_q = ops.and_(rows.truths()[..., 1])  # none of them holds
        return torch.stack([ops.not_(log_q), log_q], dim=-1)

    def kleene(self, rows):
        ap, ac = rows.truths()
        return ap.any(1), ac.any(1)

    def ground(self, rows):
        return rows.any(rows.truths())


class _AllSame(Operator):
    """GQA's one-input ``same`` (:class:`nablafol.ir.AllSame`): its truths are ``A_∃(α)``, then
    ``A_∃(α ⊙ Neg[Filter_π[1]])`` per value (``pad`` marks a group's absent values)."""

    vector = False

    def run(self, rows):
        args = rows.truths()
        return torch.stack(ops.all_same(args[:, 0, 0], args[:, 1:, 0], rows.pad()[:, 1:]), dim=-1)

    def kleene(self, rows):
        # "no one attended" (¬ first truth) or "all have π" (¬ some other one)
        (ap, ac), real = rows.truths(), ~rows.pad()[:, 1:]
        return ~ac[:, 0] | (~ac[:, 1:] & real).any(1), ~ap[:, 0] | (~ap[:, 1:] & real).any(1)

    def count_down(self, rows, counts):
        # exact when at most one value is used (possible for some attended object, its term
        # open); with two or more, the input must be crisp: every atom of the input counts twice
        (input_poss, valid), value_poss, real = rows.all_same_values()
        reachable = (value_poss & (input_poss & valid)[:, None, :]).any(-1)
        used = rows.kleene.open_truths()[:, 1:] & reachable & real
        n_used = used.sum(1)
        rows.add_truths(torch.cat([(counts * (n_used == 0))[:, None], counts[:, None] * used], 1).to(torch.int32))
        rows.add_all_same_input((CAP * counts * (n_used >= 2))[:, None] * valid)

    def ground(self, rows):  # no one is attended, or no one attended lacks some value
        return rows.any([rows.neg(t) for t in rows.truths()])


TOP, FILTER, NEG, CONJOIN = _Top("top"), _Filter("filter"), _Neg("neg"), _Conjoin("conjoin")
RELATE = {q: _Relate(q) for q in (Quantifier.EXISTS, Quantifier.FORALL, Quantifier.NOT_EXISTS)}
AGGREGATE = {q: _Aggregate(q) for q in (Quantifier.EXISTS, Quantifier.FORALL, Quantifier.NOT_EXISTS)}
NOT, AND, OR, ALL_SAME = _Not("not"), _And("and"), _Or("or"), _AllSame("all same")


# --- lowerings ----------------------------------------------------------------------------

_LOWERINGS: dict[type, Callable] = {}


def register_lowering(node_class: type) -> Callable[[Callable], Callable]:
    """Decorator: ``lowering(node, builder)`` adds the rows of every ``node_class`` node to a plan
    (``builder``: :class:`~nablafol.engine.planning.PlanBuilder`) and returns the node's row: an
    int, or a ``range`` of rows for a node standing for many truths. One per class; a subclass
    without its own lowering is lowered as its closest registered base."""
    def register(lowering: Callable) -> Callable:
        if node_class in _LOWERINGS:
            raise ProgramStructureError(f"{node_class.__name__} already has a lowering")
        _LOWERINGS[node_class] = lowering
        return lowering
    return register


def lowering_of(node_class: type) -> Optional[Callable]:
    """The lowering of ``node_class`` (or of its closest registered base), None if there is none."""
    for cls in node_class.__mro__:
        found = _LOWERINGS.get(cls)
        if found is not None:
            return found
    return None


# --- the lowerings of the IR's nodes ----------------------------------------------------

@register_lowering(Top)
def _lower_top(node: Top, plan) -> int:
    return plan.vector(VectorRow(TOP), node)


@register_lowering(Filter)
def _lower_filter(node: Filter, plan) -> int:
    return plan.vector(VectorRow(FILTER, plan.row(node.input), predicate=plan.unary(node.predicate)), node)


@register_lowering(Neg)
def _lower_neg(node: Neg, plan) -> int:
    return plan.vector(VectorRow(NEG, plan.row(node.input)), node)


@register_lowering(Conjoin)
def _lower_conjoin(node: Conjoin, plan) -> int:
    return plan.vector(VectorRow(CONJOIN, plan.row(node.left), plan.row(node.right)), node)


@register_lowering(Relate)
def _lower_relate(node: Relate, plan) -> int:
    return plan.vector(VectorRow(RELATE[node.quantifier], plan.row(node.input)), node,
                       atoms=[(plan.binary(a.predicate), a.reverse) for a in node.atoms])


@register_lowering(Aggregate)
def _lower_aggregate(node: Aggregate, plan) -> int:
    return plan.scalar(ScalarRow(AGGREGATE[node.quantifier], attention=plan.row(node.input)))


@register_lowering(Not)
def _lower_not(node: Not, plan) -> int:
    return plan.scalar(ScalarRow(NOT, truths=(plan.row(node.input),)))


@register_lowering(And)
def _lower_and(node: And, plan) -> int:
    return plan.scalar(ScalarRow(AND, truths=tuple(plan.row(t) for t in node.inputs)))


@register_lowering(Or)
def _lower_or(node: Or, plan) -> int:
    return plan.scalar(ScalarRow(OR, truths=tuple(plan.row(t) for t in node.inputs)))


@register_lowering(AggregateEach)
def _lower_aggregate_each(node: AggregateEach, plan) -> range:
    # K rows per operator on the shared input, then K aggregations: blocks, since an open
    # question may have 1,232 candidates
    vin, predicates = plan.row(node.input), plan.unary_block(node.predicates)
    if not node.negate:  # A_q(Filter_π[α])
        last = plan.vector_block(FILTER, node, vin, predicate=predicates)
    else:  # A_q(α ⊙ Neg[Filter_π[1]])
        top = plan.row_or_none(_TOP)
        if top is None:
            top = plan.vector(VectorRow(TOP), _TOP)
        values = plan.vector_block(FILTER, node, top, predicate=predicates)
        negs = plan.vector_block(NEG, node, np.arange(values.start, values.stop))
        last = plan.vector_block(CONJOIN, node, vin, np.arange(negs.start, negs.stop))
    plan.last_vector_rows[node] = last
    return plan.scalar_block(AGGREGATE[node.quantifier], attention=np.arange(last.start, last.stop))


@register_lowering(Pairwise)
def _lower_pairwise(node: Pairwise, plan) -> range:
    left, right = plan.row(node.left), plan.row(node.right)
    ks = np.arange(len(left))
    return plan.scalar_block(AND, truths=np.stack([left.start + ks, right.start + ks], 1))


@register_lowering(AnyOfGroups)
def _lower_any_of_groups(node: AnyOfGroups, plan) -> range:  # one Or row per group
    rows = plan.row(node.each)
    return plan.scalar_block(OR, groups=(node.sizes, np.arange(rows.start, rows.stop)))


@register_lowering(AnyOf)
def _lower_any_of(node: AnyOf, plan) -> int:
    return plan.scalar(ScalarRow(OR, truths=plan.row(node.each)))


@register_lowering(AllOf)
def _lower_all_of(node: AllOf, plan) -> int:
    return plan.scalar(ScalarRow(AND, truths=plan.row(node.each)))


@register_lowering(AllSame)
def _lower_all_same(node: AllSame, plan) -> int:
    # its truths: A_∃(α), then A_∃(α ⊙ Neg[Filter_π[1]]) per value (the analysis follows them)
    truths = (plan.row(node.nonempty),) + tuple(plan.row(node.each))
    return plan.scalar(ScalarRow(ALL_SAME, truths=truths))


_TOP = Top()
