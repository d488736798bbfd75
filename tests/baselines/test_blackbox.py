"""The black-box baseline: shapes, that it learns, that a seed fixes it."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from nablafol.baselines.blackbox import BlackBoxBaseline, BlackBoxModel, words

COLORS = ("red", "blue")


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny tensors: a second torch thread only waits on the first (10x slower on a busy machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _scene(color: str, rng) -> SimpleNamespace:
    """Three objects; the first one's features say its colour (one-hot), the others are noise."""
    features = rng.normal(0.0, 0.1, size=(3, 4)).astype(np.float32)
    features[0, COLORS.index(color)] += 3.0
    boxes = np.array([[0, 0, 10, 10], [10, 10, 30, 30], [20, 0, 40, 20]], dtype=np.float32)
    return SimpleNamespace(features=features, boxes=boxes, width=40, height=30)


def _task(n: int, seed: int):
    """``Is the thing COLOR?``: the answer needs both the question's word and the features."""
    rng = np.random.default_rng(seed)
    images, questions = {}, []
    for k in range(n):
        color, asked = COLORS[rng.integers(2)], COLORS[rng.integers(2)]
        images[f"img{k}"] = _scene(color, rng)
        questions.append(SimpleNamespace(id=f"q{k}", image_id=f"img{k}", question=f"Is the thing {asked}?",
                                         answer="yes" if asked == color else "no"))
    return questions, images


def test_words_are_lower_case_tokens():
    assert words("Is the cup RED?") == ["is", "the", "cup", "red"] and words(None) == []


def test_model_shapes_and_attention_sums_to_one_over_real_objects():
    model = BlackBoxModel(n_words=12, feature_dim=5, n_answers=7, hidden_dim=16, hops=2)
    mask = torch.tensor([[True, True, True, False], [True, False, False, False]])
    logits, attentions = model.attend(torch.tensor([[2, 3, 4], [5, 0, 0]]), torch.tensor([3, 1]),
                                      torch.randn(2, 4, 5), torch.rand(2, 4, 4), mask)
    assert logits.shape == (2, 7) and len(attentions) == 2
    for att in attentions:
        assert att.shape == (2, 4)
        assert torch.allclose(att.sum(-1), torch.ones(2)) and bool((att[~mask] == 0).all())


@pytest.mark.slow
def test_it_learns_a_small_separable_task():
    train, images = _task(400, seed=1)
    test, test_images = _task(200, seed=2)
    baseline = BlackBoxBaseline(hidden_dim=32, hops=1, epochs=15, lr=5e-3, seed=0).fit(train, images)
    predictions = baseline.predict(test, test_images)
    accuracy = np.mean([predictions[q.id] == q.answer for q in test])
    assert accuracy > 0.95, accuracy
    assert baseline.history[-1]["train_loss"] < baseline.history[0]["train_loss"]


@pytest.mark.slow
def test_a_seed_fixes_the_model():
    train, images = _task(80, seed=3)
    runs = [BlackBoxBaseline(hidden_dim=16, epochs=2, seed=5).fit(train, images) for _ in range(2)]
    for a, b in zip(runs[0].model.state_dict().values(), runs[1].model.state_dict().values()):
        assert torch.equal(a, b)
    other = BlackBoxBaseline(hidden_dim=16, epochs=2, seed=6).fit(train, images)
    assert not torch.equal(runs[0].model.embed.weight, other.model.embed.weight)


def test_no_training_question_is_one_clear_error():
    with pytest.raises(ValueError, match="no training question"):
        BlackBoxBaseline().fit([SimpleNamespace(id="1", image_id="x", question="?", answer=None)], {})


def test_validating_each_epoch_records_the_curve_and_changes_nothing_learned():
    train, images = _task(80, seed=3)
    test, test_images = _task(40, seed=4)
    seen = []

    def validate(baseline):
        seen.append(baseline.model.training)
        predictions = baseline.predict(test, test_images)
        return float(np.mean([predictions[q.id] == q.answer for q in test]))

    plain = BlackBoxBaseline(hidden_dim=16, epochs=3, seed=5).fit(train, images)
    watched = BlackBoxBaseline(hidden_dim=16, epochs=3, seed=5).fit(train, images, validate=validate)
    assert seen == [False, False, False]
    assert [set(h) for h in watched.history] == [{"epoch", "train_loss", "seconds", "val_accuracy", "val_seconds"}] * 3
    assert all(h["seconds"] > 0 and 0 <= h["val_accuracy"] <= 1 for h in watched.history)
    assert watched.history[-1]["val_accuracy"] == validate(watched)
    for a, b in zip(plain.model.state_dict().values(), watched.model.state_dict().values()):
        assert torch.equal(a, b)
