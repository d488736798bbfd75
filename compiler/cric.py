"""CRIC programs -> DFOL programs: the same operators as GQA's, and the knowledge oracle's predicates.

Step by step (``X``, ``Y`` the inputs' attentions; ``kg`` predicates are those of
:mod:`nablafol.graph_oracles.knowledge`, answered from CRIC's triples ``<head, relation, tail>``):

=====================================  =====================================================
``Initial``                            ``1`` (every object)
``Find: W1, W2``                       ``Filter_W2[Filter_W1[X]]`` (a name or an attribute value)
``Find Hyponym: C``                    ``Filter_C[X]`` (``C`` a category: everything under it)
``Relate: P``                          ``Relate_{P⁻¹,∃}[X]``: objects that X stand in ``P`` to
``Relate Reverse: P``                  ``Relate_{P,∃}[X]``: objects that stand in ``P`` to X
``Find KG: R, T`` after ``Initial``    ``Filter_{R:T}[1]``: classes with the fact ``<·, R, T>``
``Find KG: R, T`` otherwise            ``Relate_{R:T,∃}[X]``: ``<·, R, T + X's class>``
``Find KG Reverse: R, T``              ``Relate_{(R:T)⁻¹,∃}[X]``: ``<X's class, R, T + ·>``
``Verify: W...``                       ``A_∃(Filter_W...[X])``, focus on ``Filter_W...[X]``
``Recognition: T``                     ``[A_∃(Filter_v[X]) for v in T's values]``, focus ``X``
``And``                                ``X ⊙ Y`` (object sets) or ``a ∧ b`` (yes/no; focus on either's objects)
=====================================  =====================================================

A knowledge relation must be one of the knowledge base's (``knowledge_relations``), else
the program is refused like an unknown concept. Besides the answer program, a compiled
question keeps the attention of every object step (:attr:`CompiledCric.step_attentions`), so
the objects each module finds can be compared with CRIC's ground-truth ``output``
(:meth:`CompiledCric.step_programs` turns them into programs any engine evaluates).

    >>> from nablafol.dsl.cric import cric_program_from_json
    >>> compiler = CricCompiler(knowledge_relations={"CapableOf"})
    >>> q = compiler.compile(cric_program_from_json([
    ...     {"function": "Initial"}, {"function": "Find", "text_input": ["plate"]},
    ...     {"function": "Relate Reverse", "text_input": ["on"]},
    ...     {"function": "Find KG", "text_input": ["CapableOf", "lift"]},
    ...     {"function": "Recognition", "text_input": ["name"]}]))
    >>> print(q.program.candidates[0].input.term())
    Relate_{CapableOf:lift,∃}[Relate_{on,∃}[Filter_plate[1]]]
    >>> q.is_binary, len(q.answers) > 100, sorted(q.step_attentions)
    (False, True, [0, 1, 2, 3])
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from nablafol import dsl
from nablafol.caching import bounded_cache
from nablafol.dsl.cric import CricKind, CricProgram, CricStep, cric_program_from_json

from nablafol.ir import (Aggregate, AggregateEach, And, Attention, Conjoin, Filter, Neg, Predicate, Program,
                         Quantifier, Relate, Top, Truth)

from .compiler import CACHE_SIZE, CompiledQuestion
from .concepts import Concepts
from .errors import CompileError

__all__ = ["CricCompiler", "CompiledCric"]

EXISTS = Quantifier.EXISTS
KG = "kg"


@dataclass(frozen=True)
class CompiledCric(CompiledQuestion):
    """A compiled CRIC program: the answer program (as any compiled question), and the
    attention of every step that yields objects, by step index."""

    step_attentions: dict = field(default_factory=dict, compare=False)

    def step_programs(self) -> tuple[tuple[int, Program], ...]:
        """``(step index, program)`` for every object step: a yes/no program (does the step
        find anything) whose focus is the step's attention, so an engine's ``focus`` output
        is what the module finds."""
        return tuple((index, Program.yes_no(Aggregate(EXISTS, att), focus=att))
                     for index, att in sorted(self.step_attentions.items()))


@dataclass(frozen=True)
class _Objects:
    attention: Attention
    source: Optional[str]  # vocabulary form of the last name that selected them (Recognition: name)
    everything: bool = False  # the result of Initial itself: a Find KG tail is then text only


class CricCompiler:
    """Compiles CRIC programs against one ontology (GQA's by default) and a knowledge base's
    relations; pure and cached by program."""

    def __init__(self, ontology: Optional[dsl.Ontology] = None, knowledge_relations=(),
                 cache_size: int = CACHE_SIZE):
        self.ontology = ontology or dsl.Ontology.gqa()
        self.concepts = Concepts(self.ontology, knowledge_relations)
        self._compile = bounded_cache(self._compile_uncached, cache_size)

    @property
    def knowledge_relations(self) -> frozenset:
        return self.concepts.knowledge_relations

    def compile(self, program: CricProgram) -> CompiledCric:
        """Compile a read program; raises :class:`CompileError` naming the step."""
        if not isinstance(program, CricProgram):
            raise CompileError(f"expected a CricProgram, got {type(program).__name__}", reason="unsupported")
        # ground-truth outputs never reach reasoning: programs that differ only there are one
        return self._compile(CricProgram(tuple(CricStep(s.function, s.text_input, None, s.dependencies)
                                               for s in program)))

    def compile_json(self, steps) -> CompiledCric:
        """Read (:func:`~nablafol.dsl.cric.cric_program_from_json`) and compile CRIC's ``program`` list."""
        return self.compile(cric_program_from_json(steps))

    def compile_source(self, source) -> CompiledCric:
        """Compile a question's program as its reader hands it over (``("cric", steps)``:
        :meth:`nablafol.data.cric.CricQuestion.program_source`)."""
        if source.field != "cric":
            raise CompileError(f"a CRIC compiler reads CRIC programs, not {source.field!r}", reason="unsupported")
        return self.compile_json(source.value)

    def _compile_uncached(self, program: CricProgram) -> CompiledCric:
        results: list = []
        attentions: dict[int, Attention] = {}
        kinds = program.kinds
        for index, step in enumerate(program):
            try:
                result = getattr(self, "_" + step.function.lower().replace(" ", "_"))(
                    step, [results[d] for d in step.dependencies], kinds[index])
            except CompileError as e:
                if e.step is None:
                    raise CompileError(e.message, step=index, field=step.function, reason=e.reason) from None
                raise
            if isinstance(result, _Objects):
                attentions[index] = result.attention
            results.append(result)
        last = results[-1]
        if isinstance(last, tuple):  # (truth, focus) of a yes/no answer
            answer = Program.yes_no(last[0], focus=last[1])
        else:
            answer = last
        return CompiledCric(answer, program, attentions)

    # -- concepts -------------------------------------------------------------------------
    def _word(self, raw: str) -> tuple[Predicate, Optional[str]]:
        """A Find/Verify word: an attribute value or a name; the name's form when it is one."""
        pred = self.concepts.value(raw, None)
        return pred, (pred.name if pred.kind == "name" else None)

    def _knowledge(self, step: CricStep, arity: int) -> Predicate:
        relation, text = step.text_input[0], " ".join(step.text_input[1:])
        if relation not in self.knowledge_relations:
            known = ", ".join(sorted(self.knowledge_relations)) or "none: give a knowledge base"
            raise CompileError(f"unknown knowledge relation {relation!r} (known: {known})", reason="unknown concept")
        name = f"{relation}:{text}" if text else relation
        return self.concepts.pred(name, arity, KG)

    # -- functions (each: step, its inputs, what it yields) ------------------------------
    def _initial(self, step, inputs, kind) -> _Objects:
        return _Objects(Top(), None, everything=True)

    def _find(self, step, inputs, kind) -> _Objects:
        (x,) = inputs
        attention, source = x.attention, x.source
        for raw in step.text_input:
            pred, name = self._word(raw)
            attention = Filter(pred, attention)
            source = name or source
        return _Objects(attention, source)

    def _find_hyponym(self, step, inputs, kind) -> _Objects:
        (x,) = inputs
        pred = self.concepts.name(step.text_input[0])
        return _Objects(Filter(pred, x.attention), pred.name)

    def _relate(self, step, inputs, kind, reverse: bool = True) -> _Objects:
        (x,) = inputs
        # Relate.of(p, q, X) attends the first argument of p: reverse=True asks for the second
        return _Objects(Relate.of(self.concepts.relation(step.text_input[0]), EXISTS, x.attention, reverse=reverse),
                        None)

    def _relate_reverse(self, step, inputs, kind) -> _Objects:
        return self._relate(step, inputs, kind, reverse=False)

    def _find_kg(self, step, inputs, kind) -> _Objects:
        (x,) = inputs
        if x.everything:  # no region fills the tail: a fact about the head's class alone
            if len(step.text_input) < 2:
                raise CompileError("right after 'Initial' the knowledge query needs its tail: [RELATION, TAIL]",
                                   reason="unsupported")
            return _Objects(Filter(self._knowledge(step, 1), Top()), None)
        return _Objects(Relate.of(self._knowledge(step, 2), EXISTS, x.attention), None)

    def _find_kg_reverse(self, step, inputs, kind) -> _Objects:
        (x,) = inputs
        return _Objects(Relate.of(self._knowledge(step, 2), EXISTS, x.attention, reverse=True), None)

    def _verify(self, step, inputs, kind) -> tuple[Truth, Attention]:
        (x,) = inputs
        attention = x.attention
        for raw in step.text_input:
            attention = Filter(self._word(raw)[0], attention)
        # the eligible objects are the focus: CRIC's grounding of a "yes"
        return Aggregate(EXISTS, attention), attention

    def _recognition(self, step, inputs, kind) -> Program:
        (x,) = inputs
        type_ = step.text_input[0]
        preds, labels = self.concepts.candidates(type_, x.source)
        if not preds:
            raise CompileError(f"no {type_} values to recognize", reason="unknown concept")
        return Program((AggregateEach(EXISTS, preds, x.attention),), labels, focus=x.attention)

    def _and(self, step, inputs, kind):
        a, b = inputs
        if kind is CricKind.OBJECTS:
            return _Objects(Conjoin(a.attention, b.attention), a.source or b.source)
        # both answers are about their own objects: the focus is either's (Neg ⊙ Neg: a union)
        return And((a[0], b[0])), Neg(Conjoin(Neg(a[1]), Neg(b[1])))
