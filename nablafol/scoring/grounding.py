"""GQA's grounding score: how much of a model's attention falls on the question's annotated regions.

The definition of GQA's ``eval.py`` (``computeGroundingScore``), for one question:

    regions = boxes of the objects annotated in the question, then in the full answer
              (repeats kept), plus the whole image when a step has a key named ``scene``
    cells   = object-based: each ``(box, a)`` of the attention entry;
              spatial: cell ``(i/m, j/m, (i+1)/m, (j+1)/m)`` with weight ``map[i][j]``, m the map size
    score   = Σ_region Σ_cell a · |cell ∩ region| / |cell|

Boxes are ``(x0, y0, x1, y1)`` fractions of the image (an object's ``x / width``, ``y / height``,
``(x + w) / width``, ``(y + h) / height``). The question's score is averaged over the balanced
questions (:class:`nablafol.scoring.Scorer`). Differences, each where the script cannot run:
a cell of zero area adds 0 (the script divides by zero); the object-based branch reads the
entry's boxes (the script names an undefined variable there, so its intent is taken).

>>> from types import SimpleNamespace as Q
>>> from nablafol.data import load_scene_graphs
>>> from nablafol.data.attentions import ObjectAttention, SpatialAttention
>>> graph = load_scene_graphs("tests/fixtures/gqa/val_sceneGraphs.json")["2354786"]
>>> q = Q(id="1", annotations={"question": {"2": "3817110"}, "fullAnswer": {}}, semantic=[])
>>> grounding_score(q, graph, ObjectAttention(((0.0, 0.0, 1.0, 1.0, 1.0),)))  # the man's share of the image
0.1081...
>>> grounding_score(q, graph, SpatialAttention(((0.5, 0.0), (0.5, 0.0))))  # only the top half attended
0.1151...
"""
from __future__ import annotations

from nablafol.data.attentions import Attention, Box, ObjectAttention, SpatialAttention
from nablafol.scoring.questions import ScorableQuestion, ScoringError, annotated_objects, refers_to_scene

__all__ = ["grounding_score", "attention_cells", "intersection_rate"]

_WHOLE_IMAGE: Box = (0, 0, 1, 1)


def _overlap(low_a: float, high_a: float, low_b: float, high_b: float) -> float:
    low, high = max(low_a, low_b), min(high_a, high_b)
    return float(high - low) if high > low else 0


def intersection_rate(cell: Box, region: Box) -> float:
    """The share of ``cell``'s area inside ``region`` (0 for a cell of zero area)."""
    area = float(cell[2] - cell[0]) * float(cell[3] - cell[1])
    if area == 0:
        return 0.0
    inside = _overlap(cell[0], cell[2], region[0], region[2]) * _overlap(cell[1], cell[3], region[1], region[3])
    return float(inside) / area


def attention_cells(attention: Attention) -> list[tuple[Box, float]]:
    """``(box, weight)`` of every cell of an attention entry, in the script's order."""
    if isinstance(attention, ObjectAttention):
        return [((x0, y0, x1, y1), a) for x0, y0, x1, y1, a in attention.regions]
    if isinstance(attention, SpatialAttention):
        size = len(attention.grid)
        edge = 1.0 / size if size else 0.0
        return [((edge * i, edge * j, edge * (i + 1), edge * (j + 1)), attention.grid[i][j])
                for i in range(size) for j in range(size)]
    raise ScoringError(f"an attention entry is ObjectAttention or SpatialAttention, got {type(attention).__name__}")


def _region(graph, object_id: str, question_id: str) -> Box:
    obj = graph.find(object_id)
    if obj is None:
        raise ScoringError(f"question {question_id!r}: annotated object {object_id!r} is not in the scene graph "
                           f"of image {graph.image_id!r}")
    return (obj.x / graph.width, obj.y / graph.height, (obj.x + obj.w) / graph.width, (obj.y + obj.h) / graph.height)


def grounding_score(question: ScorableQuestion, graph, attention: Attention) -> float:
    """The grounding score of one question given its image's scene graph and the model's attention."""
    regions = [_region(graph, object_id, question.id) for object_id in annotated_objects(question)]
    if refers_to_scene(question):
        regions.append(_WHOLE_IMAGE)
    cells = attention_cells(attention)
    return sum(weight * intersection_rate(cell, region) for region in regions for cell, weight in cells)
