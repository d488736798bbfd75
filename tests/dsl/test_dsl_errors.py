"""Malformed programs are refused with a `ProgramError` that points at the right column.

Each case is the line and a caret line whose '^' marks the expected column, plus a
fragment the message must contain.
"""
import pickle

import pytest

from nablafol.dsl import (Alternatives, AttributeType, Objects, Program, ProgramError, Step, Value, parse_program,
                 program_from_semantic, validate_program)

B = "select: bird (1)->"  # 18 characters: a valid first step and its arrow

CASES = [
    # operations and heads
    ("", "^", "empty"),
    ("   ", "^", "empty"),
    ("selct: bird (1)->exist: ? [0]", "^", "unknown operation 'selct'"),
    ("Select: bird (1)->exist: ? [0]", "^", "unexpected 'Select'"),
    ("select:bird (1)->exist: ? [0]", "      ^", "expected ': '"),
    ("select : bird (1)->exist: ? [0]", "      ^", "expected ': '"),
    ("select bird (1)->exist: ? [0]", "            ^", "unexpected ' (1)'; expected ': '"),
    (B + "query color: name [0]", " " * 24 + "^", "'query' takes no type"),
    (B + "exist color: ? [0]", " " * 24 + "^", "'exist' takes no type"),
    (B + "relate on: _,on,s (2) [0]->exist: ? [1]", " " * 25 + "^", "'relate' takes no type"),
    (B + "find: name [0]", " " * 18 + "^", "unknown operation 'find'"),
    (B + "exist ? [0]", " " * 23 + "^", "expected ': '"),
    (B + "->exist: ? [0]", " " * 18 + "^", "unexpected '->'"),
    (B + " exist: ? [0]", " " * 18 + "^", "unexpected ' '"),
    (B + "exist: ? [0]->", " " * 32 + "^", "ends too early"),
    ("->select: bird (1)", "^", "unexpected '->'"),
    ("select: bird (1)\n->exist: ? [0]", " " * 16 + "^", "line break"),
    # object names and ids
    ("select: (1)->exist: ? [0]", " " * 8 + "^", "object ids follow a name"),
    ("select: bird(1)->exist: ? [0]", " " * 12 + "^", "unexpected '('"),
    ("select: bird (1a)->exist: ? [0]", " " * 13 + "^", "unexpected '('"),
    ("select: bird (1,)->exist: ? [0]", " " * 13 + "^", "unexpected '('"),
    ("select: bird ()->exist: ? [0]", " " * 13 + "^", "unexpected '('"),
    ("select: bird (-", " " * 13 + "^", "unexpected '('"),
    ("select: bird (1) (2)->exist: ? [0]", " " * 17 + "^", "unexpected '('"),
    ("select: bird_x (1)->exist: ? [0]", " " * 12 + "^", "unexpected '_'"),
    ("select: bird  (1)->exist: ? [0]", " " * 14 + "^", "unexpected '('"),
    ("select: bird- (1)->exist: ? [0]", " " * 12 + "^", "unexpected '-'"),
    ("select: a|b (1)->exist: ? [0]", " " * 12 + "^", "unexpected '('"),
    ("select: not(bird) (1)->exist: ? [0]", " " * 18 + "^", "unexpected '('"),
    # values, negation, alternatives
    (B + "filter color: not(white [0]->exist: ? [1]", " " * 42 + "^", "expected ')'"),
    (B + "filter color: not() [0]->exist: ? [1]", " " * 36 + "^", "expected a name or value"),
    (B + "filter color: white) [0]->exist: ? [1]", " " * 37 + "^", "unexpected ')'"),
    (B + "choose color: red| [0]", " " * 37 + "^", "expected a name or value"),
    (B + "choose color: red||blue [0]", " " * 36 + "^", "unexpected '|'"),
    (B + "choose color: |red [0]", " " * 32 + "^", "unexpected '|'"),
    # relations
    (B + "relate: _,on (2) [0]->exist: ? [1]", " " * 31 + "^", "expected '|' or ','"),
    (B + "relate: _,on,x (2) [0]->exist: ? [1]", " " * 31 + "^", "expected a role 's' or 'o'"),
    (B + "relate: _,on,so (2) [0]->exist: ? [1]", " " * 32 + "^", "unexpected 'o'"),
    (B + "relate: _,,s (2) [0]->exist: ? [1]", " " * 28 + "^", "expected a name or value"),
    (B + "relate: ,on,s (2) [0]->exist: ? [1]", " " * 26 + "^", "unexpected ','"),
    (B + "relate: __,on,s (2) [0]->exist: ? [1]", " " * 27 + "^", "expected ','"),
    (B + "relate: _;on,s (2) [0]->exist: ? [1]", " " * 27 + "^", "unexpected ';'"),
    (B + "relate: _,on,s(2) [0]->exist: ? [1]", " " * 32 + "^", "unexpected '('"),
    # exist's '?'
    (B + "exist: ?? [0]", " " * 26 + "^", "unexpected '?'"),
    (B + "exist: [0]", " " * 25 + "^", "dependencies follow the argument"),
    # dependencies, syntax
    (B + "exist: ? [0", " " * 27 + "^", "unexpected '['"),
    (B + "exist: ? [0,1]", " " * 27 + "^", "unexpected '['"),
    (B + "exist: ? [a]", " " * 27 + "^", "unexpected '['"),
    (B + "exist: ? []", " " * 27 + "^", "unexpected '['"),
    (B + "exist: ? [-1]", " " * 27 + "^", "unexpected '['"),
    (B + "exist: ? [" + "9" * 5000 + "]", " " * 27 + "^", "unexpected '['"),
    (B + "exist: ?[0]", " " * 26 + "^", "unexpected '['"),
    (B + "exist: ? [0]x", " " * 30 + "^", "'->' or the end"),
    (B + "relate: _ ,on,s (2) [0]->exist: ? [1]", " " * 27 + "^", "unexpected ' '"),
    (B + "relate: _,on,  s (2) [0]->exist: ? [1]", " " * 32 + "^", "unexpected ' '"),
    ("select: bird (1,  2)->exist: ? [0]", " " * 13 + "^", "unexpected '('"),
    ("or: [1, 3]", "    ^", "dependencies follow the argument"),
    # argument shapes
    ("select: a,b,s (1)->exist: ? [0]", " " * 8 + "^", "'select' takes a name with object ids"),
    ("select: ?->exist: ? [0]", " " * 8 + "^", "'select' takes a name"),
    ("select:  [0]", " " * 8 + "^", "'select' needs a name"),
    (B + "exist: yes [0]", " " * 25 + "^", "'exist' takes the argument '?'"),
    (B + "filter color: a|b [0]->exist: ? [1]", " " * 32 + "^", "'filter color' takes a value or not(value)"),
    (B + "filter color: x (2) [0]->exist: ? [1]", " " * 32 + "^", "'filter color' takes a value"),
    (B + "verify color: not(red) [0]", " " * 32 + "^", "'verify color' takes a value"),
    (B + "verify rel: red [0]", " " * 30 + "^", "'verify rel' takes a relation"),
    (B + "relate: _,on|in,s (2) [0]->exist: ? [1]", " " * 26 + "^", "'relate' takes a relation"),
    (B + "choose rel: _,on,s (2) [0]", " " * 30 + "^", "'choose rel' takes two relations"),
    (B + "choose color: red [0]", " " * 32 + "^", "'choose color' takes two values"),
    (B + "choose color: a|b|c [0]", " " * 32 + "^", "'choose color' takes two values"),
    (B + "choose color:  [0]", " " * 32 + "^", "'choose color' needs two values"),
    (B + "select: cat (2) ->choose healthier: a|b [0, 1]", " " * 54 + "^", "'choose healthier' takes no argument"),
    (B + "query:  [0]", " " * 25 + "^", "'query' needs an attribute type"),
    (B + "query: name (2) [0]", " " * 25 + "^", "'query' takes an attribute type"),
    (B + "and: x [0]", " " * 23 + "^", "'and' takes no argument"),
    (B + "same:  [0]", " " * 24 + "^", "'same' needs an attribute type"),
    (B + "select: c (2) ->same color: gender [0, 1]", " " * 46 + "^", "'same color' takes no argument"),
    # structure
    (B + "exist: ? [1]", " " * 27 + "^", "dependency [1] must point to an earlier step (0)"),
    (B + "exist: ? [5]", " " * 27 + "^", "must point to an earlier step"),
    ("select: bird (1) [0]->exist: ? [0]", " " * 17 + "^", "step 0 has none"),
    (B + "exist: ? [0]->exist: ? [0]", " " * 18 + "^", "step 1 'exist' is never used"),
    (B + "exist: ? [0]->or:  [1, 1]", " " * 37 + "^", "dependency [1] is listed twice"),
    (B + "exist: ? [0]->or:  [1]", " " * 37 + "^", "'or' takes 2 dependencies, got 1"),
    (B + "query: name [0]->exist: ? [0]", " " * 18 + "^", "yields the answer, so it must be the last step"),
    (B + "filter color: white [0]", " " * 18 + "^", "the last step 'filter color' yields objects"),
    ("select: bird (1)", "^", "the last step 'select' yields objects"),
    (B + "query: name", " " * 29 + "^", "'query' takes 1 dependency, got 0"),
    (B + "select: cat (2) ->and:  [0, 1]", " " * 42 + "^", "consumes a yes/no result, but step 0 'select' yields objects"),
    (B + "exist: ? [0]->query: name [1]", " " * 44 + "^", "consumes objects, but step 1 'exist' yields a yes/no result"),
    (B + "select: cat (2) ->choose color: a|b [0, 1]", " " * 54 + "^", "'choose color' takes 1 dependency, got 2"),
]


@pytest.mark.parametrize("line, caret, fragment", CASES, ids=[c[0][:60] or "empty" for c in CASES])
def test_malformed_line_is_refused_at_its_column(line, caret, fragment):
    assert caret.strip() == "^"
    with pytest.raises(ProgramError) as caught:
        parse_program(line)
    error = caught.value
    assert error.column == caret.index("^") + 1, str(error)
    assert fragment in str(error).split("\n")[0], str(error)
    assert error.line == 1 and error.text == line


def test_there_are_over_fifty_malformed_cases():
    assert len(CASES) >= 50 and len({line for line, _, _ in CASES}) == len(CASES)


def test_error_text_is_a_headline_and_a_caret_context():
    with pytest.raises(ProgramError) as caught:
        parse_program("select: wall (722332)->filter color: white [0]->query: name [5]")
    lines = str(caught.value).split("\n")
    assert len(lines) == 3
    assert lines[0] == ("step 2 'query': dependency [5] must point to an earlier step (0..1) "
                        "at line 1, column 61")
    assert lines[1].endswith("query: name [5]") and lines[1].startswith("  ...")  # clipped on the left
    assert lines[2].index("^") == lines[1].index("[5]")
    assert caught.value.step == 2 and isinstance(caught.value, ValueError)


def test_expected_terminals_are_words_not_grammar_names():
    for line in ["select: bird (1)->relate: _,on (2) [0]", "or: [1, 3]", "select bird"]:
        with pytest.raises(ProgramError) as caught:
            parse_program(line)
        text = str(caught.value)
        assert caught.value.expected and "__ANON" not in text and "_COMMA" not in text and "$END" not in text


def test_syntax_errors_name_the_step_they_are_in():
    with pytest.raises(ProgramError) as caught:
        parse_program("select: bird (1)->filter color: white [0]->relate: _,on,x (2) [1]->exist: ? [2]")
    assert caught.value.step == 2


def test_program_errors_survive_pickling():
    with pytest.raises(ProgramError) as caught:
        parse_program("select: bird (1)->exist: ? [4]")
    copy = pickle.loads(pickle.dumps(caught.value))
    assert (copy.message, copy.column, copy.step, str(copy)) == \
        (caught.value.message, caught.value.column, caught.value.step, str(caught.value))


@pytest.mark.parametrize("value", [None, 42, b"select: bird (1)", ["select: bird (1)"]])
def test_non_text_is_refused(value):
    with pytest.raises(ProgramError, match="a program is text"):
        parse_program(value)


SELECT = {"operation": "select", "dependencies": [], "argument": "bird (1)"}
EXIST = {"operation": "exist", "dependencies": [0], "argument": "?"}


@pytest.mark.parametrize("steps, step, fragment", [
    ("select: bird (1)", None, "list of steps, got str"),
    ({"operation": "select"}, None, "list of steps, got dict"),
    (None, None, "list of steps, got NoneType"),
    ([], None, "at least one step"),
    ([SELECT, None], 1, "step 1 must be a dict"),
    ([SELECT, ["exist", [0], "?"]], 1, "step 1 must be a dict"),
    ([{"operation": "select", "argument": "bird (1)"}], 0, "lacks 'dependencies'"),
    ([SELECT, {"dependencies": [0]}], 1, "lacks 'operation', 'argument'"),
    ([{**SELECT, "operation": 1}, EXIST], 0, "'operation' must be a string"),
    ([SELECT, {**EXIST, "argument": None}], 1, "'argument' must be a string"),
    ([SELECT, {**EXIST, "dependencies": "0"}], 1, "'dependencies' must be a list"),
    ([SELECT, {**EXIST, "dependencies": [True]}], 1, "'dependencies' must be a list"),
    ([SELECT, {**EXIST, "dependencies": [0.0]}], 1, "'dependencies' must be a list"),
])
def test_semantic_form_type_errors_name_the_step(steps, step, fragment):
    with pytest.raises(ProgramError) as caught:
        program_from_semantic(steps)
    assert fragment in caught.value.message and caught.value.step == step


@pytest.mark.parametrize("steps, step, text, caret, fragment", [
    ([{**SELECT, "operation": "selct"}, EXIST], 0, "selct: bird (1)", "^", "unknown operation"),
    ([{**SELECT, "argument": "bird (1a)"}, EXIST], 0, "select: bird (1a)", " " * 13 + "^", "unexpected '('"),
    ([{**SELECT, "argument": "bird [0]"}, EXIST], 0, "select: bird [0]", " " * 13 + "^", "'dependencies' field"),
    ([{**SELECT, "argument": "bird (1)->exist: ?"}, EXIST], 0, "select: bird (1)->exist: ?",
     " " * 16 + "^", "unexpected '->'"),
    ([SELECT, {**EXIST, "dependencies": [3]}], 1, "exist: ? [3]", " " * 9 + "^", "must point to an earlier step"),
    ([SELECT, {**EXIST, "dependencies": []}], 1, "exist: ?", " " * 8 + "^", "takes 1 dependency, got 0"),
    ([SELECT, EXIST, EXIST], 1, "exist: ? [0]", "^", "never used"),
    ([SELECT, {**EXIST, "argument": "yes"}], 1, "exist: yes", " " * 7 + "^", "takes the argument '?'"),
])
def test_semantic_form_errors_point_into_the_step(steps, step, text, caret, fragment):
    with pytest.raises(ProgramError) as caught:
        program_from_semantic(steps)
    error = caught.value
    assert (error.step, error.text, error.column) == (step, text, caret.index("^") + 1), str(error)
    assert fragment in error.message
    assert error.message.startswith(f"step {step}")


def test_semantic_form_accepts_tuples_and_extra_keys():
    steps = ({**SELECT, "extra": 1}, {**EXIST, "dependencies": (0,)})
    assert program_from_semantic(steps) == parse_program("select: bird (1)->exist: ? [0]")


@pytest.mark.parametrize("program, fragment", [
    (Program(()), "at least one step"),
    ("select: bird (1)", "at least one step"),
    (Program(("select: bird (1)",)), "step 0 is a str, not a Step"),
    (Program((Step("select", None, Value("x")), Step("query", None, AttributeType("name"), (0,)))),
     "step 0 'select: x' reads back as Objects(name='x', ids=None), not Value(value='x', negated=False)"),
    (Program((Step("select", None, Objects("scene")), Step("query", None, AttributeType("name"), (0,)))),
     "reads back as Scene()"),
    (Program((Step("select", None, Objects("a,b")), Step("query", None, AttributeType("name"), (0,)))),
     "unexpected '->'"),
    (Program((Step("select", None, Objects("a")), Step("query", None, AttributeType("name"), (1,)))),
     "dependency [1] must point to an earlier step"),
    (Program((Step("select", None, Objects("a")), Step("choose", "rel", Alternatives(("a", "b")), (0,)))),
     "'choose rel' takes two relations"),
])
def test_hand_built_programs_are_validated(program, fragment):
    with pytest.raises(ProgramError) as caught:
        validate_program(program)
    assert fragment in caught.value.message


def test_a_program_longer_than_the_limit_is_refused_in_every_form():
    """Later stages walk a program by recursion (hundreds of steps exhausted it): MAX_STEPS steps
    are read, one more is refused, as text (at the first step past the limit), as GQA's
    ``semantic`` list and as CRIC's program."""
    from nablafol.dsl import MAX_STEPS
    from nablafol.dsl.cric import cric_program_from_json

    def chain(steps: int) -> str:
        return "->".join(["select: chair"] + [f"filter: red [{i}]" for i in range(steps - 2)]
                         + [f"exist: ? [{steps - 2}]"])

    assert len(parse_program(chain(MAX_STEPS)).steps) == MAX_STEPS
    line = chain(MAX_STEPS + 1)
    with pytest.raises(ProgramError, match=f"{MAX_STEPS + 1} steps, more than {MAX_STEPS}") as refused:
        parse_program(line)
    assert refused.value.column == line.index(f"exist: ? [{MAX_STEPS - 1}]") + 1  # step MAX_STEPS, the first past
    semantic = [{"operation": "select", "dependencies": [], "argument": "chair"}] + [
        {"operation": "filter", "dependencies": [i], "argument": "red"} for i in range(MAX_STEPS - 1)] + [
        {"operation": "exist", "dependencies": [MAX_STEPS - 1], "argument": "?"}]
    with pytest.raises(ProgramError, match="more than"):
        program_from_semantic(semantic)
    cric = [{"function": "find", "text_input": "chair"}] * (MAX_STEPS + 1)
    with pytest.raises(ProgramError, match="more than"):
        cric_program_from_json(cric)
