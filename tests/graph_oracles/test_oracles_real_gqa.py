"""The golden oracle on real GQA (issue 16): real train scene graphs answer their real questions;
names, values and relations outside the ontology; pronouns, group names, gender from names."""
import json
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from nablafol.cli import main
from nablafol.compiler import Compiler
from nablafol.compiler.vocabulary import ConceptInventory, known_values
from nablafol.data import load_questions, load_scene_graphs, scene_graph_from_record
from nablafol.dsl import Ontology, OntologyExtension
from nablafol.ir import Predicate
from nablafol.oracle import Requests
from nablafol.pipeline.answering import Answerer
from nablafol.pipeline.evaluation import answer_all
from nablafol.pipeline.perception import SceneGraphPerception
from nablafol.scoring.answers import vocabulary_match
from nablafol.graph_oracles import SceneGraphOracle

REAL = Path(__file__).parents[1] / "fixtures" / "real_gqa"
SETS = [("domiknows_train_questions.json", "domiknows_train_sceneGraphs.json"),
        ("train_balanced_questions.sample.json", "train_sceneGraphs.sample.json")]


@pytest.mark.parametrize("questions, graphs", SETS)
def test_real_train_scene_graphs_answer_their_real_questions(questions, graphs):
    questions, graphs = load_questions(REAL / questions), load_scene_graphs(REAL / graphs)
    run = answer_all(questions.values(), Answerer(SceneGraphPerception(graphs)))
    assert run.skips == []
    wrong = {q.id: (q.semantic_str, q.answer, run.predictions[q.id]) for q in questions.values()
             if not vocabulary_match(run.predictions[q.id], q.answer)}
    assert wrong == {}


def test_the_shared_real_sample_runs_end_to_end_through_nablafol_eval(tmp_path, capsys):
    out = tmp_path / "predictions.json"
    assert main(["eval", "--questions", str(REAL / "train_balanced_questions.sample.json"),
                 "--scene-graphs", str(REAL / "train_sceneGraphs.sample.json"), "--predictions", str(out),
                 "--strict"]) == 0
    predictions = {p["questionId"]: p["prediction"] for p in json.loads(out.read_text())}
    assert predictions == {"07333408": "pipe", "02930152": "yes"}
    assert "100.00%" in capsys.readouterr().out


def _scene(objects, **scene):
    record = {"width": 600, "height": 400, **scene, "objects": {
        oid: {"x": 10 + 100 * i, "y": 50, "w": 80, "h": 80, "attributes": [], "relations": [], **o}
        for i, (oid, o) in enumerate(objects.items())}}
    return scene_graph_from_record("g", record)


def _answer(graph, line, **compiler):
    perception = SceneGraphPerception({"g": graph})
    question = load_questions_from_line(line)
    return answer_all([question], Answerer(perception, compiler=Compiler(**compiler))).predictions.get("q")


def load_questions_from_line(line):
    from nablafol.data import question_from_record
    return question_from_record("q", {"imageId": "g", "semanticStr": line, "answer": ""})


GROUP = _scene({"1": {"name": "girls", "attributes": ["little", "smiling"]}, "2": {"name": "basket"}})
MIXED = _scene({"1": {"name": "man"}, "2": {"name": "woman"}, "3": {"name": "table"}})


@pytest.mark.parametrize("graph, line, answer", [
    # one object named for a group of girls: GQA answers "Yes, all the people are female"
    (GROUP, "select: person->same: gender [0]", "yes"),
    (GROUP, "select: person->different: gender [0]", "no"),
    (GROUP, "select: people->query: gender [0]", "female"),
    (GROUP, "select: girls->filter gender: female [0]->exist: ? [1]", "yes"),
    (MIXED, "select: person->same: gender [0]", "no"),
    (MIXED, "select: person->different: gender [0]", "yes"),
])
def test_a_name_that_tells_a_gender_gives_it(graph, line, answer):
    assert _answer(graph, line) == answer


@pytest.mark.parametrize("line, answer", [
    ("select: he->query: name [0]", "man"),
    ("select: she->query: name [0]", "woman"),
    ("select: he->relate: table,to the right of,o [0]->exist: ? [1]", "no"),
    ("select: this->choose name: table|chair [0]", "table"),
    ("select: it->exist: ? [0]", "yes"),
])
def test_pronouns_select_the_objects_they_may_stand_for(line, answer):
    graph = _scene({"1": {"name": "man", "relations": [{"name": "to the left of", "object": "2"}]},
                    "2": {"name": "woman"}, "3": {"name": "table"}})
    graph_one = _scene({"1": {"name": "table"}})
    assert _answer(graph if "this" not in line else graph_one, line) == answer


def test_names_values_and_relations_outside_the_ontology_are_answered():
    graph = _scene({"1": {"name": "skateboard ramp", "attributes": ["graffitied"],
                          "relations": [{"name": "doodling on", "object": "2"}]},
                    "2": {"name": "fences"}})
    oracle = SceneGraphOracle([graph])
    assert oracle.unknown_concepts == {("name", "skateboard ramp"): 1, ("attr", "graffitied"): 1,
                                       ("rel", "doodling on"): 1}
    ask = lambda p: (oracle.unary if p.arity == 1 else oracle.binary)(Requests.build([0], [p])).exp()[0]
    assert ask(Predicate("skateboard ramp", 1, "name")).tolist() == [1, 0, 0]
    assert ask(Predicate("skateboard ramp", 1, "class")).tolist() == [1, 0, 0]
    assert ask(Predicate("graffitied", 1, "attr")).tolist() == [1, 0, 0]
    assert ask(Predicate("doodling on", 2, "rel"))[0].tolist() == [0, 1, 0]
    assert ask(Predicate("fence", 1, "name")).tolist() == [0, 1, 0]  # a raw plural meets the vocabulary form
    inventory = ConceptInventory().update(scene_graphs=[graph])
    line = "select: fence->relate: _,doodling on,s [0]->query: name [1]"
    assert _answer(graph, line, known_values=known_values(inventory)) == "skateboard ramp"
    assert _answer(graph, "select: skateboard ramp->filter: graffitied [0]->exist: ? [1]") == "yes"


def test_a_later_batch_new_word_is_absent_from_an_earlier_oracle():
    first = SceneGraphOracle([_scene({"1": {"name": "cat"}})])
    SceneGraphOracle([_scene({"1": {"name": "zorse", "attributes": ["stripy"]}})])  # adds columns to the shared table
    for p in (Predicate("zorse", 1, "name"), Predicate("stripy", 1, "attr")):
        assert first.unary(Requests.build([0], [p])).exp().sum() == 0


WORDS = ["cat", "dog", "zorse", "quokka", "skateboard ramp", "man", "girls"]
VALUES = ["red", "stripy", "graffitied", "wooden", "fluffy"]


@given(st.lists(st.tuples(st.sampled_from(WORDS), st.sets(st.sampled_from(VALUES), max_size=3)), min_size=1, max_size=5))
def test_a_plain_graph_answers_exactly_its_own_names_and_values(objects):
    graph = _scene({str(i): {"name": n, "attributes": sorted(a)} for i, (n, a) in enumerate(objects)})
    oracle = SceneGraphOracle([graph])
    for word in WORDS:
        form = oracle.ontology.normalize(word)
        got = oracle.unary(Requests.build([0], [Predicate(word, 1, "class")])).exp()[0, :len(objects)]
        assert got.tolist() == [float(oracle.ontology.normalize(n) == form) for n, _ in objects]
    for value in VALUES:
        got = oracle.unary(Requests.build([0], [Predicate(value, 1, "attr")])).exp()[0, :len(objects)]
        assert got.tolist() == [float(value in a) for _, a in objects]
    assert torch.all(oracle.unary(Requests.build([0], [Predicate("it", 1, "name")])).exp()[0] ==
                     torch.tensor([1.0] * len(objects) + [0.0]))  # every object, not the scene itself


def test_only_a_vocabulary_that_lists_gendered_names_reads_gender_from_names():
    data = Ontology.gqa().to_data()
    plain = Ontology.from_data(**{k: v for k, v in data.items() if k != "gendered_names"})
    for ontology, expected in ((Ontology.gqa(), 1.0), (plain, 0.0)):  # the embedded dataset's reads no gender
        oracle = SceneGraphOracle([GROUP], ontology=ontology)
        assert oracle.unary(Requests.build([0], [Predicate("female", 1, "attr")])).exp()[0, 0] == expected
    assert Ontology.from_data(**data).gendered_names == Ontology.gqa().gendered_names


def test_a_singular_name_gives_no_gender_but_pronouns_follow_it():
    oracle = SceneGraphOracle([MIXED])  # man, woman, table
    female = oracle.unary(Requests.build([0], [Predicate("female", 1, "attr")])).exp()[0]
    she = oracle.unary(Requests.build([0], [Predicate("she", 1, "name")])).exp()[0]
    assert female.sum() == 0 and she.tolist() == [0, 1, 0, 0]


@pytest.mark.parametrize("workers", ["1", "2"])  # scenes decoded up front, or kept as text for the workers
def test_eval_competes_what_its_scene_graphs_hold_in_open_queries(workers, tmp_path, capsys):
    """`nablafol eval --scene-graphs`: `query name` and `query TYPE` candidates are the ontology's
    values plus what the given graphs hold (a name outside the ontology is answered)."""
    graphs = {"g": {"width": 600, "height": 400, "objects": {
        "1": {"name": "skateboard ramp", "x": 10, "y": 50, "w": 80, "h": 80, "attributes": ["graffitied"],
              "relations": [{"name": "to the left of", "object": "2"}]},
        "2": {"name": "fence", "x": 200, "y": 50, "w": 80, "h": 80, "attributes": [], "relations": []}}}}
    questions = {"q1": {"imageId": "g", "answer": "skateboard ramp",
                        "semanticStr": "select: fence->relate: _,to the left of,s [0]->query: name [1]"},
                 "q2": {"imageId": "g", "answer": "yes",
                        "semanticStr": "select: skateboard ramp->filter: graffitied [0]->exist: ? [1]"}}
    (tmp_path / "sg.json").write_text(json.dumps(graphs))
    (tmp_path / "q.json").write_text(json.dumps(questions))
    out = tmp_path / "p.json"
    assert main(["eval", "--questions", str(tmp_path / "q.json"), "--scene-graphs", str(tmp_path / "sg.json"),
                 "--predictions", str(out), "--strict", "--workers", workers]) == 0, capsys.readouterr().err
    assert {p["questionId"]: p["prediction"] for p in json.loads(out.read_text())} == {
        "q1": "skateboard ramp", "q2": "yes"}


@pytest.mark.parametrize("graphs", [name for _, name in SETS])
def test_the_words_of_scene_graphs_are_the_same_read_whole_or_kept_as_text(graphs):
    from nablafol.data import SceneGraphTexts, scene_graph_words
    names, values = scene_graph_words(load_scene_graphs(REAL / graphs))
    assert scene_graph_words(SceneGraphTexts(REAL / graphs)) == (names, values)
    inventory = ConceptInventory().update(scene_graphs=load_scene_graphs(REAL / graphs).values(), relations=False)
    assert known_values(inventory) == {"name": sorted(names), None: sorted(values)}


# --- GQA's own categories, and what an open question presupposes -------------------------------------

TRAIN_CAR = {"g": {"width": 600, "height": 400, "objects": {
    "1": {"name": "man", "x": 10, "y": 50, "w": 80, "h": 80, "attributes": [],
          "relations": [{"name": "on", "object": "2"}]},
    "2": {"name": "train car", "x": 100, "y": 50, "w": 300, "h": 200, "attributes": [], "relations": []},
    "3": {"name": "sky", "x": 0, "y": 0, "w": 600, "h": 50, "attributes": [], "relations": []}}}}
PLACE_QUESTIONS = {  # the two real misses (`on`, `in`), and what must not change
    "on": ("select: man (1)->relate: place,on,o (2) [0]->query: name [1]", "train car"),
    "choose": ("select: man (1)->relate: place,on,o (2) [0]->choose name: station|train car [1]", "train car"),
    "exist": ("select: man (1)->relate: place,on,o (2) [0]->exist: ? [1]", None),
    "verify": ("select: man (1)->relate: place,on,o (2) [0]->verify color: red [1]", "no"),
    "select": ("select: place (2)->query: name [0]", None),
}


def _place_outcomes(ontology):
    from nablafol.data import question_from_record
    graphs = {"g": scene_graph_from_record("g", TRAIN_CAR["g"])}
    questions = [question_from_record(k, {"imageId": "g", "semanticStr": line}) for k, (line, _) in PLACE_QUESTIONS.items()]
    outcomes = {}
    for keep in (False, True):  # details kept or not: the same answers and flags
        answerer = Answerer(SceneGraphPerception(graphs, ontology=ontology), keep_outcomes=keep)
        got = {o.question_id: o for o in answerer.answer_chunk(questions)}
        assert not outcomes or {k: (o.prediction, o.guessed, o.fallback) for k, o in got.items()} == {
            k: (o.prediction, o.guessed, o.fallback) for k, o in outcomes.items()}
        outcomes = got
    return outcomes


def test_the_place_train_car_case_falls_back_under_the_shipped_ontology_and_is_flagged():
    """The shipped ontology files `train car` under `vehicle` only: the relate selects nothing. The
    open questions answer with `place` widened to every class (flagged, not a guess); exist and
    verify keep the empty set's answer; a select of an empty category stays a guess."""
    outcomes = _place_outcomes(Ontology.gqa())
    for key in ("on", "choose"):
        o = outcomes[key]
        assert (o.prediction, o.fallback, o.guessed) == ("train car", True, False)
        assert o.grounding == ("2",) and o.answers["train car"] == 1.0 and "place" not in o.formula  # widened
    assert (outcomes["exist"].prediction, outcomes["exist"].fallback) == ("no", False)
    assert (outcomes["verify"].prediction, outcomes["verify"].fallback) == ("no", False)
    assert (outcomes["select"].guessed, outcomes["select"].fallback) == (True, False)


def test_the_place_train_car_case_with_gqa_categories_needs_no_fallback():
    outcomes = _place_outcomes(OntologyExtension({"place": {"train car": 1}}).applied_to(Ontology.gqa()))
    assert {k: (o.prediction, o.fallback, o.guessed) for k, o in outcomes.items()} == {
        "on": ("train car", False, False), "choose": ("train car", False, False), "exist": ("yes", False, False),
        "verify": ("no", False, False), "select": ("train car", False, False)}


def test_vocabulary_learns_the_categories_and_eval_takes_them(tmp_path, capsys):
    """`nablafol vocabulary --categories-out` over training records writes the extension; `eval`
    over other questions counts the presupposition fallbacks without it, and none with it."""
    train_graphs = {"t": {"width": 600, "height": 400, "objects": {
        "7": {"name": "woman", "x": 10, "y": 50, "w": 80, "h": 80, "attributes": [],
              "relations": [{"name": "in", "object": "8"}]},
        "8": {"name": "train cars", "x": 100, "y": 50, "w": 300, "h": 200, "attributes": [], "relations": []}}}}
    train_questions = {"t1": {"imageId": "t", "answer": "train car",
                              "semanticStr": "select: woman (7)->relate: place,in,o (8) [0]->query: name [1]"}}
    val_questions = {"v1": {"imageId": "g", "answer": "train car", "semanticStr": PLACE_QUESTIONS["on"][0]},
                     "v2": {"imageId": "g", "answer": "yes", "semanticStr": PLACE_QUESTIONS["exist"][0]}}
    for name, content in (("tq.json", train_questions), ("tsg.json", train_graphs), ("vq.json", val_questions),
                          ("vsg.json", TRAIN_CAR)):
        (tmp_path / name).write_text(json.dumps(content))
    extension = tmp_path / "categories.json"
    assert main(["vocabulary", "--questions", str(tmp_path / "tq.json"), "--scene-graphs", str(tmp_path / "tsg.json"),
                 "--categories-out", str(extension)]) == 0
    out = capsys.readouterr().out
    assert "1 classes join 1 categories" in out and "place (+1): train car ×1" in out
    assert json.loads(extension.read_text())["categories"] == {"place": {"train car": 1}}
    argv = ["eval", "--questions", str(tmp_path / "vq.json"), "--scene-graphs", str(tmp_path / "vsg.json"),
            "--predictions", str(tmp_path / "p.json")]
    assert main(argv + ["--details", str(tmp_path / "d.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "presupposition fallbacks: 1 " in out and "50.00%" in out  # `exist` says no: the set is empty
    details = {d["questionId"]: d for d in map(json.loads, (tmp_path / "d.jsonl").read_text().splitlines())}
    assert details["v1"].get("fallback") is True and "fallback" not in details["v2"]
    assert main(argv + ["--workers", "2", "--chunk-size", "1"]) == 0  # counted from each worker's chunks
    assert "presupposition fallbacks: 1 " in capsys.readouterr().out
    assert main(argv + ["--ontology-extension", str(extension)]) == 0
    out = capsys.readouterr().out
    assert "presupposition fallbacks" not in out and "100.00%" in out


def test_an_extension_goes_with_scene_graphs_not_a_model(tmp_path, capsys):
    code = main(["eval", "--questions", "q.json", "--features", "f", "--model", "m", "--predictions",
                 str(tmp_path / "p.json"), "--ontology-extension", "e.json"])
    err = capsys.readouterr().err
    assert code == 2 and "--ontology-extension goes with --scene-graphs" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("graphs", [name for _, name in SETS])
def test_every_public_real_scene_graph_is_read_and_answered_over_without_a_refusal(graphs):
    """Every object of every real scene graph kept here, asked about as its own graph has it
    (crisp truth read off the record): it exists, has each of its attributes, and stands in
    each of its relations with its target's name; every question answered, none skipped."""
    from nablafol.data import question_from_record
    loaded = load_scene_graphs(REAL / graphs)
    questions, truth = [], {}
    for image_id, graph in loaded.items():
        names = {o.id: o.name for o in graph.objects}
        for obj in graph.objects:
            lines = [f"select: {obj.name} ({obj.id})->exist: ? [0]"]
            lines += [f"select: {obj.name} ({obj.id})->filter: {a} [0]->exist: ? [1]" for a in obj.attributes]
            lines += [f"select: {obj.name} ({obj.id})->relate: {names[r.object_id]},{r.name},o ({r.object_id}) [0]->exist: ? [1]"
                      for r in obj.relations if r.object_id in names]
            for line in lines:
                qid = f"{image_id}-{len(questions)}"
                questions.append(question_from_record(qid, {"imageId": image_id, "semanticStr": line, "answer": "yes"}))
                truth[qid] = "yes"
    assert len(questions) > 100
    run = answer_all(questions, Answerer(SceneGraphPerception(loaded)))
    assert run.skips == [] and {q: p for q, p in run.predictions.items() if p != truth[q]} == {}


def test_categories_learned_from_the_real_train_records_say_where_they_come_from(tmp_path, capsys):
    out = tmp_path / "categories.json"
    assert main(["vocabulary", "--questions", str(REAL / "domiknows_train_questions.json"), "--scene-graphs",
                 str(REAL / "domiknows_train_sceneGraphs.json"), "--categories-out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "33 questions (0 unreadable, 0 without a scene graph); 10 objects grounded under a category, 10 as" in printed
    learned = json.loads(out.read_text())["learned from"]
    assert learned["questions file"] == "domiknows_train_questions.json" and learned["questions"] == 33
    assert OntologyExtension.from_file(out).categories == {}  # the shipped ontology files all ten so
    assert main(["vocabulary", "--questions", str(REAL / "domiknows_train_questions.json"),
                 "--categories-out", str(out)]) == 2
    assert "give --scene-graphs" in capsys.readouterr().err


def test_a_bad_extension_given_to_eval_is_one_line_naming_it(tmp_path, capsys):
    bad = tmp_path / "categories.json"
    bad.write_text('{"format": "nablafol ontology extension", "version": 1, "categories": {"place": ["road"]}}')
    code = main(["eval", "--questions", str(REAL / "train_balanced_questions.sample.json"), "--scene-graphs",
                 str(REAL / "train_sceneGraphs.sample.json"), "--predictions", str(tmp_path / "p.json"),
                 "--ontology-extension", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and str(bad) in err and "category 'place'" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "p.json").exists()
