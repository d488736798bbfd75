"""Parse + compile throughput on realistic GQA lines, caches cold (issue: GQA programs -> DFOL).

    python benchmarks/bench_compile.py            # 132,062 lines: the size of GQA's validation set
    python benchmarks/bench_compile.py --n 20000

The lines come from `bench_parse.LineMaker` (GQA's mix of structures, GQA's vocabulary with
Zipf-like frequencies, fresh object ids on every line). Both the parser's and the compiler's
caches start empty; the pass reports how many lines failed to compile (concepts a generated
line uses that the vocabulary's checks refuse, e.g. a value under the wrong type) — failures
are counted, not hidden.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_parse import GQA_VAL_QUESTIONS, make_lines  # noqa: E402
from nablafol.compiler import CompileError, Compiler  # noqa: E402
from nablafol.dsl import clear_caches  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=GQA_VAL_QUESTIONS)
    args = ap.parse_args(argv)
    lines = make_lines(args.n)
    clear_caches()
    compiler = Compiler()
    failed = 0
    start = time.perf_counter()
    for line in lines:
        try:
            compiler.compile_text(line)
        except CompileError:
            failed += 1
    elapsed = time.perf_counter() - start
    info = compiler.cache_info()
    print(f"parse + compile {len(lines):,} lines (caches cold): {elapsed:.2f} s, {len(lines) / elapsed:,.0f} lines/s; "
          f"{info.misses:,} distinct programs compiled, {failed:,} refused")


if __name__ == "__main__":
    main()
