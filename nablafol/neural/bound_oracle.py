"""The neural oracle bound to one batch of scenes: what the engine queries.

Scene ``b`` has its ``counts[b]`` detected objects, then **one scene pseudo-object** at
column ``counts[b]`` (as in :class:`~nablafol.graph_oracles.SceneGraphOracle`, so the same compiled
programs run on both); ``num_objects = counts + 1``. Answers are log-probabilities padded
to ``N = max(counts) + 1``:

| column | unary ``π`` | binary ``π(i, j)`` |
| --- | --- | --- |
| object ``i < counts[b]`` | ``logsigmoid`` of the object logit; ``-inf`` for ``scene`` | ``logsigmoid`` of the pair logit, ``-inf`` on ``i = j`` |
| pseudo-object | ``0`` (certain) for ``scene``; the scene logit for scene-level concepts; ``-inf`` otherwise | ``-inf`` (no relation) |
| padding | ``-inf`` | ``-inf`` |

Each call maps the distinct predicates to rows once, encodes the batch once (cached for
the oracle's life: one forward per batch), and answers all requests with a few tensor ops.

    >>> import numpy as np, torch
    >>> from nablafol.dsl import Ontology
    >>> from nablafol.data import ObjectFeatures
    >>> from nablafol.ir import Predicate
    >>> from nablafol.oracle import Requests
    >>> from nablafol.neural import ConceptVocabulary, FeatureBatch, NeuralOracleModel
    >>> model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(Ontology.gqa()), feature_dim=4,
    ...                                          hidden_dim=8, embedding_dim=8, projection_dim=4, pair_hidden_dim=4)
    >>> scene = ObjectFeatures(np.ones((2, 4), np.float32), np.array([[0, 0, 5, 5], [5, 5, 9, 9]], np.float32), 10, 10)
    >>> oracle = model.eval().bind(FeatureBatch.from_objects([scene]))
    >>> oracle.num_objects
    tensor([3])
    >>> oracle.unary(Requests.build([0], [Predicate("scene", kind="scene")])).exp()
    tensor([[0., 0., 1.]], grad_fn=<ExpBackward0>)
"""
from __future__ import annotations

import torch
from torch.nn import functional as F

from nablafol.errors import ShapeError, UnknownPredicateError
from nablafol.ir import Predicate
from nablafol.oracle import Requests

from nablafol.neural.feature_batch import FeatureBatch

__all__ = ["NeuralOracle"]

NEG_INF = float("-inf")


class NeuralOracle:
    """A :class:`~nablafol.neural.model.NeuralOracleModel` over one :class:`FeatureBatch`
    (see the module docstring). Build it with ``model.bind(batch)``."""

    def __init__(self, model, batch: FeatureBatch):
        if not isinstance(batch, FeatureBatch):
            raise TypeError(f"bind takes a nablafol.neural.FeatureBatch, got {type(batch).__name__}")
        if batch.feature_dim != model.config.feature_dim:
            raise ShapeError(f"neural oracle: the batch's features have {batch.feature_dim} dimensions, "
                             f"the model was built for {model.config.feature_dim}")
        parameter = model.unary_bias
        batch = batch.to(parameter.device, parameter.dtype)
        width = int(batch.counts.max())  # slots past the largest scene carry nothing
        self.batch = FeatureBatch(batch.features[:, :width], batch.boxes[:, :width], batch.image_size,
                                  batch.counts, batch.image_ids)
        self.model = model
        self.vocabulary = model.vocabulary
        self._num_objects = batch.counts + 1
        self._objects = width  # M
        self._encoding = None

    # ------------------------------------------------------------------ the oracle protocol
    @property
    def num_objects(self) -> torch.Tensor:
        """``(B,)``: objects of each scene, plus its scene pseudo-object."""
        return self._num_objects

    @property
    def device(self) -> torch.device:
        return self._num_objects.device

    def knows(self, predicate: Predicate) -> bool:
        return self.vocabulary.knows(predicate)

    def unary(self, requests: Requests) -> torch.Tensor:
        """``(R, N)`` log-probabilities (see the module docstring)."""
        m, n = self._objects, self._objects + 1
        rows = self._rows(requests, 1)
        if not len(requests):
            return torch.zeros((0, n), dtype=self.model.unary_bias.dtype, device=self.device)
        scene, which, local, distinct = self._scenes(requests)
        object_logits, scene_logits = self.model.unary_logits(self.encoding, distinct, rows)
        row = rows[which]  # (R,) vocabulary row of each request
        is_scene = row == self.model.scene_row
        counts = self.batch.counts[scene]
        real = torch.arange(m, device=self.device)[None, :] < counts[:, None]
        objects = F.logsigmoid(object_logits[local, which]).masked_fill(~real | is_scene[:, None], NEG_INF)
        objects = F.pad(objects, (0, 1), value=NEG_INF)  # (R, N)
        pseudo = torch.where(is_scene, torch.zeros_like(scene_logits[local, which]),
                             F.logsigmoid(scene_logits[local, which]))
        pseudo = pseudo.masked_fill(~self.model.scene_level[row], NEG_INF)
        at_pseudo = torch.arange(n, device=self.device)[None, :] == counts[:, None]
        return torch.where(at_pseudo, pseudo[:, None], objects)

    def binary(self, requests: Requests) -> torch.Tensor:
        """``(R, N, N)`` log-probabilities (see the module docstring)."""
        m, n = self._objects, self._objects + 1
        rows = self._rows(requests, 2)
        if not len(requests):
            return torch.zeros((0, n, n), dtype=self.model.unary_bias.dtype, device=self.device)
        scene, which, local, distinct = self._scenes(requests)
        logits = self.model.pair_logits(self.encoding, distinct, rows)[local, which]  # (R, M, M)
        real = torch.arange(m, device=self.device)[None, :] < self.batch.counts[scene][:, None]
        valid = real[:, :, None] & real[:, None, :] & ~torch.eye(m, dtype=torch.bool, device=self.device)
        return F.pad(F.logsigmoid(logits).masked_fill(~valid, NEG_INF), (0, 1, 0, 1), value=NEG_INF)

    # ------------------------------------------------------------------ helpers
    @property
    def encoding(self):
        """The batch's object and scene representations, computed on first use."""
        if self._encoding is None:
            self._encoding = self.model.encode(self.batch)
        return self._encoding

    def _rows(self, requests: Requests, arity: int) -> torch.Tensor:
        for p in requests.predicates:
            if p.arity != arity:
                raise UnknownPredicateError(f"neural oracle: predicate {p.name!r} (kind {p.kind!r}) has arity "
                                            f"{p.arity} but was asked as a {'unary' if arity == 1 else 'binary'} one")
        return torch.as_tensor(self.vocabulary.rows(requests.predicates), device=self.device)

    def _scenes(self, requests: Requests):
        """Per request: scene, predicate index, index into the distinct scenes; the distinct scenes."""
        scene = requests.scene.to(self.device)
        batch_size = len(self.batch)
        if scene.numel() and (int(scene.min()) < 0 or int(scene.max()) >= batch_size):
            bad = int(scene.min()) if int(scene.min()) < 0 else int(scene.max())
            raise ShapeError(f"neural oracle: scene index {bad} out of range for a batch of {batch_size} scenes")
        distinct, local = torch.unique(scene, return_inverse=True)
        return scene, requests.predicate.to(self.device), local, distinct

    def __repr__(self) -> str:
        return f"NeuralOracle({len(self.batch)} scenes, up to {self._objects} objects + the scene)"

