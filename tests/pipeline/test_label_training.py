"""Supervised training on scene graphs' labels: the perception ceiling's loop and
``nablafol train --scene-graphs``'s pretraining."""
import numpy as np
import pytest
import torch

from nablafol.cli import main
from nablafol.compiler import Compiler
from nablafol.data import FeatureStore, load_questions, load_scene_graphs
from nablafol.dsl import Ontology
from nablafol.neural import ConceptVocabulary, NeuralOracleModel
from nablafol.neural.supervision import align_objects
from nablafol.pipeline.answering import Answerer
from nablafol.pipeline.evaluation import answer_all
from nablafol.pipeline.label_training import LabelConfig, train_on_labels
from nablafol.pipeline.perception import FeaturePerception
from nablafol.scoring import score, vocabulary_match

# its fixtures train or generate for the whole module: among the longest of a measured run
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory):
    from nablafol.synthetic import generate_dataset
    out = tmp_path_factory.mktemp("labels")
    generate_dataset(out, n_train=150, n_val=40, n_testdev=2, seed=7, feature_dim=16, questions_per_scene=6)
    return out


def _accuracy(model, data, onto):
    model.eval()
    perception = FeaturePerception(FeatureStore(data / "features"), model, onto)
    questions = list(load_questions(data / "val_balanced_questions.json").values())
    result = answer_all(questions, Answerer(perception, compiler=Compiler(onto)))
    return score(questions, result.predictions, match=vocabulary_match).overall.accuracy["all"]


def test_labels_teach_the_oracle_what_the_answers_need(small_dataset):
    """Trained on the train graphs' labels only (never an answer), the oracle answers the
    validation questions through the engine far better than the same network untrained."""
    data = small_dataset
    onto = Ontology.from_folder(data / "ontology")
    torch.manual_seed(0)
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(onto), feature_dim=16, hidden_dim=64,
                                             embedding_dim=32, projection_dim=32, pair_hidden_dim=32)
    before = _accuracy(model, data, onto)
    history = train_on_labels(model, FeatureStore(data / "features"), load_scene_graphs(data / "train_sceneGraphs.json"),
                              onto, LabelConfig(epochs=15, batch_size=16, lr=1e-2))
    after = _accuracy(model, data, onto)
    assert history[-1]["label_loss"] < 0.7 * history[0]["label_loss"], history
    assert history[0]["images"] == 150
    assert after >= before + 0.08, (before, after)


def test_align_objects_matches_brute_force_greedy_iou():
    """Each detection gets the graph object of largest IoU (>= 0.5), best pairs first, one each."""
    from nablafol.data import SceneObject
    rng = np.random.default_rng(0)
    for _ in range(30):
        graph = [SceneObject(str(k), {"cup": 1.0}, *map(float, rng.integers(0, 40, 2)), *map(float, rng.integers(2, 20, 2)))
                 for k in range(int(rng.integers(1, 5)))]
        boxes = np.array([[o.x, o.y, o.x + o.w, o.y + o.h] for o in graph], np.float32)[rng.permutation(len(graph))]
        boxes = boxes + rng.normal(0, 1.5, boxes.shape).astype(np.float32)
        got = align_objects(boxes, graph)

        def iou(b, o):
            ix = max(0.0, min(b[2], o.x + o.w) - max(b[0], o.x))
            iy = max(0.0, min(b[3], o.y + o.h) - max(b[1], o.y))
            union = (b[2] - b[0]) * (b[3] - b[1]) + o.w * o.h - ix * iy
            return ix * iy / union
        pairs = sorted(((iou(b, o), d, g) for d, b in enumerate(boxes) for g, o in enumerate(graph)), key=lambda t: -t[0])
        want, used = [-1] * len(boxes), set()
        for value, d, g in pairs:
            if value >= 0.5 and want[d] < 0 and g not in used:
                want[d] = g
                used.add(g)
        assert got.tolist() == want


def test_train_pretrains_on_scene_graphs_then_answers(small_dataset, tmp_path, capsys):
    data = small_dataset
    code = main(["train", "--data", str(data), "--scene-graphs", str(data / "train_sceneGraphs.json"),
                 "--pretrain-epochs", "1", "--epochs", "1", "--hidden", "32", "--out", str(tmp_path / "m")])
    out = capsys.readouterr().out
    assert code == 0
    assert "pretraining on the labels of 150 of 150 scene graphs (1 epochs)" in out
    assert "labels epoch 1/1" in out and (tmp_path / "m" / "config.json").exists()
    from nablafol.neural import load_model
    assert load_model(tmp_path / "m")[0].config.head == "cosine"  # train's default heads


def test_train_head_dot_gives_the_papers_heads(small_dataset, tmp_path):
    from nablafol.neural import load_model
    assert main(["train", "--data", str(small_dataset), "--epochs", "1", "--hidden", "16", "--head", "dot",
                 "--val-limit", "20", "--out", str(tmp_path / "m")]) == 0
    assert load_model(tmp_path / "m")[0].config.head == "dot"


def test_pretrain_epochs_without_scene_graphs_is_a_usage_error(small_dataset, tmp_path, capsys):
    code = main(["train", "--data", str(small_dataset), "--pretrain-epochs", "2", "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert code == 2 and "--pretrain-epochs needs --scene-graphs" in err and "Traceback" not in err


def _tiny_model(onto, seed=0):
    torch.manual_seed(seed)
    return NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(onto), feature_dim=16, hidden_dim=32,
                                            embedding_dim=16, projection_dim=16, pair_hidden_dim=16)


def test_early_stopping_keeps_the_best_epochs_weights(small_dataset):
    """With a patience, training stops once that many epochs have not bettered the best
    validation, and the model ends with the best epoch's weights, its record marked."""
    data = small_dataset
    onto = Ontology.from_folder(data / "ontology")
    model = _tiny_model(onto)
    scores, seen = iter([0.5, 0.7, 0.6, 0.65, 0.9, 0.95]), []

    def validate():
        seen.append({k: v.clone() for k, v in model.state_dict().items()})
        return next(scores)
    graphs = load_scene_graphs(data / "train_sceneGraphs.json")
    history = train_on_labels(model, FeatureStore(data / "features"), graphs, onto,
                              LabelConfig(epochs=6, batch_size=64, lr=1e-2, patience=2), validate=validate)
    assert [h["epoch"] for h in history] == [0, 1, 2, 3] and [h.get("best", False) for h in history] == [
        False, True, False, False]
    for name, value in model.state_dict().items():
        assert torch.equal(value, seen[1][name]), name
    assert not torch.equal(seen[1]["unary_bias"], seen[3]["unary_bias"])  # it did train past the best
    # no patience: every epoch, the last weights
    model = _tiny_model(onto)
    scores = iter([0.9, 0.1, 0.1])
    assert len(train_on_labels(model, FeatureStore(data / "features"), graphs, onto,
                               LabelConfig(epochs=3, batch_size=64, lr=1e-2), validate=lambda: next(scores))) == 3
    with pytest.raises(ValueError, match="patience"):
        LabelConfig(patience=-1)


def test_concept_accuracy_counts_against_the_labels(small_dataset):
    """Per concept, decisions at 0.5 against the graphs: the golden oracle itself is right on
    every entry; an oracle that says no to everything finds no positive and is right exactly on
    the negatives; the network's figures lie between and are counted over the same entries."""
    from nablafol.graph_oracles import SceneGraphOracle
    from nablafol.neural import FeatureBatch
    from nablafol.neural.supervision import SceneGraphTeacher
    from nablafol.pipeline.label_training import concept_accuracy
    data = small_dataset
    onto = Ontology.from_folder(data / "ontology")
    model = _tiny_model(onto)
    store, graphs = FeatureStore(data / "features"), load_scene_graphs(data / "val_sceneGraphs.json")
    teacher = SceneGraphTeacher(graphs, model.vocabulary, onto)
    batch = FeatureBatch.from_store(store, sorted(graphs)[:8])
    golden = SceneGraphOracle([graphs[i] for i in batch.image_ids], ontology=onto)

    class Reading:
        """The golden tables through ``change`` (finite: a structural zero is no entry)."""

        def __init__(self, change):
            self.change, self.num_objects = change, golden.num_objects

        def unary(self, requests):
            return self.change(golden.unary(requests))

        def binary(self, requests):
            return self.change(golden.binary(requests))
    said = teacher.concept_counts(Reading(lambda t: t.clamp(min=-30.0)), batch)
    never = teacher.concept_counts(Reading(lambda t: torch.full_like(t, -30.0)), batch)
    assert said.keys() == never.keys() and len(said) > 20
    assert any(positives for _, _, positives, _ in said.values())
    for concept, (entries, right, positives, found) in said.items():
        assert (right, found) == (entries, positives), concept
        n_entries, n_right, n_positives, n_found = never[concept]
        assert (n_entries, n_positives, n_found, n_right) == (entries, positives, 0, entries - positives), concept
    report = concept_accuracy(model, store, graphs, onto)
    assert set(report) == {f"{kind} {name}" for kind, name in said}
    for concept, figures in report.items():
        assert 0 <= figures["accuracy"] <= 1 and figures["entries"] > 0, concept
        assert (figures["recall"] is None) == (figures["positives"] == 0), concept
