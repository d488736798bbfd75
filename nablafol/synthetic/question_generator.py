"""GQA questions about a scene, from templates, answered by the crisp executor.

Every question is built as a `dsl.ast.Program` (with natural question text and GQA's
fields), then evaluated by :class:`~nablafol.synthetic.crisp.CrispExecutor`: its answer is
the executor's, and the ids in parentheses are the objects each step grounds in the
executor's run. A question whose answer is not defined (not unique) is dropped.

Objects are referred to by the shortest description that picks exactly one of them, as
GQA's own questions do: ``the dog`` (its class is unique), ``the animal`` (its category
is), ``the red car`` (``filter color``), ``the chair that is not wooden`` (``filter
material: not(wood)``), ``the man on the left`` (``filter hposition``), ``the cup on the
table`` (``relate: cup,on,s`` from a unique anchor) or ``the hat worn by the man``
(``relate: hat,wearing,o``).

Families (each makes one question or a cluster about one fact; ``types`` are GQA's):

| family | operations | structural / semantic / detailed |
| --- | --- | --- |
| attribute | query T, verify T (yes and no), choose T | query, verify, choose / attr / queryAttr, verifyAttr, chooseAttr |
| position | query hposition, verify/choose hposition or vposition | query, verify, choose / attr / positionQuery, positionVerify, positionChoose |
| scene | query, verify, choose of location or weather on ``select: scene`` | query, verify, choose / global / locationQuery, weatherVerify, ... |
| name | query name after a category filter, a relate (``s``/``o``, named by ``_``, a category or ``person``) or a ``same color`` relate | query / cat, rel / categoryAttr, relS, relO, categoryRelS, categoryRelO, sameRelate |
| exist | exist after select, a typed or untyped filter, a ``not(...)`` filter or a relate | verify / obj, attr, rel / exist, existAttr, existAttrNot, existRelS, existRelO |
| relation | verify rel (``s`` and ``o``, yes and no), choose rel (left/right, on/under, above/below, wearing/holding) | verify, choose / rel / relVerify, relChooser |
| logic | and/or of two exists, or of two verifies sharing their input | logical / obj, attr / logicAnd, logicOr, verifyAttrs, verifyAttrsOr |
| compare | choose COMP over two branches | compare / attr / compare |
| two-same | same T / different T over two objects | compare / attr / twoSame, twoDifferent |
| all-same | same: T / different: T over one set | compare / attr / allSame, allDifferent |
| common | common | compare / attr / twoCommon |

Each question lists the *facts* it is about (``attr:ID:color``, ``scene:weather``...);
questions of one scene that share a fact are each other's ``entailed`` questions (so the
answers to "What color is the car?", "Is the car red?" and "Is the car red or blue?" must
agree, and consistency is measurable). Yes/no answers are drawn to be about 50/50 and
:func:`balance_yes_no` evens them out exactly.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import numpy as np

from nablafol.dsl.ast import Objects, Program, Relation

from nablafol.data import Question
from nablafol.data.questions import encode_extra

from .annotations import annotate
from .crisp import CrispExecutor, Execution, UndefinedAnswerError
from .vocabulary import Vocabulary

from .drafting import Draft, GeneratedQuestion, SceneView, Ref
from .families_comparisons import family_all_same, family_common, family_compare, family_logic, family_two_same
from .families_objects import family_attribute, family_name, family_position, family_scene
from .families_relations import family_exist, family_relation

__all__ = ["QuestionGenerator", "GeneratedQuestion", "Ref", "balance_yes_no", "to_questions", "FAMILIES"]


# family -> (function, weight)
FAMILIES: dict[str, tuple[Callable[[SceneView, np.random.Generator], list[Draft]], float]] = {
    "attribute": (family_attribute, 2.2),
    "position": (family_position, 1.2),
    "scene": (family_scene, 0.7),
    "name": (family_name, 1.6),
    "exist": (family_exist, 1.6),
    "relation": (family_relation, 1.6),
    "logic": (family_logic, 1.0),
    "compare": (family_compare, 1.2),
    "two-same": (family_two_same, 0.8),
    "all-same": (family_all_same, 0.5),
    "common": (family_common, 0.6),
}


# ----------------------------------------------------------------------------- the generator

class QuestionGenerator:
    """Questions about scenes: ``generator.for_scene(graph, rng, count)``."""

    def __init__(self, vocabulary: Vocabulary, executor: CrispExecutor | None = None):
        self.vocabulary = vocabulary
        self.executor = executor if executor is not None else CrispExecutor(vocabulary.ontology())
        names = list(FAMILIES)
        weights = np.array([FAMILIES[n][1] for n in names])
        self._families, self._weights = names, weights / weights.sum()

    def for_scene(self, graph, rng: np.random.Generator, count: int = 10) -> list[GeneratedQuestion]:
        """Up to ``count`` (and a few more, to finish a cluster) distinct questions."""
        view = SceneView(self.executor.facts(graph), self.vocabulary, self.executor)
        out: list[GeneratedQuestion] = []
        seen: set[str] = set()
        for _ in range(8 * count):
            if len(out) >= count:
                break
            family = self._families[int(rng.choice(len(self._families), p=self._weights))]
            for draft in FAMILIES[family][0](view, rng):
                key = draft.program.to_semantic_str()
                if key in seen:
                    continue
                question = self.finish(draft, view)
                if question is not None:
                    seen.add(key)
                    out.append(question)
        return out

    def finish(self, draft: Draft, view: SceneView) -> GeneratedQuestion | None:
        """The crisp answer and grounded ids of a draft; None when its answer is undefined."""
        try:
            execution = self.executor.run(draft.program, view.facts)
        except UndefinedAnswerError:
            return None
        program = with_grounding(draft.program, execution)
        structural, semantic, detailed = draft.types
        full_answer = draft.full_answer(execution.answer)
        return GeneratedQuestion(
            image_id=view.graph.image_id, program=program, text=draft.text, answer=execution.answer,
            full_answer=full_answer, types={"structural": structural, "semantic": semantic, "detailed": detailed},
            groups={"global": draft.group_global, "local": draft.group_local}, facts=draft.facts,
            annotations=annotate(draft.program, execution, draft.text, full_answer, execution.answer))


def with_grounding(program: Program, execution: Execution) -> Program:
    """The program with GQA's object ids: each naming step's grounded objects."""
    steps = []
    for step, ids in zip(program.steps, execution.grounding):
        if ids is not None and isinstance(step.argument, (Objects, Relation)):
            step = dataclasses.replace(step, argument=step.argument.with_ids(tuple(ids)))
        steps.append(step)
    return Program(tuple(steps))


def balance_yes_no(questions: Sequence[GeneratedQuestion], rng: np.random.Generator) -> list[GeneratedQuestion]:
    """Drop randomly chosen binary questions of the more frequent answer until yes and no
    are equally many (order kept)."""
    yes = [i for i, q in enumerate(questions) if q.is_binary and q.answer == "yes"]
    no = [i for i, q in enumerate(questions) if q.is_binary and q.answer == "no"]
    more = yes if len(yes) > len(no) else no
    surplus = abs(len(yes) - len(no))
    dropped = set(rng.choice(more, size=surplus, replace=False).tolist()) if surplus else set()
    return [q for i, q in enumerate(questions) if i not in dropped]


def to_questions(questions: Sequence[GeneratedQuestion], first_id: int) -> list[Question]:
    """GQA records with numeric ids from ``first_id``: ``entailed`` links the questions of
    one image that share a fact; ``equivalent`` is the question itself (as in GQA)."""
    ids = [str(first_id + k) for k in range(len(questions))]
    by_fact: dict[tuple[str, str], list[int]] = {}
    for k, q in enumerate(questions):
        for fact in q.facts:
            by_fact.setdefault((q.image_id, fact), []).append(k)
    out = []
    for k, q in enumerate(questions):
        linked = sorted({j for fact in q.facts for j in by_fact[(q.image_id, fact)] if j != k})
        out.append(Question(
            id=ids[k], image_id=q.image_id, question=q.text, answer=q.answer,
            semantic=tuple(q.program.to_semantic()), semantic_str=q.program.to_semantic_str(),
            entailed=tuple(ids[j] for j in linked), equivalent=(ids[k],), types=dict(q.types), is_balanced=True,
            extra_json=encode_extra({"fullAnswer": q.full_answer, "groups": q.groups,
                                     "annotations": q.annotations})))
    return out
