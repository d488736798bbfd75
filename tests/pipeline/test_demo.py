"""The main job, end to end (small), and the pictures it draws."""
import json
import re

import numpy as np
import pytest
import torch

from nablafol.cli import main
from nablafol.pipeline.demo_report import (ANSWERS_ONLY, BASE, BAYES, BLACK_BOX, CALIBRATED, CEILING, GOLDEN,
                                           LABELS_ONLY, PREDICTED, PRETRAINED, PRIOR, _StepRecorder, wilson_interval)
from nablafol.engine import Engine, ProgramPlan
from nablafol.ir import Filter, Predicate, Program, Relate, Top, Aggregate
from nablafol.operators import Quantifier
from nablafol.oracle import TableOracle
from nablafol.plotting import attention_over_boxes, attention_steps, grouped_bars, learning_curves, training_curve

PNG = b"\x89PNG\r\n\x1a\n"


def _is_png(path) -> bool:
    data = path.read_bytes()
    return data.startswith(PNG) and len(data) > 5_000


@pytest.mark.slow
def test_pictures_are_png_files(tmp_path):
    history = [{"epoch": e, "train_loss": 1.0 / (e + 1), "val_accuracy": 0.5 + e / 10, "val_open": 0.4,
                "val_binary": None} for e in range(3)]
    boxes = [[10, 10, 50, 60], [100, 20, 180, 90]]
    pictures = [
        training_curve(history, tmp_path / "curve.png"),
        attention_over_boxes(boxes, 200, 100, [0.9, 0.1], ["#0", "#1"], tmp_path / "a" / "att.png", "a question"),
        attention_steps(boxes, 200, 100, [("filter cup", [0.9, 0.2]), ("relate", [0.1, 0.8]), ("and", [0.1, 0.1])],
                        ["#0", "#1"], tmp_path / "steps.png", "a question, hop by hop"),
        grouped_bars(["2", "3"], {"a": [50.0, None], "b": [70.0, 20.0]}, tmp_path / "bars.png", "x", "y", "t",
                     notes=["n=3", "n=4"]),
        learning_curves({"a": [(1.0, 0.5), (2.5, 0.6)], "b": [(0.5, None), (3.0, 0.7)]}, tmp_path / "curves.png"),
        learning_curves({"a": [(1.0, 0.5)]}, tmp_path / "levels.png", levels={"bound": 0.9}),
    ]
    for path in pictures:
        assert _is_png(path), path


def test_wilson_interval_holds_the_accuracy_and_narrows_with_more_questions():
    low, high = wilson_interval(80, 100)
    assert low < 0.8 < high and (round(low, 4), round(high, 4)) == (0.7112, 0.8666)  # the textbook's figures
    wide, narrow = wilson_interval(8, 10), wilson_interval(800, 1000)
    assert wide[1] - wide[0] > narrow[1] - narrow[0] > 0
    assert wilson_interval(0, 5)[0] == 0.0 and wilson_interval(5, 5)[1] == 1.0 and wilson_interval(0, 0) == (0.0, 1.0)


def test_step_recorder_keeps_every_step_and_changes_nothing():
    ball, red, left = Predicate("ball"), Predicate("red"), Predicate("left", arity=2)
    balls = Filter(ball, Top())
    red_balls = Filter(red, balls)
    left_of = Relate.of(left, Quantifier.EXISTS, red_balls)
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, left_of))
    oracle = TableOracle([{ball: [0.9, 0.2, 0.6], red: [0.5, 1.0, 0.1],
                           left: [[0.0, 1.0, 0.3], [0.2, 0.0, 0.9], [0.7, 0.4, 0.0]]}])
    recorder = _StepRecorder()
    with torch.no_grad():
        traced = Engine(calibration=recorder)([program], oracle)
        plain = Engine()([program], oracle)
    assert torch.equal(traced.log_probs, plain.log_probs)
    steps = ProgramPlan.of(program).attention_steps
    recorded = {steps[s]: a for (p, s), a in recorder.steps.items()}
    assert Top() not in recorded  # ⊤ is all ones; the engine skips it
    np.testing.assert_allclose(recorded[balls], [0.9, 0.2, 0.6], rtol=1e-6)
    np.testing.assert_allclose(recorded[red_balls], [0.45, 0.2, 0.06], rtol=1e-6)
    y = np.array([0.45, 0.2, 0.06])
    r = np.array([[0.0, 1.0, 0.3], [0.2, 0.0, 0.9], [0.7, 0.4, 0.0]])
    expected = 1 - np.prod(1 - r * y[None, :], axis=1)  # ∃Y: left(X, Y) ∧ red ball(Y)
    np.testing.assert_allclose(recorded[left_of], expected, rtol=1e-5)


@pytest.mark.slow
def test_demo_quick_writes_its_report(tmp_path):
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "--epochs", "2", "--blackbox-epochs", "2", "--parser-epochs", "1",
                 "--pretrained-epochs", "1", "--out", str(out)]) == 0
    folder = out / "report"
    report = (folder / "report.md").read_text()
    assert "## Golden oracle" in report and "accuracy 100.00%" in report and "As it must be" in report
    for title in ("## Table 1", "## Table 2", "## Table 3"):
        assert title in report, title
    assert "Acc_h" in report and "Err_e" in report and "The paper's pattern holds" in report
    for name in (BASE, CALIBRATED, BLACK_BOX, PRIOR):
        assert name in report, name
    linked = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", report)
    assert {"training_curve.png", "learning_curves.png", "accuracy_by_length.png", "hard_vs_easy.png",
            "reliability.png", "calibration_shapes_1.png"} <= set(linked)
    assert sum(link.startswith("hops/") for link in linked) >= 2
    for link in linked:
        assert _is_png(folder / link), link

    scores = json.loads((folder / "scores.json").read_text())
    assert set(scores) == {BAYES, CEILING, BASE, CALIBRATED, BLACK_BOX, PRIOR}
    assert scores[BAYES]["overall"]["all"]["accuracy"] > scores[BASE]["overall"]["all"]["accuracy"]
    assert "least recalled concepts" in report and "95% interval" in report
    assert BAYES in report
    assert "## The perception ceiling" in report and CEILING in report
    assert report.index("## The perception ceiling") < report.index("## Table 1")
    base = scores[BASE]
    assert base["hard"]["all"]["accuracy"] == 0.0 and base["easy"]["all"]["error"] == 0.0
    split = json.loads((folder / "split.json").read_text())
    for name in scores:
        assert scores[name]["overall"]["all"]["count"] == len(split["easy"]) + len(split["hard"])
        assert 0.0 <= scores[name]["overall"]["all"]["accuracy"] <= 1.0
    gqa = json.loads((folder / "gqa_metrics.json").read_text())
    assert "## GQA's other metrics" in report
    assert set(gqa["testdev"]) == {BASE, CALIBRATED, BLACK_BOX, PRIOR} and set(gqa["val"]) == {GOLDEN, BASE}
    for name, metrics in gqa["testdev"].items():
        assert metrics["accuracy"] == scores[name]["overall"]["all"]["accuracy"], name
        assert metrics["grounding"] is None and 0 <= metrics["plausibility"] <= metrics["validity"] <= 1, name
        assert metrics["distribution"] >= 0, name
    golden = gqa["val"][GOLDEN]
    assert golden["accuracy"] == 1.0 and golden["distribution"] == 0.0 and golden["validity"] > 0.95
    assert gqa["val"][BASE]["grounding"] is not None and golden["grounding"] > gqa["val"][BASE]["grounding"] > 0
    demo = json.loads((folder / "demo.json").read_text())
    # the learning curves: one point per epoch of each way of learning, seconds growing
    curves = demo["learning_curves"]
    assert set(curves) == {ANSWERS_ONLY, LABELS_ONLY, PRETRAINED, BLACK_BOX}
    assert len(curves[ANSWERS_ONLY]) == 2 and len(curves[BLACK_BOX]) == 2
    assert len(curves[LABELS_ONLY]) == len(demo["ceiling_history"]) <= 2  # quick: at most 2 label epochs
    assert len(curves[PRETRAINED]) == 1 and curves[PRETRAINED][0][0] > curves[LABELS_ONLY][-1][0]  # then 1 answer epoch
    assert set(demo["learning_levels"]) == {BAYES} and 0 < demo["learning_levels"][BAYES] <= 1
    low, high = demo["bayes"]["testdev_interval_95"]
    assert low < scores[BAYES]["overall"]["all"]["accuracy"] < high
    assert sum(h.get("best", False) for h in demo["ceiling_history"]) == 1
    assert all(0 <= f["accuracy"] <= 1 for f in demo["ceiling_concepts"].values()) and len(demo["ceiling_concepts"]) > 20
    for name, points in curves.items():
        seconds = [t for t, _ in points]
        assert seconds == sorted(seconds) and seconds[0] > 0, name
        assert all(0 <= a <= 1 for _, a in points), name
    assert [a for _, a in curves[ANSWERS_ONLY]] == [h["val_accuracy"] for h in demo["oracle_history"]]
    assert "## Learning curves" in report and "| **wall, the whole demo** |" in report
    assert {"beside: parser", "beside: black box", "beside: ceiling", "wall"} <= set(demo["timings_s"])
    assert set(demo["cpu_s"]) == {"this process", "the second process"} and min(demo["cpu_s"].values()) > 0
    assert set(demo["table3_pattern"]) == {"accuracy", "Acc_h", "Err_e", "consistency"}
    assert demo["table3_pattern"]["Acc_h"]["base"] == 0.0
    assert set(demo["yes_no_ece"]) == {BASE, CALIBRATED}
    for hop in demo["hop_by_hop"]:
        assert (folder / hop["png"]).exists() and len(hop["steps"]) >= 2
    for name in ("base", "calibrated", "blackbox", "prior"):
        predictions = json.loads((folder / f"{name}_testdev_predictions.json").read_text())
        assert len(predictions) > 0, name
    for name in ("model/config.json", "model/calibrator.json"):
        assert (out / name).exists(), name

    # the semantic parser's row: test-dev answered over the programs it read, the parser kept for `nablafol answer`
    assert "## Reading the questions: the semantic parser" in report and PREDICTED in report
    table1 = report[report.index("## Table 1"):report.index("## Table 2")]
    assert "| golden | open |" in table1 and "| predicted (semantic parser) | open |" in table1
    parsing = demo["predicted_programs"]
    predicted = parsing["scores"]["overall"]["all"]
    assert parsing["golden_accuracy"] == base["overall"]["all"]["accuracy"]
    assert parsing["predicted_accuracy"] == predicted["accuracy"] and 0.0 <= parsing["exact_match"] <= 1.0
    assert predicted["count"] == base["overall"]["all"]["count"]
    assert f"{100 * predicted['accuracy']:.2f}%" in table1
    from nablafol.semantic_parser import load_parser
    assert load_parser(out / "parser").parse("Is the cup red?").program is not None
