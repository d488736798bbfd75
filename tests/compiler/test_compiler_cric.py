"""CRIC programs compiled to DFOL: against a crisp executor (any program, any world), the
fixture's questions with the golden oracles, and what is refused."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from cric_crisp import CricWorld, run
from nablafol.compiler import CompileError
from nablafol.compiler.cric import CricCompiler
from nablafol.data import SceneGraph, SceneObject, SceneRelation
from nablafol.dsl import Ontology
from nablafol.dsl.cric import CricProgram, CricStep, cric_program_from_json
from nablafol.engine import Engine
from nablafol.graph_oracles import KnowledgeBase, Triple
from nablafol.pipeline.perception import SceneGraphPerception

ONTOLOGY = Ontology(
    {"animal": ["cat", "dog"], "utensil": ["fork", "knife", "spoon"], "food": ["egg", "cake"],
     "furniture": ["table", "chair"], "room": ["kitchen"]},
    {"color": ["red", "white", "brown"], "material": ["metal", "wood"]},
    ["on", "near"],
)
TRIPLES = [("fork", "CapableOf", "lift food"), ("spoon", "CapableOf", "lift food"), ("knife", "CapableOf", "cut food"),
           ("utensil", "AtLocation", "kitchen"), ("dog", "CapableOf", "chase cat"), ("table", "CapableOf", "hold food"),
           ("cat", "CapableOf", "chase dog"), ("dog", "IsA", "animal")]
KNOWLEDGE = KnowledgeBase([Triple(*t) for t in TRIPLES])
COMPILER = CricCompiler(ONTOLOGY, knowledge_relations=KNOWLEDGE.relations)
CLASSES = sorted(ONTOLOGY.classes)
WORDS = CLASSES + ["animal", "utensil", "food", "furniture", "red", "white", "brown", "metal", "wood"]
UNARY_FACTS = sorted({(r, t) for _, r, t in TRIPLES})
BINARY = [("CapableOf", "lift"), ("CapableOf", "cut"), ("CapableOf", "chase"), ("CapableOf", "hold"), ("IsA", ""),
          ("AtLocation", "")]


@st.composite
def worlds(draw):
    n = draw(st.integers(1, 4))
    classes = [draw(st.sampled_from(CLASSES)) for _ in range(n)]
    attrs = [set(draw(st.lists(st.sampled_from(["red", "white", "brown", "metal", "wood"]), max_size=2)))
             for _ in range(n)]
    relations = {(p, i, j) for p in ("on", "near") for i in range(n) for j in range(n)
                 if i != j and draw(st.integers(0, 2)) == 0}
    return CricWorld(ONTOLOGY, classes, attrs, relations, TRIPLES)


def _step(function, *text):
    return {"function": function, "text_input": list(text)}


@st.composite
def chains(draw):
    steps = [_step("Initial")]
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["Find", "Find Hyponym", "Relate", "Relate Reverse", "Find KG", "Find KG Reverse"]))
        if kind == "Find":
            steps.append(_step("Find", *draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=2))))
        elif kind == "Find Hyponym":
            steps.append(_step("Find Hyponym", draw(st.sampled_from(["animal", "utensil", "food", "furniture"]))))
        elif kind in ("Relate", "Relate Reverse"):
            steps.append(_step(kind, draw(st.sampled_from(["on", "near"]))))
        elif kind == "Find KG" and steps[-1]["function"] == "Initial":
            steps.append(_step("Find KG", *draw(st.sampled_from(UNARY_FACTS))))
        else:
            relation, phrase = draw(st.sampled_from(BINARY))
            steps.append(_step(kind, relation, phrase) if phrase else _step(kind, relation))
    return steps


@st.composite
def cric_programs(draw):
    steps = draw(chains())
    if draw(st.booleans()):
        steps = steps + draw(chains()) + [_step("And")]
    if draw(st.booleans()):
        steps.append(_step("Verify", *draw(st.lists(st.sampled_from(WORDS), max_size=1))))
    else:
        steps.append(_step("Recognition", draw(st.sampled_from(["name", "color", "material"]))))
    if draw(st.integers(0, 4)) == 0:  # yes/no results combined
        other = draw(chains()) + [_step("Verify", draw(st.sampled_from(WORDS)))]
        if steps[-1]["function"] == "Verify":
            steps = steps + other + [_step("And")]
    return steps


def _scene(world: CricWorld) -> SceneGraph:
    objects = []
    for i, cls in enumerate(world.classes):
        rels = tuple(SceneRelation(p, str(j)) for p, s, j in sorted(world.relations) if s == i)
        objects.append(SceneObject(str(i), {cls: 1.0}, 10.0 * i, 0.0, 5.0, 5.0, {a: 1.0 for a in world.attrs[i]}, rels))
    return SceneGraph("1", 100.0, 100.0, tuple(objects))


def _answer_and_modules(compiled, graph):
    perception = SceneGraphPerception({"1": graph}, ONTOLOGY, knowledge=KNOWLEDGE)
    oracle = perception.oracle(["1"])
    steps = compiled.step_programs()
    programs = [compiled.program] + [p for _, p in steps]
    with torch.no_grad():
        answers = Engine()(programs, oracle, torch.zeros(len(programs), dtype=torch.long))
    attention = answers.focus.exp()
    found = {index: {i for i in range(attention.shape[1]) if attention[k + 1, i] >= 0.5}
             for k, (index, _) in enumerate(steps)}
    return answers.predictions()[0], found


@pytest.mark.slow
@given(worlds(), cric_programs())
def test_compiled_cric_programs_agree_with_the_crisp_executor(world, steps):
    """Answers and every module's objects, with the golden scene-graph and knowledge oracles."""
    program = cric_program_from_json(steps)
    compiled = COMPILER.compile(program)
    answer, found = _answer_and_modules(compiled, _scene(world))
    crisp_answer, crisp_found = run(program, world)
    assert answer == crisp_answer, (str(program), world)
    assert found == crisp_found, (str(program), world)


def test_the_example_of_the_paper_compiles_to_a_relate_over_the_knowledge_relation():
    compiled = CricCompiler(knowledge_relations={"CapableOf"}).compile_json(
        [_step("Initial"), _step("Find", "plate"), _step("Relate Reverse", "on"),
         _step("Find KG", "CapableOf", "lift"), _step("Find Hyponym", "utensil"), _step("Recognition", "name")])
    assert compiled.program.formula() == (
        "[π ∈ {butter knife, chopsticks, fork, knife, spoon, utensil}: "
        "∃X ∃Y ∃Z: π(X) ∧ utensil(X) ∧ CapableOf:lift(X, Y) ∧ on(Y, Z) ∧ plate(Z)]")
    assert compiled.answers == ("butter knife", "chopsticks", "fork", "knife", "spoon", "utensil")
    assert sorted(compiled.step_attentions) == [0, 1, 2, 3, 4]


def test_find_kg_right_after_initial_is_a_fact_about_the_class_alone():
    compiled = COMPILER.compile_json([_step("Initial"), _step("Find KG", "CapableOf", "lift food"), _step("Verify")])
    assert compiled.program.formula() == "∃X: CapableOf:lift_food(X)"


def test_programs_differing_only_in_ground_truth_outputs_compile_once():
    a = [{"function": "Initial", "output": [1]}, {"function": "Verify", "output": [1]}]
    b = [{"function": "Initial", "output": [2]}, {"function": "Verify", "output": []}]
    assert COMPILER.compile_json(a) is COMPILER.compile_json(b)


@pytest.mark.parametrize("steps, message", [
    ([_step("Initial"), _step("Find KG", "UsedFor", "eating"), _step("Verify")], "unknown knowledge relation 'UsedFor'"),
    ([_step("Initial"), _step("Recognition", "flavor")], "no values known for the attribute type 'flavor'"),
])
def test_what_cannot_be_answered_is_refused_naming_the_step(steps, message):
    with pytest.raises(CompileError) as error:
        COMPILER.compile_json(steps)
    assert message in str(error.value) and error.value.step is not None


@pytest.mark.parametrize("steps, formula", [
    ([_step("Initial"), _step("Find", "spaceship"), _step("Verify")], "∃X: spaceship(X)"),
    ([_step("Initial"), _step("Relate", "under"), _step("Verify")], "∃X ∃Y: under(Y, X)"),
])
def test_names_and_relations_outside_the_ontology_are_predicates_of_their_own(steps, formula):
    """The open vocabulary (docs/compiling-gqa.md) holds for CRIC's programs as for GQA's."""
    assert COMPILER.compile_json(steps).program.formula() == formula


def test_without_a_knowledge_base_a_knowledge_step_says_so():
    with pytest.raises(CompileError, match="give a knowledge base"):
        CricCompiler(ONTOLOGY).compile_json([_step("Initial"), _step("Find KG", "CapableOf", "lift"), _step("Verify")])


def test_only_read_programs_are_compiled():
    with pytest.raises(CompileError):
        COMPILER.compile([_step("Initial")])
    assert isinstance(cric_program_from_json([_step("Initial"), _step("Verify")]), CricProgram)
    assert CricStep("Verify", ()).yields.value == "yes/no"
