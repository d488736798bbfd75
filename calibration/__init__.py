"""Top-down calibration of DFOL attention (paper, section 5), plugged into the engine through
:class:`nablafol.engine.Calibration`.

* :func:`beta_calibrate`: the Beta-calibration function in log space (``beta``);
* :class:`TopDownCalibrator`: its per-step parameters from a Bi-LSTM over the program (``calibrator``);
* :func:`save_calibrator` / :func:`load_calibrator`: beside the oracle in a model folder (``storage``).
"""
from .beta import beta_calibrate
from .calibrator import TopDownCalibrator, step_token
from .storage import has_calibrator, load_calibrator, save_calibrator
from .training import CalibrationTrainer

__all__ = ["beta_calibrate", "TopDownCalibrator", "step_token", "save_calibrator", "load_calibrator",
           "has_calibrator", "CalibrationTrainer"]
