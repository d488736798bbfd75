"""The crisp executor: a GQA program evaluated over a plain scene graph with plain sets.

This is the ground truth of the embedded dataset. It shares no code with the DFOL engine or
the compiler: object sets are ``frozenset``s of object ids, yes/no results are ``bool``s and
open answers are strings in GQA's raw form. It follows gqa-programs.md and the predicate
contract of docs/compiling-gqa.md:

* a NAME holds for an object whose class is NAME or lies under the category NAME;
* attribute values are read as listed (untyped values match any type; the scene
  pseudo-object of ``select: scene`` carries the graph's ``location`` and ``weather``);
* relations are read as stored on their subject, except ``same color|material|shape``
  (two different objects sharing a value) and the comparative relations (``bigger than``
  ...), which are computed like the comparatives;
* ``hposition``/``vposition`` and the comparatives come from the documented rules,
  :mod:`nablafol.graph_oracles.geometry` and :mod:`nablafol.graph_oracles.traits` (called here on the
  boxes and traits, then turned into sets of pairs).

Step by step (X, Y the input sets; ``v(x)``: object x has value v):

| step | result |
| --- | --- |
| ``select: N`` / ``select: scene`` | the objects named N / the scene pseudo-object |
| ``filter [T]: v`` / ``not(v)`` | ``{x in X : v(x)}`` / ``{x in X : not v(x)}`` |
| ``relate: N,R,s`` / ``o`` | ``{y named N : R(y, x) for some x in X}`` / ``R(x, y)``; ``_`` names any object |
| ``exist`` | X is not empty |
| ``verify [T]: v`` / ``verify rel`` | some x in X has v / the relate is not empty |
| ``query T`` | the one value of T the objects of X have (``name``: their one class) |
| ``choose [T]: a|b``, ``choose rel: N,a|b,r`` | the one alternative that holds (``left``/``right`` for the two horizontal relations) |
| ``choose COMP`` | the name written in the select (or relate) of the one branch whose objects are COMP than the other's |
| ``and`` / ``or`` | both / either |
| ``same T`` (two inputs) | some value of T is held in X and in Y (Table 4's TwoSame) |
| ``same: T`` (one input) | some value of T is held by every x in X (AllSame) |
| ``different`` | not ``same`` |
| ``common`` | the one attribute type (positions and scene types excluded) for which TwoSame holds |

An answer that is not defined raises :class:`UndefinedAnswerError`: a query over an empty
set, or whose objects hold no value or several; a choose where both or neither
alternative holds; a ``common`` with no or several shared types. The generator keeps
only questions whose answer is defined. Everything else wrong (an unknown concept, a
value of the wrong type, a probabilistic graph, a malformed program) raises
:class:`CrispError`, one line saying which step and what.

    >>> from nablafol.dsl import parse_program
    >>> from nablafol.data import load_scene_graphs
    >>> graph = load_scene_graphs("tests/fixtures/gqa/val_sceneGraphs.json")["2354786"]
    >>> executor = CrispExecutor()
    >>> executor.answer(parse_program("select: man (3817110)->relate: animal,riding,o (3817112) [0]->query: name [1]"), graph)
    'horse'
    >>> executor.answer(parse_program("select: fence->choose rel: man,to the left of|to the right of,s [0]"), graph)
    'left'
"""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from nablafol.dsl import Ontology, ProgramError, validate_program
from nablafol.dsl.ast import Alternatives, AttributeType, Objects, Program, Relation, Scene, Step

from nablafol.errors import NablafolError

__all__ = ["CrispExecutor", "SceneFacts", "Execution", "CrispError", "UndefinedAnswerError",
           "SCENE_OBJECT", "COMPARATIVE_RELATIONS", "SAME_RELATIONS", "POSITION_TYPES"]

SCENE_OBJECT = "scene"  # the id of the scene pseudo-object (GQA object ids are numbers)
POSITION_TYPES = ("hposition", "vposition")
# GQA relations that compare or match attributes rather than facts a graph stores
COMPARATIVE_RELATIONS = {
    "larger than": "larger", "bigger than": "larger", "smaller than": "smaller", "taller than": "taller",
    "shorter than": "shorter", "higher than": "higher", "lower than": "lower", "longer than": "longer",
    "older than": "older", "younger than": "younger", "healthier than": "healthier",
}
SAME_RELATIONS = {"same color": "color", "same material": "material", "same shape": "shape"}
_LEFT_RIGHT = {"to the left of": "left", "to the right of": "right"}


class CrispError(NablafolError, ValueError):
    """A program or scene graph the crisp executor cannot evaluate."""


class UndefinedAnswerError(CrispError):
    """The program is fine, but its answer on this scene is not defined (not unique)."""


class Execution(NamedTuple):
    """The result of every step (``frozenset`` of ids, ``bool`` or ``str``), the ids each
    naming step grounds (select, relate, verify rel, choose rel: the objects it names, in
    scene order; None for other steps) and the answer (the last result, as a string)."""

    answer: str
    results: tuple[Any, ...]
    grounding: tuple[tuple[str, ...] | None, ...]


class SceneFacts:
    """What one plain scene graph says, as sets (built once per graph; comparatives lazily)."""

    def __init__(self, graph, ontology: Ontology):
        if not graph.is_plain:
            raise CrispError(f"image {graph.image_id}: the crisp executor needs a plain scene graph "
                             f"(every name, attribute and relation certain)")
        self.graph, self.ontology = graph, ontology
        self.objects: tuple[str, ...] = graph.object_ids
        self.order = {object_id: i for i, object_id in enumerate(self.objects)}
        self.class_of: dict[str, str] = {}
        self.names_of: dict[str, frozenset[str]] = {}
        self.attributes_of: dict[str, frozenset[str]] = {}
        stored: dict[str, set[tuple[str, str]]] = {}
        for obj in graph.objects:
            cls = ontology.normalize(obj.name)
            if not ontology.is_name(cls):
                raise CrispError(f"image {graph.image_id}, object {obj.id}: name {obj.name!r} is not in the vocabulary")
            self.class_of[obj.id] = cls
            self.names_of[obj.id] = frozenset({cls}) | ontology.categories_of(cls)
            self.attributes_of[obj.id] = frozenset(ontology.normalize(a) for a in obj.attributes)
            for relation in obj.relations:
                name = relation.name.strip()
                stored.setdefault(ontology.normalize(name) if not ontology.is_relation(name) else name,
                                  set()).add((obj.id, relation.object_id))
        scene_values = [v for v in (graph.location, graph.weather) if v is not None]
        self.attributes_of[SCENE_OBJECT] = frozenset(ontology.normalize(v) for v in scene_values)
        self.stored = {name: frozenset(pairs) for name, pairs in stored.items()}
        self.position_of = self._positions()
        self._compared: dict[str, frozenset[tuple[str, str]]] = {}

    # -- geometry and traits (the rules of nablafol.graph_oracles, evaluated on this scene) ---------
    def _tensors(self):
        import torch
        boxes = torch.tensor([[o.x, o.y, o.w, o.h] for o in self.graph.objects], dtype=torch.float64).reshape(-1, 4)
        image = torch.tensor([float(self.graph.width), float(self.graph.height)], dtype=torch.float64)
        return boxes, image

    def _positions(self) -> dict[str, dict[str, str]]:
        from nablafol.graph_oracles import geometry
        if not self.objects:
            return {}
        boxes, image = self._tensors()
        out = {object_id: {} for object_id in self.objects}
        for type_name in POSITION_TYPES:
            rule = geometry.hposition if type_name == "hposition" else geometry.vposition
            for object_id, index in zip(self.objects, rule(boxes, image).tolist()):
                out[object_id][type_name] = geometry.POSITIONS[type_name][index]
        return out

    def compared(self, comparative: str) -> frozenset[tuple[str, str]]:
        """Pairs ``(x, y)`` of different objects with ``COMP(x, y)``: x is COMP than y."""
        if comparative not in self._compared:
            self._compared[comparative] = self._compare(comparative)
        return self._compared[comparative]

    def _compare(self, comparative: str) -> frozenset[tuple[str, str]]:
        import torch
        from nablafol.graph_oracles import geometry, traits
        n = len(self.objects)
        if n == 0:
            return frozenset()
        if comparative in geometry.RULES:
            boxes, image = self._tensors()
            holds = geometry.RULES[comparative].function(boxes[:, None, :], boxes[None, :, :], image).numpy()
        elif comparative in traits.RULES:
            values = self._traits()
            x = {t: torch.tensor(v, dtype=torch.float64)[:, None] for t, v in values.items()}
            y = {t: torch.tensor(v, dtype=torch.float64)[None, :] for t, v in values.items()}
            holds = traits.RULES[comparative].function(x, y).numpy() > 0.5
        else:
            raise CrispError(f"unknown comparative {comparative!r}")
        holds = np.asarray(holds, dtype=bool) & ~np.eye(n, dtype=bool)
        return frozenset((self.objects[i], self.objects[j]) for i, j in zip(*np.nonzero(holds)))

    def _traits(self) -> dict[str, list[float]]:
        from nablafol.graph_oracles import traits
        by_class = traits.trait_classes(self.ontology)
        out = {}
        for trait in traits.TRAITS:
            if trait in traits.TRAIT_ATTRIBUTES:
                wanted = set(traits.TRAIT_ATTRIBUTES[trait])
                out[trait] = [float(bool(self.attributes_of[o] & wanted)) for o in self.objects]
            else:
                out[trait] = [float(self.class_of[o] in by_class[trait]) for o in self.objects]
        return out

    # -- values ---------------------------------------------------------------------------
    def values(self, object_id: str, type_name: str) -> frozenset[str]:
        """The values of a type an object holds (positions from its box)."""
        if type_name in POSITION_TYPES:
            position = self.position_of.get(object_id)
            return frozenset({position[type_name]}) if position else frozenset()
        return self.attributes_of[object_id] & self.ontology.values_of(type_name)

    def same_pairs(self, type_name: str) -> frozenset[tuple[str, str]]:
        """Pairs of different objects sharing a value of the type."""
        return frozenset((a, b) for a in self.objects for b in self.objects
                         if a != b and self.values(a, type_name) & self.values(b, type_name))

    def in_order(self, ids) -> tuple[str, ...]:
        """Ids in scene order (the scene pseudo-object last)."""
        return tuple(sorted(ids, key=lambda i: self.order.get(i, len(self.order))))


class CrispExecutor:
    """Evaluates `dsl.ast.Program`s over plain scene graphs (see the module doc).

    ``ontology``: the vocabulary the programs and graphs are written in (default GQA's).
    ``common_types``: the types ``common`` compares (default: every attribute type but
    the positions and the scene-level types, as the compiler does).
    """

    def __init__(self, ontology: Ontology | None = None, common_types: tuple[str, ...] | None = None):
        self.ontology = ontology if ontology is not None else Ontology.gqa()
        if common_types is None:
            excluded = set(POSITION_TYPES) | set(self.ontology.scene_types)
            common_types = tuple(sorted(t for t in self.ontology.attribute_types if t not in excluded))
        self.common_types = tuple(common_types)

    def facts(self, graph) -> SceneFacts:
        """The sets one scene graph gives (pass them to :meth:`run` to evaluate many programs)."""
        return SceneFacts(graph, self.ontology)

    def answer(self, program: Program, scene) -> str:
        """The answer of ``program`` on ``scene`` (a SceneGraph or its SceneFacts)."""
        return self.run(program, scene).answer

    def run(self, program: Program, scene) -> Execution:
        """Every step's result, the grounded ids and the answer."""
        facts = scene if isinstance(scene, SceneFacts) else self.facts(scene)
        try:
            validate_program(program)
        except ProgramError as error:
            raise CrispError(f"malformed program: {error.message}") from None
        except (KeyError, AttributeError, TypeError) as error:  # a hand-built step of no known shape
            raise CrispError(f"malformed program: {error!r}") from None
        results: list[Any] = []
        grounding: list[tuple[str, ...] | None] = []
        for index, step in enumerate(program.steps):
            inputs = [results[d] for d in step.dependencies]
            result, grounded = _Step(self, facts, program, index, step).evaluate(inputs)
            results.append(result)
            grounding.append(None if grounded is None else facts.in_order(grounded))
        last = results[-1]
        answer = ("yes" if last else "no") if isinstance(last, bool) else last
        return Execution(answer, tuple(results), tuple(grounding))


class _Step:
    """One step's evaluation (keeps the step at hand for error messages)."""

    def __init__(self, executor: CrispExecutor, facts: SceneFacts, program: Program, index: int, step: Step):
        self.ontology, self.facts, self.executor = executor.ontology, facts, executor
        self.program, self.index, self.step = program, index, step

    def fail(self, message: str, undefined: bool = False) -> CrispError:
        kind = UndefinedAnswerError if undefined else CrispError
        return kind(f"step {self.index} '{self.step.field}': {message}")

    def evaluate(self, inputs: list) -> tuple[Any, frozenset[str] | None]:
        return getattr(self, "_" + self.step.operation)(inputs)

    # -- concepts -------------------------------------------------------------------------
    def _name(self, raw: str) -> str:
        form = self.ontology.normalize(raw)
        if not self.ontology.is_name(form):
            raise self.fail(f"{raw!r} is not a class or category of the vocabulary")
        return form

    def _type(self, raw: str | None, allow_name: bool = False) -> str | None:
        if raw is None or (allow_name and raw == "name"):
            return raw
        if not self.ontology.has_type(raw):
            raise self.fail(f"{raw!r} is not an attribute type of the vocabulary")
        return self.ontology.type_name(raw)

    def _value(self, raw: str, type_name: str | None) -> str:
        form = self.ontology.normalize(raw)
        if type_name is None:
            if not self.ontology.is_attribute_value(form):
                raise self.fail(f"{raw!r} is not an attribute value of the vocabulary")
        elif not self.ontology.is_attribute_value(form, type_name):
            raise self.fail(f"{raw!r} is not a {type_name} value "
                            f"({', '.join(sorted(self.ontology.values_of(type_name)))})")
        return form

    def _has(self, object_id: str, value: str, type_name: str | None) -> bool:
        if type_name in POSITION_TYPES:
            return value in self.facts.values(object_id, type_name)
        return value in self.facts.attributes_of[object_id]

    def _pairs(self, raw: str) -> frozenset[tuple[str, str]]:
        text = raw.strip()
        if text in COMPARATIVE_RELATIONS:
            return self.facts.compared(COMPARATIVE_RELATIONS[text])
        if text in SAME_RELATIONS:
            return self.facts.same_pairs(SAME_RELATIONS[text])
        form = text if self.ontology.is_relation(text) else self.ontology.normalize(text)
        if not self.ontology.is_relation(form):
            raise self.fail(f"{raw!r} is not a relation of the vocabulary")
        return self.facts.stored.get(form, frozenset())

    def _related(self, xs: frozenset[str], argument: Relation, relation: str) -> frozenset[str]:
        pairs = self._pairs(relation)
        if argument.role not in ("s", "o"):
            raise self.fail(f"role {argument.role!r} must be 's' or 'o'")
        named = (frozenset(self.facts.objects) if argument.any_name
                 else self._named(self._name(argument.name)))
        if argument.role == "s":  # the named objects are the subject: REL(y, x)
            found = {y for y, x in pairs if x in xs}
        else:
            found = {y for x, y in pairs if x in xs}
        return frozenset(found) & named

    def _named(self, name: str) -> frozenset[str]:
        return frozenset(o for o in self.facts.objects if name in self.facts.names_of[o])

    def _unique(self, found, what: str) -> str:
        if len(found) != 1:
            listed = ", ".join(sorted(found)) if found else "none"
            raise self.fail(f"{what} is not unique ({listed})", undefined=True)
        return next(iter(found))

    # -- operations -------------------------------------------------------------------------
    def _select(self, inputs):
        if isinstance(self.step.argument, Scene):
            return frozenset({SCENE_OBJECT}), None
        found = self._named(self._name(self.step.argument.name))
        return found, found

    def _filter(self, inputs):
        (xs,) = inputs
        type_name = self._type(self.step.type)
        value = self._value(self.step.argument.value, type_name)
        negated = self.step.argument.negated
        return frozenset(x for x in xs if self._has(x, value, type_name) != negated), None

    def _relate(self, inputs):
        (xs,) = inputs
        found = self._related(xs, self.step.argument, self.step.argument.relation)
        return found, found

    def _exist(self, inputs):
        return bool(inputs[0]), None

    def _verify(self, inputs):
        (xs,) = inputs
        argument = self.step.argument
        if isinstance(argument, Relation):
            found = self._related(xs, argument, argument.relation)
            return bool(found), found
        type_name = self._type(self.step.type)
        value = self._value(argument.value, type_name)
        return any(self._has(x, value, type_name) for x in xs), None

    def _query(self, inputs):
        (xs,) = inputs
        type_name = self._type(self.step.argument.name, allow_name=True)
        if not xs:
            raise self.fail("no object to ask about", undefined=True)
        if type_name == "name":
            if SCENE_OBJECT in xs:
                raise self.fail("the scene has no name", undefined=True)
            found = {self.facts.class_of[x] for x in xs}
        else:
            found = set().union(*(self.facts.values(x, type_name) for x in xs))
        return self.ontology.raw_form(self._unique(found, f"the {type_name}")), None

    def _choose(self, inputs):
        step, argument = self.step, self.step.argument
        if step.is_comparative:
            a, b = inputs
            pairs = self.facts.compared(step.type)
            first = any((x, y) in pairs for x in a for y in b)
            second = any((y, x) in pairs for x in a for y in b)
            if first == second:
                raise self.fail(f"{'both' if first else 'neither'} of the two is {step.type} than the other",
                                undefined=True)
            return self._branch_name(step.dependencies[0 if first else 1]), None
        (xs,) = inputs
        if isinstance(argument, Relation):
            holding, grounded = [], set()
            for relation in argument.relations:
                found = self._related(xs, argument, relation)
                grounded |= found
                if found:
                    holding.append(_LEFT_RIGHT.get(relation, relation))
            return self._unique(holding, "the relation that holds"), frozenset(grounded)
        if not isinstance(argument, Alternatives):
            raise self.fail("takes two alternatives")
        type_name = self._type(step.type)
        holding = [raw for raw in argument.values
                   if any(self._has(x, self._value(raw, type_name), type_name) for x in xs)]
        return self._unique(holding, "the alternative that holds"), None

    def _branch_name(self, index: int) -> str:
        """The name a compared branch's objects are written with (its select or relate)."""
        step = self.program.steps[index]
        while step.operation == "filter":
            step = self.program.steps[step.dependencies[0]]
        argument = step.argument
        if isinstance(argument, Objects) or (isinstance(argument, Relation) and not argument.any_name):
            return argument.name
        raise self.fail(f"step {index} does not name the objects it compares")

    def _and(self, inputs):
        return bool(inputs[0] and inputs[1]), None

    def _or(self, inputs):
        return bool(inputs[0] or inputs[1]), None

    def _two_same(self, type_name: str, a, b) -> bool:
        held_a = set().union(*(self.facts.values(x, type_name) for x in a)) if a else set()
        held_b = set().union(*(self.facts.values(y, type_name) for y in b)) if b else set()
        return bool(held_a & held_b)

    def _all_same(self, type_name: str, xs) -> bool:
        if not xs:  # Table 4: 1 - prod_v A_exists(empty) = 1
            return True
        shared = functools.reduce(frozenset.intersection, (self.facts.values(x, type_name) for x in xs))
        return bool(shared)

    def _same(self, inputs):
        if self.step.type is not None:
            type_name = self._type(self.step.type)
            return self._two_same(type_name, *inputs), None
        if not isinstance(self.step.argument, AttributeType):
            raise self.fail("takes an attribute type")
        type_name = self._type(self.step.argument.name)
        return self._all_same(type_name, inputs[0]), None

    def _different(self, inputs):
        same, _ = self._same(inputs)
        return not same, None

    def _common(self, inputs):
        a, b = inputs
        shared = [t for t in self.executor.common_types if self._two_same(t, a, b)]
        return self._unique(shared, "the shared attribute type"), None

    def __getattr__(self, name: str):
        if name.startswith("_") and not name.startswith("__"):
            raise CrispError(f"step {self.index}: unknown operation {self.step.operation!r}")
        raise AttributeError(name)
