"""A trained model folder, read and written in one place: the oracle with its concept vocabulary,
the ontology it was trained with, and its top-down calibrator when it has one.

A folder holds JSON and tensors only (``config.json`` + ``model.safetensors``;
``calibrator.json`` + ``calibrator.safetensors`` after ``nablafol calibrate``); loading never
runs code from it, and a broken or hostile folder is refused in one line naming the file.
Older folders whose tensors are weights-only torch files (``weights.pt``) are still read.

    >>> import tempfile
    >>> from nablafol.dsl import Ontology
    >>> from nablafol.neural import ConceptVocabulary, NeuralOracleModel
    >>> ontology = Ontology.gqa()
    >>> model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(ontology), feature_dim=4)
    >>> folder = tempfile.mkdtemp()
    >>> _ = save_oracle(folder, model, ontology, {"epochs_done": 0})
    >>> loaded = load_model_folder(folder)
    >>> loaded.ontology.to_data() == ontology.to_data(), loaded.calibrator is None, loaded.extra["epochs_done"]
    (True, True, 0)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from nablafol import dsl
from nablafol.errors import InputFileError
from nablafol.pipeline.perception import FeaturePerception

__all__ = ["ModelFolder", "load_model_folder", "save_oracle", "save_calibrator", "feature_perception"]


@dataclass
class ModelFolder:
    """What a model folder holds, loaded: the oracle network (eval mode, on the device asked
    for), its concept vocabulary, the ontology it was trained with (None when the folder does not
    record one), its calibrator (None when it has none, or when it was not asked for) and the
    rest of its recorded state (``extra``: training settings, history, ...)."""

    path: Path
    model: object
    vocabulary: object
    ontology: Optional[dsl.Ontology]
    calibrator: object
    extra: dict

    def require_ontology(self) -> dsl.Ontology:
        if self.ontology is None:
            raise InputFileError(self.path, "the model folder records no vocabulary (train it with `nablafol train`)")
        return self.ontology


def load_model_folder(folder, device=None, calibrator: bool = True) -> ModelFolder:
    """The model folder at ``folder``; its calibrator too when ``calibrator`` and it has one."""
    from nablafol.calibration import has_calibrator, load_calibrator
    from nablafol.neural import load_model
    folder = Path(folder)
    model, vocabulary, extra = load_model(folder, device=device)
    ontology = dsl.Ontology.from_data(**extra["ontology"]) if "ontology" in extra else None
    found = load_calibrator(folder, device=device) if calibrator and has_calibrator(folder) else None
    return ModelFolder(folder, model, vocabulary, ontology, found, extra)


def has_calibrator(folder) -> bool:
    """Whether ``folder`` holds a calibrator (without reading it)."""
    from nablafol.calibration import has_calibrator as found
    return found(folder)


def save_oracle(folder, model, ontology: dsl.Ontology, extra: Optional[dict] = None) -> Path:
    """Write the oracle and the ontology it was trained with into ``folder`` (other parts, such
    as a calibrator, are left alone); returns the path of ``config.json``."""
    from nablafol.neural import save_model
    return save_model(folder, model, extra={"ontology": ontology.to_data(), **(extra or {})})


def save_calibrator(folder, calibrator, extra: Optional[dict] = None) -> Path:
    """Write a calibrator beside the oracle in ``folder``; returns the path of its JSON."""
    from nablafol.calibration import save_calibrator as save
    return save(folder, calibrator, extra)


def feature_perception(features_folder, model_folder, device=None, calibrator: bool = True) -> FeaturePerception:
    """A perception answering with the model of ``model_folder`` over the object features of
    ``features_folder`` (and the model's calibrator, when it has one and ``calibrator``)."""
    from nablafol.data import FeatureStore
    loaded = load_model_folder(model_folder, device=device, calibrator=calibrator)
    store = FeatureStore(features_folder, expected_width=loaded.model.config.feature_dim)  # refusals name the file
    return FeaturePerception(store, loaded.model, loaded.ontology, device, loaded.calibrator)
