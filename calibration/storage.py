"""A calibrator in a model folder: ``calibrator.json`` (its settings and tokens) and tensors only."""
from __future__ import annotations

import json
from pathlib import Path

from nablafol.data.files import atomic_writer
from nablafol.errors import InputFileError

from .calibrator import UNKNOWN, TopDownCalibrator

CONFIG_NAME = "calibrator.json"
PART = "calibrator"


def save_calibrator(folder, calibrator: TopDownCalibrator, extra: dict | None = None) -> Path:
    from nablafol.neural import save_tensors
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_tensors(folder, PART, {k: v.detach().cpu() for k, v in calibrator.state_dict().items()})
    path = folder / CONFIG_NAME
    with atomic_writer(path) as f:
        f.write(json.dumps({"format": "nablafol-calibrator", "format_version": 1, **calibrator.config(),
                            "extra": extra or {}}, indent=1) + "\n")
    return path


def has_calibrator(folder) -> bool:
    return (Path(folder) / CONFIG_NAME).exists()


def parameter_count(tokens: int, embedding_dim: int, hidden_dim: int) -> int:
    """How many numbers a :class:`TopDownCalibrator` over ``tokens`` tokens (``<unknown>``
    included) has, computed without building it.

    >>> calibrator = TopDownCalibrator(["attr:red", "name:cup"], embedding_dim=5, hidden_dim=3)
    >>> parameter_count(3, 5, 3) == sum(t.numel() for t in calibrator.state_dict().values())
    True
    """
    e, h = embedding_dim, hidden_dim
    lstm_direction = 4 * h * e + 4 * h * h + 8 * h  # input and recurrent weights, two biases
    return tokens * e + 2 * lstm_direction + (2 * h + e) * h + h + h * 4 + 4


def load_calibrator(folder, device=None) -> TopDownCalibrator:
    """The calibrator saved in ``folder``; a broken or hostile folder is one InputFileError line.

    The sizes are checked against the tensors on disk before anything is built, so a
    configuration asking for a huge network is refused without allocating it.
    """
    from nablafol.data.json_stream import load_json
    from nablafol.neural import load_tensors
    from nablafol.neural.checkpoint import refuse_oversized
    path = Path(folder) / CONFIG_NAME
    try:
        config = load_json(path, expected_type=dict, expected="a JSON object")
    except InputFileError as e:
        raise InputFileError(path, f"not a calibrator configuration ({e.message})") from None
    tokens = config.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise InputFileError(path, "not a calibrator configuration ('tokens' must be a list of strings)")
    sizes = {}
    for key in ("embedding_dim", "hidden_dim"):
        value = config.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputFileError(path, f"not a calibrator configuration ({key!r} must be a positive integer, "
                                       f"got {value!r:.40})")
        sizes[key] = value
    tensors = load_tensors(folder, PART)
    needed = parameter_count(len(set(tokens) | {UNKNOWN}), **sizes)
    refuse_oversized(path, needed, tensors, "the calibrator's tensors hold")  # build nothing much bigger than on disk
    calibrator = TopDownCalibrator(tokens, **sizes)
    try:
        calibrator.load_state_dict(tensors)
    except RuntimeError as e:
        raise InputFileError(path, f"the calibrator's tensors do not fit its configuration: {str(e).splitlines()[0]}") \
            from None
    return calibrator.to(device or "cpu").eval()
