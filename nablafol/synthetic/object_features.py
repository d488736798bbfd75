"""Object features in GQA's Faster-RCNN layout, with perception made imperfect on purpose.

Each concept ``c`` (a class, an object attribute value, a location or a weather value) has a
fixed random unit *code* ``u_c`` in R^D and a *signal strength* ``s_c``. An object's feature
vector is

    f = sum_{c in concepts(object)} s_c u_c  +  k * sum_{c in context(scene)} s_c u_c  +  sigma * noise

with ``concepts(object)`` its class and attribute values, ``context(scene)`` the scene's
location and weather (every object carries a little of its scene, scaled by ``k``, so a
model can perceive the scene pseudo-object of ``select: scene`` from its objects), and
``noise`` standard normal. Categories have no code of their own: a model recovers them
through their classes. Positions have none either: they are in the boxes.

Strengths differ: log-uniform over ``strength_range``, and a ``hidden_fraction`` of the
concepts (at least one) nearly invisible (``hidden_strength``). A model over these features
therefore perceives some concepts well and others badly, in a known, controllable way:
``dataset_card.json`` lists every strength, which is what makes hard/easy splits meaningful.

Files (GQA's layout, read by :class:`nablafol.data.FeatureStore`)::

    features/gqa_objects_info.json  {imageId: {"width", "objectsNum", "idx", "height", "file": 0}}
    features/gqa_objects_0.h5       "features" (images, 100, D) float32, "bboxes" (images, 100, 4)
                                    float32 as x1, y1, x2, y2 pixels

Row ``idx`` of an image holds its objects **in scene-graph order** (the order of
``objects`` in ``*_sceneGraphs.json``), then zero padding. One file holds every split.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import h5py
import numpy as np

from nablafol.data.feature_files import FILE_PATTERN, INFO_NAME
from nablafol.data.files import write_text

from .vocabulary import LOCATIONS, Vocabulary

__all__ = ["ConceptCodes", "write_features", "object_concepts", "scene_context", "SLOTS"]

SLOTS = 100  # detections per image, as in GQA's files
_BLOCK = 256  # images written per HDF5 write


@dataclass(frozen=True)
class ConceptCodes:
    """The concepts, their unit codes ``(C, D)`` and signal strengths ``(C,)``."""

    concepts: tuple[str, ...]
    kinds: tuple[str, ...]  # "class", an attribute type, "location" or "weather"
    codes: np.ndarray
    strengths: np.ndarray

    @classmethod
    def draw(cls, vocabulary: Vocabulary, feature_dim: int, rng: np.random.Generator, *,
             strength_range: tuple[float, float] = (0.15, 3.0), hidden_fraction: float = 0.1,
             hidden_strength: float = 0.03) -> "ConceptCodes":
        """Codes and strengths for every concept of the vocabulary (deterministic given rng).
        Strengths are rounded to 4 decimals, so the card's numbers are the ones used."""
        if feature_dim < 2:
            raise ValueError(f"feature_dim must be at least 2, got {feature_dim}")
        low, high = strength_range
        if not 0 < low <= high:
            raise ValueError(f"strength_range must be 0 < low <= high, got {strength_range}")
        concepts, kinds = [], []
        for name in vocabulary.classes:
            concepts.append(name), kinds.append("class")
        for type_name, values in vocabulary.attributes.items():
            for value in values:
                concepts.append(value), kinds.append(type_name)
        for value in LOCATIONS:
            concepts.append(value), kinds.append("location")
        for value in vocabulary.weathers:
            concepts.append(value), kinds.append("weather")
        codes = rng.standard_normal((len(concepts), feature_dim))
        codes /= np.linalg.norm(codes, axis=1, keepdims=True)
        strengths = np.exp(rng.uniform(math.log(low), math.log(high), size=len(concepts)))
        n_hidden = max(1, int(round(hidden_fraction * len(concepts)))) if hidden_fraction > 0 else 0
        hidden = rng.choice(len(concepts), size=n_hidden, replace=False)
        strengths[hidden] = hidden_strength
        return cls(tuple(concepts), tuple(kinds), codes.astype(np.float32), np.round(strengths, 4))

    @property
    def index(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.concepts)}

    def strength(self, concept: str) -> float:
        return float(self.strengths[self.index[concept]])

    def hidden(self, threshold: float = 0.1) -> list[str]:
        """The concepts at most ``threshold`` strong (the nearly invisible ones)."""
        return [c for c, s in zip(self.concepts, self.strengths) if s <= threshold]

    def signal(self, concepts: Sequence[str]) -> np.ndarray:
        """``sum_c s_c u_c`` (D,) of a list of concepts (unknown ones are ignored)."""
        index = self.index
        rows = [index[c] for c in concepts if c in index]
        if not rows:
            return np.zeros(self.codes.shape[1], dtype=np.float64)
        return (self.strengths[rows, None] * self.codes[rows].astype(np.float64)).sum(axis=0)

    def to_json(self) -> dict:
        return {c: {"kind": k, "strength": float(s)} for c, k, s in zip(self.concepts, self.kinds, self.strengths)}


def object_concepts(obj) -> list[str]:
    """What an object shows: its class and its attribute values."""
    return [obj.name, *obj.attributes]


def scene_context(graph) -> list[str]:
    """What every object of a scene carries a little of: its location and weather."""
    return [v for v in (graph.location, graph.weather) if v is not None]


def image_features(graph, codes: ConceptCodes, rng: np.random.Generator, noise_std: float,
                   context_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """``(features (n, D), boxes (n, 4) as x1, y1, x2, y2)`` of one scene, objects in order."""
    context = context_scale * codes.signal(scene_context(graph))
    n, dim = len(graph.objects), codes.codes.shape[1]
    features = np.empty((n, dim), dtype=np.float64)
    boxes = np.empty((n, 4), dtype=np.float32)
    for i, obj in enumerate(graph.objects):
        features[i] = codes.signal(object_concepts(obj)) + context
        boxes[i] = (obj.x, obj.y, obj.x + obj.w, obj.y + obj.h)
    features += noise_std * rng.standard_normal((n, dim))
    return features.astype(np.float32), boxes


def write_features(folder, graphs: Sequence, codes: ConceptCodes, rng: np.random.Generator, *,
                   noise_std: float = 0.5, context_scale: float = 0.5,
                   progress: Callable[[int], None] | None = None) -> list[Path]:
    """Write ``gqa_objects_info.json`` and ``gqa_objects_0.h5`` for ``graphs`` (row k is
    ``graphs[k]``); byte-identical for identical inputs. Returns the paths written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    dim = codes.codes.shape[1]
    h5_path, info_path = folder / FILE_PATTERN.format(0), folder / INFO_NAME
    info = {}
    with h5py.File(h5_path, "w", libver="earliest", track_order=False) as handle:
        shape = (len(graphs), SLOTS)
        chunks = (1, SLOTS, dim) if graphs else None
        features = handle.create_dataset("features", shape=shape + (dim,), dtype="float32", chunks=chunks,
                                         compression="gzip", compression_opts=4, shuffle=True, track_times=False)
        bboxes = handle.create_dataset("bboxes", shape=shape + (4,), dtype="float32",
                                       chunks=(1, SLOTS, 4) if graphs else None,
                                       compression="gzip", compression_opts=4, shuffle=True, track_times=False)
        for start in range(0, len(graphs), _BLOCK):
            block = graphs[start:start + _BLOCK]
            f_block = np.zeros((len(block), SLOTS, dim), dtype=np.float32)
            b_block = np.zeros((len(block), SLOTS, 4), dtype=np.float32)
            for k, graph in enumerate(block):
                if len(graph.objects) > SLOTS:
                    raise ValueError(f"image {graph.image_id} has {len(graph.objects)} objects; at most {SLOTS} fit")
                f, b = image_features(graph, codes, rng, noise_std, context_scale)
                f_block[k, :len(f)], b_block[k, :len(b)] = f, b
                info[graph.image_id] = {"width": graph.width, "objectsNum": len(graph.objects),
                                        "idx": start + k, "height": graph.height, "file": 0}
            features[start:start + len(block)] = f_block
            bboxes[start:start + len(block)] = b_block
            if progress is not None:
                progress(len(block))
    write_text(info_path, json.dumps(info, indent=1) + "\n")
    return [info_path, h5_path]
