"""`nablafol score --exact` gives every number of GQA's evaluation script (issue 24).

The reference below is written here from the script's published definitions (``eval.py``,
distributed with GQA; ``docs/scoring.md`` quotes each formula), on plain JSON, sharing no code
with ``nablafol.scoring``. It keeps the two documented places where nablafol goes on where the
script stops: a missing prediction is wrong (the script refuses the file) and an entailed id
outside the file is ignored (the script fails on it); and it reads object-based attention
boxes from the entry (the script's object-based branch names an undefined variable).

The fixture: the embedded dataset's validation split, with every 7th question marked
unbalanced, two entailed ids pointing outside the file, and a predictions file with right,
wrong (another valid answer, a plural of an attribute value, another case) and missing answers;
its choices file; attentions, object-based and spatial, for most questions.
"""
from __future__ import annotations

import dataclasses
import json
import random
from collections import defaultdict
from pathlib import Path

import pytest

from nablafol.cli import main
from nablafol.data import load_questions, load_scene_graphs, write_questions
from nablafol.data.questions import encode_extra
from nablafol.synthetic import generate_dataset

TOLERANCE = 1e-9


# --------------------------------------------------------------------------- the fixture

@pytest.fixture(scope="module")
def fixture(tmp_path_factory):
    folder = tmp_path_factory.mktemp("official")
    generate_dataset(folder / "data", n_train=0, n_val=40, n_testdev=0, seed=11, feature_dim=2)
    rng = random.Random(24)
    questions = list(load_questions(folder / "data" / "val_balanced_questions.json").values())
    marked = []
    for index, question in enumerate(questions):
        changes = {}
        if index % 7 == 3:
            changes["is_balanced"] = False
        if index in (5, 40):  # an entailed question that is not in the file
            changes["entailed"] = (*question.entailed, "99999999")
        marked.append(dataclasses.replace(question, **changes) if changes else question)
    write_questions(folder / "questions.json", marked)
    choices = json.loads((folder / "data" / "val_choices.json").read_text())
    predictions = []
    for question in marked:
        roll = rng.random()
        if roll < 0.12:
            continue  # missing
        if roll < 0.55:
            answer = question.answer
        elif roll < 0.75:
            answer = rng.choice(choices[question.id]["valid"])  # maybe right, maybe wrong
        elif roll < 0.85:
            answer = question.answer + "s"  # reds, lefts, yess: wrong
        else:
            answer = question.answer.upper()
        predictions.append({"questionId": question.id, "prediction": answer})
    (folder / "predictions.json").write_text(json.dumps(predictions))
    graphs = load_scene_graphs(folder / "data" / "val_sceneGraphs.json")
    object_entries, spatial_entries = [], []
    for question in marked:
        if rng.random() < 0.1:
            continue  # no attention for this question
        graph = graphs[question.image_id]
        weights = [rng.random() ** 3 for _ in graph.objects]
        total = sum(weights) or 1.0
        object_entries.append({"questionId": question.id, "attention": [
            [o.x / graph.width, o.y / graph.height, (o.x + o.w) / graph.width, (o.y + o.h) / graph.height, w / total]
            for o, w in zip(graph.objects, weights)]})
        grid = [[rng.random() for _ in range(7)] for _ in range(7)]
        spatial_entries.append({"questionId": question.id, "attention": grid})
    (folder / "objects.json").write_text(json.dumps(object_entries))
    (folder / "spatial.json").write_text(json.dumps(spatial_entries))
    return folder


# --------------------------------------------------------------------------- the reference

def _mean(values):
    return float(sum(values)) / len(values) if values else 0


def _steps(question):
    return len([c for c in question["semantic"]
                if not any(o in "{}: {}".format(c["operation"], c["argument"]) for o in ["exist", "query: name",
                                                                                          "choose name"])])


def _belongs(element, group, question):
    if "Common" in question["types"]["detailed"]:
        group = ["color", "material", "shape"]
    return element in group


def _overlap(r1, r2):
    low, high = max(r1[0], r2[0]), min(r1[1], r2[1])
    return float(high - low) if high > low else 0


def _rate(cell, region):
    size = float(cell[2] - cell[0]) * float(cell[3] - cell[1])
    inside = _overlap((cell[0], cell[2]), (region[0], region[2])) * _overlap((cell[1], cell[3]), (region[1], region[3]))
    return float(inside) / size


def _grounding(question, scene, attention, spatial):
    def region(object_id):
        obj = scene["objects"][object_id]
        return (float(obj["x"]) / scene["width"], float(obj["y"]) / scene["height"],
                float(obj["x"] + obj["w"]) / scene["width"], float(obj["y"] + obj["h"]) / scene["height"])
    regions = [region(p) for p in question["annotations"]["question"].values()]
    regions += [region(p) for p in question["annotations"]["fullAnswer"].values()]
    if any(("scene" in c) for c in question["semantic"]):
        regions.append((0, 0, 1, 1))
    if spatial:
        size = len(attention)
        edge = float(1) / size
        cells = [((edge * i, edge * j, edge * (i + 1), edge * (j + 1)), attention[i][j])
                 for i in range(size) for j in range(size)]
    else:
        cells = [((x0, y0, x1, y1), a) for x0, y0, x1, y1, a in attention]
    return sum(a * _rate(cell, r) for r in regions for cell, a in cells)


def _chi_square(gold, predicted):
    total_score, total = 0, 0
    for group in gold:
        score, overall = 0, 0
        for answer in gold[group]:
            e = gold[group][answer]
            o = predicted[group].get(answer, 0)
            score += float(o - e) ** 2 / e
            overall += gold[group][answer]
        total_score += score * overall
        total += overall
    return float(total_score) / total


def official(folder: Path, attentions: str, spatial: bool) -> dict:
    """The script's scores (percentages, distribution as the script prints it), per metric."""
    questions = json.loads((folder / "questions.json").read_text())
    choices = json.loads((folder / "data" / "val_choices.json").read_text())
    scenes = json.loads((folder / "data" / "val_sceneGraphs.json").read_text())
    predictions = {p["questionId"]: p["prediction"] for p in json.loads((folder / "predictions.json").read_text())}
    attention_of = {a["questionId"]: a["attention"] for a in json.loads((folder / attentions).read_text())}
    scores = {k: [] for k in ("accuracy", "binary", "open", "validity", "plausibility", "consistency", "grounding")}
    per = {k: defaultdict(list) for k in ("accuracyPerStructuralType", "accuracyPerSemanticType",
                                          "accuracyPerSteps", "accuracyPerLength")}
    dist = {"gold": defaultdict(lambda: defaultdict(int)), "predicted": defaultdict(lambda: defaultdict(int))}
    for qid, question in questions.items():
        if not question["isBalanced"]:
            continue
        gold, predicted = question["answer"], predictions.get(qid)
        score = float(predicted == gold)
        scores["accuracy"].append(score)
        per["accuracyPerLength"][len(question["question"].split())].append(score)
        per["accuracyPerSteps"][_steps(question)].append(score)
        per["accuracyPerStructuralType"][question["types"]["structural"]].append(score)
        per["accuracyPerSemanticType"][question["types"]["semantic"]].append(score)
        scores["open" if question["types"]["structural"] == "query" else "binary"].append(score)
        scores["validity"].append(float(_belongs(predicted, choices[qid]["valid"], question)))
        scores["plausibility"].append(float(_belongs(predicted, choices[qid]["plausible"], question)))
        attention = attention_of.get(qid)
        scores["grounding"].append(0.0 if attention is None else
                                   _grounding(question, scenes[question["imageId"]], attention, spatial))
        group = question["groups"]["global"]
        if group is not None:
            dist["gold"][group][gold] += 1
            dist["predicted"][group][predicted] += 1
        inferred = [e for e in question["entailed"] if e != qid and e in questions]
        if score and inferred:
            scores["consistency"].append(_mean([float(predictions.get(e) == questions[e]["answer"]) for e in inferred]))
    result = {k: _mean(v) * 100 for k, v in scores.items()}
    result["distribution"] = _chi_square(dist["gold"], dist["predicted"]) / 100
    for name, table in per.items():
        result[name] = {str(k): (_mean(v) * 100, len(v)) for k, v in table.items()}
    return result


def printed(result: dict) -> list[str]:
    """The lines the script prints for these scores (its format strings)."""
    lines = ["{title}: {score:.2f}{suffix}".format(title=m.capitalize(), score=result[m],
                                                   suffix=" (lower is better)" if m == "distribution" else "%")
             for m in ("binary", "open", "accuracy", "consistency", "validity", "plausibility", "grounding",
                       "distribution")]
    for name, title in (("accuracyPerStructuralType", "Accuracy / structural type"),
                        ("accuracyPerSemanticType", "Accuracy / semantic type"),
                        ("accuracyPerSteps", "Accuracy / steps number"),
                        ("accuracyPerLength", "Accuracy / words number")):
        lines += ["", f"{title}:"]
        keys = sorted(result[name], key=lambda k: (int(k) if k.isdigit() else 0, k))
        lines += ["  {title}: {score:.2f}{suffix} ({amount} questions)".format(
            title=k, score=result[name][k][0], suffix="%", amount=result[name][k][1]) for k in keys]
    return lines


# --------------------------------------------------------------------------- the comparison

@pytest.mark.slow
@pytest.mark.parametrize("attentions, kind", [("objects.json", "objects"), ("spatial.json", "spatial")])
def test_every_metric_equals_the_official_scripts(fixture, tmp_path, capsys, attentions, kind):
    out = tmp_path / "scores.json"
    code = main(["score", "--questions", str(fixture / "questions.json"), "--predictions",
                 str(fixture / "predictions.json"), "--choices", str(fixture / "data" / "val_choices.json"),
                 "--attentions", str(fixture / attentions), "--attention-kind", kind, "--scene-graphs",
                 str(fixture / "data" / "val_sceneGraphs.json"), "--exact-match", "--json", str(out)])
    stdout = capsys.readouterr().out
    assert code == 0
    reference = official(fixture, attentions, spatial=kind == "spatial")
    gqa = json.loads(out.read_text())["gqa"]
    for metric in ("accuracy", "binary", "open", "consistency", "validity", "plausibility", "grounding"):
        assert abs(100 * gqa[metric] - reference[metric]) <= TOLERANCE, metric
    assert abs(gqa["distribution"] - reference["distribution"]) <= TOLERANCE
    for name in ("accuracyPerStructuralType", "accuracyPerSemanticType", "accuracyPerSteps", "accuracyPerLength"):
        assert set(gqa[name]) == set(reference[name]), name
        for key, (accuracy, count) in reference[name].items():
            assert gqa[name][key]["count"] == count
            assert abs(100 * gqa[name][key]["accuracy"] - accuracy) <= TOLERANCE, (name, key)
    # printed as the script prints them, and the differences said
    assert stdout.splitlines()[:len(printed(reference))] == printed(reference)
    unbalanced = sum(not q["isBalanced"] for q in json.loads((fixture / "questions.json").read_text()).values())
    assert f"unbalanced questions: {unbalanced} left out" in stdout
    assert "missing predictions:" in stdout and gqa["questions"]["missing"] > 0


def test_the_fixture_exercises_every_case(fixture):
    """Not a test of the scores: that the comparison above covers what it claims to."""
    reference = official(fixture, "objects.json", spatial=False)
    questions = json.loads((fixture / "questions.json").read_text())
    predictions = {p["questionId"]: p["prediction"] for p in json.loads((fixture / "predictions.json").read_text())}
    balanced = [q for q in questions.values() if q["isBalanced"]]
    assert len(balanced) < len(questions)
    assert any(qid not in predictions for qid in questions)
    assert any(predictions.get(qid) not in (None, q["answer"]) for qid, q in questions.items())
    assert 0 < reference["consistency"] < 100 and 0 < reference["grounding"] and reference["distribution"] > 0
    assert 0 < reference["plausibility"] < reference["validity"] < 100
    assert any("Common" in q["types"]["detailed"] for q in balanced)
    assert any(q["annotations"]["question"] for q in balanced)
