"""A parser is a folder: ``parser.json`` and ``parser.safetensors``, nothing executable.

    parser.json          {"format": "nablafol-semantic-parser", "format_version": 1,
                          "network": {"word_dim", "unit_dim", "hidden_dim"},
                          "question_words": [...], "heads": [...], "words": [...],
                          "max_steps", "max_phrase_words", "max_question_words", "min_probability",
                          "training": {...}, "versions": {...}}
    parser.safetensors   the network's tensors (or parser.pt, weights only, without safetensors)

The same rules as an oracle's model folder (``nablafol.neural.checkpoint``, whose tensor
reader this uses): JSON and safetensors only, loading runs no code, sizes are checked
against the tensors on disk before anything is built, and every problem is one
:class:`~nablafol.errors.InputFileError` line naming the file. The file names fit beside an
oracle's in one model folder.

    >>> import tempfile
    >>> from nablafol.semantic_parser import tiny_parser
    >>> parser = tiny_parser()
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = save_parser(folder, parser)
    ...     loaded = load_parser(folder)
    >>> loaded.parse("Is the cup red?").text == parser.parse("Is the cup red?").text
    True
"""
from __future__ import annotations

import json
import math
import platform
from pathlib import Path

import torch

from nablafol.data.files import atomic_writer
from nablafol.data.json_stream import load_json
from nablafol.errors import InputFileError, NablafolError

from .constraint import DecodingSpec
from .errors import ParserError
from .network import NetworkConfig, ParserNetwork, parameter_count
from .reader import SemanticParser
from .units import ProgramUnits

__all__ = ["save_parser", "load_parser", "has_parser", "CONFIG_NAME", "FORMAT", "FORMAT_VERSION"]

CONFIG_NAME = "parser.json"
PART = "parser"
FORMAT = "nablafol-semantic-parser"
FORMAT_VERSION = 1
_WIDTHS = ("word_dim", "unit_dim", "hidden_dim")


def save_parser(folder, parser: SemanticParser) -> Path:
    """Write ``parser`` into ``folder`` (created); returns the path of ``parser.json``."""
    from nablafol.neural import save_tensors
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InputFileError(folder, "exists and is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    save_tensors(folder, PART, parser.network.state_dict())
    network = parser.network.config
    config = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "network": {k: getattr(network, k) for k in _WIDTHS},
        "question_words": parser.question_words, "heads": list(parser.units.heads),
        "words": list(parser.units.words), "max_steps": parser.units.max_steps,
        "max_phrase_words": parser.max_phrase_words, "max_question_words": parser.max_question_words,
        "min_probability": parser.min_probability, "training": parser.info,
        "versions": {"torch": torch.__version__, "python": platform.python_version()},
    }
    path = folder / CONFIG_NAME
    with atomic_writer(path) as stream:
        stream.write(json.dumps(config, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    return path


def has_parser(folder) -> bool:
    return (Path(folder) / CONFIG_NAME).is_file()


def load_parser(folder, device=None) -> SemanticParser:
    """The parser stored in ``folder``, on ``device`` (default CPU); a broken or hostile folder
    is one InputFileError line."""
    from nablafol.neural import load_tensors
    from nablafol.neural.checkpoint import fill_module, refuse_oversized
    folder = Path(folder)
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "no such folder"
        raise InputFileError(folder, f"{what} (expected a parser folder holding parser.json)")
    path = folder / CONFIG_NAME
    if not path.is_file():
        raise InputFileError(path, "missing: not a parser folder (nablafol parser train writes it)")
    config = load_json(path, expected_type=dict, expected="a JSON object")

    def fail(message: str) -> InputFileError:
        return InputFileError(path, message)

    if config.get("format") != FORMAT:
        raise fail(f"is not a semantic parser (expected \"format\": \"{FORMAT}\")")
    version = config.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
        raise fail(f"format_version {version!r:.40} is not supported (this nablafol reads 1 to {FORMAT_VERSION})")
    for key in ("question_words", "heads", "words"):
        value = config.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise fail(f"{key!r} must be a list of strings")
    network = config.get("network")
    if not isinstance(network, dict) or set(network) != set(_WIDTHS):
        raise fail(f"'network' must be an object of exactly {', '.join(_WIDTHS)}")
    training = config.get("training", {})
    if not isinstance(training, dict):
        raise fail("'training' must be an object")
    probability = config.get("min_probability")
    if isinstance(probability, bool) or not isinstance(probability, (int, float)) or not math.isfinite(probability):
        raise fail(f"'min_probability' must be a number in [0, 1], got {probability!r:.40}")
    try:
        units = ProgramUnits(config["heads"], config["words"], config.get("max_steps"))
        spec = DecodingSpec(units, config.get("max_phrase_words"))  # checks every operation with the dsl
        sizes = NetworkConfig(len(config["question_words"]), len(units), **network)
    except (NablafolError, TypeError) as error:
        raise fail(str(error)) from None
    tensors, tensor_path = load_tensors(folder, PART), _tensor_path(folder)
    refuse_oversized(path, parameter_count(sizes), tensors, f"{tensor_path.name} holds")
    built = ParserNetwork(sizes)
    fill_module(built, tensors, tensor_path)
    try:
        return SemanticParser(built.to(device or "cpu"), config["question_words"], units, spec=spec,
                              max_question_words=config.get("max_question_words"),
                              min_probability=float(probability), info=training)
    except ParserError as error:
        raise fail(str(error)) from None


def _tensor_path(folder: Path) -> Path:
    from nablafol.neural.checkpoint import tensor_file_names
    names = tensor_file_names(PART)
    return next((folder / n for n in names if (folder / n).is_file()), folder / names[0])
