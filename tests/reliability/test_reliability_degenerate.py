"""Degenerate scenes and programs: zero objects (∃ false, ∀ vacuously true, "is there" no), one
object, 500 objects, a 30-step program, a category with no members, an attribute type with one
value. Answers are checked against independent references (the classical evaluator and the
brute-force enumerator of nablafol.testing, the crisp executor of the embedded dataset, closed
forms), and no probability is ever NaN."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from nablafol.compiler import Compiler
from nablafol.dsl import Ontology, parse_program
from nablafol.data import Question, scene_graph_from_record
from nablafol.engine import Engine
from nablafol.pipeline.answering import Answerer
from nablafol.pipeline.perception import SceneGraphPerception
from nablafol.pipeline.evaluation import answer_all
from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Relate, Top
from nablafol.scoring import vocabulary_match
from nablafol.oracle import TableOracle
from nablafol.synthetic import CrispExecutor, QuestionGenerator, UndefinedAnswerError, Vocabulary
from nablafol.testing import brute_force

RED, CHAIR, LEFT = Predicate("red"), Predicate("chair"), Predicate("left", arity=2)
E, A, N = Quantifier.EXISTS, Quantifier.FORALL, Quantifier.NOT_EXISTS

# name -> (program, truth over an empty scene)
PROGRAMS = {
    "∃x red(x)": (Program.yes_no(Aggregate(E, Filter(RED, Top()))), False),
    "∀x red(x)": (Program.yes_no(Aggregate(A, Filter(RED, Top()))), True),
    "∄x red(x)": (Program.yes_no(Aggregate(N, Filter(RED, Top()))), True),
    "∃x ∀y left(x,y)": (Program.yes_no(Aggregate(E, Relate.of(LEFT, A, Top()))), False),
    "∀x ∃y left(x,y) ∧ red(y)": (Program.yes_no(Aggregate(A, Relate.of(LEFT, E, Filter(RED, Top())))), True),
    "∃x chair(x) ∧ ∄y left(x,y)": (Program.yes_no(Aggregate(E, Filter(CHAIR, Relate.of(LEFT, N, Top())))), False),
    "which: red or chair": (Program.choice({"red": Aggregate(E, Filter(RED, Top())),
                                            "chair": Aggregate(E, Filter(CHAIR, Top()))}), None),
}


def tables_for(n: int, rng: np.random.Generator, crisp: bool) -> dict:
    draw = (lambda *shape: rng.integers(0, 2, shape).astype(np.float64)) if crisp else \
        (lambda *shape: rng.uniform(0, 1, shape))
    return {RED: draw(n), CHAIR: draw(n), LEFT: draw(n, n)}


def engine_probs(programs, tables_per_scene, dtype=torch.float32):
    oracle = TableOracle([{k: torch.as_tensor(v, dtype=dtype) for k, v in t.items()} for t in tables_per_scene],
                         num_objects=[len(t[RED]) for t in tables_per_scene])
    answers = Engine()(programs, oracle, list(range(len(tables_per_scene))) if len(programs) > 1 else None)
    assert not torch.isnan(answers.log_probs).any()
    return answers


# ---------------------------------------------------------------------------------------------
# the engine over probability tables
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_zero_objects_quantifiers_take_their_empty_set_values(name):
    program, truth = PROGRAMS[name]
    answers = engine_probs([program], [tables_for(0, np.random.default_rng(0), crisp=True)])
    probs = answers.probs()[0, : program.n_candidates].tolist()
    assert probs == brute_force(program, tables_for(0, np.random.default_rng(0), crisp=True), n_objects=0)
    if truth is not None:
        assert probs == [1.0 if truth else 0.0]
        assert answers.predictions() == ["yes" if truth else "no"]


def test_an_empty_scene_batched_beside_full_ones_changes_nothing():
    """Padding: a scene of zero objects in one batch with scenes of 1 and 5 objects gives each
    the answer it gets alone."""
    rng = np.random.default_rng(3)
    scenes = [tables_for(n, rng, crisp=False) for n in (5, 0, 1)]
    programs = [p for p, _ in PROGRAMS.values()]
    together = [engine_probs([p] * 3, scenes).probs() for p in programs]
    for p, batch in zip(programs, together):
        for b, scene in enumerate(scenes):
            alone = engine_probs([p], [scene]).probs()[0]
            assert torch.allclose(batch[b], alone, atol=1e-6), (p.term(), b)


@pytest.mark.parametrize("crisp", [True, False])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_one_object_equals_the_references(name, crisp):
    program, _ = PROGRAMS[name]
    for seed in range(4):
        tables = tables_for(1, np.random.default_rng(seed), crisp)
        got = engine_probs([program], [tables], dtype=torch.float64).probs()[0, : program.n_candidates].tolist()
        want = brute_force(program, tables)  # crisp tables: one world, classical truth
        assert np.allclose(got, want, atol=1e-12), (got, want)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_500_objects_crisp_equal_classical_truth(name):
    """Crisp tables over 500 objects: the brute-force enumerator (vectorized, one world when no
    atom is uncertain) gives classical truth; the engine must give exactly it."""
    program, _ = PROGRAMS[name]
    tables = tables_for(500, np.random.default_rng(5), crisp=True)
    tables[LEFT] *= np.random.default_rng(6).uniform(0, 1, (500, 500)) < 0.01  # sparse: ∀/∄ not trivial
    got = engine_probs([program], [tables]).probs()[0, : program.n_candidates].tolist()
    assert got == brute_force(program, tables)


def test_500_objects_uncertain_match_closed_forms_in_float32():
    """∃/∀/∄ of a unary predicate over 500 uncertain objects: 1 - Π(1 - p), Π p, Π(1 - p),
    computed in float64 here; the engine works in float32 log space and stays finite."""
    p = np.random.default_rng(7).uniform(0.001, 0.999, 500)
    tables = {RED: p, CHAIR: p, LEFT: np.zeros((500, 500))}
    exists, forall, none = (PROGRAMS[k][0] for k in ("∃x red(x)", "∀x red(x)", "∄x red(x)"))
    answers = engine_probs([exists, forall, none], [tables] * 3)
    log_none = np.log1p(-p).sum()
    assert math.isclose(answers.log_probs[1, 0].item(), np.log(p).sum(), rel_tol=1e-5)
    assert math.isclose(answers.log_probs[2, 0].item(), log_none, rel_tol=1e-5)
    assert math.isclose(answers.probs()[0, 0].item(), -math.expm1(log_none), rel_tol=1e-6)
    assert torch.isfinite(answers.log_probs[:, 0]).all()


# ---------------------------------------------------------------------------------------------
# GQA programs over scene graphs, through compiler, golden oracle and engine, against the crisp executor
def graph(objects: dict, image_id: str = "img", **fields):
    return scene_graph_from_record(image_id, {"width": 640, "height": 480, "objects": objects, **fields})


def obj(name, x=10, attributes=(), relations=()):
    return {"name": name, "x": x, "y": 10, "w": 20, "h": 20, "attributes": list(attributes),
            "relations": [{"name": r, "object": o} for r, o in relations]}


def answers_and_crisp(lines, graphs, ontology=None):
    """Engine predictions and crisp answers (None where the crisp answer is undefined)."""
    ontology = ontology or Ontology.gqa()
    questions = [Question(id=f"q{i}", image_id=image_id, semantic_str=line)
                 for i, (image_id, line) in enumerate(lines)]
    run = answer_all(questions, Answerer(SceneGraphPerception({g.image_id: g for g in graphs}, ontology=ontology),
                    compiler=Compiler(ontology), keep_outcomes=True))
    assert run.skips == [], run.skips
    executor, by_id = CrispExecutor(ontology), {g.image_id: g for g in graphs}
    out = []
    for question, outcome in zip(questions, run.outcomes):
        assert all(not math.isnan(p) for p in outcome.answers.values()), outcome.answers
        try:
            crisp = executor.answer(parse_program(question.semantic_str), by_id[question.image_id])
        except UndefinedAnswerError:
            crisp = None
        out.append((question.semantic_str, run.predictions[question.id], crisp))
    return out


def assert_agree(results):
    wrong = [(line, got, want) for line, got, want in results if want is not None and not vocabulary_match(got, want)]
    assert wrong == []


EMPTY_SCENE_LINES = [
    ("select: plate->exist: ? [0]", "no"),
    ("select: cup->exist: ? [0]", "no"),
    ("select: plate->filter color: white [0]->exist: ? [1]", "no"),
    ("select: plate->relate: _,on,s [0]->exist: ? [1]", "no"),
    ("select: plate->verify color: white [0]", "no"),
    ("select: plate->exist: ? [0]->select: cup->exist: ? [2]->or:  [1, 3]", "no"),
    ("select: plate->exist: ? [0]->select: cup->exist: ? [2]->and:  [1, 3]", "no"),
    ("select: scene->query: location [0]", "indoors"),
]


def test_a_scene_with_zero_objects_through_eval():
    empty = graph({}, location="indoors")
    results = answers_and_crisp([("img", line) for line, _ in EMPTY_SCENE_LINES]
                         + [("img", "select: plate->query: color [0]"), ("img", "select: plate->same: color [0]")],
                         [empty])
    assert [got for _, got, _ in results[: len(EMPTY_SCENE_LINES)]] == [want for _, want in EMPTY_SCENE_LINES]
    assert_agree(results)  # the query over nothing is undefined for the crisp executor: only no NaN


def test_a_scene_with_one_object_through_eval():
    one = graph({"1": obj("plate", attributes=["white", "round"])})
    lines = ["select: plate->exist: ? [0]", "select: plate->query: color [0]", "select: plate->verify shape: round [0]",
             "select: plate->relate: _,on,s [0]->exist: ? [1]", "select: plate->same: color [0]",
             "select: plate->choose color: white|black [0]", "select: cup->exist: ? [0]"]
    results = answers_and_crisp([("img", line) for line in lines], [one])
    assert [got for _, got, _ in results] == ["yes", "white", "yes", "no", "yes", "white", "no"]
    assert_agree(results)


def _crowd(n: int, seed: int):
    """A scene graph of ``n`` objects of the embedded vocabulary with random attributes and relations."""
    vocabulary = Vocabulary.default()
    rng = np.random.default_rng(seed)
    classes = [c for c in vocabulary.classes if c in vocabulary.class_types]
    objects = {}
    for i in range(n):
        name = str(rng.choice(classes))
        attributes = [str(rng.choice(vocabulary.attributes[t])) for t in vocabulary.class_types[name]
                      if t in vocabulary.attributes and rng.random() < 0.8]
        relations = [(str(rng.choice(vocabulary.relations[:8])), str(int(j))) for j in rng.choice(n, 2) if j != i]
        objects[str(i)] = obj(name, x=float(rng.uniform(0, 600)), attributes=attributes, relations=relations)
    return graph(objects, image_id="crowd", location="outdoors", weather=str(vocabulary.weathers[0])), vocabulary


@pytest.mark.slow
def test_500_objects_generated_questions_match_the_crisp_answers():
    crowd, vocabulary = _crowd(500, seed=11)
    generated = QuestionGenerator(vocabulary).for_scene(crowd, np.random.default_rng(12), count=30)
    assert len(generated) >= 20
    results = answers_and_crisp([("crowd", q.program.to_semantic_str()) for q in generated], [crowd],
                         ontology=vocabulary.ontology())
    assert all(want is not None for _, _, want in results)
    assert_agree(results)


def test_a_30_step_program():
    """A chain of relates 28 long over a path of four objects (plate on cup on cup on cup), cut at
    every length, and 30 steps in all at full length: each answer equals the crisp executor's."""
    path = graph({str(i): obj("plate" if i == 0 else "cup", x=10 * i, attributes=["white"] if i % 2 else ["red"],
                              relations=[("on", str(i + 1))] if i < 3 else []) for i in range(4)})
    steps = ["select: plate"] + [f"relate: _,on,{'s' if k % 3 else 'o'} [{k}]" for k in range(28)]
    lines = ["->".join(steps[: k + 1] + [f"exist: ? [{k}]"]) for k in range(len(steps))]
    lines.append("->".join(steps[:28] + ["filter color: white [27]", "exist: ? [28]"]))
    assert len(parse_program(lines[-2]).steps) == len(parse_program(lines[-1]).steps) == 30
    results = answers_and_crisp([("img", line) for line in lines], [path])
    assert_agree(results)
    assert {got for _, got, _ in results} == {"yes", "no"}  # the chain empties and refills: both occur


def test_a_category_with_no_members():
    ontology = Ontology.from_data({"furniture": [], "tableware": ["plate", "cup"]}, {"color": ["white", "red"]},
                                  ["on"])
    scene = graph({"1": obj("plate", attributes=["white"]), "2": obj("cup", relations=[("on", "1")])})
    lines = ["select: furniture->exist: ? [0]", "select: tableware->exist: ? [0]",
             "select: cup->relate: furniture,on,o [0]->exist: ? [1]", "select: furniture->verify color: white [0]"]
    results = answers_and_crisp([("img", line) for line in lines], [scene], ontology=ontology)
    assert [got for _, got, _ in results] == ["no", "yes", "no", "no"]
    assert_agree(results)


def test_an_attribute_type_with_one_value():
    ontology = Ontology.from_data({"tableware": ["plate", "cup"]}, {"color": ["white"], "shape": ["round", "square"]},
                                  ["on"])
    scene = graph({"1": obj("plate", attributes=["white"]), "2": obj("cup", attributes=["square"])})
    lines = ["select: plate->query: color [0]", "select: plate->verify color: white [0]",
             "select: cup->verify color: white [0]", "select: cup->query: color [0]",
             "select: plate->select: cup->same color:  [0, 1]"]
    results = answers_and_crisp([("img", line) for line in lines], [scene], ontology=ontology)
    assert [got for _, got, _ in results[:3]] == ["white", "yes", "no"]
    assert results[3][1] == "white"  # the only candidate; the cup has no colour (crisp: undefined)
    assert_agree(results)
