"""What a micro-optimisation is worth end to end: each figure with it and without it, side by side.

    python -m benchmarks.bench_micro allocator [--objects 36] [--batch 64] [--steps 4] [--pairs 3]
    python -m benchmarks.bench_micro pick-branch [--objects 36] [--batch 64] [--steps 4] [--scenes 1000] [--rounds 5]

``allocator``: a training step of the neural oracle inside and outside
``nablafol.pipeline.allocator.keep_freed_memory`` (as ``nablafol train`` runs it). The block changes
glibc's thresholds for the rest of a process, so each variant runs in a fresh process, the two
alternating pair by pair; the figure is the median step of each process.

``pick-branch``: ``numerics.pick_branch`` (the branch of ``log(1 - e^t)`` chosen on the bits)
against ``torch.where``, in one process, alternating step by step: a training step as above, then
a golden eval's answering of a generated set (``nablafol generate --val SCENES``; the set read
and every program compiled and planned once before the clock, as a second pass of ``nablafol
eval`` meets them). A question's own call (10 objects) is below ``PICK_BY_BITS_FROM`` elements:
``torch.where`` either way.

A kept optimisation must save at least 5% of one of these figures (``benchmarks/README.md``).
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

from nablafol.numerics import log_half

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
        start = time.perf_counter()
        trainer._step(b)
        return time.perf_counter() - start

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


# --- pick_branch: both variants in one process ------------------------------------------------

def _plain_pick(x, near, far):
    # what the call sites would write without pick_branch (log_half imported once, not per call)
    return torch.where(x > log_half(x.dtype), near, far, out=near)


@contextlib.contextmanager
def _plain_branches():
    """``pick_branch`` replaced by ``torch.where`` where it is called (numerics and operators)."""
    import nablafol.numerics as numerics
    import nablafol.operators as operators
    kept = numerics.pick_branch
    numerics.pick_branch = operators.pick_branch = _plain_pick
    try:
        yield
    finally:
        numerics.pick_branch = operators.pick_branch = kept


def _alternate(run, rounds: int) -> dict:
    """``run()``'s seconds with the bits and with ``torch.where``, alternating (the order swapped
    each round); medians in ms and their ratio."""
    times = {"bits": [], "where": []}
    for r in range(rounds):
        for variant in (("bits", "where") if r % 2 == 0 else ("where", "bits")):
            with _plain_branches() if variant == "where" else contextlib.nullcontext():
                times[variant].append(run())
    bits, where = _median_ms(times["bits"]), _median_ms(times["where"])
    return {"bits_ms": bits, "where_ms": where, "where_over_bits": where / bits, "rounds": rounds}


def golden_eval(scratch: Path, scenes: int):
    """A function answering a generated set with the golden oracle (as ``nablafol eval`` answers
    it), after one pass that read, compiled and planned everything."""
    from nablafol.pipeline.collector import loading
    from nablafol.pipeline.evaluation import EvaluationJob, _answerer, _questions, answer_stream
    from nablafol.scoring import Scorer, vocabulary_match
    subprocess.run([sys.executable, "-m", "nablafol.cli", "generate", "--out", str(scratch), "--train", "0", "--val",
                    str(scenes), "--testdev", "0", "--questions-per-scene", "14", "--objects", "8", "24",
                    "--large-scenes", "0.1", "--spatial-neighbours", "2", "--seed", "7", "--feature-dim", "8"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    job = EvaluationJob(questions=scratch / "val_balanced_questions.json", predictions=scratch / "predictions.json",
                        scene_graphs=scratch / "val_sceneGraphs.json")
    with loading():
        answerer = _answerer(job)
        questions = list(_questions(job, "gqa"))

    def answer():
        start = time.perf_counter()
        answer_stream(questions, answerer, scorer=Scorer(vocabulary_match))
        return time.perf_counter() - start

    answer()
    return answer, len(questions)


def pick_branch(objects: int, batch: int, steps: int, scenes: int, rounds: int) -> dict:
    """The training step's figure over ``steps`` rounds (none: 0), the golden eval's over ``rounds``."""
    out = {}
    with tempfile.TemporaryDirectory() as scratch:
        if steps:
            step = _training(Path(scratch) / "train", objects, batch)
            out["training_step"] = {"objects": objects, "batch": batch, **_alternate(step, steps)}
        answer, questions = golden_eval(Path(scratch) / "golden", scenes)
        out["golden_eval"] = {"questions": questions, **_alternate(answer, rounds)}
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["allocator", "pick-branch", "step"])
    ap.add_argument("--objects", type=int, default=36)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--scenes", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5, help="pick-branch: the golden eval's rounds")
    ap.add_argument("--keep", action="store_true", help=argparse.SUPPRESS)  # step: inside the block
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.what == "step":  # one process of the allocator's pairs
        print(json.dumps({"step_ms": step_in_this_process(args.keep, args.objects, args.batch, args.steps)}))
    elif args.what == "allocator":
        print(json.dumps(allocator(args.objects, args.batch, args.steps, args.pairs), indent=1))
    else:
        print(json.dumps(pick_branch(args.objects, args.batch, args.steps, args.scenes, args.rounds), indent=1))


if __name__ == "__main__":
    main()
