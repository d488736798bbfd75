"""A calibrator in a model folder: ``calibrator.json`` (its settings and tokens) and tensors only."""
from __future__ import annotations

import json
from pathlib import Path

from nablafol.errors import InputFileError

from .calibrator import TopDownCalibrator

CONFIG_NAME = "calibrator.json"
PART = "calibrator"


def save_calibrator(folder, calibrator: TopDownCalibrator, extra: dict | None = None) -> Path:
    from nablafol.neural import save_tensors
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_tensors(folder, PART, {k: v.detach().cpu() for k, v in calibrator.state_dict().items()})
    path = folder / CONFIG_NAME
    tmp = folder / (CONFIG_NAME + ".tmp")
    tmp.write_text(json.dumps({"format": "nablafol-calibrator", "format_version": 1, **calibrator.config(),
                               "extra": extra or {}}, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def has_calibrator(folder) -> bool:
    return (Path(folder) / CONFIG_NAME).exists()


def load_calibrator(folder, device=None) -> TopDownCalibrator:
    from nablafol.neural import load_tensors
    path = Path(folder) / CONFIG_NAME
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
        calibrator = TopDownCalibrator(config["tokens"], embedding_dim=int(config["embedding_dim"]),
                                       hidden_dim=int(config["hidden_dim"]))
    except OSError as e:
        raise InputFileError(path, f"cannot read ({e.strerror or e})") from None
    except (ValueError, KeyError, TypeError) as e:
        raise InputFileError(path, f"not a calibrator configuration ({type(e).__name__}: {e})") from None
    try:
        calibrator.load_state_dict(load_tensors(folder, PART))
    except RuntimeError as e:
        raise InputFileError(path, f"the calibrator's tensors do not fit its configuration: {str(e).splitlines()[0]}") \
            from None
    return calibrator.to(device or "cpu").eval()
