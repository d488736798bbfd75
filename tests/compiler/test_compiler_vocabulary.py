"""The concepts a dataset names (compiler.vocabulary) and `nablafol vocabulary`."""
import json
from pathlib import Path

import pytest

from nablafol.cli import main
from nablafol.compiler.vocabulary import ConceptInventory, dataset_vocabulary, known_values, vocabulary_report
from nablafol.data import load_questions, load_scene_graphs
from nablafol.dsl import Ontology, parse_program
from nablafol.ir import Predicate

REAL = Path(__file__).parents[1] / "fixtures" / "real_gqa"


def test_every_kind_of_step_is_counted_with_the_type_its_step_gives():
    inventory = ConceptInventory()
    for line in ["select: man (1)->filter color: red [0]->relate: horse,riding,o (2) [1]->query: name [2]",
                 "select: shirt->choose: sleeveless|long sleeved [0]",
                 "select: this->choose name: bus|train [0]",
                 "select: cap->select: sign ->same color:  [0, 1]",
                 "select: animal->same: type [0]",
                 "select: plate->relate: _,on,s [0]->filter CapableOf: lift food [1]->exist: ? [2]"]:
        inventory.add_program(parse_program(line))
    assert inventory.counts == {
        ("name", None, "man"): 1, ("value", "color", "red"): 1, ("name", None, "horse"): 1,
        ("relation", None, "riding"): 1, ("type", None, "name"): 1, ("name", None, "shirt"): 1,
        ("value", None, "sleeveless"): 1, ("value", None, "long sleeved"): 1, ("name", None, "this"): 1,
        ("name", None, "bus"): 1, ("name", None, "train"): 1, ("name", None, "cap"): 1, ("name", None, "sign"): 1,
        ("type", None, "color"): 1, ("name", None, "animal"): 1, ("type", None, "type"): 1,
        ("name", None, "plate"): 1, ("relation", None, "on"): 1}  # `_` and knowledge steps are no concept
    assert inventory.programs == 6


def test_scene_graphs_add_their_names_untyped_attributes_and_relations():
    graphs = load_scene_graphs(REAL / "train_sceneGraphs.sample.json")
    inventory = ConceptInventory().update(scene_graphs=graphs.values())
    objects = [o for g in graphs.values() for o in g.objects]
    assert sum(n for (k, _, _), n in inventory.counts.items() if k == "name") == len(objects)
    assert sum(n for (k, _, _), n in inventory.counts.items() if k == "value") == sum(len(o.attributes) for o in objects)
    assert all(t is None for (k, t, _) in inventory.counts if k == "value")
    values = known_values(inventory)
    assert set(values) == {"name", "relation", None} and "wall" in values["name"]


def test_the_report_says_who_knows_each_concept():
    inventory = ConceptInventory()
    inventory.add_program(parse_program("select: plates->filter material: granite [0]->filter: sparkly [1]->"
                                        "relate: _,hovering over,s [2]->query: name [3]"))
    inventory.add_program(parse_program("select: plate->exist: ? [0]"))
    learned = {Predicate("granite", 1, "attr")}
    report = vocabulary_report(inventory, model_knows=learned.__contains__)
    status = {(c.kind, c.type, c.form): (c.known_by, c.mentions) for c in report.concepts}
    assert status == {("name", None, "plate"): ("ontology", 2),  # `plates` and `plate` are one concept
                      ("value", "material", "granite"): ("model", 1), ("value", None, "sparkly"): ("new", 1),
                      ("relation", None, "hovering over"): ("new", 1), ("type", None, "name"): ("ontology", 1)}
    assert report.summary()["value"] == {"distinct": 2, "mentions": 2, "ontology": 0, "model": 1, "new": 1}
    assert report.by_type() == {"material": {"ontology": 0, "model": 1, "new": 0},
                                None: {"ontology": 0, "model": 0, "new": 1}}
    assert report.new("relation") == [("hovering over", None, 1)]
    json.dumps(report.to_dict())


def test_what_a_report_calls_new_the_widened_ontology_knows():
    questions = load_questions(REAL / "gqa_ood_questions.sample.json")
    inventory = ConceptInventory().update(questions.values())
    gqa = Ontology.gqa()
    before = vocabulary_report(inventory, gqa).summary()
    after = vocabulary_report(inventory, gqa.joined(known_values(inventory))).summary()
    assert before["value"]["new"] > 0 and before["name"]["new"] > 0
    assert after["value"]["new"] == after["name"]["new"] == after["relation"]["new"] == 0


def test_nablafol_vocabulary_prints_counts_by_kind_and_type(tmp_path, capsys):
    out = tmp_path / "vocabulary.json"
    assert main(["vocabulary", "--questions", str(REAL / "domiknows_train_questions.json"),
                 "--scene-graphs", str(REAL / "domiknows_train_sceneGraphs.json"), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "33 programs (0 unreadable), 14 scene graphs" in printed
    assert "values by type" in printed and "(untyped)" in printed and "new names" in printed
    written = json.loads(out.read_text())
    expected = dataset_vocabulary(REAL / "domiknows_train_questions.json", REAL / "domiknows_train_sceneGraphs.json")
    assert written["summary"] == {k: v for k, v in expected.summary().items()}


def test_nablafol_vocabulary_with_a_model_counts_what_it_learned(tmp_path, capsys):
    from nablafol.neural import ConceptVocabulary, NeuralOracleModel, save_model
    questions = REAL / "gqa_ood_questions.sample.json"
    inventory = ConceptInventory().update(load_questions(questions).values())
    grown = Ontology.gqa().joined(known_values(inventory))
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(grown), feature_dim=4, hidden_dim=8)
    save_model(tmp_path / "model", model, extra={"ontology": grown.to_data()})
    assert main(["vocabulary", "--questions", str(questions), "--model", str(tmp_path / "model")]) == 0
    printed = capsys.readouterr().out
    assert "known by ontology / model / new" in printed and "new values" not in printed


@pytest.mark.parametrize("args, says", [
    (["--questions", "nowhere.json"], "nowhere.json"),
    (["--questions", "{q}", "--model", "nowhere"], "nowhere"),
])
def test_bad_input_is_one_line_and_status_2(args, says, capsys):
    args = [a.replace("{q}", str(REAL / "gqa_ood_questions.sample.json")) for a in args]
    assert main(["vocabulary", *args]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1
