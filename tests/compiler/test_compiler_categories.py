"""Categories as a dataset's groundings show them (compiler.categories), and the widened program an
open question falls back to when its presupposed objects are none (compiler.presupposition)."""
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol import dsl
from nablafol.compiler import Compiler
from nablafol.compiler.categories import CategoryEvidence, dataset_categories
from nablafol.compiler.presupposition import widened_program
from nablafol.data import load_questions, question_from_record, scene_graph_from_record

GQA = dsl.Ontology.gqa()
REAL = Path(__file__).parents[1] / "fixtures" / "real_gqa"
NAMES = ["man", "train car", "road", "chair", "zorse", "girls", "bus"]
CATEGORIES = ["place", "person", "furniture", "vehicle"]


def _graph(names):
    return scene_graph_from_record("g", {"width": 9, "height": 9, "objects": {
        str(i): {"name": n, "x": 0, "y": 0, "w": 1, "h": 1, "attributes": [], "relations": []}
        for i, n in enumerate(names)}})


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.sampled_from(NAMES), min_size=1, max_size=5),
       st.lists(st.tuples(st.sampled_from(CATEGORIES + ["man", "he"]), st.booleans(), st.lists(st.integers(0, 6),
                                                                                              max_size=3)),
                min_size=1, max_size=4))
def test_a_class_joins_a_category_exactly_when_a_step_naming_it_grounds_one(names, steps):
    """Against enumeration: each (category, class) counted once per grounded object of a step that
    names a category; a class-named or pronoun step, and an id the graph lacks, count nothing."""
    graph = _graph(names)
    questions, expected, missing = [], {}, 0
    for k, (name, relate, ids) in enumerate(steps):
        id_text = f" ({','.join(map(str, ids))})" if ids else " (-)"
        line = (f"select: man->relate: {name},on,o{id_text} [0]->exist: ? [1]" if relate
                else f"select: {name}{id_text}->exist: ? [0]")
        questions.append(question_from_record(str(k), {"imageId": "g", "semanticStr": line}))
        if not GQA.is_category(name) or name in GQA.pronouns:
            continue
        for i in ids:
            if i >= len(names):
                missing += 1
            elif GQA.normalize(names[i]) != name:
                expected[(name, GQA.normalize(names[i]))] = expected.get((name, GQA.normalize(names[i])), 0) + 1
    evidence = CategoryEvidence().update(questions, {"g": graph})
    assert dict(evidence.groundings) == expected and evidence.missing_objects == missing
    extension = evidence.extension()
    assert {(c, n) for c, classes in extension.categories.items() for n in classes} == {
        (c, n) for (c, n) in expected if n not in GQA.classes_under(c)}
    assert all(extension.categories[c][n] == expected[(c, n)] for c, cs in extension.categories.items() for n in cs)
    assert not dsl.OntologyExtension({}).categories and evidence.extension(min_groundings=10 ** 6).categories == {}


def test_real_training_groundings_agree_with_the_shipped_ontology_where_it_files_them():
    """The real train records' category steps ground their objects: `place` a road, `person` a guy."""
    evidence = dataset_categories(REAL / "domiknows_train_questions.json", REAL / "domiknows_train_sceneGraphs.json")
    assert evidence.questions == 33 and evidence.unreadable == evidence.no_scene == evidence.missing_objects == 0
    assert evidence.groundings[("place", "road")] == 1 and evidence.groundings[("person", "guy")] == 3
    assert evidence.agreeing() == sum(evidence.groundings.values())


def test_questions_without_a_scene_or_a_readable_program_are_counted_not_used():
    questions = [question_from_record("1", {"imageId": "nowhere", "semanticStr": "select: place (1)->exist: ? [0]"}),
                 question_from_record("2", {"imageId": "g", "semanticStr": "select: ->"})]
    evidence = CategoryEvidence().update(questions, {"g": _graph(["road"])})
    assert (evidence.no_scene, evidence.unreadable, sum(evidence.groundings.values())) == (1, 1, 0)


PROGRAMS = st.sampled_from([
    "select: man->relate: {n},on,o [0]->query: name [1]",
    "select: man->relate: {n},on,o [0]->filter color: red [1]->query: color [2]",
    "select: man->relate: {n},on,o [0]->choose name: road|field [1]",
    "select: man->relate: {n},on,o [0]->exist: ? [1]",
    "select: man->relate: {n},on,o [0]->verify color: red [1]",
    "select: {n}->query: name [0]",
    "select: man->relate: {n},on,o [0]->relate: _,near,s [1]->query: name [2]",
])


@given(PROGRAMS, st.sampled_from(["place", "vehicle", "person", "bus", "_", "he"]))
def test_only_an_open_answer_over_a_relate_naming_a_category_is_widened(template, name):
    if name == "_" and template.startswith("select: {n}"):
        name = "scene"  # a select names something
    program = dsl.parse_program(template.format(n=name))
    widened = widened_program(program, GQA)
    last = program.steps[-1]
    directly = last.dependencies[0]
    while program.steps[directly].operation == "filter":
        directly = program.steps[directly].dependencies[0]
    expected = (last.operation in ("query", "choose") and program.steps[directly].operation == "relate"
                and getattr(program.steps[directly].argument, "name", None) == name and GQA.is_category(name)
                and name not in GQA.pronouns)
    assert (widened is not None) == expected
    if widened is not None:  # the same program but for that name, now any
        changed = [k for k, (a, b) in enumerate(zip(program.steps, widened.steps)) if a != b]
        assert changed == [directly] and widened.steps[directly].argument.name == "_"


def test_a_widened_query_competes_every_class():
    compiler = Compiler()
    compiled = compiler.compile_text("select: man->relate: place,on,o [0]->query: name [1]")
    assert "train car" not in compiled.answers
    widened = compiler.widened(compiled)
    assert "train car" in widened.answers and set(widened.answers) >= set(compiled.answers)
    assert compiler.widened(compiler.compile_text("select: man->relate: place,on,o [0]->exist: ? [1]")) is None


def test_every_real_question_widened_compiles_and_keeps_its_candidates():
    """The real programs an answer may fall back from: each widened one compiles (Compiler.widened
    would hide a failure as None) and competes at least what the original did."""
    compiler, widened_count = Compiler(), 0
    for name in ("domiknows_train_questions.json", "gqa_ood_questions.sample.json"):
        for question in load_questions(REAL / name).values():
            source = question.program_source()
            program = (dsl.program_from_semantic(source.value) if source.field == "semantic"
                       else dsl.parse_program(source.value))
            wider = widened_program(program.without_ids(), compiler.ontology)
            if wider is not None:
                widened_count += 1
                assert set(compiler.compile(wider).answers) >= set(compiler.compile(program).answers)
    assert widened_count > 0
