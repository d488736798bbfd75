"""Question families about presence and relations: ``exist`` (after a select, a filter, a
``not(...)`` filter or a relate), ``verify rel`` and ``choose rel``.
"""
from __future__ import annotations



from nablafol.dsl.ast import Empty, Objects, Relation, Value


from .text import INVERSE_PHRASE, RELATION_PHRASE, a, adjective, be, capitalize, describe, plural

from .drafting import Builder, Draft, SceneView, pick, pair_key, related_pair, REF_TYPES, RELATION_FAMILY, CONTRAST


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
    kind = pick(rng, ("name", "filter", "filter", "not", "relate", "relate"))
    want = bool(rng.random() < 0.5)
    if kind == "name":
        name = pick(rng, view.names_present() if want else view.names_absent())
        if name is None:
            return []
        b = Builder()
        b.add("exist", None, Empty("?"), b.add("select", None, Objects(name)))
        return [Draft(b.program(), _exists_text(name, name), _exists_answer(name, name), ("verify", "obj", "exist"),
                      None, f"exist-{name}", (f"exist:{name}",))]
    if kind in ("filter", "not"):
        name = pick(rng, [c for c in view.vocabulary.classes if view.named(c)])
        t = pick(rng, [t for t in view.vocabulary.types_of(name) if t in REF_TYPES])
        if t is None:
            return []
        held = {view.value(x, t) for x in view.named(name)}
        if kind == "filter":
            choices = [v for v in view.vocabulary.palette(name, t) if (v in held) == want]
        else:  # "is there one without v": yes iff some lacks v
            choices = [v for v in view.vocabulary.palette(name, t)
                       if any(view.value(x, t) != v for x in view.named(name)) == want]
        value = pick(rng, choices)
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
    found = related_pair(view, rng, ("on", "wearing", "holding", "near", "to the left of", "below"))
    if found is None:
        return []
    relation, asked, anchor, role, r = found
    subject, obj = (asked, anchor) if role == "s" else (anchor, asked)
    if want:
        name = view.cls[asked] if rng.random() < 0.7 else pick(rng, view.vocabulary.categories_of(view.cls[asked]))
    else:
        name = pick(rng, _unrelated_names(view, relation, role, anchor))
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
    relation = pick(rng, ("to the left of", "to the right of", "on", "wearing", "holding", "near", "above",
                           "below", "under"))
    pair = pick(rng, view.pairs(relation))
    if pair is None:
        return []
    x, y = pair  # relation(x, y)
    family = RELATION_FAMILY[relation]
    fact = (f"rel:{pair_key(view, x, y)}:{family}",)
    drafts = []
    rx, ry = (view.ref(rng, o, exclude_kinds=("relation",)) for o in (x, y))
    for asked, described, role in ((y, rx, "o"), (x, ry, "s")):
        if described is None:
            continue
        phrase = RELATION_PHRASE[relation] if role == "o" else INVERSE_PHRASE[relation]
        for want in (True, False):
            if want:
                categories = view.vocabulary.categories_of(view.cls[asked])
                name = view.cls[asked] if rng.random() < 0.6 else pick(rng, categories)
            else:
                name = pick(rng, _unrelated_names(view, relation, role, described.object_id))
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
    if family in CONTRAST and ry is not None and len(view.named(view.cls[x])) == 1:
        options = CONTRAST[family] if rng.random() < 0.5 else CONTRAST[family][::-1]
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
