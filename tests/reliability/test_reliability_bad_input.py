"""Bad input through the command line: every command that reads a file x every way a file can be
bad (wrong types, missing keys, 10**400, NaN/Infinity, nesting 100,000 deep, ids that point
nowhere, an empty file, bytes that are not UTF-8, HDF5 of the wrong shape or type). Each case
ends one of two ways (io-formats.md): the command refuses with exit status 2 and exactly one
stderr line naming the file, or -- for a problem confined to one question -- the question is
skipped, listed with its reason, and the command still succeeds."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

from reliability_helpers import (EVERY, FEATURES, FIX, assert_one_line_refusal, features_copy, run_cli,
                                 write_model_folder)

DEEP = "[" * 100_000 + "]" * 100_000
NOT_UTF8 = b'{"q": "\xff\xfe caf\xe9"}'
HUGE = "1" + "0" * 400                      # 10**400: valid JSON, beyond any float
TOO_LONG = "9" * 5000                       # beyond Python's 4300-digit integer limit
PROGRAM = [{"operation": "select", "dependencies": [], "argument": "plate (102)"},
           {"operation": "exist", "dependencies": [0], "argument": "?"}]


def question(**fields) -> dict:
    return {"imageId": "kitchen1", "question": "is there a plate?", "answer": "yes", "semantic": PROGRAM, **fields}


def questions_text(record) -> str:
    return json.dumps({"q1": record}) if not isinstance(record, str) else record


# ---------------------------------------------------------------------------------------------
# the questions file, through eval (scene graphs), score and split
# (name, file content, expected: "refuse: TEXT" or "skip: REASON")
QUESTION_CASES = [
    ("top level a list", "[1, 2]", "refuse: expected a JSON object"),
    ("record not an object", '{"q1": 7}', "refuse: the question record must be a JSON object"),
    ("imageId a number", questions_text(question(imageId=5)), "refuse: imageId must be a string"),
    ("imageId missing", json.dumps({"q1": {"question": "x", "semantic": PROGRAM}}), "refuse: imageId is missing"),
    ("answer 10**400", questions_text(question()).replace('"yes"', HUGE), "refuse: answer must be a string"),
    ("answer NaN", questions_text(question()).replace('"yes"', "NaN"), "refuse: answer must be a string"),
    ("entailed Infinity", questions_text(question()).replace('"is there', '"x", "entailed": Infinity, "q": "'),
     "refuse: entailed must be a list of strings"),
    ("integer of 5000 digits", '{"q1": {"imageId": "kitchen1", "n": ' + TOO_LONG + "}}", "refuse: a number too long"),
    ("nested 100000 deep", '{"q1": ' + DEEP + "}", "refuse: nested too deeply"),
    ("empty file", "", "refuse: is empty"),
    ("not UTF-8", NOT_UTF8, "refuse: is not UTF-8"),
    ("truncated", questions_text(question())[:-5], "refuse: not valid JSON"),
    # problems confined to one question: skipped, listed, counted wrong
    ("no program", json.dumps({"q1": {"imageId": "kitchen1", "answer": "yes"}}), "skip"),
    ("image with no scene graph", questions_text(question(imageId="nowhere")), "skip"),
    ("dependency pointing nowhere", questions_text(question(semantic=[PROGRAM[0], {**PROGRAM[1], "dependencies": [7]}])),
     "skip"),
    ("dependency 10**400", questions_text(question(semantic=[PROGRAM[0], {**PROGRAM[1], "dependencies": [0]}]))
     .replace('"dependencies": [0]', '"dependencies": [' + HUGE + "]"), "skip"),
    ("dependency NaN", questions_text(question(semantic=[PROGRAM[0], {**PROGRAM[1], "dependencies": [0]}]))
     .replace('"dependencies": [0]', '"dependencies": [NaN]'), "skip"),
    ("semantic steps of the wrong type", questions_text(question(semantic=[1, "two", None])), "skip"),
    ("semanticStr nonsense", json.dumps({"q1": {"imageId": "kitchen1", "semanticStr": "select: ->->[[[ 1e400"}}),
     "skip"),
    ("unknown operation", questions_text(question(semantic=[{"operation": "teleport", "dependencies": [],
                                                             "argument": "x"}])), "skip"),
    # the vocabulary is open (`zorblax` is a name of its own); a knowledge step needs a knowledge base
    ("knowledge step without a knowledge base", questions_text(question(semantic=[
        PROGRAM[0], {"operation": "filter CapableOf", "dependencies": [0], "argument": "lift food"},
        {**PROGRAM[1], "dependencies": [1]}])), "skip"),
]


def _write(path: Path, content) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _check(code, out, err, expected: str, path: Path) -> None:
    if expected.startswith("refuse"):
        line = assert_one_line_refusal(code, err, path)
        assert expected.removeprefix("refuse: ") in line, line
    else:
        assert code == 0 and "Traceback" not in err and "nablafol eval:" not in err, err  # stderr: progress only
        assert "skipped 1 questions (counted wrong)" in out and "q1:" in out, out


@pytest.mark.parametrize("name, content, expected", QUESTION_CASES, ids=[c[0] for c in QUESTION_CASES])
def test_eval_with_a_bad_questions_file(tmp_path, capsys, name, content, expected):
    q = _write(tmp_path / "questions.json", content)
    # its one question skipped answers nothing: an error of its own unless allowed (test_reliability_silent_results)
    code, out, err = run_cli(capsys, "eval", "--questions", q, "--scene-graphs", EVERY / "sceneGraphs.json",
                             "--predictions", tmp_path / "p.json", "--allow-no-answers")
    _check(code, out, err, expected, q)
    if expected == "skip":  # listed with its reason in the skipped file, and --strict refuses
        listed = json.loads((tmp_path / "p.skipped.json").read_text())
        assert [s["questionId"] for s in listed] == ["q1"] and listed[0]["reason"]
        assert run_cli(capsys, "eval", "--questions", q, "--scene-graphs", EVERY / "sceneGraphs.json",
                       "--predictions", tmp_path / "p.json", "--strict")[0] == 2


FILE_LEVEL = [c for c in QUESTION_CASES if c[2] != "skip"]


@pytest.mark.parametrize("command", ["score", "split"])
@pytest.mark.parametrize("name, content, expected", FILE_LEVEL, ids=[c[0] for c in FILE_LEVEL])
def test_score_and_split_with_a_bad_questions_file(tmp_path, capsys, command, name, content, expected):
    q = _write(tmp_path / "questions.json", content)
    p = _write(tmp_path / "p.json", '[{"questionId": "q1", "prediction": "yes"}]')
    out_args = ["--out", tmp_path / "split.json"] if command == "split" else []
    code, out, err = run_cli(capsys, command, "--questions", q, "--predictions", p, *out_args)
    _check(code, out, err, expected, q)


# ---------------------------------------------------------------------------------------------
# the scene graphs file
def graph(**object_fields) -> dict:
    obj = {"name": "plate", "x": 1, "y": 2, "w": 3, "h": 4, "attributes": ["white"], "relations": [], **object_fields}
    return {"kitchen1": {"width": 600, "height": 400, "objects": {"102": obj}}}


def graph_text(**object_fields) -> str:
    return json.dumps(graph(**object_fields))


SCENE_CASES = [
    ("top level a list", "[]", "expected a JSON object"),
    ("objects a list", json.dumps({"kitchen1": {"width": 1, "height": 1, "objects": []}}), "objects must be a JSON object"),
    ("height missing", json.dumps({"kitchen1": {"width": 1, "objects": {}}}), "height is missing"),
    ("object without a name", json.dumps({"kitchen1": {"width": 1, "height": 1, "objects": {"1": {"x": 0}}}}),
     "has neither name nor names"),
    ("x 10**400", graph_text(x=0).replace('"x": 0', '"x": ' + HUGE), "x must be a finite number"),
    ("x NaN", graph_text(x=0).replace('"x": 0', '"x": NaN'), "x must be a finite number"),
    ("w -Infinity", graph_text(w=0).replace('"w": 0', '"w": -Infinity'), "w must be a finite number"),
    ("width 0", json.dumps({"kitchen1": {"width": 0, "height": 1, "objects": {}}}), "width must be > 0"),
    ("attribute p NaN", graph_text(attributes={"white": 0.5}).replace("0.5", "NaN"), "must be a probability"),
    ("names p 2", graph_text(names={"plate": 2}), "must be a probability in [0, 1]"),
    ("relation p Infinity", graph_text(relations=[{"name": "on", "object": "102", "p": 0.5}]).replace("0.5", "Infinity"),
     "must be a probability in [0, 1]"),
    ("relation to a missing object", graph_text(relations=[{"name": "on", "object": "999"}]),
     "points to object 999"),
    ("relation without object", graph_text(relations=[{"name": "on"}]), "relations[0].object is missing"),
    ("nested 100000 deep", '{"kitchen1": ' + DEEP + "}", "nested too deeply"),
    ("integer of 5000 digits", graph_text(x=0).replace('"x": 0', '"x": ' + TOO_LONG), "a number too long"),
    ("empty file", "", "is empty"),
    ("not UTF-8", NOT_UTF8, "is not UTF-8"),
    ("image given twice", '{"kitchen1": ' + json.dumps(graph()["kitchen1"]) + ', "kitchen1": '
     + json.dumps(graph()["kitchen1"]) + "}", "appears twice"),
]


@pytest.mark.parametrize("name, content, problem", SCENE_CASES, ids=[c[0] for c in SCENE_CASES])
def test_eval_with_a_bad_scene_graphs_file(tmp_path, capsys, name, content, problem):
    sg = _write(tmp_path / "sceneGraphs.json", content)
    code, _, err = run_cli(capsys, "eval", "--questions", EVERY / "questions.json", "--scene-graphs", sg,
                           "--predictions", tmp_path / "p.json")
    assert problem in assert_one_line_refusal(code, err, sg)
    assert not (tmp_path / "p.json").exists()


# ---------------------------------------------------------------------------------------------
# the predictions file (score, split) and the split file (score --split)
PREDICTION_CASES = [
    ("an object, not a list", '{"op00": "yes"}', "expected a JSON list"),
    ("entry a string", '["op00"]', "a prediction must be a JSON object"),
    ("prediction missing", '[{"questionId": "op00"}]', "prediction is missing"),
    ("prediction a number", '[{"questionId": "op00", "prediction": 3}]', "prediction must be a string"),
    ("prediction 10**400", '[{"questionId": "op00", "prediction": ' + HUGE + "}]", "prediction must be a string"),
    ("prediction NaN", '[{"questionId": "op00", "prediction": NaN}]', "prediction must be a string"),
    ("questionId Infinity", '[{"questionId": Infinity, "prediction": "yes"}]', "questionId must be a string"),
    ("integer of 5000 digits", "[" + TOO_LONG + "]", "a number too long"),
    ("nested 100000 deep", DEEP, "nested too deeply"),
    ("question given twice", '[{"questionId": "op00", "prediction": "a"}, {"questionId": "op00", "prediction": "b"}]',
     "has two predictions"),
    ("empty file", "", "is empty, expected a JSON list"),
    ("not UTF-8", NOT_UTF8, "is not UTF-8"),
]


@pytest.mark.parametrize("command", ["score", "split"])
@pytest.mark.parametrize("name, content, problem", PREDICTION_CASES, ids=[c[0] for c in PREDICTION_CASES])
def test_score_and_split_with_a_bad_predictions_file(tmp_path, capsys, command, name, content, problem):
    p = _write(tmp_path / "predictions.json", content)
    out_args = ["--out", tmp_path / "split.json"] if command == "split" else []
    code, _, err = run_cli(capsys, command, "--questions", EVERY / "questions.json", "--predictions", p, *out_args)
    assert problem in assert_one_line_refusal(code, err, p)


def test_predictions_for_questions_that_do_not_exist_are_listed(tmp_path, capsys):
    """An id pointing nowhere is not an error (a submission may cover a larger set) but is never silent."""
    p = _write(tmp_path / "predictions.json", '[{"questionId": "nowhere", "prediction": "yes"}, '
                                              '{"questionId": "op00", "prediction": "fork"}]')
    code, out, err = run_cli(capsys, "score", "--questions", EVERY / "questions.json", "--predictions", p)
    assert code == 0 and err == ""
    assert "predictions for questions outside the set: 1 (ignored), e.g. 'nowhere'" in out


def test_entailed_ids_outside_the_set_are_ignored_as_gqa_does(tmp_path, capsys):
    """GQA's balanced sets entail questions of the full set that they do not hold; GQA's eval.py
    skips those ids when it measures consistency, and so does score."""
    records = json.loads((EVERY / "questions.json").read_text())
    records["op06"]["entailed"] = ["nowhere"]
    q = _write(tmp_path / "questions.json", json.dumps(records))
    p = _write(tmp_path / "p.json", json.dumps([{"questionId": k, "prediction": r["answer"]} for k, r in records.items()]))
    code, out, err = run_cli(capsys, "score", "--questions", q, "--predictions", p)
    assert code == 0 and "All      100.00%" in out, (out, err)


QUESTION_IDS = sorted(json.loads((EVERY / "questions.json").read_text()))
SPLIT_CASES = [
    ("a list", "[]", "expected a split"),
    ("hard missing", json.dumps({"easy": QUESTION_IDS}), "hard"),
    ("easy a string", json.dumps({"easy": "op00", "hard": QUESTION_IDS[1:]}), "easy"),
    ("ids 10**400", '{"easy": [' + HUGE + '], "hard": []}', "easy"),
    ("ids NaN", '{"easy": [NaN], "hard": []}', "easy"),
    ("an id null (found by fuzzing)", json.dumps({"easy": QUESTION_IDS, "hard": [], "base_missing": ["x", None, 0]}),
     "base_missing"),
    ("an id pointing nowhere", json.dumps({"easy": ["nowhere"], "hard": QUESTION_IDS}), "nowhere"),
    ("a question in neither list", json.dumps({"easy": QUESTION_IDS[1:], "hard": []}), QUESTION_IDS[0]),
    ("a question in both lists", json.dumps({"easy": QUESTION_IDS, "hard": QUESTION_IDS[:1]}), QUESTION_IDS[0]),
    ("nested 100000 deep", '{"easy": ' + DEEP + "}", "nested too deeply"),
    ("empty file", "", "is empty, expected a split"),
    ("not UTF-8", NOT_UTF8, "is not UTF-8"),
]


@pytest.mark.parametrize("name, content, problem", SPLIT_CASES, ids=[c[0] for c in SPLIT_CASES])
def test_score_with_a_bad_split_file(tmp_path, capsys, name, content, problem):
    s = _write(tmp_path / "split.json", content)
    p = _write(tmp_path / "p.json", json.dumps([{"questionId": q, "prediction": "yes"} for q in QUESTION_IDS]))
    code, _, err = run_cli(capsys, "score", "--questions", EVERY / "questions.json", "--predictions", p,
                           "--split", s)
    assert problem in assert_one_line_refusal(code, err, s)


# ---------------------------------------------------------------------------------------------
# parse: the program is the command line itself
PARSE_CASES = [
    ("empty", ""),
    ("unknown operation", "teleport: chair"),
    ("dependency pointing nowhere", "select: chair->exist: ? [5]"),
    ("dependency 10**400", "select: chair->exist: ? [" + HUGE + "]"),
    ("a NUL byte", "select: ch\x00air->exist: ? [0]"),
    ("brackets 100000 deep", "select: chair" + "[" * 100_000),
    ("a step on itself", "select: chair->exist: ? [1]"),
]


@pytest.mark.parametrize("name, program", PARSE_CASES, ids=[c[0] for c in PARSE_CASES])
def test_parse_refuses_a_bad_program_in_one_line(capsys, name, program):
    code, out, err = run_cli(capsys, "parse", program)
    assert_one_line_refusal(code, err, "nablafol parse:")
    assert out == ""


# ---------------------------------------------------------------------------------------------
# eval --features --model: the feature index, the HDF5 files, the model folder
@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return write_model_folder(tmp_path_factory.mktemp("model"))


def _edit_info(folder: Path, image: str = "2354786", **fields) -> Path:
    path = folder / "gqa_objects_info.json"
    info = json.loads(path.read_text())
    info[image].update(fields)
    path.write_text(json.dumps(info))
    return path


def _rewrite_h5(folder: Path, **datasets) -> Path:
    path = folder / "gqa_objects_0.h5"
    with h5py.File(path, "r") as handle:
        current = {name: handle[name][()] for name in handle}
    current.update(datasets)
    with h5py.File(path, "w") as handle:
        for name, data in current.items():
            if data is not None:
                handle.create_dataset(name, data=data)
    return path


def _break_features(folder: Path, how: str) -> Path:
    info = folder / "gqa_objects_info.json"
    if how == "index idx a string":
        return _edit_info(folder, idx="1")
    if how == "index objectsNum missing":
        text = json.loads(info.read_text())
        del text["2354786"]["objectsNum"]
        info.write_text(json.dumps(text))
        return info
    if how == "index idx 10**400":
        _edit_info(folder, idx=123456789)
        info.write_text(info.read_text().replace("123456789", HUGE))
        return info
    if how == "index width NaN":
        _edit_info(folder, width=123456789)
        info.write_text(info.read_text().replace("123456789", "NaN"))
        return info
    if how == "index file pointing nowhere":
        _edit_info(folder, file=7)
        return folder / "gqa_objects_7.h5"
    if how == "index idx past the end":
        return _edit_info(folder, idx=99)
    if how == "index nested 100000 deep":
        info.write_text('{"2354786": ' + DEEP + "}")
        return info
    if how == "index empty":
        info.write_text("")
        return info
    if how == "index not UTF-8":
        info.write_bytes(NOT_UTF8)
        return info
    with h5py.File(folder / "gqa_objects_0.h5", "r") as handle:
        features, boxes = handle["features"][()], handle["bboxes"][()]
    if how == "h5 features of the wrong width":  # whichever file is opened second is the odd one
        _rewrite_h5(folder, features=features[:, :, :5])
        return folder
    if how == "h5 features 2-d":
        return _rewrite_h5(folder, features=features[:, 0, :])
    if how == "h5 features as strings":
        return _rewrite_h5(folder, features=np.full(features.shape[:2], b"x", dtype="S1"))
    if how == "h5 bboxes missing":
        return _rewrite_h5(folder, bboxes=None)
    if how == "h5 bboxes of 3 numbers":
        return _rewrite_h5(folder, bboxes=boxes[:, :, :3])
    if how == "h5 features NaN":
        features[1, 0, 0] = np.nan
        return _rewrite_h5(folder, features=features)
    if how == "h5 features 1e300 (infinite as float32)":
        wide = features.astype(np.float64)
        wide[1, 0, 0] = 1e300
        return _rewrite_h5(folder, features=wide)
    if how == "h5 not HDF5":
        path = folder / "gqa_objects_0.h5"
        path.write_text("not hdf5")
        return path
    raise AssertionError(how)


FEATURE_CASES = ["index idx a string", "index objectsNum missing", "index idx 10**400", "index width NaN",
                 "index file pointing nowhere", "index idx past the end", "index nested 100000 deep", "index empty",
                 "index not UTF-8", "h5 features of the wrong width", "h5 features 2-d", "h5 features as strings",
                 "h5 bboxes missing", "h5 bboxes of 3 numbers", "h5 features NaN",
                 "h5 features 1e300 (infinite as float32)", "h5 not HDF5"]


@pytest.mark.parametrize("how", FEATURE_CASES)
def test_eval_with_bad_features(tmp_path, capsys, model, how):
    folder = features_copy(tmp_path)
    broken = _break_features(folder, how)
    code, _, err = run_cli(capsys, "eval", "--questions", FIX / "val_balanced_questions.json", "--features", folder,
                           "--model", model, "--predictions", tmp_path / "p.json")
    assert_one_line_refusal(code, err, broken)
    assert not (tmp_path / "p.json").exists()


def _break_model(folder: Path, how: str) -> Path:
    config = folder / "config.json"
    data = json.loads(config.read_text())
    if how == "config empty":
        config.write_text("")
    elif how == "config not UTF-8":
        config.write_bytes(NOT_UTF8)
    elif how == "config nested 100000 deep":
        config.write_text('{"model": ' + DEEP + "}")
    elif how == "hidden_dim 10**400":
        config.write_text(json.dumps({**data, "model": {**data["model"], "hidden_dim": 7}})
                          .replace('"hidden_dim": 7', '"hidden_dim": ' + HUGE))
    elif how == "hidden_dim NaN":
        config.write_text(json.dumps({**data, "model": {**data["model"], "hidden_dim": 7}})
                          .replace('"hidden_dim": 7', '"hidden_dim": NaN'))
    elif how == "ontology a list":
        config.write_text(json.dumps({**data, "extra": {**data["extra"], "ontology": [1, 2]}}))
    elif how == "ontology with an unknown key":
        config.write_text(json.dumps({**data, "extra": {**data["extra"],
                                                        "ontology": {**data["extra"]["ontology"], "colour": 1}}}))
    elif how == "ontology categories a number":
        ontology = dict(data["extra"]["ontology"])
        first = next(iter(ontology))
        config.write_text(json.dumps({**data, "extra": {**data["extra"], "ontology": {**ontology, first: 3}}}))
    else:
        raise AssertionError(how)
    return config


MODEL_CASES = ["config empty", "config not UTF-8", "config nested 100000 deep", "hidden_dim 10**400",
               "hidden_dim NaN", "ontology a list", "ontology with an unknown key", "ontology categories a number"]


@pytest.mark.parametrize("how", MODEL_CASES)
def test_eval_with_a_bad_model_config(tmp_path, capsys, model, how):
    folder = tmp_path / "model"
    shutil.copytree(model, folder)
    broken = _break_model(folder, how)
    code, _, err = run_cli(capsys, "eval", "--questions", FIX / "val_balanced_questions.json", "--features", FEATURES,
                           "--model", folder, "--predictions", tmp_path / "p.json")
    line = assert_one_line_refusal(code, err, broken)
    assert len(line) < 400, line  # a size of 10**400 is described, not printed


def test_features_narrower_than_the_model_in_every_file(tmp_path, capsys, model):
    """All files agree with each other but not with the model: refused in one line naming the first
    file read (the feature store is told the model's width)."""
    folder = features_copy(tmp_path)
    for number in (0, 1):
        path = folder / f"gqa_objects_{number}.h5"
        with h5py.File(path, "r") as handle:
            features, boxes = handle["features"][()], handle["bboxes"][()]
        with h5py.File(path, "w") as handle:
            handle.create_dataset("features", data=features[:, :, :5])
            handle.create_dataset("bboxes", data=boxes)
    code, _, err = run_cli(capsys, "eval", "--questions", FIX / "val_balanced_questions.json", "--features", folder,
                           "--model", model, "--predictions", tmp_path / "p.json")
    line = assert_one_line_refusal(code, err, folder / "gqa_objects_")
    assert "features are 5 numbers wide, the model reads 16" in line


CALIBRATOR_CASES = {
    "calibrator.json empty": "",
    "calibrator.json nested 100000 deep": '{"tokens": ' + DEEP + "}",
    "embedding_dim 10**400": '{"tokens": ["name:plate"], "embedding_dim": ' + HUGE + ', "hidden_dim": 8}',
    "hidden_dim NaN": '{"tokens": ["name:plate"], "embedding_dim": 8, "hidden_dim": NaN}',
    "tokens a number": '{"tokens": 3, "embedding_dim": 8, "hidden_dim": 8}',
    "sizes that do not fit the tensors": '{"tokens": ["name:plate", "rel:on"], "embedding_dim": 9, "hidden_dim": 8}',
}


@pytest.mark.parametrize("how", list(CALIBRATOR_CASES))
def test_eval_with_a_bad_calibrator_config(tmp_path, capsys, how):
    folder = write_model_folder(tmp_path / "model", calibrator=True)
    broken = _write(folder / "calibrator.json", CALIBRATOR_CASES[how])
    code, _, err = run_cli(capsys, "eval", "--questions", FIX / "val_balanced_questions.json", "--features", FEATURES,
                           "--model", folder, "--predictions", tmp_path / "p.json")
    assert len(assert_one_line_refusal(code, err, broken)) < 400
