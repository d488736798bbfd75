"""The building blocks of the embedded dataset's questions: programs built step by step
(:class:`Builder`), references to objects by their shortest unique description (:class:`Ref`,
found by :class:`SceneView`), drafts of questions (:class:`Draft`) and finished questions
(:class:`GeneratedQuestion`). The families (``families_*``) build on them.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from nablafol.dsl.ast import Empty, Objects, Program, Relation, Step, Value


from .crisp import CrispExecutor, SceneFacts, UndefinedAnswerError
from .text import INVERSE_PHRASE, RELATION_PHRASE, adjective, be, capitalize, describe
from .vocabulary import Vocabulary



# attribute types asked about objects, and the ones that make good references
ASKED_TYPES = ("color", "material", "shape", "pattern", "size", "age", "cleanliness", "pose")
REF_TYPES = ("color", "material", "pattern", "size", "age", "cleanliness", "pose", "shape")
SAME_TYPES = ("color", "material", "shape")
REF_CATEGORIES = ("person", "animal", "vehicle", "furniture", "fruit", "vegetable", "device")
QUERY_TEXT = {
    "color": "What color {be} {r}?", "material": "What material {be} {r} made of?",
    "shape": "What shape {be} {r}?", "pattern": "What pattern {do} {r} have?", "size": "How big {be} {r}?",
    "age": "How old {be} {r}?", "cleanliness": "How clean {be} {r}?", "pose": "What {be} {r} doing?",
    "hposition": "On which side of the image {be} {r}?",
}
# relation families: which stored relations a choose rel contrasts, and the fact they are about
RELATION_FAMILY = {"to the left of": "horizontal", "to the right of": "horizontal", "above": "vertical",
                    "below": "vertical", "on": "support", "under": "support", "wearing": "carry",
                    "holding": "carry", "near": "near"}
CONTRAST = {"horizontal": ("to the left of", "to the right of"), "vertical": ("above", "below"),
             "support": ("on", "under"), "carry": ("wearing", "holding")}
COMPARATIVE_TEXTS = {  # comparative -> (text, axis of the fact it is about)
    "larger": ("larger", "size"), "smaller": ("smaller", "size"), "taller": ("taller", "height"),
    "shorter": ("shorter", "height"), "longer": ("longer", "length"), "higher": ("higher", "vertical"),
    "lower": ("lower", "vertical"), "older": ("older", "age"), "younger": ("younger", "age"),
    "healthier": ("healthier", "health"), "less healthy": ("less healthy", "health"),
}


# ----------------------------------------------------------------------------- building blocks

class Builder:
    """Appends steps; each `add` returns the new step's index."""

    def __init__(self) -> None:
        self.steps: list[Step] = []

    def add(self, operation: str, type_: str | None, argument, *dependencies: int) -> int:
        self.steps.append(Step(operation, type_, argument, tuple(dependencies)))
        return len(self.steps) - 1

    def program(self) -> Program:
        return Program(tuple(self.steps))


@dataclass(frozen=True)
class Ref:
    """A description that picks exactly one object: its text ('the red car'), the name
    written in the select or relate that names it, the noun it agrees with, which kind
    of description it is (name, category, attr, not, position, relation), the attribute
    type it filters on (if any) and how to emit its steps."""

    object_id: str
    text: str
    name: str
    noun: str
    kind: str
    uses_type: str | None
    emit: Callable[[Builder], int]


@dataclass(frozen=True)
class Draft:
    program: Program
    text: str
    full_answer: Callable[[str], str]
    types: tuple[str, str, str]  # structural, semantic, detailed
    group_global: str | None
    group_local: str
    facts: tuple[str, ...]


@dataclass(frozen=True)
class GeneratedQuestion:
    """A question before ids: its program (with grounded ids), text, crisp answer and GQA's
    descriptive fields, and the facts it is about (for ``entailed``)."""

    image_id: str
    program: Program
    text: str
    answer: str
    full_answer: str
    types: dict
    groups: dict
    facts: tuple[str, ...]
    annotations: dict = dataclasses.field(default_factory=dict)  # GQA's: words -> objects (annotations.py)

    @property
    def is_binary(self) -> bool:
        return self.program.is_binary


class SceneView:
    """The facts of one scene in the form the templates need."""

    def __init__(self, facts: SceneFacts, vocabulary: Vocabulary, executor: CrispExecutor):
        self.facts, self.vocabulary, self.executor = facts, vocabulary, executor
        self.graph = facts.graph
        self.ids = facts.objects
        self.cls = facts.class_of
        self.location = facts.graph.location
        self.weather = facts.graph.weather
        self._refs: dict[str, list[Ref]] = {}

    def named(self, name: str) -> list[str]:
        return [o for o in self.ids if name in self.facts.names_of[o]]

    def value(self, object_id: str, type_name: str) -> str | None:
        values = sorted(self.facts.values(object_id, type_name))
        return values[0] if len(values) == 1 else None

    def names_present(self) -> list[str]:
        present = {n for o in self.ids for n in self.facts.names_of[o]}
        return [n for n in (*self.vocabulary.classes, *self.vocabulary.categories) if n in present]

    def names_absent(self) -> list[str]:
        """Names not in the scene, among those the scene's location could hold."""
        from .scenes import LAYOUTS
        present = set(self.names_present())
        plausible = [c for c in self.vocabulary.classes if self.location in LAYOUTS[c].places]
        cats = [c for c in self.vocabulary.categories
                if any(m in plausible for m in self.vocabulary.categories[c])]
        return list(dict.fromkeys(n for n in plausible + cats if n not in present))

    def pairs(self, relation: str) -> list[tuple[str, str]]:
        order = self.facts.order
        return sorted(self.facts.stored.get(relation, ()), key=lambda p: (order[p[0]], order[p[1]]))

    # -- references -------------------------------------------------------------------------
    def refs(self, object_id: str) -> list[Ref]:
        """Every description that picks exactly this object (checked by the executor)."""
        if object_id not in self._refs:
            self._refs[object_id] = [r for r in self._candidate_refs(object_id) if self._picks(r)]
        return self._refs[object_id]

    def ref(self, rng, object_id: str, exclude_kinds: Iterable[str] = (), exclude_type: str | None = None,
            ) -> Ref | None:
        weights = {"name": 6.0, "category": 1.0, "attr": 2.5, "not": 0.6, "position": 1.0, "relation": 1.5}
        options = [r for r in self.refs(object_id)
                   if r.kind not in set(exclude_kinds) and (exclude_type is None or r.uses_type != exclude_type)]
        if not options:
            return None
        w = np.array([weights[r.kind] for r in options])
        return options[int(rng.choice(len(options), p=w / w.sum()))]

    def _picks(self, ref: Ref) -> bool:
        b = Builder()
        last = ref.emit(b)
        b.add("exist", None, Empty("?"), last)
        try:
            result = self.executor.run(b.program(), self.facts).results[last]
        except UndefinedAnswerError:
            return False
        return result == frozenset({ref.object_id})

    def _candidate_refs(self, o: str) -> list[Ref]:
        cls = self.cls[o]
        same_class = [x for x in self.named(cls) if x != o]
        out: list[Ref] = []

        def select(name):
            return lambda b: b.add("select", None, Objects(name))

        if not same_class:
            out.append(Ref(o, f"the {cls}", cls, cls, "name", None, select(cls)))
        for category in REF_CATEGORIES:
            if category in self.facts.names_of[o] and category != cls and self.named(category) == [o]:
                out.append(Ref(o, f"the {category}", category, category, "category", None, select(category)))
        if same_class:
            for type_name in REF_TYPES:
                value = self.value(o, type_name)
                others = [self.value(x, type_name) for x in same_class]
                if value is not None and value not in others:
                    out.append(Ref(o, f"the {adjective(type_name, value)} {cls}", cls, cls, "attr", type_name,
                                   _filtered(cls, type_name, Value(value))))
                if value is None and others and all(v is not None for v in others) and len(set(others)) == 1:
                    held = others[0]
                    out.append(Ref(o, f"the {cls} that {be(cls)} not {adjective(type_name, held)}", cls, cls, "not",
                                   type_name, _filtered(cls, type_name, Value(held, negated=True))))
            for type_name, side in (("hposition", "on the {}"), ("vposition", "at the {}")):
                value = self.value(o, type_name)
                if value != "middle" and value not in [self.value(x, type_name) for x in same_class]:
                    out.append(Ref(o, f"the {cls} {side.format(value)}", cls, cls, "position", type_name,
                                   _filtered(cls, type_name, Value(value))))
        for relation in ("on", "wearing", "holding", "under", "near"):
            for subject, obj in self.pairs(relation):
                if o not in (subject, obj):
                    continue
                anchor = obj if subject == o else subject
                if self.cls[anchor] == cls or len(self.named(self.cls[anchor])) != 1:
                    continue
                role = "s" if subject == o else "o"
                phrase = RELATION_PHRASE[relation] if role == "s" else INVERSE_PHRASE[relation]
                out.append(Ref(o, f"the {cls} {phrase} the {self.cls[anchor]}", cls, cls, "relation", None,
                               _related(self.cls[anchor], cls, relation, role)))
        return out


def _filtered(name: str, type_name: str, value: Value):
    def emit(b: Builder) -> int:
        return b.add("filter", type_name, value, b.add("select", None, Objects(name)))
    return emit


def _related(anchor: str, name: str, relation: str, role: str):
    def emit(b: Builder) -> int:
        return b.add("relate", None, Relation(name, (relation,), role), b.add("select", None, Objects(anchor)))
    return emit


# ----------------------------------------------------------------------------- families

def pick(rng, items: Sequence):
    return items[int(rng.integers(len(items)))] if len(items) else None


def other_value(rng, view: SceneView, object_id: str, type_name: str) -> str | None:
    """A value of the type the object does not have (from its class's palette if possible)."""
    held = view.facts.values(object_id, type_name)
    palette = [v for v in view.vocabulary.palette(view.cls[object_id], type_name) if v not in held]
    if not palette:
        palette = [v for v in view.facts.ontology.values_of(type_name) if v not in held]
        palette = [v for v in sorted(palette) if type_name not in ("hposition", "vposition") or v != "middle"]
    return pick(rng, sorted(palette) if palette else [])


def yes_no_state(r: Ref, type_name: str, asked: str, actual: str | None):
    def full(answer: str) -> str:
        if answer == "yes":
            return f"Yes, {r.text} {be(r.noun)} {describe(type_name, asked)}."
        if actual is not None:
            return f"No, {r.text} {be(r.noun)} {describe(type_name, actual)}."
        return f"No, {r.text} {be(r.noun)} not {describe(type_name, asked)}."
    return full


def statement(r: Ref, type_name: str):
    return lambda answer: capitalize(f"{r.text} {be(r.noun)} {describe(type_name, answer)}.")


def related_pair(view: SceneView, rng, relations):
    """A relation and a pair in it, oriented at random: (relation, asked, anchor, role, ref) or None."""
    relation = pick(rng, relations)
    pair = pick(rng, view.pairs(relation))
    if pair is None:
        return None
    subject, obj = pair
    asked, anchor, role = (subject, obj, "s") if rng.random() < 0.5 else (obj, subject, "o")
    r = view.ref(rng, anchor, exclude_kinds=("relation",))
    return None if r is None else (relation, asked, anchor, role, r)


def pair_key(view: SceneView, x: str, y: str) -> str:
    first, second = sorted((x, y), key=lambda i: view.facts.order[i])
    return f"{first}:{second}"
