"""Hostile model folders: a pickle that would run code when loaded, put where the model's or the
calibrator's tensors belong (as a weights-only torch file or posing as safetensors), or where
`train --resume` finds its checkpoint, is refused by `nablafol eval --model`, `nablafol calibrate
--inspect` and `nablafol train --resume` in one line with exit status 2, and its code never runs
(the marker file it would create never appears)."""
from __future__ import annotations

import io
import json
import pickle
import subprocess
import sys

import pytest
import torch

from reliability_helpers import EVERY, FEATURES, FIX, assert_one_line_refusal, run_cli, write_model_folder

PROGRAM = "select: plate->relate: _,on,s [0]->exist: ? [1]"


class _Payload:
    """Unpickling this calls ``open(marker, "w")``: proof that code from the file ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _hostile_bytes(marker, encoding: str) -> bytes:
    if encoding == "raw pickle":
        return pickle.dumps({"unary_bias": _Payload(marker)})
    buffer = io.BytesIO()  # a real torch zip file whose pickle holds the payload
    torch.save({"unary_bias": _Payload(marker)}, buffer, pickle_module=pickle)
    return buffer.getvalue()


def _plant(folder, part: str, file_format: str, encoding: str, marker):
    """Replace ``part``'s tensors in ``folder`` by the payload; returns the planted file. New
    folders hold safetensors; "torch" plants an old folder's weights-only torch file instead."""
    safetensors_name = f"{part}.safetensors"
    torch_name = "weights.pt" if part == "model" else "calibrator.pt"
    planted = folder / (torch_name if file_format == "torch" else safetensors_name)
    (folder / safetensors_name).unlink()
    if part == "model":  # the config names the model's file
        config = json.loads((folder / "config.json").read_text())
        config["files"] = {"model": planted.name}
        (folder / "config.json").write_text(json.dumps(config))
    planted.write_bytes(_hostile_bytes(marker, encoding))
    return planted


CASES = [(part, fmt, enc) for part in ("model", "calibrator") for fmt in ("torch", "safetensors")
         for enc in ("torch zip", "raw pickle")]


@pytest.mark.slow
@pytest.mark.parametrize("part, file_format, encoding", CASES)
@pytest.mark.parametrize("command", ["eval", "calibrate --inspect"])
def test_a_crafted_pickle_is_refused_in_one_line_and_never_runs(tmp_path, capsys, part, file_format, encoding,
                                                               command):
    folder = write_model_folder(tmp_path / "model", calibrator=True)
    marker = tmp_path / "code-ran"
    planted = _plant(folder, part, file_format, encoding, marker)
    if command == "eval":
        args = ["eval", "--questions", EVERY / "questions.json", "--features", FEATURES, "--model", folder,
                "--predictions", tmp_path / "p.json"]
    else:
        args = ["calibrate", "--model", folder, "--inspect", PROGRAM]
    code, out, err = run_cli(capsys, *args)
    line = assert_one_line_refusal(code, err, planted)
    assert "is not a readable" in line or "needs the safetensors package" in line, line
    assert "weights_only" not in line  # torch's advice to load it unsafely is never passed on
    assert not marker.exists()
    assert not (tmp_path / "p.json").exists()


def test_a_crafted_training_checkpoint_is_refused_by_train_resume(tmp_path, capsys, encoding="torch zip"):
    """(The torch zip: its refusal text is the one that carries torch's advice to load unsafely.)"""
    out = tmp_path / "model"
    out.mkdir()
    marker = tmp_path / "code-ran"
    planted = out / "training_state.pt"
    planted.write_bytes(_hostile_bytes(marker, encoding))
    code, _, err = run_cli(capsys, "train", "--questions", FIX / "val_balanced_questions.json", "--features", FEATURES,
                           "--out", out, "--resume", "--epochs", "1", "--hidden", "8")
    line = assert_one_line_refusal(code, err, planted)
    assert "cannot resume from this checkpoint: is not a readable weights-only torch file (refused" in line, line
    assert "weights_only" not in line and not marker.exists()  # no advice to load it unsafely


def test_the_payload_is_live_when_unpickled_without_restriction(tmp_path):
    """The control: the planted bytes do run code under a plain unpickler (so the tests above could fail)."""
    marker = tmp_path / "code-ran"
    pickle.loads(_hostile_bytes(marker, "raw pickle"))
    assert marker.exists()


@pytest.mark.slow
def test_the_refusal_in_a_real_process_prints_one_line_and_runs_nothing(tmp_path, encoding="raw pickle"):
    """(The raw pickle: the one that made torch print a warning on stderr.)"""
    folder = write_model_folder(tmp_path / "model")
    marker = tmp_path / "code-ran"
    planted = _plant(folder, "model", "torch", encoding, marker)
    done = subprocess.run([sys.executable, "-m", "nablafol.cli", "calibrate", "--model", str(folder),
                           "--inspect", PROGRAM], capture_output=True, text=True, timeout=120)
    assert_one_line_refusal(done.returncode, done.stderr, planted)  # no library warning lines either
    assert done.stdout == "" and not marker.exists()
