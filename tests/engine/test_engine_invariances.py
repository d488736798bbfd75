"""Algebraic and batching invariances of the engine."""
import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
import pytest

from engine_helpers import run_engine
from nablafol.ir import Aggregate, Conjoin, Filter, Neg, Not, Predicate, Program, Quantifier, Relate, Top
from nablafol.testing.strategies import attentions, default_vocabulary, scenes_and_programs, tables_for

UNARY, BINARY = default_vocabulary()


def _probs(answers, k=0):
    return answers.log_probs[k].exp()


@pytest.mark.slow
@given(scenes_and_programs(max_objects=3), st.integers(1, 5))
def test_padding_does_not_change_results(case, extra):
    """The same program on its scene alone, or batched beside a larger scene (so padded)."""
    alone = run_engine([case.program], [case.tables])
    big = {p: np.full((case.n_objects + extra,) * p.arity, 0.5) for p in case.tables}
    both = run_engine([case.program, case.program], [case.tables, big])
    k = case.program.n_candidates
    assert torch.allclose(alone.log_probs[0, :k], both.log_probs[0, :k], atol=1e-6, equal_nan=False)


@pytest.mark.slow
@given(scenes_and_programs(max_objects=3), scenes_and_programs(max_objects=3))
def test_batch_neighbours_do_not_change_results(a, b):
    alone = run_engine([a.program], [a.tables])
    together = run_engine([b.program, a.program, b.program], [b.tables, a.tables], scenes=[0, 1, 0])
    k = a.program.n_candidates
    assert torch.equal(alone.log_probs[0, :k], together.log_probs[1, :k])


@pytest.mark.slow
@given(st.lists(scenes_and_programs(max_objects=3), min_size=1, max_size=4))
def test_answers_of_a_batch_are_each_programs_own_then_padding(cases):
    """Programs with different numbers of candidates batched: each row holds its program's own
    answers (log p and log(1 - p)) bit for bit, then padding (log 0, log 1, masked out)."""
    both = run_engine([c.program for c in cases], [c.tables for c in cases])
    width = max(c.program.n_candidates for c in cases)
    assert both.log_probs.shape == both.log_complement.shape == both.candidate_mask.shape == (len(cases), width)
    for k, case in enumerate(cases):
        alone, n = run_engine([case.program], [case.tables]), case.program.n_candidates
        assert torch.equal(both.log_probs[k, :n], alone.log_probs[0, :n])
        assert torch.equal(both.log_complement[k, :n], alone.log_complement[0, :n])
        assert both.candidate_mask[k].tolist() == [True] * n + [False] * (width - n)
        assert (both.log_probs[k, n:] == float("-inf")).all() and (both.log_complement[k, n:] == 0).all()


@pytest.mark.slow
@given(scenes_and_programs(max_objects=4), st.randoms(use_true_random=False))
def test_permuting_objects_does_not_change_answers(case, rnd):
    perm = list(range(case.n_objects))
    rnd.shuffle(perm)
    idx = np.array(perm)
    permuted = {p: (t[idx] if p.arity == 1 else t[np.ix_(idx, idx)]) for p, t in case.tables.items()}
    a = run_engine([case.program], [case.tables], dtype=torch.float64)
    b = run_engine([case.program], [permuted], dtype=torch.float64)
    assert torch.allclose(a.log_probs.exp(), b.log_probs.exp(), atol=1e-12)


@given(attentions(UNARY, BINARY), st.integers(1, 3), st.data())
def test_operator_identities(att, n, data):
    tables = data.draw(tables_for(UNARY + BINARY, n))
    agg_e = Aggregate(Quantifier.EXISTS, att)
    programs = [
        Program.yes_no(agg_e),
        Program.yes_no(Aggregate(Quantifier.EXISTS, Neg(Neg(att)))),  # Neg∘Neg = id
        Program.yes_no(Aggregate(Quantifier.NOT_EXISTS, att)),  # A_∄ = Neg∘A_∃
        Program.yes_no(Not(agg_e)),
        Program.yes_no(Aggregate(Quantifier.EXISTS, Conjoin(Top(), att))),  # Top is the identity of ⊙
        Program.yes_no(Aggregate(Quantifier.FORALL, Filter(UNARY[0], Top()))),  # Filter_π[1] = α(π | X)
    ]
    lp = run_engine(programs, [tables], dtype=torch.float64).log_probs[:, 0].exp()
    assert torch.allclose(lp[0], lp[1], atol=1e-12)
    assert torch.allclose(lp[2], lp[3], atol=1e-12)
    assert torch.allclose(lp[0], lp[4], atol=1e-12)
    assert torch.allclose(lp[5], torch.tensor(np.prod(tables[UNARY[0]]), dtype=torch.float64), atol=1e-12)


def test_focus_returns_the_attention():
    red = Predicate("red")
    att = Filter(red, Top())
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, att), focus=att)
    answers = run_engine([program], [{red: [0.2, 1.0, 0.0]}])
    assert torch.allclose(answers.focus.exp()[0], torch.tensor([0.2, 1.0, 0.0]))
    assert answers.object_mask.tolist() == [[True, True, True]]


def test_algorithm_1_predictions():
    red, blue = Predicate("red"), Predicate("blue")
    yes_no = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Top())))
    which = Program.choice({"red": Aggregate(Quantifier.EXISTS, Filter(red, Top())),
                            "blue": Aggregate(Quantifier.EXISTS, Filter(blue, Top()))})
    answers = run_engine([yes_no, which], [{red: [0.4, 0.3], blue: [0.9, 0.0]}])
    # P(yes) = 1 - 0.6*0.7 = 0.58
    assert answers.predictions() == ["yes", "blue"]
    assert answers.predictions(threshold=0.6) == ["no", "blue"]
    assert abs(answers.candidate_probabilities(0)["no"] - 0.42) < 1e-6
    assert answers.candidate_mask.tolist() == [[True, False], [True, True]]


@pytest.mark.slow
@given(scenes_and_programs(max_objects=3))
def test_complements_agree_with_the_probabilities(case):
    answers = run_engine([case.program], [case.tables], dtype=torch.float64)
    k = case.program.n_candidates
    p, q = answers.log_probs[0, :k].exp(), answers.log_complement[0, :k].exp()
    assert torch.allclose(p + q, torch.ones_like(p), atol=1e-12)


@pytest.mark.slow
@given(scenes_and_programs(max_objects=3), scenes_and_programs(max_objects=3))
def test_a_kept_one_program_plan_answers_as_a_fresh_one(a, b):
    """One question at a time reuses the whole plan of a batch of one: the same answers, on any scene."""
    from nablafol.engine import Engine
    from nablafol.engine.planning import build_batch_plan
    from nablafol.oracle import TableOracle
    engine, oracle = Engine(), TableOracle([b.tables, a.tables])
    engine([a.program], oracle, scenes=[0])  # the same program on the other scene: a plan of its own
    first = engine([a.program], oracle, scenes=[1])
    assert engine.plan([a.program], [1]) is engine.plan([a.program], [1])  # kept, not rebuilt
    engine([b.program], oracle, scenes=[0])  # another program in between
    again = engine([a.program], oracle, scenes=[1])
    fresh = engine.run(build_batch_plan([a.program], np.array([1]), engine.registry), oracle)
    assert torch.equal(first.log_probs, again.log_probs) and torch.equal(again.log_probs, fresh.log_probs)
    assert torch.equal(again.focus, fresh.focus) and again.labels == fresh.labels
    # the kept plan keeps its index tensors and oracle requests: another oracle's tables are still read
    other = TableOracle([a.tables, b.tables])
    kept = engine([a.program], other, scenes=[1])
    fresh = engine.run(build_batch_plan([a.program], np.array([1]), engine.registry), other)
    assert torch.equal(kept.log_probs, fresh.log_probs) and torch.equal(kept.focus, fresh.focus)


def test_what_a_plan_keeps_is_kept_per_arity_and_device():
    """A plan keeps the oracle requests and index tensors it made, one set per arity and device:
    the binary requests are never the unary ones, and a second call asks with the same objects."""
    from nablafol.engine import Engine
    from nablafol.oracle import TableOracle
    red, left = Predicate("red"), Predicate("left", arity=2)
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Relate.of(left, Quantifier.EXISTS, Top()))))
    asked = []

    class Recording(TableOracle):
        def unary(self, requests):
            asked.append(requests)
            return super().unary(requests)

        def binary(self, requests):
            asked.append(requests)
            return super().binary(requests)
    oracle = Recording([{red: torch.tensor([0.5, 0.25]), left: torch.tensor([[0.0, 1.0], [0.5, 0.0]])}])
    engine = Engine()
    plan = engine.plan([program, program], [0, 0])
    first, again = engine.run(plan, oracle), engine.run(plan, oracle)
    assert [r.predicates for r in asked] == [(red,), (left,), (red,), (left,)]
    assert asked[0] is asked[2] and asked[1] is asked[3] and asked[0] is not asked[1]
    assert torch.equal(first.log_probs, again.log_probs)


@pytest.mark.slow
@given(scenes_and_programs(max_objects=4), st.booleans())
def test_scenes_of_one_size_skip_the_masks_and_answer_the_same(a, two_scenes):
    """One scene, or scenes of one size, run without masks (``Tables.padded`` False): every answer,
    complement and focus bit for bit what the masked path gives on the same tables."""
    from dataclasses import replace

    from nablafol.engine import Engine
    from nablafol.oracle import TableOracle
    scene = {k: torch.as_tensor(np.asarray(v), dtype=torch.float32) for k, v in a.tables.items()}
    programs, tables, scenes = [a.program], [scene], None
    if two_scenes:
        programs, tables, scenes = [a.program, a.program, a.program], [scene, scene], [0, 1, 1]
    engine = Engine()
    oracle = TableOracle(tables)
    with torch.no_grad():
        plan = engine.plan_for(programs, oracle, scenes)
        unmasked = engine.tables(plan, oracle)
        assert unmasked.padded is False
        fast = engine.execute(plan, unmasked)
        masked = engine.execute(plan, replace(unmasked, padded=True))
    for got, want in ((fast.log_probs, masked.log_probs), (fast.log_complement, masked.log_complement),
                      (fast.focus, masked.focus), (fast.candidate_mask, masked.candidate_mask)):
        assert torch.equal(got, want)
    assert torch.equal(fast.log_probs, engine(programs, oracle, scenes).log_probs)


def test_scenes_of_different_sizes_are_masked():
    from nablafol.engine import Engine
    from nablafol.oracle import TableOracle
    man = Predicate("man")
    oracle = TableOracle([{man: torch.tensor([0.5, 0.5])}, {man: torch.tensor([0.5, 0.5, 0.5])}])
    program = Program.yes_no(Aggregate(Quantifier.FORALL, Filter(man, Top())))
    engine = Engine()
    tables = engine.tables(engine.plan([program, program], [0, 1]), oracle)
    assert tables.padded is True
    # the first scene's third slot is padding: ∀ over two objects, not three
    assert torch.allclose(engine([program, program], oracle).probs()[:, 0], torch.tensor([0.25, 0.125]))
