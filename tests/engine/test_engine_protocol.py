"""The oracle protocol, batching cost, bad input, and use as a torch module."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.engine import Engine
from nablafol.errors import NablafolError, ProbabilityError, ShapeError, UnknownPredicateError
from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Relate, Top
from nablafol.oracle import Oracle, Requests, TableOracle
from nablafol.testing.strategies import default_vocabulary, programs

UNARY, BINARY = default_vocabulary()
RED, ON = Predicate("red"), Predicate("on", arity=2)
EXISTS_RED_ON = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(RED, Relate.of(ON, Quantifier.EXISTS,
                                                                                  Filter(RED, Top())))))


class CountingOracle:
    """Wraps an oracle and records every request it receives."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    @property
    def num_objects(self):
        return self.inner.num_objects

    def unary(self, requests):
        self.calls.append(("unary", list(requests.pairs())))
        return self.inner.unary(requests)

    def binary(self, requests):
        self.calls.append(("binary", list(requests.pairs())))
        return self.inner.binary(requests)


def _scene(n, seed):
    rng = np.random.default_rng(seed)
    return {p: rng.random((n,) * p.arity) for p in UNARY + BINARY}


@pytest.mark.slow
@settings(max_examples=examples(30))
@given(st.lists(programs(UNARY, BINARY), min_size=1, max_size=8), st.integers(1, 3), st.data())
def test_oracle_is_asked_once_per_distinct_scene_and_predicate(progs, n_scenes, data):
    scenes = data.draw(st.lists(st.integers(0, n_scenes - 1), min_size=len(progs), max_size=len(progs)))
    oracle = CountingOracle(TableOracle([_scene(2 + s, s) for s in range(n_scenes)]))
    Engine()(progs, oracle, scenes)
    needed = {(s, p) for prog, s in zip(progs, scenes) for p in prog.predicates()}
    asked = [pair for _, pairs in oracle.calls for pair in pairs]
    assert len(oracle.calls) <= 2 and len({kind for kind, _ in oracle.calls}) == len(oracle.calls)
    assert len(asked) == len(set(asked))  # each pair once
    assert set(asked) == needed  # exactly what the batch needs: never the whole vocabulary


@pytest.mark.slow
@settings(max_examples=examples(5))
@given(st.lists(programs(UNARY, BINARY, max_depth=6), min_size=40, max_size=40))
def test_kernel_count_does_not_grow_with_the_batch(sample):
    rng = np.random.default_rng(0)
    engine = Engine()
    small = engine.plan(sample[:10] * 1)
    large = engine.plan([sample[i % 40] for i in rng.permutation(4000)])
    # one group per (level, operator kind): bounded by levels x kinds, not by programs
    levels = len(large.levels)
    assert large.kernel_groups <= levels * 13
    assert small.kernel_groups <= large.kernel_groups


def test_different_programs_share_one_operator_call_per_kind(monkeypatch):
    from nablafol import operators
    calls = []
    real = operators.filter_
    monkeypatch.setattr(operators, "filter_", lambda *a, **k: calls.append(a[0].shape[0]) or real(*a, **k))
    progs = [Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(UNARY[i % 3], Top()))) for i in range(50)]
    Engine()(progs, TableOracle([_scene(3, 0)]))
    assert calls == [50]


def test_unknown_predicate_is_named():
    with pytest.raises(UnknownPredicateError, match="'red'"):
        Engine()([EXISTS_RED_ON], TableOracle([{ON: np.ones((2, 2))}]))


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan")])
def test_table_probabilities_outside_unit_interval_are_refused(bad):
    with pytest.raises(ProbabilityError, match="'red'"):
        TableOracle([{RED: [0.5, bad]}])


def test_table_shapes_are_checked():
    with pytest.raises(ShapeError, match="'on'"):
        TableOracle([{RED: [0.5, 0.5], ON: np.ones((3, 3))}])
    with pytest.raises(ShapeError, match="square"):
        TableOracle([{ON: np.ones((2, 3))}])


class BadOracle:
    def __init__(self, unary):
        self._unary = unary

    @property
    def num_objects(self):
        return torch.tensor([2])

    def unary(self, requests):
        return self._unary

    def binary(self, requests):
        return torch.zeros(len(requests), 2, 2)


def test_oracle_answers_are_validated():
    with pytest.raises(ShapeError, match=r"BadOracle.unary returned \(1, 3\), expected \(1, 2\)"):
        Engine()([EXISTS_RED_ON], BadOracle(torch.zeros(1, 3)))
    with pytest.raises(ProbabilityError, match="'red'.*nan"):
        Engine()([EXISTS_RED_ON], BadOracle(torch.tensor([[0.0, float("nan")]])))
    with pytest.raises(ProbabilityError, match="'red'"):
        Engine()([EXISTS_RED_ON], BadOracle(torch.tensor([[0.3, -0.1]])))  # log p > 0: p > 1


def test_garbage_at_padding_is_masked_even_from_an_oracle_that_promises_zeros_there():
    """``pads_with_zeros``: an oracle says its padded entries are -inf, and the engine skips
    masking them; when its table is suspect (NaN or log p > 0 somewhere), the promise is not
    trusted: the padding is masked as for any oracle, and the answers are the clean ones."""
    class Padded(TableOracle):
        pads_with_zeros = True

        def __init__(self, scenes, garbage):
            super().__init__(scenes)
            self.garbage = garbage

        def unary(self, requests):
            table = super().unary(requests).clone()
            table[requests.scene == 0, 2:] = self.garbage  # scene 0 has 2 objects, the batch 3
            return table

    rng = np.random.default_rng(0)
    scenes = [{RED: rng.random(n), ON: rng.random((n, n))} for n in (2, 3)]
    engine = Engine()
    plan = engine.plan([EXISTS_RED_ON] * 2, [0, 1])
    clean = engine.tables(plan, TableOracle(scenes)).unary
    assert torch.isinf(clean[0, 2]) and clean[0, 2] < 0  # scene 0's padded object: an exact 0
    for garbage in (float("nan"), 0.5, float("inf")):
        assert torch.equal(engine.tables(plan, Padded(scenes, garbage)).unary, clean), garbage
        assert torch.equal(engine.run(plan, Padded(scenes, garbage)).log_probs, engine.run(plan, TableOracle(scenes)).log_probs)


def test_scene_indices_are_checked():
    oracle = TableOracle([_scene(2, 0), _scene(2, 1)])
    with pytest.raises(ShapeError, match="scenes="):
        Engine()([EXISTS_RED_ON] * 3, oracle)
    with pytest.raises(ShapeError, match="out of range"):
        Engine()([EXISTS_RED_ON], oracle, scenes=[2])
    with pytest.raises(NablafolError):
        Engine()(["not a program"], oracle, scenes=[0])


class Model(torch.nn.Module):
    """A model embedding the engine: learns unary logits for 'red' from features."""

    def __init__(self):
        super().__init__()
        self.red = torch.nn.Linear(4, 1)
        self.engine = Engine()

    def forward(self, features, programs):
        logits = self.red(features).squeeze(-1)  # (B, N)

        class Neural:
            num_objects = torch.full((features.shape[0],), features.shape[1])

            @staticmethod
            def unary(requests):
                return torch.nn.functional.logsigmoid(logits[requests.scene])

            @staticmethod
            def binary(requests):
                return torch.zeros(len(requests), features.shape[1], features.shape[1])

        return self.engine(programs, Neural())


def test_engine_trains_inside_a_model():
    torch.manual_seed(0)
    model = Model()
    feats = torch.randn(8, 5, 4)
    target = (feats[:, :, 0] > 0.5).any(1).float()  # "is there something red": red iff feature 0 > 0.5
    prog = [Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(RED, Top())))] * 8
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    first = None
    for _ in range(60):
        lp = model(feats, prog).log_probs[:, 0]
        loss = -(target * lp + (1 - target) * torch.log1p(-lp.exp().clamp(max=1 - 1e-6))).mean()
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.5 * first
    assert list(dict(model.named_parameters())) == ["red.weight", "red.bias"]


def test_engine_is_an_nn_module_with_calibration_as_submodule():
    class Scale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Parameter(torch.tensor(1.0))

        def forward(self, log_a, mask, program, step):
            return log_a * self.a

    engine = Engine(calibration=Scale())
    assert [n for n, _ in engine.named_parameters()] == ["calibration.a"]
    oracle = TableOracle([{RED: [0.5, 0.25], ON: np.ones((2, 2))}])
    out = engine([EXISTS_RED_ON], oracle)
    out.probs().sum().backward()
    assert engine.calibration.a.grad is not None


def test_table_oracle_follows_the_protocol():
    oracle = TableOracle([{RED: [0.5]}])
    assert isinstance(oracle, Oracle)
    req = Requests.build([0], [RED])
    assert oracle.unary(req).shape == (1, 1)


@pytest.mark.slow
def test_compiled_q_product_matches_eager():
    """Engine(compile=True) fuses the Q-product with torch.compile; results must not change."""
    rng = np.random.default_rng(1)
    scenes = [{p: rng.random((4,) * p.arity) for p in UNARY + BINARY} for _ in range(3)]
    progs = [Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(UNARY[0], Relate.of(BINARY[0], q, Filter(UNARY[1], Top())))))
             for q in Quantifier for _ in range(3)]  # 3 rows per quantifier: the compiled path
    eager = Engine()(progs, TableOracle(scenes), scenes=[0, 1, 2] * 3)
    fused = Engine(compile=True)(progs, TableOracle(scenes), scenes=[0, 1, 2] * 3)
    assert torch.allclose(eager.log_probs, fused.log_probs, atol=1e-6)
