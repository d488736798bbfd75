"""Object features: codes with per-concept strengths, so perception is imperfect in a known way."""
from __future__ import annotations

import numpy as np
import pytest

from nablafol.synthetic import ConceptCodes, Vocabulary
from nablafol.synthetic.object_features import image_features, object_concepts, scene_context

# its fixtures train or generate for the whole module: among the longest of a measured run
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def codes():
    return ConceptCodes.draw(Vocabulary.default(), 64, np.random.default_rng(11))


def _auc(scores: np.ndarray, labels: np.ndarray) -> float:
    ranks = np.argsort(np.argsort(scores)) + 1
    positives = labels.sum()
    negatives = len(labels) - positives
    return float((ranks[labels == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def test_codes_cover_classes_and_values_but_no_category(codes):
    vocabulary = Vocabulary.default()
    assert set(vocabulary.classes) <= set(codes.concepts)
    assert {v for vs in vocabulary.attributes.values() for v in vs} <= set(codes.concepts)
    only_categories = set(vocabulary.categories) - set(vocabulary.classes)
    assert only_categories and not only_categories & set(codes.concepts)  # categories come through classes
    assert np.allclose(np.linalg.norm(codes.codes, axis=1), 1, atol=1e-5)
    hidden = codes.hidden()
    assert 1 <= len(hidden) <= 0.2 * len(codes.concepts)
    assert codes.strengths.max() / codes.strengths.min() > 50  # some easy, some nearly invisible


def test_without_noise_a_feature_is_exactly_its_concepts_codes(dataset, codes):
    graph = dataset.scenes["train"][0]
    features, boxes = image_features(graph, codes, np.random.default_rng(0), noise_std=0.0, context_scale=0.5)
    index = codes.index
    for obj, row, box in zip(graph.objects, features, boxes):
        expected = sum(codes.strengths[index[c]] * codes.codes[index[c]].astype(np.float64) for c in object_concepts(obj))
        expected = expected + 0.5 * sum(codes.strengths[index[c]] * codes.codes[index[c]].astype(np.float64)
                                        for c in scene_context(graph))
        assert np.allclose(row, expected, atol=1e-5)
        assert tuple(box) == (obj.x, obj.y, obj.x + obj.w, obj.y + obj.h)


def test_a_linear_probe_recovers_easy_concepts_far_better_than_hard_ones(dataset, codes):
    rng = np.random.default_rng(5)
    rows, labels = [], []
    index = codes.index
    for graph in dataset.scenes["train"][:240]:
        features, _ = image_features(graph, codes, rng, noise_std=0.5, context_scale=0.5)
        for obj, row in zip(graph.objects, features):
            rows.append(row)
            label = np.zeros(len(index))
            label[[index[c] for c in object_concepts(obj)]] = 1
            labels.append(label)
    x, y = np.c_[np.array(rows), np.ones(len(rows))], np.array(labels)
    half = len(x) // 2
    weights, *_ = np.linalg.lstsq(x[:half], y[:half], rcond=None)
    predicted = x[half:] @ weights
    aucs = {}
    for concept, k in index.items():
        test = y[half:, k]
        if y[:half, k].sum() >= 10 and test.sum() >= 10 and test.sum() < len(test) - 10:
            aucs[concept] = _auc(predicted[:, k], test)
    easy = [a for c, a in aucs.items() if codes.strength(c) >= 1.5]
    hard = [a for c, a in aucs.items() if codes.strength(c) <= 0.1]
    assert len(easy) >= 5 and len(hard) >= 2
    assert np.mean(easy) > 0.93 and np.mean(hard) < 0.8 and np.mean(easy) - np.mean(hard) > 0.2
    strengths = np.array([codes.strength(c) for c in aucs])
    assert np.corrcoef(np.log(strengths), list(aucs.values()))[0, 1] > 0.5


def test_draw_is_deterministic_and_checks_its_arguments():
    vocabulary = Vocabulary.default()
    first = ConceptCodes.draw(vocabulary, 8, np.random.default_rng(1))
    second = ConceptCodes.draw(vocabulary, 8, np.random.default_rng(1))
    assert np.array_equal(first.codes, second.codes) and np.array_equal(first.strengths, second.strengths)
    with pytest.raises(ValueError, match="feature_dim"):
        ConceptCodes.draw(vocabulary, 1, np.random.default_rng(1))
    with pytest.raises(ValueError, match="strength_range"):
        ConceptCodes.draw(vocabulary, 8, np.random.default_rng(1), strength_range=(2.0, 1.0))
