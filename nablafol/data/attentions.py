"""GQA's attentions files (what its evaluation script reads for grounding), and the engine's
attention turned into one.

The layout (GQA's ``eval.py``, header comment), a JSON list with one entry per question::

    object-based: [{"questionId": str, "attention": [[x0, y0, x1, y1, a], ...]}, ...]
    spatial:      [{"questionId": str, "attention": [[a, ...], ...]}, ...]     (map_size x map_size)

Boxes are corners as fractions of the image's width and height (0 to 1). A spatial map is
indexed ``[i][j]`` with ``i`` along x and ``j`` along y, as the script reads it. The two
layouts cannot always be told apart (a 5 x 5 map looks like five boxes), so readers name
the kind, as the script's ``--objectFeatures`` flag does.

The engine's attention is per object (``{object id: attention}`` in a details file, every
object and the ``scene`` pseudo-object): :func:`object_attention` places each weight on its
object's box (``scene``: the whole image) and, by default, divides by their sum, since the
score reads attention as a distribution over the image (the engine's weights are each a
probability in [0, 1] and need not sum to 1).

>>> from nablafol.data import load_scene_graphs
>>> graph = load_scene_graphs("tests/fixtures/gqa/val_sceneGraphs.json")["2354786"]
>>> regions = scene_graph_regions(graph)
>>> entry = object_attention({"3817110": 0.75, "3817112": 0.25, "scene": 0.0}, regions)
>>> [round(v, 3) for v in entry.regions[0]]
[0.38, 0.18, 0.56, 0.781, 0.75]
"""
from __future__ import annotations

import json
import math
import os
from typing import Callable, Iterable, Iterator, Mapping, NamedTuple, Union

from nablafol.data.fields import RecordChecker, json_type
from nablafol.data.files import write_question_entries
from nablafol.data.predictions import question_entries

__all__ = ["ATTENTION_KINDS", "Attention", "Box", "ObjectAttention", "SpatialAttention", "attentions_from_details",
           "feature_regions", "object_attention", "read_attentions", "scene_graph_regions", "write_attentions",
           "SCENE"]

#: The name of the scene pseudo-object in the engine's attention (its box is the whole image).
SCENE = "scene"
ATTENTION_KINDS = ("objects", "spatial")

#: ``(x0, y0, x1, y1)``, fractions of the image's width and height.
Box = tuple[float, float, float, float]
_WHOLE_IMAGE: Box = (0.0, 0.0, 1.0, 1.0)


class ObjectAttention(NamedTuple):
    """Object-based attention: ``(x0, y0, x1, y1, attention)`` per region."""

    regions: tuple[tuple[float, float, float, float, float], ...]

    def to_json(self) -> list[list[float]]:
        return [list(region) for region in self.regions]


class SpatialAttention(NamedTuple):
    """Spatial attention: a square ``map_size x map_size`` grid, ``grid[i][j]`` (i along x)."""

    grid: tuple[tuple[float, ...], ...]

    def to_json(self) -> list[list[float]]:
        return [list(row) for row in self.grid]


Attention = Union[ObjectAttention, SpatialAttention]


def scene_graph_regions(graph) -> dict[str, Box]:
    """Each object's box in a scene graph as GQA's script computes it (x / width, y / height,
    (x + w) / width, (y + h) / height), and the whole image for ``scene``."""
    regions = {obj.id: (obj.x / graph.width, obj.y / graph.height,
                        (obj.x + obj.w) / graph.width, (obj.y + obj.h) / graph.height) for obj in graph.objects}
    regions[SCENE] = _WHOLE_IMAGE
    return regions


def feature_regions(features) -> dict[str, Box]:
    """The boxes of one image's detections (:class:`nablafol.data.ObjectFeatures`), named by row
    (``"0"``, ``"1"``, ... as a run over features names objects), and the whole image for ``scene``."""
    regions = {str(row): (float(x0) / features.width, float(y0) / features.height,
                          float(x1) / features.width, float(y1) / features.height)
               for row, (x0, y0, x1, y1) in enumerate(features.boxes.tolist())}
    regions[SCENE] = _WHOLE_IMAGE
    return regions


def object_attention(attention: Mapping[str, float], regions: Mapping[str, Box], *,
                     normalize: bool = True) -> ObjectAttention:
    """The official object-based entry of one question: each object's weight on its box, in the
    attention's order; divided by the weights' sum when ``normalize`` (all zero: left as is).

    An object the regions do not have is refused (ValueError naming it): its box is unknown.
    """
    weights = []
    for object_id, weight in attention.items():
        if object_id not in regions:
            raise ValueError(f"attention names object {object_id!r}, which the image's regions lack")
        weight = float(weight)
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"attention of object {object_id!r} must be a finite number >= 0, got {weight}")
        weights.append((regions[object_id], weight))
    total = math.fsum(w for _, w in weights)
    scale = 1.0 / total if normalize and total > 0 else 1.0
    return ObjectAttention(tuple((*box, weight * scale) for box, weight in weights))


def attentions_from_details(details: Iterable, image_of: Mapping[str, str],
                            regions_of: Callable[[str], Mapping[str, Box]], *,
                            normalize: bool = True) -> Iterator[tuple[str, ObjectAttention]]:
    """``(questionId, ObjectAttention)`` for each details line that carries the engine's
    ``attention`` (:class:`nablafol.data.Details` with it in ``extra``, or any object with
    ``question_id`` and an ``attention`` attribute, as the answering loop's outcomes; others are
    passed over): ``image_of`` maps a question to its image, ``regions_of(image)`` gives that
    image's boxes (:func:`scene_graph_regions` or :func:`feature_regions`)."""
    for item in details:
        attention = getattr(item, "attention", None)
        if attention is None:
            attention = getattr(item, "extra", {}).get("attention")
        if isinstance(attention, Mapping) and attention:
            yield item.question_id, object_attention(attention, regions_of(image_of[item.question_id]),
                                                     normalize=normalize)


def write_attentions(path: str | os.PathLike,
                     attentions: Mapping[str, Attention] | Iterable[tuple[str, Attention]]) -> int:
    """Write an attentions file (one question per line, in order); returns how many were written."""
    pairs = attentions.items() if isinstance(attentions, Mapping) else attentions
    return write_question_entries(path, ((question_id, json.dumps(
        {"questionId": question_id, "attention": attention.to_json()}, allow_nan=False))
        for question_id, attention in pairs))


def read_attentions(path: str | os.PathLike, kind: str = "objects") -> dict[str, Attention]:
    """``{questionId: attention}`` of an attentions file of the given ``kind`` (``objects`` or
    ``spatial``); every number must be finite, a question id may appear once."""
    if kind not in ATTENTION_KINDS:
        raise ValueError(f"attention kind must be one of {', '.join(ATTENTION_KINDS)}, got {kind!r}")
    result: dict[str, Attention] = {}
    for question_id, value, check in question_entries(path, "attention", 'a JSON list [{"questionId", "attention"}, '
                                                                         '...]', "has two attention entries"):
        rows = _rows(check, value, kind)
        result[question_id] = ObjectAttention(rows) if kind == "objects" else SpatialAttention(rows)
    return result


def _rows(check: RecordChecker, value, kind: str) -> tuple[tuple[float, ...], ...]:
    if not isinstance(value, list):
        raise check.fail(f"attention must be a list, found {json_type(value)}")
    rows = []
    for i, row in enumerate(value):
        if not isinstance(row, list):
            raise check.fail(f"attention[{i}] must be a list, found {json_type(row)}")
        if kind == "objects" and len(row) != 5:
            raise check.fail(f"attention[{i}] must be [x0, y0, x1, y1, attention], found {len(row)} numbers")
        if kind == "spatial" and len(row) != len(value):
            raise check.fail(f"a spatial attention map must be square: {len(value)} rows, row {i} has {len(row)}")
        rows.append(tuple(float(check.number(v, f"attention[{i}][{j}]")) for j, v in enumerate(row)))
    return tuple(rows)
