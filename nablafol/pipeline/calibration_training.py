"""Training the calibrator with the oracle frozen, through the same answer loss (paper, section 5)."""
from __future__ import annotations

from dataclasses import asdict

from nablafol.engine import Engine
from nablafol.pipeline.oracle_training import Trainer

from nablafol.calibration.calibrator import TopDownCalibrator
from nablafol.calibration.storage import save_calibrator


class CalibrationTrainer(Trainer):
    """:class:`nablafol.pipeline.oracle_training.Trainer` with the oracle frozen and only the calibrator learning.

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
        save_calibrator(self.out, self.trainable, extra={"train": asdict(self.config), "epochs_done": self.epoch,
                                                         "history": self.history})
