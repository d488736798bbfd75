"""The Bayes oracle of the embedded dataset: each concept's posterior under the generator's own model.

The generator (:mod:`nablafol.synthetic.object_features`) makes an object's features

    f = s_class u_class + sum_t s_(a_t) u_(a_t) + k · context + sigma · N(0, I)

with every code ``u``, strength ``s``, ``k`` and ``sigma`` known to it, and draws the
attributes per class (:meth:`SceneGenerator._attributes`): a type ``t`` of the class is present
with probability ``PRESENCE[t]``, its value uniform over the class's palette; ``size`` is read
from the box. Two oracles turn that model into probabilistic scene graphs for
:class:`~nablafol.pipeline.perception.SceneGraphPerception` (or ``nablafol eval --scene-graphs``)
to answer through the engine:

* :func:`features_only_scene_graphs`, **the Bayes ceiling** (the demo's, and ``python -m
  nablafol.synthetic.bayes``'s default): the posterior given the features and boxes alone. An
  object's hypothesis is its class and each attribute type's value or none (a few thousand over
  the default vocabulary, :class:`ObjectHypotheses`); given the scene's context the objects are
  independent, so the context's posterior and every class and attribute marginal are exact sums;
  relations, which follow from every object's class and the boxes, are a sampled estimate;
* :func:`bayes_scene_graphs`, each concept's posterior **given the rest of the truth** (a class
  given the true attributes and context; an attribute type given the true class and the other
  attributes; relations, location and weather true). It is no bound: its class prior weighs the
  box against all of the class's boxes whatever the true size value says, and on the demo's data
  it answers less than the features-only oracle (``docs/oracle-learning.md``).

Both share the prior of :class:`ClassPrior`, estimated from the training graphs (the generator's
layout rules have no closed-form density): the class's share in scenes of the location, the
density of its box sizes (per size value for the features-only oracle), the contexts' shares.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Sequence

import numpy as np

from nablafol.data import SceneGraph

from .object_features import ConceptCodes, object_concepts, scene_context
from .scenes import Box, relations_between
from .vocabulary import OBJECT_TYPES, PRESENCE, Vocabulary

_SIZES = frozenset(OBJECT_TYPES["size"])

__all__ = ["bayes_scene_graphs", "features_only_scene_graphs", "bayes_split", "ClassPrior", "ObjectHypotheses",
           "rebuilt_generator", "write_bayes_scene_graphs"]


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
        size_values: dict[str, list] = {c: [] for c in classes}
        contexts: Counter = Counter()
        for g in graphs:
            contexts[(g.location, g.weather)] += 1
            for o in g.objects:
                counts.setdefault(g.location, Counter())[o.name] += 1
                sizes.setdefault(o.name, []).append(_log_size(o, g))
                size_values.setdefault(o.name, []).append(next((a for a in o.attributes if a in _SIZES), None))
        self.classes = sorted(sizes)
        self.sizes = {c: np.asarray(v, dtype=np.float64).reshape(-1, 2) for c, v in sizes.items()}
        self.size_values = {c: np.asarray(v, dtype=object) for c, v in size_values.items()}
        self._size_masks: dict = {}
        self._stacked: dict = {}
        # the scene contexts (location, weather) the training scenes show, by their share
        self.contexts = {ctx: n / sum(contexts.values()) for ctx, n in sorted(contexts.items(), key=str)}
        # add-one shares: a class the training scenes of a location never showed stays possible there
        self.shares = {loc: {c: (cnt[c] + 1) / (sum(cnt.values()) + len(self.classes)) for c in self.classes}
                       for loc, cnt in counts.items()}

    def log_prior(self, obj, graph, classes: Sequence[str]) -> np.ndarray:
        """``log P(class)`` of ``obj`` for each of ``classes`` given its box and its scene's location."""
        shares = self._shares(graph.location)
        here = _log_size(obj, graph)
        out = np.empty(len(classes))
        for k, c in enumerate(classes):
            kernel = self._kernel(c, here)
            out[k] = np.log(shares[c]) + np.log((kernel.mean() if len(kernel) else 0.0) + self.FLOOR)
        return out

    def log_size_prior(self, obj, graph, class_name: str, size) -> float:
        """``log P(box size, size value | class)`` up to a constant: the kernel density of the
        object's box size among the class's training boxes whose size value is ``size`` (None:
        neither large nor small), over all of the class's boxes."""
        kernel = self._kernel(class_name, _log_size(obj, graph))
        kept = kernel[self.size_values[class_name] == size] if len(kernel) else kernel
        return float(np.log(kept.sum() / max(len(kernel), 1) + self.FLOOR))

    def log_size_priors(self, graph, classes: Sequence[str], sizes: Sequence) -> np.ndarray:
        """:meth:`log_size_prior` of every object of ``graph`` ``(objects, classes, sizes)``, at once."""
        here = np.array([_log_size(o, graph) for o in graph.objects]).reshape(-1, 2)
        out = np.empty((len(here), len(classes), len(sizes)))
        every_box, starts = self._every_box(classes)
        kernels = np.exp(-((here[:, None, :] - every_box[None, :, :]) ** 2).sum(2) / (2 * self.BANDWIDTH ** 2))
        for k, c in enumerate(classes):
            boxes = self.sizes[c]
            kernel = kernels[:, starts[k]:starts[k] + len(boxes)]
            for j, size in enumerate(sizes):
                kept = kernel[:, self._with_size(c, size)].sum(1) if len(boxes) else np.zeros(len(here))
                out[:, k, j] = np.log(kept / max(len(boxes), 1) + self.FLOOR)
        return out

    def _every_box(self, classes: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The training boxes of ``classes``, one class after the other, and where each class's start
        (one kernel for them all, each class its slice)."""
        key = tuple(classes)
        if key not in self._stacked:
            counts = [len(self.sizes[c]) for c in classes]
            self._stacked[key] = (np.concatenate([self.sizes[c] for c in classes]).reshape(-1, 2),
                                  np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int))
        return self._stacked[key]

    def _with_size(self, class_name: str, size) -> np.ndarray:
        """Which of the class's training boxes have size value ``size`` (kept: every scene asks it
        of every class, and comparing an object array is slow)."""
        key = (class_name, size)
        if key not in self._size_masks:
            self._size_masks[key] = self.size_values[class_name] == size
        return self._size_masks[key]

    def log_share(self, location, class_name: str) -> float:
        return float(np.log(self._shares(location)[class_name]))

    def _shares(self, location) -> dict:
        return self.shares.get(location) or {c: 1 / len(self.classes) for c in self.classes}

    def _kernel(self, class_name: str, here) -> np.ndarray:
        boxes = self.sizes[class_name]
        return np.exp(-((boxes - here) ** 2).sum(1) / (2 * self.BANDWIDTH ** 2))


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


class ObjectHypotheses:
    """Everything one object can be under the generator: its class, and for each attribute type
    of the class a value of its palette or none (``size`` too: large, small or neither), each
    with the sum of its codes and the log prior of its attributes given the class (the
    generator's presence and uniform palette; ``size`` is scored apart, from the box)."""

    def __init__(self, classes: Sequence[str], codes: ConceptCodes, vocabulary: Vocabulary):
        import itertools
        index = codes.index
        self.classes = tuple(c for c in classes if c in index)
        self.values = tuple(v for values in vocabulary.attributes.values() for v in values)
        value_row = {v: k for k, v in enumerate(self.values)}
        klass, size, log_prior, members = [], [], [], []
        for k, c in enumerate(self.classes):
            options = []
            for type_name in vocabulary.types_of(c):
                palette = vocabulary.palette(c, type_name)
                if type_name == "size":
                    options.append([(None, 0.0)] + [(v, 0.0) for v in palette])
                    continue
                p = PRESENCE.get(type_name, 0.5)
                options.append(([(None, np.log(1 - p))] if p < 1 else []) + [(v, np.log(p / len(palette))) for v in palette])
            for combination in itertools.product(*options):
                chosen = [v for v, _ in combination if v is not None]
                klass.append(k)
                size.append(next((v for v in chosen if v in _SIZES), None))
                log_prior.append(sum(lp for _, lp in combination))
                members.append([value_row[v] for v in chosen])
        self.klass, self.log_prior = np.asarray(klass), np.asarray(log_prior)
        self.size = np.asarray(size, dtype=object)
        self.membership = np.zeros((len(klass), len(self.values)))  # hypothesis x attribute value
        for h, rows in enumerate(members):
            self.membership[h, rows] = 1.0
        signal = lambda names: codes.strengths[[index[n] for n in names], None] * codes.codes[[index[n] for n in names]].astype(np.float64)
        values_signal = np.zeros((len(self.values), codes.codes.shape[1]))
        known = [k for k, v in enumerate(self.values) if v in index]
        values_signal[known] = signal([self.values[k] for k in known])
        self.signals = signal([self.classes[k] for k in self.klass]) + self.membership @ values_signal  # (H, D)
        self.energy = (self.signals ** 2).sum(1)


def features_only_scene_graphs(graphs: Sequence[SceneGraph], features: Sequence[np.ndarray], codes: ConceptCodes,
                               vocabulary: Vocabulary, prior: ClassPrior, noise_std: float, context_scale: float, *,
                               spatial_neighbours: int | None = None, samples: int = 256,
                               seed: int = 0) -> list[SceneGraph]:
    """``graphs`` with everything but the boxes replaced by the generator's posterior given the
    features and the boxes only (see ``docs/oracle-learning.md``):

    * the scene's context (location, weather): exact, ``P(ctx | every object's features)``, each
      object's hypotheses summed out (its class, every attribute type's value or none); the graph
      holds the most probable context (a scene's context is a string in GQA's format);
    * each object's class and attribute values: exact marginals of that joint posterior, the
      context summed out, the objects independent given the context and their boxes (the class
      prior: :class:`ClassPrior`; ``size`` from the box through the same kernel);
    * relations: their probability over ``samples`` joint draws of the context and every class
      from that posterior, each scene's relations computed by the generator's own rules
      (:func:`~nablafol.synthetic.scenes.relations_between`): a sampled estimate, its standard
      error at most ``0.5 / sqrt(samples)`` per relation.
    """
    hypotheses = ObjectHypotheses(prior.classes, codes, vocabulary)
    people = frozenset(vocabulary.categories.get("person", ()))
    contexts = list(prior.contexts)
    context_signals = np.stack([context_scale * codes.signal([v for v in ctx if v is not None]) for ctx in contexts])
    log_context = np.log(np.asarray([prior.contexts[ctx] for ctx in contexts]))
    class_of = np.eye(len(hypotheses.classes))[hypotheses.klass]  # hypothesis -> class one-hot
    size_slot = np.array([{None: 0, "large": 1, "small": 2}[s] for s in hypotheses.size])
    rng = np.random.default_rng(seed)
    variance = 2 * max(noise_std, 1e-12) ** 2
    # what depends on the context only, not on the scene: each context's class shares, its signal's product
    context_shares = [np.array([prior.log_share(ctx[0], name) for name in hypotheses.classes])[hypotheses.klass]
                      for ctx in contexts]
    context_products = [hypotheses.signals @ c for c in context_signals]
    out = []
    for graph, rows in zip(graphs, features):
        f = np.asarray(rows, dtype=np.float64)
        n = len(graph.objects)
        # log P(box, size | class) (n, classes, 3): the same for every context
        boxes = prior.log_size_priors(graph, hypotheses.classes, (None, "large", "small"))
        box_term = boxes[:, hypotheses.klass, size_slot] + hypotheses.log_prior  # (n, H)
        cross = f @ hypotheses.signals.T  # (n, H)
        joint = np.empty((len(contexts), n, len(hypotheses.klass)))
        for k, c in enumerate(context_signals):
            residual = f - c
            energy = (residual ** 2).sum(1)[:, None] - 2 * (cross - context_products[k]) + hypotheses.energy
            joint[k] = box_term + context_shares[k] - energy / variance
        per_object = _logsumexp(joint, axis=2)  # (contexts, n): log p(f_i | ctx)
        context_posterior = _posterior(log_context + per_object.sum(1))
        given_context = np.exp(joint - per_object[:, :, None])  # (contexts, n, H): P(h | f_i, ctx)
        posterior = np.einsum("c,cnh->nh", context_posterior, given_context)
        # sums of many terms may pass 1 in the last bit: probabilities are read back in [0, 1]
        class_p, value_p = (np.clip(posterior @ m, 0.0, 1.0) for m in (class_of, hypotheses.membership))
        location, weather = contexts[int(np.argmax(context_posterior))]
        relations = _sampled_relations(graph, context_posterior, given_context @ class_of, hypotheses.classes,
                                       people, spatial_neighbours, samples, rng)
        objects = []
        for i, obj in enumerate(graph.objects):
            names = {c: float(p) for c, p in zip(hypotheses.classes, class_p[i]) if p > 1e-6}
            values = {v: float(p) for v, p in zip(hypotheses.values, value_p[i]) if p > 1e-6}
            objects.append(replace(obj, names=names, name=max(names, key=names.get), attributes=values,
                                   relations=relations[i]))
        out.append(replace(graph, objects=tuple(objects), location=location, weather=weather))
    return out


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    top = x.max(axis=axis, keepdims=True)
    return (top + np.log(np.exp(x - top).sum(axis=axis, keepdims=True))).squeeze(axis)


def _sampled_relations(graph: SceneGraph, context_posterior: np.ndarray, class_p: np.ndarray, classes: Sequence[str],
                       people, spatial_neighbours, samples: int, rng: np.random.Generator) -> list[tuple]:
    """Each object's relations (``SceneRelation``s, ``p`` their share of the draws): the
    generator's rules over ``samples`` draws of the context and then every object's class
    (``class_p`` ``(contexts, n, classes)``: P(class | its features, the context))."""
    from nablafol.data import SceneRelation
    boxes = [Box(o.x, o.y, o.w, o.h) for o in graph.objects]
    # every draw at once: the same uniforms, in the same order, as one draw after the other
    contexts = rng.choice(len(context_posterior), size=samples, p=context_posterior)
    cumulative = np.cumsum(class_p, axis=2)[contexts]  # (samples, n, classes)
    picks = (rng.random((samples, len(boxes), 1)) * cumulative[:, :, -1:] > cumulative).sum(2)
    draws = Counter(map(tuple, np.minimum(picks, len(classes) - 1).tolist()))
    counts: Counter = Counter()
    for picked, times in draws.items():
        for subject, name, obj in relations_between([classes[k] for k in picked], boxes, graph.width, people,
                                                    spatial_neighbours):
            counts[(subject, name, obj)] += times
    relations: list[list] = [[] for _ in boxes]
    for (subject, name, obj), times in sorted(counts.items()):
        relations[subject].append(SceneRelation(name, graph.objects[obj].id, times / samples))
    return [tuple(r) for r in relations]


def bayes_split(generator, store, split: str, features_only: bool = False) -> list[SceneGraph]:
    """The Bayes oracle's graphs of ``split`` of a dataset ``generator`` made
    (:class:`~nablafol.synthetic.writer.Generator`: ``generate_dataset(...).generator``), over
    the features of ``store``: each concept given the rest of the truth, or (``features_only``)
    given the features and boxes alone."""
    dataset = generator.dataset
    graphs = dataset.scenes[split]
    features = [store[g.image_id].features for g in graphs]
    prior = ClassPrior(dataset.scenes["train"], dataset.vocabulary.classes)
    if features_only:
        return features_only_scene_graphs(graphs, features, generator.codes, dataset.vocabulary, prior,
                                          generator.noise_std, generator.context_scale,
                                          spatial_neighbours=dataset.spatial_neighbours)
    return bayes_scene_graphs(graphs, features, generator.codes, dataset.vocabulary, prior,
                              generator.noise_std, generator.context_scale)


def write_bayes_scene_graphs(data, split: str, path, features_only: bool = False) -> int:
    """The Bayes oracle's graphs of ``split`` of the embedded dataset in ``data`` (generated with
    the default vocabulary and scene settings), written to ``path`` as a probabilistic
    ``*_sceneGraphs.json``; how many scenes. ``features_only``: the posteriors given the features
    and boxes alone (:func:`features_only_scene_graphs`), not each given the rest of the truth."""
    from pathlib import Path

    from nablafol.data import FeatureStore, write_scene_graphs
    from nablafol.errors import InputFileError

    from .writer import SPLITS
    if split not in SPLITS:
        raise InputFileError(data, f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    generator = rebuilt_generator(data)
    bayes = bayes_split(generator, FeatureStore(Path(data) / "features"), split, features_only=features_only)
    write_scene_graphs(path, bayes)
    return len(bayes)


def rebuilt_generator(data):
    """The :class:`~nablafol.synthetic.writer.Generator` of the embedded dataset in ``data``,
    rebuilt from the card's seed and sizes (GQA publishes no test-dev scene graphs, so neither
    does the dataset), checked against the written training graphs and the card's strengths."""
    import json
    from pathlib import Path

    from nablafol.data import load_scene_graphs
    from nablafol.errors import InputFileError

    from .writer import CARD_NAME, SPLITS, Generator, build_dataset, stream_rng
    data = Path(data)
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
    codes = ConceptCodes.draw(dataset.vocabulary, card["features"]["dim"], stream_rng(card["seed"], "codes"))
    if codes.to_json() != card["concepts"]:
        raise InputFileError(card_path, "the concept strengths rebuilt from the seed differ from the card's")
    return Generator(dataset, codes, card["features"]["noise_std"], card["features"]["context_scale"])


def main(argv=None) -> int:
    """``python -m nablafol.synthetic.bayes DATA SPLIT OUT [--given-truth]``: write the Bayes
    oracle's graphs (given the features and boxes alone; ``--given-truth``: each concept given the
    rest of the truth, the looser bound)."""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m nablafol.synthetic.bayes", description=main.__doc__)
    parser.add_argument("data"), parser.add_argument("split"), parser.add_argument("out")
    parser.add_argument("--given-truth", action="store_true")
    args = parser.parse_args(argv)
    from nablafol.errors import NablafolError
    try:
        n = write_bayes_scene_graphs(args.data, args.split, args.out, features_only=not args.given_truth)
    except NablafolError as e:
        print(f"bayes: {e}")
        return 1
    print(f"{n:,} scenes of {args.split} written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
