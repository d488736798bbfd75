"""Compiling by skeleton against translating each program alone, per distinct program of a
questions file, the two alternating three times in one process (every cache cold each time). Each
program is compiled from its line (``compile_text``), as ``nablafol eval`` compiles it: parsed
alone; through skeletons, read from its text when its key was met. CPU time of the process: on
a shared machine wall time swung more than the difference. The collector is off, as in
``nablafol eval`` (its full collections, paid by whichever node was being made, were most of
the time otherwise).

    python -m benchmarks.bench_skeletons QUESTIONS.json            # compile + walk + pack
    python -m benchmarks.bench_skeletons QUESTIONS.json --no-pack  # compile + walk

"parsed": through skeletons, but every line parsed (what reading a met key's line from its text
saves). "alone": ``Compiler(by_skeleton=False)``, then the walk (``Program.predicates``); "skeleton": the
default compiler, whose programs come walked. Both then packed by a fresh engine registry (unless --no-pack).
"""
from __future__ import annotations

import argparse
import statistics
import time


def distinct_programs(path: str) -> list:
    """The distinct id templates of the questions' programs (lines that differ only in ids are
    one program), as ``semanticStr`` lines."""
    from nablafol import dsl
    from nablafol.data import iter_questions
    lines = {}
    for question in iter_questions(path):
        source = question.program_source()
        line = dsl.semantic_line(source.value) if source.field == "semantic" else source.value
        if isinstance(line, str):
            lines[dsl.id_template(line)] = None
    return list(lines)


def per_program_us(programs: list, by_skeleton: bool, pack: bool, from_text: bool = True) -> float:
    """CPU µs a program; ``from_text=False``: a met key's line is parsed all the same (the
    skeletons' reading from text turned off, to time what it saves)."""
    from nablafol import dsl
    from nablafol.compiler import CompileError, Compiler
    from nablafol.engine.planning import Registry
    compiler, registry = Compiler(by_skeleton=by_skeleton), Registry()
    if by_skeleton and not from_text:
        compiler._skeletons.known = lambda template: None
    dsl.clear_caches()  # the parser's caches cold too, as in a new `nablafol eval`
    start = time.process_time()
    for program in programs:
        try:
            compiled = compiler.compile_text(program).program
        except (CompileError, dsl.ProgramError):
            continue
        compiled.predicates()
        if pack:
            registry.packed(compiled)
    return (time.process_time() - start) / len(programs) * 1e6


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("questions")
    ap.add_argument("--no-pack", action="store_true")
    args = ap.parse_args(argv)
    programs = distinct_programs(args.questions)
    times = {"alone": [], "skeleton": [], "parsed": []}
    from nablafol.pipeline.collector import long_run
    for _ in range(3):
        for name in times:
            with long_run():
                times[name].append(per_program_us(programs, name != "alone", not args.no_pack, name == "skeleton"))
    alone, skeleton, parsed = (statistics.median(times[name]) for name in ("alone", "skeleton", "parsed"))
    print(f"{len(programs):,} distinct programs; µs a program, alone {alone:.0f}, through skeletons "
          f"{skeleton:.0f} (every line parsed: {parsed:.0f}): skeletons {alone / skeleton:.2f}x as fast, "
          f"reading from text {parsed / skeleton:.2f}x")


if __name__ == "__main__":
    main()
