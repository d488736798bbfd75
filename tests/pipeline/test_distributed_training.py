"""Training on several processes (gloo, CPU): the same weights as one process over the same
global batch, exactly merged validation, checkpoints by rank 0, and a rank killed mid-training
that resumes, on as many processes as before or fewer."""
from pathlib import Path

import pytest
import torch

from nablafol.cli import main

from distributed_helpers import (TRAIN_ARGS, context, kill_at, largest_difference, metrics, run_processes,
                                 tiny_dataset, torchrun, weights)

# its fixtures train or generate for the whole module: among the longest of a measured run
pytestmark = pytest.mark.slow

TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The dataset (one training question, of shard 0, naming a concept the ontology lacks), a
    2-process ``torchrun`` training of it, and one process trained over the same shards
    (``--shards 2``: the same global batches)."""
    root = tmp_path_factory.mktemp("distributed")
    data = _with_a_concept_of_shard_0(tiny_dataset(root / "data"))
    launched = torchrun("train", "--data", data, "--out", root / "two", *TRAIN_ARGS)
    assert launched.returncode == 0, launched.stderr[-3000:]
    assert main(["train", "--data", str(data), "--out", str(root / "one"), "--shards", "2", *TRAIN_ARGS]) == 0
    return data, root, launched


NEW_NAME = "zorse"


def _with_a_concept_of_shard_0(data: Path) -> Path:
    """The vocabulary is open (issue 16): a question of the first image in the features' order
    (shard 0's) names a new concept, which the model of every process must learn."""
    import json

    from nablafol.data import FeatureStore
    image = FeatureStore(data / "features").image_ids()[0]
    train = data / "train_balanced_questions.json"
    records = json.loads(train.read_text())
    records["new"] = {"imageId": image, "answer": "no", "question": "Is there a zorse?",
                      "semanticStr": f"select: {NEW_NAME}->exist: ? [0]"}
    train.write_text(json.dumps(records))
    return data


def test_torchrun_training_equals_one_process_over_the_same_global_batch(runs):
    from nablafol.ir import Predicate
    from nablafol.neural import load_model
    data, root, launched = runs
    assert load_model(root / "two")[1].knows(Predicate(NEW_NAME, 1, "name"))  # rank 1 learned shard 0's concept
    two, one = weights(root / "two"), weights(root / "one")
    assert largest_difference(two, one) <= TOLERANCE
    # the same validation, merged from the two processes' halves, and the same training loss
    for a, b in zip(metrics(root / "two"), metrics(root / "one"), strict=True):
        validation = {k for k in a if k.startswith("val_")}
        assert validation >= {"val_accuracy", "val_open", "val_binary"}
        assert validation == {k for k in b if k.startswith("val_")}
        assert all(a[k] == b[k] for k in validation) and a["examples"] == b["examples"]
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-6)
    assert "final validation accuracy" in launched.stdout  # said once, by rank 0
    assert launched.stdout.count("final validation accuracy") == 1


def test_the_shards_change_the_result_not_the_number_of_processes(runs, tmp_path):
    """One shard (an unsplit run) draws other batches than two: the comparison above can fail."""
    data, root, _ = runs
    assert main(["train", "--data", str(data), "--out", str(tmp_path / "unsplit"), *TRAIN_ARGS]) == 0
    assert largest_difference(weights(tmp_path / "unsplit"), weights(root / "one")) > 100 * TOLERANCE


def test_rank_0_writes_one_model_folder_that_records_its_shards(runs):
    _, root, _ = runs
    state = torch.load(root / "two" / "training_state.pt", weights_only=True)
    assert state["shards"] == 2 and state["epoch"] == 2 and "position" not in state
    assert not list((root / "two").glob(".*.tmp"))
    assert sorted(p.name for p in (root / "two").iterdir()) == sorted(p.name for p in (root / "one").iterdir())


def _train(data, out, resume, kill, shards=None):
    """One rank of a training with a checkpoint after every step (resumed when ``resume``)."""
    from nablafol.pipeline.datasets import dataset_files
    from nablafol.pipeline.distributed import Launch
    from nablafol.pipeline.oracle_training import TrainConfig, TrainingJob, train_oracle
    launch = Launch.from_environment()
    callbacks = [kill_at(kill[launch.rank])] if launch.rank in kill else []
    config = TrainConfig(epochs=2, batch_size=8, lr=1e-2, checkpoint_every=1, checkpoint_seconds=0)
    train_oracle(TrainingJob(dataset_files(data), Path(out), config, hidden_dim=16, resume=resume, launch=launch,
                             callbacks=callbacks, shards=shards), log=lambda *_: None)


def test_a_rank_killed_mid_training_resumes_on_two_processes_or_one(runs, tmp_path):
    """Rank 1 killed at its 5th step; the run resumed on 2 processes with rank 0 killed at its 10th (in epoch 2);
    then resumed on 1 process playing both shards. It ends as the uninterrupted run ended."""
    data, root, _ = runs
    ctx, out = context(), tmp_path / "model"
    codes, said = run_processes(ctx, 2, _train, data, out, False, {1: 5})
    assert codes[1] == -9 and codes[0] == 2, (codes, said)
    assert len(said) == 1 and "another process of the run stopped" in said[0] and "--resume" in said[0]
    assert len(said[0].splitlines()) == 1
    codes, said = run_processes(ctx, 2, _train, data, out, True, {0: 10})
    assert codes[0] == -9 and codes[1] == 2, (codes, said)
    state = torch.load(out / "training_state.pt", weights_only=True)
    assert state["shards"] == 2 and "position" in state  # killed inside an epoch
    codes, said = run_processes(ctx, 1, _train, data, out, True, {})
    assert codes == [0], said
    assert largest_difference(weights(out), weights(root / "two")) <= TOLERANCE
    assert [r["val_accuracy"] for r in metrics(out)] == [r["val_accuracy"] for r in metrics(root / "two")]


def _calibrate(data, model, shards):
    from nablafol.pipeline.calibration_training import CalibrationJob, calibrate_model
    from nablafol.pipeline.datasets import dataset_files
    from nablafol.pipeline.distributed import Launch
    from nablafol.pipeline.oracle_training import TrainConfig
    calibrate_model(CalibrationJob(dataset_files(data), Path(model), TrainConfig(epochs=1, batch_size=8, lr=1e-2),
                                   shards=shards, launch=Launch.from_environment()), log=lambda *_: None)


def test_calibration_on_two_processes_equals_one_process_over_the_same_shards(runs, tmp_path):
    import shutil

    from safetensors.torch import load_file
    data, root, _ = runs
    for name in ("split", "single"):
        shutil.copytree(root / "one", tmp_path / name)
    codes, said = run_processes(context(), 2, _calibrate, data, tmp_path / "split", None)
    assert codes == [0, 0], said
    codes, said = run_processes(context(), 1, _calibrate, data, tmp_path / "single", 2)
    assert codes == [0], said
    split, single = (load_file(tmp_path / name / "calibrator.safetensors") for name in ("split", "single"))
    assert largest_difference(split, single) <= TOLERANCE
    assert metrics(tmp_path / "split", "calibrator_metrics.jsonl")[0]["val_accuracy"] == \
        metrics(tmp_path / "single", "calibrator_metrics.jsonl")[0]["val_accuracy"]


def test_more_processes_than_shards_or_a_batch_the_shards_do_not_divide_is_refused(runs, tmp_path, capsys):
    data, _, _ = runs
    codes, said = run_processes(context(), 2, _train, data, tmp_path / "over", False, {}, 1)
    assert codes == [2, 2] and all("2 processes cannot share 1 shard" in line for line in said), said
    code = main(["train", "--data", str(data), "--out", str(tmp_path / "m"), "--shards", "3", *TRAIN_ARGS])
    err = capsys.readouterr().err
    assert code == 2 and "multiple of the shard count 3" in err and len(err.strip().splitlines()) == 1


class _Stop(Exception):
    pass


def _stop_at(step):
    def callback(event):
        if event.kind == "step" and event.step == step:
            raise _Stop
    return callback


def test_resuming_with_other_shards_draws_a_new_plan_and_finishes(runs, tmp_path):
    """A run of 2 shards stopped inside its first epoch, resumed with --shards 1: the epoch goes
    on at the same step of the new plan; the folder then records one shard."""
    from nablafol.pipeline.datasets import dataset_files
    from nablafol.pipeline.oracle_training import TrainConfig, TrainingJob, train_oracle
    data, root, _ = runs
    config = TrainConfig(epochs=2, batch_size=8, lr=1e-2, checkpoint_every=1, checkpoint_seconds=0)
    job = TrainingJob(dataset_files(data), tmp_path / "m", config, hidden_dim=16, shards=2, callbacks=[_stop_at(4)])
    with pytest.raises(_Stop):
        train_oracle(job, log=lambda *_: None)
    assert torch.load(tmp_path / "m" / "training_state.pt", weights_only=True)["position"]["batch"] == 3
    said = []
    history = train_oracle(TrainingJob(dataset_files(data), tmp_path / "m", config, hidden_dim=16, shards=1,
                                       resume=True), log=said.append)
    assert any(line.startswith(f"resumed from {tmp_path / 'm'}") for line in said)
    assert [r["epoch"] for r in history] == [0, 1]
    state = torch.load(tmp_path / "m" / "training_state.pt", weights_only=True)
    assert "shards" not in state and state["epoch"] == 2
    assert all(torch.isfinite(w).all() for w in weights(tmp_path / "m").values())


def test_the_plan_lists_each_shards_questions_and_feature_files(runs, capsys):
    from nablafol.data import load_questions
    data, _, _ = runs
    assert main(["train", "--data", str(data), "--out", "unused", "--shards", "2", "--plan"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("2 shards of ") and len(lines) == 3
    counts = [int(line.split(": ")[1].split(" training")[0].replace(",", "")) for line in lines[1:]]
    assert sum(counts) == len(load_questions(data / "train_balanced_questions.json"))
    assert all(line.endswith("features: gqa_objects_0.h5") for line in lines[1:])
    # more shards than images: refused in one line, as the run refuses a shard with no question
    images = len({q.image_id for q in load_questions(data / "train_balanced_questions.json").values()})
    assert main(["train", "--data", str(data), "--out", "unused", "--shards", str(images + 1), "--plan"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"use at most {images:,}" in err and len(err.strip().splitlines()) == 1
