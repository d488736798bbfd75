"""What a micro-optimisation is worth end to end: each figure with it and without it, side by side.

    python -m benchmarks.bench_micro allocator [--objects 36] [--batch 64] [--steps 4] [--pairs 3]
    python -m benchmarks.bench_micro new-questions [--questions 1024 4096] [--repeats 5] [--open]
    python -m benchmarks.bench_micro one-question [--repeats 5]

``allocator``: a training step of the neural oracle inside and outside
``nablafol.pipeline.allocator.keep_freed_memory`` (as ``nablafol train`` runs it). The block changes
glibc's thresholds for the rest of a process, so each variant runs in a fresh process, the two
alternating pair by pair; the figure is the median step of each process, in process CPU time
(page faults count there, and other jobs on the machine do not).

``new-questions``: the marginal CPU time per new question of GQA program text -> compiled program ->
plan -> engine -> prediction (``bench_limits``' end-to-end figure, caches cold), as the code is and
with each variant below swapped in, the variants alternating round by round in one process. With
``--open``, every other question is an open one (``query name`` of a category, ``query color`` or
``material``, and one in ten ``query name`` over a relate's ``_``: 1,232 candidates).

``one-question``: one question's engine call (``bench_one_question``), as the code is, with
``numerics.log1mexp``'s two branches as plain (not in-place) operations, and with its threshold
a Python float (not a 0-dim tensor made at import), alternating in one process: the median CPU time per call.

A kept optimisation must save at least 5% of an end-to-end figure (``benchmarks/README.md``).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from .bench_training import trainer_on_generated_data


def _training(scratch: Path, objects: int, batch: int, seed: int = 0):
    """A step function of a trainer on generated data (``objects`` objects a scene), warmed once."""
    model, trainer, examples = trainer_on_generated_data(scratch, batch, seed, n_train=max(batch, 64), n_val=1,
                                                         n_testdev=1, min_objects=objects, max_objects=objects,
                                                         questions_per_scene=2)
    rng = np.random.default_rng(seed)
    model.train()

    def step():
        b = [examples[i] for i in rng.choice(len(examples), size=min(batch, len(examples)), replace=False)]
        start = time.process_time()
        trainer._step(b)
        return time.process_time() - start

    step()
    return step


def _median_ms(times) -> float:
    return statistics.median(times) * 1e3


# --- the allocator: one process per variant ---------------------------------------------------

def step_in_this_process(keep: bool, objects: int, batch: int, steps: int) -> float:
    """The median training step (ms) of this process, inside ``keep_freed_memory`` or not."""
    from nablafol.pipeline.allocator import keep_freed_memory
    with tempfile.TemporaryDirectory() as scratch, (keep_freed_memory() if keep else contextlib.nullcontext()):
        step = _training(Path(scratch), objects, batch)
        return _median_ms([step() for _ in range(steps)])


def allocator(objects: int, batch: int, steps: int, pairs: int) -> dict:
    rows = []
    for pair in range(pairs):
        order = (True, False) if pair % 2 == 0 else (False, True)
        got = {}
        for keep in order:
            out = subprocess.run([sys.executable, "-m", "benchmarks.bench_micro", "step", "--objects", str(objects),
                                  "--batch", str(batch), "--steps", str(steps)] + (["--keep"] if keep else []),
                                 check=True, capture_output=True, text=True).stdout
            got[keep] = json.loads(out.splitlines()[-1])["step_ms"]
        rows.append({"kept_ms": got[True], "plain_ms": got[False], "plain_over_kept": got[False] / got[True]})
    return {"objects": objects, "batch": batch, "steps": steps, "pairs": rows,
            "median_plain_over_kept": statistics.median(r["plain_over_kept"] for r in rows)}


# --- in one process: the end-to-end marginal cost of a new question, per variant ------------------

OPEN_TEMPLATES = ["select: {K} (1)->query: name [0]", "select: {A} (1)->query: color [0]",
                  "select: {K} (1)->filter color: {C} [0]->query: name [1]",
                  "select: {A} (1)->query: material [0]",
                  "select: {A} (1)->relate: _,on,s (2) [0]->query: name [1]"]
CATEGORIES = ["animal", "food", "clothing", "object", "furniture"]


def _new_question_work(count: int, seed: int = 0, open_questions: bool = False):
    """``answer(k)``: the first ``k`` of ``count`` question texts compiled, planned and answered
    by a new compiler and engine, over probabilistic scenes drawn beforehand (every other one an
    open question with ``open_questions``)."""
    from nablafol.compiler import Compiler
    from nablafol.engine import Engine
    from nablafol.oracle import TableOracle

    from .bench_limits import _question_texts
    from .bench_problog import probabilistic_scene
    rng = np.random.default_rng(seed)
    texts = _question_texts(rng, count)
    if open_questions:
        from .bench_problog import COLORS, NAMES
        texts[1::2] = [OPEN_TEMPLATES[k % len(OPEN_TEMPLATES)].format(
            A=rng.choice(NAMES), K=rng.choice(CATEGORIES), C=rng.choice(COLORS)) for k in range(count // 2)]
    objects = rng.choice([3, 4, 5, 6, 8], size=count)
    compiler = Compiler()
    scenes = [{p: torch.as_tensor(v) for p, v in probabilistic_scene(rng, compiler.compile_text(t).program,
                                                                        int(n)).items()}
              for t, n in zip(texts, objects)]

    def answer(k: int) -> None:
        compiler, engine = Compiler(), Engine(validate=False)
        programs = [compiler.compile_text(t).program for t in texts[:k]]
        with torch.no_grad():
            engine(programs, TableOracle(scenes[:k])).predictions()
    return answer


VARIANTS = {"as is": contextlib.nullcontext}  # the variants measured so far: benchmarks/README.md


def new_questions(small: int, large: int, repeats: int, open_questions: bool = False) -> dict:
    import gc
    answer = _new_question_work(large, open_questions=open_questions)
    answer(small)  # warm: imports, first compilations
    best = {name: [float("inf"), float("inf")] for name in VARIANTS}
    gc.disable()  # as `nablafol eval` runs: the collector's pauses were most of the swing
    try:
        names = list(VARIANTS)
        for r in range(repeats):
            for name in names[r % len(names):] + names[:r % len(names)]:  # each variant first in turn
                with VARIANTS[name]():
                    for i, k in enumerate((small, large)):
                        start = time.process_time()
                        answer(k)
                        best[name][i] = min(best[name][i], time.process_time() - start)
    finally:
        gc.enable()
    marginal = {name: (b[1] - b[0]) / (large - small) * 1e6 for name, b in best.items()}
    return {"questions": [small, large], "repeats": repeats, "open": open_questions,
            "marginal_us": marginal,
            "over_as_is": {name: m / marginal["as is"] for name, m in marginal.items()}}


# --- in one process: one question's call, per variant of log1mexp ---------------------------------

def _log1mexp_plain(x, guard=True):
    from nablafol import numerics
    if guard:
        x = x.clamp(max=0.0)
    return torch.where(x > numerics.log_half(x.dtype), torch.log(-torch.expm1(x)), torch.log1p(-torch.exp(x)))


def _log1mexp_float_threshold(x, guard=True):
    from nablafol import numerics
    if guard:
        x = x.clamp(max=0.0)
    near = torch.expm1(x).neg_().log_()
    return torch.where(x > numerics.LOG_HALF, near, torch.exp(x).neg_().log1p_(), out=near)


def one_question(repeats: int, calls: int = 500) -> dict:
    from nablafol import numerics
    from nablafol.engine import Engine

    from .bench_one_question import per_call, question
    program, oracle = question()
    engine = Engine()
    per_call(engine, program, oracle, 300)  # warm
    kept = numerics._log1mexp_forward
    variants = {"as is": kept, "plain log1mexp": _log1mexp_plain, "float threshold": _log1mexp_float_threshold}
    spent: dict = {name: [] for name in variants}
    try:
        for _ in range(repeats):
            for name, forward in variants.items():
                numerics._log1mexp_forward = forward
                spent[name].append(per_call(engine, program, oracle, calls))
    finally:
        numerics._log1mexp_forward = kept
    median = {name: statistics.median(times) for name, times in spent.items()}
    return {"repeats": repeats, "calls": calls, "median_us": median,
            "over_as_is": {name: m / median["as is"] for name, m in median.items()}}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["allocator", "new-questions", "one-question", "step"])
    ap.add_argument("--questions", type=int, nargs=2, default=[1024, 4096])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--objects", type=int, default=36)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--open", action="store_true", help="new-questions: every other one open")
    ap.add_argument("--keep", action="store_true", help=argparse.SUPPRESS)  # step: inside the block
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.what == "step":  # one process of the allocator's pairs
        print(json.dumps({"step_ms": step_in_this_process(args.keep, args.objects, args.batch, args.steps)}))
    elif args.what == "one-question":
        print(json.dumps(one_question(args.repeats), indent=1))
    elif args.what == "new-questions":
        print(json.dumps(new_questions(*args.questions, args.repeats, args.open), indent=1))
    else:
        print(json.dumps(allocator(args.objects, args.batch, args.steps, args.pairs), indent=1))


if __name__ == "__main__":
    main()
