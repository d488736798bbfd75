"""Compiling by skeleton against translating each program alone, per distinct program of a
questions file, the two alternating three times in one process (caches cold each time).

    python -m benchmarks.bench_skeletons QUESTIONS.json            # compile + walk + pack
    python -m benchmarks.bench_skeletons QUESTIONS.json --no-pack  # compile + walk

"alone": ``Compiler(by_skeleton=False)``, then the walk (``Program.predicates``); "skeleton": the
default compiler, whose programs come walked. Both then packed by a fresh engine registry (unless --no-pack).
"""
from __future__ import annotations

import argparse
import statistics
import time


def distinct_programs(path: str) -> list:
    from nablafol import dsl
    from nablafol.data import iter_questions
    programs = {}
    for question in iter_questions(path):
        source = question.program_source()
        try:
            parsed = (dsl.program_from_semantic(source.value) if source.field == "semantic"
                      else dsl.parse_program(source.value))
        except dsl.ProgramError:
            continue
        programs[parsed.without_ids()] = None
    return list(programs)


def per_program_us(programs: list, by_skeleton: bool, pack: bool) -> float:
    from nablafol.compiler import CompileError, Compiler
    from nablafol.engine.planning import Registry
    compiler, registry = Compiler(by_skeleton=by_skeleton), Registry()
    start = time.perf_counter()
    for program in programs:
        try:
            compiled = compiler.compile(program).program
        except CompileError:
            continue
        compiled.predicates()
        if pack:
            registry.packed(compiled)
    return (time.perf_counter() - start) / len(programs) * 1e6


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("questions")
    ap.add_argument("--no-pack", action="store_true")
    args = ap.parse_args(argv)
    programs = distinct_programs(args.questions)
    times = {"alone": [], "skeleton": []}
    for _ in range(3):
        for name in times:
            times[name].append(per_program_us(programs, name == "skeleton", not args.no_pack))
    alone, skeleton = statistics.median(times["alone"]), statistics.median(times["skeleton"])
    print(f"{len(programs):,} distinct programs; µs a program, alone {alone:.0f}, through skeletons "
          f"{skeleton:.0f}: skeletons {alone / skeleton:.2f}x as fast")


if __name__ == "__main__":
    main()
