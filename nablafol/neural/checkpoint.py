"""A trained model is a folder: ``config.json`` and tensor files, nothing executable.

Layout (io-formats.md, "A trained model ... is a folder")::

    config.json          {"format": "nablafol-model", "format_version": 1,
                          "model": {NeuralOracleConfig fields}, "vocabulary": {ConceptVocabulary},
                          "files": {"model": "model.safetensors"}, "versions": {...}, "extra": {...}}
    model.safetensors    the network's tensors (safetensors installed), or
    weights.pt           the same as a weights-only torch file (``torch.save(state_dict)``)
    calibrator.*         room for other parts' tensors (:func:`save_tensors`)

Loading never executes code from the folder: JSON, safetensors, or
``torch.load(..., weights_only=True)``, which refuses any pickled object that is not a
tensor or a plain container. File names are never taken from the folder as paths: a
part's file is one of two fixed names. Every problem (missing folder or file, bad JSON,
a tensor file that is not weights-only, tensors that do not fit the config) raises
:class:`~nablafol.errors.InputFileError`: one line naming the file.

    >>> import tempfile
    >>> from nablafol.dsl import Ontology
    >>> from nablafol.neural import ConceptVocabulary, NeuralOracleModel
    >>> model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(Ontology.gqa()), feature_dim=8,
    ...                                          hidden_dim=8, embedding_dim=8, projection_dim=4, pair_hidden_dim=4)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = save_model(folder, model, extra={"epoch": 3})
    ...     loaded, vocabulary, extra = load_model(folder)
    >>> extra, vocabulary == model.vocabulary
    ({'epoch': 3}, True)
"""
from __future__ import annotations

import io
import json
import platform
import warnings
from pathlib import Path
from typing import Mapping

import torch

from nablafol.data.fields import count_text
from nablafol.data.files import atomic_writer, not_text
from nablafol.errors import InputFileError, NablafolError

from nablafol.neural.concept_vocabulary import ConceptVocabulary
from .errors import NeuralOracleError
from .model import BOX_FEATURES, PAIR_GEOMETRY, NeuralOracleConfig, NeuralOracleModel

try:  # optional: the preferred tensor format when installed
    import safetensors.torch as _safetensors
except ImportError:  # pragma: no cover - depends on the environment
    _safetensors = None

__all__ = ["save_model", "load_model", "save_tensors", "load_tensors", "fill_module", "refuse_oversized",
           "CONFIG_NAME", "FORMAT", "FORMAT_VERSION"]

CONFIG_NAME = "config.json"
FORMAT = "nablafol-model"
FORMAT_VERSION = 1
MODEL_PART = "model"
_SLACK = 1 << 20  # numbers a config may ask beyond twice the stored ones before it is refused unbuilt


def tensor_file_names(part: str) -> tuple[str, str]:
    """The two names a part's tensors may have: (safetensors, weights-only torch file)."""
    if not part.isidentifier():
        raise NeuralOracleError(f"model folder: part name {part!r} must be an identifier (it names files)")
    return (f"{part}.safetensors", "weights.pt" if part == MODEL_PART else f"{part}.pt")


# ---------------------------------------------------------------------------- writing
def save_model(folder, model: NeuralOracleModel, vocabulary: ConceptVocabulary | None = None,
               extra: Mapping | None = None) -> Path:
    """Write ``model`` (and its vocabulary) to ``folder``; ``extra`` is any JSON-ready dict
    (training state, metrics) returned by :func:`load_model`. Other parts' files in the
    folder (``calibrator.*``) are left alone. Returns the path of ``config.json``."""
    if vocabulary is not None and vocabulary != model.vocabulary:
        raise NeuralOracleError("save_model: the vocabulary given is not the model's vocabulary")
    extra = dict(extra or {})
    try:
        json.dumps(extra, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise NeuralOracleError(f"save_model: extra must be JSON-ready (strings, numbers, lists, dicts): {error}") from None
    folder = _make_folder(folder)
    state = {name: t for name, t in model.state_dict().items()}
    written = save_tensors(folder, MODEL_PART, state)
    config = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "model": model.config.to_dict(), "vocabulary": model.vocabulary.to_dict(),
        "files": {MODEL_PART: written.name},
        "versions": {"nablafol": _nablafol_version(), "torch": torch.__version__,
                     "python": platform.python_version()},
        "extra": extra,
    }
    path = folder / CONFIG_NAME
    with atomic_writer(path) as f:
        f.write(json.dumps(config, indent=1, ensure_ascii=False))
    return path


def save_tensors(folder, part: str, tensors: Mapping[str, torch.Tensor]) -> Path:
    """Write ``{name: tensor}`` as ``folder/{part}.safetensors`` (or the weights-only torch
    file when safetensors is not installed), replacing the part's previous file."""
    folder = _make_folder(folder)
    preferred, fallback = tensor_file_names(part)
    for name, t in tensors.items():
        if not isinstance(name, str) or not torch.is_tensor(t):
            raise NeuralOracleError(f"save_tensors: {part} entry {name!r} is not a named tensor")
    tensors = {name: t.detach().to("cpu").contiguous() for name, t in tensors.items()}
    path = folder / (preferred if _safetensors is not None else fallback)
    if _safetensors is not None:
        data = _safetensors.save(tensors)
    else:
        buffer = io.BytesIO()
        torch.save(tensors, buffer)
        data = buffer.getvalue()
    with atomic_writer(path, "wb") as f:
        f.write(data)
    stale = folder / (fallback if path.name == preferred else preferred)
    stale.unlink(missing_ok=True)  # one file per part, so loading is never ambiguous
    return path


# ---------------------------------------------------------------------------- reading
def load_model(folder, device=None) -> tuple[NeuralOracleModel, ConceptVocabulary, dict]:
    """``(model, vocabulary, extra)`` from a folder written by :func:`save_model`; the model
    is on ``device`` (default CPU) and in eval mode."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputFileError(folder, "no such folder (expected a model folder holding config.json)")
    path = folder / CONFIG_NAME
    config = _read_config(path)
    try:
        vocabulary = ConceptVocabulary.from_dict(config["vocabulary"])
        model_config = NeuralOracleConfig.from_dict(config["model"])
    except NablafolError as error:
        raise InputFileError(path, str(error)) from None
    except TypeError as error:  # a setting of the wrong JSON type reaching the dataclass
        raise InputFileError(path, f"model settings do not fit: {error}") from None
    recorded = config.get("files", {}).get(MODEL_PART) if isinstance(config.get("files"), Mapping) else None
    tensors, weights = _load_part(folder, MODEL_PART, recorded)
    # the sizes come from an untrusted file: build the network only when it is not much bigger
    # than the tensors on disk (a near miss is built, so fill_module can name the tensor that differs)
    refuse_oversized(path, parameter_count(model_config), tensors, f"{weights.name} holds")
    try:
        model = NeuralOracleModel(model_config, vocabulary)
    except NablafolError as error:
        raise InputFileError(path, str(error)) from None
    fill_module(model, tensors, weights)
    extra = config.get("extra", {})
    if not isinstance(extra, dict):
        raise InputFileError(path, f"'extra' must be an object, got {type(extra).__name__}")
    if "ontology" in extra:  # read back by eval, calibrate and train: check it here, where the file is known
        _check_ontology(extra["ontology"], path)
    return model.to(device if device is not None else "cpu").eval(), vocabulary, extra


def load_tensors(folder, part: str) -> dict[str, torch.Tensor]:
    """``{name: tensor}`` (on CPU) of a part written by :func:`save_tensors`."""
    return _load_part(Path(folder), part)[0]


def refuse_oversized(path: Path, needed: int, tensors: Mapping[str, torch.Tensor], holder: str) -> None:
    """InputFileError on ``path`` when a configuration asks for ``needed`` numbers, far more than
    the ``tensors`` on disk hold (``holder``: their name and verb, e.g. "model.pt holds"), so
    that nothing that big is built."""
    stored = sum(t.numel() for t in tensors.values())
    if needed > 2 * stored + _SLACK:
        raise InputFileError(path, f"asks for {count_text(needed)} numbers, {holder} {stored:,}")


def parameter_count(config: NeuralOracleConfig) -> int:
    """How many numbers :class:`NeuralOracleModel` has for ``config``, computed without building it.

    >>> from nablafol.dsl import Ontology
    >>> model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(Ontology.gqa()), feature_dim=8,
    ...                                          hidden_dim=8, hidden_layers=2)
    >>> parameter_count(model.config) == sum(t.numel() for t in model.state_dict().values())
    True
    """
    c, hidden = config, config.hidden_dim

    def linear(inputs: int, outputs: int) -> int:
        return inputs * outputs + outputs

    count = 2 * c.feature_dim  # input LayerNorm
    if c.hidden_layers >= 1:  # a closed form, not a loop: a config's layer count is the user's (10**12 hung)
        count += linear(c.feature_dim + BOX_FEATURES, hidden) + (c.hidden_layers - 1) * linear(hidden, hidden)
    count += linear(hidden, c.embedding_dim)  # unary projection
    count += linear(hidden, hidden) + linear(hidden, c.embedding_dim)  # scene encoder
    count += 2 * linear(hidden, c.projection_dim)  # subject and object projections
    count += linear(2 * c.projection_dim + PAIR_GEOMETRY, c.pair_hidden_dim) + linear(c.pair_hidden_dim,
                                                                                      c.embedding_dim)
    return count + (c.num_unary + c.num_binary) * (c.embedding_dim + 1)  # concept embeddings and biases


def _read_config(path: Path) -> dict:
    if not path.is_file():
        raise InputFileError(path, "missing: not a model folder (save_model writes it)")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise not_text(path, error) from None
    except json.JSONDecodeError as error:
        raise InputFileError(path, f"is not valid JSON: {error.msg}", f"line {error.lineno}, "
                                                                      f"column {error.colno}") from None
    except (RecursionError, ValueError):  # valid JSON beyond the decoder: nesting, 4300+ digit integers
        raise InputFileError(path, "cannot be used: values nested too deeply or a number too long") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise InputFileError(path, f"is not a nablafol model config (expected \"format\": \"{FORMAT}\")")
    version = config.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
        raise InputFileError(path, f"format_version {version!r} is not supported (this nablafol reads "
                                   f"1 to {FORMAT_VERSION})")
    for key in ("model", "vocabulary"):
        if key not in config:
            raise InputFileError(path, f"{key!r} is missing")
    return config


def _load_part(folder: Path, part: str, recorded: str | None = None) -> tuple[dict, Path]:
    names = tensor_file_names(part)
    if recorded is not None and recorded not in names:
        raise InputFileError(folder / CONFIG_NAME, f"files.{part} is {recorded!r}; it must be one of {', '.join(names)}")
    candidates = [recorded] if recorded is not None else [n for n in names if (folder / n).is_file()]
    if not candidates or not (folder / candidates[0]).is_file():
        raise InputFileError(folder / (candidates[0] if candidates else names[0]),
                             f"missing: the {part} tensors ({' or '.join(names)}) are not in the folder")
    path = folder / candidates[0]
    readable(path)
    if path.suffix == ".safetensors":
        if _safetensors is None:
            raise InputFileError(path, "needs the safetensors package to be read (pip install safetensors)")
        try:
            tensors = _safetensors.load_file(str(path), device="cpu")
        except Exception as error:  # the library's errors vary by version; all mean "unreadable"
            raise InputFileError(path, f"is not a readable safetensors file ({_first_line(error)})") from None
    else:
        tensors = load_weights_only(path)
    if not isinstance(tensors, dict) or not all(isinstance(k, str) and torch.is_tensor(v) for k, v in tensors.items()):
        raise InputFileError(path, "must hold a {name: tensor} dictionary")
    return tensors, path


def readable(path: Path) -> None:
    """InputFileError when ``path`` cannot be opened for reading, said as what it is: the
    safetensors library says "No such file" for a file it may not read."""
    try:
        with open(path, "rb"):
            pass
    except PermissionError:
        raise InputFileError(path, "permission denied: give read permission (chmod u+r), or another folder") from None
    except OSError as error:
        raise InputFileError(path, f"cannot be read ({error.strerror or error})") from None


def _check_ontology(data, path: Path) -> None:
    from nablafol.dsl import Ontology
    from nablafol.dsl.ontology import VOCABULARY_SHAPES
    optional = {"classes", "untyped", "pronouns", "gendered_names"}  # what a vocabulary grown from data adds (the open vocabulary)
    if not isinstance(data, Mapping) or not set(VOCABULARY_SHAPES) <= set(data) <= set(VOCABULARY_SHAPES) | optional:
        raise InputFileError(path, "extra.ontology must be an object of exactly "
                                   f"{', '.join(VOCABULARY_SHAPES)} (and optionally {', '.join(sorted(optional))})")
    try:
        Ontology.from_data(**data)
    except ValueError as error:
        raise InputFileError(path, f"extra.ontology: {error}") from None


def fill_module(model: torch.nn.Module, tensors: dict, path: Path) -> None:
    """Copy ``tensors`` into ``model`` (any module), naming the first tensor that is missing, extra
    or mis-shaped in one InputFileError line on ``path``."""
    expected = model.state_dict()
    missing = [k for k in expected if k not in tensors]
    if missing:
        raise InputFileError(path, f"lacks tensor {missing[0]!r} that the model config needs")
    unexpected = [k for k in tensors if k not in expected]
    if unexpected:
        raise InputFileError(path, f"has tensor {unexpected[0]!r} that the model config does not know")
    for name, t in tensors.items():
        if tuple(t.shape) != tuple(expected[name].shape):
            raise InputFileError(path, f"tensor {name!r} has shape {tuple(t.shape)}, the model config needs "
                                       f"{tuple(expected[name].shape)}")
        if not t.is_floating_point() and expected[name].is_floating_point():
            raise InputFileError(path, f"tensor {name!r} has dtype {t.dtype}, expected floating point")
    model.load_state_dict(tensors)


# ---------------------------------------------------------------------------- helpers
def _make_folder(folder) -> Path:
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise InputFileError(folder, "exists and is not a folder") from None
    except OSError as error:
        raise InputFileError(folder, f"cannot be created ({error.strerror})") from None
    return folder


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def load_weights_only(path: Path, map_location="cpu"):
    """``torch.load(path, weights_only=True)``: tensors and plain containers only, nothing in the
    file runs. Any failure is one InputFileError line (never torch's advice to load unsafely)."""
    try:
        with warnings.catch_warnings():  # its pickle-protocol warning would add lines to the refusal
            warnings.simplefilter("ignore")
            return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as error:  # weights_only refusals, truncation, not a torch file at all
        raise InputFileError(path, f"is not a readable weights-only torch file ({_torch_load_reason(error)})") from None


def _torch_load_reason(error: Exception) -> str:
    """The informative line of ``torch.load``'s long messages (which also advise ``weights_only=False``:
    advice a model folder must never follow)."""
    text = str(error)
    if "Weights only load failed" in text:  # the reason follows this label, on its line or the next
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        label = "WeightsUnpickler error:"
        for index, line in enumerate(lines):
            if label in line:
                reason = line.split(label, 1)[1].strip() or (lines[index + 1] if index + 1 < len(lines) else "")
                if reason:
                    return "refused: " + reason.split(". ")[0]
        return "refused: it holds objects other than tensors"
    return text.split(". ")[0].strip() or type(error).__name__


def _nablafol_version() -> str:
    import nablafol
    return nablafol.__version__
