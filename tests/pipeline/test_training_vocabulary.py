"""`nablafol train` learns every concept its training questions name, the model folder records
it, and `nablafol eval` with that model lists a question about a concept it never learned as
`concept not learned: X` (issue 16)."""
import json
import shutil

import pytest

from nablafol.cli import main
from nablafol.dsl import Ontology
from nablafol.ir import Predicate
from nablafol.neural import ConceptVocabulary, load_model
from nablafol.pipeline.datasets import dataset_files
from nablafol.pipeline.oracle_training import TrainConfig, TrainingJob, train_oracle

NEW_NAME, NEW_VALUE, NEVER = "zorse", "granite", "quokka"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """The embedded generator's tiny dataset, with two training questions naming words its
    ontology lacks (a name, a typed value) and a test question naming a third."""
    from nablafol.synthetic import generate_dataset
    out = tmp_path_factory.mktemp("open")
    generate_dataset(out, n_train=12, n_val=4, n_testdev=2, seed=3, feature_dim=16, questions_per_scene=4)
    train = out / "train_balanced_questions.json"
    records = json.loads(train.read_text())
    image = next(iter(records.values()))["imageId"]
    records["new1"] = {"imageId": image, "answer": "no", "question": "Is there a zorse?",
                       "semanticStr": f"select: {NEW_NAME}->exist: ? [0]"}
    records["new2"] = {"imageId": image, "answer": "no", "question": "Is there granite?",
                       "semanticStr": f"select: {NEW_NAME}->filter material: {NEW_VALUE} [0]->exist: ? [1]"}
    train.write_text(json.dumps(records))
    test = out / "unseen_questions.json"
    test.write_text(json.dumps({
        "seen": {"imageId": image, "answer": "no", "semanticStr": f"select: {NEW_NAME}->exist: ? [0]"},
        "unseen": {"imageId": image, "answer": "no", "semanticStr": f"select: {NEVER}->exist: ? [0]"}}))
    return out


@pytest.fixture(scope="module")
def model(dataset, tmp_path_factory):
    out = tmp_path_factory.mktemp("model")
    shutil.rmtree(out)
    logged = []
    train_oracle(TrainingJob(dataset_files(dataset), out, TrainConfig(epochs=1, batch_size=8, seed=0), hidden_dim=16),
                 log=logged.append)
    assert any("beyond the ontology" in line for line in logged)
    return out


def test_the_model_learns_every_concept_its_training_questions_name(dataset, model):
    _, vocabulary, extra = load_model(model)
    recorded = Ontology.from_data(**extra["ontology"])
    assert recorded.is_name(NEW_NAME) and NEW_VALUE in recorded.values_of("material")
    assert vocabulary.knows(Predicate(NEW_NAME, 1, "name")) and vocabulary.knows(Predicate(NEW_VALUE, 1, "attr"))
    assert not vocabulary.knows(Predicate(NEVER, 1, "name"))
    plain = ConceptVocabulary.from_ontology(Ontology.from_folder(dataset / "ontology"))
    assert not plain.knows(Predicate(NEW_NAME, 1, "name"))  # it was the data that taught it


def test_eval_lists_a_concept_the_model_never_learned(dataset, model, tmp_path, capsys):
    predictions, skipped = tmp_path / "p.json", tmp_path / "skipped.json"
    code = main(["eval", "--questions", str(dataset / "unseen_questions.json"), "--features",
                 str(dataset / "features"), "--model", str(model), "--predictions", str(predictions),
                 "--skipped", str(skipped)])
    assert code == 0, capsys.readouterr().err
    answered = {p["questionId"] for p in json.loads(predictions.read_text())}
    assert "seen" in answered
    listed = json.loads(skipped.read_text())
    entries = listed if isinstance(listed, list) else [dict(questionId=k, **v) for k, v in listed.items()]
    assert [(e["questionId"], e["detail"]) for e in entries if e["questionId"] == "unseen"] == [
        ("unseen", f"concept not learned: name {NEVER!r}")]


def test_train_takes_an_ontology_extension_and_the_model_folder_keeps_it(dataset, tmp_path):
    """`nablafol train --ontology-extension FILE`: the classes join their categories in the
    ontology the model is trained with, and the folder records that ontology (eval --model
    answers with it)."""
    from nablafol.dsl import OntologyExtension
    base = Ontology.from_folder(dataset / "ontology")
    category = sorted(base.categories)[0]
    outsider = next(c for c in sorted(base.classes) if c not in base.classes_under(category))
    extension = tmp_path / "categories.json"
    extension.write_text(json.dumps(OntologyExtension({category: {outsider: 2}}).to_data()))
    out = tmp_path / "model"
    assert main(["train", "--data", str(dataset), "--out", str(out), "--epochs", "1", "--batch-size", "8",
                 "--hidden", "16", "--ontology-extension", str(extension)]) == 0
    recorded = Ontology.from_data(**load_model(out)[2]["ontology"])
    assert outsider in recorded.classes_under(category) and outsider not in base.classes_under(category)

def test_train_refuses_a_model_folder_that_is_its_ontology_extension(dataset, tmp_path, capsys):
    extension = tmp_path / "categories.json"
    extension.write_text(json.dumps({"format": "nablafol ontology extension", "version": 1, "categories": {}}))
    assert main(["train", "--data", str(dataset), "--out", str(extension), "--ontology-extension",
                 str(extension)]) == 2
    assert "is also --ontology-extension" in capsys.readouterr().err
