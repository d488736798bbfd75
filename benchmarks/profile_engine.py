"""Where the engine's time goes: cProfile of one batch of 1,024 questions and of the same
questions one at a time (the workload of `bench_batched`), top functions by own time.

    python -m benchmarks.profile_engine [--top 15] [--threads 1]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import torch

from nablafol.engine import Engine

from .bench_batched import workload


def profile(label: str, fn, top: int) -> list[str]:
    fn()  # warm
    start = time.perf_counter()
    fn()
    plain = time.perf_counter() - start
    prof = cProfile.Profile()
    prof.runcall(fn)
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(top)
    body = [line for line in text.getvalue().splitlines() if line.strip()]
    return [f"== {label}: {plain * 1e3:.1f} ms unprofiled"] + body[body.index(next(
        line for line in body if line.lstrip().startswith("ncalls"))):]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    programs, oracle, scenes = workload(1024)
    engine = Engine(validate=False)
    torch.set_grad_enabled(False)

    def batched():
        engine(programs, oracle, scenes)

    def planning():
        engine.plan(programs, scenes)

    def one_at_a_time():
        for k in range(256):
            engine([programs[k]], oracle, scenes[k:k + 1])

    for label, fn in (("one batch of 1,024", batched), ("planning that batch", planning),
                      ("256 questions one at a time", one_at_a_time)):
        print("\n".join(profile(label, fn, args.top)))


if __name__ == "__main__":
    main()
