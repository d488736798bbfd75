"""Real GQA formatting is accepted (issue 16): spaces after commas, `(-)`, spaces before `->`
and after a step. Anything else is still refused with a line, a column and a caret
(test_dsl_errors.py)."""
import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nablafol.dsl import parse_program, program_from_semantic
from nablafol.dsl.parser import _read_exactly

REAL = Path(__file__).parents[1] / "fixtures" / "real_gqa"


@pytest.mark.parametrize("written, canonical", [
    ("select: person (2533568)->verify rel: umbrella, standing under, o (2028054) [0]",
     "select: person (2533568)->verify rel: umbrella,standing under,o (2028054) [0]"),
    ("select: person (2675266, 1804573)->same: gender [0]", "select: person (2675266,1804573)->same: gender [0]"),
    ("select: nuts (-)  ->exist: ?   [0]  ", "select: nuts (-)->exist: ? [0]"),
    ("select: man (1)->choose rel: surfer, to the left of|to the right of, s (-) [0] ",
     "select: man (1)->choose rel: surfer,to the left of|to the right of,s (-) [0]"),
    ("select: cap (1)->select: sign (2)   ->different color:   [0, 1]   ",
     "select: cap (1)->select: sign (2) ->different color:  [0, 1]"),
])
def test_real_formatting_reads_as_the_canonical_line(written, canonical):
    assert parse_program(written) == parse_program(canonical) == _read_exactly(written)


def test_the_real_argument_with_spaces_after_commas_reads_from_both_forms():
    record = json.loads((REAL / "domiknows_train_questions.json").read_text())["15192363"]
    assert program_from_semantic(record["semantic"]) == parse_program(record["semanticStr"])
    relation = parse_program(record["semanticStr"]).steps[1].argument
    assert (relation.name, relation.relations, relation.role) == ("umbrella", ("standing under",), "o")


@pytest.mark.parametrize("name", sorted(p.name for p in REAL.glob("*questions*.json")))
def test_every_real_program_of_the_fixtures_reads_from_both_forms(name):
    for qid, record in json.loads((REAL / name).read_text()).items():
        assert program_from_semantic(record["semantic"]) == parse_program(record["semanticStr"]), qid


def _loosen(line: str, where: list[int]) -> str:
    """``line`` with one space added after chosen relation commas and before chosen arrows."""
    spots = [m.start() + 1 for m in re.finditer(r"(?<=[a-z_]),(?=[a-z])", line)]
    spots += [m.start() for m in re.finditer(r"->", line)]
    chosen = {spots[i % len(spots)] for i in where} if spots else set()
    return "".join((" " if i in chosen else "") + c for i, c in enumerate(line))


@pytest.mark.slow
@given(st.lists(st.integers(0, 50), max_size=6), st.sampled_from([
    "select: wall (722332)->filter color: white [0]->relate: _,on,s (722335) [1]->query: name [2]",
    "select: surfboard (429134)->choose rel: surfer,to the right of|to the left of,s (429131) [0]",
    "select: man (1927215)->verify rel: horse,riding,o (-) [0]",
    "select: vegetables (-)->exist: ? [0]->select: nuts (-) ->exist: ? [2]->or:  [1, 3]"]))
def test_spaces_after_commas_and_before_arrows_never_change_the_program(where, line):
    loose = _loosen(line, where)
    assert parse_program(loose) == parse_program(line) == _read_exactly(loose)
