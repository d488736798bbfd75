"""Learning: gradients flow from the engine's answers into the network, and it can fit facts."""
from __future__ import annotations

import pytest
import torch

from nablafol.engine import Engine
from nablafol.ir import Aggregate, Filter, Program, Quantifier, Relate, Top
from nablafol.neural import NeuralOracleError
from nablafol.oracle import Requests
from neural_helpers import CHAIR, ON, RED, SCENE, SUNNY, P, random_batch, small_model


def _grad(parameter):
    return torch.zeros_like(parameter) if parameter.grad is None else parameter.grad


def test_the_answer_gradient_reaches_exactly_the_concepts_the_program_uses():
    model = small_model(seed=2).train()
    oracle = model.bind(random_batch([4, 3], seed=1))
    # ∃X: chair(X) ∧ ∃Y: on(X, Y) ∧ red(Y)
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(CHAIR, Relate.of(ON, Quantifier.EXISTS,
                                                                                   Filter(RED, Top())))))
    answers = Engine()([program, program], oracle)
    (-answers.log_probs.sum()).backward()
    vocabulary = model.vocabulary
    for parameter in model.parameters():
        assert torch.isfinite(_grad(parameter)).all()
    for parameter in (model.encoder[0].weight, model.unary_projection.weight, model.subject_projection.weight,
                      model.object_projection.weight, model.pair_hidden.weight, model.pair_output.weight):
        assert _grad(parameter).abs().sum() > 0
    used_unary = {vocabulary.index(CHAIR), vocabulary.index(RED)}
    unary_rows = _grad(model.unary_embedding).abs().sum(1)
    assert set(unary_rows.nonzero().flatten().tolist()) == used_unary  # the oracle is asked for these only
    binary_rows = _grad(model.binary_embedding).abs().sum(1)
    assert set(binary_rows.nonzero().flatten().tolist()) == {vocabulary.index(ON)}
    # no scene-level concept was asked: the scene pseudo-object's branch gets nothing
    assert all(_grad(p).abs().sum() == 0 for p in model.scene_encoder.parameters())


def test_a_scene_question_trains_the_scene_branch():
    model = small_model(seed=3).train()
    oracle = model.bind(random_batch([3], seed=2))
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(SUNNY, Filter(SCENE, Top()))))
    (-Engine()([program], oracle).log_probs.sum()).backward()
    assert all(_grad(p).abs().sum() > 0 for p in model.scene_encoder.parameters() if p.dim() == 2)
    assert _grad(model.unary_embedding)[model.vocabulary.scene_row].abs().sum() == 0  # `scene` is fixed, not learned


def _bce(log_p, target):
    """Binary cross-entropy from log-probabilities (log(1 - p) = log(-expm1(log p)))."""
    log_not = torch.log(-torch.expm1(log_p.clamp(max=-1e-7)))
    return -(target * log_p + (1 - target) * log_not).mean()


@pytest.mark.slow
def test_the_network_fits_a_few_unary_facts_quickly():
    torch.manual_seed(0)
    model = small_model(seed=4, dropout=0.0).train()
    batch = random_batch([4, 4, 3], seed=4)
    red = torch.tensor([[1, 0, 0, 1], [0, 1, 0, 0], [1, 1, 0, 0]], dtype=torch.float32)
    chair = torch.tensor([[0, 1, 1, 0], [1, 0, 0, 1], [0, 0, 1, 0]], dtype=torch.float32)
    sunny_scene = torch.tensor([1.0, 0.0, 1.0])
    real = batch.object_mask
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    requests = Requests.build([0, 1, 2] * 3, [RED] * 3 + [CHAIR] * 3 + [SUNNY] * 3)

    def predict():
        table = model.bind(batch).unary(requests)  # (9, 5)
        objects = table[:6, :4].view(2, 3, 4)
        scene = table[6:].gather(1, batch.counts[:, None]).squeeze(1)  # each pseudo-object's column
        return objects, scene

    for _ in range(150):
        objects, scene = predict()
        loss = _bce(objects[0][real], red[real]) + _bce(objects[1][real], chair[real]) + _bce(scene, sunny_scene)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    objects, scene = predict()
    assert torch.equal((objects[0].exp() > 0.5)[real], red.bool()[real])
    assert torch.equal((objects[1].exp() > 0.5)[real], chair.bool()[real])
    assert torch.equal(scene.exp() > 0.5, sunny_scene.bool())


@pytest.mark.slow
def test_the_network_learns_from_answers_alone_through_the_engine():
    """Yes/no answers to `is there something red?` and `is there a chair left of something?`."""
    torch.manual_seed(1)
    model = small_model(seed=5, dropout=0.0).train()
    batch = random_batch([3, 4, 2, 3, 4, 2], seed=6)
    left = P("to the left of", "rel", 2)
    questions = [Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(RED, Top()))),
                 Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(CHAIR, Relate.of(left, Quantifier.EXISTS, Top()))))]
    programs = [q for q in questions for _ in range(6)]
    scenes = list(range(6)) * 2
    answers = torch.tensor([1, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1], dtype=torch.float32)
    engine = Engine()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(120):
        log_p = engine(programs, model.bind(batch), scenes).log_probs[:, 0]
        loss = _bce(log_p, answers)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.65)  # the paper's clipping
        optimizer.step()
    model.eval()
    predicted = engine(programs, model.bind(batch), scenes).predictions()
    assert predicted == ["yes" if a else "no" for a in answers.tolist()]


def test_word_vectors_initialize_the_concepts_whose_words_they_all_cover():
    model = small_model(seed=6)
    vectors = {w: [float(i)] * 8 for i, w in enumerate(["red", "to", "the", "left", "of", "chair"])}
    before = model.unary_embedding.detach().clone()
    done = model.initialize_embeddings(vectors)
    vocabulary = model.vocabulary
    red, chair = vocabulary.index(RED), vocabulary.index(CHAIR)
    left = vocabulary.index(P("to the left of", "rel", 2))
    assert torch.equal(model.unary_embedding[red], torch.zeros(8))
    assert torch.equal(model.unary_embedding[chair], torch.full((8,), 5.0))
    assert torch.equal(model.binary_embedding[left], torch.full((8,), 2.5))  # mean of to, the, left, of
    # red (attr), chair (name), left (attr and hposition), to the left of (rel)
    set_rows = {red, chair, vocabulary.index(P("left", "attr")), vocabulary.index(P("left", "hposition"))}
    assert done == 5
    untouched = [r for r in range(vocabulary.num_unary) if r not in set_rows]
    assert torch.equal(model.unary_embedding[untouched], before[untouched])
    with pytest.raises(NeuralOracleError, match="word vector of 'red' has 3 dimensions"):
        model.initialize_embeddings({"red": [0.0, 1.0, 2.0]})
