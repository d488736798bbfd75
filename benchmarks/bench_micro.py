"""What a micro-optimisation is worth end to end: each figure with it and without it, side by side.

    python -m benchmarks.bench_micro allocator [--objects 36] [--batch 64] [--steps 4] [--pairs 3]

``allocator``: a training step of the neural oracle inside and outside
``nablafol.pipeline.allocator.keep_freed_memory`` (as ``nablafol train`` runs it). The block changes
glibc's thresholds for the rest of a process, so each variant runs in a fresh process, the two
alternating pair by pair; the figure is the median step of each process.

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


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["allocator", "step"])
    ap.add_argument("--objects", type=int, default=36)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help=argparse.SUPPRESS)  # step: inside the block
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.what == "step":  # one process of the allocator's pairs
        print(json.dumps({"step_ms": step_in_this_process(args.keep, args.objects, args.batch, args.steps)}))
    else:
        print(json.dumps(allocator(args.objects, args.batch, args.steps, args.pairs), indent=1))


if __name__ == "__main__":
    main()
