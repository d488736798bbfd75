"""The crisp executor on a hand-written scene graph: every GQA operation, hand-computed answers."""
from __future__ import annotations

import dataclasses

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from nablafol.dsl import parse_program
from nablafol.data import SceneGraph, SceneObject, SceneRelation, scene_graph_from_record
from nablafol.graph_oracles import geometry
from nablafol.synthetic import CrispError, CrispExecutor, UndefinedAnswerError, Vocabulary

# 640 x 480; thirds at x = 213.3 / 426.7 and y = 160 / 320
SCENE = {
    "width": 640, "height": 480, "location": "outdoors", "weather": "sunny",
    "objects": {
        "1": {"name": "man", "x": 40, "y": 100, "w": 100, "h": 300, "attributes": ["old", "standing"],
              "relations": [{"name": "wearing", "object": "2"}, {"name": "holding", "object": "3"},
                            {"name": "to the left of", "object": "4"}, {"name": "to the left of", "object": "5"}]},
        "2": {"name": "hat", "x": 60, "y": 100, "w": 60, "h": 30, "attributes": ["red"], "relations": []},
        "3": {"name": "cup", "x": 110, "y": 230, "w": 30, "h": 40, "attributes": ["white", "glass"], "relations": []},
        "4": {"name": "table", "x": 300, "y": 300, "w": 240, "h": 120, "attributes": ["brown", "wood", "round"],
              "relations": [{"name": "under", "object": "6"}, {"name": "to the right of", "object": "1"}]},
        "5": {"name": "boy", "x": 560, "y": 250, "w": 60, "h": 180, "attributes": ["young", "sitting"],
              "relations": [{"name": "to the right of", "object": "1"}]},
        "6": {"name": "apple", "x": 400, "y": 280, "w": 30, "h": 30, "attributes": ["red"],
              "relations": [{"name": "on", "object": "4"}]},
        "7": {"name": "pizza", "x": 470, "y": 290, "w": 60, "h": 20, "attributes": ["round"],
              "relations": [{"name": "on", "object": "4"}]},
        "8": {"name": "apple", "x": 200, "y": 400, "w": 30, "h": 30, "attributes": ["red"], "relations": []},
    },
}


@pytest.fixture(scope="module")
def graph() -> SceneGraph:
    return scene_graph_from_record("777", SCENE)


@pytest.fixture(scope="module")
def executor() -> CrispExecutor:
    return CrispExecutor(Vocabulary.default().ontology())


CASES = [
    # select, query name; categories hold through the hierarchy
    ("select: man->query: name [0]", "man"),
    ("select: person->filter age: young [0]->query: name [1]", "boy"),
    ("select: food->filter: not(red) [0]->query: name [1]", "pizza"),  # untyped, negated
    ("select: furniture->filter color: brown [0]->query: material [1]", "wood"),
    # relate: role o (the named objects are the object), role s, `_`, category names
    ("select: man->relate: _,wearing,o [0]->query: name [1]", "hat"),
    ("select: hat->relate: person,wearing,s [0]->query: name [1]", "man"),
    ("select: table->relate: food,on,s [0]->filter color: red [1]->query: name [2]", "apple"),
    ("select: hat->relate: _,same color,s [0]->query: name [1]", "apple"),  # from attributes
    ("select: cup->relate: furniture,bigger than,s [0]->query: name [1]", "table"),  # a comparative
    # exist, verify TYPE (attributes, positions, scene), verify rel
    ("select: apple->relate: furniture,on,o [0]->exist: ? [1]", "yes"),
    ("select: dog->exist: ? [0]", "no"),
    ("select: man->verify age: old [0]", "yes"),
    ("select: man->verify: young [0]", "no"),
    ("select: cup->verify hposition: left [0]", "yes"),
    ("select: table->verify vposition: bottom [0]", "yes"),
    ("select: hat->verify vposition: middle [0]", "no"),
    ("select: scene->verify weather: sunny [0]", "yes"),
    ("select: scene->verify location: indoors [0]", "no"),
    ("select: man->verify rel: cup,holding,o [0]", "yes"),
    ("select: cup->verify rel: man,holding,s [0]", "yes"),
    ("select: boy->verify rel: cup,holding,o [0]", "no"),
    # query TYPE
    ("select: boy->query: hposition [0]", "right"),
    ("select: table->query: vposition [0]", "bottom"),
    ("select: scene->query: location [0]", "outdoors"),
    ("select: scene->query: weather [0]", "sunny"),
    ("select: apple->query: color [0]", "red"),  # two apples, one color: defined
    # choose TYPE, choose rel
    ("select: hat->choose color: blue|red [0]", "red"),
    ("select: man->choose hposition: left|right [0]", "left"),
    ("select: scene->choose location: indoors|outdoors [0]", "outdoors"),
    ("select: table->choose rel: man,to the left of|to the right of,s [0]", "left"),
    ("select: man->choose rel: table,to the right of|to the left of,o [0]", "left"),
    ("select: table->choose rel: apple,under|on,s [0]", "on"),
    # choose COMP: the name of the winning branch as written in its select
    ("select: table->select: cup ->choose larger:  [0, 1]", "table"),
    ("select: cup->select: table ->choose smaller:  [0, 1]", "cup"),
    ("select: boy->select: man ->choose taller:  [0, 1]", "man"),
    ("select: boy->select: man ->choose shorter:  [0, 1]", "boy"),
    ("select: man->select: table ->choose longer:  [0, 1]", "man"),
    ("select: table->select: hat ->choose higher:  [0, 1]", "hat"),
    ("select: table->select: hat ->choose lower:  [0, 1]", "table"),
    ("select: boy->select: man ->choose older:  [0, 1]", "man"),
    ("select: boy->select: man ->choose younger:  [0, 1]", "boy"),
    ("select: pizza->select: apple ->choose healthier:  [0, 1]", "apple"),
    ("select: pizza->select: apple ->choose less healthy:  [0, 1]", "pizza"),
    ("select: food->filter color: red [0]->select: pizza ->choose healthier:  [1, 2]", "food"),
    # and / or
    ("select: man->exist: ? [0]->select: dog (-) ->exist: ? [2]->and:  [1, 3]", "no"),
    ("select: man->exist: ? [0]->select: dog (-) ->exist: ? [2]->or:  [1, 3]", "yes"),
    ("select: man->verify age: old [0]->verify pose: standing [0]->and:  [1, 2]", "yes"),
    # same / different, two inputs (TwoSame) and one input (AllSame)
    ("select: hat->select: apple ->same color:  [0, 1]", "yes"),
    ("select: hat->select: apple ->different color:  [0, 1]", "no"),
    ("select: hat->select: cup ->same color:  [0, 1]", "no"),
    ("select: apple->same: color [0]", "yes"),
    ("select: apple->different: color [0]", "no"),
    ("select: food->same: color [0]", "no"),  # the pizza has no color
    ("select: person->same: hposition [0]", "no"),
    ("select: apple->same: hposition [0]", "yes"),  # centres 415 and 215: both middle
    # common
    ("select: hat->select: apple ->common:  [0, 1]", "color"),
    ("select: table->select: pizza ->common:  [0, 1]", "shape"),
]


@pytest.mark.parametrize("line, expected", CASES)
def test_hand_computed_answers(executor, graph, line, expected):
    assert executor.answer(parse_program(line), graph) == expected


def test_every_operation_has_a_hand_computed_case():
    fields = {step.field for line, _ in CASES for step in parse_program(line)}
    verbs = {f.split(" ")[0] for f in fields}
    assert verbs == {"select", "filter", "relate", "exist", "verify", "query", "choose", "and", "or", "same",
                     "different", "common"}
    comparatives = {f.split(" ", 1)[1] for f in fields if f.startswith("choose ")} - {
        "color", "hposition", "location", "rel"}
    assert comparatives == {"larger", "smaller", "taller", "shorter", "longer", "higher", "lower", "older",
                            "younger", "healthier", "less healthy"}


def test_grounding_lists_the_objects_each_naming_step_picks(executor, graph):
    run = executor.run(parse_program("select: person->relate: _,holding,o [0]->verify rel: man,holding,s [1]"), graph)
    assert run.grounding == (("1", "5"), ("3",), ("1",))
    assert run.results[0] == frozenset({"1", "5"}) and run.results[2] is True and run.answer == "yes"
    chosen = executor.run(parse_program("select: table->choose rel: apple,under|on,s [0]"), graph)
    assert chosen.grounding[1] == ("6",)  # the one apple in either relation with the table


UNDEFINED = [
    "select: person->query: name [0]",                 # a man and a boy
    "select: table->relate: food,on,s [0]->query: name [1]",  # an apple and a pizza
    "select: dog->query: color [0]",                   # nothing to ask about
    "select: pizza->query: color [0]",                 # no color listed
    "select: hat->select: cup ->choose older:  [0, 1]",        # neither is older
    "select: boy->choose rel: apple,on|under,s [0]",   # neither relation holds
    "select: hat->choose color: red|red [0]",          # both alternatives hold
    "select: man->select: cup ->common:  [0, 1]",      # nothing shared
    "select: scene->query: name [0]",
]


@pytest.mark.parametrize("line", UNDEFINED)
def test_undefined_answers_raise_one_line(executor, graph, line):
    with pytest.raises(UndefinedAnswerError) as caught:
        executor.answer(parse_program(line), graph)
    assert "\n" not in str(caught.value) and str(caught.value).startswith("step ")


@pytest.mark.parametrize("line, words", [
    ("select: spaceship->exist: ? [0]", "'spaceship' is not a class or category"),
    ("select: hat->filter color: wood [0]->exist: ? [1]", "'wood' is not a color value"),
    ("select: hat->verify flavor: red [0]", "'flavor' is not an attribute type"),
    ("select: hat->relate: _,riding,s [0]->exist: ? [1]", "'riding' is not a relation"),
])
def test_bad_programs_raise_crisp_error_naming_step_and_concept(executor, graph, line, words):
    with pytest.raises(CrispError) as caught:
        executor.answer(parse_program(line), graph)
    assert not isinstance(caught.value, UndefinedAnswerError)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_probabilistic_graph_and_malformed_program_are_refused(executor, graph):
    uncertain = dataclasses.replace(graph.objects[0], names={"man": 0.7, "person": 0.3})
    with pytest.raises(CrispError, match="plain scene graph"):
        executor.answer(parse_program("select: man->exist: ? [0]"), dataclasses.replace(
            graph, objects=(uncertain,) + graph.objects[1:]))
    dangling = parse_program("select: man->exist: ? [0]")
    dangling = dataclasses.replace(dangling, steps=dangling.steps[:1])
    with pytest.raises(CrispError, match="malformed program"):
        executor.run(dangling, graph)


@pytest.mark.slow
@given(st.lists(st.tuples(st.integers(0, 600), st.integers(0, 440), st.integers(1, 300), st.integers(1, 300)),
                min_size=2, max_size=6))
def test_positions_and_comparatives_agree_with_the_geometry_rules(boxes):
    executor = CrispExecutor(Vocabulary.default().ontology())
    objects = tuple(SceneObject(id=str(i), names={"cup": 1.0}, x=x, y=y, w=w, h=h) for i, (x, y, w, h) in enumerate(boxes))
    facts = executor.facts(SceneGraph("1", 640, 480, objects))
    image = torch.tensor([640.0, 480.0])
    for i, a in enumerate(boxes):
        box_a = torch.tensor(a, dtype=torch.float64)
        assert facts.position_of[str(i)]["hposition"] == geometry.POSITIONS["hposition"][int(geometry.hposition(box_a, image))]
        for j, b in enumerate(boxes):
            if i != j:
                rule = bool(geometry.larger(box_a, torch.tensor(b, dtype=torch.float64), image))
                assert ((str(i), str(j)) in facts.compared("larger")) == rule


def test_relations_read_as_stored_on_their_subject(executor, graph):
    # under(table, apple) is stored on the table; nothing says the apple is under anything
    assert executor.answer(parse_program("select: apple->relate: _,under,s [0]->query: name [1]"), graph) == "table"
    assert executor.answer(parse_program("select: apple->relate: _,under,o [0]->exist: ? [1]"), graph) == "no"


def test_scene_relations_attach_to_subject_only():
    graph = SceneGraph("2", 100, 100, (
        SceneObject("1", {"dog": 1.0}, 0, 0, 10, 10, relations=(SceneRelation("near", "2"),)),
        SceneObject("2", {"cat": 1.0}, 50, 50, 10, 10)))
    executor = CrispExecutor(Vocabulary.default().ontology())
    assert executor.answer(parse_program("select: cat->relate: dog,near,s [0]->exist: ? [1]"), graph) == "yes"
    assert executor.answer(parse_program("select: dog->relate: cat,near,s [0]->exist: ? [1]"), graph) == "no"
