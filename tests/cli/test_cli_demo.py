"""The main job, end to end (small), and the pictures it draws."""
import json

from nablafol.cli import main
from nablafol.report import attention_over_boxes, training_curve

PNG = b"\x89PNG\r\n\x1a\n"


def test_pictures_are_png_files(tmp_path):
    history = [{"epoch": e, "train_loss": 1.0 / (e + 1), "val_accuracy": 0.5 + e / 10, "val_open": 0.4,
                "val_binary": None} for e in range(3)]
    curve = training_curve(history, tmp_path / "curve.png")
    boxes = [[10, 10, 50, 60], [100, 20, 180, 90]]
    att = attention_over_boxes(boxes, 200, 100, [0.9, 0.1], ["#0", "#1"], tmp_path / "a" / "att.png", "a question")
    for path in (curve, att):
        data = path.read_bytes()
        assert data.startswith(PNG) and len(data) > 5_000


def test_demo_quick_writes_its_report(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "--epochs", "2", "--out", str(out)]) == 0
    report = (out / "report.md").read_text()
    assert "## Golden oracle" in report and "accuracy 100.00%" in report
    assert "Acc_h" in report and "answer prior (blind)" in report
    scores = json.loads((out / "scores.json").read_text())
    base = scores["base model (∇-FOL)"]
    assert base["hard"]["all"]["accuracy"] == 0.0 and base["easy"]["all"]["error"] == 0.0
    split = json.loads((out / "split.json").read_text())
    assert len(split["easy"]) + len(split["hard"]) == base["overall"]["all"]["count"]
    for name in ("training_curve.png", "attention.png", "base_testdev_predictions.json", "model/config.json"):
        assert (out / name).exists(), name
