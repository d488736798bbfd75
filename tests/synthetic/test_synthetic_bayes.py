"""The Bayes oracle of the embedded dataset: posteriors under the generator's own model."""
import json

import numpy as np
import pytest

from nablafol.compiler import Compiler
from nablafol.data import load_questions, load_scene_graphs
from nablafol.dsl import Ontology
from nablafol.pipeline.answering import Answerer
from nablafol.pipeline.evaluation import answer_all
from nablafol.pipeline.perception import SceneGraphPerception
from nablafol.scoring import Scorer, vocabulary_match
from nablafol.synthetic import generate_dataset
from nablafol.synthetic.bayes import ClassPrior, bayes_scene_graphs, main, write_bayes_scene_graphs
from nablafol.synthetic.object_features import ConceptCodes, image_features
from nablafol.synthetic.writer import _rng, build_dataset


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bayes") / "data"
    generate_dataset(folder, n_train=40, n_val=12, n_testdev=12, seed=4)
    return folder


def accuracy(data, graphs_path, split):
    ontology = Ontology.from_folder(data / "ontology")
    scorer = Scorer(vocabulary_match)
    answer_all(load_questions(data / f"{split}_balanced_questions.json").values(),
               Answerer(SceneGraphPerception(load_scene_graphs(graphs_path), ontology=ontology),
                        compiler=Compiler(ontology)), scorer=scorer)
    return scorer.compute().accuracy["all"]


@pytest.mark.slow
def test_the_posteriors_are_probabilities_and_mostly_the_truth(data, tmp_path):
    n = write_bayes_scene_graphs(data, "val", tmp_path / "bayes.json")
    bayes, truth = load_scene_graphs(tmp_path / "bayes.json"), load_scene_graphs(data / "val_sceneGraphs.json")
    assert n == len(truth) == 12 and list(bayes) == list(truth)
    right, uncertain = 0, 0
    for image, graph in truth.items():
        assert [o.id for o in bayes[image].objects] == [o.id for o in graph.objects]
        for b, t in zip(bayes[image].objects, graph.objects):
            assert all(0 < p <= 1 for p in [*b.names.values(), *b.attributes.values()])
            assert sum(b.names.values()) == pytest.approx(1, abs=1e-3)
            assert b.relations == t.relations and (b.x, b.y, b.w, b.h) == (t.x, t.y, t.w, t.h)
            right += max(b.names, key=b.names.get) == t.name
            uncertain += max(b.names.values()) < 0.99
    objects = sum(len(g.objects) for g in truth.values())
    assert right / objects > 0.8 and uncertain > 0  # mostly right, not the truth copied
    assert 0.8 < accuracy(data, tmp_path / "bayes.json", "val") < 1.0


def test_with_little_noise_every_visible_concept_is_certain(data):
    card = json.loads((data / "dataset_card.json").read_text())
    dataset = build_dataset(seed=card["seed"], n_train=40, n_val=12, n_testdev=12)
    codes = ConceptCodes.draw(dataset.vocabulary, card["features"]["dim"], _rng(card["seed"], "codes"))
    graphs, rng = dataset.scenes["val"], np.random.default_rng(0)
    features = [image_features(g, codes, rng, noise_std=0.01, context_scale=0.5)[0] for g in graphs]
    bayes = bayes_scene_graphs(graphs, features, codes, dataset.vocabulary, ClassPrior(dataset.scenes["train"], dataset.vocabulary.classes),
                               noise_std=0.01, context_scale=0.5)
    checked = 0
    for graph, posterior in zip(graphs, bayes):
        for t, b in zip(graph.objects, posterior.objects):
            if codes.strength(t.name) > 0.1:  # the nearly invisible concepts stay doubtful, as they should
                assert b.names[t.name] > 0.99
                checked += 1
            for value in t.attributes:
                if codes.strength(value) > 0.1:
                    assert b.attributes[value] > 0.99
            assert all(p < 0.01 for v, p in b.attributes.items() if v not in t.attributes and codes.strength(v) > 0.1)
    assert checked > 40
    assert bayes_scene_graphs(graphs, features, codes, dataset.vocabulary, ClassPrior(dataset.scenes["train"], dataset.vocabulary.classes),
                              noise_std=0.0, context_scale=0.5) == graphs  # no noise: the truth


def test_test_dev_is_rebuilt_and_a_folder_not_generated_is_one_line(data, tmp_path, capsys):
    assert main([str(data), "testdev", str(tmp_path / "t.json")]) == 0
    assert len(load_scene_graphs(tmp_path / "t.json")) == 12
    assert main([str(tmp_path), "val", str(tmp_path / "x.json")]) == 1
    assert "no dataset card" in capsys.readouterr().out
    assert main([str(data), "test", str(tmp_path / "x.json")]) == 1
    assert "split must be one of train, val, testdev" in capsys.readouterr().out


def test_sparse_relations_are_rebuilt_as_written_and_other_settings_refused(tmp_path, capsys):
    """A set written with --spatial-neighbours gets Bayes graphs with its own (sparse) relations;
    one whose card no longer says how its relations were made is refused in one line."""
    folder = tmp_path / "sparse"
    generate_dataset(folder, n_train=4, n_val=3, n_testdev=0, feature_dim=8, seed=1, spatial_neighbours=1)
    write_bayes_scene_graphs(folder, "val", tmp_path / "b.json")
    bayes, written = load_scene_graphs(tmp_path / "b.json"), load_scene_graphs(folder / "val_sceneGraphs.json")
    assert {k: [sorted((r.name, r.object_id) for r in o.relations) for o in g.objects] for k, g in bayes.items()} == {
        k: [sorted((r.name, r.object_id) for r in o.relations) for o in g.objects] for k, g in written.items()}
    card = json.loads((folder / "dataset_card.json").read_text())
    del card["spatial_neighbours"]  # read as every pair: the rebuilt scenes hold more relations
    (folder / "dataset_card.json").write_text(json.dumps(card))
    assert main([str(folder), "val", str(tmp_path / "x.json")]) == 1
    out = capsys.readouterr().out
    assert "differ from the written ones" in out and out.count("\n") == 1
