"""`nablafol score` on the neighbouring benchmarks, as a user meets it: the benchmark told from
the file, tables and JSON with the hand-computed figures, slices, and one line + exit status 2
for every broken file."""
import json
from pathlib import Path

import pytest

from nablafol.cli import main

FIX = Path(__file__).resolve().parents[1] / "fixtures"
FILES = {
    "cric": (FIX / "cric" / "val_questions.json", FIX / "cric" / "predictions.json"),
    "aokvqa": (FIX / "aokvqa" / "aokvqa_v1p0_val.json", FIX / "aokvqa" / "predictions_val.json"),
    "vcr": (FIX / "vcr" / "val.jsonl", FIX / "vcr" / "predictions.csv"),
    "gdvcr": (FIX / "gdvcr" / "val.jsonl", FIX / "gdvcr" / "predictions.csv"),
}
# the figures worked out by hand in tests/scoring/test_scoring_{cric,aokvqa,vcr,slices}.py
EXPECTED = {
    "cric": {"answer": 4 / 7, "grounding": 3 / 7, "final": 2 / 7},
    "aokvqa": {"multiple_choice": 3 / 5, "direct_answer": 5 / 12},
    "vcr": {"q2a": 1 / 2, "qa2r": 1 / 2, "q2ar": 1 / 4},
    "gdvcr": {"q2a": 5 / 8, "qa2r": None, "q2ar": None},
}


def run_cli(*args, capsys):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", sorted(FILES))
def test_each_benchmark_scores_from_its_own_files(name, tmp_path, capsys):
    questions, predictions = FILES[name]
    out_json = tmp_path / "scores.json"
    code, out, err = run_cli("score", "--questions", questions, "--predictions", predictions, "--json", out_json,
                             capsys=capsys)
    assert code == 0, err
    scores = json.loads(out_json.read_text())
    assert scores["benchmark"] == ("vcr" if name == "gdvcr" else name)
    assert {k: scores[k] for k in EXPECTED[name]} == pytest.approx(EXPECTED[name])
    first = next(v for v in EXPECTED[name].values() if v is not None)
    assert f"{100 * first:.2f}%" in out


def test_gdvcr_regions_with_the_west_as_reference(tmp_path, capsys):
    questions, predictions = FILES["gdvcr"]
    out_json = tmp_path / "regions.json"
    code, out, err = run_cli("score", "--benchmark", "vcr", "--questions", questions, "--predictions", predictions,
                             "--by", "region", "--reference", "west", "--json", out_json, capsys=capsys)
    assert code == 0, err
    by = json.loads(out_json.read_text())["by"]
    assert by["reference"] == "west"
    assert {k: (v["count"], v["q2a"], v["gap"]["q2a"]) for k, v in by["slices"].items()} == {
        "africa": (1, 1.0, pytest.approx(-1 / 3)), "east-asia": (2, 0.5, pytest.approx(1 / 6)),
        "south-asia": (2, 0.5, pytest.approx(1 / 6)), "west": (3, pytest.approx(2 / 3), 0.0)}
    assert "west (reference)" in out and "+16.67" in out


def test_a_split_scores_the_hard_set_by_accuracy_and_the_easy_set_by_error(tmp_path, capsys):
    """Acc_h and Err_e, as the GQA report: the easy set shows 100% minus each metric."""
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"hard": ["1001", "1003"], "easy": ["1002", "1004", "1005", "1006", "1007"]}))
    questions, predictions = FILES["cric"]
    out_json = tmp_path / "s.json"
    code, out, err = run_cli("score", "--questions", questions, "--predictions", predictions, "--split", split,
                             "--json", out_json, capsys=capsys)
    assert code == 0, err
    scores = json.loads(out_json.read_text())
    assert scores["hard"] == {"count": 2, "answer": 1.0, "grounding": 1.0, "final": 1.0}
    # the other five: 2 of 5 answers right, 1 of 5 grounded, none both
    assert scores["easy"] == {"count": 5, "error": pytest.approx({"answer": 3 / 5, "grounding": 4 / 5, "final": 1.0})}
    easy_row = next(line for line in out.splitlines() if line.startswith("easy"))
    assert easy_row.split() == ["easy", "(Err_e)", "5", "60.00%", "80.00%", "100.00%"]
    assert any(line.split()[:4] == ["hard", "(Acc_h)", "2", "100.00%"] for line in out.splitlines())


def _ids(name):
    from nablafol.data.aokvqa import load_aokvqa
    from nablafol.data.cric import load_cric_questions
    from nablafol.data.vcr import load_vcr
    loader = {"cric": load_cric_questions, "aokvqa": load_aokvqa, "vcr": load_vcr, "gdvcr": load_vcr}[name]
    return list(loader(FILES[name][0]))


@pytest.mark.parametrize("sliced", [False, True])
@pytest.mark.parametrize("name", sorted(FILES))
def test_every_benchmark_shows_the_easy_set_as_err_e_with_or_without_by(name, sliced, tmp_path, capsys):
    """Everything easy: Err_e is one minus each overall metric; everything hard: Acc_h is each."""
    questions, predictions = FILES[name]
    ids = _ids(name)
    by = ("img_fn" if name in ("vcr", "gdvcr") else "image_id") if sliced else None
    for easy, hard in ((ids, []), ([], ids)):
        split = tmp_path / "split.json"
        split.write_text(json.dumps({"easy": easy, "hard": hard}))
        out_json = tmp_path / "s.json"
        code, out, err = run_cli("score", "--questions", questions, "--predictions", predictions, "--split", split,
                                 "--json", out_json, *(("--by", by) if by else ()), capsys=capsys)
        assert code == 0, err
        scores = json.loads(out_json.read_text())
        overall = {k: scores[k] for k in EXPECTED[name]}
        if easy:
            assert scores["easy"]["error"] == pytest.approx({k: None if v is None else 1 - v
                                                             for k, v in overall.items()})
            assert "Err_e" in out
        else:
            assert {k: scores["hard"][k] for k in overall} == pytest.approx(overall)
        assert ("by" in scores) == (by is not None)


def _broken(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("case", [
    "cric questions", "cric predictions", "aokvqa questions", "aokvqa predictions", "vcr questions",
    "vcr predictions", "unknown benchmark", "reference without by", "unknown reference", "split"])
def test_a_broken_input_is_one_line_and_status_2(case, tmp_path, capsys):
    args = {
        "cric questions": ["--questions", _broken(tmp_path, "q.json", '[{"question_id": "1", "image_id": 2}]'),
                           "--predictions", FILES["cric"][1], "--benchmark", "cric"],
        "cric predictions": ["--questions", FILES["cric"][0],
                             "--predictions", _broken(tmp_path, "p.json", '{"1001": {"answer": 3}}')],
        "aokvqa questions": ["--questions", _broken(tmp_path, "a.json", '[{"question_id": "x", "image_id": 1, '
                             '"question": "?", "choices": ["a"], "correct_choice_idx": 2}]'),
                             "--predictions", FILES["aokvqa"][1]],
        "aokvqa predictions": ["--questions", FILES["aokvqa"][0],
                               "--predictions", _broken(tmp_path, "p.json", '["cab"]')],
        "vcr questions": ["--questions", _broken(tmp_path, "v.jsonl", '{"annot_id": "v", "objects": ["person"], '
                          '"question": [[3]], "answer_choices": [["a"]]}\n'), "--predictions", FILES["vcr"][1]],
        "vcr predictions": ["--questions", FILES["vcr"][0],
                            "--predictions", _broken(tmp_path, "p.csv", "annot_id,answer_0\nval-0,x\n")],
        "unknown benchmark": ["--questions", _broken(tmp_path, "q.json", '[{"what": 1}]'),
                              "--predictions", FILES["cric"][1]],
        "reference without by": ["--questions", FILES["vcr"][0], "--predictions", FILES["vcr"][1],
                                 "--reference", "west"],
        "unknown reference": ["--questions", FILES["gdvcr"][0], "--predictions", FILES["gdvcr"][1],
                              "--by", "region", "--reference", "europe"],
        "split": ["--questions", FILES["vcr"][0], "--predictions", FILES["vcr"][1],
                  "--split", _broken(tmp_path, "s.json", '{"easy": [], "hard": ["nope"]}')],
    }[case]
    code, out, err = run_cli("score", *args, capsys=capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("nablafol score: ")
    if case not in ("reference without by", "unknown reference"):
        assert str(tmp_path) in err or "fixtures" in err  # the line names the file


def test_the_benchmark_named_must_fit_the_file(capsys):
    code, out, err = run_cli("score", "--benchmark", "aokvqa", "--questions", FILES["cric"][0], "--predictions",
                             FILES["aokvqa"][1], capsys=capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "val_questions.json" in err


def test_eval_answers_cric_questions_with_the_golden_oracles_and_writes_cric_predictions(tmp_path, capsys):
    """`nablafol eval` tells CRIC's questions from GQA's, compiles CRIC's programs, and writes CRIC's
    predictions (answer and grounding from the final attention), the details beside them."""
    from nablafol.data.cric import load_cric_questions, read_cric_predictions
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "cric"
    out = tmp_path / "predictions.json"
    assert main(["eval", "--questions", str(fixtures / "val_questions.json"), "--scene-graphs",
                 str(fixtures / "scene_graphs.json"), "--knowledge", str(fixtures / "knowledge_graph.json"),
                 "--predictions", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Overall        7  100.00%    100.00%  100.00%" in printed
    predictions = read_cric_predictions(out)
    questions = load_cric_questions(fixtures / "val_questions.json")
    assert set(predictions) == set(questions)
    for qid, question in questions.items():
        assert predictions[qid].answer == question.answer
    assert (tmp_path / "predictions.json.details.jsonl").exists()
    # a GQA file read as CRIC is refused in one line
    assert main(["eval", "--format", "cric", "--questions", str(fixtures.parent / "gqa" / "val_balanced_questions.json"),
                 "--scene-graphs", str(fixtures / "scene_graphs.json"), "--predictions", str(tmp_path / "x.json")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
