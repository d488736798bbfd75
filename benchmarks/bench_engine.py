"""Executor throughput and Q-product bandwidth (issue: the DFOL engine core).

    python benchmarks/bench_engine.py                # 4,096 programs, scenes of 10-100 objects
    python benchmarks/bench_engine.py --compile      # the same with the Q-product through torch.compile

Part 1: questions/s of `Engine` on random programs of 2 to 8 operators (Filter, Neg, Conjoin,
Relate with ∃/∀/∄, then an aggregation), each on one of 512 scenes of 10 to 100 objects, in
batches of `--batch`. The oracle hands out slices of a pre-drawn pool of log-probabilities, so
the figure is the engine's own cost (planning, gathers, operators), not perception's.

Part 2: the batched ∃ Q-product on R relates over N objects, against a plain copy of the same
bytes into a tensor written before (`destination.copy_(log_r)`), both timed in this run: achieved
bandwidth ratio = t_copy / t_qproduct. Until 2026-11-26 evening the copy was `log_r.clone()`, a
new tensor each time: that timed the page faults of fresh memory more than the copy (5-8x the warm
copy on this machine), so ratios measured before then are 5-8x higher than today's for the same
Q-product. The clone's time is still printed beside it.
"""
from __future__ import annotations

import argparse
import platform
import time
import zlib

import numpy as np
import torch

from nablafol import operators as ops
from nablafol.engine import Engine
from nablafol.engine.execution import CompiledQProduct
from nablafol.ir import Aggregate, Atom, Conjoin, Filter, Neg, Predicate, Program, Quantifier, Relate, Top

from .timing import synchronizer, timed

UNARY = [Predicate(f"u{i}") for i in range(16)]
BINARY = [Predicate(f"b{i}", arity=2) for i in range(8)]


def random_program(rng: np.random.Generator, n_ops: int) -> Program:
    """A random formula with exactly ``n_ops`` operators (the last one an aggregation)."""
    att = Filter(UNARY[rng.integers(len(UNARY))], Top())
    for _ in range(n_ops - 2):
        kind = rng.choice(["filter", "neg", "relate", "conjoin"], p=[0.35, 0.15, 0.35, 0.15])
        if kind == "filter":
            att = Filter(UNARY[rng.integers(len(UNARY))], att)
        elif kind == "neg":
            att = Neg(att)
        elif kind == "conjoin":
            att = Conjoin(att, Filter(UNARY[rng.integers(len(UNARY))], Top()))
        else:
            q = list(Quantifier)[rng.integers(3)]
            att = Relate((Atom(BINARY[rng.integers(len(BINARY))], bool(rng.integers(2))),), q, att)
    return Program.yes_no(Aggregate(list(Quantifier)[rng.integers(3)], att))


def random_programs(rng: np.random.Generator, count: int) -> list[Program]:
    """``count`` random programs of 2 to 8 operators."""
    return [random_program(rng, int(rng.integers(2, 9))) for _ in range(count)]


class PoolOracle:
    """Serves log-probability tables from a pre-drawn pool (the benchmark measures the engine)."""

    def __init__(self, sizes, pool=256, seed=0):
        self._num_objects = torch.as_tensor(sizes)
        self._pool, self._seed = pool, seed
        self._u = self._b = None  # drawn on first use: filter-only runs over huge scenes need no N x N pool

    def _draw(self, *shape):
        g = torch.Generator().manual_seed(self._seed + len(shape))
        return torch.nn.functional.logsigmoid(torch.randn(self._pool, *shape, generator=g) * 3)

    @property
    def u(self):
        if self._u is None:
            self._u = self._draw(int(self._num_objects.max()))
        return self._u

    @property
    def b(self):
        if self._b is None:
            n = int(self._num_objects.max())
            self._b = self._draw(n, n)
        return self._b

    @property
    def num_objects(self):
        return self._num_objects

    def _rows(self, requests):
        # keyed by the predicate's name, not its index in this batch's request list: a question
        # gets the same tables whatever else is in its batch
        ids = torch.tensor([zlib.crc32(p.name.encode()) % 65521 for p in requests.predicates], dtype=torch.long)
        return (requests.scene * 7919 + ids[requests.predicate] * 104729) % self._pool

    def unary(self, requests):
        return self.u[self._rows(requests)]

    def binary(self, requests):
        return self.b[self._rows(requests)]


def bench_engine(n_programs, batch, compile_, seed=0):
    rng = np.random.default_rng(seed)
    programs = random_programs(rng, n_programs)
    sizes = rng.integers(10, 101, size=512)
    scenes_of = rng.integers(0, 512, size=n_programs)
    engine = Engine(compile=compile_, validate=False)

    def run_all():
        for s in range(0, n_programs, batch):
            idx = scenes_of[s:s + batch]
            uniq, local = np.unique(idx, return_inverse=True)
            oracle = PoolOracle(sizes[uniq], seed=s)
            with torch.no_grad():
                engine(programs[s:s + batch], oracle, local)

    run_all()  # warm-up: per-program plans are cached, as they are for repeated programs in a run
    t = time.perf_counter()
    run_all()
    warm = time.perf_counter() - t
    programs[:] = random_programs(rng, n_programs)
    t = time.perf_counter()
    run_all()
    cold = time.perf_counter() - t
    return n_programs / warm, n_programs / cold


def qproduct_inputs(rows: int, n: int, device=None) -> tuple:
    """The Q-product's benchmark inputs, ``(log_r (rows, n, n), log_y (rows, n))``: log-sigmoids of
    scaled normal draws (seed 0), probabilities spread over (0, 1) as an oracle's are."""
    g = torch.Generator().manual_seed(0)
    log_r = torch.nn.functional.logsigmoid(torch.randn(rows, n, n, generator=g) * 3).to(device)
    log_y = torch.nn.functional.logsigmoid(torch.randn(rows, n, generator=g) * 3).to(device)
    return log_r, log_y


def bench_qproduct(rows, n, compile_, repeats=5, device=None):
    """Best times of the ∃ Q-product and of copying the same bytes into a tensor written before
    (the machine's bandwidth), and of a clone into a new tensor (mostly the page faults of fresh
    memory: 5-8x the warm copy here), on ``device`` (the CPU by default); returns
    ``(q_product, copy, gigabytes, fresh_copy)``."""
    sync = synchronizer(device)
    log_r, log_y = qproduct_inputs(rows, n, device)
    mask = torch.ones(rows, n, dtype=torch.bool, device=device)
    fn = CompiledQProduct() if compile_ else ops.q_product
    destination = torch.empty_like(log_r)
    with torch.no_grad():
        fn(log_r, log_y, mask, mask, Quantifier.EXISTS)
        destination.copy_(log_r)
        best_q = best_c = best_fresh = float("inf")
        for _ in range(repeats):
            best_q = min(best_q, timed(lambda: fn(log_r, log_y, mask, mask, Quantifier.EXISTS), sync))
            best_c = min(best_c, timed(lambda: destination.copy_(log_r), sync))
            best_fresh = min(best_fresh, timed(log_r.clone, sync))
    gbytes = log_r.numel() * 4 / 1e9
    return best_q, best_c, gbytes, best_fresh


# programs / batch: the throughput run; qproduct: (relates R, objects N) sizes against a copy;
# the smallest shows whether compiling pays on small work (per-call guards against one fused loop)
SIZES = {
    "tiny": dict(programs=64, batch=32, qproduct=[(64, 16)], compiled_throughput=False, compile=False),
    "quick": dict(programs=512, batch=512, qproduct=[(256, 16), (4096, 100)], compiled_throughput=False, compile=True),
    "full": dict(programs=4096, batch=512, qproduct=[(256, 16), (4096, 100), (16384, 50), (65536, 25)],
                 compiled_throughput=True, compile=True),
}


def run(size: str = "full") -> dict:
    """Throughput (eager; compiled too in full size) and the Q-product against a copy, eager and compiled."""
    cfg = SIZES[size]
    modes = ("eager", "compiled") if cfg["compile"] else ("eager",)
    out = {"programs": cfg["programs"], "batch": cfg["batch"], "throughput": {}, "qproduct": []}
    for mode in modes if cfg["compiled_throughput"] else ("eager",):
        warm, cold = bench_engine(cfg["programs"], cfg["batch"], mode == "compiled")
        out["throughput"][mode] = {"plans_cached_qps": warm, "new_programs_qps": cold}
    for rows, n in cfg["qproduct"]:
        entry = {"rows": rows, "objects": n}
        for mode in modes:
            start = time.perf_counter()
            tq, tc, _, fresh = bench_qproduct(rows, n, mode == "compiled")
            entry[mode] = {"qproduct_ms": tq * 1e3, "copy_ms": tc * 1e3, "copy_over_qproduct": tc / tq,
                           "fresh_copy_ms": fresh * 1e3,
                           "seconds_incl_compiling": time.perf_counter() - start}
        if "compiled" in entry:
            entry["compiled_speedup"] = entry["eager"]["qproduct_ms"] / entry["compiled"]["qproduct_ms"]
        out["qproduct"].append(entry)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--programs", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--compile", action="store_true", help="run the Q-product through torch.compile")
    args = ap.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}, compile={args.compile}")
    warm, cold = bench_engine(args.programs, args.batch, args.compile)
    print(f"engine: {args.programs} programs of 2-8 operators, scenes of 10-100 objects, batches of {args.batch}: "
          f"{warm:,.0f} questions/s (plans cached), {cold:,.0f} questions/s (new programs)")
    print("∃ Q-product vs copy of the same bytes (best of 5):")
    for rows, n in [(4096, 100), (16384, 50), (65536, 25)]:
        tq, tc, gb, fresh = bench_qproduct(rows, n, args.compile)
        print(f"  R={rows:>6} N={n:>3}: q-product {tq * 1e3:7.1f} ms ({gb / tq:5.2f} GB/s), copy {tc * 1e3:6.1f} ms "
              f"({2 * gb / tc:5.2f} GB/s read+write) -> ratio {tc / tq:.2f}; into a new tensor {fresh * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
