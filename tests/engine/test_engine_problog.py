"""The engine against ProbLog, an independent exact probabilistic-logic solver (issue 8).

ProbLog gets each table as probabilistic facts and the program as rules
(benchmarks/problog_reference.py); on read-once programs the engine's answer must equal
ProbLog's to 1e-6. ProbLog itself is first checked against brute-force enumeration on
programs that are not read-once, so the translation is tested on its own.
"""
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

pytest.importorskip("problog", reason="ProbLog is in the test extra: pip install -e .[test]")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, home of benchmarks/

from benchmarks.problog_reference import problog_probabilities  # noqa: E402
from engine_helpers import run_engine  # noqa: E402
from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Relate, Top  # noqa: E402
from nablafol.testing import brute_force  # noqa: E402
from nablafol.testing.strategies import scenes_and_programs  # noqa: E402


@pytest.mark.slow
@settings(max_examples=examples(25))
@given(scenes_and_programs(read_once=True, max_objects=4))
def test_read_once_programs_equal_problog(case):
    got = run_engine([case.program], [case.tables], dtype=torch.float64).probs()[0, : case.program.n_candidates]
    want = problog_probabilities(case.program, case.tables, case.n_objects)
    assert np.allclose(got.tolist(), want, atol=1e-6, rtol=0), (case.program.formula(), got.tolist(), want)


@pytest.mark.slow
@settings(max_examples=examples(15))
@given(scenes_and_programs(max_objects=2, max_depth=3, enumerable=True))
def test_problog_translation_equals_brute_force_on_any_program(case):
    """No read-once condition here: ProbLog is exact everywhere, as enumeration is."""
    want = brute_force(case.program, case.tables)
    got = problog_probabilities(case.program, case.tables, case.n_objects)
    assert np.allclose(got, want, atol=1e-9, rtol=0), (case.program.formula(), got, want)


def test_engine_differs_from_problog_when_an_atom_repeats():
    """red(y1) is read once per x: ProbLog counts it once, the engine twice (so the check above can fail)."""
    chair, red, on = Predicate("chair"), Predicate("red"), Predicate("on", arity=2)
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(chair, Relate.of(on, Quantifier.EXISTS,
                                                                                    Filter(red, Top())))))
    tables = {chair: [1.0, 1.0], red: [0.0, 0.5], on: [[0.0, 1.0], [1.0, 1.0]]}
    assert problog_probabilities(program, tables, 2) == pytest.approx([0.5], abs=1e-12)
    got = run_engine([program], [tables], dtype=torch.float64).probs()[0, 0].item()
    assert got == pytest.approx(0.75, abs=1e-12)


BINARY_FAMILIES = ("relate", "verify rel after relate", "two hops", "and/or, same objects", "same (one input)",
                   "same (two inputs)")


@pytest.mark.slow
@settings(max_examples=examples(6))
@given(st.integers(0, 2**31 - 1))
def test_gqa_questions_that_repeat_atoms_over_probabilistic_scene_graphs_equal_problog_in_exact_mode(seed):
    """Issue 19's check: non-read-once binary GQA questions over small probabilistic scene graphs
    (the golden oracle's tables): exact mode equals ProbLog to 1e-6 and says so; the fast path
    flags every answer it gets wrong by more than 1e-6."""
    from benchmarks.bench_exact import _tables_of, questions
    from nablafol.compiler import Compiler
    from nablafol.engine import Engine
    from nablafol.graph_oracles import SceneGraphOracle

    rng, compiler = np.random.default_rng(seed), Compiler()
    pairs = [q for family in BINARY_FAMILIES for q in questions(rng, compiler, family, 1, 4, 1.0)]
    programs, oracle = [p for p, _ in pairs], SceneGraphOracle([g for _, g in pairs])
    assert not any(p.read_once for p in programs)
    exact = Engine(exact=True)(programs, oracle)
    fast = Engine()(programs, oracle)
    for i, program in enumerate(programs):
        want = problog_probabilities(program, _tables_of(program, oracle, i), int(oracle.num_objects[i]))[0]
        assert bool(exact.exact[i]) and abs(exact.probs()[i, 0].item() - want) <= 1e-6, program.formula()
        if abs(fast.probs()[i, 0].item() - want) > 1e-6:
            assert not bool(fast.exact[i]), program.formula()
