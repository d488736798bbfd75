"""Properties over random programs, random text and random mutations of real lines."""
import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
import pytest

from nablafol.dsl import Program, ProgramError, parse_program, program_from_semantic, validate_program
from nablafol.dsl.parser import _read_exactly
from nablafol.dsl.testing import program_lines, programs

REAL_LINES = [r["semanticStr"] for part in ("with_semantic", "semantic_str_only")
              for r in json.loads((Path(__file__).parent / "fixtures" / "gqa_real_sample.json")
                                  .read_text())[part].values()]
# Characters that matter to the grammar, and some that never appear in it.
SYNTAX_CHARACTERS = list(" ,|()[]->:_?01239asonotrelwhite") + ["\n", "\t", ";", "#", "é", "A"]


def outcome(read, text):
    """('ok', program) or ('error', message, line, column): what a reader makes of `text`."""
    try:
        return ("ok", read(text))
    except ProgramError as error:
        assert error.message and "\n" not in error.message
        return ("error", error.message, error.line, error.column)


@pytest.mark.slow
@given(programs())
def test_programs_round_trip_through_text(program):
    line = program.to_semantic_str()
    assert parse_program(line) == program
    assert _read_exactly(line) == program  # the cached path and the reference path agree


@pytest.mark.slow
@given(programs())
def test_programs_round_trip_through_the_semantic_list(program):
    steps = program.to_semantic()
    assert program_from_semantic(steps) == program
    assert program_from_semantic(json.loads(json.dumps(steps))) == program  # as read from a file


@pytest.mark.slow
@given(programs())
def test_drawn_programs_are_valid_and_well_formed(program):
    assert validate_program(program) is program
    assert isinstance(program, Program) and program.answer_step is program.steps[-1]
    assert all(0 <= d < i for i, step in enumerate(program) for d in step.dependencies)


@given(st.text(st.sampled_from(SYNTAX_CHARACTERS), max_size=60))
def test_random_text_is_read_or_refused_with_a_program_error(text):
    result = outcome(parse_program, text)
    assert result == outcome(_read_exactly, text)
    if result[0] == "ok":
        assert parse_program(result[1].to_semantic_str()) == result[1]


@given(st.text(max_size=40))
def test_any_unicode_text_is_read_or_refused_with_a_program_error(text):
    result = outcome(parse_program, text)  # any other exception type fails the test
    if result[0] == "ok":  # what is read is a real program: it writes back and reads again
        assert parse_program(result[1].to_semantic_str()) == result[1]
    else:
        assert result[3] is None or 1 <= result[3] <= len(text) + 1


@st.composite
def mutations(draw):
    """A real or drawn line with a few characters inserted, deleted or replaced."""
    line = draw(st.one_of(st.sampled_from(REAL_LINES), program_lines()))
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(line)))
        change = draw(st.sampled_from(["insert", "delete", "replace"]))
        character = draw(st.sampled_from(SYNTAX_CHARACTERS))
        if change == "insert":
            line = line[:position] + character + line[position:]
        elif change == "delete":
            line = line[:position] + line[position + 1:]
        else:
            line = line[:position] + character + line[position + 1:]
    return line


@pytest.mark.slow
@given(mutations())
def test_mutated_lines_are_read_or_refused_consistently(line):
    result = outcome(parse_program, line)
    assert result == outcome(_read_exactly, line)
    if result[0] == "error":
        _, _, error_line, column = result
        rows = line.split("\n")
        assert 1 <= error_line <= len(rows) and 1 <= column <= len(rows[error_line - 1]) + 1
    else:
        assert program_from_semantic(result[1].to_semantic()) == result[1]


_JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 9), st.text(st.sampled_from(SYNTAX_CHARACTERS), max_size=12)),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(st.text(max_size=3), children, max_size=3)),
    max_leaves=8)


@st.composite
def semantic_lists(draw):
    """Real steps, some of whose fields are replaced by arbitrary JSON values."""
    steps = json.loads(json.dumps(draw(programs()).to_semantic()))
    for _ in range(draw(st.integers(0, 3))):
        step = draw(st.sampled_from(steps))
        key = draw(st.sampled_from(["operation", "argument", "dependencies", "extra"]))
        if draw(st.booleans()):
            step[key] = draw(_JSON_VALUES)
        else:
            step.pop(key, None)
    return draw(st.one_of(st.just(steps), _JSON_VALUES))


@pytest.mark.slow
@given(semantic_lists())
def test_any_semantic_value_is_read_or_refused_with_a_program_error(steps):
    try:
        program = program_from_semantic(steps)
    except ProgramError as error:
        assert error.message and (error.step is None or 0 <= error.step < len(steps))
    else:
        assert program_from_semantic(program.to_semantic()) == program
        assert parse_program(program.to_semantic_str()) == program


@pytest.mark.slow
@given(programs())
def test_a_template_read_without_ids_is_the_line_read_with_its_ids_dropped(program):
    from dataclasses import replace

    from nablafol.dsl import id_template, parse_template
    line = program.to_semantic_str()
    bare = parse_template(id_template(line), without_ids=True)
    dropped = tuple(replace(s, argument=replace(s.argument, ids=None)) if hasattr(s.argument, "ids") else s
                    for s in program.steps)
    assert bare.steps == dropped and bare == parse_program(line).without_ids() == program.without_ids()
