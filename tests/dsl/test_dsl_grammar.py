"""Every operation, argument form and quirk of GQA's program text reads into the right AST."""
import pytest

from nablafol.dsl import (COMPARATIVES, Alternatives, AttributeType, Empty, Kind, Objects, Program, Relation,
                 Scene, Step, Value, parse_program, program_from_semantic)

SELECT = "select: bird (329774)"
BIRD = Step("select", None, Objects("bird", ("329774",)))

# (last step as written after SELECT, the step it must read as)
ONE_INPUT_STEPS = [
    ("filter color: white [0]->exist: ? [1]", Step("filter", "color", Value("white"), (0,))),
    ("filter: not(on) [0]->exist: ? [1]", Step("filter", None, Value("on", True), (0,))),
    ("filter color: not(white) [0]->exist: ? [1]", Step("filter", "color", Value("white", True), (0,))),
    ("filter hposition: left [0]->exist: ? [1]", Step("filter", "hposition", Value("left"), (0,))),
    ("filter vposition: middle [0]->exist: ? [1]", Step("filter", "vposition", Value("middle"), (0,))),
    ("filter sportActivity: skiing [0]->exist: ? [1]", Step("filter", "sportActivity", Value("skiing"), (0,))),
    ("filter face expression: happy [0]->exist: ? [1]",
     Step("filter", "face expression", Value("happy"), (0,))),
    ("filter color: cream colored [0]->exist: ? [1]", Step("filter", "color", Value("cream colored"), (0,))),
    ("relate: _,on,s (722335) [0]->exist: ? [1]", Step("relate", None, Relation("_", ("on",), "s", ("722335",)), (0,))),
    ("relate: coffee table,to the left of,o (-) [0]->exist: ? [1]",
     Step("relate", None, Relation("coffee table", ("to the left of",), "o", ()), (0,))),
    ("relate: vegetables,same color,s (1,2) [0]->exist: ? [1]",
     Step("relate", None, Relation("vegetables", ("same color",), "s", ("1", "2")), (0,))),
    ("relate: t-shirt,wearing,o [0]->exist: ? [1]", Step("relate", None, Relation("t-shirt", ("wearing",), "o"), (0,))),
]
ANSWER_STEPS = [
    ("query: name [0]", Step("query", None, AttributeType("name"), (0,))),
    ("query: hposition [0]", Step("query", None, AttributeType("hposition"), (0,))),
    ("query: face expression [0]", Step("query", None, AttributeType("face expression"), (0,))),
    ("exist: ? [0]", Step("exist", None, Empty("?"), (0,))),
    ("verify color: tan [0]", Step("verify", "color", Value("tan"), (0,))),
    ("verify: bare [0]", Step("verify", None, Value("bare"), (0,))),
    ("verify rel: horse,riding,o (-) [0]", Step("verify", "rel", Relation("horse", ("riding",), "o", ()), (0,))),
    ("choose color: black|pink [0]", Step("choose", "color", Alternatives(("black", "pink")), (0,))),
    ("choose: red|white [0]", Step("choose", None, Alternatives(("red", "white")), (0,))),
    ("choose name: train|truck [0]", Step("choose", "name", Alternatives(("train", "truck")), (0,))),
    ("choose rel: surfer,to the right of|to the left of,s (429131) [0]",
     Step("choose", "rel", Relation("surfer", ("to the right of", "to the left of"), "s", ("429131",)), (0,))),
    ("same: gender [0]", Step("same", None, AttributeType("gender"), (0,))),
    ("different: color [0]", Step("different", None, AttributeType("color"), (0,))),
]


@pytest.mark.parametrize("tail, expected", ONE_INPUT_STEPS + ANSWER_STEPS)
def test_each_operation_reads_into_its_step(tail, expected):
    program = parse_program(f"{SELECT}->{tail}")
    assert program.steps[0] == BIRD
    assert expected in program.steps


@pytest.mark.parametrize("comparative", sorted(COMPARATIVES))
def test_choose_comparatives_take_two_inputs_and_no_argument(comparative):
    program = parse_program(f"{SELECT}->select: cat (5) ->choose {comparative}:  [0, 1]")
    last = program.answer_step
    assert last == Step("choose", comparative, Empty(), (0, 1))
    assert last.is_comparative and last.arity == 2 and not program.is_binary


@pytest.mark.parametrize("verb, kind", [("and", Kind.BOOLEAN), ("or", Kind.BOOLEAN)])
def test_and_or_over_two_exists(verb, kind):
    line = f"select: vegetables (-)->exist: ? [0]->select: nuts (-) ->exist: ? [2]->{verb}:  [1, 3]"
    program = parse_program(line)
    assert program.answer_step == Step(verb, None, Empty(), (1, 3))
    assert program.answer_step.yields is kind and program.is_binary
    assert program.steps[2] == Step("select", None, Objects("nuts", ()))  # "(-) " means no ids, space ignored


def test_two_input_same_different_and_common():
    for field, verb, type_ in [("same color", "same", "color"), ("different shape", "different", "shape"),
                               ("common", "common", None)]:
        program = parse_program(f"select: cap (2108218)->select: sign (2393744) ->{field}:  [0, 1]")
        assert program.answer_step == Step(verb, type_, Empty(), (0, 1))
        assert program.is_binary is (verb != "common")


def test_scene_select_and_scene_questions():
    program = parse_program("select: scene->choose location: indoors|outdoors [0]")
    assert program.steps[0] == Step("select", None, Scene())
    assert program.answer_step.argument == Alternatives(("indoors", "outdoors"))
    assert parse_program("select: scene->query: weather [0]").steps[0].argument == Scene()


def test_object_ids_forms():
    assert parse_program("select: person (2675266,1804573,1900358)->exist: ? [0]").steps[0].argument == \
        Objects("person", ("2675266", "1804573", "1900358"))
    assert parse_program("select: person (-)->exist: ? [0]").steps[0].argument == Objects("person", ())
    assert parse_program("select: person->exist: ? [0]").steps[0].argument == Objects("person", None)
    assert parse_program("select: person (02930152)->exist: ? [0]").steps[0].argument.ids == ("02930152",)


def test_trailing_spaces_mean_nothing():
    plain = parse_program("select: water (447019)->relate: horse,on the edge of,s (447018) [0]"
                          "->verify color: brown [1]->verify size: small [1]->and:  [2, 3]")
    spaced = parse_program("select: water (447019)->relate: horse,on the edge of,s (447018) [0]"
                           "->verify color: brown [1]->verify size: small  [1]->and:  [2, 3]")
    assert plain == spaced
    assert parse_program("select: knife (1066943) ->exist: ? [0]") == parse_program(
        "select: knife (1066943)->exist: ? [0]")
    assert program_from_semantic([{"operation": "select", "dependencies": [], "argument": "knife (1066943) "},
                                  {"operation": "exist", "dependencies": [0], "argument": "?"}]) == \
        parse_program("select: knife (1066943)->exist: ? [0]")


def test_a_shared_input_feeds_two_steps():
    program = parse_program("select: water (447019)->relate: horse,on the edge of,s (447018) [0]"
                            "->verify color: brown [1]->verify size: small  [1]->and:  [2, 3]")
    assert [s.dependencies for s in program] == [(), (0,), (1,), (1,), (2, 3)]


def test_plural_and_multiword_surface_forms_are_kept_as_written():
    program = parse_program("select: vegetables (-)->relate: fast food,on top of,o (714821) [0]->query: name [1]")
    assert program.steps[0].argument.name == "vegetables"
    assert program.steps[1].argument == Relation("fast food", ("on top of",), "o", ("714821",))


def test_step_helpers():
    step = parse_program("select: wall (1)->filter color: white [0]->exist: ? [1]").steps[1]
    assert step.field == "filter color" and str(step) == "filter color: white [0]"
    assert step.yields is Kind.OBJECTS and step.consumes is Kind.OBJECTS and step.arity == 1
    assert Relation("x", ("on",), "s").relation == "on" and Relation("_", ("on",), "s").any_name
    with pytest.raises(ValueError):
        Relation("x", ("on", "in"), "s").relation


def test_program_helpers_and_dump():
    program = parse_program("select: wall (722332)->filter color: white [0]->relate: _,on,s (722335) [1]->query: name [2]")
    assert len(program) == 4 and program[0] == program.steps[0] and list(program) == list(program.steps)
    assert program.answer_step.field == "query" and not program.is_binary
    dump = str(program)
    assert "4 steps" in dump and "open answer" in dump
    assert "Relation(name='_', relations=('on',), role='s', ids=('722335',))  <- [1]" in dump
    assert "[3] query" in dump


def test_programs_are_hashable_values():
    line = "select: bird (329774)->query: name [0]"
    first, second = parse_program(line), parse_program(line)
    assert first == second and hash(first) == hash(second) and len({first, second}) == 1
    with pytest.raises(AttributeError):
        first.steps = ()  # frozen
    assert isinstance(first, Program)


def test_semantic_form_writes_gqa_key_order_and_quirks():
    program = parse_program("select: cup (-)->exist: ? [0]->select: bottles (-) ->exist: ? [2]->or:  [1, 3]")
    assert program.to_semantic() == [
        {"operation": "select", "dependencies": [], "argument": "cup (-)"},
        {"operation": "exist", "dependencies": [0], "argument": "?"},
        {"operation": "select", "dependencies": [], "argument": "bottles (-) "},
        {"operation": "exist", "dependencies": [2], "argument": "?"},
        {"operation": "or", "dependencies": [1, 3], "argument": ""},
    ]
    assert [list(d) for d in program.to_semantic()][0] == ["operation", "dependencies", "argument"]
