"""Training the calibrator with the oracle frozen, through the same answer loss (paper, section 5)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from nablafol.calibration.calibrator import TopDownCalibrator
from nablafol.engine import Engine
from nablafol.errors import InputFileError
from nablafol.pipeline.datasets import DatasetFiles
from nablafol.pipeline.oracle_training import TrainConfig, Trainer, prepare_examples

__all__ = ["CalibrationTrainer", "train_calibrator", "CalibrationJob", "calibrate_model"]


class CalibrationTrainer(Trainer):
    """:class:`nablafol.pipeline.oracle_training.Trainer` with the oracle frozen and only the
    calibrator learning.

    Its checkpoint and metrics live beside the oracle's in the model folder
    (``calibrator_state.pt``, ``calibrator_metrics.jsonl``, ``calibrator.json`` + tensors).
    """

    state_name = "calibrator_state.pt"
    metrics_name = "calibrator_metrics.jsonl"

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
                     progress=None, resume: bool = False, log=print) -> tuple[TopDownCalibrator, list[dict]]:
    """``(calibrator, history)``: a calibrator over the tokens of the ``examples``' programs,
    trained on ``perception``'s oracle (frozen) and saved into ``model_folder``; ``resume``
    continues from its checkpoint there. ``nablafol calibrate`` and ``nablafol demo`` use it."""
    torch.manual_seed(config.seed)
    calibrator = TopDownCalibrator.for_programs([e.compiled.program for e in examples])
    if perception.device is not None:
        calibrator = calibrator.to(perception.device)
    val_questions = list(val_questions)
    trainer = CalibrationTrainer(perception.model, calibrator, perception, examples, Path(model_folder), config,
                                 compiler=compiler, val_perception=perception if val_questions else None,
                                 val_questions=val_questions, ontology=perception.ontology, progress=progress, log=log)
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


def calibrate_model(job: CalibrationJob, log=print, progress=None) -> list[dict]:
    """Train a calibrator for the model of ``job.model`` (its oracle frozen) and save it there;
    returns the history, one record per epoch."""
    from nablafol.compiler import Compiler
    from nablafol.data import load_questions
    from nablafol.pipeline.datasets import validation_questions
    from nablafol.pipeline.model_folder import feature_perception
    perception = feature_perception(job.files.features, job.model, device=job.device, calibrator=False)
    if perception.ontology is None:
        raise InputFileError(job.model, "the model folder records no vocabulary (train it with `nablafol train`)")
    compiler = Compiler(perception.ontology)
    examples, skips = prepare_examples(load_questions(job.files.train_questions).values(), compiler,
                                       perception.has_image)
    log(f"{len(examples):,} training questions ({len(skips):,} skipped)")
    _, history = train_calibrator(perception, examples, job.model, compiler, job.config,
                                  validation_questions(job.files.val_questions, job.val_limit), progress=progress,
                                  resume=job.resume, log=log)
    return history
