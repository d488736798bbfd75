"""Generated scenes: GQA's format, boxes inside the image, relations consistent with the boxes."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from nablafol.synthetic import SceneGenerator, Vocabulary, VocabularyError
from nablafol.synthetic.scenes import LEFT_RIGHT_MARGIN, NEAR_GAP, ON_BAND, Box, _gap, cover, relations_between


@pytest.fixture(scope="module")
def graphs(dataset):
    return [g for split in ("train", "val", "testdev") for g in dataset.scenes[split]]


def _box(obj) -> Box:
    return Box(obj.x, obj.y, obj.w, obj.h)


@pytest.mark.slow
def test_scenes_have_gqa_shape_and_unique_ids(dataset, graphs):
    image_ids = [g.image_id for g in graphs]
    object_ids = [o.id for g in graphs for o in g.objects]
    assert len(set(image_ids)) == len(image_ids) and len(set(object_ids)) == len(object_ids)
    assert all(i.isdigit() for i in image_ids + object_ids)
    vocabulary = dataset.vocabulary
    for graph in graphs:
        assert 3 <= len(graph.objects) <= 8 and (graph.width, graph.height) == (640, 480)  # the default sizes
        assert graph.location in ("indoors", "outdoors")
        assert (graph.weather is None) == (graph.location == "indoors")
        for obj in graph.objects:
            assert obj.is_plain and obj.name in vocabulary.classes
            assert 0 <= obj.x and obj.x + obj.w <= graph.width and 0 <= obj.y and obj.y + obj.h <= graph.height
            assert obj.w >= 2 and obj.h >= 2
            types = [vocabulary.type_of_value(v) for v in obj.attributes]
            assert len(types) == len(set(types))  # at most one value per type
            assert all(v in vocabulary.palette(obj.name, t) for v, t in zip(obj.attributes, types))


@pytest.mark.slow
def test_every_stored_relation_agrees_with_the_boxes(dataset, graphs):
    people = set(dataset.vocabulary.categories["person"])
    seen = set()
    for graph in graphs:
        boxes = {o.id: _box(o) for o in graph.objects}
        names = {o.id: o.name for o in graph.objects}
        stored = {(o.id, r.name, r.object_id) for o in graph.objects for r in o.relations}
        for a, relation, b in stored:
            A, B = boxes[a], boxes[b]
            seen.add(relation)
            if relation == "to the left of":
                assert A.cx < B.cx - LEFT_RIGHT_MARGIN * graph.width and (b, "to the right of", a) in stored
            elif relation == "to the right of":
                assert A.cx > B.cx + LEFT_RIGHT_MARGIN * graph.width and (b, "to the left of", a) in stored
            elif relation == "above":
                assert A.y + A.h <= B.y and min(A.x + A.w, B.x + B.w) > max(A.x, B.x) and (b, "below", a) in stored
            elif relation == "below":
                assert (b, "above", a) in stored
            elif relation == "on":
                assert B.y <= A.y + A.h <= B.y + ON_BAND * B.h and B.x <= A.cx <= B.x + B.w
                assert A.w * A.h < B.w * B.h and (b, "under", a) in stored
            elif relation == "under":
                assert (b, "on", a) in stored
            elif relation == "near":
                dx = max(0, max(A.x, B.x) - min(A.x + A.w, B.x + B.w))
                dy = max(0, max(A.y, B.y) - min(A.y + A.h, B.y + B.h))
                assert math.hypot(dx, dy) <= NEAR_GAP * graph.width and (b, "near", a) in stored
            elif relation == "wearing":
                assert names[a] in people and cover(B, A) >= 0.8
            elif relation == "holding":
                assert names[a] in people and cover(B, A) >= 0.6
            else:
                pytest.fail(f"unexpected relation {relation!r}")
    assert seen == set(dataset.vocabulary.stored_relations)


@pytest.mark.slow
def test_left_and_right_are_complete_outside_wearing_and_holding(graphs):
    for graph in graphs:
        stored = {(o.id, r.name, r.object_id) for o in graph.objects for r in o.relations}
        attached = {(a, b) for a, r, b in stored if r in ("wearing", "holding")}
        for x, y in itertools.permutations(graph.objects, 2):
            if (x.id, y.id) in attached or (y.id, x.id) in attached:
                continue
            dx = (x.x + x.w / 2) - (y.x + y.w / 2)
            expected = ("to the left of" if dx < -LEFT_RIGHT_MARGIN * graph.width else
                        "to the right of" if dx > LEFT_RIGHT_MARGIN * graph.width else None)
            found = {r for a, r, b in stored if a == x.id and b == y.id and r in ("to the left of", "to the right of")}
            assert found == ({expected} if expected else set())


@pytest.mark.slow
def test_stored_relations_are_exactly_the_rules(dataset, graphs):
    people = frozenset(dataset.vocabulary.categories["person"])
    for graph in graphs[:100]:
        ids = graph.object_ids
        rules = relations_between([o.name for o in graph.objects], [_box(o) for o in graph.objects],
                                  graph.width, people)
        stored = sorted((ids.index(o.id), r.name, ids.index(r.object_id)) for o in graph.objects for r in o.relations)
        assert stored == sorted(rules)


def test_generator_is_deterministic_and_checks_its_arguments():
    generator = SceneGenerator(Vocabulary.default())
    first = generator.generate(np.random.default_rng(7), "1", (str(i) for i in itertools.count(10)))
    second = generator.generate(np.random.default_rng(7), "1", (str(i) for i in itertools.count(10)))
    assert first.to_record() == second.to_record()
    with pytest.raises(ValueError, match="min_objects"):
        SceneGenerator(Vocabulary.default(), min_objects=9, max_objects=3)
    vocabulary = Vocabulary(categories={"animal": ("dog", "lion")}, class_types={"dog": {}, "lion": {}})
    with pytest.raises(VocabularyError, match="'lion'"):
        SceneGenerator(vocabulary)


def test_a_restricted_vocabulary_gives_scenes_of_its_classes_only():
    vocabulary = Vocabulary.default(classes=["man", "woman", "table", "cup", "apple", "hat", "car", "bench"])
    generator = SceneGenerator(vocabulary)
    rng, ids = np.random.default_rng(1), (str(i) for i in itertools.count(10))
    names = {o.name for k in range(30) for o in generator.generate(rng, str(k), ids).objects}
    assert names <= set(vocabulary.classes) and len(names) >= 5


def test_a_vocabulary_without_standing_things_is_refused_in_one_line():
    with pytest.raises(VocabularyError) as caught:
        SceneGenerator(Vocabulary.default(classes=["cup", "apple"]))
    assert "cannot be built" in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.slow
def test_large_scenes_are_a_share_drawn_above_the_ordinary_range():
    vocabulary = Vocabulary.default()
    ids = (str(n) for n in itertools.count(10_000))

    def sizes(generator, seed, n=30):
        rng = np.random.default_rng(seed)
        return [len(generator.generate(rng, str(k), ids).objects) for k in range(n)]

    ordinary = sizes(SceneGenerator(vocabulary, min_objects=3, max_objects=6), 5)
    assert sizes(SceneGenerator(vocabulary, min_objects=3, max_objects=6, large_share=0.0), 5) == ordinary
    large = sizes(SceneGenerator(vocabulary, min_objects=3, max_objects=6, large_share=1.0), 5, n=6)
    assert all(6 < n <= 100 for n in large)  # (a crowded draw may place fewer than its target)
    mixed = sizes(SceneGenerator(vocabulary, min_objects=3, max_objects=6, large_share=0.3), 6, n=60)
    assert 0 < sum(n > 6 for n in mixed) < 60
    for bad in (dict(large_share=1.5), dict(large_share=-0.1), dict(max_objects=100, large_share=0.1)):
        with pytest.raises(ValueError):
            SceneGenerator(vocabulary, min_objects=3, **{"max_objects": 6, **bad})


def test_spatial_neighbours_keep_the_physical_relations_and_the_nearest_spatial_ones():
    vocabulary = Vocabulary.default()
    spatial = {"to the left of", "to the right of", "above", "below", "near"}

    def scenes(k):
        rng, ids = np.random.default_rng(3), (str(n) for n in itertools.count(10))
        generator = SceneGenerator(vocabulary, min_objects=8, max_objects=16, spatial_neighbours=k)
        return [generator.generate(rng, str(i), ids) for i in range(12)]

    dense, sparse = scenes(None), scenes(2)
    total = {"dense": 0, "sparse": 0}
    for d, s in zip(dense, sparse):
        assert [o.id for o in d.objects] == [o.id for o in s.objects]  # the same scene, fewer relations
        boxes = {o.id: _box(o) for o in d.objects}
        for do, so in zip(d.objects, s.objects):
            kept = {(r.name, r.object_id) for r in so.relations}
            every = {(r.name, r.object_id) for r in do.relations}
            assert kept <= every
            assert {r for r in every if r[0] not in spatial} <= kept  # wearing, holding, on, under stay
            others = sorted((o.id for o in d.objects if o.id != do.id),
                            key=lambda o: (_gap(boxes[do.id], boxes[o]), d.object_ids.index(o)))
            assert {r for r in every if r[0] in spatial and r[1] in others[:2]} <= kept
            assert all(r[1] in others[:2] for r in kept if r[0] in spatial)
            total["dense"] += len(every)
            total["sparse"] += len(kept)
    objects = sum(len(g.objects) for g in sparse)
    assert total["sparse"] / objects < 5 < total["dense"] / objects  # GQA's sample: 2.2-3.8 an object
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="spatial_neighbours"):
            SceneGenerator(vocabulary, spatial_neighbours=bad)
