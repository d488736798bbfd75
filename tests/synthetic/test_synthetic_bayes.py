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
from nablafol.synthetic.writer import build_dataset, stream_rng


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


@pytest.mark.slow
def test_with_little_noise_every_visible_concept_is_certain(data):
    card = json.loads((data / "dataset_card.json").read_text())
    dataset = build_dataset(seed=card["seed"], n_train=40, n_val=12, n_testdev=12)
    codes = ConceptCodes.draw(dataset.vocabulary, card["features"]["dim"], stream_rng(card["seed"], "codes"))
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


@pytest.mark.slow
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


# --- given the features only -------------------------------------------------------------------

SMALL_CLASSES = ("man", "boy", "hat", "cup", "dog")
NOISE = 1.2  # in 16 dimensions: enough to leave classes and contexts in doubt


@pytest.fixture(scope="module")
def small_world():
    """A five-class vocabulary, its codes (16-d), noisy features of a few scenes, the class prior."""
    from nablafol.synthetic import Vocabulary
    vocabulary = Vocabulary.default(classes=SMALL_CLASSES)
    dataset = build_dataset(n_train=30, n_val=4, n_testdev=1, seed=3, vocabulary=vocabulary, questions_per_scene=1)
    codes = ConceptCodes.draw(vocabulary, 16, np.random.default_rng(5))
    rng = np.random.default_rng(1)
    graphs = dataset.scenes["val"]
    features = [image_features(g, codes, rng, noise_std=NOISE, context_scale=0.5)[0] for g in graphs]
    return vocabulary, codes, graphs, features, ClassPrior(dataset.scenes["train"], vocabulary.classes)


def brute_force_posterior(graph, features, codes, vocabulary, prior, noise_std, context_scale):
    """Every object's class and attribute marginals and the scene's context posterior, by
    enumerating each context and each object's every (class, values) one by one."""
    import itertools
    from math import log

    from nablafol.synthetic.vocabulary import PRESENCE
    per_context, context_logs = [], []
    for ctx, share in prior.contexts.items():
        context = context_scale * codes.signal([v for v in ctx if v is not None])
        objects, total = [], log(share)
        for obj, f in zip(graph.objects, features):
            hypotheses = []
            for name in prior.classes:
                options = []
                for type_name in vocabulary.types_of(name):
                    palette = vocabulary.palette(name, type_name)
                    p = PRESENCE[type_name]
                    options.append([(None, 0.0)] + [(v, 0.0) for v in palette] if type_name == "size" else
                                   [(None, log(1 - p))] + [(v, log(p / len(palette))) for v in palette])
                for combination in itertools.product(*options):
                    values = [v for v, _ in combination if v is not None]
                    size = next((v for v in values if v in ("large", "small")), None)
                    residual = f - context - codes.signal([name, *values])
                    hypotheses.append((name, values, prior.log_share(ctx[0], name)
                                       + prior.log_size_prior(obj, graph, name, size)
                                       + sum(lp for _, lp in combination) - residual @ residual / (2 * noise_std ** 2)))
            logs = np.array([h[2] for h in hypotheses])
            evidence = np.logaddexp.reduce(logs)
            total += evidence
            objects.append([(name, values, np.exp(lp - evidence)) for name, values, lp in hypotheses])
        per_context.append(objects)
        context_logs.append(total)
    weights = np.exp(np.array(context_logs) - np.logaddexp.reduce(context_logs))
    classes, values = [], []
    for i in range(len(graph.objects)):
        c, v = {}, {}
        for w, objects in zip(weights, per_context):
            for name, chosen, p in objects[i]:
                c[name] = c.get(name, 0.0) + w * p
                for value in chosen:
                    v[value] = v.get(value, 0.0) + w * p
        classes.append(c), values.append(v)
    return dict(zip(prior.contexts, weights)), classes, values


@pytest.mark.slow
def test_features_only_marginals_are_the_enumerated_posterior(small_world):
    """Class and attribute marginals and the scene's context are those of the generator's model
    summed hypothesis by hypothesis (the context and every object's values summed out)."""
    from nablafol.synthetic.bayes import features_only_scene_graphs
    vocabulary, codes, graphs, features, prior = small_world
    bayes = features_only_scene_graphs(graphs, features, codes, vocabulary, prior, NOISE, 0.5, samples=16)
    doubtful = 0
    for graph, rows, posterior in zip(graphs, features, bayes):
        contexts, classes, values = brute_force_posterior(graph, np.asarray(rows, np.float64), codes, vocabulary,
                                                          prior, NOISE, 0.5)
        assert (posterior.location, posterior.weather) == max(contexts, key=contexts.get)
        for b, c, v in zip(posterior.objects, classes, values):
            assert {k: p for k, p in c.items() if p > 1e-6} == pytest.approx(b.names, abs=1e-9)
            assert {k: p for k, p in v.items() if p > 1e-6} == pytest.approx(b.attributes, abs=1e-9)
            doubtful += max(c.values()) < 0.99
        doubtful += max(contexts.values()) < 0.99
    assert doubtful > 0  # the noise leaves something to doubt: not the truth copied


@pytest.mark.slow
def test_features_only_reads_nothing_but_features_and_boxes(small_world):
    """The truth of names, attributes, relations and context is never read: scrubbed graphs give
    the same posteriors; with little noise they are the truth, relations included."""
    from dataclasses import replace

    from nablafol.synthetic.bayes import features_only_scene_graphs
    vocabulary, codes, graphs, features, prior = small_world
    scrubbed = [replace(g, location=None, weather=None, objects=tuple(
        replace(o, names={"cup": 1.0}, name="cup", attributes={}, relations=()) for o in g.objects)) for g in graphs]
    run = lambda gs, fs, noise: features_only_scene_graphs(gs, fs, codes, vocabulary, prior, noise, 0.5, samples=16)
    assert run(scrubbed, features, NOISE) == run(graphs, features, NOISE)
    rng = np.random.default_rng(2)
    clear = [image_features(g, codes, rng, noise_std=0.01, context_scale=0.5)[0] for g in graphs]
    checked = 0
    for truth, b in zip(graphs, run(scrubbed, clear, 0.01)):
        assert (b.location, b.weather) == (truth.location, truth.weather)
        for t, o in zip(truth.objects, b.objects):
            if codes.strength(t.name) > 0.1:
                assert o.names[t.name] > 0.99
                checked += 1
            if all(codes.strength(x) > 0.1 for g in (truth,) for x in (p.name for p in g.objects)):
                assert sorted((r.name, r.object_id) for r in o.relations) == sorted((r.name, r.object_id) for r in t.relations)
                assert all(r.p == 1.0 for r in o.relations)
    assert checked > 10


@pytest.mark.slow
def test_the_features_only_oracle_is_written_by_default(data, tmp_path):
    """``python -m nablafol.synthetic.bayes`` writes the features-only posteriors (relations
    drawn, not copied); ``--given-truth`` the others, relations true."""
    assert main([str(data), "val", str(tmp_path / "f.json")]) == 0
    assert main([str(data), "val", str(tmp_path / "g.json"), "--given-truth"]) == 0
    truth = load_scene_graphs(data / "val_sceneGraphs.json")
    given, alone = load_scene_graphs(tmp_path / "g.json"), load_scene_graphs(tmp_path / "f.json")
    assert all(g.objects[k].relations == t.objects[k].relations for g, t in zip(given.values(), truth.values())
               for k in range(len(t.objects)))
    assert any(r.p < 1 for g in alone.values() for o in g.objects for r in o.relations)
    assert 0.8 < accuracy(data, tmp_path / "f.json", "val") < 1.0
