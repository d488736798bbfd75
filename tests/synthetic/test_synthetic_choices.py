"""The embedded dataset's choices files and annotations, checked against the scene graphs."""
from __future__ import annotations

import pytest

from nablafol.data import load_questions
from nablafol.data.choices import load_choices
from nablafol.dsl import program_from_semantic
from nablafol.synthetic import CrispExecutor
from nablafol.synthetic.annotations import tokens
from nablafol.synthetic.choices import dataset_choices
from nablafol.synthetic.text import plural

# its fixtures train or generate for the whole module: among the longest of a measured run
pytestmark = pytest.mark.slow


def test_choices_files_cover_every_question_and_hold_the_gold_answer(written):
    folder, _, _ = written
    for split in ("train", "val", "testdev"):
        questions = load_questions(folder / f"{split}_balanced_questions.json")
        choices = load_choices(folder / f"{split}_choices.json")
        assert list(choices) == list(questions)
        for qid, question in questions.items():
            valid, plausible = choices[qid]
            assert question.answer in plausible and set(plausible) <= set(valid)
            if question.answer in ("yes", "no"):
                assert valid == plausible == ("yes", "no")


def test_plausible_values_are_held_by_the_class_somewhere_and_others_nowhere(dataset):
    ontology = dataset.vocabulary.ontology()
    executor = CrispExecutor(ontology)
    facts = {g.image_id: executor.facts(g) for graphs in dataset.scenes.values() for g in graphs}
    choices = {qid: c for items in dataset_choices(dataset).values() for qid, c in items}
    checked = 0
    for question in dataset.questions["val"]:
        program = program_from_semantic(question.semantic)
        last = program.steps[-1]
        if last.operation != "query" or last.argument.name in ("name", "location", "weather"):
            continue
        scene = facts[question.image_id]
        (queried,) = executor.run(program, scene).results[last.dependencies[0]]
        cls, type_name = scene.class_of[queried], last.argument.name
        # brute force: every value of the type any object of that class holds in any scene
        held = {ontology.raw_form(v) for f in facts.values() for o in f.objects if f.class_of[o] == cls
                for v in f.values(o, type_name)}
        valid, plausible = choices[question.id]
        assert set(plausible) == held & set(valid)
        checked += 1
    assert checked > 20


def test_annotations_point_at_objects_of_the_image_named_by_their_words(dataset):
    graphs = {g.image_id: g for graphs in dataset.scenes.values() for g in graphs}
    ontology = dataset.vocabulary.ontology()
    annotated = 0
    for question in dataset.questions["train"]:
        graph, extra = graphs[question.image_id], question.extra
        for part, text in (("question", question.question), ("fullAnswer", extra["fullAnswer"]),
                           ("answer", question.answer)):
            words = tokens(text)
            for position, object_id in extra["annotations"][part].items():
                start, _, end = position.partition(":")
                phrase = " ".join(words[int(start):int(end) if end else int(start) + 1])
                obj = graph.find(object_id)
                names = {obj.name, *ontology.categories_of(ontology.normalize(obj.name))}
                assert phrase in names | {plural(n) for n in names}, (question.question, position, phrase)
                annotated += 1
    assert annotated > len(dataset.questions["train"])
