"""Faults during training: a run killed (SIGKILL) at any moment resumes from its last checkpoint and
ends bit-identical to an uninterrupted run; no kill leaves a file that a later run loads half-written.

The training runs in subprocesses (a kill must be a real one). Random kills come from a seeded
delay after the child says it is training; chosen kills come from ``NABLAFOL_FAULT`` (training.py).
"""
import json
import multiprocessing
import os
import random
import signal
import time
from pathlib import Path

import pytest
import torch

from nablafol.errors import InputFileError
from nablafol.pipeline.oracle_training import STATE_NAME, TrainConfig

PRELOAD = ["torch", "compiler", "dsl", "nablafol.data", "nablafol.pipeline.answering", "nablafol.neural", "nablafol.pipeline.oracle_training"]


def train_tiny(data: Path, out: Path, fault, started) -> None:
    """A tiny training (3 epochs of 3-4 batches, a checkpoint after every batch), resumed when ``out``
    holds a checkpoint; runs in a child process forked from a server that has the imports done."""
    if fault:
        os.environ["NABLAFOL_FAULT"] = fault
    torch.set_num_threads(1)
    from nablafol.compiler import Compiler
    from nablafol.dsl import Ontology
    from nablafol.data import FeatureStore, load_questions
    from nablafol.pipeline.answering import FeaturePerception
    from nablafol.neural import ConceptVocabulary, NeuralOracleModel
    from nablafol.pipeline.oracle_training import Trainer, prepare_examples
    onto = Ontology.from_folder(data / "ontology")
    torch.manual_seed(0)
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(onto), feature_dim=16, hidden_dim=16,
                                             embedding_dim=8, projection_dim=8, pair_hidden_dim=8)
    perception = FeaturePerception(FeatureStore(data / "features"), model, onto)
    compiler = Compiler(onto)
    examples, _ = prepare_examples(load_questions(data / "train_balanced_questions.json").values(), compiler,
                                   perception.has_image)
    val = list(load_questions(data / "val_balanced_questions.json").values())
    config = TrainConfig(epochs=3, batch_size=12, lr=1e-2, seed=0, checkpoint_every=1, checkpoint_seconds=0)
    trainer = Trainer(model, perception, examples, out, config, compiler=compiler, val_perception=perception,
                      val_questions=val, ontology=onto, log=lambda *_: None)
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
    timing = {}
    assert _train(processes, root / "data", reference, timing=timing) == 0
    return root / "data", _result(reference), timing["training"]


def _train(processes, data, out, fault=None, kill_after=None, timing=None) -> int:
    """Run the tiny training once; with ``kill_after`` seconds, SIGKILL it that long after it starts
    training. Returns the exit code (``-SIGKILL`` when killed)."""
    started = processes.Event()
    child = processes.Process(target=train_tiny, args=(data, out, fault, started))
    child.start()
    if kill_after is not None:
        assert started.wait(timeout=60)
        time.sleep(kill_after)
        child.kill()
    if timing is not None:
        assert started.wait(timeout=60)
        began = time.perf_counter()
    child.join(timeout=120)
    if timing is not None:
        timing["training"] = time.perf_counter() - began
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
    data, reference, duration = setup
    rng = random.Random(20261123)
    out = tmp_path / "model"
    kills = 0
    for attempt in range(12):
        code = _train(processes, data, out, kill_after=rng.uniform(0.0, 0.8 * duration) if attempt < 3 else None)
        if code == 0:
            break
        assert code == -signal.SIGKILL
        kills += 1
    else:
        pytest.fail("the training never finished")
    assert kills >= 1  # at least one kill landed before the end
    _assert_same(_result(out), reference)


def test_kills_at_chosen_points_then_resume_end_bit_identical(setup, processes, tmp_path):
    """Killed mid-epoch after an optimizer step (nothing saved since), between writing a checkpoint
    and renaming it (the previous one must stay the one loaded), and in the last epoch; each run
    resumes the previous one's checkpoint."""
    data, reference, _ = setup
    out = tmp_path / "model"
    for fault in ("step:2", "checkpoint-written:2", "step:4"):
        assert _train(processes, data, out, fault=fault) == -signal.SIGKILL, fault
    assert torch.load(out / STATE_NAME, weights_only=True)["epoch"] >= 1
    assert _train(processes, data, out) == 0
    _assert_same(_result(out), reference)


def test_a_truncated_checkpoint_is_refused_in_one_line(setup, tmp_path):
    from nablafol.pipeline.oracle_training import Trainer
    out = tmp_path / "model"
    out.mkdir()
    torch.save({"epoch": 1, "model": {}, "optimizer": {}}, out / STATE_NAME)
    data = (out / STATE_NAME).read_bytes()
    (out / STATE_NAME).write_bytes(data[: len(data) // 2])
    trainer = Trainer.__new__(Trainer)  # resume reads only the folder and the two state owners
    trainer.out, trainer.trainable, trainer.optimizer = out, torch.nn.Linear(1, 1), None
    with pytest.raises(InputFileError, match="cannot resume from this checkpoint"):
        trainer.resume()


def test_checkpoint_settings_are_checked():
    with pytest.raises(ValueError, match="checkpoint_every"):
        TrainConfig(checkpoint_every=-1)
    with pytest.raises(ValueError, match="checkpoint_seconds"):
        TrainConfig(checkpoint_seconds=float("nan"))
