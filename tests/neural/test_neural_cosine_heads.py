"""Cosine heads (``NeuralOracleConfig.head = "cosine"``): bounded, finite logits and gradients;
a model folder written before the field existed loads as the dot-product heads it was."""
from __future__ import annotations

import json

import pytest
import torch

from nablafol.engine import Engine
from nablafol.ir import Aggregate, Filter, Program, Quantifier, Relate, Top
from nablafol.neural import NeuralOracleError, load_model, save_model
from nablafol.neural.model import NeuralOracleConfig
from nablafol.oracle import Requests
from neural_helpers import CHAIR, LARGER, ON, RED, SUNNY, random_batch, small_model


def logits(model, batch):
    encoding = model.encode(batch)
    scenes = torch.arange(len(batch))
    unary = model.unary_logits(encoding, scenes, torch.arange(model.vocabulary.num_unary))
    pairs = model.pair_logits(encoding, scenes, torch.arange(model.vocabulary.num_binary))
    return unary, pairs


def test_cosine_logits_are_the_scaled_cosine_plus_the_bias_and_stay_within_it():
    model = small_model(head="cosine", cosine_scale=7.0)
    with torch.no_grad():  # features far from the initialization's range: a dot product would grow with them
        model.unary_bias.normal_()
        batch = random_batch([3, 5])
        big = type(batch)(batch.features * 1e4, batch.boxes, batch.image_size, batch.counts)
        (objects, scene), pairs = logits(model, big)
    for table, bias in ((objects, model.unary_bias[None, :, None]), (scene, model.unary_bias[None, :]),
                        (pairs, model.binary_bias[None, :, None, None])):
        assert torch.isfinite(table).all()
        assert ((table - bias).abs() <= 7.0 + 1e-4).all()
    # one logit by hand: 7 · cos(U h, e) + c
    encoding = model.encode(big)
    x = model.unary_projection(encoding.hidden[0, 1])
    e = model.unary_embedding[2]
    expected = 7.0 * torch.dot(x, e) / (x.norm() * e.norm()) + model.unary_bias[2]
    torch.testing.assert_close(objects[0, 2, 1], expected)


def test_cosine_heads_give_finite_gradients_through_the_engine():
    model = small_model(head="cosine")
    model.train()
    batch = random_batch([4, 0, 3], seed=3)  # an empty scene too: zero vectors must not give NaN
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(RED, Relate.of(ON, Quantifier.EXISTS,
                                                                                 Filter(CHAIR, Top())))))
    answers = Engine()([program] * 3, model.bind(batch), [0, 1, 2])
    (-answers.log_probs[:, 0].sum()).backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert model.unary_embedding.grad.abs().sum() > 0 and model.binary_embedding.grad.abs().sum() > 0


def test_the_two_heads_differ_and_the_default_is_the_dot_product():
    dot, cosine = small_model(seed=1), small_model(seed=1, head="cosine")
    assert dot.config.head == "dot"
    batch = random_batch([3], seed=2)
    request = Requests.build([0, 0], [RED, SUNNY])
    assert not torch.allclose(dot.bind(batch).unary(request), cosine.bind(batch).unary(request))
    pair = Requests.build([0, 0], [ON, LARGER])
    assert not torch.allclose(dot.bind(batch).binary(pair), cosine.bind(batch).binary(pair))


def test_a_folder_written_before_the_head_existed_loads_as_dot_heads(tmp_path):
    model = small_model(seed=4)
    save_model(tmp_path / "old", model)
    config = json.loads((tmp_path / "old" / "config.json").read_text())
    for field in ("head", "cosine_scale"):  # what a folder from before the field holds
        del config["model"][field]
    (tmp_path / "old" / "config.json").write_text(json.dumps(config))
    loaded, _, _ = load_model(tmp_path / "old")
    assert loaded.config.head == "dot" and loaded.config == model.config
    batch = random_batch([2, 4], seed=5)
    request = Requests.build([0, 1], [RED, CHAIR])
    assert torch.equal(loaded.bind(batch).unary(request), model.bind(batch).unary(request))


def test_a_cosine_model_round_trips(tmp_path):
    model = small_model(seed=6, head="cosine", cosine_scale=5.0)
    save_model(tmp_path / "m", model)
    loaded, _, _ = load_model(tmp_path / "m")
    assert loaded.config.head == "cosine" and loaded.config.cosine_scale == 5.0
    batch = random_batch([3, 2], seed=6)
    request = Requests.build([0, 1], [ON, LARGER])
    assert torch.equal(loaded.bind(batch).binary(request), model.bind(batch).binary(request))


@pytest.mark.parametrize("change, says", [({"head": "sine"}, "head must be one of dot, cosine"),
                                          ({"cosine_scale": 0}, "cosine_scale must be a positive number"),
                                          ({"cosine_scale": float("nan")}, "cosine_scale must be a positive number")])
def test_a_bad_head_setting_is_refused_in_one_line(change, says):
    with pytest.raises(NeuralOracleError, match=says):
        NeuralOracleConfig.from_dict({"feature_dim": 4, "num_unary": 3, "num_binary": 2, **change})
