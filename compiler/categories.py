"""The categories a dataset's questions use, as their groundings show them: the evidence behind an
ontology extension (``dsl.OntologyExtension``; ``nablafol vocabulary --categories-out``).

GQA annotates each step of a program with the ids of the objects it selects: in
``select: food truck (1313949)->relate: place,on,o (1313950) [0]->query: name [1]`` the objects
the relate names ``place`` are ``1313950``, a ``road`` in the image's scene graph. A class joins
a category when a step that names the category grounds an object of that class; the count of
such groundings comes with it, for review. Steps whose name is a class or a pronoun, and steps
without ids (``(-)``: nothing matched), say nothing about categories.

    >>> from nablafol.data import question_from_record, scene_graph_from_record
    >>> graph = scene_graph_from_record("1", {"width": 9, "height": 9, "objects": {
    ...     "7": {"name": "man", "x": 0, "y": 0, "w": 1, "h": 1, "attributes": [],
    ...           "relations": [{"name": "on", "object": "8"}]},
    ...     "8": {"name": "train cars", "x": 1, "y": 1, "w": 1, "h": 1, "attributes": [], "relations": []}}})
    >>> q = question_from_record("q", {"imageId": "1", "semanticStr":
    ...     "select: man (7)->relate: place,on,o (8) [0]->query: name [1]"})
    >>> evidence = CategoryEvidence().update([q], {"1": graph})
    >>> dict(evidence.groundings), evidence.extension().categories
    ({('place', 'train car'): 1}, {'place': {'train car': 1}})

Only training records should feed it: an extension learned from the questions being evaluated
would answer them with their own annotations (docs/real-gqa.md).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional

from nablafol import dsl
from nablafol.dsl import ast as A

__all__ = ["CategoryEvidence", "dataset_categories"]


@dataclass
class CategoryEvidence:
    """Groundings of categories: ``(category, class) -> objects grounded``, against one ontology
    (GQA's by default), and what could not be used."""

    ontology: dsl.Ontology = field(default_factory=dsl.Ontology.gqa)
    groundings: Counter = field(default_factory=Counter)
    questions: int = 0
    unreadable: int = 0  # programs that do not parse
    no_scene: int = 0  # questions whose image has no scene graph
    missing_objects: int = 0  # ids a step names that its image's scene graph lacks

    def add(self, program: A.Program, graph) -> None:
        """The groundings of one parsed program (with its ids) over its image's scene graph."""
        for step in program.steps:
            arg = step.argument
            if not isinstance(arg, (A.Objects, A.Relation)) or not arg.ids:
                continue
            category = self.ontology.normalize(arg.name)
            if not self.ontology.is_category(category) or category in self.ontology.pronouns:
                continue
            for object_id in arg.ids:
                obj = graph.find(object_id)
                if obj is None:
                    self.missing_objects += 1
                    continue
                name = self.ontology.normalize(obj.name)
                if name and name != category:
                    self.groundings[(category, name)] += 1

    def add_question(self, question, graphs: Mapping) -> None:
        self.questions += 1
        source = question.program_source()
        try:
            program = (dsl.program_from_semantic(source.value) if source.field == "semantic"
                       else dsl.parse_program(source.value)) if source is not None else None
        except dsl.ProgramError:
            program = None
        if program is None:
            self.unreadable += 1
        elif question.image_id not in graphs:
            self.no_scene += 1
        else:
            self.add(program, graphs[question.image_id])

    def update(self, questions: Iterable, graphs: Mapping) -> "CategoryEvidence":
        for question in questions:
            self.add_question(question, graphs)
        return self

    def agreeing(self) -> int:
        """Groundings the ontology already agrees with (the class is under its category)."""
        return sum(n for (category, name), n in self.groundings.items()
                   if name in self.ontology.classes_under(category))

    def extension(self, min_groundings: int = 1, learned_from: Optional[dict] = None) -> dsl.OntologyExtension:
        """The classes the ontology does not list under the categories the groundings put them
        in, each grounded at least ``min_groundings`` times."""
        categories: dict = {}
        for (category, name), n in sorted(self.groundings.items()):
            if n >= min_groundings and name not in self.ontology.classes_under(category):
                categories.setdefault(category, {})[name] = n
        return dsl.OntologyExtension(categories, dict(learned_from or {}))

    def summary(self) -> dict:
        total = sum(self.groundings.values())
        return {"questions": self.questions, "unreadable programs": self.unreadable,
                "questions without a scene graph": self.no_scene, "ids missing from their scene graph":
                self.missing_objects, "groundings of categories": total, "agreeing with the ontology":
                self.agreeing()}


def dataset_categories(questions, scene_graphs, ontology: Optional[dsl.Ontology] = None) -> CategoryEvidence:
    """The category evidence of a questions file or folder over a scene-graphs file, read
    streaming (scenes kept as text until a question needs one). Bad files raise
    ``InputFileError`` (one line)."""
    from nablafol.data import SceneGraphTexts, iter_questions
    evidence = CategoryEvidence(ontology or dsl.Ontology.gqa())
    return evidence.update(iter_questions(questions), SceneGraphTexts(scene_graphs))
