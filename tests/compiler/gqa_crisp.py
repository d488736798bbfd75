"""A plain crisp evaluator of GQA programs over a tiny hand-made world, written for the tests.

It follows gqa-programs.md directly with Python sets — no DFOL, no tensors — so it is an
independent reference for the compiler + engine.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from nablafol.dsl import ast as A

LEFT_RIGHT = {"to the left of": "left", "to the right of": "right"}
SAME_REL = {"same color": "color", "same material": "material", "same shape": "shape"}


@dataclass
class World:
    ontology: object
    classes: list[str]  # per object
    attrs: list[set]  # per object: attribute values (incl. hposition/vposition values)
    relations: set  # (rel, subject, object)
    compare: dict = field(default_factory=dict)  # comp -> set of (i, j)
    scene_attrs: set = field(default_factory=set)  # the scene pseudo-object's values

    @property
    def n(self):  # real objects, then the scene pseudo-object
        return len(self.classes) + 1

    def is_scene(self, i):
        return i == len(self.classes)

    def has_name(self, i, name):
        form = self.ontology.normalize(name)
        return (not self.is_scene(i) and self.ontology.is_name(form)
                and self.classes[i] in self.ontology.classes_under(form))

    def has_value(self, i, value):
        vals = self.scene_attrs if self.is_scene(i) else self.attrs[i]
        return self.ontology.normalize(value) in vals or value in vals

    def related(self, rel, i, j):
        if self.is_scene(i) or self.is_scene(j):
            return False
        if rel in SAME_REL:
            t = SAME_REL[rel]
            vals = self.ontology.values_of(t)
            return i != j and bool(self.attrs[i] & self.attrs[j] & vals)
        comp = {"larger than": "larger", "bigger than": "larger", "smaller than": "smaller"}.get(rel)
        if comp:
            return (i, j) in self.compare.get(comp, set())
        return (rel, i, j) in self.relations


def _values(world, type_):
    if type_ == "name":
        return sorted(world.ontology.classes)
    return sorted(world.ontology.values_of(type_))


def run(program: A.Program, world: World):
    """The answer: a bool for yes/no programs, else the set of acceptable answers."""
    out, names = [], []
    for step in program.steps:
        ins = [out[d] for d in step.dependencies]
        if step.is_comparative:
            ins = [(out[d], names[d]) for d in step.dependencies]
        out.append(_step(step, ins, world))
        arg = step.argument
        name = arg.name if isinstance(arg, A.Objects) else "scene" if isinstance(arg, A.Scene) else \
            (None if arg.any_name else arg.name) if (isinstance(arg, A.Relation) and step.operation == "relate") else \
            (names[step.dependencies[0]] if step.dependencies else None)
        names.append(name)
    return out[-1]


def _select_related(world, xs, arg: A.Relation, rel):
    ys = set()
    for y in range(world.n):
        if not arg.any_name and not world.has_name(y, arg.name):
            continue
        if any((world.related(rel, y, x) if arg.role == "s" else world.related(rel, x, y)) for x in xs):
            ys.add(y)
    return ys


def _holds(world, i, value: A.Value, type_):
    if type_ == "name":
        ok = world.has_name(i, value.value)
    else:
        ok = world.has_value(i, value.value) or (type_ is None and world.has_name(i, value.value))
    return (not ok) if value.negated else ok


def _step(step: A.Step, ins, world: World):
    op, arg = step.operation, step.argument
    if op == "select":
        if isinstance(arg, A.Scene):
            return {world.n - 1}
        return {i for i in range(world.n) if world.has_name(i, arg.name)}
    if op == "filter":
        return {i for i in ins[0] if _holds(world, i, arg, step.type)}
    if op == "relate":
        return _select_related(world, ins[0], arg, arg.relation)
    if op == "exist":
        return bool(ins[0])
    if op == "verify":
        if isinstance(arg, A.Relation):
            return bool(_select_related(world, ins[0], arg, arg.relation))
        return any(_holds(world, i, arg, step.type) for i in ins[0])
    if op in ("and", "or"):
        return (ins[0] and ins[1]) if op == "and" else (ins[0] or ins[1])
    if op == "query":
        t = arg.name
        if t == "name":
            return {world.ontology.raw_form(world.classes[i]) for i in ins[0] if not world.is_scene(i)}
        return {world.ontology.raw_form(v) for v in _values(world, t) if any(world.has_value(i, v) for i in ins[0])}
    if op == "choose":
        if step.is_comparative:
            (a, an), (b, bn) = ins[0], ins[1]
            wins = {an for x in a for y in b if (x, y) in world.compare.get(step.type, set())}
            wins |= {bn for x in b for y in a if (x, y) in world.compare.get(step.type, set())}
            return wins
        if isinstance(arg, A.Relation):
            return {LEFT_RIGHT.get(r, r) for r in arg.relations if _select_related(world, ins[0], arg, r)}
        return {v for v in arg.values if any(_holds(world, i, A.Value(v), step.type) for i in ins[0])}
    if op in ("same", "different"):
        if step.type is not None:
            vals = _values(world, step.type)
            same = any(any(world.has_value(i, v) for i in ins[0]) and any(world.has_value(j, v) for j in ins[1])
                       for v in vals)
        else:
            vals = _values(world, arg.name)
            same = any(all(world.has_value(i, v) for i in ins[0]) for v in vals)
        return same if op == "same" else not same
    if op == "common":
        return {t for t in _common_types(world) if any(
            any(world.has_value(i, v) for i in ins[0]) and any(world.has_value(j, v) for j in ins[1])
            for v in _values(world, t))}
    raise ValueError(op)


def _common_types(world):
    excluded = {"hposition", "vposition"} | set(world.ontology.scene_types)
    return [t for t in world.ontology.attribute_types if t not in excluded]
