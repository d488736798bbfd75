"""The concepts a dataset names, and which of them an ontology or a model knows.

Real GQA's vocabulary is open (about 1,700 object names and 600 attribute values, many in no
typed list), so before training on a new dataset a user wants to know what its programs and
scene graphs name beyond the ontology. A :class:`ConceptInventory` counts every concept, by
kind (``name``, ``value``, ``relation``, ``type``) and, for values, by the type the step gives
(``None`` for an untyped step such as ``filter: baby`` and for scene-graph attributes):

    >>> from nablafol.dsl import parse_program
    >>> inventory = ConceptInventory()
    >>> inventory.add_program(parse_program(
    ...     "select: sharks (1)->filter material: granite [0]->relate: _,swimming near,s (2) [1]->query: name [2]"))
    >>> sorted(inventory.counts.items())
    [(('name', None, 'sharks'), 1), (('relation', None, 'swimming near'), 1), (('type', None, 'name'), 1), \
(('value', 'material', 'granite'), 1)]
    >>> known_values(inventory)
    {'name': ['sharks'], 'relation': ['swimming near'], 'material': ['granite']}

``known_values`` is what ``Compiler(known_values=...)`` and ``dsl.Ontology.joined`` take: the
values of each type a dataset makes known. :func:`vocabulary_report` says, concept by concept,
whether the ontology knows it, whether a model knows it (``model_knows``: a predicate -> bool,
e.g. a trained model's ``ConceptVocabulary.knows``), or whether it is new:

    >>> report = vocabulary_report(inventory)
    >>> report.summary()["value"]
    {'distinct': 1, 'mentions': 1, 'ontology': 0, 'model': 0, 'new': 1}
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from nablafol import dsl
from nablafol.dsl import ast as A
from nablafol.ir import Predicate

from .concepts import COMPARATIVE_RELATIONS, NAME_TYPES, POSITION_TYPES, SAME_RELATIONS, Concepts, is_knowledge_type
from .errors import CompileError

__all__ = ["ConceptInventory", "known_values", "widened_ontology", "vocabulary_report", "dataset_vocabulary",
           "VocabularyReport",
           "CONCEPT_KINDS"]

CONCEPT_KINDS = ("name", "value", "relation", "type")
Concept = tuple  # (kind, type or None, raw form as written)


@dataclass
class ConceptInventory:
    """Counts of the concepts a dataset names: ``(kind, type, raw form) -> mentions``."""

    counts: Counter = field(default_factory=Counter)
    programs: int = 0
    unreadable: int = 0  # programs that do not parse (listed by `nablafol eval` as malformed)
    scene_graphs: int = 0

    def add(self, kind: str, type_: Optional[str], raw: str) -> None:
        text = raw.strip()
        if text and text != "_":
            self.counts[(kind, type_, text)] += 1

    def add_program(self, program: A.Program) -> None:
        """Every concept a parsed program names (knowledge steps such as `filter CapableOf` aside)."""
        self.programs += 1
        for step in program.steps:
            arg, step_type = step.argument, step.type
            if isinstance(arg, A.Objects):
                self.add("name", None, arg.name)
            elif isinstance(arg, A.Relation):
                self.add("name", None, arg.name)
                for relation in arg.relations:
                    self.add("relation", None, relation)
            elif isinstance(arg, (A.Value, A.Alternatives)) and not is_knowledge_type(step_type):
                values = (arg.value,) if isinstance(arg, A.Value) else arg.values
                for value in values:
                    if step_type in NAME_TYPES:
                        self.add("name", None, value)
                    else:
                        self.add("value", step_type, value)
            elif isinstance(arg, A.AttributeType):
                self.add("type", None, arg.name)
            elif step.operation in ("same", "different") and step_type is not None:
                self.add("type", None, step_type)

    def add_question(self, question) -> None:
        """The concepts of a question's program (``semantic`` first, else ``semanticStr``)."""
        source = question.program_source()
        if source is None:
            return
        try:
            program = (dsl.program_from_semantic(source.value) if source.field == "semantic"
                       else dsl.parse_program(source.value))
        except dsl.ProgramError:
            self.unreadable += 1
            return
        self.add_program(program)

    def add_scene_graph(self, graph, relations: bool = True) -> None:
        """Every name, attribute (untyped: graphs list them so) and relation a scene graph holds.
        ``relations=False`` leaves relations out: no open question competes relations, so what an
        evaluation's compiler needs from its scene graphs is their names and values, and a
        scene holds many more relations than objects."""
        self.scene_graphs += 1
        for obj in graph.objects:
            for name in obj.names:
                self.add("name", None, name)
            for value in obj.attributes:
                self.add("value", None, value)
            if relations:
                for relation in obj.relations:
                    self.add("relation", None, relation.name)

    def update(self, questions: Iterable = (), scene_graphs: Iterable = (), relations: bool = True
               ) -> "ConceptInventory":
        for question in questions:
            self.add_question(question)
        for graph in scene_graphs:
            self.add_scene_graph(graph, relations)
        return self


def known_values(inventory: ConceptInventory) -> dict:
    """``{"name": [...], "relation": [...], TYPE: [...], None: [...]}``: the raw forms a dataset
    names, by type (for ``Compiler(known_values=...)`` and ``dsl.Ontology.joined``). Positions
    are fixed by geometry and left out; types asked about are not values."""
    out: dict = {}
    for (kind, type_, raw) in sorted(inventory.counts, key=lambda c: (c[0], c[1] or "", c[2])):
        if kind == "type" or type_ in POSITION_TYPES:
            continue
        key = kind if kind in ("name", "relation") else type_
        out.setdefault(key, []).append(raw)
    return {k: out[k] for k in sorted(out, key=lambda k: (k is None, k not in ("name", "relation"), k or ""))}


@dataclass(frozen=True)
class ConceptStatus:
    kind: str
    type: Optional[str]
    form: str  # the vocabulary form (normalized)
    mentions: int
    known_by: str  # 'ontology', 'model' or 'new'


@dataclass
class VocabularyReport:
    """Each concept of an inventory with who knows it, and counts by kind."""

    concepts: list
    programs: int
    unreadable: int
    scene_graphs: int
    with_model: bool

    def summary(self) -> dict:
        """``{kind: {distinct, mentions, ontology, model, new}}``."""
        out = {}
        for kind in CONCEPT_KINDS:
            mine = [c for c in self.concepts if c.kind == kind]
            row = {"distinct": len(mine), "mentions": sum(c.mentions for c in mine)}
            for who in ("ontology", "model", "new"):
                row[who] = sum(1 for c in mine if c.known_by == who)
            out[kind] = row
        return out

    def by_type(self) -> dict:
        """Values by the type their steps give (``None``: untyped): ``{type: {ontology, model, new}}``."""
        out: dict = {}
        for c in self.concepts:
            if c.kind == "value":
                row = out.setdefault(c.type, {"ontology": 0, "model": 0, "new": 0})
                row[c.known_by] += 1
        return out

    def new(self, kind: str, limit: int | None = None) -> list:
        """The new concepts of a kind, most mentioned first: ``[(form, type, mentions)]``."""
        found = sorted((c for c in self.concepts if c.kind == kind and c.known_by == "new"),
                       key=lambda c: (-c.mentions, c.form))
        return [(c.form, c.type, c.mentions) for c in found[:limit]]

    def to_dict(self) -> dict:
        return {"programs": self.programs, "unreadable programs": self.unreadable,
                "scene graphs": self.scene_graphs, "summary": self.summary(),
                "values by type": {("untyped" if t is None else t): row for t, row in sorted(
                    self.by_type().items(), key=lambda kv: (kv[0] is None, kv[0] or ""))},
                "concepts": [{"kind": c.kind, "type": c.type, "form": c.form, "mentions": c.mentions,
                              "known by": c.known_by} for c in self.concepts]}

    def lines(self, examples: int = 12) -> list[str]:
        """The report as text: counts by kind, values by type, the most mentioned new concepts."""
        who = "ontology / model / new" if self.with_model else "ontology / new"
        out = [f"{self.programs:,} programs ({self.unreadable:,} unreadable), {self.scene_graphs:,} scene graphs"]
        out.append(f"{'kind':<10} {'distinct':>9} {'mentions':>10}   known by {who}")
        for kind, row in self.summary().items():
            known = [row["ontology"]] + ([row["model"]] if self.with_model else []) + [row["new"]]
            out.append(f"{kind:<10} {row['distinct']:>9,} {row['mentions']:>10,}   "
                       + " / ".join(f"{n:,}" for n in known))
        types = self.by_type()
        if types:
            out.append("values by type (" + who + "):")
            for t, row in sorted(types.items(), key=lambda kv: (kv[0] is None, kv[0] or "")):
                known = [row["ontology"]] + ([row["model"]] if self.with_model else []) + [row["new"]]
                out.append(f"  {'(untyped)' if t is None else t:<16} " + " / ".join(f"{n:,}" for n in known))
        for kind in CONCEPT_KINDS:
            new = self.new(kind, examples)
            if new:
                shown = ", ".join(f"{form}{'' if t is None or kind != 'value' else ' (' + t + ')'} ×{n}"
                                  for form, t, n in new)
                total = sum(1 for c in self.concepts if c.kind == kind and c.known_by == "new")
                out.append(f"new {kind}s ({total:,}): {shown}{', …' if total > len(new) else ''}")
        return out


def vocabulary_report(inventory: ConceptInventory, ontology: Optional[dsl.Ontology] = None,
                      model_knows: Optional[Callable[[Predicate], bool]] = None) -> VocabularyReport:
    """Who knows each concept of ``inventory``: the ``ontology`` (GQA's by default), else the
    model (``model_knows`` of the predicate the compiler makes of it), else no one (new).
    Forms are the vocabulary forms (``plates`` and ``plate`` are one concept)."""
    ontology = ontology or dsl.Ontology.gqa()
    concepts = Concepts(ontology)
    merged: Counter = Counter()
    predicates: dict = {}
    for (kind, type_, raw), n in inventory.counts.items():
        key, predicate = _resolved(concepts, kind, type_, raw)
        merged[key] += n
        predicates.setdefault(key, predicate)
    statuses = []
    for (kind, type_, form), n in sorted(merged.items(), key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2])):
        if _in_ontology(ontology, kind, type_, form, predicates[(kind, type_, form)]):
            who = "ontology"
        elif model_knows is not None and predicates[(kind, type_, form)] is not None \
                and model_knows(predicates[(kind, type_, form)]):
            who = "model"
        else:
            who = "new"
        statuses.append(ConceptStatus(kind, type_, form, n, who))
    return VocabularyReport(statuses, inventory.programs, inventory.unreadable, inventory.scene_graphs,
                            model_knows is not None)


def _resolved(concepts: Concepts, kind: str, type_: Optional[str], raw: str):
    """``((kind, type, vocabulary form), predicate or None)`` of a concept as the compiler reads it."""
    try:
        if kind == "name":
            p = concepts.name(raw)
            return (kind, None, p.name), p
        if kind == "relation":
            p = concepts.relation(raw)
            return (kind, None, p.name if p.kind == "rel" else raw.strip()), p
        if kind == "type":
            t = concepts.type(raw)
            return (kind, None, t), Predicate(t, 2, "same") if t != "name" else None
        p = concepts.value(raw, type_)
        t = None if type_ is None else concepts.type(type_)
        return (kind, t, p.name), p
    except CompileError:
        return (kind, type_, raw.strip()), None


def _in_ontology(ontology: dsl.Ontology, kind: str, type_: Optional[str], form: str,
                 predicate: Optional[Predicate]) -> bool:
    if kind == "name" or (predicate is not None and predicate.kind == "name"):  # an untyped value read as a name
        return ontology.is_name(form)
    if kind == "relation":
        return ontology.is_relation(form) or form in _COMPARISON_RELATIONS
    if kind == "type":
        return form in NAME_TYPES or form in POSITION_TYPES or ontology.has_type(form)
    if type_ in POSITION_TYPES:
        return form in ontology.values_of(type_)
    return ontology.is_attribute_value(form, type_) if type_ is not None else ontology.is_attribute_value(form)


_COMPARISON_RELATIONS = frozenset(COMPARATIVE_RELATIONS) | frozenset(SAME_RELATIONS)


def widened_ontology(ontology: Optional[dsl.Ontology] = None, questions: Iterable = (), scene_graphs: Iterable = (),
                     relations: bool = True) -> dsl.Ontology:
    """``ontology`` (GQA's by default) joined with every concept ``questions`` and ``scene_graphs``
    name: what a model trained on them should have rows for, and what a compiler over them
    should compete in open questions (``relations=False``: see ``add_scene_graph``).

        >>> from nablafol.data import question_from_record
        >>> line = "select: cat->filter texture: fuzzy [0]->exist: ? [1]"
        >>> q = question_from_record("1", {"imageId": "i", "semanticStr": line})
        >>> sorted(widened_ontology(questions=[q]).values_of("texture"))
        ['coarse', 'fine', 'fuzzy']
    """
    inventory = ConceptInventory().update(questions, scene_graphs, relations)
    return (ontology or dsl.Ontology.gqa()).joined(known_values(inventory))


def dataset_vocabulary(questions, scene_graphs=None, ontology: Optional[dsl.Ontology] = None,
                       model_knows: Optional[Callable[[Predicate], bool]] = None) -> VocabularyReport:
    """The report of :func:`vocabulary_report` for a questions file or folder (and a scene-graphs
    file), read streaming: what ``nablafol vocabulary`` prints. Bad files raise
    ``InputFileError`` (one line)."""
    from nablafol.data import iter_questions, iter_scene_graphs
    inventory = ConceptInventory().update(iter_questions(questions))
    if scene_graphs is not None:
        inventory.update(scene_graphs=iter_scene_graphs(scene_graphs))
    return vocabulary_report(inventory, ontology, model_knows)
