"""Commonsense knowledge as predicates: what a :class:`KnowledgeBase` says of an object's class.

Predicates have ``kind="kg"``:

* unary ``RELATION:TAIL`` (``Predicate("CapableOf:lift food", kind="kg")``): true of an object
  whose class has the fact. A triple ``(head, RELATION, TAIL, c)`` gives the fact, with
  confidence ``c``, to ``head`` and to every class under ``head`` when ``head`` is a category
  (``utensil AtLocation kitchen`` holds for forks). With ``p_X`` the object's class
  probabilities (exclusive classes) and ``c(l)`` the most confident triple giving the fact
  to class ``l``::

      P(RELATION:TAIL (X)) = min(1, Σ_l p_X(l) · c(l))

* binary ``RELATION:PHRASE`` (or just ``RELATION``) (``Predicate("CapableOf:lift", 2, "kg")``):
  ``X`` has the fact about ``Y``'s class. A tail ending in a vocabulary name (``lift food``:
  phrase ``lift``, name ``food``; ``living room``: no phrase) relates the head's classes to
  the classes under that name::

      P(RELATION:PHRASE (X, Y)) = min(1, Σ_{l, m} p_X(l) p_Y(m) · c(l, m)),  0 when X = Y

  so "what tableware can lift the object on the plate?" asks ``CapableOf:lift(X, Y)``.

A fact or relation no triple states is unknown (:class:`~nablafol.errors.UnknownPredicateError`);
a known one is false of every class the knowledge base does not give it to (CRIC's
closed world). Objects come from scene graphs (:meth:`KnowledgeOracle.from_scene_graphs`,
which adds the scene pseudo-object of :class:`~nablafol.graph_oracles.SceneGraphOracle`, of no
class) or from any ``{class: p}`` per object. Class names are raw strings normalized by the
ontology, as are heads and tail names of the knowledge base.

    >>> from nablafol.ir import Predicate
    >>> from nablafol.oracle import Requests
    >>> kb = KnowledgeBase([Triple("utensil", "CapableOf", "lift food"), Triple("knife", "CapableOf", "cut food")])
    >>> oracle = KnowledgeOracle(kb, [[{"fork": 1.0}, {"knife": 0.5, "cake": 0.5}, {"cake": 1.0}]])
    >>> oracle.unary(Requests.build([0], [Predicate("CapableOf:cut food", kind="kg")])).exp()
    tensor([[0.0000, 0.5000, 0.0000]])
    >>> oracle.binary(Requests.build([0], [Predicate("CapableOf:lift", 2, "kg")])).exp()[0]
    tensor([[0.0000, 0.5000, 1.0000],
            [0.0000, 0.0000, 0.5000],
            [0.0000, 0.0000, 0.0000]])
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import torch

from ..errors import UnknownPredicateError
from ..ir import Predicate
from ..numerics import safe_log
from ..oracle import Requests
from .fact_tables import expand_ranges
from .knowledge_base import KnowledgeBase, Triple  # noqa: F401  (Triple: used by the doctests)
from .scene_graph import checked_scenes, default_ontology, int64_numpy

__all__ = ["KnowledgeOracle", "KIND", "canonical_name", "split_tail"]

KIND = "kg"


def canonical_name(name: str) -> str:
    """``"CapableOf : lift  food"`` -> ``"CapableOf:lift food"`` (how predicates are matched)."""
    relation, colon, rest = name.partition(":")
    return f"{relation.strip()}:{' '.join(rest.split())}" if colon else relation.strip()


def split_tail(tail: str, ontology) -> tuple[str, str] | None:
    """``(phrase, name)`` where ``name`` is the longest trailing run of words the vocabulary
    knows as a class or category (normalized); None when the tail ends in no name.

    >>> from nablafol.dsl import Ontology
    >>> split_tail("lift food", Ontology.gqa()), split_tail("living room", Ontology.gqa())
    (('lift', 'food'), ('', 'living room'))
    """
    words = tail.split()
    for k in range(len(words)):
        name = ontology.normalize(" ".join(words[k:]))
        if ontology.is_name(name):
            return " ".join(words[:k]), name
    return None


class KnowledgeOracle:
    """``kg`` predicates over a batch of scenes (see the module docstring).

    ``objects[b][i]`` is object ``i`` of scene ``b`` as ``{class name: probability}`` (an
    empty dict for an object of no class, like the scene pseudo-object).
    """

    def __init__(self, knowledge: KnowledgeBase, objects: Sequence[Sequence[Mapping[str, float]]],
                 ontology=None, device=None):
        self.knowledge = knowledge
        self.ontology = ontology if ontology is not None else default_ontology()
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        sizes = [len(scene) for scene in objects]
        self._num_objects = torch.as_tensor(sizes, dtype=torch.long, device=self.device)
        self._n = max(sizes, default=0)
        self._labels: dict[str, int] = {}
        self._index_knowledge()
        self._index_objects(objects)

    @classmethod
    def from_scene_graphs(cls, graphs: Sequence, knowledge: KnowledgeBase, ontology=None,
                          device=None) -> "KnowledgeOracle":
        """Objects of each graph in file order, then the scene pseudo-object (no class): the
        same scenes as :class:`~nablafol.graph_oracles.SceneGraphOracle` over ``graphs``."""
        objects = [[dict(obj.names) for obj in g.objects] + [{}] for g in graphs]
        return cls(knowledge, objects, ontology, device)

    # ------------------------------------------------------------------ construction
    def _label(self, name: str) -> int:
        return self._labels.setdefault(name, len(self._labels))

    def _under(self, name: str) -> list[int]:
        """Label ids of ``name`` and, for a category, of its classes."""
        form = self.ontology.normalize(name)
        names = self.ontology.classes_under(form) | {form} if self.ontology.is_name(form) else {form}
        return [self._label(n) for n in sorted(names)]

    def _index_knowledge(self) -> None:
        unary: dict[tuple[int, int], float] = {}  # (fact, label) -> confidence
        binary: dict[tuple[int, int, int], float] = {}  # (relation, label, label) -> confidence
        self.facts: dict[str, int] = {}
        self.relations: dict[str, int] = {}
        for t in self.knowledge:
            heads = self._under(t.head)
            f = self.facts.setdefault(canonical_name(t.fact), len(self.facts))
            for label in heads:
                unary[(f, label)] = max(unary.get((f, label), 0.0), t.confidence)
            split = split_tail(t.tail, self.ontology)
            if split is not None:
                phrase, name = split
                q = self.relations.setdefault(canonical_name(f"{t.relation}:{phrase}" if phrase else t.relation),
                                              len(self.relations))
                for label in heads:
                    for other in self._under(name):
                        key = (q, label, other)
                        binary[key] = max(binary.get(key, 0.0), t.confidence)
        n_labels = max(1, len(self._labels))
        self._n_labels = n_labels

        def sorted_table(entries, key_of):
            keys = np.array([key_of(k) for k in entries], dtype=np.int64)
            conf = np.array(list(entries.values()), dtype=np.float64)
            order = np.argsort(keys)
            return keys[order], conf[order]

        self._unary_keys, self._unary_conf = sorted_table(unary, lambda k: k[0] * n_labels + k[1])
        self._binary_keys, self._binary_conf = sorted_table(
            binary, lambda k: (k[0] * n_labels + k[1]) * n_labels + k[2])

    def _index_objects(self, objects) -> None:
        scene, obj, label, prob = [], [], [], []
        cache: dict[str, int | None] = {}
        for b, members in enumerate(objects):
            for i, names in enumerate(members):
                for raw, p in names.items():
                    if raw not in cache:
                        cache[raw] = self._labels.get(self.ontology.normalize(raw))
                    lid = cache[raw]
                    if lid is not None and p > 0:  # a class no triple mentions cannot matter
                        scene.append(b), obj.append(i), label.append(lid), prob.append(float(p))
        order = np.lexsort((np.array(obj, dtype=np.int64), np.array(scene, dtype=np.int64)))
        self._entry_scene = np.array(scene, dtype=np.int64)[order]
        self._entry_obj = np.array(obj, dtype=np.int64)[order]
        self._entry_label = np.array(label, dtype=np.int64)[order]
        self._entry_prob = np.array(prob, dtype=np.float64)[order]
        scenes = np.arange(len(objects))
        self._start = np.searchsorted(self._entry_scene, scenes, side="left")
        self._end = np.searchsorted(self._entry_scene, scenes, side="right")

    # ------------------------------------------------------------------ the oracle protocol
    @property
    def num_objects(self) -> torch.Tensor:
        return self._num_objects

    @property
    def pads_with_zeros(self) -> bool:
        """Every answer is ``-inf`` (an exact 0) past a scene's own objects: facts are written of
        the entries of real objects only. Not promised for a subclass, which may change the tables."""
        return type(self) is KnowledgeOracle

    def knows(self, predicate: Predicate) -> bool:
        if predicate.kind != KIND:
            return False
        table = self.facts if predicate.arity == 1 else self.relations
        return canonical_name(predicate.name) in table

    def unary(self, requests: Requests) -> torch.Tensor:
        """``(R, N)`` log-probabilities of ``RELATION:TAIL`` facts."""
        ids = np.array([self._require(p, 1, self.facts) for p in requests.predicates], dtype=np.int64)
        scene = checked_scenes(requests, len(self._start), "KnowledgeOracle")
        pred = int64_numpy(requests.predicate)
        rows, entry = expand_ranges(self._start[scene], self._end[scene])
        key = ids[pred[rows]] * self._n_labels + self._entry_label[entry]
        conf, hit = _lookup(self._unary_keys, self._unary_conf, key)
        out = torch.zeros((len(scene), self._n), dtype=torch.float64)
        out.index_put_((torch.from_numpy(rows[hit]), torch.from_numpy(self._entry_obj[entry[hit]])),
                       torch.from_numpy(self._entry_prob[entry[hit]] * conf), accumulate=True)
        return safe_log(out.clamp_(max=1.0).to(torch.get_default_dtype())).to(self.device)

    def binary(self, requests: Requests) -> torch.Tensor:
        """``(R, N, N)`` log-probabilities of ``RELATION:PHRASE`` between two objects' classes."""
        ids = np.array([self._require(p, 2, self.relations) for p in requests.predicates], dtype=np.int64)
        scene = checked_scenes(requests, len(self._start), "KnowledgeOracle")
        pred = int64_numpy(requests.predicate)
        rows, first = expand_ranges(self._start[scene], self._end[scene])  # X's (object, class) entries
        pair, second = expand_ranges(self._start[scene[rows]], self._end[scene[rows]])  # ... times Y's
        rows, first = rows[pair], first[pair]
        distinct = self._entry_obj[first] != self._entry_obj[second]
        rows, first, second = rows[distinct], first[distinct], second[distinct]
        n_labels = self._n_labels
        key = (ids[pred[rows]] * n_labels + self._entry_label[first]) * n_labels + self._entry_label[second]
        conf, hit = _lookup(self._binary_keys, self._binary_conf, key)
        out = torch.zeros((len(scene), self._n, self._n), dtype=torch.float64)
        value = self._entry_prob[first[hit]] * self._entry_prob[second[hit]] * conf
        out.index_put_((torch.from_numpy(rows[hit]), torch.from_numpy(self._entry_obj[first[hit]]),
                        torch.from_numpy(self._entry_obj[second[hit]])), torch.from_numpy(value), accumulate=True)
        return safe_log(out.clamp_(max=1.0).to(torch.get_default_dtype())).to(self.device)

    def _require(self, predicate: Predicate, arity: int, table: Mapping[str, int]) -> int:
        if predicate.kind == KIND and predicate.arity == arity:
            found = table.get(canonical_name(predicate.name))
            if found is not None:
                return found
        if predicate.kind != KIND:
            why = f"the knowledge oracle answers kind {KIND!r} only"
        elif arity == 1:
            why = "no triple of the knowledge base states it (unary kg predicates are 'RELATION:TAIL')"
        else:
            why = "no triple relates two classes that way (binary kg predicates are 'RELATION:PHRASE')"
        raise UnknownPredicateError(f"KnowledgeOracle: unknown predicate {predicate.name!r} "
                                    f"(kind {predicate.kind!r}, arity {predicate.arity}): {why}")

    def __repr__(self) -> str:
        return (f"KnowledgeOracle({len(self.knowledge)} triples, {len(self._num_objects)} scenes, "
                f"{len(self.facts)} facts, {len(self.relations)} relations)")


def _lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(values of the wanted keys found, mask of found)``; keys sorted and unique."""
    if not len(keys):
        return np.zeros(0), np.zeros(len(wanted), dtype=bool)
    pos = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    hit = keys[pos] == wanted
    return values[pos[hit]], hit
