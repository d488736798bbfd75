"""CRIC's function programs read from its JSON: the stack layout's dependencies, spellings,
and one clear ProgramError per malformed program."""
import json
import pickle
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nablafol.dsl import ProgramError
from nablafol.dsl.cric import CRIC_FUNCTIONS, CricKind, canonical_function, cric_program_from_json

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cric" / "val_questions.json"


def step(function, *text, output=None):
    out = {"function": function, "text_input": list(text)}
    if output is not None:
        out["output"] = output
    return out


def test_every_program_of_the_fixture_reads_with_its_dependencies():
    programs = {q["question_id"]: cric_program_from_json(q["program"]) for q in json.loads(FIXTURE.read_text())}
    and_question = programs["1006"]  # two branches, each from Initial, joined by And
    assert [s.dependencies for s in and_question] == [(), (0,), (1,), (), (3,), (2, 4), (5,)]
    assert str(and_question) == ("Initial() -> Find(table) -> Relate Reverse(on) -> Initial() -> "
                                 "Find KG(CapableOf, cut food) -> And() -> Recognition(name)")
    assert [p.is_binary for p in programs.values()] == [False, False, True, True, True, False, False]
    assert programs["1001"][3].output == ("1058498",)


def test_the_stack_layout_gives_each_step_the_latest_unused_results():
    program = cric_program_from_json([step("Initial"), step("Find", "dog"), step("Verify"),
                                      step("Initial"), step("Find", "cat"), step("Verify", "black"), step("And")])
    assert [s.dependencies for s in program] == [(), (0,), (1,), (), (3,), (4,), (2, 5)]
    assert program.kinds[-1] is CricKind.BOOLEAN and program.is_binary


@pytest.mark.parametrize("written, canonical", [
    ("Find_KG", "Find KG"), ("find kg reverse", "Find KG Reverse"), ("Relate_Reverse", "Relate Reverse"),
    ("Find_Hypernym", "Find Hyponym"), ("Find Hypernym", "Find Hyponym"), ("  recognition ", "Recognition"),
    ("AND", "And"), ("Select", None), ("", None)])
def test_function_spellings(written, canonical):
    assert canonical_function(written) == canonical


@given(st.sampled_from(CRIC_FUNCTIONS))
def test_every_canonical_name_reads_as_itself(name):
    assert canonical_function(name) == name
    assert canonical_function(name.upper().replace(" ", "_")) == name


@pytest.mark.parametrize("steps, fragment", [
    ([], "non-empty list"),
    ("not json", "JSON list"),
    ([["Initial"]], "step 0: a step is an object"),
    ([step("Initial"), {"text_input": []}], "step 1: 'function' must be a string"),
    ([step("Initial"), step("Filter", "red"), step("Verify")], "step 1: 'Filter' is not a CRIC function"),
    ([step("Initial", "all"), step("Verify")], "step 0 'Initial': text_input must be nothing, found 1"),
    ([step("Initial"), step("Find"), step("Verify")], "step 1 'Find': text_input must be one or more"),
    ([step("Initial"), step("Relate", "on", "near"), step("Verify")], "must be [PREDICATE], found 2"),
    ([step("Initial"), step("Find KG", "CapableOf", "lift", "food"), step("Verify")], "found 3 item(s)"),
    ([step("Initial"), {"function": "Find", "text_input": ["cat", 3]}, step("Verify")], "list of strings"),
    ([step("Initial"), step("Find", "  "), step("Verify")], "empty string"),
    ([step("Initial"), step("Verify", output=[1.5])], "object ids"),
    ([step("Initial"), step("Verify", output="1")], "output must be a list"),
    ([step("Find", "cat"), step("Verify")], "step 0 'Find': has no input"),
    ([step("Initial"), step("And"), step("Verify")], "step 1 'And': needs two earlier results, the layout has 1"),
    ([step("Initial"), step("Verify"), step("Initial"), step("And"), step("Verify")],
     "combines two object sets or two yes/no results, found yes/no and objects"),
    ([step("Initial"), step("Verify"), step("Verify")], "step 2 'Verify': needs objects as input, step 1 gives yes/no"),
    ([step("Initial"), step("Find", "cat")], "the last step gives objects"),
    ([step("Initial"), step("Verify"), step("Initial"), step("Verify")], "leaves 2 results"),
    ([step("Initial"), step("Recognition", "name"), step("Initial"), step("Recognition", "color"), step("And")],
     "found answer and answer"),
])
def test_malformed_programs_are_one_clear_error(steps, fragment):
    with pytest.raises(ProgramError) as error:
        cric_program_from_json(steps)
    assert fragment in str(error.value)
    assert len(str(error.value).splitlines()) == 1
    again = pickle.loads(pickle.dumps(error.value))  # crosses worker processes intact
    assert str(again) == str(error.value)
