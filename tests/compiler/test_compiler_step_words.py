"""A program's steps read from its text (compiler/step_words.py): the same words, and so the same
skeleton key, as the parsed program; a line the parser refuses is never filled in from its text."""
import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
import pytest

from nablafol import dsl
from nablafol.compiler import CompileError, Compiler
from nablafol.compiler.step_words import words_of_program, words_of_template
from nablafol.dsl import ast as A

from test_compiler_crisp import ONTOLOGY, gqa_programs
from test_compiler_skeletons import FIXTURE, REAL_SAMPLE, STRUCTURAL
from tiers import examples

KEYS = Compiler(ONTOLOGY)


def key_of_text(template: str, compiler: Compiler = KEYS):
    steps = words_of_template(template)
    return None if steps is None else compiler._skeletons.reading_of(steps)


def key_of_program(program: A.Program, compiler: Compiler = KEYS):
    return compiler._skeletons.reading(program)


@st.composite
def written(draw, program: A.Program) -> str:
    """``program`` as GQA writes it, with what real files also write: ids on selects and relates,
    a space after a relation's commas, spaces at the end of a step and before its dependencies."""
    pieces = []
    for step in program.steps:
        arg = step.argument
        if isinstance(arg, A.Relation):
            comma = draw(st.sampled_from([",", ", "]))
            text = f"{arg.name}{comma}{'|'.join(arg.relations)}{comma}{arg.role}"
        else:
            text = str(arg)
        if isinstance(arg, (A.Objects, A.Relation)) and draw(st.booleans()):
            text += draw(st.sampled_from([" (-)", " (12)", " (3,45)", " (3, 45)"]))
        piece = f"{step.field}: {text}"
        if step.dependencies:
            piece += " " * draw(st.integers(1, 2)) + "[" + ", ".join(map(str, step.dependencies)) + "]"
        pieces.append(piece + " " * draw(st.integers(0, 1)))
    return "->".join(pieces)


@settings(max_examples=examples(300), deadline=None)
@given(st.data())
def test_a_line_read_from_its_text_gives_the_words_and_key_of_the_parsed_line(data):
    program = data.draw(gqa_programs())
    template = dsl.id_template(data.draw(written(program)))
    parsed = dsl.parse_template(template, without_ids=True)
    assert parsed == program.without_ids()
    steps = words_of_template(template)
    assert steps is not None and steps == words_of_program(parsed)
    assert key_of_text(template) == key_of_program(parsed)


def real_lines() -> list:
    lines = [r["semanticStr"] for part in ("with_semantic", "semantic_str_only")
             for r in json.loads(FIXTURE.read_text())[part].values()]
    if REAL_SAMPLE.exists():
        lines += [r["semanticStr"] for r in json.loads(REAL_SAMPLE.read_text()).values()]
    return lines


def test_real_gqa_lines_read_from_their_text_give_the_words_and_key_of_the_parsed_lines():
    gqa, read = Compiler(), 0
    for line in real_lines():
        template = dsl.id_template(line)
        steps = words_of_template(template)
        if steps is None:
            continue
        read += 1
        parsed = dsl.parse_template(template, without_ids=True)
        assert steps == words_of_program(parsed)
        try:
            expected = key_of_program(parsed, gqa)
        except CompileError as refused:
            with pytest.raises(CompileError, match=re.escape(refused.message)):
                key_of_text(template, gqa)
            continue
        assert key_of_text(template, gqa) == expected
    assert read >= 0.95 * len(real_lines())  # the strict form is the form real files write


@pytest.mark.parametrize("word", sorted(STRUCTURAL))
def test_lines_that_differ_in_a_structural_word_differ_in_their_key_read_from_text(word):
    one, other = (dsl.id_template(line) for line in STRUCTURAL[word])
    assert key_of_text(one) == key_of_program(dsl.parse_program(one))
    assert key_of_text(one) != key_of_text(other)


# text each mutation makes of a well-formed line: what the parser refuses, or reads otherwise
NOISE = list(" ,|()[]->:_?!0s") + ["not(", " (-)", " (1)", "  ", "->", ": "]


@st.composite
def mutated(draw, line: str) -> str:
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(line)))
        cut = draw(st.integers(0, 2))
        line = line[:at] + draw(st.sampled_from(NOISE + [""])) + line[at + cut:]
    return line


def outcome(compile_line):
    try:
        return compile_line()
    except (CompileError, dsl.ProgramError) as e:
        return type(e), str(e)


@settings(max_examples=examples(400), deadline=None)
@given(st.data())
def test_a_line_of_a_met_key_compiles_as_parsed_alone_or_is_refused_with_the_same_line(data):
    # the compiler has met the well-formed line's key; a line made of it by a few edits is
    # filled in from its text only when it is the program the parser reads
    program = data.draw(gqa_programs())
    line = data.draw(written(program))
    compiler = Compiler(ONTOLOGY)
    compiler.compile_text(line)
    edited = data.draw(mutated(line))
    got = outcome(lambda: compiler.compile_text(edited))
    alone = outcome(lambda: Compiler(ONTOLOGY, by_skeleton=False).compile_text(edited))
    if isinstance(alone, tuple):
        assert got == alone and "\n" not in alone[1].splitlines()[0]
    else:
        assert got.program == alone.program and got.program.labels == alone.program.labels
        assert got.source == alone.source
    template = dsl.id_template(edited)
    steps = words_of_template(template)
    if steps is not None:  # read from text: the parser reads the same words, or refuses the structure
        try:
            assert steps == words_of_program(dsl.parse_template(template, without_ids=True))
        except dsl.ProgramError:
            assert isinstance(alone, tuple)


MET = "select: chair (1)->filter color: red [0]->relate: table,on,s (2) [1]->exist: ? [2]"


@pytest.mark.parametrize("line", [
    "select: chair (1)->filter color: red (3) [0]->relate: table,on,s (2) [1]->exist: ? [2]",  # ids on a filter
    "select: chair (1)->filter color: red [0]->relate: table,on,s (2) [1]->exist: ? [3]",  # a dependency forward
    "select: chair (1)->filter color: red [0]->relate: table,on,s (2) [0]->exist: ? [2]",  # a step never used
    "select: chair (1)->filter color red [0]->relate: table,on,s (2) [1]->exist: ? [2]",  # no colon
    "select: chair (1)->filter color: red [0]->relate: table,on,x (2) [1]->exist: ? [2]",  # a role neither s nor o
    "select: chair (1)->filter color: red [0]->relate: table,on,s (2) [1]->exist: [2]",  # exist without ?
    "select: chair (1)->filter: red| [0]->relate: table,on,s (2) [1]->exist: ? [2]",
    "select: chair (1)->filter color: red [0]->relate: table,on,s (2) [1]->exist: ? [2]->",
    "select color: chair (1)->filter color: red [0]->relate: table,on,s (2) [1]->exist: ? [2]",  # a typed select
    "select: chair (1)->filter color: red [0]->relate: table,on,s (2) [1]->exist color: ? [2]",
    "select: ?->filter color: red [0]->relate: table,on,s (2) [1]->exist: ? [2]",  # forms their operations do not take
    "select:  (1)->filter color: red [0]->relate: table,on,s (2) [1]->exist: ? [2]",
    "select: chair (1)->filter color: ? [0]->relate: table,on,s (2) [1]->exist: ? [2]",
    "select: chair (1)->filter color: red|blue [0]->relate: table,on,s (2) [1]->exist: ? [2]",
    "select: chair (1)->filter color: red [0]->relate: table [1]->exist: ? [2]",
    "select: chair  (1)->filter color: red [0]->relate: table,on,s (2) [1]->exist: ? [2]",
    "select: chair (1)->filter hposition: red [0]->relate: table,on,s (2) [1]->exist: ? [2]",  # a word refused
])
def test_a_malformed_line_of_a_met_key_gives_the_one_line_error_it_gives_alone(line):
    compiler = Compiler()
    compiler.compile_text(MET)
    with pytest.raises((CompileError, dsl.ProgramError)) as met:
        compiler.compile_text(line)
    with pytest.raises((CompileError, dsl.ProgramError)) as alone:
        Compiler(by_skeleton=False).compile_text(line)
    assert type(met.value) is type(alone.value) and str(met.value) == str(alone.value)
    assert "Traceback" not in str(met.value)


def test_a_line_of_a_met_key_is_neither_parsed_nor_translated(monkeypatch):
    compiler = Compiler()
    compiler.compile_text(MET)
    parsed, translated = [], []
    import nablafol.dsl.parser as parser
    monkeypatch.setattr(parser, "_line_recipe", lambda template: parsed.append(template))
    monkeypatch.setattr(compiler._skeletons, "_translate", lambda p: translated.append(p))
    line = "select: dog (7)->filter color: blue [0]->relate: cat,near,s (8) [1]->exist: ? [2]"
    compiled = compiler.compile_text(line)
    hash(compiled)  # a compiled question is hashed by its program: its source is not parsed for it
    assert parsed == [] and translated == []
    assert [p.name for p in compiled.program.predicates()] == ["dog", "blue", "near", "cat"]
    monkeypatch.undo()
    assert compiled.source == dsl.parse_program(line).without_ids()  # parsed when asked for
    assert compiled.program == Compiler(by_skeleton=False).compile_text(line).program
