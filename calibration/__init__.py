"""Top-down calibration of DFOL attention (paper, section 5), plugged into the engine through
:class:`nablafol.engine.Calibration` (installed as ``nablafol.calibration``; trained by
:mod:`nablafol.pipeline.calibration_training`).

* :func:`beta_calibrate`: the Beta-calibration function in log space (``beta``);
* :class:`TopDownCalibrator`: its per-step parameters from a Bi-LSTM over the program (``calibrator``);
* :func:`save_calibrator` / :func:`load_calibrator`: beside the oracle in a model folder (``storage``);
* :func:`classify_shape`: a calibration read as the paper's Figure 2 shapes (``shapes``);
* :func:`step_parameters`: a calibrator's parameters per step of one question (``inspect``);
* ``calibration.figures``: calibration curves and reliability diagrams (matplotlib, imported on use).
"""
from .beta import beta_calibrate
from .calibrator import TopDownCalibrator, step_token
from .inspect import StepParameters, format_step_parameters, step_parameters
from .shapes import classify_shape
from .storage import has_calibrator, load_calibrator, save_calibrator

__all__ = ["beta_calibrate", "TopDownCalibrator", "step_token", "save_calibrator", "load_calibrator",
           "has_calibrator", "classify_shape", "StepParameters", "step_parameters",
           "format_step_parameters"]
