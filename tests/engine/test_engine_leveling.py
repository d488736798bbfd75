"""Groups merged across levels (engine/leveling.py): every input still runs before its reader, no
group is added, and a batch answers as it did with each row at its first level: the same values to
the bit, gradients within docs/numerics.md's tolerance."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nablafol.engine import Engine, leveling, planning
from nablafol.engine.planning import Registry, build_batch_plan
from nablafol.ir import Aggregate, Conjoin, Filter, Neg, Program, Quantifier, Top
from nablafol.oracle import TableOracle
from nablafol.testing.strategies import default_vocabulary, programs
from tiers import examples

UNARY, BINARY = default_vocabulary()


@st.composite
def dags(draw):
    """Rows of 1-3 kinds, each reading up to two earlier rows, at their first levels (one more
    than their deepest input's)."""
    n = draw(st.integers(1, 30))
    kinds = np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), dtype=np.int64)
    edges, levels = [], np.zeros(n, dtype=np.int64)
    for r in range(1, n):
        for read in draw(st.lists(st.integers(0, r - 1), max_size=2, unique=True)):
            edges.append((r, read))
            levels[r] = max(levels[r], levels[read] + 1)
    return kinds, levels, np.array(edges, dtype=np.int64).reshape(-1, 2)


def _first_levels(v_kind, v_level, v_in0, v_in1, s_kind, s_level, e_node, e_arg):
    return v_level, s_level


def _groups(kinds, levels) -> int:
    return len(set(zip(kinds.tolist(), levels.tolist())))


@settings(max_examples=examples(300), deadline=None)
@given(dags())
def test_inputs_stay_before_their_readers_and_no_group_is_added(dag):
    kinds, levels, edges = dag
    last = int(levels.max())
    moved = leveling.merged_levels(kinds, levels, edges, 0, last)
    assert moved.shape == levels.shape and moved.min() >= 0 and moved.max() <= last
    assert all(moved[r] > moved[i] for r, i in edges.tolist())
    assert _groups(kinds, moved) <= _groups(kinds, levels)


def test_a_kind_met_at_two_depths_runs_as_one_group(monkeypatch):
    # filters at depths 1 and 4 (after a negation and a conjunction) beside a chain of two filters
    # (depths 1 and 2) read by an aggregation only: the chain's second filter waits for depth 4
    a, b = UNARY[:2]
    deep = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(a, Conjoin(Filter(b, Top()), Neg(Filter(a, Top()))))))
    chain = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(a, Filter(b, Top()))))

    def filter_groups() -> int:
        plan = build_batch_plan([deep, chain], np.zeros(2, dtype=np.int64), Registry())
        return sum(g.operator.name == "filter" for v, _ in plan.levels for g in v)
    assert filter_groups() == 2
    monkeypatch.setattr(planning, "fewer_groups", _first_levels)
    assert filter_groups() == 3


def _tables(rng, n):
    return {p: torch.as_tensor(rng.uniform(0.02, 0.98, (n,) * p.arity)).requires_grad_() for p in UNARY + BINARY}


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(programs(UNARY, BINARY, max_depth=4), min_size=2, max_size=6), st.integers(0, 2 ** 16))
def test_a_batch_answers_as_with_its_first_levels(batch, seed):
    def run(merge: bool):
        with pytest.MonkeyPatch.context() as m:
            if not merge:
                m.setattr(planning, "fewer_groups", _first_levels)
            rng = np.random.default_rng(seed)
            scenes = [_tables(rng, n) for n in (3, 4)]
            engine = Engine()
            plan = engine.plan(batch, np.arange(len(batch)) % 2)
            answers = engine(batch, TableOracle(scenes), np.arange(len(batch)) % 2)
            loss = answers.log_probs.masked_fill(~answers.candidate_mask, 0.0).sum()
            if loss.requires_grad:  # else every answer is a constant (a Top, a value no table decides)
                loss.backward()
            grads = [t.grad for s in scenes for t in s.values()]
            return plan.kernel_groups, answers, grads

    groups, merged, merged_grads = run(True)
    first_groups, first, first_grads = run(False)
    assert groups <= first_groups
    assert torch.equal(merged.log_probs, first.log_probs) and torch.equal(merged.log_complement, first.log_complement)
    # a row read by several others sums their gradients in the order their groups ran: equal
    # within docs/numerics.md's float64 tolerance, not always to the bit
    for a, b in zip(merged_grads, first_grads):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
