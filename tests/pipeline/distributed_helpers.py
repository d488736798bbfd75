"""What the tests of split runs share: a tiny dataset, ``torchrun`` as a user runs it, and
processes of one run started by the test itself (so that a callback can kill one at a chosen
step). Nothing waits on the clock: timeouts are only a safety net for a hung run."""
from __future__ import annotations

import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import torch

#: A hung run is stopped after this long (a 2-process run of these sizes takes well under a minute).
SAFETY_TIMEOUT = 900
PRELOAD = ["torch", "torch.distributed", "nablafol.compiler", "nablafol.dsl", "nablafol.data", "nablafol.neural",
           "nablafol.pipeline.oracle_training", "nablafol.pipeline.calibration_training",
           "nablafol.pipeline.distributed"]
#: The training of every test here: 2 epochs of the curriculum, global batch 8, small layers.
TRAIN_ARGS = ["--epochs", "2", "--batch-size", "8", "--hidden", "16", "--lr", "1e-2", "--threads", "1"]


def tiny_dataset(folder: Path) -> Path:
    from nablafol.synthetic import generate_dataset
    generate_dataset(folder, n_train=24, n_val=6, n_testdev=2, seed=3, feature_dim=16, questions_per_scene=6)
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(*args, processes: int = 2) -> subprocess.CompletedProcess:
    """``torchrun --nproc_per_node N -m nablafol.cli ARGS``, as a user runs it (here through
    ``python -m torch.distributed.run``, the same launcher)."""
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes),
               "--master_addr", "127.0.0.1", "--master_port", str(free_port()), "-m", "nablafol.cli",
               *[str(a) for a in args]]
    environ = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    return subprocess.run(command, capture_output=True, text=True, timeout=SAFETY_TIMEOUT,
                           env={**environ, "OMP_NUM_THREADS": "1"})


def weights(folder: Path) -> dict:
    from nablafol.neural import load_model
    return load_model(folder)[0].state_dict()


def largest_difference(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max((a[k].double() - b[k].double()).abs().max().item() for k in a)


def metrics(folder: Path, name: str = "metrics.jsonl") -> list[dict]:
    return [json.loads(line) for line in (folder / name).read_text().splitlines()]


# --- processes of one run, started here -----------------------------------------------------

def context():
    """Children forked from a server that has torch and nablafol imported once."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def run_processes(ctx, world: int, target, *args) -> tuple[list[int], list[str]]:
    """Run ``target(*args, kill, messages)`` as ranks ``0..world-1`` of one run; ``args[-1]`` may
    be ``{rank: step}`` (the rank killed by SIGKILL at that optimizer step of this run).
    Returns the exit codes (``-SIGKILL`` for a killed rank) and the one-line errors the ranks
    ended with."""
    port, messages = free_port(), ctx.Queue()
    children = [ctx.Process(target=_rank, args=(rank, world, port, target, args, messages)) for rank in range(world)]
    for child in children:
        child.start()
    for child in children:
        child.join(timeout=SAFETY_TIMEOUT)
    for child in children:
        if child.is_alive():  # only a hung run gets here
            child.kill()
            child.join()
    said = []
    while not messages.empty():
        said.append(messages.get())
    return [child.exitcode for child in children], said


def _rank(rank, world, port, target, args, messages) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    torch.set_num_threads(1)
    from nablafol.errors import NablafolError
    try:
        target(*args)
    except NablafolError as error:
        messages.put(f"rank {rank}: {error}")
        sys.exit(2)


def kill_at(step: int):
    """A training callback that kills this process (SIGKILL) at its ``step``-th optimizer step."""
    def callback(event) -> None:
        if event.kind == "step" and event.step == step:
            os.kill(os.getpid(), signal.SIGKILL)
    return callback
