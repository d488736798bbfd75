"""Training the calibrator with the oracle frozen, through the same answer loss (paper, section 5)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

import torch

from nablafol.calibration.calibrator import TopDownCalibrator
from nablafol.engine import Engine
from nablafol.errors import InputFileError
from nablafol.pipeline.datasets import DatasetFiles
from nablafol.pipeline.oracle_training import (CALIBRATOR_FILES, CALIBRATOR_STATE_NAME, TrainConfig, Trainer, held_files,
                                               prepare_examples, refuse_nothing_to_train_on)

__all__ = ["CalibrationTrainer", "train_calibrator", "CalibrationJob", "calibrate_model"]


class CalibrationTrainer(Trainer):
    """:class:`nablafol.pipeline.oracle_training.Trainer` with the oracle frozen and only the
    calibrator learning.

    Its checkpoint and metrics live beside the oracle's in the model folder
    (``calibrator_state.pt``, ``calibrator_metrics.jsonl``, ``calibrator.json`` + tensors).
    """

    state_name = CALIBRATOR_STATE_NAME
    metrics_name = "calibrator_metrics.jsonl"
    written_files = CALIBRATOR_FILES

    def __init__(self, model, calibrator: TopDownCalibrator, *args, **kwargs):
        for p in model.parameters():
            p.requires_grad_(False)
        model.eval()  # no dropout in the frozen oracle
        super().__init__(model, *args, trainable=calibrator, engine=Engine(calibration=calibrator), **kwargs)

    def save_trained(self) -> None:
        from nablafol.pipeline.model_folder import save_calibrator
        save_calibrator(self.out, self.trainable, extra={"train": asdict(self.config), "epochs_done": self.epoch,
                                                         "history": self.history})


def train_calibrator(perception, examples, model_folder, compiler, config: TrainConfig, val_questions=(),
                     progress=None, resume: bool = False, log=print, distribution=None,
                     callbacks: Sequence[Callable] = ()) -> tuple[TopDownCalibrator, list[dict]]:
    """``(calibrator, history)``: a calibrator over the tokens of the ``examples``' programs,
    trained on ``perception``'s oracle (frozen) and saved into ``model_folder``; ``resume``
    continues from its checkpoint there. ``nablafol calibrate`` and ``nablafol demo`` use it.
    With a ``distribution`` (:mod:`nablafol.pipeline.distributed`), ``examples`` are this
    process's shards' and the vocabulary is that of every process's examples."""
    from nablafol.calibration.calibrator import program_tokens
    torch.manual_seed(config.seed)
    tokens = program_tokens(e.compiled.program for e in examples)
    if distribution is not None:
        tokens = set().union(*distribution.group.gather(tokens))
    calibrator = TopDownCalibrator(sorted(tokens))
    if perception.device is not None:
        calibrator = calibrator.to(perception.device)
    val_questions = list(val_questions)
    trainer = CalibrationTrainer(perception.model, calibrator, perception, examples, Path(model_folder), config,
                                 compiler=compiler, val_perception=perception if val_questions else None,
                                 val_questions=val_questions, ontology=perception.ontology, progress=progress, log=log,
                                 callbacks=callbacks, distribution=distribution)
    if resume and trainer.resume():
        log(f"resumed after epoch {trainer.epoch}")
    return calibrator, trainer.train()


@dataclass
class CalibrationJob:
    """What ``nablafol calibrate`` is asked: the dataset's files, the model folder, the settings."""

    files: DatasetFiles
    model: Path
    config: TrainConfig
    val_limit: int = 0
    device: object = "cpu"
    resume: bool = False
    shards: Optional[int] = None  # data shards (None: the checkpoint's when resuming, else one per process)
    launch: object = None  # nablafol.pipeline.distributed.Launch (None: one process)
    callbacks: Sequence[Callable] = ()


def calibrate_model(job: CalibrationJob, log=print, progress=None) -> list[dict]:
    """Train a calibrator for the model of ``job.model`` (its oracle frozen) and save it there;
    returns the history, one record per epoch. Under ``torchrun`` (``job.launch``) every process
    trains on its shards (as ``nablafol train`` does); rank 0 writes the folder."""
    from nablafol.compiler import Compiler
    from nablafol.pipeline.datasets import validation_questions
    from nablafol.pipeline.distributed import Launch, peers_guard, plan_training, process_group, rank_device, run_shards
    from nablafol.pipeline.model_folder import feature_perception
    held = [] if job.resume else held_files(job.model, CALIBRATOR_FILES)
    if held:  # a new calibrator would replace a trained one (docs/calibration.md)
        raise InputFileError(job.model, f"already holds a calibrator ({', '.join(held)}): --resume to continue it, "
                             f"or calibrate a copy of the model folder")
    launch = job.launch or Launch()
    with process_group(launch, job.device) as group:
        device = rank_device(job.device, launch)
        perception = feature_perception(job.files.features, job.model, device=device, calibrator=False)
        if perception.ontology is None:
            raise InputFileError(job.model, "the model folder records no vocabulary (train it with `nablafol train`)")
        compiler = Compiler(perception.ontology)
        val = validation_questions(job.files.val_questions, job.val_limit)
        shards = run_shards(group, job.shards,
                            Path(job.model) / CalibrationTrainer.state_name if job.resume else None)
        distribution, questions = plan_training(group, shards, perception.store, job.files.train_questions, val, device)
        examples, skips = prepare_examples(questions.values(), compiler, perception.has_image)
        where = f"{distribution.describe()}: " if shards > 1 else ""
        log(f"{where}{len(examples):,} training questions ({len(skips):,} skipped)")
        refuse_nothing_to_train_on(group, job.files.train_questions, len(questions), examples, skips)
        say = log if distribution.is_writer else (lambda *_: None)
        with peers_guard(group):
            _, history = train_calibrator(perception, examples, job.model, compiler, job.config, val,
                                          progress=progress if distribution.is_writer else None, resume=job.resume,
                                          log=say, distribution=distribution, callbacks=job.callbacks)
    return history
