"""CRIC's metric on the hand-made fixture, checked against numbers worked out by hand, and
the golden oracles answering the fixture through the CRIC compiler and the engine."""
from fractions import Fraction
from pathlib import Path

import pytest
import torch

from nablafol.compiler.cric import CricCompiler
from nablafol.data.cric import (CricPrediction, load_cric_questions, load_cric_scene_graphs, prediction_from_attentions,
                                read_cric_predictions)
from nablafol.engine import Engine
from nablafol.graph_oracles import KnowledgeBase
from nablafol.pipeline.perception import SceneGraphPerception
from nablafol.scoring.benchmarks import score_benchmark
from nablafol.scoring.cric import CricScore, iou
from nablafol.scoring import ScoringError

CRIC = Path(__file__).resolve().parents[1] / "fixtures" / "cric"
QUESTIONS = load_cric_questions(CRIC / "val_questions.json")

# By hand, from predictions.json (question: answer right?, grounding right?):
#   1001 fork=fork, 1058498 in target                 -> yes, yes   (Recognize)
#   1002 silver=silver, fork is not the knife          -> yes, no    (Recognize)
#   1003 yes=yes, fork in target                       -> yes, yes   (Verify)
#   1004 no=no, but points at the plate (a "no" asks for no object) -> yes, no (Verify)
#   1005 no != yes, points at nothing but the dog is the target      -> no, no  (Verify)
#   1006 fork != knife, the knife is right             -> no, yes    (Recognize)
#   1007 no prediction                                 -> no, no     (Recognize)
EXPECTED = {
    "Verify": {"answer": Fraction(2, 3), "grounding": Fraction(1, 3), "final": Fraction(1, 3)},
    "Recognize": {"answer": Fraction(2, 4), "grounding": Fraction(2, 4), "final": Fraction(1, 4)},
    "Overall": {"answer": Fraction(4, 7), "grounding": Fraction(3, 7), "final": Fraction(2, 7)},
}
# Modules: 1001 finds every step's output exactly (IoU 1 for its six steps); 1002 finds
# Initial exactly (1), {knife, fork} for Find KG's {knife} (1/2) and {fork} for Find
# Hyponym's {knife} (0), and gives no Recognition. Means per function:
EXPECTED_MODULES = {"Find": 1.0, "Find Hyponym": 0.5, "Find KG": 0.75, "Initial": 1.0, "Recognition": 1.0,
                    "Relate Reverse": 1.0}


def test_the_fixture_scores_as_computed_by_hand():
    metric = CricScore()
    metric.update(QUESTIONS.values(), read_cric_predictions(CRIC / "predictions.json"))
    result = metric.compute()
    assert result.table() == {g: {k: float(v) for k, v in parts.items()} for g, parts in EXPECTED.items()}
    assert result.module_iou() == EXPECTED_MODULES
    assert result.module_count == {"Initial": 2, "Find": 1, "Relate Reverse": 1, "Find KG": 2, "Find Hyponym": 2,
                                   "Recognition": 1}
    assert result.missing == ("1007",) and result.count == 7 and result.counts["Verify"] == 3


def test_the_benchmark_report_carries_the_tables():
    report = score_benchmark("cric", CRIC / "val_questions.json", CRIC / "predictions.json")
    out = report.to_json()
    assert out["answer"] == pytest.approx(4 / 7) and out["final"] == pytest.approx(2 / 7)
    assert out["groups"]["Verify"] == {"count": 3, "answer": pytest.approx(2 / 3), "grounding": pytest.approx(1 / 3),
                                       "final": pytest.approx(1 / 3)}
    assert out["modules"]["Find KG"] == {"steps": 2, "iou": 0.75}
    table = report.format_table()
    assert "57.14%" in table and "28.57%" in table and "(1 without a prediction, counted wrong)" in table


def test_shards_merge_to_the_whole():
    predictions = read_cric_predictions(CRIC / "predictions.json")
    ids = list(QUESTIONS)
    whole, a, b = CricScore(), CricScore(), CricScore()
    whole.update(QUESTIONS.values(), predictions)
    a.update([QUESTIONS[i] for i in ids[:3]], predictions)
    b.update([QUESTIONS[i] for i in ids[3:]], predictions)
    assert a.merge(b).compute() == whole.compute()
    with pytest.raises(ScoringError, match="both counted question"):
        a.merge(b)


def test_a_question_counted_twice_or_without_an_answer_is_refused():
    metric = CricScore()
    metric.update([QUESTIONS["1001"]], {})
    with pytest.raises(ScoringError, match="already counted"):
        metric.update([QUESTIONS["1001"]], {})
    from dataclasses import replace
    with pytest.raises(ScoringError, match="no answer"):
        CricScore().update([replace(QUESTIONS["1002"], answer=None)], {})
    with pytest.raises(ScoringError, match="modules has 2 steps, the program 6"):
        CricScore().update([QUESTIONS["1001"]], {"1001": CricPrediction("fork", None, ((), ()))})


def test_iou_of_object_sets():
    assert iou(["1", "2", "3"], ["2", "3", "4", "5"]) == Fraction(2, 5)
    assert iou([], ["1"]) == 0 and iou([], []) == 1


def _answer_with_the_golden_oracles(questions):
    """What `nablafol eval --format cric` does with scene graphs: compile each question,
    answer it and its module steps with the engine over the golden scene-graph and knowledge
    oracles, and read the grounding and module objects off the attentions."""
    knowledge = KnowledgeBase.load(CRIC / "knowledge_graph.json")
    perception = SceneGraphPerception(load_cric_scene_graphs(CRIC / "scene_graphs.json"), knowledge=knowledge)
    compiler = CricCompiler(knowledge_relations=knowledge.relations)
    predictions = {}
    for q in questions:
        compiled = compiler.compile_json(list(q.program_source().value))
        steps = compiled.step_programs()
        oracle = perception.oracle([q.image_id])
        programs = [compiled.program] + [p for _, p in steps]
        with torch.no_grad():
            answers = Engine()(programs, oracle, torch.zeros(len(programs), dtype=torch.long))
        ids = oracle.object_ids(0)
        attention = [dict(zip(ids, row.tolist())) for row in answers.focus.exp()]
        modules = {index: attention[k] for k, (index, _) in enumerate(steps, start=1)}
        predictions[q.id] = prediction_from_attentions(answers.predictions()[0], attention[0], modules, len(q.program))
    return predictions


def test_the_golden_oracles_answer_and_ground_every_question():
    predictions = _answer_with_the_golden_oracles(QUESTIONS.values())
    assert {q: p.answer for q, p in predictions.items()} == {q.id: q.answer for q in QUESTIONS.values()}
    metric = CricScore()
    metric.update(QUESTIONS.values(), predictions)
    result = metric.compute()
    assert all(v == 1.0 for parts in result.table().values() for v in parts.values())
    # every object step finds exactly its ground-truth output
    assert set(result.module_iou().values()) == {1.0}
    assert set(result.module_iou()) == {"Initial", "Find", "Relate Reverse", "Find KG", "Find Hyponym", "And",
                                        "Find KG Reverse"}
