"""Question families that combine or compare: ``and``/``or`` of two answers, comparatives
(``choose COMP``), ``same``/``different`` over two objects or one set, ``common``.
"""
from __future__ import annotations



from nablafol.dsl.ast import AttributeType, Empty, Objects, Value


from .text import MASS, a, be, capitalize, describe, plural

from .drafting import Builder, Draft, SceneView, pick, other_value, pair_key, ASKED_TYPES, SAME_TYPES, COMPARATIVE_TEXTS


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
            name = pick(rng, [n for n in (present if state else absent) if n not in names])
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
    o = pick(rng, view.ids)
    types = [t for t in ASKED_TYPES if view.value(o, t) is not None]
    if len(types) < 2:
        return []
    t1, t2 = (types[i] for i in sorted(rng.choice(len(types), size=2, replace=False)))
    r = view.ref(rng, o, exclude_type=t1)
    if r is None or r.uses_type == t2:
        return []
    values = []
    for t in (t1, t2):
        other = other_value(rng, view, o, t)
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
    for comparative in COMPARATIVE_TEXTS:  # draw among the comparatives this scene can ask
        pairs = sorted(((x, y) for x, y in view.facts.compared(comparative) if view.cls[x] != view.cls[y]),
                       key=lambda p: (order[p[0]], order[p[1]]))
        if pairs:
            available[comparative] = pairs
    comparative = pick(rng, list(available))
    if comparative is None:
        return []
    pair = pick(rng, available[comparative])
    if rng.random() < 0.5:
        pair = pair[::-1]
    refs = [view.ref(rng, o, exclude_kinds=("relation", "category")) for o in pair]
    if None in refs:
        return []
    b = Builder()
    first, second = refs[0].emit(b), refs[1].emit(b)
    b.add("choose", comparative, Empty(), first, second)
    word, axis = COMPARATIVE_TEXTS[comparative]
    people = set(view.vocabulary.categories.get("person", ()))
    who = "Who" if all(view.cls[o] in people for o in pair) else "Which"
    text = f"{who} is {word}, {refs[0].text} or {refs[1].text}?"
    by_name = {r.name: r for r in refs}

    def full(answer):
        winner = by_name[answer]
        loser = refs[1] if winner is refs[0] else refs[0]
        return capitalize(f"{winner.text} {be(winner.noun)} {word} than {loser.text}.")
    return [Draft(b.program(), text, full, ("compare", "attr", "compare"), None,
                  f"compare-{refs[0].name}_{refs[1].name}_{comparative}", (f"cmp:{pair_key(view, *pair)}:{axis}",))]


def family_two_same(view: SceneView, rng) -> list[Draft]:
    """Same T / different T over two objects."""
    t = pick(rng, SAME_TYPES)
    having = [o for o in view.ids if view.value(o, t) is not None]
    want_same = bool(rng.random() < 0.5)
    pairs = [(x, y) for i, x in enumerate(having) for y in having[i + 1:]
             if (view.value(x, t) == view.value(y, t)) == want_same]
    pair = pick(rng, pairs)
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
                  f"{detailed}-{refs[0].name}_{refs[1].name}_{t}", (f"same:{pair_key(view, *pair)}:{t}",))]


def family_all_same(view: SceneView, rng) -> list[Draft]:
    """Same: T / different: T over every object of one name."""
    t = pick(rng, SAME_TYPES)
    names = [n for n in view.names_present() if n not in MASS and n != "object"
             and len(view.named(n)) >= 2 and all(view.value(x, t) is not None for x in view.named(n))]
    name = pick(rng, names)
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
    choice = pick(rng, pairs)
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
                  None, f"twoCommon-{refs[0].name}_{refs[1].name}", (f"same:{pair_key(view, x, y)}:{t}",))]
