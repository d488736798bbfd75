"""`nablafol eval --bounds --details` writes each answer's sound bounds; `nablafol score --details`
reports how many yes/no answers their interval decides and the mean width; `nablafol answer`
prints the interval of an answer that is not exact."""
import json

import pytest

from nablafol.cli import main
from test_cli_exact_inference import _dataset, _eval


def test_eval_writes_bounds_that_hold_the_exact_answer(tmp_path, capsys):
    reference = _dataset(tmp_path)  # ProbLog's exact probabilities
    details, _ = _eval(tmp_path, capsys, "--bounds", "--exact-budget", "0")
    loose = 0
    for qid, want in reference.items():
        (low, high), (no_low, no_high) = details[qid]["bounds"]["yes"], details[qid]["bounds"]["no"]
        assert low - 1e-6 <= want <= high + 1e-6, qid
        assert (no_low, no_high) == pytest.approx((1 - high, 1 - low)), qid
        if details[qid]["exact"]:  # an exact answer's interval is its value
            assert low == pytest.approx(details[qid]["answers"]["yes"]) == high, qid
        loose += high - low > 1e-6
    assert loose, "the fixture must hold answers that are not exact"


def test_a_larger_budget_narrows_the_bounds(tmp_path, capsys):
    _dataset(tmp_path)
    widths = []
    for budget in ("0", "8"):
        details, _ = _eval(tmp_path, capsys, "--bounds", "--exact-budget", budget)
        widths.append({q: d["bounds"]["yes"][1] - d["bounds"]["yes"][0] for q, d in details.items()})
    assert all(widths[1][q] <= widths[0][q] + 1e-6 for q in widths[0])
    assert sum(widths[1].values()) < sum(widths[0].values())


def test_bounds_need_the_details(tmp_path, capsys):
    _dataset(tmp_path)
    code = main(["eval", "--questions", str(tmp_path / "q.json"), "--scene-graphs", str(tmp_path / "sg.json"),
                 "--predictions", str(tmp_path / "p.json"), "--bounds"])
    assert code == 2 and "--bounds writes each answer's bounds into the details" in capsys.readouterr().err


def test_score_reports_the_share_decided_and_the_mean_width(tmp_path, capsys):
    _dataset(tmp_path)
    details, _ = _eval(tmp_path, capsys, "--bounds", "--exact-budget", "0")
    intervals = [d["bounds"]["yes"] for d in details.values()]
    decided = sum(low > 0.5 or high <= 0.5 for low, high in intervals)
    width = sum(high - low for low, high in intervals) / len(intervals)  # yes/no: predicted yes or no, same width
    code = main(["score", "--questions", str(tmp_path / "q.json"), "--predictions", str(tmp_path / "p.json"),
                 "--details", str(tmp_path / "d.jsonl")])
    assert code == 0
    printed = capsys.readouterr().out
    assert (f"bounds: {100 * decided / len(intervals):.2f}% of yes/no answers decided by their interval "
            f"({decided} of {len(intervals)}), mean width {width:.4f} over {len(intervals)} answers") in printed


def test_score_refuses_bounds_that_are_not_intervals(tmp_path, capsys):
    _dataset(tmp_path)
    details, _ = _eval(tmp_path, capsys, "--bounds")
    lines = list(details.values())
    lines[0]["bounds"]["yes"] = [0.9, 0.1]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines))
    code = main(["score", "--questions", str(tmp_path / "q.json"), "--predictions", str(tmp_path / "p.json"),
                 "--details", str(tmp_path / "d.jsonl")])
    err = capsys.readouterr().err
    assert code != 0 and "bounds that are not [lower, upper] pairs" in err and lines[0]["questionId"] in err
    assert "Traceback" not in err


class _ReadAs:
    """A parser that reads every question as one given program (the asking path, without training one)."""

    def __init__(self, text):
        self.text = text

    def parse(self, question, min_probability=None):
        from types import SimpleNamespace
        return SimpleNamespace(text=self.text, program=None, probability=1.0)


def test_answer_prints_the_interval_of_an_answer_that_is_not_exact(tmp_path, capsys):
    from nablafol.asking import Asker
    from nablafol.asking.execution import golden_perception
    reference = _dataset(tmp_path)
    details, _ = _eval(tmp_path, capsys, "--bounds", "--exact-budget", "0")
    records = json.loads((tmp_path / "q.json").read_text())
    perception = golden_perception(tmp_path / "sg.json")
    shown = 0
    for qid, record in records.items():
        reply = Asker(_ReadAs(record["semanticStr"]), perception).ask(record["imageId"], "?")
        assert reply.exact == details[qid]["exact"]
        if reply.exact:
            assert reply.bounds is None and "not exact" not in reply.lines()[3]
            continue
        low, high = reply.bounds
        p_answer = reference[qid] if reply.answer == "yes" else 1 - reference[qid]
        assert low - 1e-6 <= p_answer <= high + 1e-6, qid  # budget 8: narrower than eval's at 0, still sound
        assert f"not exact: between {low:.3f} and {high:.3f}" in reply.lines()[3]
        assert reply.to_dict()["bounds"] == [low, high]
        shown += 1
    assert shown
