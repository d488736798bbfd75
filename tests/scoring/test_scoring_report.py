"""A run scored with every metric (score_run), its report rows, and `nablafol score`'s options."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from nablafol.cli import main
from nablafol.data import Details, SceneGraph, SceneObject
from nablafol.data.choices import Choices
from nablafol.scoring import gqa_rows, score_run

GRAPH = SceneGraph("img", 100, 100, (SceneObject("7", {"cup": 1.0}, 0, 0, 50, 100),
                                     SceneObject("8", {"mug": 1.0}, 50, 0, 50, 100)))


@dataclass(frozen=True)
class Question:
    id: str
    answer: str
    types: dict
    annotations: dict
    groups: dict
    entailed: tuple = ()
    image_id: str = "img"
    question: str = "What is it?"
    semantic: tuple = field(default=())


QUESTIONS = [Question("1", "cup", {"structural": "query", "detailed": "categoryRelS"},
                      {"question": {"3": "7"}, "fullAnswer": {}}, {"global": "thing"}),
             Question("2", "yes", {"structural": "verify", "detailed": "exist"},
                      {"question": {"3": "8"}, "fullAnswer": {"1": "8"}}, {"global": None})]


def test_a_run_is_scored_with_every_metric_and_gives_report_rows():
    details = [Details("1", "mug", extra={"attention": {"7": 0.6, "8": 0.2, "scene": 0.0}}),
               Details("2", "yes", extra={"attention": {"7": 0.0, "8": 1.0, "scene": 0.0}})]
    choices = {"1": Choices(("cup", "mug", "bowl"), ("cup", "mug")), "2": Choices(("yes", "no"), ("yes", "no"))}
    result = score_run(QUESTIONS, {"1": "mug", "2": "yes"}, choices=choices, details=details,
                       scene_graphs={"img": GRAPH})
    # question 1: 0.75 of the attention on the cup; question 2: all of it on the mug, annotated twice
    assert result.grounding == (0.75 + 2.0) / 2
    assert (result.validity, result.plausibility) == (1.0, 1.0)
    assert result.distribution == (0 - 1) ** 2 / 1 / 100  # group "thing": gold cup 1, predicted cup 0
    assert gqa_rows(result) == [("Binary", "100.00%"), ("Open", "0.00%"), ("Accuracy", "50.00%"),
                                ("Consistency", "-"), ("Validity", "100.00%"), ("Plausibility", "100.00%"),
                                ("Grounding", "137.50%"), ("Distribution", "0.01 (lower is better)")]


def test_rows_leave_out_metrics_not_asked_for():
    names = [name for name, _ in gqa_rows(score_run(QUESTIONS, {"1": "cup"}))]
    assert names == ["Binary", "Open", "Accuracy", "Consistency", "Distribution"]


def _files(tmp_path):
    questions = {q.id: {"imageId": q.image_id, "question": q.question, "answer": q.answer, "types": q.types,
                        "annotations": q.annotations, "groups": q.groups, "entailed": [], "isBalanced": True,
                        "semanticStr": "select: cup->query: name [0]"} for q in QUESTIONS}
    (tmp_path / "q.json").write_text(json.dumps(questions))
    (tmp_path / "p.json").write_text(json.dumps([{"questionId": "1", "prediction": "cup"}]))
    (tmp_path / "a.json").write_text(json.dumps([{"questionId": "1", "attention": [[0, 0, 0.5, 1, 1.0]]}]))
    return tmp_path / "q.json", tmp_path / "p.json", tmp_path / "a.json"


def test_score_attentions_need_scene_graphs_one_line(tmp_path, capsys):
    questions, predictions, attentions = _files(tmp_path)
    code = main(["score", "--questions", str(questions), "--predictions", str(predictions),
                 "--attentions", str(attentions)])
    err = capsys.readouterr().err
    assert code == 2 and "--scene-graphs" in err and len(err.strip().splitlines()) == 1


def test_score_with_attentions_prints_grounding_and_the_questions_without(tmp_path, capsys):
    questions, predictions, attentions = _files(tmp_path)
    (tmp_path / "sg.json").write_text(json.dumps({"img": GRAPH.to_record()}))
    code = main(["score", "--questions", str(questions), "--predictions", str(predictions), "--attentions",
                 str(attentions), "--scene-graphs", str(tmp_path / "sg.json"), "--exact-match"])
    out = capsys.readouterr().out
    assert code == 0 and "Grounding: 50.00%" in out  # 1 on the cup, 0 for question 2 (no attention)
    assert "questions without attention: 1 (grounding 0)" in out and "Validity" not in out


def test_score_names_a_scene_graphs_file_without_the_image(tmp_path, capsys):
    questions, predictions, attentions = _files(tmp_path)
    (tmp_path / "sg.json").write_text(json.dumps({"other": GRAPH.to_record()}))
    code = main(["score", "--questions", str(questions), "--predictions", str(predictions), "--attentions",
                 str(attentions), "--scene-graphs", str(tmp_path / "sg.json")])
    err = capsys.readouterr().err
    assert code == 2 and "sg.json" in err and "'img'" in err


@pytest.mark.parametrize("kind", ["objects", "spatial"])
def test_attention_kind_must_fit_the_file(tmp_path, capsys, kind):
    questions, predictions, attentions = _files(tmp_path)
    (tmp_path / "sg.json").write_text(json.dumps({"img": GRAPH.to_record()}))
    code = main(["score", "--questions", str(questions), "--predictions", str(predictions), "--attentions",
                 str(attentions), "--attention-kind", kind, "--scene-graphs", str(tmp_path / "sg.json")])
    assert code == (0 if kind == "objects" else 2)
    if kind == "spatial":
        assert "must be square" in capsys.readouterr().err
