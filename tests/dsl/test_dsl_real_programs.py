"""Real GQA programs (fixtures/gqa_real_sample.json, source named there; and the spec's lines)."""
import json
from pathlib import Path

import pytest

from nablafol.dsl import Objects, parse_program, program_from_semantic, validate_program

SAMPLE = json.loads((Path(__file__).parent / "fixtures" / "gqa_real_sample.json").read_text())
WITH_SEMANTIC = SAMPLE["with_semantic"]
ALL_LINES = [r["semanticStr"] for r in WITH_SEMANTIC.values()] + \
    [r["semanticStr"] for r in SAMPLE["semantic_str_only"].values()]

# The ten real lines of /work/shared/spec/gqa-programs.md, quirks included.
SPEC_LINES = [
    "select: bird (329774)->query: name [0]",
    "select: wall (722332)->filter color: white [0]->relate: _,on,s (722335) [1]->query: name [2]",
    "select: scene->choose location: indoors|outdoors [0]",
    "select: device (418896)->filter: not(on) [0]->query: name [1]",
    "select: man (1927215)->verify rel: horse,riding,o (-) [0]",
    "select: surfboard (429134)->choose rel: surfer,to the right of|to the left of,s (429131) [0]",
    "select: person (2675266,1804573,1900358,2400959,1900360)->same: gender [0]",
    "select: cap (2108218)->select: sign (2393744) ->different color:  [0, 1]",
    "select: vegetables (-)->exist: ? [0]->select: nuts (-) ->exist: ? [2]->or:  [1, 3]",
    "select: pants (1796037)->relate: person,wearing,s (2527953) [0]->query: name [1]",
]


def test_the_sample_is_big_and_varied():
    fields = {step["operation"] for r in WITH_SEMANTIC.values() for step in r["semantic"]}
    assert len(WITH_SEMANTIC) >= 60 and len(ALL_LINES) >= 90
    assert {"select", "relate", "query", "exist", "or", "and", "filter", "filter color", "verify rel",
            "choose rel", "choose color", "same color", "different color", "verify color"} <= fields


@pytest.mark.slow
@pytest.mark.parametrize("question_id", sorted(WITH_SEMANTIC))
def test_both_forms_of_a_real_question_give_the_same_program(question_id):
    record = WITH_SEMANTIC[question_id]
    from_text = parse_program(record["semanticStr"])
    from_list = program_from_semantic(record["semantic"])
    assert from_text == from_list
    assert len(from_text) == len(record["semantic"])


@pytest.mark.slow
@pytest.mark.parametrize("question_id", sorted(WITH_SEMANTIC))
def test_real_programs_are_written_back_verbatim(question_id):
    record = WITH_SEMANTIC[question_id]
    program = parse_program(record["semanticStr"])
    assert program.to_semantic_str() == record["semanticStr"]
    assert program.to_semantic() == record["semantic"]


@pytest.mark.parametrize("line", SPEC_LINES + [r["semanticStr"] for r in SAMPLE["semantic_str_only"].values()])
def test_real_lines_read_validate_and_round_trip(line):
    program = parse_program(line)
    assert validate_program(program) is program
    assert program.to_semantic_str() == line
    assert program_from_semantic(program.to_semantic()) == program


def test_binary_questions_are_the_yes_no_ones():
    for record in list(WITH_SEMANTIC.values()) + list(SAMPLE["semantic_str_only"].values()):
        program = parse_program(record["semanticStr"])
        assert program.is_binary == (record["answer"] in ("yes", "no")), record["question"]


def test_object_ids_are_kept_for_grounding():
    program = parse_program(SPEC_LINES[6])
    assert program.steps[0].argument == Objects("person", ("2675266", "1804573", "1900358", "2400959", "1900360"))
    assert parse_program(SPEC_LINES[8]).steps[2].argument == Objects("nuts", ())
