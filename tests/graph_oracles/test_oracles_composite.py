"""CompositeOracle: routing by `knows`, answers back in request order, clear errors."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from nablafol.data import load_scene_graphs
from nablafol.errors import ShapeError, UnknownPredicateError
from nablafol.ir import Predicate
from nablafol.oracle import Requests, TableOracle
from nablafol.graph_oracles import CompositeOracle, KnowledgeBase, KnowledgeOracle, SceneGraphOracle, Triple

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"
RED, BIG, ON = Predicate("red"), Predicate("big"), Predicate("on", 2)


@pytest.fixture(scope="module")
def gqa():
    graphs = load_scene_graphs(FIXTURES / "val_sceneGraphs.json")
    batch = [graphs["2354786"], graphs["n161313"]]
    kb = KnowledgeBase([Triple("animal", "HasProperty", "alive"), Triple("person", "CapableOf", "ride horse")])
    scene_graph = SceneGraphOracle(batch)
    knowledge = KnowledgeOracle.from_scene_graphs(batch, kb)
    return scene_graph, knowledge, CompositeOracle([scene_graph, knowledge])


def test_mixed_requests_come_back_in_order(gqa):
    scene_graph, knowledge, both = gqa
    preds = [Predicate("HasProperty:alive", kind="kg"), Predicate("man", kind="name"),
             Predicate("HasProperty:alive", kind="kg"), Predicate("white", kind="attr"), Predicate("table", kind="name")]
    scenes = [0, 0, 1, 1, 1]
    got = both.unary(Requests.build(scenes, preds))
    for r, (s, p) in enumerate(zip(scenes, preds)):
        owner = knowledge if p.kind == "kg" else scene_graph
        assert torch.equal(got[r], owner.unary(Requests.build([s], [p]))[0]), (s, p)
    assert got.exp()[0].tolist() == [0, 1, 0, 0, 0, 0]  # the horse is alive


def test_binary_routing(gqa):
    _, _, both = gqa
    req = Requests.build([0, 0], [Predicate("CapableOf:ride", 2, "kg"), Predicate("riding", 2, "rel")])
    got = both.binary(req).exp()
    assert got.shape == (2, 6, 6)
    assert got[0, 0, 1] == 1 and got[1, 0, 1] == 1  # the man can ride the horse, and does
    assert got[0].sum() == 1 and got[1].sum() == 1


def test_first_oracle_that_knows_wins():
    first, second = TableOracle([{RED: [1.0, 0.0]}]), TableOracle([{RED: [0.0, 1.0], BIG: [0.5, 0.5]}])
    oracle = CompositeOracle([first, second])
    assert oracle.owner(RED) == 0 and oracle.owner(BIG) == 1 and oracle.owner(Predicate("tiny")) is None
    assert oracle.unary(Requests.build([0, 0], [BIG, RED])).exp().tolist() == [[0.5, 0.5], [1.0, 0.0]]


def test_unknown_predicate_names_it_and_the_oracles_asked(gqa):
    _, _, both = gqa
    # the scene graphs answer any name, value or relation; a position outside the thirds is no one's
    assert both.knows(Predicate("sparkly", kind="attr"))
    assert not both.knows(Predicate("sparkly", kind="hposition"))
    with pytest.raises(UnknownPredicateError,
                       match=r"no oracle knows predicate 'sparkly' \(kind 'hposition', arity 1\); "
                             r"asked SceneGraphOracle, KnowledgeOracle"):
        both.unary(Requests.build([0, 0], [Predicate("man", kind="name"), Predicate("sparkly", kind="hposition")]))


def test_scenes_must_agree():
    with pytest.raises(ShapeError, match=r"oracle 1 \(TableOracle\) has scenes of \[3\] objects, "
                                         r"oracle 0 \(TableOracle\) \[2\]"):
        CompositeOracle([TableOracle([{RED: [1.0, 0.0]}]), TableOracle([{BIG: [1.0, 0.0, 1.0]}])])
    with pytest.raises(ShapeError, match=r"\[2, 2\] objects"):
        CompositeOracle([TableOracle([{RED: [1.0, 0.0]}]), TableOracle([{BIG: [1.0, 0.0]}] * 2)])


def test_oracles_must_say_what_they_know():
    class Mute:
        num_objects = torch.tensor([1])

        def unary(self, requests): ...

        def binary(self, requests): ...

    with pytest.raises(TypeError, match=r"oracle 1 \(Mute\) lacks knows"):
        CompositeOracle([TableOracle([{RED: [1.0]}]), Mute()])


class LearnedSizes(torch.nn.Module):
    """A trainable oracle of one predicate, `big`, over one scene of two objects."""

    def __init__(self):
        super().__init__()
        self.logits = torch.nn.Parameter(torch.tensor([0.0, 2.0]))
        self.num_objects = torch.tensor([2])

    def knows(self, predicate):
        return predicate == BIG

    def unary(self, requests):
        return torch.nn.functional.logsigmoid(self.logits).expand(len(requests), 2)

    def binary(self, requests):
        raise AssertionError("never asked")


def test_gradients_flow_through_and_parameters_are_registered():
    learned = LearnedSizes()
    oracle = CompositeOracle([TableOracle([{RED: [1.0, 0.0]}]), learned])
    assert [p for p in oracle.parameters()] == [learned.logits]
    out = oracle.unary(Requests.build([0, 0], [RED, BIG]))
    out[1].exp().sum().backward()  # d sigmoid(z) / dz = s (1 - s)
    s = torch.sigmoid(learned.logits.detach())
    assert learned.logits.grad.tolist() == pytest.approx((s * (1 - s)).tolist())


def test_empty_requests_go_to_the_first_oracle(gqa):
    _, _, both = gqa
    empty = Requests(torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long), ())
    assert both.unary(empty).shape == (0, 6)
