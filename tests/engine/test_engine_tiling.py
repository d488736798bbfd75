"""One program over many scenes (engine/tiling.py): its plan repeated along the scene axis is the
plan of the batch of copies, array for array, and the engine's answers are those of each scene
run alone."""
import dataclasses

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nablafol.engine import Engine
from nablafol.engine.planning import Registry, build_batch_plan
from nablafol.engine.tiling import TILED_ARRAYS, tiled_plan
from nablafol.oracle import TableOracle
from nablafol.testing.strategies import default_vocabulary, programs
from tiers import examples

UNARY, BINARY = default_vocabulary()
PROGRAMS = programs(UNARY, BINARY, max_depth=4)


def assert_same_plan(got, want):
    for f in dataclasses.fields(want):
        if f.name in ("levels", "derived"):
            continue
        a, b = getattr(got, f.name), getattr(want, f.name)
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape, f.name
            np.testing.assert_array_equal(a, b, err_msg=f.name)
        else:
            assert a == b, f.name
    assert len(got.levels) == len(want.levels)
    for (gv, gs), (wv, ws) in zip(got.levels, want.levels):
        for g, w in zip(gv + gs, wv + ws, strict=True):
            assert (g.operator, g.start, g.stop) == (w.operator, w.start, w.stop)
            assert set(g.arrays) == set(w.arrays) and set(w.arrays) <= set(TILED_ARRAYS)
            for name in w.arrays:
                assert g.arrays[name].dtype == w.arrays[name].dtype, name
                np.testing.assert_array_equal(g.arrays[name], w.arrays[name], err_msg=name)


@settings(max_examples=examples(150), deadline=None)
@given(PROGRAMS, st.lists(st.integers(0, 6), min_size=1, max_size=9))
def test_the_tiled_plan_is_the_plan_of_the_copies(program, scenes):
    registry = Registry()
    scenes = np.asarray(scenes, dtype=np.int64)
    single = build_batch_plan([program], np.zeros(1, dtype=np.int64), registry)
    want = build_batch_plan([program] * len(scenes), scenes, registry)
    assert_same_plan(tiled_plan(single, scenes, program.labels), want)


def _scene(rng, n):
    return {p: torch.as_tensor(rng.uniform(0.02, 0.98, (n,) * p.arity)) for p in UNARY + BINARY}


@settings(max_examples=examples(60), deadline=None)
@given(PROGRAMS, st.lists(st.integers(1, 4), min_size=2, max_size=6), st.integers(0, 2 ** 16))
def test_one_program_over_many_scenes_answers_as_each_scene_alone(program, sizes, seed):
    rng = np.random.default_rng(seed)
    scenes = [_scene(rng, n) for n in sizes]
    engine = Engine()
    together = engine([program] * len(scenes), TableOracle(scenes))
    for s, tables in enumerate(scenes):
        alone = Engine()([program], TableOracle([tables]))
        width = alone.log_probs.shape[1]
        torch.testing.assert_close(together.log_probs[s, :width], alone.log_probs[0], rtol=0, atol=0)
        torch.testing.assert_close(together.log_complement[s, :width], alone.log_complement[0], rtol=0, atol=0)


def test_a_batch_of_one_program_is_planned_by_tiling(monkeypatch):
    # the engine takes the tiled path (one program object over many scenes), and its answers are
    # those of the batch planned program by program
    from nablafol.engine import tiling
    from nablafol.ir import Aggregate, Filter, Program, Quantifier, Relate, Top
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(UNARY[0], Relate.of(BINARY[0], Quantifier.EXISTS,
                                                                                       Filter(UNARY[1], Top())))))
    rng = np.random.default_rng(0)
    oracle = TableOracle([_scene(rng, 5) for _ in range(8)])
    calls = []
    original = tiling.tiled_plan
    monkeypatch.setattr(tiling, "tiled_plan", lambda *a: calls.append(1) or original(*a))
    engine = Engine()
    tiled = engine([program] * 8, oracle).log_probs
    assert calls == [1]
    assert torch.equal(engine([program] * 8, oracle).log_probs, tiled) and calls == [1]  # planned once
    copies = [Program(program.candidates, program.labels) for _ in range(8)]  # equal, not the same object
    planned = Engine()(copies, oracle).log_probs
    assert calls == [1]
    assert torch.equal(tiled, planned)
