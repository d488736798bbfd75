"""The neighbouring benchmarks' files read exactly (CRIC, A-OKVQA, VCR, GD-VCR), which
benchmark a file is, and one clear line for each kind of broken file."""
import json
from pathlib import Path

import pytest

from nablafol.data.aokvqa import load_aokvqa, read_aokvqa_predictions
from nablafol.data.benchmark_files import detect_benchmark
from nablafol.data.cric import (CricPrediction, grounding_from_attention, load_cric_questions, load_cric_scene_graphs,
                                objects_found, read_cric_predictions, write_cric_predictions)
from nablafol.data.vcr import VcrPrediction, load_vcr, read_vcr_predictions, write_vcr_predictions
from nablafol.errors import InputFileError
from nablafol.graph_oracles import KnowledgeBase

FIX = Path(__file__).resolve().parents[1] / "fixtures"
CRIC, AOKVQA, VCR, GDVCR = FIX / "cric", FIX / "aokvqa", FIX / "vcr", FIX / "gdvcr"


# -- CRIC ---------------------------------------------------------------------------------------

def test_cric_questions_read_with_their_programs_targets_and_groups():
    questions = load_cric_questions(CRIC / "val_questions.json")
    assert list(questions) == ["1001", "1002", "1003", "1004", "1005", "1006", "1007"]
    q = questions["1001"]
    assert (q.image_id, q.answer, q.target, q.question_type, q.group) == ("2370436", "fork", ("1058498",), "QueryObjSG",
                                                                          "Recognize")
    assert q.program_source().field == "cric" and q.program_source().value[0]["function"] == "Initial"
    assert questions["1004"].group == "Verify" and questions["1004"].wrong_part.startswith("no animal")
    assert q.record()["sub_graph"]["knowledge_items"] == [["fork", "CapableOf", "lift food"]]


def test_cric_scene_graphs_read_from_visual_genome_layout():
    graphs = load_cric_scene_graphs(CRIC / "scene_graphs.json")
    kitchen = graphs["2370436"]
    assert kitchen.object_ids == ("1058498", "1058499", "1058500", "1058501", "1058502")
    egg = kitchen.find("1058500")
    assert egg.name == "egg" and dict(egg.attributes) == {"yellow": 1.0}
    assert [(r.name, r.object_id) for r in egg.relations] == [("on", "1058499")]
    assert (kitchen.width, kitchen.height) == (500, 370)  # no size in the file: the boxes' extent


def test_cric_knowledge_graph_reads_as_triples():
    kb = KnowledgeBase.load(CRIC / "knowledge_graph.json")
    assert len(kb) == 8 and "CapableOf" in kb.relations and kb.triples[0].fact == "CapableOf:lift food"


def test_cric_predictions_read_with_grounding_and_modules():
    predictions = read_cric_predictions(CRIC / "predictions.json")
    assert predictions["1001"].grounding == "1058498" and predictions["1005"].grounding is None
    assert predictions["1002"].modules[1] == ("1058501", "1058498") and predictions["1002"].modules[3] is None
    assert predictions["1003"].modules is None


def test_cric_predictions_round_trip(tmp_path):
    predictions = {"1": CricPrediction("fork", "7", (("7", "8"), None)), "2": CricPrediction("no")}
    write_cric_predictions(tmp_path / "p.json", predictions)
    assert read_cric_predictions(tmp_path / "p.json") == predictions


def test_a_details_file_is_read_as_cric_predictions(tmp_path):
    lines = [{"questionId": "1", "prediction": "fork", "answers": {"fork": 0.9}, "grounding": ["7"], "formula": "",
              "attention": {"7": 0.9, "8": 0.95, "scene": 1.0}},
             {"questionId": "2", "prediction": "no", "attention": {"7": 1.0}},
             {"questionId": "3", "prediction": "yes", "attention": {"scene": 1.0}, "modules": [["7"], None]}]
    path = tmp_path / "details.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    predictions = read_cric_predictions(path)
    assert predictions["1"] == CricPrediction("fork", "8")  # the most attended object, never the scene
    assert predictions["2"] == CricPrediction("no", None)  # a "no" points at nothing
    assert predictions["3"] == CricPrediction("yes", None, (("7",), None))


def test_grounding_and_found_objects_from_an_attention():
    attention = {"3": 0.7, "1": 0.7, "2": 0.2, "scene": 0.99}
    assert grounding_from_attention(attention, "red") == "3"  # ties: the first listed
    assert grounding_from_attention(attention, "red", candidates=["1", "2"]) == "1"
    assert grounding_from_attention({}, "red") is None and grounding_from_attention(attention, None) is None
    assert objects_found(attention) == ("3", "1") and objects_found(attention, 0.1) == ("3", "1", "2")


# -- A-OKVQA ------------------------------------------------------------------------------------

def test_aokvqa_annotations_and_predictions_read_as_released():
    questions = load_aokvqa(AOKVQA / "aokvqa_v1p0_val.json")
    assert len(questions) == 5
    q = questions["4fKxNb2Wc8a9RzvQpT3hLm"]
    assert (q.image_id, q.split, q.correct_choice, len(q.direct_answers), len(q.rationales)) == (
        "299207", "val", "cab", 10, 3)
    assert questions["2HsWq7NcVb4Rm9Lp3XtKa8"].difficult_direct_answer is True
    predictions = read_aokvqa_predictions(AOKVQA / "predictions_val.json")
    assert predictions["9bVn3JkLr6Ws2Dq8YtMe5F"].direct_answer is None
    assert predictions["7QmTz2VwPdE5yHc8KsLx4B"].multiple_choice == "umbrella"


def test_aokvqa_test_split_reads_without_answers(tmp_path):
    path = tmp_path / "aokvqa_v1p0_test.json"
    path.write_text(json.dumps([{"split": "test", "image_id": 1, "question_id": "t", "question": "?",
                                 "choices": ["a", "b", "c", "d"], "difficult_direct_answer": False}]))
    q = load_aokvqa(path)["t"]
    assert q.correct_choice is None and q.direct_answers is None and q.rationales is None


# -- VCR and GD-VCR -----------------------------------------------------------------------------

def test_vcr_tags_resolve_to_the_boxes_they_name():
    items = load_vcr(VCR / "val.jsonl", images=VCR / "images")
    first, second = items["val-0"], items["val-1"]
    assert first.text(first.question) == "Does [person3] feel comfortable ?"
    assert first.tagged_boxes() == {"[person1]": (12.0, 40.5, 210.2, 700.0), "[person3]": (455.3, 60.2, 690.0, 712.4),
                                    "[car4]": (700.1, 300.0, 1270.0, 690.5)}
    assert second.text(second.question) == "Why are [person1] and [person2] standing by [car4] ?"
    assert (second.answer_label, second.rationale_label, len(second.rationale_choices)) == (2, 0, 4)
    assert items["val-2"].tagged_boxes()["[dog2]"] == (640.5, 420.0, 980.0, 710.0)
    assert first.record()["movie"] == "3015_CHARLIE_ST_CLOUD"


def test_without_the_images_folder_boxes_are_not_read():
    item = load_vcr(VCR / "val.jsonl")["val-0"]
    assert item.boxes is None
    with pytest.raises(ValueError, match="give the images folder"):
        item.tagged_boxes()


def test_gdvcr_records_keep_region_and_keywords():
    items = load_vcr(GDVCR / "val.jsonl")
    assert len(items) == 8
    record = items["val-3"].record()
    assert record["region"] == "east-asia" and record["keywords"] == ["wedding", "bride", "groom"]
    assert record["cultural_or_not"] == 1 and items["val-0"].record()["cultural_or_not"] == "none"


def test_leaderboard_csv_reads_with_and_without_rationales(tmp_path):
    full = read_vcr_predictions(VCR / "predictions.csv")
    assert full["val-0"].answers == (0.1, 0.7, 0.1, 0.1)
    assert full["val-1"].rationales[2] == (0.55, 0.15, 0.15, 0.15)
    answers_only = read_vcr_predictions(GDVCR / "predictions.csv")
    assert answers_only["val-6"] == VcrPrediction((0.25,) * 4, None)
    write_vcr_predictions(tmp_path / "p.csv", full)
    assert read_vcr_predictions(tmp_path / "p.csv") == full


# -- which benchmark ------------------------------------------------------------------------------

@pytest.mark.parametrize("path, benchmark", [
    (CRIC / "val_questions.json", "cric"), (AOKVQA / "aokvqa_v1p0_val.json", "aokvqa"), (VCR / "val.jsonl", "vcr"),
    (GDVCR / "val.jsonl", "vcr"), (FIX / "gqa" / "val_balanced_questions.json", "gqa"),
    (FIX / "gqa" / "train_all_questions", "gqa")])
def test_the_benchmark_is_told_from_the_file(path, benchmark):
    assert detect_benchmark(path) == benchmark


@pytest.mark.parametrize("text", ['[{"question": "?"}]', '[{"id": 1}, {"id": 2}]'])
def test_records_of_no_known_benchmark_ask_for_the_benchmark(tmp_path, text):
    path = tmp_path / "q.json"
    path.write_text(text)
    with pytest.raises(InputFileError, match="give --benchmark"):
        detect_benchmark(path)


@pytest.mark.parametrize("text", ["[]", "[1, 2]", "42", "", "{not json"])
def test_a_file_without_records_goes_to_the_gqa_reader_which_says_what_is_wrong(tmp_path, text):
    path = tmp_path / "q.json"
    path.write_text(text)
    assert detect_benchmark(path) == "gqa"


# -- broken files: one line naming the file and the record ----------------------------------------

def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def _cric_record(**change):
    record = json.loads((CRIC / "val_questions.json").read_text())[0]
    record.update(change)
    return record


def _aokvqa_record(**change):
    record = json.loads((AOKVQA / "aokvqa_v1p0_val.json").read_text())[0]
    record.update(change)
    return record


def _vcr_line(**change):
    record = json.loads((VCR / "val.jsonl").read_text().splitlines()[0])
    record.update(change)
    return json.dumps(record)


BROKEN = [
    (load_cric_questions, "q.json", '{"1": {}}', "expected a JSON list of CRIC questions"),
    (load_cric_questions, "q.json", json.dumps([{"question_id": "1", "image_id": 1}]), "(item 0): program is missing"),
    (load_cric_questions, "q.json", json.dumps([_cric_record(target=5)]), "(question 1001): target must be a list"),
    (load_cric_questions, "q.json", json.dumps([_cric_record(question_id=True)]), "question_id must be an object id"),
    (load_cric_questions, "q.json", json.dumps([_cric_record(), _cric_record()]), "(question 1001): appears twice"),
    (load_cric_questions, "q.json", json.dumps([_cric_record(program=["Initial"])]), "program must be a list of"),
    (load_cric_scene_graphs, "sg.json", json.dumps([{"image_id": 1, "objects": [], "relationships": [
        {"predicate": "on", "subject_id": 5, "object_id": 6}]}]), "subject 5 is not an object of this image"),
    (load_cric_scene_graphs, "sg.json", json.dumps([{"image_id": 1, "objects": [{"object_id": 1, "names": []}]}]),
     "names must be a non-empty list"),
    (load_cric_scene_graphs, "sg.json", json.dumps([{"image_id": 1, "objects": [
        {"object_id": 1, "names": ["cat"], "x": 0, "y": 0, "w": -3, "h": 1}]}]), "w must be >= 0"),
    (read_cric_predictions, "p.json", '{"1": {"grounding": 3}}', "(question 1): answer is missing"),
    (read_cric_predictions, "p.json", '{"1": {"answer": "no", "grounding": 1.5}}', "grounding must be an object id"),
    (read_cric_predictions, "p.json", '{"1": {"answer": "no", "modules": 3}}', "modules must be a list"),
    (read_cric_predictions, "p.json", '[1]', "expected {question_id"),
    (read_cric_predictions, "p.json", '{"questionId": "1"}\n{"questionId": 2}\n', "(line 2): questionId must be a string"),
    (load_aokvqa, "a.json", "{}", "expected a JSON list of A-OKVQA records"),
    (load_aokvqa, "a.json", json.dumps([_aokvqa_record(correct_choice_idx=4)]), "correct_choice_idx must be <= 3"),
    (load_aokvqa, "a.json", json.dumps([_aokvqa_record(choices="cab")]), "choices must be a list of strings"),
    (load_aokvqa, "a.json", json.dumps([_aokvqa_record(difficult_direct_answer="no")]), "must be true or false"),
    (load_aokvqa, "a.json", json.dumps([{"question_id": "x"}]), "(record 0): image_id is missing"),
    (read_aokvqa_predictions, "p.json", '{"x": "cab"}', "(question x): a prediction must be a JSON object"),
    (read_aokvqa_predictions, "p.json", '{"x": {"multiple_choice": 2}}', "multiple_choice must be a string"),
    (load_vcr, "v.jsonl", _vcr_line(question=["Is", [7], "happy", "?"]), "question: tag [7] names no detection"),
    (load_vcr, "v.jsonl", _vcr_line(answer_label=4), "answer_label must be <= 3"),
    (load_vcr, "v.jsonl", _vcr_line(answer_choices=[]), "answer_choices must be a non-empty list"),
    (load_vcr, "v.jsonl", _vcr_line(question=["Is", [], "?"]), "a token is a word or a non-empty list"),
    (load_vcr, "v.jsonl", _vcr_line() + "\n{broken\n", "(line 2): not valid JSON"),
    (load_vcr, "v.jsonl", _vcr_line() + "\n" + _vcr_line() + "\n", "(line 2, val-0): appears twice"),
    (read_vcr_predictions, "p.csv", "id,answer_0\nval-0,1\n", "no annot_id column"),
    (read_vcr_predictions, "p.csv", "annot_id,answer_0,answer_1\nval-0,0.5,high\n", "answer_1 must be a number"),
    (read_vcr_predictions, "p.csv", "annot_id,answer_0,answer_1\nval-0,0.5,nan\n", "must be a finite number"),
    (read_vcr_predictions, "p.csv", "annot_id,answer_0,answer_1\nval-0,0.5\n", "(line 2): has 2 fields, the header 3"),
    (read_vcr_predictions, "p.csv", "annot_id,answer_0,answer_1,rationale_conditioned_on_a0_0\nv,1,0,1\n",
     "rationale columns must be all"),
    (read_vcr_predictions, "p.csv", "annot_id,answer_0\nv,1\nv,0\n", "(line 3, v): appears twice"),
    (read_vcr_predictions, "p.csv", "", "is empty"),
]


@pytest.mark.parametrize("reader, name, text, fragment", BROKEN, ids=[f"{r.__name__}-{i}" for i, (r, *_ ) in enumerate(BROKEN)])
def test_a_broken_file_is_one_line_naming_the_file(tmp_path, reader, name, text, fragment):
    path = _write(tmp_path, name, text)
    with pytest.raises(InputFileError) as error:
        reader(path)
    message = str(error.value)
    assert fragment in message, message
    assert message.startswith(str(path)) and len(message.splitlines()) == 1


def test_a_broken_metadata_file_names_itself(tmp_path):
    images = tmp_path / "images" / "lsmdc_3015_CHARLIE_ST_CLOUD"
    images.mkdir(parents=True)
    for meta in (VCR / "images" / "lsmdc_3015_CHARLIE_ST_CLOUD").iterdir():
        (images / meta.name).write_text('{"boxes": [[1, 2, 3, 4]]}')
    with pytest.raises(InputFileError, match="has 1 boxes, \\[person3\\] of val-0 needs more"):
        load_vcr(VCR / "val.jsonl", images=tmp_path / "images")
    with pytest.raises(InputFileError, match="no such file"):
        load_vcr(VCR / "val.jsonl", images=tmp_path / "nowhere")


@pytest.mark.slow
@pytest.mark.parametrize("value, fragment", [("[" * 100_000 + "]" * 100_000, "nested too deeply"),
                                             ("9" * 5000, "a number too long to read")])
def test_json_lines_beyond_the_decoders_limits_are_one_line(tmp_path, value, fragment):
    from nablafol.data import read_details
    line = '{"questionId": "1", "annot_id": "v", "x": ' + value + "}\n"
    for reader, name in ((read_details, "d.jsonl"), (read_cric_predictions, "d.jsonl"), (load_vcr, "v.jsonl")):
        path = _write(tmp_path, name, line)
        with pytest.raises(InputFileError, match=fragment) as error:
            reader(path)
        assert len(str(error.value).splitlines()) == 1
