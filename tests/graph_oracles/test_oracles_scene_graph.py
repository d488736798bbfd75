"""SceneGraphOracle on the hand-written GQA fixtures: every predicate kind, hand-computed."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from nablafol.data import load_scene_graphs, scene_graph_from_record
from nablafol.errors import OracleError, ShapeError, UnknownPredicateError
from nablafol.ir import Predicate
from nablafol.oracle import Requests
from nablafol.graph_oracles import COMPARATIVES, SCENE_OBJECT_ID, SceneGraphOracle

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"


@pytest.fixture(scope="module")
def plain():
    return load_scene_graphs(FIXTURES / "val_sceneGraphs.json")


@pytest.fixture(scope="module")
def predicted():
    return load_scene_graphs(FIXTURES / "predicted_sceneGraphs.json")


@pytest.fixture(scope="module")
def riding(plain):
    """Scene 2354786: man, horse, helmet, fence, tree, then the scene pseudo-object."""
    return SceneGraphOracle([plain["2354786"]])


@pytest.fixture(scope="module")
def kitchen(plain):
    """Scene n161313: table, bag, cup, chair, wall, pseudo-object (location kitchen)."""
    return SceneGraphOracle([plain["n161313"]])


def unary(oracle, name, kind, scene=0):
    return oracle.unary(Requests.build([scene], [Predicate(name, kind=kind)])).exp()[0].tolist()


def binary(oracle, name, kind, scene=0):
    return oracle.binary(Requests.build([scene], [Predicate(name, arity=2, kind=kind)])).exp()[0]


def pairs(table) -> set[tuple[int, int]]:
    return {tuple(ij) for ij in (table > 0.5).nonzero().tolist()}


# ---------------------------------------------------------------- plain graphs: unary kinds

def test_sizes_count_the_scene_pseudo_object(plain):
    oracle = SceneGraphOracle([plain["2354786"], plain["n161313"], plain["2417468"]])
    assert oracle.num_objects.tolist() == [6, 6, 6]
    assert oracle.object_ids(1) == ("2927012", "2927013", "2927014", "2927015", "2927016", SCENE_OBJECT_ID)


def test_name_holds_for_the_class_and_its_categories(riding, kitchen):
    assert unary(riding, "man", "name") == [1, 0, 0, 0, 0, 0]
    assert unary(riding, "person", "name") == [1, 0, 0, 0, 0, 0]  # man lies under person
    assert unary(riding, "animal", "name") == [0, 1, 0, 0, 0, 0]
    assert unary(kitchen, "furniture", "name") == [1, 0, 0, 1, 0, 0]  # table, chair


def test_class_is_exact(riding):
    assert unary(riding, "man", "class") == [1, 0, 0, 0, 0, 0]
    assert unary(riding, "person", "class") == [0, 0, 0, 0, 0, 0]  # nobody is labelled person


def test_attributes_and_the_scene_pseudo_object(riding, plain):
    assert unary(riding, "young", "attr") == [1, 0, 0, 0, 0, 0]
    assert unary(riding, "white", "attr") == [0, 0, 0, 1, 0, 0]
    beach = SceneGraphOracle([plain["2417468"]])
    assert unary(beach, "sunny", "attr") == [0, 0, 0, 0, 0, 1]  # weather
    assert unary(beach, "beach", "attr") == [0, 0, 0, 0, 0, 1]  # location
    assert unary(beach, "scene", "scene") == [0, 0, 0, 0, 0, 1]
    assert unary(beach, "water", "name") == [0, 0, 0, 1, 0, 0]  # the pseudo-object has no name


def test_scene_place_and_room_from_extra_fields():
    graph = scene_graph_from_record("1", {"width": 10, "height": 10, "place": "beach",
                                          "room": {"kitchen": 0.25}, "objects": {}})
    oracle = SceneGraphOracle([graph])
    assert oracle.num_objects.tolist() == [1]
    assert unary(oracle, "beach", "attr") == [1.0]
    assert unary(oracle, "kitchen", "attr") == [0.25]
    assert unary(oracle, "indoors", "attr") == [0.0]


def test_bad_scene_field_is_one_clear_error():
    graph = scene_graph_from_record("7", {"width": 10, "height": 10, "room": ["kitchen"], "objects": {}})
    with pytest.raises(OracleError, match=r"image 7: 'room' must be a string"):
        SceneGraphOracle([graph])


def test_positions_in_thirds(riding):
    # centres (x, y) in a 500 x 333 image: man (235, 160), horse (240, 230), helmet (235, 70),
    # fence (420, 225), tree (70, 110)
    assert unary(riding, "left", "hposition") == [0, 0, 0, 0, 1, 0]
    assert unary(riding, "middle", "hposition") == [1, 1, 1, 0, 0, 0]
    assert unary(riding, "right", "hposition") == [0, 0, 0, 1, 0, 0]
    assert unary(riding, "top", "vposition") == [0, 0, 1, 0, 1, 0]
    assert unary(riding, "middle", "vposition") == [1, 0, 0, 0, 0, 0]
    assert unary(riding, "bottom", "vposition") == [0, 1, 0, 1, 0, 0]


def test_raw_forms_normalize():
    graph = scene_graph_from_record("1", {"width": 90, "height": 90, "objects": {
        "1": {"name": "plates", "x": 0, "y": 0, "w": 1, "h": 1, "attributes": [], "relations": []},
        "2": {"name": "skis", "x": 0, "y": 0, "w": 1, "h": 1, "attributes": [], "relations": []}}})
    oracle = SceneGraphOracle([graph])
    assert unary(oracle, "plate", "name") == [1, 0, 0]
    assert unary(oracle, "ski", "class") == [0, 1, 0]
    assert unary(oracle, "plates", "name") == [1, 0, 0]  # a raw predicate name reaches the vocabulary too


# ---------------------------------------------------------------- plain graphs: binary kinds

def test_relations_as_stored_on_the_subject(riding):
    assert pairs(binary(riding, "riding", "rel")) == {(0, 1)}
    assert pairs(binary(riding, "to the left of", "rel")) == {(0, 3), (1, 3)}
    assert pairs(binary(riding, "to the right of", "rel")) == {(3, 0), (3, 1)}
    assert pairs(binary(riding, "on", "rel")) == {(2, 0)}


def test_geometric_comparatives(riding):
    # areas: man 18000, horse 32400, helmet 1200, fence 14400, tree 30800
    larger = binary(riding, "larger", "compare")
    assert larger[0, 3] == 1 and larger[3, 0] == 0  # 18000 > 1.1 * 14400
    assert larger[1, 4] == 0 and larger[4, 1] == 0  # 32400 vs 30800: within the 10 % margin
    assert torch.equal(binary(riding, "smaller", "compare"), larger.T)
    taller = binary(riding, "taller", "compare")
    assert taller[4, 0] == 0 and taller[0, 4] == 0  # 220 is exactly 1.1 * 200: not taller
    higher = binary(riding, "higher", "compare")
    assert higher[2, 0] == 1  # helmet centre 70 vs man 160
    assert higher[3, 1] == 0 and higher[1, 3] == 0  # fence 225 vs horse 230: within 0.05 * 333
    for name in ("larger", "taller", "higher", "longer"):
        table = binary(riding, name, "compare")
        assert table[5].sum() == 0 and table[:, 5].sum() == 0  # the scene takes part in nothing
        assert table.diagonal().sum() == 0


def test_same_attribute_type(kitchen, riding):
    # table brown, bag black, cup white, chair brown, wall white
    assert pairs(binary(kitchen, "color", "same")) == {(0, 3), (3, 0), (2, 4), (4, 2)}
    assert pairs(binary(kitchen, "material", "same")) == set()  # leather is the only material
    assert pairs(binary(riding, "color", "same")) == set()
    # positions come from geometry: man, horse, helmet share the middle third
    assert pairs(binary(riding, "hposition", "same")) == {(i, j) for i in range(3) for j in range(3) if i != j}


def test_plain_graph_answers_are_zero_or_one(plain):
    oracle = SceneGraphOracle(list(plain.values()))
    u = [Predicate(n, kind="name") for n in ("person", "furniture", "man", "water")] + \
        [Predicate("white", kind="attr"), Predicate("top", kind="vposition")]
    b = [Predicate(n, 2, "compare") for n in COMPARATIVES] + [Predicate("color", 2, "same"),
                                                             Predicate("on", 2, "rel")]
    for preds, ask in ((u, oracle.unary), (b, oracle.binary)):
        scenes = [s for s in range(3) for _ in preds]
        probs = ask(Requests.build(scenes, preds * 3)).exp()
        assert set(probs.unique().tolist()) <= {0.0, 1.0}


# ---------------------------------------------------------------- probabilistic graphs

def test_probabilistic_names_sum_over_classes_and_cap(predicted):
    oracle = SceneGraphOracle([predicted["2354786"], predicted["2417468"]])
    man = unary(oracle, "person", "name")[0]
    assert man == pytest.approx(0.82 + 0.11 + 0.04)  # man, person, boy all count for person
    assert unary(oracle, "boy", "class")[0] == pytest.approx(0.04)
    assert unary(oracle, "animal", "name")[1] == pytest.approx(0.88 + 0.09)  # horse, cow
    # man 0.6 + woman 0.3 + person 0.6 exceeds 1: capped
    assert unary(oracle, "person", "name", scene=1)[1] == 1.0
    assert unary(oracle, "person", "class", scene=1)[1] == pytest.approx(0.6)
    assert unary(oracle, "clothing", "name", scene=1)[2] == pytest.approx(0.95)  # wetsuit, shirt
    assert oracle.unknown_concepts[("name", "railing")] == 1  # not in GQA's vocabulary: counted


def test_probabilistic_attributes_and_relations(predicted):
    oracle = SceneGraphOracle([predicted["2354786"], predicted["2417468"]])
    assert unary(oracle, "young", "attr") == pytest.approx([0.7, 0, 0, 0, 0])
    assert unary(oracle, "white", "attr") == pytest.approx([0, 0.05, 0, 0.6, 0])
    riding = binary(oracle, "riding", "rel")
    assert riding[0, 1] == pytest.approx(0.91) and riding.sum() == pytest.approx(0.91)
    holding = binary(oracle, "holding", "rel", scene=1)  # listed twice: 0.88 and 0.3
    assert holding[1, 0] == pytest.approx(1 - 0.12 * 0.7)
    same = binary(oracle, "color", "same")  # horse white 0.05, fence white 0.6
    assert same[1, 3] == pytest.approx(0.05 * 0.6) and same[3, 1] == pytest.approx(0.05 * 0.6)


def _graph(objects: dict, **scene) -> object:
    record = {"width": 300, "height": 300, **scene, "objects": {
        oid: {"x": 0, "y": 0, "w": 10, "h": 10, "attributes": [], "relations": [], **o} for oid, o in objects.items()}}
    return scene_graph_from_record("g", record)


def test_same_is_one_minus_product_over_values():
    graph = _graph({"1": {"name": "shirt", "attributes": {"red": 0.5, "blue": 0.5}},
                    "2": {"name": "shirt", "attributes": {"red": 0.4, "blue": 0.5}}})
    same = binary(SceneGraphOracle([graph]), "color", "same")
    expected = 1 - (1 - 0.5 * 0.4) * (1 - 0.5 * 0.5)
    assert same[0, 1] == pytest.approx(expected) and same[1, 0] == pytest.approx(expected)
    assert same[0, 0] == 0  # X ≠ Y


def test_age_and_health_comparatives():
    graph = _graph({"1": {"name": "man", "attributes": ["old"]}, "2": {"name": "boy"},
                    "3": {"name": "woman", "attributes": {"young": 0.5}},
                    "4": {"name": "apple"}, "5": {"name": "pizza"}, "6": {"name": "chair"}})
    oracle = SceneGraphOracle([graph])
    older = binary(oracle, "older", "compare")
    assert older[0, 1] == 1 and older[1, 0] == 0  # old man vs boy
    assert older[0, 2] == pytest.approx(0.5)  # old vs young with p 0.5; both adults
    assert older[2, 1] == 1  # a woman is a grown-up, the boy a child
    assert torch.equal(binary(oracle, "younger", "compare"), older.T)
    healthier = binary(oracle, "healthier", "compare")
    assert pairs(healthier) == {(3, 4)}  # apple vs pizza, nothing else ranked
    assert torch.equal(binary(oracle, "less healthy", "compare"), healthier.T)


def test_batch_of_different_sizes_pads(plain, predicted):
    oracle = SceneGraphOracle([predicted["2417468"], plain["2354786"]])  # 4 and 6 objects
    assert oracle.num_objects.tolist() == [4, 6]
    req = Requests.build([0, 1], [Predicate("man", kind="name")] * 2)
    probs = oracle.unary(req).exp()
    assert probs.shape == (2, 6)
    assert probs[0, :4].tolist() == pytest.approx([0, 0.6, 0, 0])
    assert probs[1].tolist() == [1, 0, 0, 0, 0, 0]
    rel = oracle.binary(Requests.build([1, 0], [Predicate("wearing", 2, "rel")] * 2)).exp()
    assert rel.shape == (2, 6, 6) and rel[0, 0, 2] == 1 and rel[1, 1, 2] == 0.5


def test_many_requests_match_one_by_one(plain):
    oracle = SceneGraphOracle(list(plain.values()))
    preds = [Predicate(n, kind=k) for n, k in (("man", "name"), ("white", "attr"), ("left", "hposition"),
                                               ("furniture", "name"), ("scene", "scene"), ("water", "class"))]
    scenes = [s for s in range(3) for _ in preds]
    together = oracle.unary(Requests.build(scenes, preds * 3))
    for r, (s, p) in enumerate(zip(scenes, preds * 3)):
        assert torch.equal(together[r], oracle.unary(Requests.build([s], [p]))[0])


# ---------------------------------------------------------------- what the oracle does not know

@pytest.mark.parametrize("predicate", [Predicate("unicorn", kind="name"), Predicate("unicorn", kind="class"),
                                       Predicate("sparkly", kind="attr"), Predicate("juggling", 2, "rel")])
def test_names_values_and_relations_no_graph_holds_are_false_of_every_object(riding, predicate):
    assert riding.knows(predicate)  # the vocabulary is open: a scene graph is the whole truth
    ask = riding.unary if predicate.arity == 1 else riding.binary
    assert ask(Requests.build([0], [predicate])).exp().sum() == 0


@pytest.mark.parametrize("predicate, message", [
    (Predicate("red", kind="colour"), r"'red' \(kind 'colour', arity 1\): the scene-graph oracle's kinds are"),
    (Predicate("center", kind="hposition"), r"hposition is one of left, middle, right"),
])
def test_unknown_unary_predicates(riding, predicate, message):
    assert not riding.knows(predicate)
    with pytest.raises(UnknownPredicateError, match=message):
        riding.unary(Requests.build([0], [predicate]))


@pytest.mark.parametrize("predicate, message", [
    (Predicate("wiser", 2, "compare"), r"not a comparative \(larger, smaller"),
    (Predicate("flavour", 2, "same"), r"not an attribute type"),
    (Predicate("on", 1, "rel"), r"kind 'rel' takes 2 arguments"),
])
def test_unknown_binary_predicates(riding, predicate, message):
    assert not riding.knows(predicate)
    ask = riding.binary if predicate.arity == 2 else riding.unary
    with pytest.raises(UnknownPredicateError, match=message):
        ask(Requests.build([0], [predicate]))


def test_knows_every_kind_it_answers(riding):
    for p in (Predicate("chair", kind="name"), Predicate("chair", kind="class"), Predicate("red", kind="attr"),
              Predicate("left", kind="hposition"), Predicate("top", kind="vposition"),
              Predicate("scene", kind="scene"), Predicate("on", 2, "rel"), Predicate("color", 2, "same"),
              Predicate("sportactivity", 2, "same")) + tuple(Predicate(c, 2, "compare") for c in COMPARATIVES):
        assert riding.knows(p), p


def test_empty_requests(riding):
    empty = Requests(torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long), ())
    assert riding.unary(empty).shape == (0, 6)
    assert riding.binary(empty).shape == (0, 6, 6)


def test_answers_are_log_probabilities_in_default_dtype(riding):
    out = riding.unary(Requests.build([0], [Predicate("man", kind="name")]))
    assert out.dtype == torch.get_default_dtype()
    assert out[0, 0] == 0 and out[0, 1] == float("-inf")
    assert not np.isnan(out.numpy()).any()


def test_scene_index_out_of_range(riding):
    with pytest.raises(ShapeError, match=r"SceneGraphOracle: scene index 3 out of range for a batch of 1 scenes"):
        riding.unary(Requests.build([3], [Predicate("man", kind="name")]))


# ---------------------------------------------------------------- relations, against a plain loop

_RELATIONS = ["holding", "riding", "to the left of", "wearing", "flying over the moon"]  # the last: unknown
_PROBABILITIES = st.sampled_from([0.0, 0.3, 0.5, 0.88, 1.0]) | st.floats(0, 1)


@st.composite
def _relation_scenes(draw):
    """Batches of 1-3 scenes of 1-4 objects, each object listing 0-5 relations (repeats likely)."""
    graphs = []
    for s in range(draw(st.integers(1, 3))):
        ids = [f"{s}{k}" for k in range(draw(st.integers(1, 4)))]
        objects = {}
        for oid in ids:
            listed = draw(st.lists(st.tuples(st.sampled_from(_RELATIONS), st.sampled_from(ids), _PROBABILITIES),
                                   max_size=5))
            objects[oid] = {"name": "man", "relations": [{"name": r, "object": o, "p": p} for r, o, p in listed]}
        graphs.append(_graph(objects))
    return graphs


def _relations_one_by_one(graphs, relation: str, n: int) -> np.ndarray:
    """The documented rule, relation by relation: ``1 − Π (1 − p)`` over the listings, in order."""
    out = np.zeros((len(graphs), n, n))
    for b, graph in enumerate(graphs):
        index = {obj.id: i for i, obj in enumerate(graph.objects)}
        for i, obj in enumerate(graph.objects):
            not_held: dict = {}
            for rel in obj.relations:
                if rel.name == relation:
                    j = index[rel.object_id]
                    not_held[j] = not_held.get(j, 1.0) * (1.0 - rel.p)
            for j, q in not_held.items():
                out[b, i, j] = 1 - q
    return out


@given(_relation_scenes())
def test_relation_tables_equal_the_plain_loop_bit_for_bit(graphs):
    oracle = SceneGraphOracle(graphs)
    n, scenes = int(oracle.num_objects.max()), list(range(len(graphs)))
    for relation in _RELATIONS[:-1]:
        expected = _relations_one_by_one(graphs, relation, n)
        # the fact table itself, in float64: bit for bit
        exact = oracle._relation_facts.gather(np.array(scenes), np.full(len(graphs), oracle.columns.relations[relation]), n)
        assert np.array_equal(exact.numpy(), expected)
        # and what the oracle answers (log-probabilities in the default dtype)
        answered = oracle.binary(Requests.build(scenes, [Predicate(relation, arity=2, kind="rel")] * len(graphs)))
        assert np.allclose(answered.exp().double().numpy(), expected, atol=1e-6)
    unknown = sum(1 for g in graphs for o in g.objects for r in o.relations if r.name == _RELATIONS[-1])
    assert oracle.unknown_concepts[("rel", _RELATIONS[-1])] == unknown


# ---------------------------------------------------------------- names and values, against a plain loop

_NAMES = ["man", "person", "boy", "girls", "horse", "unicorn", "Shirts ", "woman"]  # unicorn: outside the ontology
_VALUES = ["white", "young", "old", "female", "sparkly", "red"]  # sparkly: outside the ontology


@st.composite
def _probabilistic_scenes(draw):
    """Batches of 1-3 scenes of 0-4 objects with name and attribute distributions and scene fields."""
    graphs = []
    for s in range(draw(st.integers(1, 3))):
        objects = {}
        for k in range(draw(st.integers(0, 4))):
            names = draw(st.dictionaries(st.sampled_from(_NAMES), _PROBABILITIES, min_size=1, max_size=3))
            values = draw(st.dictionaries(st.sampled_from(_VALUES), _PROBABILITIES, max_size=3))
            objects[f"{s}{k}"] = {"names": names, "attributes": values, "x": k * 20, "w": 5 + k}
        scene = draw(st.fixed_dictionaries({}, optional={
            "location": st.sampled_from(["indoors", "outdoors", "sparkly"]),
            "place": st.dictionaries(st.sampled_from(["beach", "young", "sparkly"]), _PROBABILITIES, max_size=2)}))
        graphs.append(_graph(objects, **scene))
    return graphs


def _facts_one_by_one(oracle, graphs) -> tuple[np.ndarray, list]:
    """The documented rules, object by object: ``(B, columns, N)`` probabilities (names summed in
    order and capped at 1, then values by noisy-or, which replace a name's value for the same
    column; the pseudo-object's scene fields and ``scene``) and the strings outside the ontology
    in the order met."""
    cols, n = oracle.columns, int(oracle.num_objects.max())
    out, unknown = np.zeros((len(graphs), cols.n_unary, n)), []

    def noisy_or(pairs, facts):
        not_held: dict = {}
        for raw, p in pairs:
            columns, outside = cols.value(raw)
            unknown.extend([("attr", raw)] if outside else [])
            for c in columns:
                not_held[c] = not_held.get(c, 1.0) * (1.0 - p)
        facts.update({c: 1.0 - q for c, q in not_held.items()})

    for b, graph in enumerate(graphs):
        for i, obj in enumerate(graph.objects):
            sums: dict = {}
            for raw, p in obj.names.items():
                columns, outside = cols.label(raw)
                unknown.extend([("name", raw)] if outside else [])
                for c in columns:
                    sums[c] = sums.get(c, 0.0) + p
            facts = {c: min(1.0, s) for c, s in sums.items()}
            noisy_or(obj.attributes.items(), facts)
            for c, p in facts.items():
                out[b, c, i] = p
        facts = {}
        pairs = [(v, 1.0) for v in (graph.location,) if v is not None]
        pairs += list(graph.extra.get("place", {}).items())
        noisy_or(pairs, facts)
        facts[cols.unary[("scene", "scene")]] = 1.0
        for c, p in facts.items():
            out[b, c, len(graph.objects)] = p
    return out, unknown


@pytest.mark.slow
@given(_probabilistic_scenes())
@example([_graph({"0": {"names": {"girls": 0.5}, "attributes": {"female": 0.0}}})])  # a value replaces a name's
def test_name_and_value_facts_equal_the_plain_loop_bit_for_bit(graphs):
    oracle = SceneGraphOracle(graphs)
    expected, unknown = _facts_one_by_one(oracle, graphs)
    n_columns, n = expected.shape[1:]
    positions = [c for (kind, _), c in oracle.columns.unary.items() if kind in ("hposition", "vposition")]
    scenes = np.repeat(np.arange(len(graphs)), n_columns)
    facts = oracle._unary_facts.gather(scenes, np.tile(np.arange(n_columns), len(graphs)), n).numpy()
    facts = facts.reshape(len(graphs), n_columns, n)
    facts[:, positions] = 0  # positions: from the boxes (test_positions_in_thirds)
    assert np.array_equal(facts, expected)
    assert list(oracle.unknown_concepts.items()) == list(Counter(unknown).items())  # counts, in order met


@pytest.mark.slow
@given(_probabilistic_scenes())
def test_padding_is_an_exact_zero_of_every_kind(graphs):
    oracle = SceneGraphOracle(graphs + [_graph({str(k): {"name": "man"} for k in range(6)})])
    assert oracle.pads_with_zeros  # the engine trusts this and does not mask the padding again
    sizes = oracle.num_objects.tolist()
    unary = [Predicate(w, kind=k) for k in ("name", "class", "attr") for w in _NAMES + _VALUES + ["it", "he"]]
    unary += [Predicate(w, kind=k) for k, ws in (("hposition", ("left", "middle")), ("vposition", ("top",)),
                                                  ("scene", ("scene",))) for w in ws]
    binary = [Predicate(c, 2, "compare") for c in COMPARATIVES]
    binary += [Predicate(t, 2, "same") for t in ("color", "age", "hposition")] + [Predicate("holding", 2, "rel")]
    for predicates, ask in ((unary, oracle.unary), (binary, oracle.binary)):
        scenes = [b for b in range(len(sizes)) for _ in predicates]
        table = ask(Requests.build(scenes, predicates * len(sizes)))
        for r, b in enumerate(scenes):
            assert torch.all(table[r, sizes[b]:] == float("-inf"))
            if table.dim() == 3:
                assert torch.all(table[r, :, sizes[b]:] == float("-inf"))


@pytest.mark.parametrize("where, bad", [("names", float("nan")), ("names", 1.5), ("attributes", -0.1),
                                        ("relations", float("nan"))])
def test_a_graph_built_in_memory_with_a_bad_probability_is_refused_in_one_line(where, bad):
    """The file reader refuses such values; a graph built (or changed) in memory reaches the oracle
    unchecked, and a NaN name was read as certain or dropped: a silent wrong answer."""
    graph = _graph({"1": {"names": {"man": 0.5, "boy": 0.2}, "attributes": {"red": 0.3},
                          "relations": [{"name": "near", "object": "2", "p": 0.5}]},
                    "2": {"name": "horse"}})
    first = graph.objects[0]
    if where == "relations":
        object.__setattr__(first.relations[0], "p", bad)
    else:
        getattr(first, where)[next(iter(getattr(first, where)))] = bad
    with pytest.raises(OracleError) as caught:
        SceneGraphOracle([graph])
    message = str(caught.value)
    assert "\n" not in message and "not in [0, 1]" in message and repr(bad) in message


def test_only_the_scene_graph_oracle_itself_promises_zeros_at_padding():
    class Noisy(SceneGraphOracle):  # a subclass may change the tables
        pass

    graphs = [_graph({"1": {"name": "man"}})]
    assert SceneGraphOracle(graphs).pads_with_zeros and not Noisy(graphs).pads_with_zeros


@pytest.mark.slow
@given(_probabilistic_scenes(), _relation_scenes())
def test_a_vocabulary_keeps_few_raw_strings_and_answers_the_same(graphs, relation_graphs):
    """The raw-string caches are bounded (cleared when full): with room for two strings, the facts,
    the unknown strings' counts and the relation tables are those of the plain loops."""
    from nablafol.graph_oracles import scene_graph
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scene_graph, "RAW_STRINGS_KEPT", 2)
        columns = SceneGraphOracle(graphs).columns  # shared by every oracle over the ontology
        for cache in (columns.label_cache, columns.value_cache, columns.relation_cache):
            cache.clear()
        test_name_and_value_facts_equal_the_plain_loop_bit_for_bit.hypothesis.inner_test(graphs)
        test_relation_tables_equal_the_plain_loop_bit_for_bit.hypothesis.inner_test(relation_graphs)
        assert max(map(len, (columns.label_cache, columns.value_cache, columns.relation_cache))) <= 2
