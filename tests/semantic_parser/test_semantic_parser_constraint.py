"""Constrained decoding: every program decoded parses, and every valid program can be decoded.

Soundness is checked against the dsl (`parse_program` is the judge) over random networks,
random questions and random walks through the automaton; completeness over hypothesis-drawn
programs of every operation and the fixtures' real GQA lines; the structure planner against
a brute-force search over concrete programs.
"""
import itertools
import json
import math
from pathlib import Path

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples
import pytest

from nablafol.dsl import Kind, parse_program
from nablafol.dsl.testing import programs
from nablafol.semantic_parser.constraint import DecodingSpec, ProgramAutomaton, StructurePlanner
from nablafol.semantic_parser.matching import same_program
from nablafol.semantic_parser.network import NetworkConfig, ParserNetwork
from nablafol.semantic_parser.reader import PAD_WORD, UNKNOWN_WORD, SemanticParser
from nablafol.semantic_parser.signatures import form_of, step_signatures
from nablafol.semantic_parser.units import ProgramUnits, program_units

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"


def fixture_programs():
    lines = []
    for path in [FIXTURES / "val_balanced_questions.json", FIXTURES / "every_operation" / "questions.json",
                 *sorted((FIXTURES / "train_all_questions").glob("*.json"))]:
        lines += [q["semanticStr"] for q in json.loads(path.read_text()).values() if "semanticStr" in q]
    return [parse_program(line) for line in lines]


FIELDS = sorted({s.field for p in fixture_programs() for s in p.steps})


def phrases_of(program):
    """(the program's words, its longest phrase in words)."""
    words, run, longest = set(), 0, 1
    for unit in program_units(program):
        if unit.startswith("word:"):
            words.add(unit[5:])
            run += 1
            longest = max(longest, run)
        else:
            run = 0
    return words, longest


def decode_units(program, spec):
    """Feed ``program``'s units to a fresh automaton, checking each is allowed; returns its text."""
    automaton = ProgramAutomaton(spec, question_length=0)
    for name in program_units(program):
        unit = spec.units.id(name)
        allowed, _ = automaton.allowed()
        assert unit in allowed, f"{name} not allowed after {automaton.text()!r} (program {program.to_semantic_str()})"
        automaton.advance(unit)
    assert automaton.done
    return automaton.text()


def spec_for(program_list):
    heads = sorted({s.field for p in program_list for s in p.steps})
    words, longest = set(), 1
    for p in program_list:
        w, n = phrases_of(p)
        words |= w
        longest = max(longest, n)
    steps = max(len(p) for p in program_list)
    return DecodingSpec(ProgramUnits(heads, sorted(words), max_steps=steps), max_phrase_words=longest)


@pytest.mark.slow
@given(programs())
def test_every_valid_program_can_be_decoded_and_reads_back_the_same(program):
    spec = spec_for([program])  # the tightest limits the program fits in: its own length and words
    text = decode_units(program, spec)
    assert same_program(parse_program(text), program)


def test_every_real_gqa_line_of_the_fixtures_can_be_decoded():
    found = fixture_programs()
    spec = spec_for(found)
    for program in found:
        assert same_program(parse_program(decode_units(program, spec)), program)


def test_each_fixture_step_has_its_form_among_the_signatures_the_dsl_gives():
    for program in fixture_programs():
        for step in program.steps:
            matching = [s for s in step_signatures(step.field) if s.form == form_of(step.argument)]
            assert [(s.arity, s.consumes, s.yields) for s in matching] == [(step.arity, step.consumes, step.yields)]


def random_parser(seed: int, heads, max_steps: int, max_phrase_words: int) -> SemanticParser:
    units = ProgramUnits(heads, ["red", "cup", "on", "left", "color"], max_steps=max_steps)
    question_words = [PAD_WORD, UNKNOWN_WORD, "is", "the", "cup", "red"]
    torch.manual_seed(seed)
    network = ParserNetwork(NetworkConfig(len(question_words), len(units), 8, 8, 16))
    with torch.no_grad():  # large random weights: the network's wishes are wild, the grammar decides
        for parameter in network.parameters():
            parameter.normal_(0, 2.0)
    return SemanticParser(network, question_words, units, max_phrase_words=max_phrase_words, max_question_words=40)


@settings(max_examples=examples(30))
@given(seed=st.integers(0, 10_000), questions=st.lists(st.text(max_size=40), min_size=1, max_size=6),
       heads=st.sets(st.sampled_from(FIELDS), min_size=4).map(sorted), max_steps=st.integers(2, 8),
       max_phrase_words=st.integers(1, 3))
def test_a_random_network_only_ever_writes_programs_that_parse(seed, questions, heads, max_steps, max_phrase_words):
    heads = sorted(set(heads) | {"select", "exist"})  # some program must be writable
    parser = random_parser(seed, heads, max_steps, max_phrase_words)
    for result in parser.parse_many(questions):
        if hasattr(result, "reason"):  # unreadable: only a question without words
            assert result.reason == "it has no words"
            continue
        program = parse_program(result.text)
        assert program == result.program and len(program) <= max_steps
        assert phrases_of(program)[1] <= max_phrase_words, result.text
        assert {s.field for s in program.steps} <= set(heads)
        for unit in program_units(program):
            assert not unit.startswith("verb:") or unit[5:] in {h.partition(" ")[0] for h in heads}
        assert 0.0 <= result.probability <= 1.0


@settings(max_examples=examples(40))
@given(data=st.data(), max_steps=st.integers(2, 8), max_phrase_words=st.integers(1, 3),
       question_length=st.integers(0, 4))
def test_any_walk_through_the_allowed_units_ends_in_a_program_that_parses(data, max_steps, max_phrase_words,
                                                                         question_length):
    heads = data.draw(st.sets(st.sampled_from(FIELDS), min_size=3)) | {"select", "exist"}
    spec = DecodingSpec(ProgramUnits(sorted(heads), ["cup", "on"], max_steps=max_steps), max_phrase_words)
    automaton = ProgramAutomaton(spec, question_length)
    while not automaton.done:
        allowed, copy = automaton.allowed()
        choices = sorted(allowed) + (["copy"] if copy else [])
        assert choices, f"dead end after {automaton.text()!r}"
        choice = data.draw(st.sampled_from(choices))
        if choice == "copy":
            automaton.advance(None, data.draw(st.sampled_from(["zebra", "t-shirt", "man's"])))
        else:
            automaton.advance(choice)
    program = parse_program(automaton.text())
    assert len(program) <= max_steps
    assert phrases_of(program)[1] <= max_phrase_words, automaton.text()  # every phrase within the limit


# -- the structure planner against brute force ------------------------------------------------

SIGNATURES = [(0, Kind.OBJECTS, Kind.OBJECTS), (1, Kind.OBJECTS, Kind.OBJECTS), (1, Kind.OBJECTS, Kind.BOOLEAN),
              (1, Kind.OBJECTS, Kind.ANSWER), (2, Kind.BOOLEAN, Kind.BOOLEAN), (2, Kind.OBJECTS, Kind.BOOLEAN),
              (2, Kind.OBJECTS, Kind.ANSWER)]


def brute_force_steps_to_close(kinds, used, operations, limit):
    """The fewest further steps that close the program, trying every concrete choice of inputs."""
    frontier = [(tuple(kinds), tuple(used))]
    for depth in range(1, limit + 1):
        following = []
        for kinds_now, used_now in frontier:
            for arity, consumes, yields in operations:
                candidates = [i for i, k in enumerate(kinds_now) if k is consumes]
                for inputs in itertools.combinations(candidates, arity):
                    used_after = list(used_now)
                    for i in inputs:
                        used_after[i] = True
                    if yields is not Kind.OBJECTS and all(used_after):
                        return depth
                    if yields is not Kind.ANSWER:
                        following.append((kinds_now + (yields,), tuple(used_after) + (False,)))
        frontier = following
    return math.inf


@settings(max_examples=examples(60))
@given(operations=st.sets(st.sampled_from(range(len(SIGNATURES))), min_size=1).map(lambda s: [SIGNATURES[i] for i in sorted(s)]),
       prefix=st.lists(st.tuples(st.sampled_from([Kind.OBJECTS, Kind.BOOLEAN]), st.booleans()), max_size=4),
       limit=st.integers(1, 3))
def test_the_planner_finds_the_fewest_closing_steps_as_brute_force_does(operations, prefix, limit):
    kinds = [k for k, _ in prefix]
    used = [u for _, u in prefix]
    planner = StructurePlanner(operations)
    state = planner.state([k for k, u in zip(kinds, used) if not u], kinds)
    expected = brute_force_steps_to_close(kinds, used, operations, limit)
    found = planner.steps_to_close(state, limit)
    assert found == expected


def test_a_decoder_that_cannot_write_a_whole_program_is_refused():
    import pytest
    from nablafol.semantic_parser import ParserError
    with pytest.raises(ParserError, match="cannot write a whole program in 1 steps"):
        DecodingSpec(ProgramUnits(["select", "exist"], ["cup"], max_steps=1), max_phrase_words=1)
    with pytest.raises(ParserError, match="not one the GQA programs know"):
        DecodingSpec(ProgramUnits(["select", "frobnicate"], ["cup"], max_steps=3), max_phrase_words=1)
