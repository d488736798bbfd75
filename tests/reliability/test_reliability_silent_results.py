"""Results that looked like answers but were not: a score of nothing exits 0 at 0.00%, a
`--by` field no record has, a key given twice inside one record (the last won silently).
Each is now an error naming the file and what to do, or the right result."""
from __future__ import annotations

import json
from pathlib import Path

from reliability_helpers import EVERY, assert_one_line_refusal, run_cli

SCORING = Path(__file__).resolve().parents[1] / "fixtures" / "scoring"
QUESTIONS = SCORING / "questions.json"
PREDICTIONS = SCORING / "model_predictions.json"


def _predictions(path: Path, pairs) -> Path:
    path.write_text(json.dumps([{"questionId": q, "prediction": p} for q, p in pairs]), encoding="utf-8")
    return path


# -- nothing matched ------------------------------------------------------------------------------
def test_score_with_predictions_of_no_question_is_an_error(tmp_path, capsys):
    other = _predictions(tmp_path / "other_split.json", [("9001", "red"), ("9002", "yes")])
    line = assert_one_line_refusal(*run_cli(capsys, "score", "--questions", QUESTIONS, "--predictions", other)[::2],
                                   other)
    assert "no prediction is for a question of" in line and "(it holds 2)" in line and "--allow-no-answers" in line
    code, out, _ = run_cli(capsys, "score", "--questions", QUESTIONS, "--predictions", other, "--allow-no-answers")
    assert code == 0 and "missing predictions: 20" in out


def test_score_with_an_empty_predictions_list_is_an_error(tmp_path, capsys):
    empty = _predictions(tmp_path / "empty.json", [])
    assert_one_line_refusal(*run_cli(capsys, "score", "--questions", QUESTIONS, "--predictions", empty)[::2], empty)


def test_score_with_one_matching_prediction_is_scored(tmp_path, capsys):
    one = _predictions(tmp_path / "one.json", [("1001", "red"), ("9002", "yes")])
    code, out, err = run_cli(capsys, "score", "--questions", QUESTIONS, "--predictions", one)
    assert code == 0 and "missing predictions: 19" in out, err


def test_eval_that_answers_nothing_is_an_error(tmp_path, capsys):
    """The scene graphs of another split: every question skipped (no scene), exit 2 after the
    outputs and the skip list are written; --allow-no-answers exits 0."""
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps({f"q{i}": {"imageId": "another_split", "question": "?", "answer": "yes",
                                               "semanticStr": "select: plate (1)->exist: ? [0]"} for i in range(3)}))
    args = ("eval", "--questions", questions, "--scene-graphs", EVERY / "sceneGraphs.json",
            "--predictions", tmp_path / "p.json")
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and "Traceback" not in err
    line = [x for x in err.splitlines() if x.startswith("nablafol eval:")]
    assert len(line) == 1 and "none of the 3 questions was answered" in line[0] and "--allow-no-answers" in line[0]
    assert "3 questions, 0 answered, 3 skipped" in out
    assert json.loads((tmp_path / "p.json").read_text()) == []  # the outputs are still written, and listed why
    assert len(json.loads((tmp_path / "p.skipped.json").read_text())) == 3
    assert run_cli(capsys, *args, "--allow-no-answers")[0] == 0


# -- score --by ----------------------------------------------------------------------------------
def test_score_by_a_field_no_record_has_is_refused(capsys):
    code, _, err = run_cli(capsys, "score", "--questions", QUESTIONS, "--predictions", PREDICTIONS, "--by", "regoin")
    line = assert_one_line_refusal(code, err, "--by regoin")
    assert "no question record has this field" in line


def test_score_by_composes_with_the_gqa_report(tmp_path, capsys):
    """Same report and JSON as without --by, plus the slices; --split's easy set as Err_e;
    --choices read (validity and plausibility are numbers, not '-')."""
    choices = tmp_path / "choices.json"
    questions = json.loads(QUESTIONS.read_text())
    choices.write_text(json.dumps({q: {"valid": [r["answer"], "yes", "no"], "plausible": [r["answer"]]}
                                   for q, r in questions.items()}))
    split = tmp_path / "split.json"
    assert run_cli(capsys, "split", "--questions", QUESTIONS, "--predictions", SCORING / "base_predictions.json",
                   "--out", split)[0] == 0
    common = ("score", "--questions", QUESTIONS, "--predictions", PREDICTIONS, "--split", split, "--choices", choices)
    code, plain_out, err = run_cli(capsys, *common, "--json", tmp_path / "plain.json")
    assert code == 0, err
    code, by_out, err = run_cli(capsys, *common, "--by", "types.structural", "--json", tmp_path / "by.json")
    assert code == 0, err
    plain, by = json.loads((tmp_path / "plain.json").read_text()), json.loads((tmp_path / "by.json").read_text())
    assert {k: v for k, v in by.items() if k != "by"} == plain
    assert plain["gqa"]["validity"] is not None and plain["gqa"]["plausibility"] is not None
    assert "error" in by["easy"]["all"] and "Err_e" in by_out
    assert by_out.startswith(plain_out.rstrip("\n"))  # the whole GQA report, then the slices
    slices = by["by"]["slices"]
    assert by["by"]["field"] == "types.structural" and sum(s["count"] for s in slices.values()) == 20
    assert "by types.structural (gap: reference minus slice, in points)" in by_out


# -- a key given twice inside one record ----------------------------------------------------------
def test_an_object_id_twice_in_one_scene_graph_is_refused(tmp_path, capsys):
    graphs = tmp_path / "sg.json"
    plate = '{"name": "plate", "x": 1, "y": 2, "w": 3, "h": 4, "attributes": [], "relations": []}'
    cat = plate.replace("plate", "cat")
    graphs.write_text('{"kitchen1": {"width": 600, "height": 400, "objects": {"102": ' + plate + ', "102": ' + cat
                      + "}}}")
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps({"q1": {"imageId": "kitchen1", "question": "?", "answer": "yes",
                                            "semanticStr": "select: plate (102)->exist: ? [0]"}}))
    code, _, err = run_cli(capsys, "eval", "--questions", questions, "--scene-graphs", graphs,
                           "--predictions", tmp_path / "p.json")
    line = assert_one_line_refusal(code, err, graphs)
    assert "(record kitchen1)" in line and 'gives "102" twice' in line


def test_an_answer_twice_in_one_question_record_is_refused(tmp_path, capsys):
    questions = tmp_path / "q.json"
    questions.write_text('{"q1": {"imageId": "i", "answer": "yes", "question": "?", "answer": "no"}}')
    predictions = _predictions(tmp_path / "p.json", [("q1", "yes")])
    for command in (("score",), ("split", "--out", tmp_path / "split.json")):
        code, _, err = run_cli(capsys, *command, "--questions", questions, "--predictions", predictions)
        line = assert_one_line_refusal(code, err, questions)
        assert "(record q1)" in line and 'gives "answer" twice' in line


def test_a_prediction_twice_in_one_prediction_record_is_refused(tmp_path, capsys):
    predictions = tmp_path / "p.json"
    predictions.write_text('[{"questionId": "1001", "prediction": "red", "prediction": "blue"}]')
    code, _, err = run_cli(capsys, "score", "--questions", QUESTIONS, "--predictions", predictions)
    line = assert_one_line_refusal(code, err, predictions)
    assert 'the object with "questionId": "1001" gives "prediction" twice' in line
