"""GQA questions: the fixture read field by field, folders, streaming, and every bad input."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.data import (ProgramSource, Question, iter_questions, load_questions,
                           question_from_record, write_questions)
from nablafol.errors import InputFileError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"
VAL = FIXTURES / "val_balanced_questions.json"
TRAIN = FIXTURES / "train_all_questions"


def raw(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def write(tmp_path: Path, questions: dict, name: str = "q_questions.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(questions), encoding="utf-8")
    return path


def test_fixture_fields_are_read_as_gqa_wrote_them():
    questions = load_questions(VAL)
    assert len(questions) == 12
    assert len({q.image_id for q in questions.values()}) == 3
    question = questions["02930152"]  # leading zero kept: ids are strings
    record = raw(VAL)["02930152"]
    assert question.id == "02930152" and question.image_id == "n161313"
    assert question.question == "What is the white object on the table?"
    assert question.answer == "cup"
    assert question.semantic == tuple(record["semantic"])
    assert question.semantic_str == record["semanticStr"]
    assert question.types == {"detailed": "relS", "semantic": "rel", "structural": "query"}
    assert question.is_balanced is True
    assert question.equivalent == ("02930152",) and question.entailed == ()
    assert questions["20968246"].entailed == ("20968250", "20968251")
    assert question.extra == {key: record[key] for key in ("groups", "annotations", "fullAnswer")}


def test_every_fixture_record_survives_to_record():
    for question_id, record in raw(VAL).items():
        assert load_questions(VAL)[question_id].to_record() == record


def test_program_comes_from_semantic_first_then_semantic_str_else_none(tmp_path):
    record = raw(VAL)["20968244"]
    only_text = {k: v for k, v in record.items() if k != "semantic"}
    empty_steps = dict(record, semantic=[])
    neither = {"imageId": "2354786", "question": "Why?"}
    path = write(tmp_path, {"a": record, "b": only_text, "c": empty_steps, "d": neither})
    found = {q.id: q.program_source() for q in iter_questions(path)}
    assert found["a"] == ProgramSource("semantic", tuple(record["semantic"]))
    assert found["b"] == ProgramSource("semanticStr", record["semanticStr"])
    assert found["c"] == ProgramSource("semanticStr", record["semanticStr"])
    assert found["d"] is None  # still yielded: the caller skips it with a reason


def test_test_set_records_without_answers_are_read(tmp_path):
    record = {k: v for k, v in raw(VAL)["20968244"].items()
              if k in ("imageId", "question", "semantic", "semanticStr", "isBalanced")}
    question = load_questions(write(tmp_path, {"1": record}))["1"]
    assert question.answer is None and question.types == {} and question.entailed == ()
    assert question.extra == {}


def test_folder_reads_its_files_in_order_and_equals_the_files_one_by_one():
    from_folder = list(iter_questions(TRAIN))
    parts = sorted(TRAIN.glob("*.json"))
    from_files = [q for part in parts for q in iter_questions(part)]
    assert from_folder == from_files
    assert [q.id for q in from_folder] == [*raw(parts[0]), *raw(parts[1])]
    assert list(load_questions(TRAIN).values()) == from_folder


def test_streaming_equals_loading():
    assert list(iter_questions(VAL)) == list(load_questions(VAL).values())
    assert [q.id for q in iter_questions(VAL)] == list(raw(VAL))


def test_duplicate_ids_across_a_folder_name_the_file_and_the_question(tmp_path):
    record = raw(VAL)["20968244"]
    write(tmp_path, {"1": record, "2": record}, "part_0.json")
    second = write(tmp_path, {"3": record, "2": record}, "part_1.json")
    with pytest.raises(InputFileError) as caught:
        load_questions(tmp_path)
    assert str(caught.value) == f"{second} (question 2): appears twice"


GOOD = {"imageId": "1", "semanticStr": "select: scene->query: place [0]"}


@pytest.mark.parametrize("record, problem", [
    ({"semanticStr": "select: scene"}, "imageId is missing"),
    (dict(GOOD, imageId=2354786), "imageId must be a string, found a number"),
    (dict(GOOD, semantic="select: scene"), "semantic must be a list of steps, found a string"),
    (dict(GOOD, semanticStr=["select: scene"]), "semanticStr must be a string, found a list"),
    (dict(GOOD, answer=3), "answer must be a string, found a number"),
    (dict(GOOD, entailed="20968245"), "entailed must be a list of strings, found a string"),
    (dict(GOOD, equivalent=[20968245]), "equivalent must be a list of strings, found a number in it"),
    (dict(GOOD, types=["query"]), "types must be a JSON object, found a list"),
    (dict(GOOD, isBalanced="yes"), "isBalanced must be true or false, found a string"),
    ("What is it?", "the question record must be a JSON object, found a string"),
])
def test_malformed_records_name_file_question_and_field(tmp_path, record, problem):
    path = write(tmp_path, {"20968244": record})
    for reader in (load_questions, lambda p: list(iter_questions(p))):
        with pytest.raises(InputFileError) as caught:
            reader(path)
        assert str(caught.value) == f"{path} (question 20968244): {problem}"


def test_unusable_files(tmp_path):
    listing = tmp_path / "list.json"
    listing.write_text('[{"imageId": "1"}]')
    with pytest.raises(InputFileError, match=r"list\.json: expected a JSON object "
                                             r"\{questionId: question\} at the top level, found a list"):
        load_questions(listing)
    broken = tmp_path / "broken.json"
    broken.write_text('{"1": {"imageId": "1",}}')
    with pytest.raises(InputFileError, match=r"broken\.json: not valid JSON at line 1, column 23"):
        load_questions(broken)
    with pytest.raises(InputFileError, match=r"absent\.json: no such file or folder"):
        load_questions(tmp_path / "absent.json")


def test_question_text_with_non_ascii_and_escapes(tmp_path):
    record = dict(GOOD, question="Is the caf\u00e9 sign \"open\"? \u2603")
    path = tmp_path / "u.json"
    path.write_text(json.dumps({"1": record}, ensure_ascii=False), encoding="utf-8")
    assert load_questions(path)["1"].question == record["question"]


ids = st.text(st.sampled_from("0123456789n"), min_size=1, max_size=9)
words = st.text(max_size=12)
records = st.fixed_dictionaries(
    {"imageId": ids},
    optional={"question": words, "answer": words, "semanticStr": words,
              "semantic": st.lists(st.fixed_dictionaries({
                  "operation": st.sampled_from(["select", "relate", "query", "and"]),
                  "argument": words, "dependencies": st.lists(st.integers(0, 5), max_size=2)}),
                  max_size=4),
              "entailed": st.lists(ids, max_size=3), "equivalent": st.lists(ids, max_size=3),
              "types": st.fixed_dictionaries({"structural": st.sampled_from(["query", "verify"])}),
              "isBalanced": st.booleans(),
              "fullAnswer": words, "groups": st.fixed_dictionaries({"global": st.none() | words}),
              "annotations": st.dictionaries(st.sampled_from(["answer", "question"]),
                                             st.dictionaries(st.text("0123:", max_size=3), ids))})


@pytest.mark.slow
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(questions=st.dictionaries(ids, records, max_size=6))
def test_write_then_read_gives_the_same_questions(tmp_path, questions):
    built = [question_from_record(question_id, record) for question_id, record in questions.items()]
    path = tmp_path / "round_questions.json"
    write_questions(path, built)
    assert list(iter_questions(path)) == built
    for question in built:  # and every field a record had is written back
        record = questions[question.id]
        written = question.to_record()
        assert {k: v for k, v in written.items() if k in record} == record


def test_writer_refuses_duplicate_ids(tmp_path):
    question = Question(id="1", image_id="2")
    with pytest.raises(ValueError, match="question 1 given twice"):
        write_questions(tmp_path / "q.json", [question, question])
    assert not (tmp_path / "q.json").exists()  # nothing half-written


class _NotPlainDict(dict):
    """A record the fast path of GQA's records does not take (it reads only exact dicts)."""


_GQA_RECORD = raw(VAL)["20968244"]
_WILD = st.one_of(st.integers(-2, 9), st.floats(allow_nan=False), st.text(max_size=2), st.booleans(), st.none(),
                  st.lists(st.one_of(st.text(max_size=2), st.integers(), st.none()), max_size=2),
                  st.dictionaries(st.sampled_from(["structural", "operation", "argument"]),
                                  st.one_of(st.text(max_size=2), st.integers(), st.none()), max_size=2))
_STEP = st.one_of(st.fixed_dictionaries({"operation": st.sampled_from(["select", "exist"]) | _WILD,
                                         "dependencies": st.lists(st.integers(0, 3), max_size=2),
                                         "argument": st.text(max_size=3)}), _WILD)


def _fields(question):  # everything a Question holds, with the order of each dict's keys
    if isinstance(question, str):
        return question
    steps = [[(k, v, _interned(k), _interned(v)) for k, v in s.items()] if isinstance(s, dict) else s
             for s in question.semantic or ()]
    types = [(k, v, _interned(k), _interned(v)) for k, v in question.types.items()]
    return (repr(question), steps, types, question.extra_json, type(question.types), _interned(question.image_id))


def _interned(value) -> bool | None:
    return sys.intern(value) is value if type(value) is str else None


@pytest.mark.slow
@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(st.sampled_from([*_GQA_RECORD, "other"]), _WILD | st.lists(_STEP, max_size=3)), max_size=2),
       st.lists(st.sampled_from(list(_GQA_RECORD)), max_size=2),
       st.permutations(["operation", "dependencies", "argument"]))
@example([], [], ["operation", "dependencies", "argument"])
@example([("answer", None)], [], ["operation", "dependencies", "argument"])
@example([("entailed", ["1", 2])], [], ["operation", "dependencies", "argument"])
@example([("types", {"structural": 1})], [], ["operation", "dependencies", "argument"])
@example([("semantic", [{"operation": 5, "dependencies": [], "argument": ""}])], [], ["operation", "dependencies", "argument"])
@example([], ["isBalanced"], ["argument", "operation", "dependencies"])
def test_gqa_records_read_on_the_fast_path_as_the_full_check_reads_them(spoilt, removed, step_order):
    # GQA's record, with fields changed (or added) to anything, removed, and its steps' keys reordered:
    # whatever either reading gives (a question, or the same one-line refusal), the other gives too
    record = {k: v for k, v in _GQA_RECORD.items() if k not in removed}
    if "semantic" in record:
        record["semantic"] = [{k: step[k] for k in step_order} for step in record["semantic"]]
    record.update(spoilt)

    def read(value):
        try:
            return _fields(question_from_record("20968244", value, path="q.json"))
        except InputFileError as error:
            return str(error)
    full = _NotPlainDict(record)  # and each of its steps: they take the full reading too
    if isinstance(full.get("semantic"), list):
        full["semantic"] = [_NotPlainDict(step) if type(step) is dict else step for step in full["semantic"]]
    fast = read(dict(record))
    assert fast == read(full)
    if not removed and not spoilt and step_order == ["operation", "dependencies", "argument"]:
        assert not isinstance(fast, str) and fast[0] == repr(load_questions(VAL)["20968244"])
