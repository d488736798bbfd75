"""Generated questions: every GQA operation, parseable programs, crisp answers, GQA's fields."""
from __future__ import annotations

import collections

import pytest

from nablafol.dsl import Objects, Relation, Scene, Value, parse_program, program_from_semantic
from nablafol.synthetic import CrispExecutor
from nablafol.synthetic.question_generator import FAMILIES

SPLITS = ("train", "val", "testdev")


@pytest.fixture(scope="module")
def records(dataset):
    """(split, question, program, scene graph) for every question."""
    scenes = {g.image_id: g for split in SPLITS for g in dataset.scenes[split]}
    return [(split, q, program_from_semantic(list(q.semantic)), scenes[q.image_id])
            for split in SPLITS for q in dataset.questions[split]]


@pytest.mark.slow
def test_every_operation_of_the_spec_occurs(records):
    steps = [step for _, _, program, _ in records for step in program]
    fields = collections.Counter(step.field for step in steps)
    verbs = {step.operation for step in steps}
    assert verbs == {"select", "filter", "relate", "exist", "verify", "query", "choose", "and", "or", "same",
                     "different", "common"}
    assert any(isinstance(s.argument, Scene) for s in steps)
    filters = [s for s in steps if s.operation == "filter"]
    assert any(s.type is None for s in filters) and any(s.type is not None for s in filters)
    assert any(s.argument.negated for s in filters)
    relates = [s.argument for s in steps if s.operation == "relate"]
    assert {r.role for r in relates} == {"s", "o"}
    assert any(r.any_name for r in relates) and any(r.name in ("animal", "furniture", "person", "food", "clothing")
                                                     for r in relates)
    assert any(not r.any_name and r.name in ("dog", "cup", "man", "table", "hat", "shirt") for r in relates)
    for type_name in ("color", "material", "hposition", "vposition", "location", "weather", "rel"):
        assert fields[f"verify {type_name}"] > 0, type_name
    queried = {s.argument.name for s in steps if s.operation == "query"}
    assert {"name", "color", "material", "hposition", "location", "weather"} <= queried
    assert {"choose color", "choose hposition", "choose location", "choose weather", "choose rel"} <= set(fields)
    assert any(s.operation == "choose" and s.type == "rel" and set(s.argument.relations) ==
               {"to the left of", "to the right of"} for s in steps)
    comparatives = {s.type for s in steps if s.is_comparative}
    assert comparatives == {"larger", "smaller", "taller", "shorter", "longer", "higher", "lower", "older",
                            "younger", "healthier", "less healthy"}
    same = [s for s in steps if s.operation in ("same", "different")]
    assert {s.arity for s in same if s.operation == "same"} == {1, 2}
    assert {s.arity for s in same if s.operation == "different"} == {1, 2}
    lengths = collections.Counter(len(program) for _, _, program, _ in records)
    assert min(lengths) >= 2 and max(lengths) >= 5


@pytest.mark.slow
def test_programs_parse_both_ways_and_round_trip(records):
    for _, question, program, _ in records:
        assert parse_program(question.semantic_str) == program
        assert program.to_semantic_str() == question.semantic_str
        assert list(question.semantic) == program.to_semantic()


@pytest.mark.slow
def test_answers_are_the_crisp_executors_and_ids_its_grounding(dataset, records):
    executor = CrispExecutor(dataset.vocabulary.ontology())
    for _, question, program, graph in records:
        run = executor.run(program, graph)
        assert run.answer == question.answer, question.semantic_str
        for step, grounded in zip(program, run.grounding):
            if isinstance(step.argument, (Objects, Relation)):
                assert step.argument.ids == grounded
                assert set(grounded) <= set(graph.object_ids)


@pytest.mark.slow
def test_yes_no_answers_are_balanced_per_split(dataset):
    for split in SPLITS:
        answers = collections.Counter(q.answer for q in dataset.questions[split])
        assert answers["yes"] == answers["no"] > 0, split
        binary = answers["yes"] + answers["no"]
        assert 0.3 < binary / sum(answers.values()) < 0.8


@pytest.mark.slow
def test_gqa_fields(dataset, records):
    ids = [q.id for _, q, _, _ in records]
    assert len(set(ids)) == len(ids) and all(i.isdigit() for i in ids)
    by_id = {q.id: q for _, q, _, _ in records}
    per_scene = collections.Counter(q.image_id for _, q, _, _ in records)
    assert 8 <= sum(per_scene.values()) / len(per_scene) <= 13
    structural = collections.Counter()
    for _, q, program, _ in records:
        assert q.question.endswith("?") and q.question[0].isupper() and q.extra["fullAnswer"].endswith(".")
        assert q.equivalent == (q.id,) and q.is_balanced is True
        assert set(q.extra["groups"]) == {"global", "local"}
        assert q.types["structural"] in ("query", "verify", "logical", "choose", "compare")
        assert q.types["semantic"] in ("obj", "attr", "rel", "cat", "global")
        structural[q.types["structural"]] += 1
        assert (q.types["structural"] in ("verify", "logical") or q.types["detailed"] in (
            "twoSame", "twoDifferent", "allSame", "allDifferent")) == program.is_binary
        for other in q.entailed:  # links stay within one image, both ways
            assert by_id[other].image_id == q.image_id and q.id in by_id[other].entailed
    assert set(structural) == {"query", "verify", "logical", "choose", "compare"}
    assert sum(1 for _, q, _, _ in records if q.entailed) > 0.4 * len(records)


@pytest.mark.slow
def test_entailed_questions_are_about_the_same_fact(records):
    by_id = {q.id: (q, program) for _, q, program, _ in records}
    checked = 0
    for _, q, program, _ in records:
        if q.types["detailed"] != "queryAttr":
            continue
        for other_id in q.entailed:
            other, other_program = by_id[other_id]
            last = other_program.answer_step
            if other.types["detailed"] == "verifyAttr" and last.type == program.answer_step.argument.name:
                assert (other.answer == "yes") == (last.argument.value == q.answer)
                checked += 1
    assert checked > 50


@pytest.mark.slow
def test_every_family_contributes(dataset):
    detailed = {q.types["detailed"] for split in SPLITS for q in dataset.questions[split]}
    expected = {"queryAttr", "verifyAttr", "chooseAttr", "positionQuery", "positionVerify", "positionChoose",
                "locationQuery", "weatherVerify", "categoryAttr", "exist", "existAttr", "existAttrNot", "relVerify",
                "relChooser", "logicAnd", "logicOr", "compare", "twoSame", "twoDifferent", "allSame",
                "allDifferent", "twoCommon", "sameRelate"}
    assert expected <= detailed and len(FAMILIES) == 11


@pytest.mark.slow
def test_the_dfol_engine_with_the_golden_oracle_agrees(dataset):
    """The crisp ground truth and the project's reasoning (compiler + engine + scene-graph
    oracle) answer every question alike: neither is allowed to drift from the spec alone."""
    from nablafol.pipeline.answering import Answerer
    from nablafol.pipeline.perception import SceneGraphPerception
    from nablafol.pipeline.evaluation import answer_all
    graphs = {g.image_id: g for g in dataset.scenes["val"] + dataset.scenes["testdev"]}
    questions = dataset.questions["val"] + dataset.questions["testdev"]
    run = answer_all(questions, Answerer(SceneGraphPerception(graphs, ontology=dataset.vocabulary.ontology())))
    assert run.skips == []
    wrong = [(q.semantic_str, q.answer, run.predictions[q.id]) for q in questions if run.predictions[q.id] != q.answer]
    assert wrong == []


@pytest.mark.slow
def test_untyped_and_negated_filters_mean_what_the_text_says(records):
    for _, q, program, graph in records:
        if q.types["detailed"] != "existAttrNot":
            continue
        step = program.steps[1]
        assert isinstance(step.argument, Value) and step.argument.negated and "not" in q.question


def test_a_restricted_vocabulary_asks_only_about_its_own_concepts():
    from nablafol.synthetic import Vocabulary, build_dataset
    vocabulary = Vocabulary.default(classes=["man", "girl", "dog", "table", "cup", "apple", "pizza", "hat", "car"])
    small = build_dataset(n_train=25, n_val=0, n_testdev=0, seed=1, vocabulary=vocabulary)
    ontology = vocabulary.ontology()
    executor = CrispExecutor(ontology)
    graphs = {g.image_id: g for g in small.scenes["train"]}
    assert len(small.questions["train"]) > 100
    for q in small.questions["train"]:
        program = program_from_semantic(list(q.semantic))
        for step in program:
            if isinstance(step.argument, (Objects, Relation)) and step.argument.name != "_":
                assert ontology.is_name(step.argument.name)
        assert executor.answer(program, graphs[q.image_id]) == q.answer
