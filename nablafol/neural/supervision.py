"""Supervision from scene graphs: an oracle taught every concept a golden oracle knows.

GQA publishes the scene graphs of its train split: each object's name and attributes, each
pair's relations. The golden oracle (:class:`~nablafol.graph_oracles.SceneGraphOracle`)
turns a graph into the same tables the engine asks a perception for, under the same
contract (categories through the hierarchy, positions and comparatives from the boxes,
``same TYPE`` from the values). Supervised training of a visual oracle is then one loss:
for every concept of the oracle's vocabulary that the golden oracle also knows, the binary
cross-entropy between the oracle's table and the golden table, over every entry the oracle
leaves open (real objects, the scene pseudo-object for scene-level concepts, pairs of two
different objects)::

    L = mean_unary BCE(α(π | x_i), α*(π | x_i)) + mean_binary BCE(α(π | x_i, y_j), α*(π | x_i, y_j))

Golden values may be soft (a probabilistic scene graph): the target is the probability.

Detections and graph objects are different lists on real GQA: :func:`align_objects` pairs
each detection with the graph object its box overlaps most (IoU at least ``min_iou``, each
graph object used once, the best overlaps first); a detection without a partner teaches
nothing. On the embedded dataset the feature rows *are* the graph's objects, in order.

    >>> import numpy as np
    >>> from nablafol.data import SceneObject
    >>> objects = [SceneObject("a", {"cup": 1.0}, 0, 0, 10, 10), SceneObject("b", {"dog": 1.0}, 50, 50, 20, 20)]
    >>> align_objects(np.array([[51, 50, 70, 71], [0, 0, 10, 10], [200, 0, 210, 5]], np.float32), objects).tolist()
    [1, 0, -1]
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from nablafol.ir import Predicate
from nablafol.numerics import log1mexp
from nablafol.oracle import Requests

__all__ = ["concept_predicates", "align_objects", "label_loss", "concept_counts", "SceneGraphTeacher", "LOG_FLOOR"]

LOG_FLOOR = -100.0  # an exact 0 in a log table counts as this much (the answer loss's floor too)


def concept_predicates(vocabulary, knows) -> tuple[tuple[Predicate, ...], tuple[Predicate, ...]]:
    """The unary and the binary predicates of ``vocabulary``'s rows that ``knows(predicate)``
    accepts (what both the oracle and the golden oracle can answer). ``scene`` is left out:
    the oracle answers it by rule."""
    unary = tuple(Predicate(name, 1, kind) for kind, name in vocabulary.unary
                  if kind != "scene" and knows(Predicate(name, 1, kind)))
    binary = tuple(Predicate(name, 2, kind) for kind, name in vocabulary.binary if knows(Predicate(name, 2, kind)))
    return unary, binary


def align_objects(boxes: np.ndarray, objects: Sequence, min_iou: float = 0.5) -> np.ndarray:
    """``(n,)`` int64: for each detection box (x1, y1, x2, y2 pixels) the index of its graph
    object (``x, y, w, h``), or -1. Greedy on IoU, best pairs first, one partner each."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    out = np.full(len(boxes), -1, dtype=np.int64)
    if not len(boxes) or not len(objects):
        return out
    graph = np.array([[o.x, o.y, o.x + o.w, o.y + o.h] for o in objects], dtype=np.float64)
    if len(graph) == len(boxes) and np.allclose(graph, boxes, atol=0.5):
        return np.arange(len(boxes), dtype=np.int64)  # the embedded dataset: rows are the objects
    lo, hi = np.maximum(boxes[:, None, :2], graph[None, :, :2]), np.minimum(boxes[:, None, 2:], graph[None, :, 2:])
    inter = np.clip(hi - lo, 0, None).prod(-1)
    area = lambda b: np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None)
    iou = inter / np.maximum(area(boxes)[:, None] + area(graph)[None, :] - inter, 1e-9)
    taken = np.zeros(len(graph), dtype=bool)
    for flat in np.argsort(-iou, axis=None, kind="stable"):
        d, g = divmod(int(flat), len(graph))
        if iou[d, g] < min_iou:
            break
        if out[d] < 0 and not taken[g]:
            out[d], taken[g] = g, True
    return out


def _aligned(teacher: torch.Tensor, index: torch.Tensor, dims: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The teacher's table ``(R, Nt[, Nt])`` read at the student's columns ``index`` ``(R, Ns)``
    (-1: unknown); returns the table ``(R, Ns[, Ns])`` and where it is known."""
    known = index >= 0
    safe = index.clamp(min=0)
    table = teacher.gather(1, safe[:, :, None].expand(-1, -1, teacher.shape[2]) if dims == 2 else safe)
    if dims == 2:
        table = table.gather(2, safe[:, None, :].expand(-1, table.shape[1], -1))
        known = known[:, :, None] & known[:, None, :]
    return table, known


def _bce(student: torch.Tensor, target: torch.Tensor, where: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Summed binary cross-entropy of log-probabilities ``student`` against probabilities
    ``target`` at ``where``, and the number of entries."""
    where = where & torch.isfinite(student)  # -inf: a structural zero the oracle fixes by rule
    log_p = student.masked_fill(~where, -1.0)
    log_q = log1mexp(log_p).clamp(min=LOG_FLOOR)
    ll = target * log_p.clamp(min=LOG_FLOOR) + (1 - target) * log_q
    return -(ll * where).sum(), int(where.sum())


def label_loss(student, teacher, scenes: int, unary: Sequence[Predicate], binary: Sequence[Predicate],
               columns: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """The supervised loss of ``student`` (any oracle) against ``teacher`` (a golden oracle)
    on ``scenes`` scenes: mean BCE over the unary entries plus mean BCE over the binary ones.

    ``columns`` ``(scenes, Ns)`` int64: for each of the student's columns (objects, then the
    scene pseudo-object) the teacher's column, -1 where unknown. Returns the loss and the
    entry counts."""
    total = torch.zeros((), device=columns.device)
    counts = {}
    for arity, _, student_table, target, known in _tables(student, teacher, scenes, unary, binary, columns):
        loss, n = _bce(student_table, target, known)
        counts["unary" if arity == 1 else "binary"] = n
        total = total + loss / max(n, 1)
    return total, counts


def _tables(student, teacher, scenes: int, unary, binary, columns: torch.Tensor):
    """For each arity with predicates: ``(arity, predicates, student log table, golden
    probabilities at the student's entries, where they are known)``."""
    for arity, predicates in ((1, unary), (2, binary)):
        if not predicates:
            continue
        k = len(predicates)
        requests = Requests(torch.arange(scenes, device=columns.device).repeat_interleave(k),
                            torch.arange(k, device=columns.device).repeat(scenes), tuple(predicates))
        ask = "unary" if arity == 1 else "binary"
        student_table = getattr(student, ask)(requests)
        teacher_table = getattr(teacher, ask)(requests).to(student_table.device)
        index = columns.repeat_interleave(k, dim=0)[:, : student_table.shape[1]]
        target, known = _aligned(teacher_table.exp(), index, arity)
        yield arity, predicates, student_table, target.to(student_table.dtype), known


def concept_counts(student, teacher, scenes: int, unary: Sequence[Predicate], binary: Sequence[Predicate],
                   columns: torch.Tensor) -> dict:
    """Per concept (its kind and name), how ``student`` decides at 0.5 where ``teacher`` is known:
    ``[entries, right, positives, positives found]`` (a golden probability at least 0.5 is a
    positive), over the same entries as :func:`label_loss`."""
    out = {}
    for arity, predicates, student_table, target, known in _tables(student, teacher, scenes, unary, binary, columns):
        where = known & torch.isfinite(student_table)
        said, truth = student_table >= np.log(0.5), target >= 0.5
        k = len(predicates)
        per = lambda t: (t & where).reshape(scenes, k, -1).sum((0, 2))
        for p, counts in zip(predicates, zip(*(per(t).tolist() for t in
                                               (where, said == truth, truth, said & truth)))):
            out[(p.kind, p.name)] = list(counts)
    return out


class SceneGraphTeacher:
    """The golden tables of a batch of images, read at a student's columns.

    ``graphs``: image id -> :class:`~nablafol.data.SceneGraph` (a dict or
    :class:`~nablafol.data.SceneGraphTexts`); ``vocabulary``: the student's
    :class:`~nablafol.neural.ConceptVocabulary`; ``ontology``: the graphs' vocabulary.
    :meth:`loss` is :func:`label_loss` for a student bound to a
    :class:`~nablafol.neural.FeatureBatch` of those images.
    """

    def __init__(self, graphs, vocabulary, ontology=None, min_iou: float = 0.5):
        from nablafol.graph_oracles import SceneGraphOracle
        self.graphs, self.ontology, self.min_iou = graphs, ontology, min_iou
        self._oracle = SceneGraphOracle
        probe = SceneGraphOracle([], ontology=ontology)
        self.unary, self.binary = concept_predicates(vocabulary, lambda p: probe.knows(p) and vocabulary.knows(p))

    def has_image(self, image_id: str) -> bool:
        return image_id in self.graphs

    def columns(self, batch) -> tuple[list, torch.Tensor]:
        """The batch's graphs and, per scene, the graph column of each of the student's
        columns ``(B, max(counts) + 1)`` (objects, then the pseudo-object; -1: unknown)."""
        graphs = [self.graphs[i] for i in batch.image_ids]
        counts = batch.counts.tolist()
        out = np.full((len(graphs), max(counts) + 1), -1, dtype=np.int64)
        boxes = batch.boxes.detach().cpu().numpy()
        for b, (graph, n) in enumerate(zip(graphs, counts)):
            out[b, :n] = align_objects(boxes[b, :n], graph.objects, self.min_iou)
            out[b, n] = len(graph.objects)  # the scene pseudo-objects correspond
        return graphs, torch.as_tensor(out, device=batch.device)

    def concept_counts(self, student, batch) -> dict:
        """:func:`concept_counts` of ``student`` (an oracle over ``batch``) against these images' graphs."""
        graphs, columns = self.columns(batch)
        return concept_counts(student, self._oracle(graphs, ontology=self.ontology), len(graphs), self.unary,
                              self.binary, columns.to(getattr(student, "device", columns.device)))

    def loss(self, student, batch) -> tuple[torch.Tensor, dict]:
        """:func:`label_loss` of ``student`` (an oracle over ``batch``) against these images' graphs."""
        if batch.image_ids is None:
            raise ValueError("SceneGraphTeacher.loss needs a FeatureBatch that names its images")
        graphs, columns = self.columns(batch)
        teacher = self._oracle(graphs, ontology=self.ontology)
        return label_loss(student, teacher, len(graphs), self.unary, self.binary, columns.to(getattr(student, "device", columns.device)))
