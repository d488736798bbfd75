"""End to end: DFOL programs through nablafol.engine.Engine over the GQA oracles.

Hand-built programs on the fixture scenes, and a property test: on random small
probabilistic scene graphs the engine over SceneGraphOracle equals brute-force enumeration
over the very tables the oracle returns, for read-once programs.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, target
from hypothesis import strategies as st

from nablafol.data import load_scene_graphs, scene_graph_from_record
from nablafol.engine import Engine
from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Relate, Top
from nablafol.oracle import Requests
from nablafol.graph_oracles import CompositeOracle, KnowledgeBase, KnowledgeOracle, SceneGraphOracle
from nablafol.testing import brute_force, repeated_predicates
from nablafol.testing.reference import MAX_UNCERTAIN_ATOMS, uncertain_atoms
from nablafol.testing.strategies import probabilities, programs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"
E, A = Quantifier.EXISTS, Quantifier.FORALL


def name(n):
    return Predicate(n, kind="name")


@pytest.fixture(scope="module")
def plain():
    return load_scene_graphs(FIXTURES / "val_sceneGraphs.json")


def thing_with_cup_on_it(category: str) -> Program:
    """∃X: category(X) ∧ ∃Y: on(Y, X) ∧ cup(Y)."""
    cup_on = Relate.of(Predicate("on", 2, "rel"), E, Filter(name("cup"), Top()), reverse=True)
    return Program.yes_no(Aggregate(E, Filter(name(category), cup_on)))


def test_hand_built_programs_on_the_kitchen(plain):
    oracle = SceneGraphOracle([plain["n161313"], plain["2354786"]])
    chair, table, furniture = (thing_with_cup_on_it(c) for c in ("chair", "table", "furniture"))
    # the cup is on the table, nothing is on the chair; scene 1 has no cup at all
    probs = Engine()([chair, table, furniture, table], oracle, scenes=[0, 0, 0, 1]).probs()[:, 0]
    assert probs.tolist() == [0.0, 1.0, 1.0, 0.0]


def test_query_name_picks_the_most_specific_class(plain):
    oracle = SceneGraphOracle([plain["2354786"]])
    # what is the person riding? candidates: the class of the ridden object
    ridden = Relate.of(Predicate("riding", 2, "rel"), E, Filter(name("person"), Top()), reverse=True)
    labels = ("horse", "cow", "animal")
    candidates = tuple(Aggregate(E, Filter(Predicate(c, kind="class"), ridden)) for c in labels)
    answers = Engine()([Program(candidates, labels)], oracle)
    assert answers.predictions() == ["horse"]
    assert answers.candidate_probabilities(0) == {"horse": 1.0, "cow": 0.0, "animal": 0.0}


def test_scene_question_and_comparatives(plain):
    oracle = SceneGraphOracle([plain["2417468"]])
    sunny = Program.yes_no(Aggregate(E, Filter(Predicate("sunny", kind="attr"), Filter(Predicate("scene", kind="scene"), Top()))))
    # is every man shorter than some water? man h 200 vs water h 195: within the margin, so no
    shorter = Program.yes_no(Aggregate(A, Relate.of(Predicate("shorter", 2, "compare"), E,
                                                    Filter(name("water"), Top()))))
    probs = Engine()([sunny, shorter], oracle, scenes=[0, 0]).probs()[:, 0]
    assert probs.tolist() == [1.0, 0.0]


def test_probabilistic_graph_end_to_end():
    graphs = load_scene_graphs(FIXTURES / "predicted_sceneGraphs.json")
    oracle = SceneGraphOracle([graphs["2354786"]])
    young_person = Program.yes_no(Aggregate(E, Filter(Predicate("young", kind="attr"), Filter(name("person"), Top()))))
    white = Program.yes_no(Aggregate(E, Filter(Predicate("white", kind="attr"), Top())))
    probs = Engine()([young_person, white], oracle, scenes=[0, 0]).probs()[:, 0]
    # the man is a person with p 0.82 + 0.11 + 0.04 and young with p 0.7; horse white 0.05, fence 0.6
    np.testing.assert_allclose(probs.tolist(), [0.97 * 0.7, 1 - 0.95 * 0.4], rtol=1e-5)


def test_knowledge_and_scene_graph_together():
    graph = scene_graph_from_record("k", {"width": 300, "height": 300, "objects": {
        "1": {"name": "fork", "x": 0, "y": 0, "w": 10, "h": 10, "attributes": ["silver"],
              "relations": [{"name": "on", "object": "2"}]},
        "2": {"name": "plate", "x": 0, "y": 0, "w": 50, "h": 50, "attributes": [], "relations": []},
        "3": {"name": "cake", "x": 0, "y": 0, "w": 20, "h": 20, "attributes": [],
              "relations": [{"name": "on", "object": "2"}]}}})
    oracle = CompositeOracle([SceneGraphOracle([graph]),
                              KnowledgeOracle.from_scene_graphs([graph], KnowledgeBase.sample())])
    # which silver thing can lift the object on the plate?  ∃X: silver(X) ∧ ∃Y: lift(X, Y) ∧ ∃Z: on(Y, Z) ∧ plate(Z)
    on_plate = Relate.of(Predicate("on", 2, "rel"), E, Filter(name("plate"), Top()))
    lifts = Relate.of(Predicate("CapableOf:lift", 2, "kg"), E, on_plate)
    silver_lifter = Program.yes_no(Aggregate(E, Filter(Predicate("silver", kind="attr"), lifts)))
    plate_lifter = Program.yes_no(Aggregate(E, Filter(name("plate"), lifts)))
    assert Engine()([silver_lifter, plate_lifter], oracle, scenes=[0, 0]).probs()[:, 0].tolist() == [1.0, 0.0]


# ---------------------------------------------------------------- property: engine == brute force

NAMES = ("man", "woman", "boy", "horse", "chair")
COLORS = ("red", "white")
AGES = ("young", "old")
RELATIONS = ("on", "holding")
UNARY = (name("person"), Predicate("man", kind="class"), Predicate("red", kind="attr"),
         Predicate("white", kind="attr"), Predicate("old", kind="attr"), Predicate("young", kind="attr"),
         Predicate("left", kind="hposition"))
BINARY = tuple(Predicate(r, 2, "rel") for r in RELATIONS) + (
    Predicate("larger", 2, "compare"), Predicate("older", 2, "compare"), Predicate("color", 2, "same"))

# which graph facts feed each predicate: a predicate that must be certain makes them 0/1
FEEDS = {"name": {"names"}, "class": {"names"}, "attr": {v: {v} for v in COLORS + AGES},
         "older": {"names", "young", "old"}, "color": set(COLORS)}


def _crisp_facts(certain) -> set[str]:
    facts = set()
    for p in certain:
        if p.kind in ("name", "class"):
            facts |= FEEDS[p.kind]
        elif p.kind == "attr":
            facts |= FEEDS["attr"][p.name]
        elif p.kind == "rel":
            facts.add(p.name)
        elif p.name in FEEDS:
            facts |= FEEDS[p.name]
    return facts


@st.composite
def graph_and_program(draw, crisp: bool = False):
    program = draw(programs(UNARY, BINARY, max_depth=3, max_candidates=2))
    certain = _crisp_facts(repeated_predicates(program))
    n = draw(st.integers(1, 3))
    ids = [str(100 + i) for i in range(n)]
    objects = {}
    for oid in ids:
        if crisp or "names" in certain:
            names = {draw(st.sampled_from(NAMES)): 1.0}
        else:
            names = draw(st.dictionaries(st.sampled_from(NAMES), st.floats(0.0625, 1.0, width=32), min_size=1, max_size=2))
        attributes = {}
        for value in COLORS + AGES:
            p = draw(probabilities(crisp or value in certain))
            if p > 0:
                attributes[value] = p
        relations = []
        for rel in RELATIONS:
            for other in ids:
                p = draw(probabilities(crisp or rel in certain)) if other != oid else 0.0
                if p > 0:
                    relations.append({"name": rel, "object": other, "p": p})
        box = draw(st.lists(st.integers(0, 90), min_size=4, max_size=4))
        objects[oid] = {"names": names, "x": box[0], "y": box[1], "w": box[2], "h": box[3],
                        "attributes": attributes, "relations": relations}
    graph = scene_graph_from_record("rand", {"width": 100, "height": 100, "objects": objects})
    return program, graph


def oracle_tables(oracle, program):
    tables = {}
    for p in program.predicates():
        ask = oracle.unary if p.arity == 1 else oracle.binary
        tables[p] = ask(Requests.build([0], [p])).exp()[0].double().numpy()
    return tables


@pytest.mark.slow
@given(graph_and_program())
def test_engine_equals_brute_force_on_probabilistic_scene_graphs(case):
    program, graph = case
    oracle = SceneGraphOracle([graph])
    tables = oracle_tables(oracle, program)
    for p in repeated_predicates(program):  # the generator made them certain
        assert set(np.unique(tables[p])) <= {0.0, 1.0}, p
    uncertain = uncertain_atoms(program, tables)
    assume(uncertain <= MAX_UNCERTAIN_ATOMS)
    target(float(uncertain))  # steer the search towards scenes with many uncertain facts
    n = int(oracle.num_objects[0])
    expected = brute_force(program, tables, n)
    got = Engine()([program], oracle).probs()[0, : len(expected)].double().numpy()
    np.testing.assert_allclose(got, expected, atol=2e-5)


@pytest.mark.slow
@given(graph_and_program(crisp=True))
def test_plain_scene_graphs_give_zero_one_tables_and_classical_answers(case):
    program, graph = case
    assert graph.is_plain
    oracle = SceneGraphOracle([graph])
    tables = oracle_tables(oracle, program)
    assert all(set(np.unique(t)) <= {0.0, 1.0} for t in tables.values())
    expected = brute_force(program, tables, int(oracle.num_objects[0]))
    got = Engine()([program], oracle).probs()[0, : len(expected)].double().numpy()
    np.testing.assert_array_equal(got, expected)
