"""A plain crisp executor of CRIC programs over a tiny world, written for the tests.

It follows the function table of ``dsl/cric.py`` with Python sets and the knowledge
triples as written (no DFOL, no tensors, no knowledge oracle), so it is an independent
reference for the CRIC compiler + the golden oracles + the engine. Objects are numbered
0..n-1, then the scene pseudo-object ``n`` (no class, no attribute, no relation), as the
golden scene-graph oracle lists them.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CricWorld:
    ontology: object
    classes: list  # per object
    attrs: list  # per object: set of attribute values
    relations: set  # (predicate, subject, object)
    triples: list  # (head, relation, tail)

    @property
    def n(self) -> int:  # real objects, then the scene pseudo-object
        return len(self.classes) + 1

    def everything(self) -> set:
        return set(range(self.n))

    def under(self, i: int, name: str) -> bool:
        """Object i's class is ``name`` or lies under the category ``name``."""
        if i == len(self.classes):
            return False
        form = self.ontology.normalize(name)
        return self.ontology.is_name(form) and self.classes[i] in (self.ontology.classes_under(form) | {form})

    def has_word(self, i: int, word: str) -> bool:
        if i == len(self.classes):
            return False
        if self.ontology.is_attribute_value(word):
            return word in self.attrs[i]
        return self.under(i, word)

    def head_fact(self, i: int, relation: str, tail: str) -> bool:
        return any(r == relation and t == tail and self.under(i, h) for h, r, t in self.triples)

    def pair_fact(self, head: int, relation: str, phrase: str, other: int) -> bool:
        """A triple <head's class, relation, phrase + a name other's class lies under>."""
        if head == other:
            return False
        for h, r, t in self.triples:
            if r != relation or not self.under(head, h):
                continue
            rest = t[len(phrase):].strip() if phrase and t.startswith(phrase + " ") else (t if not phrase else None)
            if rest and self.under(other, rest):
                return True
        return False


def run(program, world: CricWorld):
    """The answer (``yes``/``no`` or a label) and the object set of every object step."""
    results, found = [], {}
    for index, step in enumerate(program.steps):
        ins = [results[d] for d in step.dependencies]
        f, text = step.function, step.text_input
        if f == "Initial":
            out = world.everything()
        elif f == "Find":
            out = {i for i in ins[0] if all(world.has_word(i, w) for w in text)}
        elif f == "Find Hyponym":
            out = {i for i in ins[0] if world.under(i, text[0])}
        elif f == "Relate":
            out = {y for y in world.everything() if any((text[0], x, y) in world.relations for x in ins[0])}
        elif f == "Relate Reverse":
            out = {y for y in world.everything() if any((text[0], y, x) in world.relations for x in ins[0])}
        elif f == "Find KG":
            relation, tail = text[0], " ".join(text[1:])
            if program.steps[step.dependencies[0]].function == "Initial":
                out = {y for y in world.everything() if world.head_fact(y, relation, tail)}
            else:
                out = {y for y in world.everything() if any(world.pair_fact(y, relation, tail, x) for x in ins[0])}
        elif f == "Find KG Reverse":
            relation, phrase = text[0], " ".join(text[1:])
            out = {y for y in world.everything() if any(world.pair_fact(x, relation, phrase, y) for x in ins[0])}
        elif f == "Verify":
            out = "yes" if any(all(world.has_word(i, w) for w in text) for i in ins[0]) else "no"
        elif f == "Recognition":
            out = _recognize(world, ins[0], text[0], _source(program, step.dependencies[0], world))
        elif f == "And":
            a, b = ins
            out = (a & b) if isinstance(a, set) else ("yes" if a == b == "yes" else "no")
        else:
            raise AssertionError(f)
        if isinstance(out, set):
            found[index] = out
        results.append(out)
    return results[-1], found


def _source(program, index, world):
    """The last name that selected step ``index``'s objects (None after a relate or KG step)."""
    step = program.steps[index]
    if step.function == "Find":
        names = [w for w in step.text_input if not world.ontology.is_attribute_value(w)]
        return names[-1] if names else _source(program, step.dependencies[0], world)
    if step.function == "Find Hyponym":
        return step.text_input[0]
    if step.function == "And":
        a, b = step.dependencies
        return _source(program, a, world) or _source(program, b, world)
    return None


def _recognize(world, objects, type_, source):
    """Algorithm 1 on crisp truths: the first candidate (in label order) some object has."""
    if type_ == "name":
        labels = sorted(world.ontology.classes_under(source) if source else world.ontology.classes)
        holds = [any(i < len(world.classes) and world.classes[i] == c for i in objects) for c in labels]
    else:
        labels = sorted(world.ontology.values_of(type_))
        holds = [any(i < len(world.classes) and v in world.attrs[i] for i in objects) for v in labels]
    return labels[holds.index(True)] if True in holds else labels[0]
