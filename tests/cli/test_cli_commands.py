"""The `nablafol` command as a user meets it: outputs, exit statuses, one-line errors."""
import json
import subprocess
from pathlib import Path

import pytest

from nablafol.cli import main

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"
EVERY = FIX / "every_operation"


def run_cli(*args, capsys):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_parse_prints_ast_dfol_and_fol(capsys):
    code, out, _ = run_cli("parse", "select: chair->relate: _,to the left of,s [0]->exist: ? [1]", capsys=capsys)
    assert code == 0
    assert "[1] relate" in out
    assert "DFOL: A_∃(Relate_{to_the_left_of,∃}[Filter_chair[1]])" in out
    assert "FOL:  ∃X ∃Y: to_the_left_of(X, Y) ∧ chair(Y)" in out


def test_parse_error_is_one_line_with_the_column(capsys):
    code, out, err = run_cli("parse", "select: chair->exist: ? [4]", capsys=capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "column" in err and "Traceback" not in err


def test_eval_writes_predictions_details_and_prints_scores(tmp_path, capsys):
    preds, details = tmp_path / "p.json", tmp_path / "d.jsonl"
    code, out, err = run_cli("eval", "--questions", EVERY / "questions.json", "--scene-graphs",
                             EVERY / "sceneGraphs.json", "--predictions", preds, "--details", details,
                             "--knowledge", "sample", capsys=capsys)
    assert code == 0, err
    predictions = json.loads(preds.read_text())
    assert len(predictions) == 39 and {"questionId", "prediction"} == set(predictions[0])
    lines = [json.loads(line) for line in details.read_text().splitlines()]
    assert {"questionId", "prediction", "answers", "grounding", "formula"} <= set(lines[0])
    assert "All      100.00%" in out and "39 questions, 39 answered, 0 skipped" in out


def test_eval_lists_skips_and_strict_fails(tmp_path, capsys):
    preds = tmp_path / "p.json"
    args = ["eval", "--questions", EVERY / "questions.json", "--scene-graphs", EVERY / "sceneGraphs.json",
            "--predictions", preds]
    code, out, _ = run_cli(*args, capsys=capsys)
    assert code == 0 and "skipped 1 questions (counted wrong): 1 unknown concept" in out
    assert "op38: unknown concept" in out
    skipped = json.loads(preds.with_suffix(".skipped.json").read_text())
    assert skipped[0]["questionId"] == "op38"
    code, _, _ = run_cli(*args, "--strict", capsys=capsys)
    assert code == 2


@pytest.mark.parametrize("content,message", [
    (None, "no such file"),
    ("{not json", "JSON"),
    ("[1, 2]", "object"),
])
def test_unusable_questions_file_is_one_line_exit_2(tmp_path, capsys, content, message):
    q = tmp_path / "q.json"
    if content is not None:
        q.write_text(content)
    code, out, err = run_cli("eval", "--questions", q, "--scene-graphs", EVERY / "sceneGraphs.json",
                             "--predictions", tmp_path / "p.json", capsys=capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and str(q) in err and message in err
    assert "Traceback" not in err


def test_unusable_scene_graphs_is_one_line_exit_2(tmp_path, capsys):
    sg = tmp_path / "sg.json"
    sg.write_text(json.dumps({"img": {"width": 10, "height": 10, "objects": {"1": {"name": "cup", "x": 0, "y": 0,
                                                                                     "w": "wide", "h": 2}}}}))
    code, _, err = run_cli("eval", "--questions", EVERY / "questions.json", "--scene-graphs", sg,
                           "--predictions", tmp_path / "p.json", capsys=capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(sg) in err


def test_features_without_model_is_a_usage_error(tmp_path, capsys):
    code, _, err = run_cli("eval", "--questions", EVERY / "questions.json", "--features", FIX / "features",
                           "--predictions", tmp_path / "p.json", capsys=capsys)
    assert code == 2 and "--model" in err


def test_split_then_score(tmp_path, capsys):
    preds, split, scores = tmp_path / "p.json", tmp_path / "split.json", tmp_path / "scores.json"
    base = {qid: ("yes" if i % 3 else "wrong") for i, qid in enumerate(sorted(json.loads((EVERY / "questions.json").read_text())))}
    preds.write_text(json.dumps([{"questionId": k, "prediction": v} for k, v in base.items()]))
    code, out, _ = run_cli("split", "--questions", EVERY / "questions.json", "--predictions", preds, "--out", split,
                           capsys=capsys)
    assert code == 0
    data = json.loads(split.read_text())
    assert len(data["easy"]) + len(data["hard"]) == 39 and data["base"] == str(preds)
    code, out, _ = run_cli("score", "--questions", EVERY / "questions.json", "--predictions", preds, "--split", split,
                           "--json", scores, capsys=capsys)
    assert code == 0 and "Acc_h" in out
    result = json.loads(scores.read_text())
    assert result["hard"]["all"]["accuracy"] == 0.0 and result["easy"]["all"]["error"] == 0.0


def test_console_script_is_installed():
    import shutil
    exe = shutil.which("nablafol")
    assert exe is not None, "the nablafol console script is not on PATH (pip install -e .)"
    out = subprocess.run([exe, "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "parse" in out.stdout and "eval" in out.stdout


@pytest.mark.parametrize("args,message", [
    (["--batch-size", "0"], "at least 1"),
    (["--batch-size", "-3"], "at least 1"),
    (["--threshold", "nan"], "in [0, 1]"),
    (["--threshold", "2"], "in [0, 1]"),
    (["--details-top", "-1"], "0 or more"),
])
def test_eval_refuses_bad_option_values(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as e:
        main(["eval", "--questions", str(EVERY / "questions.json"), "--scene-graphs", str(EVERY / "sceneGraphs.json"),
              "--predictions", str(tmp_path / "p.json")] + args)
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_outputs_that_are_folders_are_refused_before_any_work(tmp_path, capsys):
    code, _, err = run_cli("eval", "--questions", EVERY / "questions.json", "--scene-graphs", EVERY / "sceneGraphs.json",
                           "--predictions", tmp_path, capsys=capsys)
    assert code == 2 and "is a folder" in err
    code, _, err = run_cli("split", "--questions", EVERY / "questions.json", "--predictions", tmp_path / "x.json",
                           "--out", tmp_path, capsys=capsys)
    assert code == 2 and "is a folder" in err and not list(tmp_path.parent.glob(tmp_path.name + ".tmp"))


def test_unavailable_device_is_one_line(tmp_path, capsys):
    code, _, err = run_cli("eval", "--questions", EVERY / "questions.json", "--scene-graphs", EVERY / "sceneGraphs.json",
                           "--predictions", tmp_path / "p.json", "--device", "nosuchdevice", capsys=capsys)
    assert code == 2 and "--device nosuchdevice" in err and len(err.strip().splitlines()) == 1


def test_score_with_a_binary_split_file_is_one_line(tmp_path, capsys):
    split = tmp_path / "split.json"
    split.write_bytes(b"\xff\xfe\x00")
    preds = tmp_path / "p.json"
    preds.write_text("[]")
    code, _, err = run_cli("score", "--questions", EVERY / "questions.json", "--predictions", preds, "--split", split,
                           capsys=capsys)
    assert code == 2 and str(split) in err and "Traceback" not in err


def test_generate_refuses_impossible_scene_sizes(tmp_path, capsys):
    code, _, err = run_cli("generate", "--out", tmp_path / "g", "--objects", "5", "2", capsys=capsys)
    assert code == 2 and "objects per scene" in err


def test_eval_writes_the_official_attentions_file_from_its_details(tmp_path, capsys):
    from nablafol.data import load_scene_graphs, read_details
    from nablafol.data.attentions import read_attentions, scene_graph_regions
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"
    args = ["eval", "--questions", str(fixtures / "val_balanced_questions.json"), "--scene-graphs",
            str(fixtures / "val_sceneGraphs.json"), "--predictions", str(tmp_path / "p.json")]
    assert main(args + ["--attentions", str(tmp_path / "a.json")]) == 2
    assert "--attentions is written from the details" in capsys.readouterr().err
    assert main(args + ["--details", str(tmp_path / "d.jsonl"), "--attentions", str(tmp_path / "a.json")]) == 0
    details = read_details(tmp_path / "d.jsonl")
    attentions = read_attentions(tmp_path / "a.json")
    assert list(attentions) == list(details)  # one entry per answered question, in order
    graphs = load_scene_graphs(fixtures / "val_sceneGraphs.json")
    from nablafol.data import load_questions
    image_of = {q.id: q.image_id for q in load_questions(fixtures / "val_balanced_questions.json").values()}
    for question_id, entry in attentions.items():
        weights = details[question_id].extra["attention"]
        regions = scene_graph_regions(graphs[image_of[question_id]])
        total = sum(weights.values())
        assert len(entry.regions) == len(weights)
        for (x0, y0, x1, y1, a), (object_id, w) in zip(entry.regions, weights.items()):
            assert (x0, y0, x1, y1) == pytest.approx(regions[object_id])
            assert a == pytest.approx(w / total if total else w)


def test_the_installed_command_exits_with_mains_status_and_freezes_what_it_made(monkeypatch):
    # the command's process ends right after: its objects are frozen out of the interpreter's last
    # collection (seconds at GQA scale), and main's exit status is the process's
    import gc

    import nablafol.cli as cli
    monkeypatch.setattr(cli, "main", lambda argv=None: 3)
    gc.unfreeze()
    try:
        with pytest.raises(SystemExit) as exited:
            cli.entry()
        assert exited.value.code == 3 and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
