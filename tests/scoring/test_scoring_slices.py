"""Scores per slice of any metadata field with each slice's gap to a reference slice, on
GD-VCR's regions and scenarios (hand-made fixture, numbers worked out by hand)."""
import json
from pathlib import Path

import pytest

from nablafol.data import write_predictions
from nablafol.scoring.benchmarks import score_benchmark
from nablafol.scoring import ScoringError
from nablafol.scoring.slices import field_values

FIX = Path(__file__).resolve().parents[1] / "fixtures"
GDVCR = FIX / "gdvcr"

# By hand, from predictions.csv (argmax, first of equal probabilities) against answer_label:
#   west:       val-0 right, val-1 right, val-2 wrong (1 for 0)       -> 2/3
#   east-asia:  val-3 right, val-4 wrong (3 for 1)                     -> 1/2
#   south-asia: val-5 wrong (0 for 2), val-6 right (four-way tie: 0)   -> 1/2
#   africa:     val-7 right                                            -> 1/1
# Gap to the West (the largest slice): 2/3 - acc.
REGIONS = {"africa": (1, 1.0), "east-asia": (2, 0.5), "south-asia": (2, 0.5), "west": (3, 2 / 3)}


def test_gdvcr_regions_and_their_gap_to_the_west():
    report = score_benchmark("vcr", GDVCR / "val.jsonl", GDVCR / "predictions.csv", by="region")
    assert report.metrics == {"q2a": 5 / 8, "qa2r": None, "q2ar": None}
    by = report.slices
    assert by.reference == "west"
    assert {s.name: (s.count, s.metrics["q2a"]) for s in by.slices} == REGIONS
    assert {s.name: s.gaps["q2a"] for s in by.slices} == pytest.approx(
        {"africa": 2 / 3 - 1, "east-asia": 2 / 3 - 1 / 2, "south-asia": 2 / 3 - 1 / 2, "west": 0.0})
    assert all(s.gaps["qa2r"] is None for s in by.slices)
    out = report.to_json()["by"]
    assert out["field"] == "region" and out["slices"]["east-asia"]["count"] == 2
    assert out["slices"]["east-asia"]["gap"]["q2a"] == pytest.approx(1 / 6)
    table = report.format_table()
    assert "west (reference)" in table and "+16.67" in table and "-33.33" in table


def test_a_list_field_puts_a_question_in_each_of_its_slices():
    # wedding: val-0 right, val-2 wrong, val-3 right, val-5 wrong -> 2/4 (4 questions: the reference)
    # customer: val-1 right, val-4 wrong, val-6 right -> 2/3;  festival: val-5 wrong, val-7 right -> 1/2
    report = score_benchmark("vcr", GDVCR / "val.jsonl", GDVCR / "predictions.csv", by="keywords")
    slices = {s.name: s for s in report.slices.slices}
    assert report.slices.reference == "wedding"
    assert (slices["wedding"].count, slices["wedding"].metrics["q2a"]) == (4, 0.5)
    assert (slices["customer"].count, slices["customer"].metrics["q2a"]) == (3, pytest.approx(2 / 3))
    assert slices["festival"].gaps["q2a"] == 0.0
    assert sum(s.count for s in slices.values()) == 18  # 8 questions, 2 or 3 keywords each


def test_any_reference_slice_and_any_benchmark(tmp_path):
    report = score_benchmark("vcr", GDVCR / "val.jsonl", GDVCR / "predictions.csv", by="region", reference="africa")
    assert {s.name: s.gaps["q2a"] for s in report.slices.slices}["west"] == pytest.approx(1 - 2 / 3)
    with pytest.raises(ScoringError, match="reference slice 'europe' is not a value of 'region'"):
        score_benchmark("vcr", GDVCR / "val.jsonl", GDVCR / "predictions.csv", by="region", reference="europe")
    # A-OKVQA by its difficult flag: MC 2/4 on the 4 ordinary questions, 1/1 on the difficult one
    aokvqa = score_benchmark("aokvqa", FIX / "aokvqa" / "aokvqa_v1p0_val.json",
                             FIX / "aokvqa" / "predictions_val.json", by="difficult_direct_answer")
    slices = {s.name: s for s in aokvqa.slices.slices}
    assert slices["true"].metrics == {"multiple_choice": 1.0, "direct_answer": None}
    assert slices["true"].gaps == {"multiple_choice": -0.5, "direct_answer": None}
    # GQA by a nested field: answer every verify question right, every other one wrong
    questions = json.loads((FIX / "gqa" / "every_operation" / "questions.json").read_text())
    write_predictions(tmp_path / "p.json", {q: r["answer"] if r["types"]["structural"] == "verify" else "?"
                                            for q, r in questions.items()})
    gqa = score_benchmark("gqa", FIX / "gqa" / "every_operation" / "questions.json", tmp_path / "p.json",
                          by="types.structural")
    slices = {s.name: s for s in gqa.slices.slices}
    assert slices["verify"].metrics["accuracy"] == 1.0 and slices["query"].metrics["accuracy"] == 0.0
    assert sum(s.count for s in slices.values()) == len(questions)


def test_field_values_of_every_json_kind():
    record = {"a": 1, "b": True, "c": None, "d": {"e": "x"}, "f": [], "g": [{"k": 1}]}
    assert [field_values(record, f) for f in "abcf"] == [("1",), ("true",), ("null",), ("(none)",)]
    assert field_values(record, "d.e") == ("x",) and field_values(record, "d.z") == ("(none)",)
    assert field_values(record, "g") == ('{"k": 1}',)


def test_a_split_scores_hard_and_easy_sets_of_any_benchmark():
    from nablafol.scoring import Split
    split = Split(easy=("val-0", "val-1", "val-3"), hard=("val-2", "val-4", "val-5", "val-6", "val-7"))
    report = score_benchmark("vcr", GDVCR / "val.jsonl", GDVCR / "predictions.csv", split=split)
    assert report.subsets["easy"] == (3, {"q2a": 0.0, "qa2r": None, "q2ar": None})  # Err_e: all three right
    assert report.subsets["hard"][1]["q2a"] == 2 / 5
    with pytest.raises(ScoringError, match="1 hard question"):
        score_benchmark("vcr", GDVCR / "val.jsonl", GDVCR / "predictions.csv",
                        split=Split(easy=(), hard=("val-99",)))
