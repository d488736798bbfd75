"""GQA's attentions and choices files: round trips, the engine's attention turned into boxes, bad files."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from nablafol.data import Details, ObjectFeatures, SceneGraph, SceneObject
from nablafol.data.attentions import (ObjectAttention, SpatialAttention, attentions_from_details, feature_regions,
                                      object_attention, read_attentions, scene_graph_regions, write_attentions)
from nablafol.data.choices import Choices, load_choices, write_choices
from nablafol.errors import InputFileError

GRAPH = SceneGraph("img", 200, 100, (SceneObject("7", {"cup": 1.0}, 0, 0, 100, 50),
                                     SceneObject("8", {"mug": 1.0}, 100, 50, 100, 50)))


def test_attentions_round_trip_both_kinds(tmp_path):
    objects = {"1": ObjectAttention(((0.0, 0.0, 0.5, 0.5, 0.25), (0.5, 0.5, 1.0, 1.0, 0.75))), "2": ObjectAttention(())}
    spatial = {"1": SpatialAttention(((0.1, 0.2), (0.3, 0.4)))}
    assert write_attentions(tmp_path / "o.json", objects) == 2
    assert write_attentions(tmp_path / "s.json", spatial.items()) == 1
    assert read_attentions(tmp_path / "o.json") == objects
    assert read_attentions(tmp_path / "s.json", "spatial") == spatial


def test_engine_attention_becomes_normalized_boxes():
    regions = scene_graph_regions(GRAPH)
    assert regions["7"] == (0.0, 0.0, 0.5, 0.5) and regions["8"] == (0.5, 0.5, 1.0, 1.0)
    entry = object_attention({"7": 0.9, "8": 0.3, "scene": 0.0}, regions)
    assert entry.regions == ((0.0, 0.0, 0.5, 0.5, 0.75), (0.5, 0.5, 1.0, 1.0, 0.25), (0.0, 0.0, 1.0, 1.0, 0.0))
    assert object_attention({"7": 0.9}, regions, normalize=False).regions == ((0.0, 0.0, 0.5, 0.5, 0.9),)
    assert object_attention({"7": 0.0}, regions).regions == ((0.0, 0.0, 0.5, 0.5, 0.0),)  # nothing attended
    with pytest.raises(ValueError, match="object '9'"):
        object_attention({"9": 1.0}, regions)
    with pytest.raises(ValueError, match="finite number >= 0"):
        object_attention({"7": float("nan")}, regions)


def test_feature_rows_are_named_by_their_index():
    features = ObjectFeatures(np.zeros((2, 4), np.float32), np.array([[0, 0, 100, 50], [100, 50, 200, 100]],
                                                                      np.float32), 200.0, 100.0)
    assert feature_regions(features) == {"0": (0.0, 0.0, 0.5, 0.5), "1": (0.5, 0.5, 1.0, 1.0),
                                         "scene": (0.0, 0.0, 1.0, 1.0)}


def test_details_lines_with_attention_become_entries():
    details = [Details("q1", "red", extra={"attention": {"7": 1.0, "8": 1.0}}), Details("q2", "blue"),
               Details("q3", None, extra={"reason": "skipped"})]
    entries = dict(attentions_from_details(details, {"q1": "img", "q2": "img"}, lambda image: scene_graph_regions(GRAPH)))
    assert list(entries) == ["q1"] and [r[4] for r in entries["q1"].regions] == [0.5, 0.5]
    outcome = SimpleNamespace(question_id="q2", attention={"8": 0.5})  # the answering loop's outcomes too
    assert dict(attentions_from_details([outcome], {"q2": "img"}, lambda image: scene_graph_regions(GRAPH))) == {
        "q2": ObjectAttention(((0.5, 0.5, 1.0, 1.0, 1.0),))}


@pytest.mark.parametrize("content, kind, problem", [
    ({}, "objects", "expected a JSON list"),
    ([{"questionId": "1"}], "objects", "attention is missing"),
    ([{"questionId": "1", "attention": [[0, 0, 1, 1]]}], "objects", "must be [x0, y0, x1, y1, attention]"),
    ([{"questionId": "1", "attention": [[0, 0, 1, 1, "x"]]}], "objects", "must be a number"),
    ([{"questionId": "1", "attention": [[0.1, 0.2]]}], "spatial", "must be square"),
    ([{"questionId": "1", "attention": []}, {"questionId": "1", "attention": []}], "objects", "two attention entries"),
])
def test_bad_attentions_files_are_one_line_naming_the_file(tmp_path, content, kind, problem):
    path = tmp_path / "a.json"
    path.write_text(json.dumps(content))
    with pytest.raises(InputFileError, match=problem.replace("[", r"\[")) as caught:
        read_attentions(path, kind)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_choices_round_trip_and_bad_records(tmp_path):
    choices = {"1": Choices(("red", "blue"), ("red",)), "2": Choices(("yes", "no"), ("yes", "no"))}
    assert write_choices(tmp_path / "c.json", choices) == 2 and load_choices(tmp_path / "c.json") == choices
    (tmp_path / "bad.json").write_text(json.dumps({"1": {"valid": ["red"]}}))
    with pytest.raises(InputFileError, match="question 1.*plausible is missing"):
        load_choices(tmp_path / "bad.json")
