"""One question's engine call, timed in process CPU time (steadier than the wall clock on a shared
machine): the median over rounds of calls, in µs. Whichever ``nablafol`` the interpreter imports is
timed, so one script compares two checkouts (run it with each one's interpreter, in turn):

    OMP_NUM_THREADS=1 /work/main/.venv/bin/python benchmarks/bench_one_question.py
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_one_question.py --executors

``--executors`` also times the batched executor on the same call (``execution.steps_of`` made to
return None), alternating with the row-by-row one.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from nablafol.engine import Engine, execution
from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Relate, Top
from nablafol.oracle import TableOracle


def question() -> tuple[Program, TableOracle]:
    chair, red, left = Predicate("chair"), Predicate("red"), Predicate("left", arity=2)
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Filter(chair, Relate.of(
        left, Quantifier.FORALL, Filter(red, Top()))))))
    g = torch.Generator().manual_seed(0)
    n = 10
    oracle = TableOracle([{chair: torch.rand(n, generator=g), red: torch.rand(n, generator=g),
                           left: torch.rand(n, n, generator=g)}])
    return program, oracle


def per_call(engine: Engine, program, oracle, calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        engine([program], oracle)
    return (time.process_time() - start) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--executors", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    program, oracle = question()
    engine = Engine()
    per_call(engine, program, oracle, 300)  # warm
    print(f"one call: {statistics.median(per_call(engine, program, oracle, args.calls) for _ in range(args.rounds)):.1f} us")
    if args.executors:
        rowwise, spent = execution.steps_of, {"rowwise": [], "batched": []}
        for _ in range(args.rounds):
            for name, steps in (("rowwise", rowwise), ("batched", lambda plan: None)):
                execution.steps_of = steps
                spent[name].append(per_call(engine, program, oracle, args.calls))
        execution.steps_of = rowwise
        r, b = (statistics.median(spent[k]) for k in ("rowwise", "batched"))
        print(f"row by row: {r:.1f} us, batched: {b:.1f} us, batched / row by row: {b / r:.2f}")


if __name__ == "__main__":
    main()
