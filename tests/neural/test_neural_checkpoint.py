"""The model folder: round trips, weights-only loading, and every broken folder in one line."""
from __future__ import annotations

import io
import json
import os
import pickle

import pytest
import torch

import nablafol
from nablafol.errors import InputFileError
from nablafol.neural import (NeuralOracleError, checkpoint, load_model, load_tensors, save_model,
                             save_tensors)
from neural_helpers import ON, RED, SCENE, SUNNY, random_batch, small_model

FORMATS = ["torch"] + (["safetensors"] if checkpoint._safetensors is not None else [])
UNARY = [RED, SUNNY, SCENE]


@pytest.fixture(params=FORMATS)
def tensor_format(request, monkeypatch):
    """Run a test with each tensor format this environment can write (the torch file always)."""
    if request.param == "torch":
        monkeypatch.setattr(checkpoint, "_safetensors", None)
    return request.param


def answers(model, batch):
    from nablafol.oracle import Requests
    oracle = model.bind(batch)
    return (oracle.unary(Requests.build([0, 1, 1], UNARY)), oracle.binary(Requests.build([0, 1], [ON, ON])))


def test_a_saved_model_loads_back_with_identical_answers(tmp_path, tensor_format):
    model = small_model(seed=7)
    with torch.no_grad():
        model.unary_bias.add_(torch.randn_like(model.unary_bias))  # not just the initial values
    path = save_model(tmp_path / "m", model, model.vocabulary, extra={"epoch": 4, "curriculum": [1, 2]})
    files = sorted(p.name for p in (tmp_path / "m").iterdir())
    expected_file = "weights.pt" if tensor_format == "torch" else "model.safetensors"
    assert files == sorted(["config.json", expected_file])
    config = json.loads(path.read_text())
    assert config["versions"]["torch"] == torch.__version__ and config["versions"]["nablafol"] == nablafol.__version__
    assert config["model"]["feature_dim"] == 6 and config["files"] == {"model": expected_file}

    loaded, vocabulary, extra = load_model(tmp_path / "m")
    assert extra == {"epoch": 4, "curriculum": [1, 2]} and vocabulary == model.vocabulary
    assert not loaded.training and loaded.config == model.config
    batch = random_batch([3, 4], seed=8)
    for got, expected in zip(answers(loaded, batch), answers(model, batch)):
        assert torch.equal(got, expected)


def test_the_torch_file_is_weights_only_and_nothing_in_it_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoint, "_safetensors", None)
    save_model(tmp_path, small_model())
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    state = torch.load(tmp_path / "weights.pt", weights_only=True)
    state["unary_bias"] = Payload()
    buffer = io.BytesIO()
    torch.save(state, buffer, pickle_module=pickle)
    (tmp_path / "weights.pt").write_bytes(buffer.getvalue())
    with pytest.raises(InputFileError, match="weights.pt: is not a readable weights-only torch file \\(refused") as info:
        load_model(tmp_path)
    assert not marker.exists()
    assert "\n" not in str(info.value) and "weights_only" not in str(info.value)  # no advice to turn it off


def _broken(tmp_path, how):
    folder = tmp_path / "m"
    save_model(folder, small_model(), extra={"note": "x"})
    config_path, weights = folder / "config.json", folder / checkpoint.tensor_file_names("model")[
        0 if checkpoint._safetensors is not None else 1]
    config = json.loads(config_path.read_text())
    if how == "no folder":
        return tmp_path / "nowhere"
    if how == "no config":
        config_path.unlink()
    elif how == "bad json":
        config_path.write_text('{"format": "nablafol-model",\n "model": }')
    elif how == "not a model":
        config_path.write_text('{"format": "something else"}')
    elif how == "future version":
        config_path.write_text(json.dumps({**config, "format_version": 99}))
    elif how == "bad setting":
        config_path.write_text(json.dumps({**config, "model": {**config["model"], "hidden_dim": -3}}))
    elif how == "unknown setting":
        config_path.write_text(json.dumps({**config, "model": {**config["model"], "colour": 1}}))
    elif how == "bad vocabulary":
        config_path.write_text(json.dumps({**config, "vocabulary": {**config["vocabulary"], "unary": [["attr", "red"]]}}))
    elif how == "escaping file name":
        config_path.write_text(json.dumps({**config, "files": {"model": "../elsewhere.pt"}}))
    elif how == "no weights":
        weights.unlink()
    elif how == "truncated weights":
        weights.write_bytes(weights.read_bytes()[:100])
    elif how in ("missing tensor", "extra tensor", "wrong shape"):
        state = load_tensors(folder, "model")
        if how == "missing tensor":
            del state["unary_bias"]
        elif how == "extra tensor":
            state["surprise"] = torch.zeros(1)
        else:
            state["unary_bias"] = torch.zeros(3)
        save_tensors(folder, "model", state)
    elif how == "not a dict":
        torch.save([torch.zeros(1)], weights) if weights.suffix == ".pt" else weights.write_bytes(b"\x00" * 16)
    return folder


@pytest.mark.parametrize("how, says", [
    ("no folder", "nowhere: no such folder"),
    ("no config", "config.json: missing: not a model folder"),
    ("bad json", "config.json (line 2, column 11): is not valid JSON"),
    ("not a model", "is not a nablafol model config"),
    ("future version", "format_version 99 is not supported"),
    ("bad setting", "hidden_dim must be a positive integer, got -3"),
    ("unknown setting", "unknown setting 'colour'"),
    ("bad vocabulary", "config.json: concept vocabulary: the unary concept ('scene', 'scene') is missing"),
    ("escaping file name", "files.model is '../elsewhere.pt'"),
    ("no weights", "missing: the model tensors"),
    ("truncated weights", "is not a readable"),
    ("missing tensor", "lacks tensor 'unary_bias'"),
    ("extra tensor", "has tensor 'surprise'"),
    ("wrong shape", "tensor 'unary_bias' has shape (3,)"),
    ("not a dict", "must hold a {name: tensor} dictionary"),
])
def test_a_broken_folder_is_refused_in_one_line(tmp_path, tensor_format, how, says):
    folder = _broken(tmp_path, how)
    if how == "not a dict" and tensor_format == "safetensors":  # safetensors cannot even write a list
        says = "is not a readable safetensors file"
    with pytest.raises(InputFileError) as info:
        load_model(folder)
    message = str(info.value)
    assert says in message and "\n" not in message, message


def test_other_parts_share_the_folder_and_survive_a_new_save(tmp_path, tensor_format):
    calibrator = {"mlp.weight": torch.randn(4, 3), "mlp.bias": torch.randn(4)}
    save_tensors(tmp_path, "calibrator", calibrator)
    save_model(tmp_path, small_model())
    save_model(tmp_path, small_model(seed=1))  # overwrite the model
    restored = load_tensors(tmp_path, "calibrator")
    assert restored.keys() == calibrator.keys() and all(torch.equal(restored[k], calibrator[k]) for k in calibrator)
    with pytest.raises(InputFileError, match="missing: the probe tensors"):
        load_tensors(tmp_path, "probe")


def test_saving_refuses_what_it_cannot_write_faithfully(tmp_path):
    model = small_model()
    with pytest.raises(NeuralOracleError, match="extra must be JSON-ready"):
        save_model(tmp_path / "a", model, extra={"when": object()})
    with pytest.raises(NeuralOracleError, match="not the model's vocabulary"):
        save_model(tmp_path / "b", model, vocabulary=small_model().vocabulary.__class__.from_dict(
            {**model.vocabulary.to_dict(), "aliases": {"reds": "red"}}))
    with pytest.raises(NeuralOracleError, match="must be an identifier"):
        save_tensors(tmp_path, "../up", {})
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputFileError, match="exists and is not a folder"):
        save_model(tmp_path / "file", model)


def test_loading_onto_a_device(tmp_path):
    save_model(tmp_path, small_model())
    model, _, _ = load_model(tmp_path, device="cpu")
    assert {p.device.type for p in model.parameters()} == {"cpu"}
    assert model.scene_level.device.type == "cpu" and model.scene_level.sum() > 1
