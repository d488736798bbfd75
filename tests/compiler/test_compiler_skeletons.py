"""Compiling by skeleton (compiler/skeletons.py): a program filled into another program's
skeleton is the program its translation alone makes, and answers as it does; programs that differ
in a word the structure depends on never share a key."""
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest
import torch

from nablafol import dsl
from nablafol.compiler import CompileError, Compiler
from nablafol.compiler.translate import Translator
from nablafol.dsl import ast as A
from nablafol.engine import Engine
from nablafol.oracle import TableOracle

from test_compiler_crisp import NAMES, ONTOLOGY, RELS, VALUES, gqa_programs, tables_for, worlds
from tiers import examples

REAL_SAMPLE = Path("/work/shared/real-gqa-sample/train_balanced_questions.sample.json")
FIXTURE = Path(__file__).parent.parent / "dsl" / "fixtures" / "gqa_real_sample.json"


def translated_alone(compiler: Compiler, program: A.Program):
    """The program a fresh translator makes of ``program`` (no skeleton), or the error it raises."""
    try:
        return Translator(compiler.concepts).program(program)
    except CompileError as e:
        return e


def through_skeletons(compiler: Compiler, program: A.Program):
    try:
        return compiler._skeletons.program(program)
    except CompileError as e:
        return e


def assert_same_program(got, expected):
    if isinstance(expected, CompileError):
        assert isinstance(got, CompileError) and str(got) == str(expected)
        return
    assert got == expected and got.labels == expected.labels and hash(got) == hash(expected)
    # what planning and the engine read of it, as a walk of the translated program makes it
    assert tuple(got.nodes()) == tuple(expected.nodes())
    assert got.predicates() == expected.predicates() and got.shape() == expected.shape()
    assert got.focus == expected.focus


@st.composite
def renamed(draw, program: A.Program) -> A.Program:
    """``program`` with some of its slot words (selected and related names, filtered and verified
    values, single relations) drawn again: often a program of the same key."""
    steps = []
    for s in program.steps:
        arg = s.argument
        if isinstance(arg, A.Objects) and draw(st.booleans()):
            arg = A.Objects(draw(st.sampled_from(NAMES)))
        elif isinstance(arg, A.Value) and draw(st.booleans()):
            values = VALUES.get(s.type) or sum(VALUES.values(), [])
            arg = A.Value(draw(st.sampled_from(values)), arg.negated)
        elif isinstance(arg, A.Relation) and s.operation != "choose" and draw(st.booleans()):
            name = arg.name if arg.any_name else draw(st.sampled_from(NAMES))
            arg = A.Relation(name, (draw(st.sampled_from(RELS)),), arg.role)
        steps.append(A.Step(s.operation, s.type, arg, s.dependencies))
    return A.Program(tuple(steps))


@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_a_program_filled_into_a_skeleton_is_the_program_translated_alone(data):
    compiler = Compiler(ONTOLOGY, by_skeleton=True)
    first = data.draw(gqa_programs())
    programs = [first] + [data.draw(renamed(first)) for _ in range(3)] + [data.draw(gqa_programs())]
    for program in programs:
        assert_same_program(through_skeletons(compiler, program), translated_alone(compiler, program))


@pytest.mark.slow
@settings(max_examples=examples(60), deadline=None)
@given(st.data(), worlds())
def test_programs_filled_into_one_skeleton_answer_as_each_compiled_and_planned_alone(data, world):
    compiler, engine = Compiler(ONTOLOGY, by_skeleton=True), Engine()  # one of each: skeletons and shape plans shared
    first = data.draw(gqa_programs())
    for program in [first] + [data.draw(renamed(first)) for _ in range(3)]:
        shared = through_skeletons(compiler, program)
        alone = translated_alone(Compiler(ONTOLOGY), program)
        if isinstance(alone, CompileError):
            continue
        oracle = TableOracle([{p: torch.as_tensor(t) for p, t in tables_for(alone, world).items()}])
        together = engine([shared], oracle)
        apart = Engine()([alone], oracle)
        assert torch.equal(together.probs(), apart.probs()) and torch.equal(together.focus, apart.focus)
        assert torch.equal(together.exact, apart.exact)


def real_programs() -> list:
    lines = [r["semanticStr"] for part in ("with_semantic", "semantic_str_only")
             for r in json.loads(FIXTURE.read_text())[part].values()]
    if REAL_SAMPLE.exists():
        lines += [r["semanticStr"] for r in json.loads(REAL_SAMPLE.read_text()).values()]
    return [dsl.parse_program(line).without_ids() for line in lines]


def test_real_gqa_programs_filled_into_skeletons_are_the_programs_translated_alone():
    compiler = Compiler(by_skeleton=True)
    programs = real_programs()
    # the ones of one key are filled into the skeleton of the first: each compiled twice, once a key
    # met before and once after the others
    for program in programs + programs[::-1]:
        assert_same_program(through_skeletons(compiler, program), translated_alone(compiler, program))
    info = compiler._skeletons._skeleton.cache_info()
    assert info.hits > 0 and info.currsize < len(programs)


KEYS = Compiler(ONTOLOGY, by_skeleton=True)


def key(program: A.Program, compiler: Compiler = KEYS):
    reading = compiler._skeletons.reading(program)
    first: dict = {}
    return reading.key, tuple(first.setdefault(p, k) for k, p in enumerate(reading.slots))


def parsed(line: str) -> A.Program:
    return dsl.parse_program(line)


# pairs that differ in one structural word: (line, the same line with that word changed)
STRUCTURAL = {
    "negation": ("select: chair->filter color: red [0]->exist: ? [1]",
                 "select: chair->filter color: not(red) [0]->exist: ? [1]"),
    "scene": ("select: scene->query: color [0]", "select: chair->query: color [0]"),
    "anything": ("select: chair->relate: _,on,s [0]->exist: ? [1]", "select: chair->relate: table,on,s [0]->exist: ? [1]"),
    # as many slots in both: only the words `scene` and `_` tell them apart
    "scene and anything": ("select: chair->relate: _,on,s [0]->exist: ? [1]",
                           "select: scene->relate: table,on,s [0]->exist: ? [1]"),
    "role": ("select: chair->relate: table,on,s [0]->exist: ? [1]", "select: chair->relate: table,on,o [0]->exist: ? [1]"),
    "query type": ("select: chair->query: color [0]", "select: chair->query: material [0]"),
    "query source": ("select: furniture->query: name [0]", "select: animal->query: name [0]"),
    "choose values": ("select: chair->choose color: red|blue [0]", "select: chair->choose color: red|white [0]"),
    "left/right": ("select: chair->choose rel: table,to the left of|to the right of,s [0]",
                   "select: chair->choose rel: table,to the right of|to the left of,s [0]"),
    "compared names": ("select: chair->select: table->choose larger:  [0, 1]",
                       "select: chair->select: dog->choose larger:  [0, 1]"),
    "same type": ("select: chair->same: color [0]", "select: chair->same: material [0]"),
    "equal slots": ("select: chair->relate: table,on,s [0]->exist: ? [1]",
                    "select: chair->relate: chair,on,s [0]->exist: ? [1]"),
    "dependencies": ("select: chair->exist: ? [0]->select: table->exist: ? [2]->and:  [1, 3]",
                     "select: chair->exist: ? [0]->select: table->exist: ? [2]->and:  [3, 1]"),
}


@pytest.mark.parametrize("word", sorted(STRUCTURAL))
def test_programs_that_differ_in_a_structural_word_never_share_a_key(word):
    one, other = (parsed(line) for line in STRUCTURAL[word])
    assert key(one) != key(other)


@pytest.mark.parametrize("line, again", [
    ("select: chair->filter color: red [0]->exist: ? [1]", "select: dog->filter color: blue [0]->exist: ? [1]"),
    ("select: chair->relate: table,on,s [0]->query: color [1]", "select: cat->relate: man,near,s [0]->query: color [1]"),
    ("select: chair->verify color: red [0]", "select: woman->verify size: small [0]"),
])
def test_programs_that_differ_in_slot_words_only_share_a_key(line, again):
    assert key(parsed(line)) == key(parsed(again))


def test_a_slot_equal_to_a_constant_of_the_skeleton_is_translated_alone():
    # `red` filtered and offered: one predicate, where the skeleton of `blue` filtered has two
    compiler = Compiler(ONTOLOGY, by_skeleton=True)
    apart = parsed("select: chair->filter color: blue [0]->choose color: red|white [1]").without_ids()
    merged = parsed("select: chair->filter color: red [0]->choose color: red|white [1]").without_ids()
    assert key(apart, compiler) == key(merged, compiler)
    assert_same_program(through_skeletons(compiler, apart), translated_alone(compiler, apart))
    assert_same_program(through_skeletons(compiler, merged), translated_alone(compiler, merged))
    assert len(through_skeletons(compiler, merged).predicates()) == len(through_skeletons(compiler, apart).predicates()) - 1


def test_a_word_the_vocabulary_refuses_is_the_translators_error_naming_its_step():
    compiler = Compiler(by_skeleton=True)
    good = parsed("select: chair->filter hposition: left [0]->exist: ? [1]").without_ids()
    bad = parsed("select: chair->filter hposition: red [0]->exist: ? [1]").without_ids()
    compiler.compile(good)
    with pytest.raises(CompileError) as refused:
        compiler.compile(bad)
    assert refused.value.step == 1 and str(refused.value) == str(translated_alone(compiler, bad))


def test_a_compiler_compiles_by_skeleton_unless_told_not_to_and_to_the_same_programs():
    line = parsed("select: chair->relate: table,on,s [0]->query: color [1]")
    assert Compiler(ONTOLOGY, by_skeleton=False)._skeletons is None and Compiler(ONTOLOGY)._skeletons is not None
    assert Compiler(ONTOLOGY, by_skeleton=False).compile(line) == Compiler(ONTOLOGY).compile(line)


def test_compiling_a_new_program_of_a_known_key_does_not_translate(monkeypatch):
    compiler = Compiler(ONTOLOGY, by_skeleton=True)
    compiler.compile(parsed("select: chair->filter color: red [0]->exist: ? [1]"))
    translated = []
    monkeypatch.setattr(compiler._skeletons, "_translate", lambda p: translated.append(p))
    program = compiler.compile(parsed("select: dog->filter color: blue [0]->exist: ? [1]")).program
    assert translated == [] and np.array_equal([p.name for p in program.predicates()], ["dog", "blue"])


def nodes_counted(patch) -> list:
    """Every node (and relate atom) made from now on, appended as its class's name."""
    from nablafol import ir
    made: list = []
    for cls in (ir.Node, ir.Atom):
        check = cls.__post_init__

        def counted(self, check=check):
            made.append(type(self).__name__)
            check(self)
        patch.setattr(cls, "__post_init__", counted)
    return made


def answered(engine: Engine, program, oracle) -> tuple:
    answers = engine([program], oracle)
    return answers.probs(), answers.focus


@settings(max_examples=examples(10), deadline=None)
@given(worlds())
def test_a_filled_program_is_compiled_planned_and_answered_without_making_a_node(world):
    from nablafol.ir import FilledProgram
    compiler, engine = Compiler(ONTOLOGY), Engine()
    first = "select: chair->filter color: red [0]->relate: table,on,s [1]->query: material [2]"
    again = "select: dog->filter color: blue [0]->relate: man,near,s [1]->query: material [2]"
    skeleton = compiler.compile_text(first).program
    answered(engine, skeleton, TableOracle([{p: torch.as_tensor(t) for p, t in tables_for(skeleton, world).items()}]))
    alone = Compiler(ONTOLOGY, by_skeleton=False).compile_text(again).program
    oracle = TableOracle([{p: torch.as_tensor(t) for p, t in tables_for(alone, world).items()}])
    with pytest.MonkeyPatch.context() as patch:
        made = nodes_counted(patch)
        program = compiler.compile_text(again).program  # read from its text and filled in
        got = answered(engine, program, oracle)
        assert type(program) is FilledProgram and made == []
        assert program == alone and program.n_candidates == alone.n_candidates
        nodes = tuple(program.nodes())  # asked for: made now, and counted
        assert made and nodes == tuple(alone.nodes()) and program.focus == alone.focus
    expected = answered(Engine(), alone, oracle)
    assert all(torch.equal(g, e) for g, e in zip(got, expected))


@settings(max_examples=examples(60), deadline=None)
@given(st.data(), worlds())
def test_programs_filled_into_a_planned_skeleton_make_no_node_and_answer_as_translated_alone(data, world):
    from nablafol.ir import FilledProgram
    compiler, engine = Compiler(ONTOLOGY, by_skeleton=True), Engine()
    first = data.draw(gqa_programs())
    skeleton = through_skeletons(compiler, first)
    if isinstance(skeleton, CompileError):
        return
    answered(engine, skeleton, TableOracle([{p: torch.as_tensor(t) for p, t in tables_for(skeleton, world).items()}]))
    for program in [data.draw(renamed(first)) for _ in range(3)]:
        alone = translated_alone(Compiler(ONTOLOGY), program)
        if isinstance(alone, CompileError):
            continue
        oracle = TableOracle([{p: torch.as_tensor(t) for p, t in tables_for(alone, world).items()}])
        with pytest.MonkeyPatch.context() as patch:
            made = nodes_counted(patch)
            shared = through_skeletons(compiler, program)
            got = answered(engine, shared, oracle)
            if type(shared) is FilledProgram:
                assert made == []
        expected = answered(Engine(), alone, oracle)
        assert all(torch.equal(g, e) for g, e in zip(got, expected))
        assert shared == alone and tuple(shared.nodes()) == tuple(alone.nodes())
