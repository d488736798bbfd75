"""GQA submission files and details JSON lines: round trips, exact layout, bad input."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.data import (Details, iter_details, read_details, read_predictions, write_details,
                           write_predictions)
from nablafol.errors import InputFileError

HYPOTHESIS = settings(max_examples=examples(50), deadline=None,
                      suppress_health_check=[HealthCheck.function_scoped_fixture])
question_ids = st.text(st.sampled_from("0123456789"), min_size=1, max_size=9)


@HYPOTHESIS
@given(predictions=st.dictionaries(question_ids, st.text(max_size=15), max_size=20))
def test_predictions_round_trip_in_order(tmp_path, predictions):
    path = tmp_path / "predictions.json"
    assert write_predictions(path, predictions) == len(predictions)
    read = read_predictions(path)
    assert read == predictions and list(read) == list(predictions)
    # exactly GQA's submission layout, readable by any JSON tool
    assert json.loads(path.read_text(encoding="utf-8")) == [
        {"questionId": q, "prediction": p} for q, p in predictions.items()]


@HYPOTHESIS
@given(pairs=st.lists(st.tuples(st.text(max_size=12), st.text(max_size=12)), max_size=8, unique_by=lambda p: p[0]))
def test_predictions_are_written_as_json_dumps_writes_each_entry(tmp_path, pairs):
    # byte for byte what json.dumps of each entry gives (quotes, backslashes, controls, non-ASCII)
    path = tmp_path / "predictions.json"
    write_predictions(path, pairs)
    entries = [json.dumps({"questionId": q, "prediction": p}, ensure_ascii=False) for q, p in pairs]
    assert path.read_text(encoding="utf-8") == "[" + "".join(("\n" if not i else ",\n") + e
                                                           for i, e in enumerate(entries)) + "\n]\n"


def test_pairs_are_accepted_and_duplicates_or_non_strings_refused(tmp_path):
    path = tmp_path / "p.json"
    write_predictions(path, [("2", "yes"), ("1", "no")])
    assert list(read_predictions(path).items()) == [("2", "yes"), ("1", "no")]
    with pytest.raises(ValueError, match="question 2 has two predictions"):
        write_predictions(tmp_path / "twice.json", [("2", "yes"), ("2", "no")])
    with pytest.raises(TypeError, match=r"got \(20968244, 'yes'\)"):
        write_predictions(tmp_path / "int.json", [(20968244, "yes")])
    assert not (tmp_path / "twice.json").exists() and not (tmp_path / "int.json").exists()


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "p.json"
    write_predictions(path, {"1": "yes"})

    def failing():
        yield "2", "no"
        raise RuntimeError("model crashed")

    with pytest.raises(RuntimeError):
        write_predictions(path, failing())
    assert read_predictions(path) == {"1": "yes"}
    assert [p.name for p in tmp_path.iterdir()] == ["p.json"]


@pytest.mark.parametrize("content, problem", [
    ('{"1": "yes"}', 'expected a JSON list [{"questionId", "prediction"}, ...] at the top level, '
                     'found an object'),
    ('[{"questionId": "1", "prediction": "yes"},]', "not valid JSON at line 1, column 43"),
    ('["yes"]', "(entry 0): a prediction must be a JSON object, found a string"),
    ('[{"questionId": "1"}]', "(entry 0): prediction is missing"),
    ('[{"questionId": 1, "prediction": "yes"}]', "(entry 0): questionId must be a string, found a number"),
    ('[{"questionId": "1", "prediction": null}]', "(entry 0): prediction must be a string, found null"),
    ('[{"questionId": "1", "prediction": "yes"}, {"questionId": "1", "prediction": "no"}]',
     "(question 1): has two predictions"),
])
def test_bad_prediction_files_name_the_file_and_the_problem(tmp_path, content, problem):
    path = tmp_path / "predictions.json"
    path.write_text(content)
    with pytest.raises(InputFileError) as caught:
        read_predictions(path)
    assert str(caught.value).startswith(str(path))
    assert problem in str(caught.value)


def test_missing_predictions_file(tmp_path):
    with pytest.raises(InputFileError, match=r"p\.json: no such file"):
        read_predictions(tmp_path / "p.json")


probabilities = st.floats(0, 1)
details = st.builds(
    Details, question_ids, st.none() | st.text(max_size=8),
    st.dictionaries(st.text(max_size=6), probabilities, max_size=4),
    st.lists(question_ids, max_size=3).map(tuple), st.none() | st.text(max_size=30),
    st.dictionaries(st.sampled_from(["skipped", "seconds", "reason"]),
                    st.text(max_size=6) | st.integers(), max_size=2))


@pytest.mark.slow
@HYPOTHESIS
@given(items=st.lists(details, max_size=8, unique_by=lambda d: d.question_id))
def test_details_round_trip(tmp_path, items):
    path = tmp_path / "details.jsonl"
    assert write_details(path, items) == len(items)
    assert list(iter_details(path)) == items
    assert list(read_details(path).values()) == items
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()  # splits at U+2028 and U+0085 too: those must be escaped
    assert len(lines) == len(items) and text.isascii()
    for line, item in zip(lines, items):
        record = json.loads(line)
        assert list(record)[:5] == ["questionId", "prediction", "answers", "grounding", "formula"]
        assert record["questionId"] == item.question_id


def test_details_writer_refuses_nan_clashing_extras_and_duplicates(tmp_path):
    path = tmp_path / "d.jsonl"
    with pytest.raises(ValueError, match="question 1: Out of range float values"):
        write_details(path, [Details("1", "yes", {"yes": float("nan")})])
    with pytest.raises(ValueError, match=r"extra keys \['answers'\] would overwrite"):
        write_details(path, [Details("1", "yes", extra={"answers": {}})])
    with pytest.raises(ValueError, match="question 1 has two details lines"):
        write_details(path, [Details("1", "yes"), Details("1", "no")])
    assert not path.exists()


@pytest.mark.parametrize("lines, problem", [
    (['{"questionId": "1", "prediction": "yes"}', '{"questionId": "2", '],
     "(line 2): not valid JSON at column 21"),
    (['["1", "yes"]'], "(line 1): a details line must be a JSON object, found a list"),
    (['{"prediction": "yes"}'], "(line 1): questionId is missing"),
    (['{"questionId": "1", "prediction": "yes", "answers": {"yes": 1.2, "no": -0.2}}'],
     "(line 1): answers['yes'] must be a probability in [0, 1], found 1.2"),
    (['{"questionId": "1", "prediction": "yes", "answers": {"yes": NaN}}'],
     "(line 1): answers['yes'] must be a probability in [0, 1], found nan"),
    (['{"questionId": "1", "prediction": "yes", "answers": []}'],
     "(line 1): answers must be a JSON object, found a list"),
    (['{"questionId": "1", "prediction": "yes", "grounding": "3817110"}'],
     "(line 1): grounding must be a list of strings, found a string"),
    (['{"questionId": "1", "prediction": "yes"}', "", '{"questionId": "1", "prediction": "no"}'],
     "(question 1): appears on two lines"),
])
def test_bad_details_files_name_the_file_line_and_problem(tmp_path, lines, problem):
    path = tmp_path / "details.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputFileError) as caught:
        read_details(path)
    assert str(caught.value).startswith(str(path))
    assert problem in str(caught.value)


def test_minimal_details_lines_read_with_defaults(tmp_path):
    path = tmp_path / "details.jsonl"
    path.write_text('{"questionId": "7", "prediction": null, "skipped": "unknown operation"}\n\n')
    assert read_details(path) == {"7": Details("7", None, extra={"skipped": "unknown operation"})}
