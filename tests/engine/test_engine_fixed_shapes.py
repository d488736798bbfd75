"""The capturable path (``Engine(fixed_shapes=True)``): the eager path's answers and gradients
within docs/numerics.md's tolerance, at bucketed shapes, with no value read on the host."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.overrides import TorchFunctionMode
from tiers import examples

from nablafol.engine import Engine
from nablafol.engine.fixed_shapes import ShapeFloors, bucket, layout_of, padded_plan
from nablafol.errors import ProbabilityError, ProgramStructureError
from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Relate, Top
from nablafol.oracle import TableOracle
from nablafol.testing.strategies import default_vocabulary, programs, scenes_and_programs

#: docs/numerics.md: the fixed-shape path's values and gradients against the eager path's
TOLERANCE = {torch.float32: dict(rtol=1e-5, atol=1e-6), torch.float64: dict(rtol=1e-12, atol=1e-12)}
# A table entry's gradient sums its readers' terms, some of opposite signs, in another order
GRADIENT_TOLERANCE = {torch.float32: dict(rtol=1e-4, atol=1e-5), torch.float64: TOLERANCE[torch.float64]}


def _leaves(tables_per_scene, dtype):
    return [{p: torch.as_tensor(np.asarray(t), dtype=dtype).requires_grad_(True) for p, t in tables.items()}
            for tables in tables_per_scene]


def _run(engine, programs_, tables_per_scene, scenes, dtype):
    """Answers and the gradient of every table (None where the loss does not read it)."""
    leaves = _leaves(tables_per_scene, dtype)
    answers = engine(programs_, TableOracle(leaves), scenes)
    loss = (answers.log_probs.exp().masked_fill(~answers.candidate_mask, 0.0).sum()
            + answers.focus.exp().sum() + answers.log_complement.clamp(min=-50).sum())
    if loss.requires_grad:  # else no program reads a table
        loss.backward()
    return answers, [leaf.grad for tables in leaves for leaf in tables.values()]


def _agree(eager, fixed, dtype):
    (a, grads_a), (b, grads_b) = eager, fixed
    for name in ("log_probs", "log_complement", "focus"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.shape == y.shape and x.dtype == y.dtype, name
        torch.testing.assert_close(y, x, **TOLERANCE[dtype], msg=name)
    for name in ("candidate_mask", "object_mask"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    assert b.labels == a.labels
    assert torch.equal(a.exact, b.exact)
    for x, y in zip(grads_a, grads_b):
        assert (x is None) == (y is None)
        if x is not None:
            torch.testing.assert_close(y, x, **GRADIENT_TOLERANCE[dtype])


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(scenes_and_programs(max_objects=5), min_size=1, max_size=4), st.data())
def test_fixed_shapes_equal_eager(cases, data):
    """Programs over scenes of different sizes (each program on a scene drawn among the batch's):
    the same answers, exactness flags and table gradients as the eager path."""
    scenes = data.draw(st.lists(st.integers(0, len(cases) - 1), min_size=len(cases), max_size=len(cases)))
    programs_ = [case.program for case in cases]
    tables = [case.tables for case in cases]
    _agree(_run(Engine(), programs_, tables, scenes, torch.float64),
           _run(Engine(fixed_shapes=True), programs_, tables, scenes, torch.float64), torch.float64)


@pytest.mark.slow
@settings(max_examples=examples(30), deadline=None)
@given(st.lists(programs(*default_vocabulary()), min_size=1, max_size=6), st.lists(st.integers(5, 40), min_size=1,
                                                                                    max_size=3),
       st.integers(0, 2 ** 32 - 1))
def test_fixed_shapes_equal_eager_on_larger_scenes(programs_, sizes, seed):
    """float32 scenes of up to 40 objects (some probabilities exactly 0 or 1): within the tolerance."""
    rng = np.random.default_rng(seed)
    unary, binary = default_vocabulary()

    def table(shape):  # a tenth of the cells exactly 0, a tenth exactly 1
        kind = rng.random(shape)
        return np.where(kind < 0.1, 0.0, np.where(kind < 0.2, 1.0, rng.random(shape)))
    tables = [{**{p: table((n,)) for p in unary}, **{p: table((n, n)) for p in binary}} for n in sizes]
    scenes = rng.integers(0, len(sizes), len(programs_))
    _agree(_run(Engine(), programs_, tables, scenes, torch.float32),
           _run(Engine(fixed_shapes=True), programs_, tables, scenes, torch.float32), torch.float32)


def test_padded_plan_runs_at_bucketed_shapes():
    """Batches of different programs and sizes whose counts share buckets run at the same shapes."""
    engine = Engine()
    red, blue, on = Predicate("red"), Predicate("blue"), Predicate("on", arity=2)
    hop = Program.yes_no(Aggregate(Quantifier.EXISTS, Relate.of(on, Quantifier.EXISTS, Filter(red, Top()))))
    plain = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(blue, Top())))
    shapes = []
    for batch in ([hop] * 5 + [plain] * 3, [hop] * 6 + [plain] * 2):
        plan = padded_plan(engine.plan(batch, np.arange(len(batch))))
        shapes.append([(g.operator.name, g.stop - g.start) for v, s in plan.levels for g in v + s])
        assert all(size == bucket(size) for _, size in shapes[-1])
        assert plan.n_programs == bucket(len(batch)) and len(plan.candidate_rows) == bucket(len(batch))
        shapes[-1].append(tuple(a.shape for a in layout_of(plan)[1]))  # every index the run reads
    assert shapes[0] == shapes[1]


def test_a_smaller_batch_runs_at_the_layout_a_larger_one_left():
    """Shape floors: after a batch of one structure, a smaller one of the same structure is padded
    to its sizes (one layout, one recording), and its answers are still the eager path's."""
    red, blue, on = Predicate("red"), Predicate("blue"), Predicate("on", arity=2)
    hop = Program.yes_no(Aggregate(Quantifier.EXISTS, Relate.of(on, Quantifier.EXISTS, Filter(red, Top()))))
    plain = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(blue, Top())))
    big, small = [hop] * 9 + [plain] * 5, [plain] * 2 + [hop] * 3
    engine, floors = Engine(), ShapeFloors()
    plans = [engine.plan(batch, np.arange(len(batch)) % 2) for batch in (big, small)]
    layouts = [layout_of(padded_plan(plan, floors.sizes(plan)))[0] for plan in plans]
    assert layouts[0] == layouts[1] != layout_of(padded_plan(plans[1]))[0]
    rng = np.random.default_rng(1)
    tables = [{red: rng.random(n), blue: rng.random(n), on: rng.random((n, n))} for n in (4, 6)]
    fixed = Engine(fixed_shapes=True)
    for batch in (big, small):
        scenes = np.arange(len(batch)) % 2
        _agree(_run(Engine(), batch, tables, scenes, torch.float64), _run(fixed, batch, tables, scenes, torch.float64),
               torch.float64)


# --- no value read on the host -----------------------------------------------------------------

#: Tensor methods and functions that read a value on the host, or whose result's size depends on values
_HOST_READS = {"item", "tolist", "__bool__", "__int__", "__float__", "__index__", "numpy", "cpu", "nonzero",
               "argwhere", "masked_select", "unique", "unique_consecutive", "__array__"}
#: The aten operators they come to (and what a boolean index or a data-dependent size calls)
_ATEN_READS = {"aten::item", "aten::_local_scalar_dense", "aten::is_nonzero", "aten::nonzero", "aten::masked_select",
               "aten::_unique2", "aten::unique_consecutive", "aten::nonzero_static"}


class _HostReads(TorchFunctionMode):
    """Records every host read a torch call makes while active (a tensor subclass would miss the
    reads of tensors the engine makes itself)."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in _HOST_READS:
            self.seen.append(name)
        return func(*args, **(kwargs or {}))


def _host_reads(step) -> list:
    """What ``step()`` reads on the host: the torch calls seen, and the aten operators profiled."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof, _HostReads() as reads:
        step()
    return reads.seen + sorted({e.name for e in prof.events() if e.name in _ATEN_READS})


class _DenseOracle:
    """Log-tables stacked per scene, answered by gathers alone (what a neural oracle's heads do)."""

    def __init__(self, unary: dict, binary: dict, sizes):
        self.u_names, self.b_names = list(unary), list(binary)
        self.u = torch.stack(list(unary.values()), 1).requires_grad_(True)  # (B, U, N)
        self.b = torch.stack(list(binary.values()), 1).requires_grad_(True)  # (B, V, N, N)
        self.num_objects = torch.as_tensor(sizes)

    def unary(self, requests):
        index = torch.as_tensor([self.u_names.index(p) for p in requests.predicates])
        return self.u[requests.scene, index[requests.predicate]]

    def binary(self, requests):
        index = torch.as_tensor([self.b_names.index(p) for p in requests.predicates])
        return self.b[requests.scene, index[requests.predicate]]


def _training_step(engine):
    """A step's engine work: programs over scenes of 6 and 9 objects, forward and backward."""
    g = torch.Generator().manual_seed(0)
    (p0, p1, p2), (r0, r1) = default_vocabulary()
    n, sizes = 9, [6, 9]
    mask = torch.arange(n)[None, :] < torch.tensor(sizes)[:, None]

    def log_table(*shape):
        t = torch.rand(*shape, generator=g).log()
        return t.masked_fill(~mask.view(len(sizes), *([1] * (len(shape) - 2)), n), float("-inf")) if len(shape) else t
    oracle = _DenseOracle({p: log_table(2, n) for p in (p0, p1, p2)},
                          {r: log_table(2, n, n).masked_fill(~mask[:, :, None], float("-inf")) for r in (r0, r1)},
                          sizes)
    batch = [Program.yes_no(Aggregate(Quantifier.EXISTS, Relate.of(r0, Quantifier.EXISTS, Filter(p0, Top())))),
             Program.yes_no(Aggregate(Quantifier.FORALL, Filter(p1, Top()))),
             Program.yes_no(Aggregate(Quantifier.NOT_EXISTS, Relate.of(r1, Quantifier.FORALL, Filter(p2, Top()))))]

    def step():
        answers = engine(batch * 3, oracle, scenes=[0, 1, 1, 0, 1, 0, 0, 1, 1])
        answers.log_probs.sum().backward()
    return step


def test_fixed_shapes_step_reads_nothing_on_the_host():
    """Forward and backward of a batch over padded scenes: no host read (``validate=False``), one
    with validation (its flag, after the batch); the eager path reads several (the check can fail)."""
    assert _host_reads(_training_step(Engine(fixed_shapes=True, validate=False))) == []
    assert _host_reads(_training_step(Engine(fixed_shapes=True))).count("__bool__") == 1
    assert _host_reads(_training_step(Engine())) != []


def test_fixed_shapes_refuse_bad_tables_as_eager():
    """A probability above 1 is named (predicate, scene, objects) as the eager path names it."""
    red = Predicate("red")
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Top())))
    messages = []
    for engine in (Engine(), Engine(fixed_shapes=True)):
        class Over:  # returns log 2 for the second object
            num_objects = torch.tensor([2])

            def unary(self, requests):
                return torch.tensor([[-0.5, 0.7]]).expand(len(requests), 2)
        with pytest.raises(ProbabilityError) as raised:
            engine([program], Over())
        messages.append(str(raised.value))
    assert messages[0] == messages[1] and "'red'" in messages[0]


def test_fixed_shapes_refuse_what_is_not_fixed_shape_work():
    for other in (dict(exact=True), dict(bounds=True)):
        with pytest.raises(ProgramStructureError, match="fixed_shapes"):
            Engine(fixed_shapes=True, **other)


@pytest.mark.slow
def test_compiled_fixed_shapes_equal_eager_and_replay_a_layout():
    """``Engine(fixed_shapes=True, compile=True)`` runs the batch through
    ``torch.compile(mode="reduce-overhead")``: the eager path's answers and gradients within the
    tolerance, and a second batch of other programs at the same layout compiles nothing new."""
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    (p0, p1, _), (r0, _) = default_vocabulary()
    hop = Program.yes_no(Aggregate(Quantifier.EXISTS, Relate.of(r0, Quantifier.EXISTS, Filter(p0, Top()))))
    plain = Program.yes_no(Aggregate(Quantifier.FORALL, Filter(p1, Top())))
    rng = np.random.default_rng(3)
    tables = [{p0: rng.random(n), p1: rng.random(n), r0: rng.random((n, n))} for n in (5, 7)]
    compiled = Engine(fixed_shapes=True, compile=True, validate=False)
    graphs = []
    for batch in ([hop] * 7 + [plain] * 7, [plain] * 8 + [hop] * 8):  # each group 7 or 8 rows: bucket 8
        scenes = [k % 2 for k in range(len(batch))]
        _agree(_run(Engine(), batch, tables, scenes, torch.float32),
               _run(compiled, batch, tables, scenes, torch.float32), torch.float32)
        graphs.append(counters["stats"]["unique_graphs"])
    assert graphs[0] >= 1 and graphs[1] == graphs[0]


@pytest.mark.parametrize("returned", [[[0.5, 0.5]], torch.zeros(2), torch.zeros(1, 2, 2)])
def test_fixed_shapes_refuse_a_misshapen_table_as_eager(returned):
    """A table that is not a tensor of requests x objects is named by the same check on both paths."""
    from nablafol.errors import ShapeError
    red = Predicate("red")
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Top())))

    class Misshapen:
        num_objects = torch.tensor([2])

        def unary(self, requests):
            return returned
    for engine in (Engine(), Engine(fixed_shapes=True)):
        with pytest.raises(ShapeError, match=r"^Misshapen\.unary returned .*, expected \(1, (2|N)\) "
                                             r"\(requests x objects\)$"):
            engine([program], Misshapen())


def test_editing_fixed_shape_answers_leaves_the_next_call_alone():
    """The masks a fixed-shape batch returns are the user's: the plan's uploaded arrays stay as they were."""
    red = Predicate("red")
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Top())))
    oracle = TableOracle([{red: torch.tensor([0.5, 0.25])}])
    engine = Engine(fixed_shapes=True)
    first = engine([program, program], oracle)
    first.candidate_mask.fill_(False)
    first.object_mask.fill_(False)
    again = engine([program, program], oracle)
    assert again.candidate_mask.all() and again.object_mask.all()
    assert torch.allclose(again.probs(), torch.full((2, 1), 1 - 0.5 * 0.75))
