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
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from nablafol.dsl.ast import Alternatives, AttributeType, Empty, Objects, Program, Relation, Scene, Step, Value

from nablafol.data import Question
from nablafol.data.questions import encode_extra

from .annotations import annotate
from .crisp import CrispExecutor, Execution, SceneFacts, UndefinedAnswerError
from .text import INVERSE_PHRASE, MASS, RELATION_PHRASE, a, adjective, be, capitalize, describe, do, plural
from .vocabulary import LOCATIONS, Vocabulary

__all__ = ["QuestionGenerator", "GeneratedQuestion", "Ref", "balance_yes_no", "to_questions", "FAMILIES"]

# attribute types asked about objects, and the ones that make good references
_ASKED_TYPES = ("color", "material", "shape", "pattern", "size", "age", "cleanliness", "pose")
_REF_TYPES = ("color", "material", "pattern", "size", "age", "cleanliness", "pose", "shape")
_SAME_TYPES = ("color", "material", "shape")
_REF_CATEGORIES = ("person", "animal", "vehicle", "furniture", "fruit", "vegetable", "device")
_QUERY_TEXT = {
    "color": "What color {be} {r}?", "material": "What material {be} {r} made of?",
    "shape": "What shape {be} {r}?", "pattern": "What pattern {do} {r} have?", "size": "How big {be} {r}?",
    "age": "How old {be} {r}?", "cleanliness": "How clean {be} {r}?", "pose": "What {be} {r} doing?",
    "hposition": "On which side of the image {be} {r}?",
}
# relation families: which stored relations a choose rel contrasts, and the fact they are about
_RELATION_FAMILY = {"to the left of": "horizontal", "to the right of": "horizontal", "above": "vertical",
                    "below": "vertical", "on": "support", "under": "support", "wearing": "carry",
                    "holding": "carry", "near": "near"}
_CONTRAST = {"horizontal": ("to the left of", "to the right of"), "vertical": ("above", "below"),
             "support": ("on", "under"), "carry": ("wearing", "holding")}
_COMPARATIVES = {  # comparative -> (text, axis of the fact it is about)
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
        for category in _REF_CATEGORIES:
            if category in self.facts.names_of[o] and category != cls and self.named(category) == [o]:
                out.append(Ref(o, f"the {category}", category, category, "category", None, select(category)))
        if same_class:
            for type_name in _REF_TYPES:
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

def _pick(rng, items: Sequence):
    return items[int(rng.integers(len(items)))] if len(items) else None


def _other_value(rng, view: SceneView, object_id: str, type_name: str) -> str | None:
    """A value of the type the object does not have (from its class's palette if possible)."""
    held = view.facts.values(object_id, type_name)
    palette = [v for v in view.vocabulary.palette(view.cls[object_id], type_name) if v not in held]
    if not palette:
        palette = [v for v in view.facts.ontology.values_of(type_name) if v not in held]
        palette = [v for v in sorted(palette) if type_name not in ("hposition", "vposition") or v != "middle"]
    return _pick(rng, sorted(palette) if palette else [])


def _yes_no_state(r: Ref, type_name: str, asked: str, actual: str | None):
    def full(answer: str) -> str:
        if answer == "yes":
            return f"Yes, {r.text} {be(r.noun)} {describe(type_name, asked)}."
        if actual is not None:
            return f"No, {r.text} {be(r.noun)} {describe(type_name, actual)}."
        return f"No, {r.text} {be(r.noun)} not {describe(type_name, asked)}."
    return full


def _statement(r: Ref, type_name: str):
    return lambda answer: capitalize(f"{r.text} {be(r.noun)} {describe(type_name, answer)}.")


def family_attribute(view: SceneView, rng) -> list[Draft]:
    """Query / verify (yes, no) / choose of one attribute of one object."""
    options = [(o, t) for o in view.ids for t in _ASKED_TYPES if view.value(o, t) is not None]
    choice = _pick(rng, options)
    if choice is None:
        return []
    o, t = choice
    r = view.ref(rng, o, exclude_type=t)
    if r is None:
        return []
    value, other = view.value(o, t), _other_value(rng, view, o, t)
    fact, local = (f"attr:{o}:{t}",), f"{view.cls[o]}_{t}"
    drafts = [_query_draft(r, t, ("query", "attr", "queryAttr"), fact, local)]
    drafts.append(_verify_draft(r, t, value, value, ("verify", "attr", "verifyAttr"), fact, local))
    if other is not None:
        drafts.append(_verify_draft(r, t, other, value, ("verify", "attr", "verifyAttr"), fact, local))
        pair = (value, other) if rng.random() < 0.5 else (other, value)
        drafts.append(_choose_draft(r, t, pair, ("choose", "attr", "chooseAttr"), fact, local))
    keep = sorted(rng.choice(len(drafts), size=min(len(drafts), int(rng.integers(2, 5))), replace=False))
    return [drafts[i] for i in keep]


def _query_draft(r: Ref, t: str, types, facts, local) -> Draft:
    b = Builder()
    b.add("query", None, AttributeType(t), r.emit(b))
    text = _QUERY_TEXT[t].format(be=be(r.noun), do=do(r.noun), r=r.text)
    return Draft(b.program(), text, _statement(r, t), types, t, f"{types[2]}-{local}", facts)


def _verify_draft(r: Ref, t: str, asked: str, actual: str | None, types, facts, local) -> Draft:
    b = Builder()
    b.add("verify", t, Value(asked), r.emit(b))
    text = f"{capitalize(be(r.noun))} {r.text} {describe(t, asked)}?"
    return Draft(b.program(), text, _yes_no_state(r, t, asked, actual), types, None,
                 f"{types[2]}-{local}_{asked}", facts)


def _choose_draft(r: Ref, t: str, pair, types, facts, local) -> Draft:
    b = Builder()
    b.add("choose", t, Alternatives(tuple(pair)), r.emit(b))
    if t == "material":
        options = f"made of {pair[0]} or {pair[1]}"
    elif t == "hposition":
        options = f"on the {pair[0]} or on the {pair[1]} of the image"
    elif t == "vposition":
        options = f"at the {pair[0]} or at the {pair[1]} of the image"
    else:
        options = f"{pair[0]} or {pair[1]}"
    text = f"{capitalize(be(r.noun))} {r.text} {options}?"
    return Draft(b.program(), text, _statement(r, t), types, None, f"{types[2]}-{local}_{'|'.join(sorted(pair))}",
                 facts)


def family_position(view: SceneView, rng) -> list[Draft]:
    """Where an object is: query hposition, verify and choose hposition or vposition."""
    o = _pick(rng, view.ids)
    t = "hposition" if rng.random() < 0.6 else "vposition"
    r = view.ref(rng, o, exclude_kinds=("position",))
    if r is None:
        return []
    value, other = view.value(o, t), _other_value(rng, view, o, t)
    fact, local = (f"pos:{o}:{t}",), f"{view.cls[o]}_{t}"
    drafts = []
    if t == "hposition":
        drafts.append(_query_draft(r, t, ("query", "attr", "positionQuery"), fact, local))
    drafts.append(_verify_draft(r, t, value, value, ("verify", "attr", "positionVerify"), fact, local))
    if other is not None:
        drafts.append(_verify_draft(r, t, other, value, ("verify", "attr", "positionVerify"), fact, local))
    if value != "middle":
        ends = ("left", "right") if t == "hposition" else ("top", "bottom")
        pair = ends if rng.random() < 0.5 else ends[::-1]
        drafts.append(_choose_draft(r, t, pair, ("choose", "attr", "positionChoose"), fact, local))
    keep = sorted(rng.choice(len(drafts), size=min(len(drafts), int(rng.integers(1, 4))), replace=False))
    return [drafts[i] for i in keep]


def family_scene(view: SceneView, rng) -> list[Draft]:
    """Location or weather of the whole image (``select: scene``)."""
    if view.weather is not None and rng.random() < 0.5:
        t, value, values = "weather", view.weather, view.vocabulary.weathers
    else:
        t, value, values = "location", view.location, LOCATIONS
    other = _pick(rng, [v for v in values if v != value])
    fact = (f"scene:{t}",)

    def scene(b: Builder) -> int:
        return b.add("select", None, Scene())

    def it_is(answer: str) -> str:
        return f"It is {answer}."

    drafts = []
    b = Builder()
    b.add("query", None, AttributeType(t), scene(b))
    text = "How is the weather in the image?" if t == "weather" else "Where was this picture taken?"
    drafts.append(Draft(b.program(), text, it_is, ("query", "global", f"{t}Query"), t, f"{t}Query", fact))
    for asked in (value, other):
        b = Builder()
        b.add("verify", t, Value(asked), scene(b))
        text = f"Is it {asked}?" if t == "weather" else f"Is this picture taken {asked}?"

        def full(answer, asked=asked):
            return f"Yes, it is {asked}." if answer == "yes" else f"No, it is {value}."
        drafts.append(Draft(b.program(), text, full, ("verify", "global", f"{t}Verify"), None,
                            f"{t}Verify-{asked}", fact))
    pair = (value, other) if rng.random() < 0.5 else (other, value)
    b = Builder()
    b.add("choose", t, Alternatives(pair), scene(b))
    text = f"Is it {pair[0]} or {pair[1]}?" if t == "weather" else f"Is the scene {pair[0]} or {pair[1]}?"
    drafts.append(Draft(b.program(), text, it_is, ("choose", "global", f"{t}Choose"), None, f"{t}Choose", fact))
    keep = sorted(rng.choice(len(drafts), size=int(rng.integers(1, 4)), replace=False))
    return [drafts[i] for i in keep]


def family_name(view: SceneView, rng) -> list[Draft]:
    """What is it: query name after a category filter, a relate, or a same-color relate."""
    kind = _pick(rng, ("category", "relate", "relate", "same color"))
    if kind == "category":
        return _name_by_category(view, rng)
    if kind == "relate":
        return _name_by_relation(view, rng)
    return _name_by_same_color(view, rng)


def _it_is_a(answer: str) -> str:
    return capitalize(f"It is {a(answer)}.") if answer not in ("pants", "shorts", "glasses") else f"They are {answer}."


def _name_by_category(view: SceneView, rng) -> list[Draft]:
    o = _pick(rng, view.ids)
    categories = [c for c in view.vocabulary.categories_of(view.cls[o]) if c != view.cls[o]]
    category = _pick(rng, categories)
    if category is None:
        return []
    t = _pick(rng, [t for t in (*_REF_TYPES, "hposition") if view.value(o, t) is not None])
    if t is None:
        return []
    value = view.value(o, t)
    b = Builder()
    filtered = b.add("filter", t, Value(value), b.add("select", None, Objects(category)))
    b.add("query", None, AttributeType("name"), filtered)
    text = f"What kind of {category} is {describe(t, value)}?"
    return [Draft(b.program(), text, _it_is_a, ("query", "cat", "categoryAttr"), category,
                  f"categoryAttr-{category}_{value}", (f"name:{o}",))]


def _related_pair(view: SceneView, rng, relations):
    """A relation and a pair in it, oriented at random: (relation, asked, anchor, role, ref) or None."""
    relation = _pick(rng, relations)
    pair = _pick(rng, view.pairs(relation))
    if pair is None:
        return None
    subject, obj = pair
    asked, anchor, role = (subject, obj, "s") if rng.random() < 0.5 else (obj, subject, "o")
    r = view.ref(rng, anchor, exclude_kinds=("relation",))
    return None if r is None else (relation, asked, anchor, role, r)


def _name_by_relation(view: SceneView, rng) -> list[Draft]:
    found = _related_pair(view, rng, ("on", "wearing", "holding", "near", "to the left of", "above", "under"))
    if found is None:
        return []
    relation, asked, anchor, role, r = found
    subject, obj = (asked, anchor) if role == "s" else (anchor, asked)
    categories = [c for c in view.vocabulary.categories_of(view.cls[asked]) if c != view.cls[asked]]
    name = _pick(rng, categories) if rng.random() < 0.5 and categories else "_"
    if relation in ("wearing", "holding") and role == "s":
        name = "person"
    b = Builder()
    b.add("query", None, AttributeType("name"), b.add("relate", None, Relation(name, (relation,), role), r.emit(b)))
    phrase = RELATION_PHRASE[relation]
    if role == "s":
        if name == "person":
            text = f"Who is {phrase} {r.text}?"
        elif name == "_":
            text = f"What is {phrase} {r.text}?"
        else:
            text = f"What kind of {name} is {phrase} {r.text}?"
        full = lambda answer: capitalize(f"{a(answer)} {be(answer)} {phrase} {r.text}.")  # noqa: E731
    else:
        what = "What" if name == "_" else f"What kind of {name}"
        text = f"{what} {be(r.noun)} {r.text} {phrase}?"
        full = lambda answer: capitalize(f"{r.text} {be(r.noun)} {phrase} {a(answer)}.")  # noqa: E731
    detailed = ("rel" if name in ("_", "person") else "categoryRel") + role.upper()
    return [Draft(b.program(), text, full, ("query", "rel", detailed), None if name == "_" else name,
                  f"{detailed}-{view.cls[anchor]}_{relation},{role}",
                  (f"name:{asked}", f"rel:{_pair_key(view, subject, obj)}:{_RELATION_FAMILY[relation]}"))]


def _name_by_same_color(view: SceneView, rng) -> list[Draft]:
    o = _pick(rng, [x for x in view.ids if view.value(x, "color") is not None])
    if o is None:
        return []
    r = view.ref(rng, o, exclude_type="color", exclude_kinds=("relation",))
    others = [x for x in view.ids if x != o and view.value(x, "color") == view.value(o, "color")]
    if r is None or len(others) != 1:
        return []
    categories = [c for c in view.vocabulary.categories_of(view.cls[others[0]]) if c != view.cls[others[0]]]
    name = _pick(rng, categories) or "_"
    b = Builder()
    b.add("query", None, AttributeType("name"),
          b.add("relate", None, Relation(name, ("same color",), "s"), r.emit(b)))
    what = "What" if name == "_" else f"What kind of {name}"
    text = f"{what} has the same color as {r.text}?"
    return [Draft(b.program(), text, lambda ans: capitalize(f"{a(ans)} {be(ans)} the same color as {r.text}."),
                  ("query", "rel", "sameRelate"), None if name == "_" else name, f"sameRelate-{view.cls[o]}_color",
                  (f"name:{others[0]}",))]


def _pair_key(view: SceneView, x: str, y: str) -> str:
    first, second = sorted((x, y), key=lambda i: view.facts.order[i])
    return f"{first}:{second}"


def _exists_text(phrase: str, noun: str) -> str:
    if noun in ("pants", "shorts", "glasses"):
        return f"Are there {phrase} in the image?"
    return f"Is there {a(phrase, noun)} in the image?"


def _exists_answer(phrase: str, noun: str):
    def full(answer: str) -> str:
        if answer == "yes":
            return f"Yes, there {be(noun)} {a(phrase, noun)}."
        if phrase.endswith(noun):  # "red cars": the noun ends the phrase
            return f"No, there are no {plural(phrase)}."
        return f"No, there {be(noun)} no {phrase}."
    return full


def family_exist(view: SceneView, rng) -> list[Draft]:
    """Is there ...: after a select, a filter (typed, untyped, negated) or a relate."""
    kind = _pick(rng, ("name", "filter", "filter", "not", "relate", "relate"))
    want = bool(rng.random() < 0.5)
    if kind == "name":
        name = _pick(rng, view.names_present() if want else view.names_absent())
        if name is None:
            return []
        b = Builder()
        b.add("exist", None, Empty("?"), b.add("select", None, Objects(name)))
        return [Draft(b.program(), _exists_text(name, name), _exists_answer(name, name), ("verify", "obj", "exist"),
                      None, f"exist-{name}", (f"exist:{name}",))]
    if kind in ("filter", "not"):
        name = _pick(rng, [c for c in view.vocabulary.classes if view.named(c)])
        t = _pick(rng, [t for t in view.vocabulary.types_of(name) if t in _REF_TYPES])
        if t is None:
            return []
        held = {view.value(x, t) for x in view.named(name)}
        if kind == "filter":
            choices = [v for v in view.vocabulary.palette(name, t) if (v in held) == want]
        else:  # "is there one without v": yes iff some lacks v
            choices = [v for v in view.vocabulary.palette(name, t)
                       if any(view.value(x, t) != v for x in view.named(name)) == want]
        value = _pick(rng, choices)
        if value is None:
            return []
        typed = kind == "not" or rng.random() < 0.6
        b = Builder()
        b.add("exist", None, Empty("?"),
              b.add("filter", t if typed else None, Value(value, negated=kind == "not"),
                    b.add("select", None, Objects(name))))
        if kind == "filter":
            phrase = f"{adjective(t, value)} {name}"
            text, full = _exists_text(phrase, name), _exists_answer(phrase, name)
            detailed = "existAttr"
        else:
            text = f"Is there {a(name)} that {be(name)} not {describe(t, value)}?"
            full = (lambda ans, name=name, t=t, value=value:
                    f"Yes, there is {a(name)} that {be(name)} not {describe(t, value)}." if ans == "yes"
                    else f"No, all the {plural(name)} are {describe(t, value)}.")
            detailed = "existAttrNot"
        return [Draft(b.program(), text, full, ("verify", "attr", detailed), None, f"{detailed}-{name}_{value}",
                      (f"exist:{name}:{t}",))]
    return _exist_relation(view, rng, want)


def _exist_relation(view: SceneView, rng, want: bool) -> list[Draft]:
    found = _related_pair(view, rng, ("on", "wearing", "holding", "near", "to the left of", "below"))
    if found is None:
        return []
    relation, asked, anchor, role, r = found
    subject, obj = (asked, anchor) if role == "s" else (anchor, asked)
    if want:
        name = view.cls[asked] if rng.random() < 0.7 else _pick(rng, view.vocabulary.categories_of(view.cls[asked]))
    else:
        name = _pick(rng, _unrelated_names(view, relation, role, anchor))
        if name is None:
            return []
    b = Builder()
    b.add("exist", None, Empty("?"), b.add("relate", None, Relation(name, (relation,), role), r.emit(b)))
    phrase = RELATION_PHRASE[relation] if role == "s" else INVERSE_PHRASE[relation]
    described = f"{name} {phrase} {r.text}"
    detailed = "existRel" + role.upper()
    return [Draft(b.program(), _exists_text(described, name), _exists_answer(described, name),
                  ("verify", "rel", detailed), None, f"{detailed}-{view.cls[anchor]}_{relation}",
                  (f"exist:{name}:{relation}:{anchor}",))]


def _plausible(view: SceneView, relation: str, role: str) -> set[str]:
    """Classes that could fill a side of a relation (``role`` s: the subject, o: the object),
    so that "no" questions stay sensible ("Is the man wearing a hat?", never "... a dog?")."""
    from .scenes import LAYOUTS, SUPPORTS
    people = set(view.vocabulary.categories.get("person", ()))
    subject_side = {
        "wearing": people, "holding": people,
        "on": {c for c in view.vocabulary.classes if LAYOUTS[c].rests_on}, "under": set(SUPPORTS)}
    object_side = {
        "wearing": {c for c in view.vocabulary.classes if LAYOUTS[c].slot},
        "holding": {c for c in view.vocabulary.classes if LAYOUTS[c].holdable},
        "on": set(SUPPORTS), "under": {c for c in view.vocabulary.classes if LAYOUTS[c].rests_on}}
    side = subject_side if role == "s" else object_side
    return side.get(relation, set(view.vocabulary.classes)) & set(view.vocabulary.classes)


def _unrelated_names(view: SceneView, relation: str, role: str, anchor: str) -> list[str]:
    """Names (plausible classes and their categories) of which no object is in the relation
    with the anchor on that side: the names of "no" questions."""
    related = {(s if role == "s" else o) for s, o in view.pairs(relation) if (o if role == "s" else s) == anchor}
    taken = {n for z in related for n in view.facts.names_of[z]} | set(view.facts.names_of[anchor])
    plausible = _plausible(view, relation, role)
    present, absent = view.names_present(), view.names_absent()
    names = [n for n in present + absent if n not in taken and n != "object"
             and (n in plausible or set(view.vocabulary.categories.get(n, ())) & plausible)]
    return list(dict.fromkeys(names))


def family_relation(view: SceneView, rng) -> list[Draft]:
    """Verify rel (roles s and o; yes and no) and choose rel about one stored relation."""
    relation = _pick(rng, ("to the left of", "to the right of", "on", "wearing", "holding", "near", "above",
                           "below", "under"))
    pair = _pick(rng, view.pairs(relation))
    if pair is None:
        return []
    x, y = pair  # relation(x, y)
    family = _RELATION_FAMILY[relation]
    fact = (f"rel:{_pair_key(view, x, y)}:{family}",)
    drafts = []
    rx, ry = (view.ref(rng, o, exclude_kinds=("relation",)) for o in (x, y))
    for asked, described, role in ((y, rx, "o"), (x, ry, "s")):
        if described is None:
            continue
        phrase = RELATION_PHRASE[relation] if role == "o" else INVERSE_PHRASE[relation]
        for want in (True, False):
            if want:
                categories = view.vocabulary.categories_of(view.cls[asked])
                name = view.cls[asked] if rng.random() < 0.6 else _pick(rng, categories)
            else:
                name = _pick(rng, _unrelated_names(view, relation, role, described.object_id))
                if name is None:
                    continue
            b = Builder()
            b.add("verify", "rel", Relation(name, (relation,), role), described.emit(b))
            text = f"{capitalize(be(described.noun))} {described.text} {phrase} {a(name)}?"

            def full(answer, d=described, phrase=phrase, name=name):
                if answer == "yes":
                    return f"Yes, {d.text} {be(d.noun)} {phrase} {a(name)}."
                return f"No, {d.text} {be(d.noun)} not {phrase} {a(name)}."
            drafts.append(Draft(b.program(), text, full, ("verify", "rel", "relVerify"), None,
                                f"relVerify-{view.cls[described.object_id]}_{relation},{role}", fact))
    if family in _CONTRAST and ry is not None and len(view.named(view.cls[x])) == 1:
        options = _CONTRAST[family] if rng.random() < 0.5 else _CONTRAST[family][::-1]
        b = Builder()
        b.add("choose", "rel", Relation(view.cls[x], options, "s"), ry.emit(b))
        if family == "horizontal":
            text = f"Is the {view.cls[x]} to the left or to the right of {ry.text}?"
        else:
            text = f"{capitalize(be(view.cls[x]))} the {view.cls[x]} {options[0]} or {options[1]} {ry.text}?"
        subject = f"the {view.cls[x]}"

        def full(answer, subject=subject, ry=ry, noun=view.cls[x]):
            words = {"left": "to the left of", "right": "to the right of"}.get(answer, answer)
            return capitalize(f"{subject} {be(noun)} {words} {ry.text}.")
        drafts.append(Draft(b.program(), text, full, ("choose", "rel", "relChooser"), None,
                            f"relChooser-{view.cls[x]}_{family}", fact))
    if not drafts:
        return []
    keep = sorted(rng.choice(len(drafts), size=min(len(drafts), int(rng.integers(1, 4))), replace=False))
    return [drafts[i] for i in keep]


def family_logic(view: SceneView, rng) -> list[Draft]:
    """And/or of two exists, or of two verifies sharing one input."""
    operation = "and" if rng.random() < 0.5 else "or"
    if rng.random() < 0.5:
        want = bool(rng.random() < 0.5)
        present, absent = view.names_present(), view.names_absent()
        if operation == "and":
            states = (True, True) if want else ((True, False), (False, True), (False, False))[int(rng.integers(3))]
        else:
            states = ((True, True), (True, False), (False, True))[int(rng.integers(3))] if want else (False, False)
        names = []
        for state in states:
            name = _pick(rng, [n for n in (present if state else absent) if n not in names])
            if name is None:
                return []
            names.append(name)
        b = Builder()
        first = b.add("exist", None, Empty("?"), b.add("select", None, Objects(names[0])))
        second = b.add("exist", None, Empty("?"), b.add("select", None, Objects(names[1])))
        b.add(operation, None, Empty(), first, second)
        joined = f"{a(names[0])} {operation} {a(names[1])}"
        verb = capitalize(be(names[0])) + " there"
        text = (f"{verb} both {joined} in the image?" if operation == "and" else f"{verb} {joined} in the image?")

        def full(answer):
            if operation == "and":
                return (f"Yes, there are both {joined}." if answer == "yes" else f"No, there is not {joined}.")
            if answer == "yes":
                return f"Yes, there is {joined}."
            return f"No, there are no {plural(names[0])} or {plural(names[1])}."
        detailed = "logicAnd" if operation == "and" else "logicOr"
        return [Draft(b.program(), text, full, ("logical", "obj", detailed), None, f"{detailed}-{'_'.join(names)}",
                      tuple(f"exist:{n}" for n in names))]
    o = _pick(rng, view.ids)
    types = [t for t in _ASKED_TYPES if view.value(o, t) is not None]
    if len(types) < 2:
        return []
    t1, t2 = (types[i] for i in sorted(rng.choice(len(types), size=2, replace=False)))
    r = view.ref(rng, o, exclude_type=t1)
    if r is None or r.uses_type == t2:
        return []
    values = []
    for t in (t1, t2):
        other = _other_value(rng, view, o, t)
        values.append(view.value(o, t) if rng.random() < 0.5 or other is None else other)
    b = Builder()
    described = r.emit(b)
    first = b.add("verify", t1, Value(values[0]), described)
    second = b.add("verify", t2, Value(values[1]), described)
    b.add(operation, None, Empty(), first, second)
    one, two = describe(t1, values[0]), describe(t2, values[1])
    text = (f"{capitalize(be(r.noun))} {r.text} {one} and {two}?" if operation == "and"
            else f"{capitalize(be(r.noun))} {r.text} either {one} or {two}?")

    def full(answer):
        held = f"{describe(t1, view.value(o, t1))} and {describe(t2, view.value(o, t2))}"
        return f"{'Yes' if answer == 'yes' else 'No'}, {r.text} {be(r.noun)} {held}."
    detailed = "verifyAttrs" if operation == "and" else "verifyAttrsOr"
    return [Draft(b.program(), text, full, ("logical", "attr", detailed), None, f"{detailed}-{view.cls[o]}",
                  (f"attr:{o}:{t1}", f"attr:{o}:{t2}"))]


def family_compare(view: SceneView, rng) -> list[Draft]:
    """Which of two is COMP (choose COMP over two branches)."""
    order = view.facts.order
    available = {}
    for comparative in _COMPARATIVES:  # draw among the comparatives this scene can ask
        pairs = sorted(((x, y) for x, y in view.facts.compared(comparative) if view.cls[x] != view.cls[y]),
                       key=lambda p: (order[p[0]], order[p[1]]))
        if pairs:
            available[comparative] = pairs
    comparative = _pick(rng, list(available))
    if comparative is None:
        return []
    pair = _pick(rng, available[comparative])
    if rng.random() < 0.5:
        pair = pair[::-1]
    refs = [view.ref(rng, o, exclude_kinds=("relation", "category")) for o in pair]
    if None in refs:
        return []
    b = Builder()
    first, second = refs[0].emit(b), refs[1].emit(b)
    b.add("choose", comparative, Empty(), first, second)
    word, axis = _COMPARATIVES[comparative]
    people = set(view.vocabulary.categories.get("person", ()))
    who = "Who" if all(view.cls[o] in people for o in pair) else "Which"
    text = f"{who} is {word}, {refs[0].text} or {refs[1].text}?"
    by_name = {r.name: r for r in refs}

    def full(answer):
        winner = by_name[answer]
        loser = refs[1] if winner is refs[0] else refs[0]
        return capitalize(f"{winner.text} {be(winner.noun)} {word} than {loser.text}.")
    return [Draft(b.program(), text, full, ("compare", "attr", "compare"), None,
                  f"compare-{refs[0].name}_{refs[1].name}_{comparative}", (f"cmp:{_pair_key(view, *pair)}:{axis}",))]


def family_two_same(view: SceneView, rng) -> list[Draft]:
    """Same T / different T over two objects."""
    t = _pick(rng, _SAME_TYPES)
    having = [o for o in view.ids if view.value(o, t) is not None]
    want_same = bool(rng.random() < 0.5)
    pairs = [(x, y) for i, x in enumerate(having) for y in having[i + 1:]
             if (view.value(x, t) == view.value(y, t)) == want_same]
    pair = _pick(rng, pairs)
    if pair is None:
        return []
    refs = [view.ref(rng, o, exclude_type=t) for o in pair]
    if None in refs:
        return []
    operation = "same" if rng.random() < 0.5 else "different"
    b = Builder()
    first, second = refs[0].emit(b), refs[1].emit(b)
    b.add(operation, t, Empty(), first, second)
    both = f"{refs[0].text} and {refs[1].text}"
    if operation == "same":
        text = (f"Are {both} made of the same material?" if t == "material" else f"Are {both} the same {t}?")
    else:
        text = f"Do {both} have different {plural(t)}?"
    va, vb = (view.value(o, t) for o in pair)

    def full(answer):
        same = (answer == "yes") == (operation == "same")
        verdict = "Yes" if answer == "yes" else "No"
        if same:
            return f"{verdict}, both {both} are {describe(t, va)}."
        first = f"{refs[0].text} {be(refs[0].noun)} {describe(t, va)}"
        return f"{verdict}, {first} and {refs[1].text} {be(refs[1].noun)} {describe(t, vb)}."
    detailed = "twoSame" if operation == "same" else "twoDifferent"
    return [Draft(b.program(), text, full, ("compare", "attr", detailed), None,
                  f"{detailed}-{refs[0].name}_{refs[1].name}_{t}", (f"same:{_pair_key(view, *pair)}:{t}",))]


def family_all_same(view: SceneView, rng) -> list[Draft]:
    """Same: T / different: T over every object of one name."""
    t = _pick(rng, _SAME_TYPES)
    names = [n for n in view.names_present() if n not in MASS and n != "object"
             and len(view.named(n)) >= 2 and all(view.value(x, t) is not None for x in view.named(n))]
    name = _pick(rng, names)
    if name is None:
        return []
    operation = "same" if rng.random() < 0.5 else "different"
    b = Builder()
    b.add(operation, None, AttributeType(t), b.add("select", None, Objects(name)))
    things = plural(name)
    if operation == "same":
        text = (f"Are all the {things} made of the same material?" if t == "material"
                else f"Are all the {things} the same {t}?")
    else:
        text = f"Do the {things} have different {plural(t)}?"
    values = sorted({view.value(x, t) for x in view.named(name)})

    def full(answer):
        verdict = "Yes" if answer == "yes" else "No"
        if len(values) == 1:
            return f"{verdict}, all the {things} are {describe(t, values[0])}."
        return f"{verdict}, the {things} are {' and '.join(describe(t, v) for v in values)}."
    detailed = "allSame" if operation == "same" else "allDifferent"
    return [Draft(b.program(), text, full, ("compare", "attr", detailed), None, f"{detailed}-{name}_{t}",
                  (f"all:{name}:{t}",))]


def family_common(view: SceneView, rng) -> list[Draft]:
    """What two objects have in common (the one attribute type they share)."""
    types = view.executor.common_types
    pairs = []
    for i, x in enumerate(view.ids):
        for y in view.ids[i + 1:]:
            shared = [t for t in types if view.facts.values(x, t) & view.facts.values(y, t)]
            if len(shared) == 1:
                pairs.append((x, y, shared[0]))
    choice = _pick(rng, pairs)
    if choice is None:
        return []
    x, y, t = choice
    refs = [view.ref(rng, o, exclude_type=t) for o in (x, y)]
    if None in refs:
        return []
    b = Builder()
    first, second = refs[0].emit(b), refs[1].emit(b)
    b.add("common", None, Empty(), first, second)
    text = f"What do {refs[0].text} and {refs[1].text} have in common?"
    return [Draft(b.program(), text, lambda answer: f"They have the same {answer}.", ("compare", "attr", "twoCommon"),
                  None, f"twoCommon-{refs[0].name}_{refs[1].name}", (f"same:{_pair_key(view, x, y)}:{t}",))]


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
