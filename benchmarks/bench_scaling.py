"""How the engine's time grows: with objects per scene, batch size and program length.

    python -m benchmarks.bench_scaling [--quick] [--plot benchmarks/scaling.png]

Each curve times whole batches (planning, oracle look-ups, operators; plans cached, best
of ``rounds``) over a grid and fits the slope of log(time) against log(size):

* objects N, relate-heavy programs (∃x: u(x) ∧ ∃y: b(x, y) ∧ u'(y) ∧ ∃z: b'(y, z) ∧ u''(z)):
  two Q-products per question, ``N²`` terms each, so time ~ N²;
* objects N, filter-only programs (four filters, one aggregation): time ~ N;
* batch size, random programs of 2 to 8 operators over scenes of 8-24 objects: time ~ batch;
* program length L (a chain of alternating filters and relates): time ~ L.

Small sizes carry the per-call overhead (a few milliseconds per batch), which flattens a
curve: the slope is fitted on the top points of each grid. The filter-only batch is kept
at 256 so that one operator's tensor (batch x N floats) stays within the processor's cache
over the grid (a curve that leaves the cache midway bends upward for that reason alone).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from nablafol.engine import Engine
from nablafol.ir import Aggregate, Atom, Filter, Predicate, Program, Quantifier, Relate, Top

from .bench_engine import BINARY, UNARY, PoolOracle, random_programs

# fitted slope ranges taken as "grows like": N² / N / batch / length
EXPECTED = {"objects_relate": (2.0, 0.4), "objects_filter": (1.0, 0.3), "batch": (1.0, 0.2), "length": (1.0, 0.3)}


def relate_heavy(k: int) -> Program:
    u = [UNARY[(k + i) % len(UNARY)] for i in range(3)]
    inner = Filter(u[2], Top())
    mid = Filter(u[1], Relate((Atom(BINARY[k % len(BINARY)], False),), Quantifier.EXISTS, inner))
    outer = Filter(u[0], Relate((Atom(BINARY[(k + 1) % len(BINARY)], False),), Quantifier.EXISTS, mid))
    return Program.yes_no(Aggregate(Quantifier.EXISTS, outer))


def filter_only(k: int) -> Program:
    att = Top()
    for i in range(4):
        att = Filter(UNARY[(k + 3 * i) % len(UNARY)], att)
    return Program.yes_no(Aggregate(Quantifier.EXISTS, att))


def chain(k: int, length: int) -> Program:
    """``length`` operators: filters and ∃-relates alternating, then an aggregation."""
    att = Filter(UNARY[k % len(UNARY)], Top())
    for i in range(length - 2):
        if i % 2:
            att = Filter(UNARY[(k + i) % len(UNARY)], att)
        else:
            att = Relate((Atom(BINARY[(k + i) % len(BINARY)], False),), Quantifier.EXISTS, att)
    return Program.yes_no(Aggregate(Quantifier.EXISTS, att))


def time_points(engine: Engine, points: list, rounds: int) -> list[float]:
    """Best seconds of one warm batch call per point ``(programs, sizes, scenes)``.

    Rounds go over all points in turn (not point after point), so a burst of load from other
    jobs on the machine lands on every point alike instead of bending one end of a curve."""
    runs = []
    with torch.no_grad():
        for programs, sizes, scenes in points:
            oracle = PoolOracle(sizes, pool=16)
            engine(programs, oracle, scenes)  # warm: plans cached, pools drawn
            runs.append((programs, oracle, scenes))
        best = [float("inf")] * len(runs)
        for _ in range(rounds):
            for i, (programs, oracle, scenes) in enumerate(runs):
                start = time.perf_counter()
                engine(programs, oracle, scenes)
                best[i] = min(best[i], time.perf_counter() - start)
    return best


def loglog_slope(xs, ys) -> float:
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


# per curve: (batch, grid); rounds: best-of per point
SIZES = {
    "tiny": dict(rounds=1, objects_relate=(16, [8, 16, 32]), objects_filter=(32, [64, 128, 256]),
                 batch=(None, [16, 32, 64]), length=(16, [4, 8, 16])),
    "quick": dict(rounds=5, objects_relate=(128, [32, 64, 128, 256]), objects_filter=(256, [512, 1024, 2048, 4096]),
                  batch=(None, [256, 512, 1024, 2048, 4096]), length=(128, [8, 16, 32, 64])),
    "full": dict(rounds=7, objects_relate=(128, [32, 64, 128, 256, 512]),
                 objects_filter=(256, [512, 1024, 2048, 4096, 8192]),
                 batch=(None, [256, 512, 1024, 2048, 4096, 8192]), length=(256, [8, 16, 32, 64, 128])),
}
TAIL = 3  # points at the top of a grid the asymptotic slope is fitted on


def run(size: str = "full", seed: int = 0) -> dict:
    cfg = SIZES[size]
    rounds = cfg["rounds"]
    engine = Engine(validate=False)
    rng = np.random.default_rng(seed)
    curves = {}

    def curve(name, grid, point, what):
        seconds = time_points(engine, [point(x) for x in grid], rounds)
        curves[name] = {"x": list(grid), "seconds": seconds, "what": what,
                        "slope": loglog_slope(grid[-TAIL:], seconds[-TAIL:]), "slope_all": loglog_slope(grid, seconds),
                        "expected_slope": EXPECTED[name][0], "tolerance": EXPECTED[name][1]}

    batch, grid = cfg["objects_relate"]
    programs = [relate_heavy(k) for k in range(batch)]
    curve("objects_relate", grid, lambda n: (programs, [n] * 8, np.arange(batch) % 8),
          f"relate-heavy programs (2 relates), batch {batch}, against objects per scene")

    batch, grid = cfg["objects_filter"]
    programs = [filter_only(k) for k in range(batch)]
    curve("objects_filter", grid, lambda n: (programs, [n] * 8, np.arange(batch) % 8),
          f"filter-only programs (4 filters), batch {batch}, against objects per scene")

    _, grid = cfg["batch"]
    pool = random_programs(rng, max(grid))
    sizes = rng.integers(8, 25, size=64)
    scenes = rng.integers(0, 64, size=max(grid))
    curve("batch", grid, lambda b: (pool[:b], sizes, scenes[:b]),
          "random programs of 2-8 operators, scenes of 8-24 objects, against batch size")

    batch, grid = cfg["length"]
    curve("length", grid, lambda L: ([chain(k, L) for k in range(batch)], [16] * 8, np.arange(batch) % 8),
          f"chains of filters and relates, batch {batch}, 16 objects, against operators per program")
    return {"curves": curves, "rounds": rounds, "tail_points": TAIL}


def report(result: dict) -> list[str]:
    lines = [f"Scaling (best of {result['rounds']}; log-log slope over the top {result['tail_points']} points "
             f"of each grid, and over the whole grid):"]
    for name, c in result["curves"].items():
        points = ", ".join(f"{x}: {s * 1e3:.1f}" for x, s in zip(c["x"], c["seconds"]))
        lines.append(f"  {name:<15} slope {c['slope']:.2f} (all {c['slope_all']:.2f}; expected "
                     f"{c['expected_slope']:.0f}) — {c['what']}")
        lines.append(f"  {'':<15} ms: {points}")
    return lines


def plot(result: dict, path: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = result["curves"]
    panels = [("objects per scene", ["objects_relate", "objects_filter"]), ("batch size", ["batch"]),
              ("operators per program", ["length"])]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, (xlabel, names) in zip(axes, panels):
        for name in names:
            c = curves[name]
            x, y = np.array(c["x"], dtype=float), np.array(c["seconds"]) * 1e3
            ax.loglog(x, y, "o-", label=f"{name} (slope {c['slope']:.2f})")
            # the expected law through the last point, for the eye
            ax.loglog(x, y[-1] * (x / x[-1]) ** c["expected_slope"], ":", color="gray")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("ms per batch")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("nablafol engine: time per batch (dotted: expected law)")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--plot", type=Path, default=None)
    args = ap.parse_args(argv)
    result = run("quick" if args.quick else "full")
    print("\n".join(report(result)))
    if args.plot:
        print(f"plot: {plot(result, args.plot)}")


if __name__ == "__main__":
    main()
