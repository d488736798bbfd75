"""Each generated question's valid and plausible answers: the embedded dataset's ``{split}_choices.json``.

GQA distributes, beside its questions, the answers that are *valid* for each (that can be an
answer at all: a colour for a colour question) and those that are *plausible* (that hold of
such objects somewhere in the dataset's scene graphs). The embedded dataset's (decided here,
from each question's candidates):

- valid: the question's candidate answers as the compiler lists them over the dataset's
  vocabulary (``CompiledQuestion.answers``): ``yes``/``no`` for a yes/no question, the two
  alternatives of a ``choose``, the values of the type of a ``query TYPE``, the classes under
  the selecting name of a ``query: name``, the attribute types of a ``common``;
- plausible: for ``query TYPE``, the valid values that objects of the queried object's class
  hold somewhere in the dataset's scene graphs (every split; the scene's own values for
  ``select: scene``); for ``query: name``, the valid classes that occur in the dataset's scenes
  of the same location (indoors / outdoors); for every other question, the valid answers
  (the question itself names its alternatives, or asks yes or no).

So the gold answer is always plausible, and plausible answers are always valid.
"""
from __future__ import annotations

from typing import Iterable

from nablafol.compiler import Compiler
from nablafol.data.choices import Choices
from nablafol.dsl import Ontology, program_from_semantic

from .crisp import POSITION_TYPES, SCENE_OBJECT, CrispExecutor, SceneFacts

__all__ = ["World", "question_choices", "dataset_choices"]


class World:
    """What the dataset's scenes hold: the values of each type per class (the scene pseudo-object
    is the class ``scene``), and the classes seen per scene location."""

    def __init__(self, ontology: Ontology, scenes: Iterable[SceneFacts]):
        self.ontology = ontology
        self.values: dict[tuple[str, str], set[str]] = {}
        self.classes_at: dict[str | None, set[str]] = {}
        types = (*ontology.attribute_types, *POSITION_TYPES)
        for facts in scenes:
            self.classes_at.setdefault(facts.graph.location, set()).update(facts.class_of.values())
            for object_id in (*facts.objects, SCENE_OBJECT):
                cls = facts.class_of.get(object_id, SCENE_OBJECT)
                for type_name in types:
                    held = facts.values(object_id, type_name)
                    if held:
                        self.values.setdefault((cls, type_name), set()).update(held)

    def held(self, classes: Iterable[str], type_name: str) -> set[str]:
        """GQA's raw forms of the values of ``type_name`` that objects of ``classes`` hold."""
        forms = set().union(*(self.values.get((cls, type_name), ()) for cls in classes))
        return {self.ontology.raw_form(form) for form in forms}

    def classes_seen_at(self, location: str | None) -> set[str]:
        return {self.ontology.raw_form(cls) for cls in self.classes_at.get(location, ())}


def question_choices(question, facts: SceneFacts, world: World, compiler: Compiler,
                     executor: CrispExecutor) -> Choices:
    """The valid and plausible answers of one generated question (its image's ``facts``)."""
    valid = compiler.compile_semantic(list(question.semantic)).answers
    program = program_from_semantic(question.semantic)
    last = program.steps[-1]
    if last.operation != "query":
        return Choices(valid, valid)
    queried = executor.run(program, facts).results[last.dependencies[0]]
    type_name = world.ontology.type_name(last.argument.name) if last.argument.name != "name" else "name"
    if type_name == "name":
        held = world.classes_seen_at(facts.graph.location)
    else:
        held = world.held({facts.class_of.get(o, SCENE_OBJECT) for o in queried}, type_name)
    return Choices(valid, tuple(answer for answer in valid if answer in held))


def dataset_choices(dataset) -> dict[str, list[tuple[str, Choices]]]:
    """``{split: [(questionId, Choices), ...]}`` of a :class:`~nablafol.synthetic.SyntheticDataset`."""
    ontology = dataset.vocabulary.ontology()
    executor, compiler = CrispExecutor(ontology), Compiler(ontology)
    facts = {graph.image_id: executor.facts(graph) for graphs in dataset.scenes.values() for graph in graphs}
    world = World(ontology, facts.values())
    return {split: [(q.id, question_choices(q, facts[q.image_id], world, compiler, executor)) for q in questions]
            for split, questions in dataset.questions.items()}
