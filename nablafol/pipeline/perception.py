"""Where a batch's oracle comes from: a *perception* turns a list of image ids into an oracle.

Every member the pipeline reads is declared on :class:`Perception`, with its default:

* ``has_image(image_id)``, ``oracle(image_ids)``, ``knows(predicate)``: what every perception
  must say (the oracle's scene ``b`` is ``image_ids[b]``; it names its objects with
  ``object_ids(b)`` for grounding);
* ``object_count(image_id)``: objects in the image, for batching images of like size
  (None: unknown, then images are batched by id only);
* ``ontology``: the vocabulary questions are compiled against (None: GQA's);
* ``calibrator``: a top-down calibrator the engine applies (None: none);
* ``knowledge_relations``: relations of a knowledge base that CRIC-style steps may name;
* ``refusal(predicate)``: the skip's reason and line for a question naming a predicate the
  perception does not know (a trained model: ``concept not learned: name 'unicorn'``);
* ``before_fork()``: release what must not cross a fork (open HDF5 files);
* ``read(image_ids)`` / ``oracle_of(read)``: ``oracle`` in two halves, the reading (safe to run
  in another thread, as training's :class:`~nablafol.pipeline.prefetch.Prefetch` does) and the
  binding (by default the reading is the ids themselves and ``oracle_of`` is ``oracle``);
* ``regions(image_id)``: each object's box (fractions of the image; ``scene``: the whole image),
  for writing the engine's attention as GQA's attentions file.

    >>> from nablafol.data import load_scene_graphs
    >>> perception = SceneGraphPerception(load_scene_graphs("tests/fixtures/gqa/val_sceneGraphs.json"))
    >>> image = sorted(perception.scene_graphs)[0]
    >>> perception.has_image(image), perception.object_count(image) > 0, perception.calibrator
    (True, True, None)
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from nablafol import dsl
from nablafol.ir import Predicate

__all__ = ["Perception", "SceneGraphPerception", "FeaturePerception"]


class Perception:
    """The protocol of a perception, with the defaults of its optional members."""

    ontology: Optional[dsl.Ontology] = None
    calibrator = None
    knowledge_relations: frozenset = frozenset()
    device = None

    def has_image(self, image_id: str) -> bool:
        raise NotImplementedError

    def oracle(self, image_ids: Sequence[str]):
        """An oracle over these images (scene ``b`` = ``image_ids[b]``) with ``object_ids(b)``."""
        raise NotImplementedError

    def knows(self, predicate: Predicate) -> bool:
        raise NotImplementedError

    def object_count(self, image_id: str) -> Optional[int]:
        return None

    def refusal(self, predicate: Predicate) -> tuple[str, str]:
        """``(reason, detail)`` of the skip of a question that names ``predicate``, unknown here."""
        return "unknown predicate", f"the oracle does not know {predicate.kind} {predicate.name!r}"

    def before_fork(self) -> None:
        """Release what must not cross a fork (nothing, unless a perception holds files)."""

    def read(self, image_ids: Sequence[str]):
        """What ``oracle_of`` needs of these images, read without touching the model (another
        thread may call it): ``oracle(ids)`` is ``oracle_of(read(ids))``."""
        return list(image_ids)

    def oracle_of(self, read):
        """The oracle over what ``read`` returned."""
        return self.oracle(read)

    def regions(self, image_id: str) -> dict:
        """``{object id: (x0, y0, x1, y1)}`` as fractions of the image, the objects named as the
        oracle names them."""
        raise NotImplementedError(f"{type(self).__name__} does not know where its objects are")


class SceneGraphPerception(Perception):
    """The golden oracle over GQA scene graphs (plain or probabilistic), and optionally a
    knowledge base (CRIC-style facts about classes) composed with it.

    ``scene_graphs``: image id -> :class:`~nablafol.data.SceneGraph` (a dict, or
    :class:`~nablafol.data.SceneGraphTexts`, which counts objects without reading a scene).
    """

    def __init__(self, scene_graphs: Mapping, ontology: Optional[dsl.Ontology] = None, device=None,
                 knowledge=None):
        from nablafol import graph_oracles
        self.scene_graphs, self.ontology, self.device, self.knowledge = scene_graphs, ontology, device, knowledge
        self.knowledge_relations = knowledge.relations if knowledge is not None else frozenset()
        self._graph_oracles = graph_oracles
        probes = [graph_oracles.SceneGraphOracle([], ontology=ontology)]  # answers `knows` without a scene
        if knowledge is not None:
            probes.append(graph_oracles.KnowledgeOracle(knowledge, [], ontology=ontology))
        self._probes = probes
        self._count = getattr(scene_graphs, "object_count", None)  # SceneGraphTexts: without reading the scene

    def has_image(self, image_id: str) -> bool:
        return image_id in self.scene_graphs

    def object_count(self, image_id: str) -> int:
        return self._count(image_id) if self._count is not None else len(self.scene_graphs[image_id].objects)

    def knows(self, predicate: Predicate) -> bool:
        return any(p.knows(predicate) for p in self._probes)

    def regions(self, image_id: str) -> dict:
        from nablafol.data.attentions import scene_graph_regions
        return scene_graph_regions(self.scene_graphs[image_id])

    def oracle(self, image_ids: Sequence[str]):
        oracles = self._graph_oracles
        graphs = [self.scene_graphs[i] for i in image_ids]
        scene_oracle = oracles.SceneGraphOracle(graphs, ontology=self.ontology, device=self.device)
        if self.knowledge is None:
            return scene_oracle
        kg = oracles.KnowledgeOracle.from_scene_graphs(graphs, self.knowledge, ontology=self.ontology,
                                                       device=self.device)
        return NamedObjects(oracles.CompositeOracle([scene_oracle, kg]), scene_oracle.object_ids)


class FeaturePerception(Perception):
    """A trained neural oracle over GQA object features (a :class:`~nablafol.data.FeatureStore`).

    Objects are named by their row in the image's feature file (``"0"``, ``"1"``, ...; GQA's
    features carry no object ids), the scene pseudo-object ``"scene"``. A model folder gives
    one with :func:`nablafol.pipeline.model_folder.feature_perception`.
    """

    def __init__(self, store, model, ontology: Optional[dsl.Ontology] = None, device=None, calibrator=None):
        self.store, self.model, self.device = store, model, device
        self.vocabulary = model.vocabulary
        self.ontology = ontology
        self.calibrator = calibrator

    def has_image(self, image_id: str) -> bool:
        return image_id in self.store

    def object_count(self, image_id: str) -> int:
        return self.store.object_count(image_id)

    def before_fork(self) -> None:
        """Close the HDF5 files (reopened on demand): an open HDF5 file must not cross a fork."""
        self.store.close()

    def knows(self, predicate: Predicate) -> bool:
        return self.vocabulary.knows(predicate)

    def refusal(self, predicate: Predicate) -> tuple[str, str]:
        """A concept the training data never named (the vocabulary is open): ``concept not learned: ...``."""
        return "concept not learned", self.vocabulary.not_learned(predicate)

    def regions(self, image_id: str) -> dict:
        from nablafol.data.attentions import feature_regions
        return feature_regions(self.store[image_id])

    def oracle(self, image_ids: Sequence[str]):
        return self.oracle_of(self.read(image_ids))

    def read(self, image_ids: Sequence[str]):
        """The images' :class:`~nablafol.neural.FeatureBatch`, read, decoded and on the device
        (from pinned memory, without blocking the device's work: ``FeatureBatch.to_device``)."""
        from nablafol.neural import FeatureBatch
        return FeatureBatch.from_store(self.store, list(image_ids)).to_device(self.device)

    def oracle_of(self, batch):
        counts = batch.counts.tolist()
        return FeatureObjects(self.model.bind(batch), lambda b: tuple(str(i) for i in range(counts[b])) + ("scene",),
                              list(batch.image_ids), self.store)


class NamedObjects:
    """An oracle that also names its objects (``object_ids(b)``), for grounding."""

    def __init__(self, oracle, object_ids):
        self._oracle, self.object_ids = oracle, object_ids

    def __getattr__(self, name):
        return getattr(self._oracle, name)


class FeatureObjects(NamedObjects):
    """A neural oracle's :class:`NamedObjects` whose probabilities are checked before the engine
    reads them: a NaN (features finite but so large that the network overflows, or a network
    gone non-finite) is refused naming the image and its feature file, with the features' largest
    magnitude, where the engine could only name a scene of the batch. A ProbabilityError still,
    which a training reads as its own divergence once it has taken steps."""

    def __init__(self, oracle, object_ids, image_ids: Sequence[str], store):
        super().__init__(oracle, object_ids)
        self._image_ids, self._store = image_ids, store

    def unary(self, requests):
        return self._checked(self._oracle.unary(requests), requests)

    def binary(self, requests):
        return self._checked(self._oracle.binary(requests), requests)

    def _checked(self, table, requests):
        import torch

        from nablafol.data.feature_files import FILE_PATTERN
        from nablafol.errors import ProbabilityError
        nan = torch.isnan(table)
        if not bool(nan.any()):
            return table
        image = self._image_ids[int(requests.scene[int(nan.flatten(1).any(1).nonzero()[0])])]
        store = getattr(self._store, "store", self._store)  # a FeatureMemory's own store
        file, row = store.location(image)
        largest = float(abs(store[image].features).max(initial=0.0))
        raise ProbabilityError(f"{store.folder / FILE_PATTERN.format(file)} (image {image}, row {row}): the model's "
                               f"probabilities for this image are NaN; its features reach {largest:.3g} in "
                               f"magnitude: features that large overflow the network")
