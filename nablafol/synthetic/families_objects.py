"""Question families about single objects and the scene: attributes (query, verify, choose),
positions, the scene's location and weather, names (after a category, a relation or a
``same color`` relate).
"""
from __future__ import annotations



from nablafol.dsl.ast import Alternatives, AttributeType, Objects, Relation, Scene, Value


from .text import RELATION_PHRASE, a, be, capitalize, describe, do
from .vocabulary import LOCATIONS

from .drafting import Builder, Ref, Draft, SceneView, pick, other_value, pair_key, related_pair, ASKED_TYPES, REF_TYPES, RELATION_FAMILY, QUERY_TEXT, yes_no_state, statement


def family_attribute(view: SceneView, rng) -> list[Draft]:
    """Query / verify (yes, no) / choose of one attribute of one object."""
    options = [(o, t) for o in view.ids for t in ASKED_TYPES if view.value(o, t) is not None]
    choice = pick(rng, options)
    if choice is None:
        return []
    o, t = choice
    r = view.ref(rng, o, exclude_type=t)
    if r is None:
        return []
    value, other = view.value(o, t), other_value(rng, view, o, t)
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
    text = QUERY_TEXT[t].format(be=be(r.noun), do=do(r.noun), r=r.text)
    return Draft(b.program(), text, statement(r, t), types, t, f"{types[2]}-{local}", facts)


def _verify_draft(r: Ref, t: str, asked: str, actual: str | None, types, facts, local) -> Draft:
    b = Builder()
    b.add("verify", t, Value(asked), r.emit(b))
    text = f"{capitalize(be(r.noun))} {r.text} {describe(t, asked)}?"
    return Draft(b.program(), text, yes_no_state(r, t, asked, actual), types, None,
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
    return Draft(b.program(), text, statement(r, t), types, None, f"{types[2]}-{local}_{'|'.join(sorted(pair))}",
                 facts)


def family_position(view: SceneView, rng) -> list[Draft]:
    """Where an object is: query hposition, verify and choose hposition or vposition."""
    o = pick(rng, view.ids)
    t = "hposition" if rng.random() < 0.6 else "vposition"
    r = view.ref(rng, o, exclude_kinds=("position",))
    if r is None:
        return []
    value, other = view.value(o, t), other_value(rng, view, o, t)
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
    other = pick(rng, [v for v in values if v != value])
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
    kind = pick(rng, ("category", "relate", "relate", "same color"))
    if kind == "category":
        return _name_by_category(view, rng)
    if kind == "relate":
        return _name_by_relation(view, rng)
    return _name_by_same_color(view, rng)


def _it_is_a(answer: str) -> str:
    return capitalize(f"It is {a(answer)}.") if answer not in ("pants", "shorts", "glasses") else f"They are {answer}."


def _name_by_category(view: SceneView, rng) -> list[Draft]:
    o = pick(rng, view.ids)
    categories = [c for c in view.vocabulary.categories_of(view.cls[o]) if c != view.cls[o]]
    category = pick(rng, categories)
    if category is None:
        return []
    t = pick(rng, [t for t in (*REF_TYPES, "hposition") if view.value(o, t) is not None])
    if t is None:
        return []
    value = view.value(o, t)
    b = Builder()
    filtered = b.add("filter", t, Value(value), b.add("select", None, Objects(category)))
    b.add("query", None, AttributeType("name"), filtered)
    text = f"What kind of {category} is {describe(t, value)}?"
    return [Draft(b.program(), text, _it_is_a, ("query", "cat", "categoryAttr"), category,
                  f"categoryAttr-{category}_{value}", (f"name:{o}",))]




def _name_by_relation(view: SceneView, rng) -> list[Draft]:
    found = related_pair(view, rng, ("on", "wearing", "holding", "near", "to the left of", "above", "under"))
    if found is None:
        return []
    relation, asked, anchor, role, r = found
    subject, obj = (asked, anchor) if role == "s" else (anchor, asked)
    categories = [c for c in view.vocabulary.categories_of(view.cls[asked]) if c != view.cls[asked]]
    name = pick(rng, categories) if rng.random() < 0.5 and categories else "_"
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
                  (f"name:{asked}", f"rel:{pair_key(view, subject, obj)}:{RELATION_FAMILY[relation]}"))]


def _name_by_same_color(view: SceneView, rng) -> list[Draft]:
    o = pick(rng, [x for x in view.ids if view.value(x, "color") is not None])
    if o is None:
        return []
    r = view.ref(rng, o, exclude_type="color", exclude_kinds=("relation",))
    others = [x for x in view.ids if x != o and view.value(x, "color") == view.value(o, "color")]
    if r is None or len(others) != 1:
        return []
    categories = [c for c in view.vocabulary.categories_of(view.cls[others[0]]) if c != view.cls[others[0]]]
    name = pick(rng, categories) or "_"
    b = Builder()
    b.add("query", None, AttributeType("name"),
          b.add("relate", None, Relation(name, ("same color",), "s"), r.emit(b)))
    what = "What" if name == "_" else f"What kind of {name}"
    text = f"{what} has the same color as {r.text}?"
    return [Draft(b.program(), text, lambda ans: capitalize(f"{a(ans)} {be(ans)} the same color as {r.text}."),
                  ("query", "rel", "sameRelate"), None if name == "_" else name, f"sameRelate-{view.cls[o]}_color",
                  (f"name:{others[0]}",))]
