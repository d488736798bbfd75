"""The hand-scored fixture (tests/fixtures/scoring/README.md): split, scores, table."""
from __future__ import annotations

import json

import pytest
from scoring_fixture import exact

from nablafol.scoring import Split, make_split, score



def _expected_json(block: dict) -> dict:
    return {
        part: {g: {k: (exact(v) if isinstance(v, str) else v) for k, v in cells.items()}
               for g, cells in rows.items()}
        for part, rows in block.items()
    }


def test_split_matches_hand_derivation(questions, base_predictions, expected):
    split = make_split(questions, base_predictions)
    assert split.easy == tuple(expected["split"]["easy"])
    assert split.hard == tuple(expected["split"]["hard"])
    assert split.base_missing == tuple(expected["split"]["base_missing"])


@pytest.mark.parametrize("who", ["model", "base"])
def test_scores_match_hand_derivation(who, questions, base_predictions, model_predictions, expected):
    predictions = model_predictions if who == "model" else base_predictions
    scores = score(questions, predictions, make_split(questions, base_predictions))
    # Exact equality: the code sums fractions, so n/d comes out as float(n/d).
    paper = {part: rows for part, rows in scores.to_json().items() if part != "gqa"}
    assert paper == _expected_json(expected[who]["scores"])
    assert scores.missing == tuple(expected[who]["missing"])
    assert scores.unknown_predictions == tuple(expected[who]["unknown_predictions"])


def test_anchor_counts_and_structural_types(questions, base_predictions, model_predictions, expected):
    scores = score(questions, model_predictions, make_split(questions, base_predictions))
    anchors = expected["model"]["anchors"]
    assert dict(scores.overall.anchors) == anchors["overall"]
    assert dict(scores.hard.anchors) == anchors["hard"]
    assert dict(scores.easy.anchors) == anchors["easy"]
    assert scores.overall.by_structural == {
        t: exact(v) for t, v in expected["model"]["by_structural"].items()
    }


@pytest.mark.parametrize("who", ["model", "base"])
def test_table_rows_match_hand_derivation(who, questions, base_predictions, model_predictions, expected):
    predictions = model_predictions if who == "model" else base_predictions
    table = score(questions, predictions, make_split(questions, base_predictions)).format_table()
    lines = table.splitlines()
    assert lines[0].split() == ["Overall", "Hard", "Easy"]
    assert lines[1].split() == ["Split", "Accuracy", "Consistency", "Count", "Acc_h", "Consistency",
                                "Count", "Err_e", "Consistency", "Count"]
    assert [line.split() for line in lines[2:5]] == expected[who]["table_rows"]
    # Right-aligned columns: every row of the table ends at the same width.
    assert len({len(line) for line in lines[1:5]}) == 1
    footer = lines[5:]
    assert any(f"missing predictions: {len(expected[who]['missing'])}" in line for line in footer)
    assert any("outside the set" in line for line in footer) == bool(expected[who]["unknown_predictions"])


def test_table_without_split_has_overall_columns_only(questions, model_predictions, expected):
    lines = score(questions, model_predictions).format_table().splitlines()
    assert lines[1].split() == ["Split", "Accuracy", "Consistency", "Count"]
    assert [line.split() for line in lines[2:5]] == [row[:4] for row in expected["model"]["table_rows"]]


def test_json_without_split_has_overall_only(questions, model_predictions, expected):
    result = score(questions, model_predictions).to_json()
    assert set(result) == {"overall", "gqa"}
    assert result["overall"] == _expected_json(expected["model"]["scores"])["overall"]
    overall = result["overall"]
    assert [result["gqa"][k] for k in ("accuracy", "open", "binary", "consistency")] == [
        overall["all"]["accuracy"], overall["open"]["accuracy"], overall["binary"]["accuracy"],
        overall["all"]["consistency"]]
    json.dumps(result)  # plain JSON types only


def test_split_json_round_trip(questions, base_predictions, expected):
    split = make_split(questions, base_predictions)
    data = json.loads(json.dumps(split.to_json("base.json", "testdev_balanced_questions.json")))
    assert data["base"] == "base.json" and data["questions"] == "testdev_balanced_questions.json"
    assert data["easy"] == expected["split"]["easy"] and data["hard"] == expected["split"]["hard"]
    assert Split.from_json(data) == split


def test_exact_match_is_case_sensitive(questions, model_predictions):
    fixed = dict(model_predictions, **{"1015": "white"})
    before = score(questions, model_predictions).overall.correct["open"]
    assert score(questions, fixed).overall.correct["open"] == before + 1
