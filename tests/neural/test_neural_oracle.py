"""The bound neural oracle: shapes, padding, the scene pseudo-object, batching of requests."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples
from torch.nn import functional as F

from nablafol.data import ObjectFeatures
from nablafol.engine import Engine
from nablafol.errors import ShapeError, UnknownPredicateError
from nablafol.ir import Aggregate, Filter, Program, Quantifier, Top
from nablafol.neural import FeatureBatch, NeuralOracle
from nablafol.neural.model import pair_geometry
from nablafol.oracle import Oracle, Requests
from nablafol.testing import devices
from neural_helpers import (CHAIR, FOOD_NAME, LARGER, ON, RED, SAME_COLOR, SCENE, SUNNY, P, random_batch,
                            random_image, small_model)

NEG_INF = float("-inf")
UNARY = [RED, CHAIR, FOOD_NAME, SUNNY, SCENE, P("left", "hposition"), P("food", "class"), P("indoors", "attr")]
BINARY = [ON, LARGER, SAME_COLOR, P("holding", "rel", 2)]

MODEL = small_model()


def ask(oracle, scenes, predicates):
    request = Requests.build(scenes, predicates)
    return (oracle.unary if predicates[0].arity == 1 else oracle.binary)(request)


def test_shapes_follow_the_protocol_and_values_are_log_probabilities():
    oracle = MODEL.bind(random_batch([3, 5, 0]))
    assert isinstance(oracle, Oracle) and isinstance(oracle, NeuralOracle)
    assert oracle.num_objects.tolist() == [4, 6, 1]
    unary = ask(oracle, [0, 1, 2, 1], [RED, SCENE, SUNNY, CHAIR])
    binary = ask(oracle, [0, 1, 2], [ON, LARGER, SAME_COLOR])
    assert unary.shape == (4, 6) and binary.shape == (3, 6, 6)
    for table in (unary, binary):
        assert not torch.isnan(table).any() and (table <= 0).all() and table.dtype == torch.float32
    empty = Requests(torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long), ())
    assert oracle.unary(empty).shape == (0, 6) and oracle.binary(empty).shape == (0, 6, 6)


def test_the_scene_pseudo_object_rules():
    oracle = MODEL.bind(random_batch([3, 5]))
    u = ask(oracle, [0] * 5, [SCENE, RED, SUNNY, CHAIR, P("indoors", "attr")])
    scene, red, sunny, chair, indoors = u
    # scene 0 has objects 0..2, its pseudo-object at 3, padding at 4 and 5
    assert scene[:3].eq(NEG_INF).all() and scene[3] == 0.0  # objects are never `scene`; the pseudo-object surely is
    assert red[3] == NEG_INF and chair[3] == NEG_INF  # object concepts never hold of the scene
    assert torch.isfinite(sunny[:4]).all() and torch.isfinite(indoors[3])  # scene-level: pseudo-object and objects
    assert torch.isfinite(red[:3]).all() and torch.isfinite(chair[:3]).all()
    assert u[:, 4:].eq(NEG_INF).all()  # padding
    b = ask(oracle, [0, 1], [ON, SAME_COLOR])
    on0, same1 = b
    assert on0[3, :].eq(NEG_INF).all() and on0[:, 3].eq(NEG_INF).all()  # no relation with the scene
    assert same1[5, :].eq(NEG_INF).all() and same1[:, 5].eq(NEG_INF).all()
    assert torch.diagonal(same1).eq(NEG_INF).all()  # nothing is related to itself
    off_diagonal = ~torch.eye(3, dtype=torch.bool)
    assert torch.isfinite(on0[:3, :3][off_diagonal]).all()
    assert on0[4:, :].eq(NEG_INF).all() and on0[:, 4:].eq(NEG_INF).all()


@settings(max_examples=examples(12))
@given(st.integers(0, 4), st.integers(1, 4), st.integers(0, 1000))
def test_padding_changes_nothing_for_a_scene(small, extra, seed):
    """A scene answered alone equals the same scene batched with a bigger one."""
    big = small + extra
    rng = np.random.default_rng(seed)
    images = [random_image(small, rng), random_image(big, rng)]
    alone = MODEL.bind(FeatureBatch.from_objects(images[:1]))
    batched = MODEL.bind(FeatureBatch.from_objects(images[::-1]))  # the small scene is scene 1, padded
    n = small + 1
    torch.testing.assert_close(ask(alone, [0] * len(UNARY), UNARY),
                               ask(batched, [1] * len(UNARY), UNARY)[:, :n], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ask(alone, [0] * len(BINARY), BINARY),
                               ask(batched, [1] * len(BINARY), BINARY)[:, :n, :n], rtol=1e-5, atol=1e-5)


def test_many_requests_at_once_equal_one_request_at_a_time():
    oracle = MODEL.bind(random_batch([2, 4, 3], seed=3))
    scenes = [2, 0, 1, 2, 1, 0, 2]
    unary = [RED, SCENE, SUNNY, CHAIR, RED, P("food", "class"), RED]
    together = ask(oracle, scenes, unary)
    for r, (s, p) in enumerate(zip(scenes, unary)):
        torch.testing.assert_close(together[r], ask(oracle, [s], [p])[0])
    scenes, binary = [1, 0, 1, 2], [ON, ON, LARGER, SAME_COLOR]
    together = ask(oracle, scenes, binary)
    for r, (s, p) in enumerate(zip(scenes, binary)):
        torch.testing.assert_close(together[r], ask(oracle, [s], [p])[0])


def test_pair_scores_are_an_mlp_over_the_concatenated_projections():
    """The block-wise first layer and the contraction trick equal the plain formula."""
    batch = random_batch([4], seed=5)
    encoding = MODEL.encode(batch)
    h, g = encoding.hidden[0], encoding.boxes[0]
    n = h.shape[0]
    pairs = torch.cat([MODEL.subject_projection(h)[:, None, :].expand(n, n, -1),
                       MODEL.object_projection(h)[None, :, :].expand(n, n, -1), pair_geometry(g[None])[0]], dim=-1)
    representation = MODEL.pair_output(F.relu(MODEL.pair_hidden(pairs)))  # (n, n, E)
    rows = torch.tensor([MODEL.vocabulary.index(p) for p in BINARY])
    expected = torch.einsum("ije,pe->pij", representation, MODEL.binary_embedding[rows]) \
        + MODEL.binary_bias[rows][:, None, None]
    got = MODEL.pair_logits(encoding, torch.tensor([0]), rows)[0]
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_relative_geometry_tells_left_from_right_and_large_from_small():
    boxes = torch.tensor([[[0.0, 0.0, 0.2, 0.2, 0.2, 0.2, 0.04, 0.1, 0.1],
                           [0.5, 0.5, 0.9, 0.9, 0.4, 0.4, 0.16, 0.7, 0.7]]])
    r = pair_geometry(boxes)[0]
    assert r[0, 1, 0] > 0 and r[1, 0, 0] < 0  # object 1 lies right of object 0
    assert r[1, 0, 4] > 0 and r[0, 1, 4] < 0  # object 1 is larger
    torch.testing.assert_close(r[0, 0], torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 1.0]))  # IoU with itself


def test_unknown_predicates_wrong_arity_bad_scenes_and_widths_are_refused():
    oracle = MODEL.bind(random_batch([2]))
    with pytest.raises(UnknownPredicateError, match="'purple'"):
        ask(oracle, [0], [P("purple", "attr")])
    with pytest.raises(UnknownPredicateError, match="arity 2 but was asked as a unary"):
        oracle.unary(Requests.build([0], [ON]))
    with pytest.raises(ShapeError, match="scene index 3 out of range"):
        ask(oracle, [3], [RED])
    assert oracle.knows(RED) and not oracle.knows(P("CapableOf:lift", "kg", 2))
    batch = FeatureBatch.from_objects([ObjectFeatures(np.ones((1, 9), np.float32), np.float32([[0, 0, 1, 1]]), 2, 2)])
    with pytest.raises(ShapeError, match="9 dimensions, the model was built for 6"):
        MODEL.bind(batch)


def test_a_batch_of_empty_scenes_has_only_pseudo_objects():
    oracle = MODEL.bind(random_batch([0, 0]))
    assert oracle.num_objects.tolist() == [1, 1]
    assert ask(oracle, [0, 1], [SCENE, RED]).tolist() == [[0.0], [NEG_INF]]
    assert ask(oracle, [1], [SUNNY]).isfinite().all()
    assert ask(oracle, [0], [ON]).tolist() == [[[NEG_INF]]]


def test_the_engine_runs_programs_over_the_oracle():
    oracle = MODEL.bind(random_batch([3, 4]))
    programs = [Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(RED, Filter(CHAIR, Top())))),
                Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(SUNNY, Filter(SCENE, Top()))))]
    answers = Engine()(programs, oracle)
    assert answers.log_probs.shape == (2, 1) and (answers.probs() > 0).all() and (answers.probs() < 1).all()
    # `select: scene -> filter sunny` is exactly the pseudo-object's sunny probability
    sunny = ask(oracle, [1], [SUNNY])[0, 4]
    torch.testing.assert_close(answers.log_probs[1, 0], sunny)


def test_dropout_is_active_in_training_only():
    batch = random_batch([5], seed=9)
    model = small_model(seed=1, dropout=0.5)
    ask_red = lambda: ask(model.bind(batch), [0], [RED])  # noqa: E731
    torch.testing.assert_close(ask_red(), ask_red())
    model.train()
    torch.manual_seed(0)
    first = ask_red()
    assert not torch.equal(first, ask_red())


@pytest.mark.parametrize("device", devices())
def test_the_oracle_answers_on_the_models_device_and_dtype(device):
    model = small_model().to(device)
    batch = random_batch([2, 3])  # on CPU: bind moves it
    oracle = model.bind(batch)
    table = ask(oracle, [0, 1], [RED, SCENE])
    assert table.device.type == torch.device(device).type and oracle.num_objects.device.type == table.device.type
    torch.testing.assert_close(table.cpu(), ask(MODEL.bind(batch), [0, 1], [RED, SCENE]), rtol=1e-4, atol=1e-4)
    if device == "cpu":
        double = small_model().double()
        assert ask(double.bind(batch), [0], [ON]).dtype == torch.float64
