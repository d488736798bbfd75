"""Training a neural oracle on scene graphs' labels: the supervised teacher's loop.

Two uses, one loop (:func:`train_on_labels`):

* **the perception ceiling** (``nablafol demo``): the same network the base model uses,
  trained on the train scene graphs' labels (names, attributes, relations) instead of the
  answers, then evaluated through the same engine and golden programs. What it gets wrong is
  what this data and this architecture cannot see; answers-only training is measured against it;
* **pretraining** (``nablafol train --scene-graphs SG --pretrain-epochs K``): when a user has
  scene graphs for (some of) the training images, the oracle learns their labels first, then
  trains through the reasoning on the answers.

The loss is :func:`nablafol.neural.supervision.label_loss` (binary cross-entropy of every
concept both the oracle and the golden oracle know, per object and per pair). Each epoch
visits every image that has both features and a graph once, in an order drawn from ``seed``
and the epoch number; Adam, gradient clipping as in answers-only training.

    >>> import numpy as np, torch
    >>> from nablafol.data import ObjectFeatures, SceneGraph, SceneObject
    >>> from nablafol.dsl import Ontology
    >>> from nablafol.neural import ConceptVocabulary, NeuralOracleModel
    >>> class Store(dict):
    ...     def get_many(self, ids): return [self[i] for i in ids]
    >>> store = Store(a=ObjectFeatures(np.eye(2, 4, dtype=np.float32), np.array([[0, 0, 5, 5], [5, 5, 9, 9]], np.float32), 10, 10))
    >>> graphs = {"a": SceneGraph("a", 10, 10, (SceneObject("o1", {"cup": 1.0}, 0, 0, 5, 5), SceneObject("o2", {"dog": 1.0}, 5, 5, 4, 4)))}
    >>> torch.manual_seed(0) and None
    >>> model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(Ontology.gqa()), feature_dim=4)
    >>> history = train_on_labels(model, store, graphs, Ontology.gqa(), LabelConfig(epochs=3, lr=1e-2))
    >>> [h["epoch"] for h in history], history[-1]["images"], history[-1]["label_loss"] < history[0]["label_loss"]
    ([0, 1, 2], 1, True)
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import torch

__all__ = ["LabelConfig", "train_on_labels", "concept_accuracy"]


@dataclass
class LabelConfig:
    """Settings of supervised training on labels (batches of 32 images, lr 3e-3). ``patience``:
    with a validation, stop once that many epochs in a row have not bettered the best validation
    accuracy and keep the best epoch's weights (0: train every epoch, keep the last)."""

    epochs: int = 6
    batch_size: int = 32
    lr: float = 3e-3
    clip_norm: float = 0.65
    seed: int = 0
    patience: int = 0

    def __post_init__(self):
        for name, least in (("epochs", 0), ("batch_size", 1), ("patience", 0)):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= least):
                raise ValueError(f"LabelConfig.{name} must be a whole number >= {least}, got {value!r}")
        if not self.lr > 0:
            raise ValueError(f"LabelConfig.lr must be > 0, got {self.lr!r}")


def train_on_labels(model, store, graphs, ontology, config: LabelConfig = LabelConfig(),
                    log: Optional[Callable[[str], None]] = None, progress=None,
                    validate: Optional[Callable[[], float]] = None) -> list[dict]:
    """Train ``model`` (a :class:`~nablafol.neural.NeuralOracleModel`, in place) on the labels
    of ``graphs`` (image id -> scene graph) over ``store``'s features (anything with
    ``get_many``); returns one record per epoch (``label_loss``, ``images``, ``seconds``, and
    ``val_accuracy`` and ``val_seconds`` when ``validate`` is given: it is called after each
    epoch, ``seconds`` not counting it; with ``config.patience``, early stopping on it, the
    best epoch's record marked ``best``)."""
    from nablafol.errors import InputFileError
    from nablafol.neural import FeatureBatch
    from nablafol.neural.optimizer import adam
    from nablafol.neural.supervision import SceneGraphTeacher

    ids = sorted(i for i in graphs if i in store)
    if not ids:
        raise InputFileError("scene graphs", "no image has both a scene graph and features")
    teacher = SceneGraphTeacher(graphs, model.vocabulary, ontology)
    optimizer = adam(model.parameters(), lr=config.lr)
    device = next(model.parameters()).device
    history, total = [], config.epochs * len(ids)
    best, best_state = None, None
    model.train()
    for epoch in range(config.epochs):
        start, losses = time.perf_counter(), []
        order = [ids[i] for i in np.random.default_rng([config.seed, epoch]).permutation(len(ids))]
        for first in range(0, len(order), config.batch_size):
            chunk = order[first:first + config.batch_size]
            batch = FeatureBatch.from_store(store, chunk, device=device)
            loss, _ = teacher.loss(model.bind(batch), batch)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
            optimizer.step()
            losses.append(float(loss.detach()))
            if progress is not None:
                progress(epoch * len(ids) + first + len(chunk), total)
        record = {"epoch": epoch, "label_loss": float(np.mean(losses)), "images": len(ids),
                  "seconds": time.perf_counter() - start}
        if validate is not None:
            model.eval()
            started = time.perf_counter()
            record["val_accuracy"] = validate()
            record["val_seconds"] = time.perf_counter() - started
            model.train()
        history.append(record)
        if log is not None:
            log(f"labels epoch {epoch + 1}/{config.epochs}: loss {record['label_loss']:.4f}"
                + (f", validation accuracy {100 * record['val_accuracy']:.2f}%" if "val_accuracy" in record else "")
                + f", {record['seconds']:.1f} s")
        if config.patience and validate is not None:
            if best is None or record["val_accuracy"] > history[best]["val_accuracy"]:
                best, best_state = epoch, {k: v.detach().clone() for k, v in model.state_dict().items()}
            elif epoch - best >= config.patience:
                break
    if best_state is not None:
        model.load_state_dict(best_state)
        history[best]["best"] = True
    model.eval()
    return history


def concept_accuracy(model, store, graphs, ontology, batch_size: int = 32) -> dict:
    """How ``model`` (a :class:`~nablafol.neural.NeuralOracleModel`) reads every concept of the
    images of ``graphs`` (image id -> scene graph) that ``store`` has features for, each decided
    at probability 0.5 against the graphs' labels (the entries the label loss trains):
    ``"kind name" -> {"accuracy", "recall" (of the true entries; None without one), "entries",
    "positives"}``."""
    from nablafol.neural import FeatureBatch
    from nablafol.neural.supervision import SceneGraphTeacher

    ids = sorted(i for i in graphs if i in store)
    teacher = SceneGraphTeacher(graphs, model.vocabulary, ontology)
    device = next(model.parameters()).device
    totals: dict = {}
    model.eval()
    with torch.no_grad():
        for first in range(0, len(ids), batch_size):
            batch = FeatureBatch.from_store(store, ids[first:first + batch_size], device=device)
            for concept, counts in teacher.concept_counts(model.bind(batch), batch).items():
                totals[concept] = [a + b for a, b in zip(totals.get(concept, [0, 0, 0, 0]), counts)]
    return {f"{kind} {name}": {"accuracy": right / entries if entries else None,
                               "recall": found / positives if positives else None,
                               "entries": entries, "positives": positives}
            for (kind, name), (entries, right, positives, found) in sorted(totals.items())}
