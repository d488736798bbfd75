"""Batched execution against the same engine run one question at a time.

    python -m benchmarks.bench_batched            # 1,024 questions, scenes of 8-24 objects
    python -m benchmarks.bench_batched --quick

The same ``Engine``, the same programs (random DFOL programs of 2 to 8 operators, as in
`bench_engine`) and the same oracle (pre-drawn tables, so the figure is the engine's cost)
answer ``batch`` questions twice: in one call, and in ``batch`` calls of one question. Both
run warm (per-program plans cached) and alternate for ``rounds`` rounds; each keeps its
best round, so a burst of load from other jobs on the machine hits both alike. The figure
is the ratio of the per-question times; the answers of the two modes must agree.
"""
from __future__ import annotations

import time

import numpy as np
import torch

from nablafol.engine import Engine

from .bench_engine import PoolOracle, random_programs
from .suite_cli import suite_main

AIM_SPEEDUP = 50.0


# rounds: alternations of the two modes; singles: questions timed one by one (a prefix of the batch)
SIZES = {"tiny": dict(batch=64, rounds=1, singles=16), "quick": dict(batch=1024, rounds=3, singles=256),
         "full": dict(batch=1024, rounds=5, singles=1024)}


def workload(batch: int, objects: tuple[int, int] = (8, 24), seed: int = 0, n_scenes: int = 64):
    """``batch`` random programs, the oracle of ``n_scenes`` scenes and each program's scene."""
    rng = np.random.default_rng(seed)
    programs = random_programs(rng, batch)
    sizes = rng.integers(objects[0], objects[1] + 1, size=n_scenes)
    scenes = rng.integers(0, n_scenes, size=batch)
    return programs, PoolOracle(sizes, seed=seed), scenes


def run(size: str = "full", objects: tuple[int, int] = (8, 24), seed: int = 0) -> dict:
    batch, rounds, singles = SIZES[size]["batch"], SIZES[size]["rounds"], SIZES[size]["singles"]
    programs, oracle, scenes = workload(batch, objects, seed)
    engine = Engine(validate=False)
    best_batch = best_single = float("inf")
    with torch.no_grad():
        batched = engine(programs, oracle, scenes).log_probs[:, 0]  # warm: plans cached
        single = torch.cat([engine([p], oracle, scenes[k:k + 1]).log_probs[:, 0]
                            for k, p in enumerate(programs[:singles])])
        for _ in range(rounds):
            start = time.perf_counter()
            engine(programs, oracle, scenes)
            best_batch = min(best_batch, (time.perf_counter() - start) / batch)
            start = time.perf_counter()
            for k in range(singles):
                engine([programs[k]], oracle, scenes[k:k + 1])
            best_single = min(best_single, (time.perf_counter() - start) / singles)
    diff = (batched[:singles].exp() - single.exp()).abs().max().item()
    return {"batch": batch, "questions_timed_one_by_one": singles, "objects": list(objects), "rounds": rounds,
            "batched_ms_per_question": best_batch * 1e3, "single_ms_per_question": best_single * 1e3,
            "speedup": best_single / best_batch, "aim_speedup": AIM_SPEEDUP,
            "max_abs_prob_diff": diff}


def report(result: dict) -> list[str]:
    return [f"Batched vs one at a time: {result['batch']:,} random programs of 2-8 operators, scenes of "
            f"{result['objects'][0]}-{result['objects'][1]} objects, best of {result['rounds']} rounds",
            f"  batched {result['batched_ms_per_question']:.4f} ms/question, one at a time "
            f"{result['single_ms_per_question']:.3f} ms/question -> {result['speedup']:.1f}x "
            f"(aim {result['aim_speedup']:.0f}x); answers agree to {result['max_abs_prob_diff']:.1e}"]


def main(argv=None) -> None:
    suite_main(__doc__, run, report, argv)


if __name__ == "__main__":
    main()
