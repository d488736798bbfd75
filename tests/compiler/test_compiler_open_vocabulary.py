"""An open vocabulary (issue 16): every real program compiles; concepts outside the ontology are
predicates of their own; open questions compete what the oracle knows; GQA's own words."""
import json
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from nablafol.compiler import CompileError, Compiler
from nablafol.data import load_questions
from nablafol.dsl import Ontology
from nablafol.dsl.words import GENDER_OF_NAME
from nablafol.ir import Predicate
from nablafol.pipeline.answering import Skip, compile_question

REAL = Path(__file__).parents[1] / "fixtures" / "real_gqa"
GQA = Compiler()


@pytest.mark.parametrize("name", sorted(p.name for p in REAL.glob("*questions*.json")))
def test_every_real_program_compiles(name):
    questions = load_questions(REAL / name)
    refused = {q.id: r.detail for q in questions.values() if isinstance(r := compile_question(q, GQA), Skip)}
    assert refused == {}


@pytest.mark.parametrize("line, predicate", [
    ("select: animal->filter: baby [0]->exist: ? [1]", Predicate("baby", 1, "attr")),  # untyped, no type lists it
    ("select: shirt->choose: sleeveless|long sleeved [0]", Predicate("long sleeved", 1, "attr")),
    ("select: door->verify: open [0]", Predicate("open", 1, "attr")),
    ("select: wall->choose material: steel|granite [0]", Predicate("granite", 1, "attr")),
    ("select: girl->filter face expression: happy [0]->exist: ? [1]", Predicate("happy", 1, "attr")),
    ("select: device->filter: not(on) [0]->query: name [1]", Predicate("on", 1, "attr")),
    ("select: cat->select: tail ->choose larger:  [0, 1]", Predicate("tail", 1, "name")),
    ("select: person->filter: chair [0]->exist: ? [1]", Predicate("chair", 1, "name")),  # untyped, only a name
    ("select: man->relate: _,standing under,o [0]->exist: ? [1]", Predicate("standing under", 2, "rel")),
    ("select: he->verify pose: sitting [0]", Predicate("he", 1, "name")),
])
def test_open_concepts_become_their_own_predicates(line, predicate):
    assert predicate in GQA.compile_text(line).program.predicates()


def test_a_value_outside_its_type_joins_it_and_open_questions_compete_what_the_oracle_knows():
    line = "select: countertop->query: material [0]"
    assert "granite" not in GQA.compile_text(line).answers
    widened = Compiler(known_values={"material": ["granite", "marble"], "name": ["tail", "skis"],
                                     None: ["glossy"], "relation": ["grazing near"]})
    assert {"granite", "marble"} <= set(widened.compile_text(line).answers)
    # names the scene graphs hold compete in `query name` over `_`, but join no category
    assert "tail" in widened.compile_text("select: cat->relate: _,of,s [0]->query: name [1]").answers
    assert "tail" not in widened.compile_text("select: animal->query: name [0]").answers
    # a raw plural meets the vocabulary form; an untyped value stays typeless
    assert widened.ontology.normalize("skis") == "ski" and widened.ontology.types_of("glossy") == frozenset()
    assert widened.ontology.is_relation("grazing near")


def test_untyped_values_read_attribute_else_name():
    known = Compiler(known_values={None: ["cooked"], "name": ["cooked"]})
    assert Predicate("cooked", 1, "attr") in known.compile_text("select: food->filter: cooked [0]->exist: ? [1]") \
        .program.predicates()
    named = Compiler(known_values={"name": ["cupcake"]})
    assert Predicate("cupcake", 1, "name") in named.compile_text("select: food->filter: cupcake [0]->exist: ? [1]") \
        .program.predicates()


@pytest.mark.parametrize("pronoun, gender", [("he", "male"), ("she", "female")])
def test_person_pronouns_stand_for_the_person_classes_of_their_gender(pronoun, gender):
    answers = set(GQA.compile_text(f"select: {pronoun}->query: name [0]").answers)
    person = Ontology.gqa().classes_under("person")
    assert answers and answers <= person and "person" in answers
    assert all(GENDER_OF_NAME.get(c, gender) == gender for c in answers)
    assert {c for c in person if GENDER_OF_NAME.get(c) not in (None, gender)}.isdisjoint(answers)


def test_demonstratives_stand_for_every_class():
    q = GQA.compile_text("select: this->choose name: bus|train [0]")
    assert q.answers == ("bus", "train")
    assert len(GQA.compile_text("select: it->query: name [0]").answers) == len(Ontology.gqa().classes)


def test_same_type_compares_the_names_of_the_objects():
    q = GQA.compile_text("select: animal->same: type [0]")
    assert {p.kind for p in q.program.predicates()} == {"name", "class"}
    assert q.program == GQA.compile_text("select: animal->same: name [0]").program


def test_a_knowledge_relation_without_a_knowledge_base_is_a_listed_reason():
    with pytest.raises(CompileError, match="'CapableOf' is a knowledge relation") as e:
        GQA.compile_text("select: plate->filter CapableOf: lift food [0]->exist: ? [1]")
    assert e.value.reason == "unknown concept"
    with_kb = Compiler(knowledge_relations={"CapableOf"})
    assert Predicate("CapableOf:lift food", 1, "kg") in with_kb.compile_text(
        "select: plate->filter CapableOf: lift food [0]->exist: ? [1]").program.predicates()


@pytest.mark.slow
@given(st.from_regex(r"[a-z]{3,9}( [a-z]{3,9})?", fullmatch=True), st.sampled_from(["color", "material", None]))
def test_any_word_compiles_and_a_known_one_keeps_its_ontology_predicate(word, type_):
    assume(word != "scene")  # `select: scene` is the image
    step = f"filter {type_}" if type_ else "filter"
    program = GQA.compile_text(f"select: {word}->{step}: {word} [0]->exist: ? [1]").program
    form = Ontology.gqa().normalize(word)
    preds = program.predicates()
    assert Predicate(form, 1, "name") in preds
    expected_kind = "name" if type_ is None and Ontology.gqa().is_name(form) and \
        not Ontology.gqa().is_attribute_value(form) else "attr"
    assert Predicate(form, 1, expected_kind) in preds


def test_joining_is_idempotent_and_keeps_what_only_the_ontology_gives():
    gqa = Ontology.gqa()
    wider = gqa.joined({"name": ["unicorns", "unicorn"], "color": ["teal"], None: ["shiny"]})
    assert wider.joined({"name": ["unicorn"], "color": ["teal"], None: ["shiny"]}) is wider
    assert wider.is_class("unicorn") and not wider.is_class("unicorns")  # one name, its singular
    assert wider.normalize("unicorns") == "unicorn" and wider.categories_of("unicorn") == frozenset()
    assert wider.categories == gqa.categories and wider.values_of("color") == gqa.values_of("color") | {"teal"}
    again = Ontology.from_data(**wider.to_data())
    assert again.to_data() == wider.to_data() and again.uncategorized == {"unicorn"} and again.untyped == {"shiny"}


def test_compiling_many_distinct_open_programs_stays_cached_by_their_id_free_line():
    c = Compiler()
    a = c.compile_text("select: unicorn (1)->filter: sparkly [0]->exist: ? [1]")
    b = c.compile_text("select: unicorn (2, 3)->filter: sparkly [0]->exist: ? [1]")
    assert a is b
