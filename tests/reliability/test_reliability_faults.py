"""Faults during training: a run killed (SIGKILL) at any moment resumes from its last checkpoint and
ends bit-identical to an uninterrupted run; no kill leaves a file that a later run loads half-written.

The training runs in subprocesses (a kill must be a real one). Each kill lands at a moment the test
chooses by *event*, never by wall-clock time: the N-th optimizer step (the trainer's callbacks), or
the N-th checkpoint written to its temporary name but not yet renamed (``os.replace`` wrapped in the
child). Random kills draw the step numbers from a seeded generator.
"""
import json
import multiprocessing
import os
import random
import signal
from pathlib import Path

import pytest
import torch

from nablafol.errors import InputFileError
from nablafol.pipeline.oracle_training import STATE_NAME, TrainConfig
from training_helpers import tiny_trainer

# its fixtures train or generate for the whole module: among the longest of a measured run
pytestmark = pytest.mark.slow

PRELOAD = ["torch", "nablafol.compiler", "nablafol.dsl", "nablafol.data", "nablafol.pipeline.answering",
           "nablafol.neural", "nablafol.pipeline.oracle_training"]


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _kill_at(fault):
    """Arm the kill ``fault`` names in this (child) process: ``("step", n)`` at the n-th optimizer
    step, ``("checkpoint-written", n)`` when the n-th checkpoint is on disk under its temporary name;
    returns the training callback (or None)."""
    if fault is None:
        return None
    kind, nth = fault
    if kind == "step":
        return lambda event: _die() if event.kind == "step" and event.step == nth else None
    if kind == "checkpoint-written":
        replace, seen = os.replace, [0]

        def replace_or_die(source, target, *args, **kwargs):
            if str(target).endswith(STATE_NAME):
                seen[0] += 1
                if seen[0] == nth:
                    _die()  # the new checkpoint is written and synced, not yet renamed
            return replace(source, target, *args, **kwargs)
        os.replace = replace_or_die
        return None
    raise ValueError(fault)


def train_tiny(data: Path, out: Path, fault, started, steps=None) -> None:
    """A tiny training (3 epochs of 3-4 batches, a checkpoint after every batch), resumed when ``out``
    holds a checkpoint; runs in a child process forked from a server that has the imports done.
    ``steps`` (a shared counter) learns how many optimizer steps the run took."""
    torch.set_num_threads(1)
    callbacks = [c for c in (_kill_at(fault),) if c is not None]
    if steps is not None:
        callbacks.append(lambda event: setattr(steps, "value", event.step) if event.kind == "step" else None)
    trainer = tiny_trainer(data, out, epochs=3, batch_size=12, callbacks=callbacks, checkpoint_every=1,
                           checkpoint_seconds=0)
    trainer.resume()
    started.set()
    trainer.train()


@pytest.fixture(scope="module")
def processes():
    """Children forked from one server that imported torch and nablafol once (a fresh interpreter
    per run would spend most of the test importing)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


@pytest.fixture(scope="module")
def setup(tmp_path_factory, processes):
    from nablafol.synthetic import generate_dataset
    root = tmp_path_factory.mktemp("faults")
    generate_dataset(root / "data", n_train=8, n_val=3, n_testdev=1, seed=5, feature_dim=16, questions_per_scene=5)
    reference = root / "reference"
    steps = processes.Value("i", 0)
    assert _train(processes, root / "data", reference, steps=steps) == 0
    return root / "data", _result(reference), steps.value


def _train(processes, data, out, fault=None, steps=None) -> int:
    """Run the tiny training once, killed where ``fault`` says; the exit code (``-SIGKILL`` when killed)."""
    started = processes.Event()
    child = processes.Process(target=train_tiny, args=(data, out, fault, started, steps))
    child.start()
    child.join(timeout=300)
    return child.exitcode


def _result(out: Path):
    """What must match bit for bit: the model folder's weights, the metrics without timings, Adam's state."""
    from nablafol.neural import load_model
    model, _, extra = load_model(out)
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    for record in metrics:
        record.pop("seconds")
    state = torch.load(out / STATE_NAME, weights_only=True)
    assert "position" not in state and state["epoch"] == 3
    adam = [v for entry in state["optimizer"]["state"].values() for v in entry.values()]
    return model.state_dict(), metrics, adam, extra["epochs_done"]


def _assert_same(result, reference):
    weights, metrics, adam, epochs = result
    ref_weights, ref_metrics, ref_adam, ref_epochs = reference
    assert weights.keys() == ref_weights.keys()
    assert all(torch.equal(weights[k], ref_weights[k]) for k in weights)
    assert metrics == ref_metrics and epochs == ref_epochs == 3
    assert all(torch.equal(a, b) for a, b in zip(adam, ref_adam)) and len(adam) == len(ref_adam)


def test_random_kills_then_resume_end_bit_identical(setup, processes, tmp_path):
    """Three kills at random optimizer steps (each counted from the resumed run's start), then a run
    to the end: the same weights, metrics and Adam state as the uninterrupted run."""
    data, reference, total_steps = setup
    assert total_steps >= 6
    rng = random.Random(20261123)
    out = tmp_path / "model"
    for _ in range(3):  # every kill lands: each run has steps left beyond the one drawn
        nth = rng.randint(1, 2)
        assert _train(processes, data, out, fault=("step", nth)) == -signal.SIGKILL
    assert _train(processes, data, out) == 0
    _assert_same(_result(out), reference)


def test_kills_at_chosen_points_then_resume_end_bit_identical(setup, processes, tmp_path):
    """Killed mid-epoch after an optimizer step (nothing saved since), between writing a checkpoint
    and renaming it (the previous one must stay the one loaded), and in the last epoch; each run
    resumes the previous one's checkpoint."""
    data, reference, _ = setup
    out = tmp_path / "model"
    for fault in (("step", 2), ("checkpoint-written", 2), ("step", 4)):
        assert _train(processes, data, out, fault=fault) == -signal.SIGKILL, fault
        if fault[0] == "checkpoint-written":
            assert list(out.glob(f".{STATE_NAME}.*.tmp")), "the kill fell between writing and renaming"
    assert torch.load(out / STATE_NAME, weights_only=True)["epoch"] >= 1
    assert _train(processes, data, out) == 0
    assert not list(out.glob(".*.tmp")), "the resumed run cleared what killed runs left"
    _assert_same(_result(out), reference)


def test_a_truncated_checkpoint_is_refused_in_one_line(setup, tmp_path):
    from nablafol.pipeline.distributed import Distribution
    from nablafol.pipeline.oracle_training import Trainer
    out = tmp_path / "model"
    out.mkdir()
    torch.save({"epoch": 1, "model": {}, "optimizer": {}}, out / STATE_NAME)
    data = (out / STATE_NAME).read_bytes()
    (out / STATE_NAME).write_bytes(data[: len(data) // 2])
    trainer = Trainer.__new__(Trainer)  # resume reads only the folder, the two state owners and who reads
    trainer.out, trainer.trainable, trainer.optimizer = out, torch.nn.Linear(1, 1), None
    trainer.world = Distribution.single()
    with pytest.raises(InputFileError, match="cannot resume from this checkpoint"):
        trainer.resume()


def test_checkpoint_settings_are_checked():
    with pytest.raises(ValueError, match="checkpoint_every"):
        TrainConfig(checkpoint_every=-1)
    with pytest.raises(ValueError, match="checkpoint_seconds"):
        TrainConfig(checkpoint_seconds=float("nan"))
