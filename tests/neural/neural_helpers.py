"""Shared helpers of the neural-oracle tests: a tiny ontology, small models, random images."""
from __future__ import annotations

import numpy as np
import torch

from nablafol.dsl import Ontology
from nablafol.data import ObjectFeatures
from nablafol.ir import Predicate
from nablafol.neural import ConceptVocabulary, FeatureBatch, NeuralOracleModel

FEATURE_DIM = 6
SMALL = dict(hidden_dim=16, embedding_dim=8, projection_dim=6, pair_hidden_dim=10)

# A vocabulary in GQA's format, small enough to read: `food` is a category and a class,
# `furniture` a category only, `chair` a class with nothing under it.
TINY_ONTOLOGY = Ontology(
    {"furniture": ["chair", "table"], "food": ["food", "apple", "pizza"], "place": ["kitchen", "beach"]},
    {"color": ["red", "blue", "white"], "weather": ["sunny", "cloudy"], "location": ["indoors", "outdoors"],
     "place": ["kitchen", "beach"], "hposition": ["left", "middle", "right"], "vposition": ["top", "middle", "bottom"]},
    ["on", "to the left of", "holding"],
    scene_types=("location", "weather", "place"),
)


def P(name: str, kind: str, arity: int = 1) -> Predicate:
    return Predicate(name, arity, kind)


RED, CHAIR, FOOD_NAME, SUNNY, SCENE = P("red", "attr"), P("chair", "name"), P("food", "name"), P("sunny", "attr"), \
    P("scene", "scene")
ON, LARGER, SAME_COLOR = P("on", "rel", 2), P("larger", "compare", 2), P("color", "same", 2)


def tiny_vocabulary() -> ConceptVocabulary:
    return ConceptVocabulary.from_ontology(TINY_ONTOLOGY)


def small_model(seed: int = 0, vocabulary: ConceptVocabulary | None = None, **sizes) -> NeuralOracleModel:
    torch.manual_seed(seed)
    model = NeuralOracleModel.for_vocabulary(vocabulary or tiny_vocabulary(), FEATURE_DIM, **{**SMALL, **sizes})
    return model.eval()


def random_image(n: int, rng: np.random.Generator, width: float = 640, height: float = 480) -> ObjectFeatures:
    """``n`` detections with random features and valid boxes inside the image."""
    x1 = rng.uniform(0, width * 0.8, n)
    y1 = rng.uniform(0, height * 0.8, n)
    x2 = x1 + rng.uniform(1, width * 0.2, n)
    y2 = y1 + rng.uniform(1, height * 0.2, n)
    boxes = np.stack([x1, y1, x2, y2], axis=1).astype(np.float32)
    return ObjectFeatures(rng.normal(size=(n, FEATURE_DIM)).astype(np.float32), boxes, width, height)


def random_batch(sizes, seed: int = 0) -> FeatureBatch:
    rng = np.random.default_rng(seed)
    return FeatureBatch.from_objects([random_image(n, rng) for n in sizes])
