"""What a user keeps in a folder stays theirs (a questions folder; the model folder's `.tmp`
files and `metrics.jsonl`: tests/cli/test_cli_commands.py), and one vocabulary of flags across
the commands, the old spellings still working with a one-line note."""
from __future__ import annotations

import json
import shutil

import pytest

from reliability_helpers import EVERY, assert_one_line_refusal, run_cli

def test_parser_train_refuses_to_write_into_its_questions_folder(tmp_path, capsys):
    questions = tmp_path / "questions"
    questions.mkdir()
    shutil.copy(EVERY / "questions.json", questions / "train.json")
    for out in (questions, questions / "parser"):
        code, _, err = run_cli(capsys, "parser", "train", "--questions", questions, "--out", out)
        line = assert_one_line_refusal(code, err, f"--out {out}")
        assert "--questions" in line and "give another --out" in line
    val = tmp_path / "val.json"
    shutil.copy(EVERY / "questions.json", val)
    code, _, err = run_cli(capsys, "parser", "train", "--questions", questions, "--val", val, "--out", val)
    assert "--val" in assert_one_line_refusal(code, err, f"--out {val}")
    assert sorted(p.name for p in questions.iterdir()) == ["train.json"]


# -- one vocabulary of flags ----------------------------------------------------------------------
@pytest.mark.parametrize("argv, dest, value", [
    (["answer", "q?", "--parser", "P", "--image", "1", "--scene-graph", "SG"], "scene_graphs", "SG"),
    (["eval", "--questions", "Q", "--scene-graphs", "SG", "--predictions", "O", "--exact"], "exact_match", True),
    (["score", "--questions", "Q", "--predictions", "P", "--exact"], "exact_match", True),
    (["split", "--questions", "Q", "--predictions", "P", "--out", "S", "--exact"], "exact_match", True),
])
def test_an_old_spelling_sets_the_new_option_with_a_one_line_note(capsys, argv, dest, value):
    from nablafol.cli import build_parser
    args = build_parser().parse_args(argv)
    assert getattr(args, dest) == value
    note = capsys.readouterr().err.strip().splitlines()
    assert len(note) == 1 and "is now spelled" in note[0] and "(the old spelling still works)" in note[0]
    new = build_parser().parse_args([{"--scene-graph": "--scene-graphs", "--exact": "--exact-match"}.get(a, a)
                                     for a in argv])
    assert getattr(new, dest) == value and capsys.readouterr().err == ""


def test_the_help_shows_one_vocabulary(capsys):
    from nablafol.cli import build_parser
    for command in ("eval", "score", "split", "answer"):
        with pytest.raises(SystemExit):
            build_parser().parse_args([command, "--help"])
        shown = capsys.readouterr().out
        assert "--exact " not in shown and "--exact]" not in shown and "--scene-graph " not in shown
        assert ("--scene-graphs" if command == "answer" else "--exact-match") in shown


def test_score_exact_and_exact_match_score_alike(tmp_path, capsys):
    predictions = tmp_path / "p.json"
    predictions.write_text(json.dumps([{"questionId": "op00", "prediction": "Fork"}]))
    runs = [run_cli(capsys, "score", "--questions", EVERY / "questions.json", "--predictions", predictions, flag)
            for flag in ("--exact", "--exact-match")]
    assert runs[0][0] == runs[1][0] == 0 and runs[0][1] == runs[1][1]
    assert "is now spelled --exact-match" in runs[0][2] and runs[1][2] == ""
