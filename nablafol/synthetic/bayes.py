"""The Bayes oracle of the embedded dataset: each concept's posterior under the generator's own model.

The generator (:mod:`nablafol.synthetic.object_features`) makes an object's features

    f = s_class u_class + sum_t s_(a_t) u_(a_t) + k · context + sigma · N(0, I)

with every code ``u``, strength ``s``, ``k`` and ``sigma`` known to it, and draws the
attributes per class (:meth:`SceneGenerator._attributes`): a type ``t`` of the class is present
with probability ``PRESENCE[t]``, its value uniform over the class's palette; ``size`` is read
from the box. :func:`bayes_scene_graphs` turns that model into probabilistic scene graphs, one
posterior per concept, for :class:`~nablafol.pipeline.perception.SceneGraphPerception` (or
``nablafol eval --scene-graphs``) to answer through the engine:

* **a class**: ``P(class = c | f, box size, the object's true attributes, the scene's context)``,
  the prior from the training graphs (:class:`ClassPrior`: the class's share in scenes of the
  location, the density of its box sizes), the likelihood the Gaussian of the residual;
* **an attribute type** of the true class: ``P(a_t = v | f, the true class, the other true
  attributes, the context)`` over its palette and "absent" (``size``: the truth; it follows from
  the class and the box);
* **relations, location, weather**: the truth (relations follow from the boxes and the classes,
  which are certain given the rest; location and weather are scene-level strings in the format).

Each posterior conditions on the rest of the truth. An oracle that sees only the features would
also doubt the rest, so this is an *optimistic* Bayes ceiling: no per-object oracle over these
features can be more right on average about each concept given its object's other concepts. The
exact joint posterior (class × every attribute type's value × the scene's context, for each
object) is a sum over up to millions of hypotheses per object, and its factorization per type is
not exact: two codes overlap by about ``1/sqrt(D)``, which with the generator's ``sigma`` is
several nats (``docs/oracle-learning.md``).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Sequence

import numpy as np

from nablafol.data import SceneGraph

from .object_features import ConceptCodes, object_concepts, scene_context
from .vocabulary import PRESENCE, Vocabulary

__all__ = ["bayes_scene_graphs", "bayes_split", "ClassPrior", "write_bayes_scene_graphs"]


class ClassPrior:
    """What the training graphs say of an object's class before its features: the class's share
    of the objects of scenes of the same location, times the density of the object's box size
    among that class's boxes (a Gaussian kernel density over log width and log height: the
    generator draws each class's size from its own range, jittered by ±8%)."""

    BANDWIDTH = 0.05  # in log units: about the generator's jitter
    FLOOR = 1e-12  # the density of a size no training box of the class had (never exactly impossible)

    def __init__(self, graphs: Sequence[SceneGraph], classes: Sequence[str]):
        counts: dict[str | None, Counter] = {}
        sizes: dict[str, list] = {c: [] for c in classes}
        for g in graphs:
            for o in g.objects:
                counts.setdefault(g.location, Counter())[o.name] += 1
                sizes.setdefault(o.name, []).append(_log_size(o, g))
        self.classes = sorted(sizes)
        self.sizes = {c: np.asarray(v, dtype=np.float64).reshape(-1, 2) for c, v in sizes.items()}
        # add-one shares: a class the training scenes of a location never showed stays possible there
        self.shares = {loc: {c: (cnt[c] + 1) / (sum(cnt.values()) + len(self.classes)) for c in self.classes}
                       for loc, cnt in counts.items()}

    def log_prior(self, obj, graph, classes: Sequence[str]) -> np.ndarray:
        shares = self.shares.get(graph.location) or {c: 1 / len(self.classes) for c in self.classes}
        here = _log_size(obj, graph)
        out = np.empty(len(classes))
        for k, c in enumerate(classes):
            boxes = self.sizes[c]
            density = np.exp(-((boxes - here) ** 2).sum(1) / (2 * self.BANDWIDTH ** 2)).mean() if len(boxes) else 0.0
            out[k] = np.log(shares[c]) + np.log(density + self.FLOOR)
        return out


def _log_size(obj, graph) -> tuple[float, float]:
    return (np.log(max(obj.w, 1) / graph.width), np.log(max(obj.h, 1) / graph.height))


def _posterior(log_weights: np.ndarray) -> np.ndarray:
    w = np.exp(log_weights - log_weights.max())
    return w / w.sum()


def bayes_scene_graphs(graphs: Sequence[SceneGraph], features: Sequence[np.ndarray], codes: ConceptCodes,
                       vocabulary: Vocabulary, prior: ClassPrior, noise_std: float,
                       context_scale: float) -> list[SceneGraph]:
    """``graphs`` with each object's names and attributes replaced by their posteriors (see the
    module docstring); ``features[k]`` ``(objects, D)`` are the features of ``graphs[k]``."""
    if noise_std <= 0:
        return list(graphs)  # no noise: the features tell the truth
    index, variance = codes.index, 2 * noise_std ** 2
    classes = [c for c in prior.classes if c in index]
    class_signal = codes.strengths[[index[c] for c in classes], None] * codes.codes[[index[c] for c in classes]]
    out = []
    for graph, rows in zip(graphs, features):
        context = context_scale * codes.signal(scene_context(graph))
        objects = []
        for obj, f in zip(graph.objects, np.asarray(rows, dtype=np.float64)):
            truth = object_concepts(obj)
            attributes = [a for a in truth[1:]]
            # the class, given the true attributes and context
            residual = f - context - codes.signal(attributes)
            log_like = -((residual[None, :] - class_signal) ** 2).sum(1) / variance
            posterior = _posterior(prior.log_prior(obj, graph, classes) + log_like)
            names = {c: float(p) for c, p in zip(classes, posterior) if p > 1e-6}
            # each attribute type of the true class, given the class, the other attributes, the context
            values = {}
            for type_name in vocabulary.types_of(obj.name):
                palette = vocabulary.palette(obj.name, type_name)
                present = [a for a in attributes if a in palette]
                if type_name == "size":
                    values.update({a: 1.0 for a in present})
                    continue
                others = [a for a in attributes if a not in palette]
                residual = f - context - codes.signal([obj.name, *others])
                p = PRESENCE.get(type_name, 0.5)
                hypotheses = [None, *palette]
                log_post = np.array([np.log(1 - p) if p < 1 else -np.inf] + [np.log(p / len(palette))] * len(palette))
                for k, value in enumerate(hypotheses):
                    signal = codes.signal([value]) if value is not None else 0.0
                    log_post[k] -= ((residual - signal) ** 2).sum() / variance
                for value, q in zip(palette, _posterior(log_post)[1:]):
                    if q > 1e-6:
                        values[value] = float(q)
            objects.append(replace(obj, names=names, name=max(names, key=names.get), attributes=values))
        out.append(replace(graph, objects=tuple(objects)))
    return out


def bayes_split(generator, store, split: str) -> list[SceneGraph]:
    """The Bayes oracle's graphs of ``split`` of a dataset ``generator`` made
    (:class:`~nablafol.synthetic.writer.Generator`: ``generate_dataset(...).generator``), over
    the features of ``store``."""
    dataset = generator.dataset
    graphs = dataset.scenes[split]
    return bayes_scene_graphs(graphs, [store[g.image_id].features for g in graphs], generator.codes,
                              dataset.vocabulary, ClassPrior(dataset.scenes["train"], dataset.vocabulary.classes),
                              generator.noise_std, generator.context_scale)


def write_bayes_scene_graphs(data, split: str, path) -> int:
    """The Bayes oracle's graphs of ``split`` of the embedded dataset in ``data`` (generated with
    the default vocabulary and scene settings), written to ``path`` as a probabilistic
    ``*_sceneGraphs.json``; how many scenes. The graphs are rebuilt from the card's seed and
    sizes (GQA publishes no test-dev scene graphs, so neither does the dataset), checked against
    the written training graphs and the card's strengths."""
    import json
    from pathlib import Path

    from nablafol.data import FeatureStore, load_scene_graphs, write_scene_graphs
    from nablafol.errors import InputFileError

    from .writer import CARD_NAME, SPLITS, Generator, _rng, build_dataset
    data = Path(data)
    if split not in SPLITS:
        raise InputFileError(data, f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    card_path = data / CARD_NAME
    if not card_path.exists():
        raise InputFileError(card_path, "no dataset card: not a folder `nablafol generate` wrote")
    card = json.loads(card_path.read_text())
    if card.get("complete") is False:  # the mark a generate run leaves until it has written everything
        raise InputFileError(card_path, "the `nablafol generate` that wrote this folder did not finish: run it again")
    sizes = {f"n_{s}": card["splits"][s]["scenes"] for s in SPLITS}
    dataset = build_dataset(seed=card["seed"], spatial_neighbours=card.get("spatial_neighbours"), **sizes)
    written = load_scene_graphs(data / "train_sceneGraphs.json")

    def counts(graph) -> list:
        return [len(o.relations) for o in graph.objects]
    if [g.image_id for g in dataset.scenes["train"]] != list(written) or any(
            counts(g) != counts(written[g.image_id]) for g in dataset.scenes["train"]):
        raise InputFileError(data, "the scenes rebuilt from the card differ from the written ones (generated "
                                   "with other scene settings than the defaults?)")
    codes = ConceptCodes.draw(dataset.vocabulary, card["features"]["dim"], _rng(card["seed"], "codes"))
    if codes.to_json() != card["concepts"]:
        raise InputFileError(card_path, "the concept strengths rebuilt from the seed differ from the card's")
    generator = Generator(dataset, codes, card["features"]["noise_std"], card["features"]["context_scale"])
    bayes = bayes_split(generator, FeatureStore(data / "features"), split)
    write_scene_graphs(path, bayes)
    return len(bayes)


def main(argv=None) -> int:
    """``python -m nablafol.synthetic.bayes DATA SPLIT OUT``: write the Bayes oracle's graphs."""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m nablafol.synthetic.bayes", description=main.__doc__)
    parser.add_argument("data"), parser.add_argument("split"), parser.add_argument("out")
    args = parser.parse_args(argv)
    from nablafol.errors import NablafolError
    try:
        n = write_bayes_scene_graphs(args.data, args.split, args.out)
    except NablafolError as e:
        print(f"bayes: {e}")
        return 1
    print(f"{n:,} scenes of {args.split} written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
