"""GQA steps -> DFOL nodes: the fixed translation of gqa-programs.md (paper, Table 4).

Each step's result is an :class:`ObjectSet` (an attention, with the name that selected it),
a :class:`YesNo` (a closed formula), or, for the answer step, the final
:class:`nablafol.ir.Program`. Operation by operation (``X``, ``Y`` the inputs' attentions):

=================================  ==========================================================
``select: NAME`` / ``scene``       ``Filter_NAME[1]`` / ``Filter_scene[1]``
``filter [T]: V`` / ``not(V)``     ``Filter_V[X]`` / ``X ⊙ Neg[Filter_V[1]]``
``relate: N,R,s`` / ``N,R,o``      ``Filter_N[Relate_{R,∃}[X]]`` / ``Filter_N[Relate_{R⁻¹,∃}[X]]``
``exist``                          ``A_∃(X)``
``verify [T]: V`` / ``verify rel``  ``A_∃(Filter_V[X])`` / ``A_∃(relate ...)``
``query T``                        ``[A_∃(Filter_v[X]) for v in values(T)]``
``choose [T]: V1|V2``              ``{V1: A_∃(Filter_V1[X]), V2: ...}``
``choose rel: N,R1|R2,r``          ``{R1: A_∃(relate R1), R2: ...}`` (``left``/``right``)
``choose COMP``                    ``{a: A_∃(X ⊙ Relate_{COMP,∃}[Y]), b: A_∃(Y ⊙ Relate_{COMP,∃}[X])}``
``and`` / ``or``                   ``a ∧ b`` / ``a ∨ b``
``same T`` (two inputs)            ``∨_v (A_∃(Filter_v[X]) ∧ A_∃(Filter_v[Y]))``
``same: T`` (one input)            ``AllSame_{v ∈ T}[X]``: ``∃v ∀x: X(x) → v(x)`` (all of them share a value)
``different``                      ``¬same``
``common``                         ``{T: same T(X, Y) for T in the attribute types}`` (one ``AnyOfGroups``)
=================================  ==========================================================
"""
from __future__ import annotations

from typing import NamedTuple, Optional, Union

from nablafol.caching import bounded_cache
from nablafol.dsl import VERBS
from nablafol.dsl import ast as A

from nablafol.ir import (Aggregate, AggregateEach, AllSame, And, AnyOf, AnyOfGroups, Atom, Attention, Conjoin, Filter, Neg,
                         Not, Or, Pairwise, Program, Quantifier, Relate, Top, Truth)

from .concepts import SCENE, Concepts
from .errors import CompileError

EXISTS = Quantifier.EXISTS
TOP = Top()
LEFT_RIGHT = {"to the left of": "left", "to the right of": "right"}


# A step's result, made once per step: named tuples (a frozen dataclass cost a microsecond each)
class ObjectSet(NamedTuple):
    """The objects a step attends to, and the name that selected them (vocabulary and raw form)."""

    attention: Attention
    source: Optional[str]  # vocabulary form of the last select/relate name; None for `_` and the scene
    raw_name: Optional[str]  # that name as written in the program


class YesNo(NamedTuple):
    truth: Truth
    focus: Optional[Attention] = None


Result = Union[ObjectSet, YesNo, Program]


def _relate_exists(predicate, x: Attention, reverse: bool = False) -> Relate:
    """``Relate.of(predicate, EXISTS, x, reverse)``."""
    return Relate((Atom(predicate, reverse),), EXISTS, x)


class Translator:
    """Translates one parsed GQA program (pure: the same AST gives equal DFOL programs)."""

    def __init__(self, concepts: Concepts):
        self.c = concepts
        self._operations = {verb: getattr(self, "_" + verb) for verb in VERBS}
        # what a select step gives depends on its name alone, and names repeat: made once
        # (its nodes are then shared by programs, as equal immutable nodes may be)
        self._selected = bounded_cache(self._selected_uncached, 1 << 14)
        self._scene = ObjectSet(Filter(SCENE, TOP), None, "scene")
        self._atoms = bounded_cache(self._atoms_uncached, 1 << 14)  # a relate's atoms, by relation and role

    def program(self, program: A.Program) -> Program:
        results: list[Result] = []
        operations = self._operations
        for index, step in enumerate(program.steps):
            operation = operations.get(step.operation)
            if operation is None:  # looked up, not caught: an error inside an operation is a bug, not a skip
                raise CompileError(f"operation {step.operation!r} is not a GQA operation", step=index,
                                   field=step.field, reason="unsupported")
            try:
                results.append(operation(step, [results[d] for d in step.dependencies]))
            except CompileError as e:
                if e.step is None:
                    raise CompileError(e.message, step=index, field=step.field, reason=e.reason) from None
                raise
        last = results[-1]
        if isinstance(last, YesNo):
            return Program((last.truth,), None, last.focus)
        if isinstance(last, Program):
            return last
        raise CompileError("the last step selects objects but does not answer", step=len(results) - 1,
                           field=program.steps[-1].field, reason="unsupported")

    # -- helpers --------------------------------------------------------------------------
    @staticmethod
    def _objects(step, inputs, k: int = 1) -> list[ObjectSet]:
        # k is 1 or 2: the first and the last input are all of them
        if len(inputs) != k or not (isinstance(inputs[0], ObjectSet) and isinstance(inputs[-1], ObjectSet)):
            raise CompileError(f"needs {k} object set{'s' if k > 1 else ''} as input", reason="unsupported")
        return inputs

    def _atoms_uncached(self, relation: str, reverse: bool) -> tuple[Atom]:
        return (Atom(self.c.relation(relation), reverse),)

    def _selected_uncached(self, raw_name: str) -> ObjectSet:
        name = self.c.name(raw_name)
        return ObjectSet(Filter(name, TOP), name.name, raw_name)

    def _related(self, x: ObjectSet, arg: A.Relation, relation: str) -> ObjectSet:
        """``relate`` from ``x``: the objects named ``arg.name`` in ``relation`` with them."""
        if arg.role not in ("s", "o"):
            raise CompileError(f"relation role {arg.role!r} must be 's' or 'o'", reason="unsupported")
        # role s: the new objects Y are the subject, REL(Y, X): Y is the relate's first argument
        att: Attention = Relate(self._atoms(relation, arg.role == "o"), EXISTS, x.attention)
        if arg.any_name:
            return ObjectSet(att, None, None)
        name = self.c.name(arg.name)
        return ObjectSet(Filter(name, att), name.name, arg.name)

    def _has(self, x: Attention, value: A.Value, type_: str | None) -> Attention:
        pred = self.c.value(value.value, type_)
        if value.negated:
            return Conjoin(x, Neg(Filter(pred, TOP)))
        return Filter(pred, x)

    def _two_same(self, type_: str, x: Attention, y: Attention) -> Truth:
        """``∨_v (A_∃(Filter_v[X]) ∧ A_∃(Filter_v[Y]))`` over the values of ``type_`` (TwoSame)."""
        preds, _ = self.c.candidates(type_)
        return AnyOf(Pairwise(AggregateEach(EXISTS, preds, x), AggregateEach(EXISTS, preds, y)))

    def _all_same(self, type_: str, x: Attention) -> Truth:
        """``∃v ∀x: X(x) → v(x)`` over the values of ``type_`` (the paper's AllSame).

        :class:`nablafol.ir.AllSame`, not the paper's ``1 - Π_v A_∃(X ⊙ Neg[Filter_v[1]])``:
        that product counts "no object attended" once per value, so its answer drifted with the
        size of the vocabulary (a value no object has still multiplied in a factor); AllSame's
        does not depend on such values, and is exact when X is crisp (``docs/exactness.md``)."""
        preds, _ = self.c.candidates(type_)
        return AllSame(preds, x)

    # -- operations -----------------------------------------------------------------------
    def _select(self, step: A.Step, inputs) -> ObjectSet:
        if isinstance(step.argument, A.Scene):
            return self._scene
        return self._selected(step.argument.name)

    def _filter(self, step, inputs) -> ObjectSet:
        (x,) = self._objects(step, inputs)
        return ObjectSet(self._has(x.attention, step.argument, step.type), x.source, x.raw_name)

    def _relate(self, step, inputs) -> ObjectSet:
        (x,) = self._objects(step, inputs)
        return self._related(x, step.argument, step.argument.relation)

    def _exist(self, step, inputs) -> YesNo:
        (x,) = self._objects(step, inputs)
        return YesNo(Aggregate(EXISTS, x.attention), x.attention)

    def _verify(self, step, inputs) -> YesNo:
        (x,) = self._objects(step, inputs)
        if isinstance(step.argument, A.Relation):
            return YesNo(Aggregate(EXISTS, self._related(x, step.argument, step.argument.relation).attention),
                         x.attention)
        return YesNo(Aggregate(EXISTS, self._has(x.attention, step.argument, step.type)), x.attention)

    def _query(self, step, inputs) -> Program:
        (x,) = self._objects(step, inputs)
        preds, labels = self.c.candidates(step.argument.name, x.source)
        # the candidates' labels are distinct, one per predicate (Concepts.candidates, checked
        # once per type and name): the program's check would set() up to 1,232 labels again
        return Program((AggregateEach(EXISTS, preds, x.attention),), labels, x.attention)

    def _choose(self, step, inputs) -> Program:
        if step.is_comparative:
            a, b = self._objects(step, inputs, 2)
            comp = self.c.comparative(step.type)
            labels = [o.raw_name or o.source for o in (a, b)]
            if None in labels:
                raise CompileError("a compared object set has no name to answer with", reason="unsupported")
            score_a = Aggregate(EXISTS, Conjoin(a.attention, _relate_exists(comp, b.attention)))
            score_b = Aggregate(EXISTS, Conjoin(b.attention, _relate_exists(comp, a.attention)))
            if labels[0] == labels[1]:  # one answer, whichever wins: its truth is either's
                return Program((Or((score_a, score_b)),), (labels[0],))
            return Program((score_a, score_b), tuple(labels))
        (x,) = self._objects(step, inputs)
        options: dict[str, Truth] = {}
        if isinstance(step.argument, A.Relation):
            for relation in step.argument.relations:
                label = LEFT_RIGHT.get(relation, relation)
                options[label] = Aggregate(EXISTS, self._related(x, step.argument, relation).attention)
        else:
            type_ = None if step.type in (None, "") else step.type
            for value in step.argument.values:
                options[value] = Aggregate(EXISTS, Filter(self.c.value(value, type_), x.attention))
        return Program.choice(options, focus=x.attention)

    def _logic(self, step, inputs, combine) -> YesNo:
        if len(inputs) != 2 or not all(isinstance(t, YesNo) for t in inputs):
            raise CompileError("needs two yes/no results as input", reason="unsupported")
        return YesNo(combine((inputs[0].truth, inputs[1].truth)))

    def _and(self, step, inputs) -> YesNo:
        return self._logic(step, inputs, And)

    def _or(self, step, inputs) -> YesNo:
        return self._logic(step, inputs, Or)

    def _same(self, step, inputs) -> YesNo:
        if step.type is not None:  # two inputs: do the two share a TYPE value
            a, b = self._objects(step, inputs, 2)
            return YesNo(self._two_same(step.type, a.attention, b.attention))
        (x,) = self._objects(step, inputs)  # one input: do all of them share one
        return YesNo(self._all_same(step.argument.name, x.attention), x.attention)

    def _different(self, step, inputs) -> YesNo:
        same = self._same(step, inputs)
        return YesNo(Not(same.truth), same.focus)

    def _common(self, step, inputs) -> Program:
        # {T: same T(X, Y)} for every type: one Pairwise over all their values, one group per type
        a, b = self._objects(step, inputs, 2)
        values, sizes = self.c.common_values
        pairs = Pairwise(AggregateEach(EXISTS, values, a.attention), AggregateEach(EXISTS, values, b.attention))
        return Program((AnyOfGroups(pairs, sizes),), self.c.common_types)
