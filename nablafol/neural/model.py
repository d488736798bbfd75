"""The neural visual oracle's network (the paper's section 6, "The visual oracle").

For object ``i`` of a scene with features ``v_i`` and box ``b_i`` (x1, y1, x2, y2 pixels in an
image ``W × H``)::

    g_i = [x1/W, y1/H, x2/W, y2/H, w, h, w·h, cx, cy]         box features (normalized)
    h_i = MLP_3([LayerNorm(v_i), g_i])                          3 hidden layers, ReLU, dropout
    unary:  logit(π | x_i) = <U h_i, e_π> + c_π
    scene:  s = MLP_scene(mean_i h_i)   logit(π | scene) = <s, e_π> + c_π   (scene-level π only)
    binary: p_ij = MLP_pair([P_s h_i, P_o h_j, r_ij])            r_ij: relative geometry (below)
            logit(π | x_i, y_j) = <p_ij, f_π> + d_π

With ``head="cosine"`` (:class:`NeuralOracleConfig`) every ``<x, e>`` above is
``cosine_scale · cos(x, e)`` instead: the logit's range is set by the scale and the bias, not by
the vectors' lengths (answers-only training learned faster with it:
``docs/oracle-learning.md``). ``head="dot"`` is the paper's form and what a config written
before the field existed loads as. Memory: the cosine needs each pair's vector's length, so the
pair stage also holds ``(M, M, embedding_dim)`` per scene (about twice the dot heads' pair
memory; on GQA's 100 detections a batch of 64 scenes holds 0.8 GB more): ``head="dot"`` where
that matters.

``e_π`` / ``f_π`` are the concept embeddings (one row per concept of the
:class:`~nablafol.neural.concept_vocabulary.ConceptVocabulary`, random-init; see
:meth:`NeuralOracleModel.initialize_embeddings` for word vectors), ``c_π`` / ``d_π``
per-concept biases starting at ``prior_logit`` (most concepts are false of most objects).
``r_ij = [cx_j − cx_i, cy_j − cy_i, log w_i/w_j, log h_i/h_j, log area_i/area_j, IoU]``:
spatial relations and comparatives (``left of``, ``larger``, ``higher``) need it.

Probabilities are ``logsigmoid`` of the logits, never clamped (the engine needs exact logs).
Memory: the pair MLP's hidden layer is computed once per scene, ``(M, M, pair_hidden_dim)``,
and contracted with ``f_π`` pushed through the MLP's last (linear) layer, so requested
predicates never multiply a ``(M, M, embedding_dim)`` tensor.

Which objects may carry what (rules of the scene pseudo-object, applied by
:class:`~nablafol.neural.bound_oracle.NeuralOracle`): ordinary objects are never ``scene``; the
pseudo-object is ``scene`` with probability exactly 1, carries only scene-level concepts
(location, weather, place, room values) and takes part in no relation; no object is in a
relation with itself (as in the scene-graph oracle, where ``same`` and the comparatives
exclude ``X = Y`` and scene graphs store no self-relations).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Mapping, NamedTuple, Sequence

import torch
from einops import einsum, rearrange
from torch import nn
from torch.nn import functional as F

from nablafol.neural.concept_vocabulary import ConceptVocabulary
from .errors import NeuralOracleError
from nablafol.neural.feature_batch import FeatureBatch
from nablafol.neural.lane_dropout import DROPOUT_MAX, LaneDropout, ReluDropout
from nablafol.neural.normed_input import normed_linear

__all__ = ["HEADS", "NeuralOracleConfig", "NeuralOracleModel", "ObjectEncoding", "box_features", "pair_geometry",
           "BOX_FEATURES", "PAIR_GEOMETRY"]

BOX_FEATURES = 9
PAIR_GEOMETRY = 6
HEADS = ("dot", "cosine")
_MIN_EXTENT = 1e-3  # smallest box side, as a fraction of the image: keeps log ratios finite


def _finite_number(value) -> bool:
    """A number a float holds, finite (a config's 10**400 is an int no float holds)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


@dataclass(frozen=True)
class NeuralOracleConfig:
    """Sizes of the network. ``num_unary`` / ``num_binary`` are the vocabulary's row counts."""

    feature_dim: int
    num_unary: int
    num_binary: int
    hidden_dim: int = 512
    embedding_dim: int = 300  # GloVe's width, so word vectors can be loaded
    projection_dim: int = 256  # each object's linear projection for binary predicates
    pair_hidden_dim: int = 256
    hidden_layers: int = 3
    dropout: float = 0.1
    prior_logit: float = -2.0  # initial concept bias: sigmoid(-2) ≈ 0.12
    # "dot": logit = <x, e> + c (the paper's; a config without this field, i.e. every model
    # folder written before it, is this); "cosine": logit = cosine_scale · cos(x, e) + c
    head: str = "dot"
    cosine_scale: float = 10.0

    def __post_init__(self):
        if self.head not in HEADS:
            raise NeuralOracleError(f"neural oracle config: head must be one of {', '.join(HEADS)}, got {self.head!r}")
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "head":
                continue
            if f.name == "cosine_scale":
                ok = _finite_number(value) and value > 0
                expected = "a positive number"
            elif f.name in ("dropout", "prior_logit"):
                ok = _finite_number(value)
                ok = ok and (0 <= value <= DROPOUT_MAX if f.name == "dropout" else True)
                expected = f"a number from 0 to {DROPOUT_MAX}" if f.name == "dropout" else "a finite number"
            else:
                ok = isinstance(value, int) and not isinstance(value, bool) and value >= (0 if f.name.startswith("num_") else 1)
                expected = "a non-negative integer" if f.name.startswith("num_") else "a positive integer"
            if not ok:
                raise NeuralOracleError(f"neural oracle config: {f.name} must be {expected}, got {value!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> "NeuralOracleConfig":
        if not isinstance(data, Mapping):
            raise NeuralOracleError(f"neural oracle config: expected an object, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise NeuralOracleError(f"neural oracle config: unknown setting {unknown[0]!r}")
        missing = [name for name in ("feature_dim", "num_unary", "num_binary") if name not in data]
        if missing:
            raise NeuralOracleError(f"neural oracle config: {missing[0]!r} is missing")
        return cls(**data)


class ObjectEncoding(NamedTuple):
    """What the network computes once per batch of scenes, before any predicate is asked."""

    hidden: torch.Tensor  # (B, M, hidden_dim) object representations h_i
    scene: torch.Tensor  # (B, embedding_dim) the scene pseudo-object's representation s
    boxes: torch.Tensor  # (B, M, BOX_FEATURES) normalized box features g_i
    mask: torch.Tensor  # (B, M) real objects


def box_features(boxes: torch.Tensor, image_size: torch.Tensor) -> torch.Tensor:
    """``(..., M, 4)`` pixel boxes in ``(..., 2)`` images -> ``(..., M, 9)`` normalized features."""
    scale = image_size.repeat_interleave(2, dim=-1)[..., None, :]  # W, H, W, H
    x1, y1, x2, y2 = (boxes / scale).unbind(-1)
    w = (x2 - x1).clamp(min=_MIN_EXTENT)
    h = (y2 - y1).clamp(min=_MIN_EXTENT)
    return torch.stack([x1, y1, x2, y2, w, h, w * h, x1 + w / 2, y1 + h / 2], dim=-1)


def pair_geometry(g: torch.Tensor) -> torch.Tensor:
    """``(S, M, 9)`` box features -> ``(S, M, M, 6)`` relative geometry of subject i and object j."""
    x1, y1, x2, y2, w, h, area, cx, cy = g.unbind(-1)
    i, j = (lambda t: t[:, :, None]), (lambda t: t[:, None, :])
    inter_w = (torch.minimum(i(x2), j(x2)) - torch.maximum(i(x1), j(x1))).clamp(min=0)
    inter_h = (torch.minimum(i(y2), j(y2)) - torch.maximum(i(y1), j(y1))).clamp(min=0)
    inter = inter_w * inter_h
    iou = inter / (i(area) + j(area) - inter).clamp(min=_MIN_EXTENT ** 2)
    return torch.stack([j(cx) - i(cx), j(cy) - i(cy), torch.log(i(w) / j(w)), torch.log(i(h) / j(h)),
                        torch.log(i(area) / j(area)), iou], dim=-1)


class NeuralOracleModel(nn.Module):
    """The oracle's network over one :class:`ConceptVocabulary` (see the module docstring).

    ``model.bind(batch)`` gives the :class:`~nablafol.neural.bound_oracle.NeuralOracle` the engine
    queries for a :class:`~nablafol.neural.feature_batch.FeatureBatch`.

    >>> from nablafol.dsl import Ontology
    >>> vocabulary = ConceptVocabulary.from_ontology(Ontology.gqa())
    >>> model = NeuralOracleModel.for_vocabulary(vocabulary, feature_dim=2048)
    >>> model.config.hidden_layers, model.config.dropout, model.unary_embedding.shape[0] == vocabulary.num_unary
    (3, 0.1, True)
    """

    def __init__(self, config: NeuralOracleConfig, vocabulary: ConceptVocabulary):
        super().__init__()
        if (config.num_unary, config.num_binary) != (vocabulary.num_unary, vocabulary.num_binary):
            raise NeuralOracleError(f"neural oracle: config has {config.num_unary} unary and {config.num_binary} "
                                    f"binary concepts, the vocabulary {vocabulary.num_unary} and "
                                    f"{vocabulary.num_binary}")
        self.config, self.vocabulary = config, vocabulary
        c, hidden = config, config.hidden_dim
        self.input_norm = nn.LayerNorm(c.feature_dim)
        layers, width = [], c.feature_dim + BOX_FEATURES
        for _ in range(c.hidden_layers):
            layers += [nn.Linear(width, hidden), nn.ReLU(), LaneDropout(c.dropout)]
            width = hidden
        self.encoder = nn.Sequential(*layers)
        self.unary_projection = nn.Linear(hidden, c.embedding_dim)
        self.scene_encoder = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), LaneDropout(c.dropout),
                                           nn.Linear(hidden, c.embedding_dim))
        self.subject_projection = nn.Linear(hidden, c.projection_dim)
        self.object_projection = nn.Linear(hidden, c.projection_dim)
        # one Linear over [P_s h_i, P_o h_j, r_ij], applied block by block (see pair_logits)
        self.pair_hidden = nn.Linear(2 * c.projection_dim + PAIR_GEOMETRY, c.pair_hidden_dim)
        # the pair stage's ReLU and dropout as one step: its (M, M, pair_hidden_dim) units per scene
        # made nn.Dropout's per-unit Bernoulli draws a sixth of a training step at 36 objects
        self.pair_activation = ReluDropout(c.dropout)
        self.pair_output = nn.Linear(c.pair_hidden_dim, c.embedding_dim)
        scale = 1.0 / math.sqrt(c.embedding_dim)
        self.unary_embedding = nn.Parameter(torch.randn(c.num_unary, c.embedding_dim) * scale)
        self.unary_bias = nn.Parameter(torch.full((c.num_unary,), float(c.prior_logit)))
        self.binary_embedding = nn.Parameter(torch.randn(c.num_binary, c.embedding_dim) * scale)
        self.binary_bias = nn.Parameter(torch.full((c.num_binary,), float(c.prior_logit)))
        # derived from the vocabulary, so not saved with the weights
        self.register_buffer("scene_level", torch.as_tensor(vocabulary.scene_level_mask()), persistent=False)
        self.scene_row = vocabulary.scene_row

    @classmethod
    def for_vocabulary(cls, vocabulary: ConceptVocabulary, feature_dim: int, **sizes) -> "NeuralOracleModel":
        """A model sized for ``vocabulary``; ``sizes`` are other :class:`NeuralOracleConfig` fields."""
        config = NeuralOracleConfig(feature_dim=feature_dim, num_unary=vocabulary.num_unary,
                                    num_binary=vocabulary.num_binary, **sizes)
        return cls(config, vocabulary)

    # ------------------------------------------------------------------ the oracle
    def bind(self, batch: FeatureBatch):
        """The oracle of this model over ``batch`` (moved to the model's device)."""
        from nablafol.neural.bound_oracle import NeuralOracle
        return NeuralOracle(self, batch)

    def forward(self, batch: FeatureBatch):
        """Same as :meth:`bind` (so hooks and ``model(batch)`` work)."""
        return self.bind(batch)

    # ------------------------------------------------------------------ the network
    def encode(self, batch: FeatureBatch) -> ObjectEncoding:
        """Object and scene representations of every scene of ``batch``."""
        mask = batch.object_mask
        g = box_features(batch.boxes, batch.image_size)
        # the first Linear over [norm(features), boxes] with the cheaper backward (hidden_layers >= 1)
        hidden = self.encoder[1:](normed_linear(batch.features, g, self.input_norm, self.encoder[0]))
        weights = mask.to(hidden.dtype)[..., None]
        mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1)  # an empty scene: zeros
        return ObjectEncoding(hidden, self.scene_encoder(mean), g, mask)

    def unary_logits(self, encoding: ObjectEncoding, scenes: torch.Tensor,
                     rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits of unary concepts ``rows`` ``(P,)`` on scenes ``scenes`` ``(S,)``:
        ``(S, P, M)`` for the objects and ``(S, P)`` for the scene pseudo-objects."""
        embedding, bias = self.unary_embedding[rows], self.unary_bias[rows]
        objects, scene = self.unary_projection(encoding.hidden[scenes]), encoding.scene[scenes]  # (S, M, E), (S, E)
        if self.config.head == "cosine":  # unit vectors; the scale and the bias set the logits' range
            objects, scene, embedding = (F.normalize(t, dim=-1) for t in (objects, scene, embedding))
            embedding = embedding * self.config.cosine_scale
        object_logits = einsum(objects, embedding, "scene obj emb, concept emb -> scene concept obj") \
            + rearrange(bias, "concept -> 1 concept 1")
        scene_logits = scene @ embedding.T + bias[None, :]
        return object_logits, scene_logits

    def pair_logits(self, encoding: ObjectEncoding, scenes: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """Logits ``(S, P, M, M)`` of binary concepts ``rows`` for every ordered object pair
        ``(i, j)`` (row = subject) of scenes ``scenes``."""
        hidden = encoding.hidden[scenes]
        p = self.config.projection_dim
        weight = self.pair_hidden.weight  # [subject block | object block | geometry block]
        first = (F.linear(self.subject_projection(hidden), weight[:, :p])[:, :, None, :]
                 + F.linear(self.object_projection(hidden), weight[:, p:2 * p])[:, None, :, :]
                 + F.linear(pair_geometry(encoding.boxes[scenes]), weight[:, 2 * p:], self.pair_hidden.bias))
        pair = self.pair_activation(first)  # relu, dropout: (S, M, M, pair_hidden_dim)
        embedding = self.binary_embedding[rows]
        # one GEMM over every pair with the concepts last, then a view with them second: the
        # einsum's batched product of the same shapes took 2-3x as long, forward and backward
        if self.config.head == "cosine":  # the pair's unit vector: (S, M, M, embedding_dim), once per batch
            concept = F.normalize(embedding, dim=-1) * self.config.cosine_scale
            logits = F.linear(F.normalize(self.pair_output(pair), dim=-1), concept, self.binary_bias[rows])
        else:  # <pair_output(pair), f> = <pair, Wᵀ f> + <b, f>: contract in the small width
            concept = embedding @ self.pair_output.weight  # (P, pair_hidden_dim)
            logits = F.linear(pair, concept, embedding @ self.pair_output.bias + self.binary_bias[rows])
        return rearrange(logits, "scene subj obj concept -> scene concept subj obj")

    # ------------------------------------------------------------------ word vectors
    @torch.no_grad()
    def initialize_embeddings(self, vectors: Mapping[str, Sequence[float]]) -> int:
        """Set each concept's embedding to the mean of its words' vectors (the paper used GloVe);
        concepts with a word missing from ``vectors`` keep their random row. Returns the rows set."""
        done = 0
        for table, concepts in ((self.unary_embedding, self.vocabulary.unary),
                                (self.binary_embedding, self.vocabulary.binary)):
            for row, (_, name) in enumerate(concepts):
                words = name.split()
                if words and all(w in vectors for w in words):
                    value = torch.as_tensor([list(vectors[w]) for w in words], dtype=table.dtype).mean(0)
                    if value.shape != table.shape[1:]:
                        raise NeuralOracleError(f"word vector of {name!r} has {value.shape[0]} dimensions, "
                                                f"the embeddings {table.shape[1]}")
                    table[row] = value.to(table.device)
                    done += 1
        return done

    def extra_repr(self) -> str:
        return f"{self.vocabulary!r}"
