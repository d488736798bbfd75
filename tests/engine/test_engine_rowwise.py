"""One program run row by row (nablafol.engine.rowwise) gives the batched executor's answers, bit for bit."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.engine import Engine
from nablafol.engine import execution
from nablafol.engine.rowwise import MAX_ROWS, steps_of
from nablafol.ir import (Aggregate, AggregateEach, AnyOf, Atom, Conjoin, Filter, Predicate, Program, Quantifier, Relate,
                         Top)
from nablafol.oracle import TableOracle
from nablafol.testing.strategies import default_vocabulary, programs, scenes_and_programs

FIELDS = ("log_probs", "log_complement", "candidate_mask", "focus", "object_mask")


def _oracle(tables_per_scene, dtype, grad=False):
    leaves = [{p: torch.as_tensor(np.asarray(t), dtype=dtype).requires_grad_(grad) for p, t in tables.items()}
              for tables in tables_per_scene]
    return TableOracle(leaves), leaves


def _same(a, b, k=0):
    for name in FIELDS:
        x, y = getattr(a, name)[k], getattr(b, name)[k]
        assert x.dtype == y.dtype and torch.equal(x, y), name


@pytest.mark.slow
@settings(max_examples=examples(80), deadline=None)
@given(scenes_and_programs(max_objects=4), st.sampled_from([torch.float32, torch.float64]), st.integers(0, 2))
def test_rowwise_equals_batched(case, dtype, scene):
    """One program on scene ``scene`` of three same-sized scenes (unpadded: row by row), against
    the same program twice in one batch (batched), every field bit for bit."""
    scenes = [case.tables] * 3
    engine = Engine()
    oracle, _ = _oracle(scenes, dtype)
    alone = engine([case.program], oracle, scenes=[scene])
    batched = engine([case.program, case.program], oracle, scenes=[scene, scene])
    plan = engine.plan([case.program], [scene])
    if len(plan.v_scene) + plan.n_scalars <= MAX_ROWS:
        assert steps_of(plan) is not None
    _same(alone, batched)
    assert alone.predictions() == batched.predictions()[:1]
    assert alone.labels == [case.program.labels]


@pytest.mark.slow
@settings(max_examples=examples(40), deadline=None)
@given(programs(*default_vocabulary()), programs(*default_vocabulary()), st.integers(5, 40), st.integers(0, 2 ** 32 - 1))
def test_rowwise_equals_batched_on_larger_scenes(program, neighbour, n, seed):
    """Scenes large enough for vectorized sums (up to 40 objects; some probabilities exactly 0 or 1),
    the program alone, twice, and beside another program (whose rows share its kernels)."""
    rng = np.random.default_rng(seed)
    unary, binary = default_vocabulary()

    def table(shape):
        t = rng.random(shape)
        t[rng.random(shape) < 0.1] = 0.0
        t[rng.random(shape) < 0.1] = 1.0
        return t
    tables = {**{p: table((n,)) for p in unary}, **{p: table((n, n)) for p in binary}}
    oracle, _ = _oracle([tables], torch.float32)
    engine = Engine()
    alone = engine([program], oracle)
    _same(alone, engine([program, program], oracle, scenes=[0, 0]))
    beside = engine([neighbour, program], oracle, scenes=[0, 0])
    k = alone.log_probs.shape[1]  # the batch pads to its widest program
    for name in ("log_probs", "log_complement"):
        assert torch.equal(getattr(alone, name)[0], getattr(beside, name)[1, :k]), name
    assert torch.equal(alone.focus[0], beside.focus[1])


@pytest.mark.slow
@settings(max_examples=examples(40), deadline=None)
@given(scenes_and_programs(max_objects=3))
def test_rowwise_gradients_equal_batched(case):
    """Backward through the rows: the same gradients as through the batched kernels."""
    grads = []
    for programs in ([case.program], [case.program, case.program]):
        oracle, leaves = _oracle([case.tables], torch.float64, grad=True)
        answers = Engine()(programs, oracle, scenes=[0] * len(programs))
        k = case.program.n_candidates
        loss = answers.log_probs[0, :k].exp().sum() + answers.focus[0].exp().sum()
        if loss.requires_grad:  # else the program reads no table
            loss.backward()
        grads.append([leaves[0][p].grad for p in case.tables])
    for one, two in zip(*grads):
        assert (one is None) == (two is None)
        if one is not None:
            assert torch.allclose(one, two, rtol=1e-12, atol=1e-14)


def test_the_rows_are_what_runs(monkeypatch):
    """A one-question call goes row by row, and a batch, a padded batch or a calibrated engine do not."""
    calls = []
    real = execution.run_rows
    monkeypatch.setattr(execution, "run_rows", lambda *a: calls.append(1) or real(*a))
    man, left = Predicate("man"), Predicate("left", arity=2)
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Relate.of(left, Quantifier.EXISTS, Filter(man, Top()))))
    small = {man: torch.tensor([0.9, 0.2]), left: torch.tensor([[0.0, 1.0], [0.5, 0.0]])}
    big = {man: torch.tensor([0.9, 0.2, 0.4]), left: torch.full((3, 3), 0.5)}
    engine = Engine()
    one = engine([program], TableOracle([small]))
    assert len(calls) == 1
    engine([program, program], TableOracle([small]))  # a batch
    engine([program], TableOracle([small, big]), scenes=[0])  # padded: scenes of two sizes
    Engine(calibration=lambda log_a, mask, program, step: log_a)([program], TableOracle([small]))
    assert len(calls) == 1
    # by hand: ∃X ∃Y left(X, Y) ∧ man(Y); X = 0 reaches Y = 1 (0.2), X = 1 reaches Y = 0 (0.5 · 0.9)
    p_rel = torch.tensor([1 - (1 - 0.2 * 1.0), 1 - (1 - 0.9 * 0.5)])
    assert torch.allclose(one.probs()[0, 0], 1 - (1 - p_rel).prod())


def test_large_plans_stay_batched():
    """An open question over many candidates has more rows than are worth running one by one."""
    values = tuple(Predicate(f"colour{i}") for i in range(MAX_ROWS))
    program = Program.yes_no(AnyOf(AggregateEach(Quantifier.EXISTS, values, Top())))
    plan = Engine().plan([program])
    assert steps_of(plan) is None
    oracle = TableOracle([{v: torch.tensor([0.5, 0.0]) for v in values}])
    expected = 1 - 0.5 ** MAX_ROWS
    assert Engine(validate=False)([program], oracle).probs()[0, 0].item() == pytest.approx(expected)


@pytest.mark.parametrize("n", [5, 7, 12, 30])
def test_reversed_forall_relates_do_not_depend_on_their_neighbours(n):
    """A ∀-relate over a reversed atom sums a transposed table; beside an unreversed one (one
    kernel call, their tables stacked) it must still add in the same order as alone."""
    left, red = Predicate("left", arity=2), Predicate("red")
    reversed_, plain = (Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Relate(
        (Atom(left, reverse),), Quantifier.FORALL, Top())))) for reverse in (True, False))
    g = torch.Generator().manual_seed(n)
    oracle = TableOracle([{left: torch.rand(n, n, generator=g) ** 0.1, red: torch.rand(n, generator=g)}])
    engine = Engine()
    beside = engine([plain, reversed_], oracle, scenes=[0, 0])
    for k, program in enumerate((plain, reversed_)):
        alone = engine([program], oracle)
        assert torch.equal(alone.log_probs[0], beside.log_probs[k])
        assert torch.equal(alone.log_complement[0], beside.log_complement[k])


@pytest.mark.parametrize("quantifier", list(Quantifier))
@pytest.mark.parametrize("n", [8, 17, 33])
def test_relate_gradients_do_not_depend_on_a_reversed_neighbour(quantifier, n, monkeypatch):
    """Two relates at one level, one over a reversed atom: one batched kernel call whose stacked
    table is laid out transposed. Row by row, each relate has its own layout; the gradients (and
    answers) must not depend on which (found by review: ∃/∄ at 8-40 objects, in _NoneTrue's backward)."""
    left, on, red, blue = Predicate("left", arity=2), Predicate("on", arity=2), Predicate("red"), Predicate("blue")
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Conjoin(
        Relate((Atom(left, True),), quantifier, Filter(red, Top())),
        Relate((Atom(on, False),), quantifier, Filter(blue, Top())))))
    results = []
    for rowwise in (True, False):
        monkeypatch.setattr(execution, "steps_of", steps_of if rowwise else (lambda plan: None))
        g = torch.Generator().manual_seed(n)
        leaves = {p: torch.rand((n,) * p.arity, generator=g).requires_grad_() for p in (left, on, red, blue)}
        answers = Engine()([program], TableOracle([leaves]))
        answers.log_probs.sum().backward()
        results.append((answers.log_probs.detach(), [leaves[p].grad for p in (left, on, red, blue)]))
    (lp_rows, g_rows), (lp_batched, g_batched) = results
    assert torch.equal(lp_rows, lp_batched)
    for a, b in zip(g_rows, g_batched):
        assert torch.equal(a, b)


def test_the_focus_can_be_edited_before_backward():
    """The focus row a later step saved for its backward is handed out as a copy, as batched."""
    red, left = Predicate("red"), Predicate("left", arity=2)
    focus = Filter(red, Top())
    program = Program((Aggregate(Quantifier.EXISTS, Relate.of(left, Quantifier.EXISTS, focus)),), ("x",),
                      focus=focus)
    leaves = {red: torch.tensor([0.2, 0.9], requires_grad=True), left: torch.tensor([[0.0, 1.0], [0.3, 0.0]])}
    answers = Engine()([program], TableOracle([leaves]))
    answers.focus.clamp_(min=-30.0)
    answers.log_probs.sum().backward()
    assert leaves[red].grad is not None and torch.isfinite(leaves[red].grad).all()


def test_a_batch_of_programs_made_on_access_is_planned_by_each_object():
    """A program sequence whose items are made when indexed (nothing else keeps them): an id the
    planner saw may come back for another program (found by review)."""
    from collections.abc import Sequence

    preds = [Predicate(f"p{i}") for i in range(4)]

    class MadeOnAccess(Sequence):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i >= 4:
                raise IndexError(i)
            return Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(preds[i], Top())))

    engine = Engine()
    oracle = TableOracle([{p: torch.tensor([0.125 * (i + 1)]) for i, p in enumerate(preds)}])
    for _ in range(2):  # the second time, the registry holds equal, older objects
        plan = engine.plan(MadeOnAccess(), np.zeros(4, dtype=np.int64))
        assert engine.run(plan, oracle).probs().flatten().tolist() == [0.125, 0.25, 0.375, 0.5]


def test_log_half_stays_on_the_cpu_whatever_the_default_device():
    """-log 2 first made under another default device must still serve CPU tensors (found by review)."""
    from nablafol import numerics
    with torch.device("meta"):
        assert numerics.log_half(torch.float32).device.type == "cpu"
    x = torch.tensor([-0.1, -2.0])
    assert torch.equal(numerics.log1mexp(x), torch.log1p(-torch.exp(x)).where(x < -0.7, torch.log(-torch.expm1(x))))


def test_a_focus_that_is_the_tables_own_row_is_a_copy():
    """Filter over Top runs as the unary table's row plus 0; as the focus, the user gets a new
    tensor: editing it leaves the tables the call's exactness is computed from (later) as they were."""
    red = Predicate("red")
    focus = Filter(red, Top())
    program = Program((Aggregate(Quantifier.EXISTS, Conjoin(focus, focus)),), ("x",), focus=focus)
    engine = Engine()
    answers = engine([program], TableOracle([{red: torch.tensor([0.5, 0.5])}]))
    assert steps_of(engine.plan([program])) is not None
    answers.focus.fill_(0.0)  # red certain everywhere, were it the table: the repeated atom would be exact
    assert answers.exact.tolist() == [False]
    assert torch.allclose(answers.probs(), torch.tensor([[1 - 0.75 ** 2]]))  # the fast path: red(X) twice, 0.25


def test_editing_the_answers_leaves_the_next_call_alone():
    """The answers' masks and rows, and the tables' mask, are the user's to edit (one program row
    by row, two batched, and exact mode): nothing is shared between calls."""
    red = Predicate("red")
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Top())))
    oracle = TableOracle([{red: torch.tensor([0.5, 0.25])}])
    for engine, programs in ((Engine(), [program]), (Engine(), [program, program]), (Engine(exact=True), [program])):
        first = engine(programs, oracle)
        for t in (first.object_mask, first.candidate_mask):
            t.fill_(False)
        first.log_probs.fill_(0.0)
        engine.tables(engine.plan(programs), oracle).object_mask.fill_(False)
        again = engine(programs, oracle)
        assert again.object_mask.all() and again.candidate_mask.all()
        assert torch.allclose(again.probs(), torch.full((len(programs), 1), 1 - 0.5 * 0.75))


@pytest.mark.parametrize("quantifier", list(Quantifier))
def test_the_answers_can_be_edited_before_backward(quantifier):
    """The answer's own aggregate hands its pair to the answers; autograd saved one of them for
    log1mexp's backward, so the user gets copies to edit in place."""
    red = Predicate("red")
    program = Program.yes_no(Aggregate(quantifier, Filter(red, Top())))
    leaves = {red: torch.tensor([0.2, 0.9], requires_grad=True)}
    answers = Engine()([program], TableOracle([leaves]))
    answers.log_probs.clamp_(min=-30.0)
    answers.log_complement.clamp_(min=-30.0)
    (answers.log_probs + answers.log_complement).sum().backward()
    assert torch.isfinite(leaves[red].grad).all()


def test_a_signed_zero_in_a_table_comes_out_as_batched():
    """A logsigmoid oracle gives -0.0 for large logits; Filter over Top is ``0 + x`` batched
    (+0.0), and row by row too, through the focus and a conjunction after it."""
    red, blue = Predicate("red"), Predicate("blue")

    class SignedZeros(TableOracle):
        def unary(self, requests):
            table = super().unary(requests)
            return torch.where(table == 0, torch.tensor(-0.0, dtype=table.dtype), table)

    r = Filter(red, Top())
    focus = Conjoin(r, Filter(blue, r))
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, focus), focus=focus)
    oracle = SignedZeros([{red: torch.tensor([1.0, 0.5, 1.0]), blue: torch.tensor([1.0, 1.0, 0.25])}])
    engine = Engine()
    assert steps_of(engine.plan([program])) is not None
    alone, batched = engine([program], oracle).focus, engine([program, program], oracle).focus[:1]
    assert torch.equal(alone.signbit(), batched.signbit()) and torch.equal(alone, batched)
