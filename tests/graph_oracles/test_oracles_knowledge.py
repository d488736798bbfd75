"""Knowledge files, the built-in sample, and the KnowledgeOracle's inheritance through categories."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from nablafol.dsl import Ontology
from nablafol.data import load_scene_graphs
from nablafol.errors import InputFileError, UnknownPredicateError
from nablafol.ir import Predicate
from nablafol.oracle import Requests
from nablafol.graph_oracles import KnowledgeBase, KnowledgeOracle, SceneGraphOracle, Triple
from nablafol.graph_oracles.knowledge import canonical_name, split_tail

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"


def kg(name, arity=1):
    return Predicate(name, arity=arity, kind="kg")


def ask_unary(oracle, name, scene=0):
    return oracle.unary(Requests.build([scene], [kg(name)])).exp()[0].tolist()


def ask_binary(oracle, name, scene=0):
    return oracle.binary(Requests.build([scene], [kg(name, 2)])).exp()[0]


# ---------------------------------------------------------------- files

def test_tsv_file_with_header_comments_and_confidence(tmp_path):
    path = tmp_path / "kb.tsv"
    path.write_text("# my knowledge\nhead\trelation\ttail\tconfidence\n\nfork\tCapableOf\tlift  food\n"
                    "cat\tIsA\tanimal\t0.9\n", encoding="utf-8")
    kb = KnowledgeBase.load(path)
    assert kb.triples == (Triple("fork", "CapableOf", "lift food"), Triple("cat", "IsA", "animal", 0.9))


def test_json_file_objects_and_lists(tmp_path):
    path = tmp_path / "kb.json"
    path.write_text(json.dumps({"triples": [{"head": "fork", "relation": "UsedFor", "tail": "eating"},
                                            ["dog", "IsA", "animal", 0.5]]}), encoding="utf-8")
    kb = KnowledgeBase.load(path)
    assert [t.fact for t in kb] == ["UsedFor:eating", "IsA:animal"]
    assert kb.triples[1].confidence == 0.5


@pytest.mark.parametrize("text, message", [
    ("fork\tCapableOf\n", r"kb.tsv \(line 1\): expected head<TAB>relation<TAB>tail.*found 2"),
    ("# c\nfork\tCapableOf\tlift food\tvery\n", r"\(line 2\): confidence 'very' is not a number"),
    ("fork\tCapableOf\tlift food\t1.5\n", r"\(line 1\): confidence must be a number in \[0, 1\], got 1.5"),
    ("fork\tCapable Of\tlift food\n", r"\(line 1\): relation 'Capable Of' must be one word"),
    ("fork\tCapableOf\t  \n", r"\(line 1\): tail must be a non-empty string"),
])
def test_bad_tsv_lines_are_named(tmp_path, text, message):
    path = tmp_path / "kb.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputFileError, match=message):
        KnowledgeBase.load(path)


@pytest.mark.parametrize("content, message", [
    ("{not json", r"not JSON"),
    ('{"a": 1}', r"expected a list of triples"),
    ('[{"head": "fork", "tail": "x"}]', r"\(item 0\): missing relation"),
    ('[["fork", "IsA"]]', r"\(item 0\): a triple is"),
    ('[["fork", "IsA", "tool", true]]', r"\(item 0\): confidence must be a number"),
])
def test_bad_json_items_are_named(tmp_path, content, message):
    path = tmp_path / "kb.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputFileError, match=message):
        KnowledgeBase.load(path)


def test_missing_file(tmp_path):
    with pytest.raises(InputFileError, match=r"nope.tsv: cannot read the knowledge file"):
        KnowledgeBase.load(tmp_path / "nope.tsv")


def test_sample_is_about_gqa_classes():
    kb = KnowledgeBase.sample()
    assert len(kb) >= 30
    gqa = Ontology.gqa()
    assert all(gqa.is_name(gqa.normalize(t.head)) for t in kb), [t.head for t in kb if not gqa.is_name(t.head)]
    assert Triple("fork", "CapableOf", "lift food") in kb.triples


def test_names_are_matched_canonically():
    assert canonical_name(" CapableOf :  lift   food ") == "CapableOf:lift food"
    gqa = Ontology.gqa()
    assert split_tail("hold drinks", gqa) == ("hold", "drink")  # raw plural normalized
    assert split_tail("keeping food cold", gqa) is None


# ---------------------------------------------------------------- the oracle

@pytest.fixture(scope="module")
def table_scene():
    """fork, knife (0.5) / cake (0.5), cake, cat, then an object of no class."""
    kb = KnowledgeBase([Triple("utensil", "CapableOf", "lift food"), Triple("knife", "CapableOf", "cut food"),
                        Triple("fork", "CapableOf", "lift food", 0.5), Triple("cat", "IsA-Taxonomy", "feline", 0.9),
                        Triple("animal", "HasProperty", "alive")])
    objects = [[{"fork": 1.0}, {"knife": 0.5, "cake": 0.5}, {"cake": 1.0}, {"cats": 1.0}, {}]]
    return KnowledgeOracle(kb, objects)


def test_facts_inherit_from_categories(table_scene):
    # utensil -> fork and knife; the fork's own weaker triple does not lower it (most confident wins)
    assert ask_unary(table_scene, "CapableOf:lift food") == pytest.approx([1, 0.5, 0, 0, 0])
    assert ask_unary(table_scene, "HasProperty:alive") == [0, 0, 0, 1, 0]  # cat under animal, raw 'cats'
    assert ask_unary(table_scene, "IsA-Taxonomy:feline") == pytest.approx([0, 0, 0, 0.9, 0])


def test_class_probabilities_weight_the_facts(table_scene):
    assert ask_unary(table_scene, "CapableOf:cut food") == pytest.approx([0, 0.5, 0, 0, 0])


def test_binary_relates_the_head_to_the_tail_name(table_scene):
    lift = ask_binary(table_scene, "CapableOf:lift")
    expected = torch.zeros(5, 5, dtype=lift.dtype)
    expected[0, 1], expected[0, 2] = 0.5, 1.0  # fork lifts the maybe-cake and the cake
    expected[1, 2] = 0.5  # the maybe-knife (a utensil) lifts the cake
    assert torch.allclose(lift, expected)
    cut = ask_binary(table_scene, "CapableOf:cut")
    assert cut[1, 2] == pytest.approx(0.5) and cut[1, 1] == 0  # never of the object itself


def test_unknown_facts(table_scene):
    assert table_scene.knows(kg("CapableOf:lift food")) and table_scene.knows(kg("CapableOf:lift", 2))
    assert not table_scene.knows(kg("CapableOf:fly"))
    assert not table_scene.knows(Predicate("CapableOf:lift food", kind="attr"))
    with pytest.raises(UnknownPredicateError, match=r"'CapableOf:fly' \(kind 'kg', arity 1\): no triple"):
        table_scene.unary(Requests.build([0], [kg("CapableOf:fly")]))
    with pytest.raises(UnknownPredicateError, match=r"answers kind 'kg' only"):
        table_scene.binary(Requests.build([0], [Predicate("on", 2, "rel")]))


def test_from_scene_graphs_matches_the_scene_graph_oracle():
    graphs = load_scene_graphs(FIXTURES / "predicted_sceneGraphs.json")
    batch = [graphs["2354786"], graphs["2417468"]]
    kb = KnowledgeBase([Triple("person", "CapableOf", "ride horse"), Triple("animal", "HasProperty", "alive")])
    oracle = KnowledgeOracle.from_scene_graphs(batch, kb)
    assert torch.equal(oracle.num_objects, SceneGraphOracle(batch).num_objects)
    # man 0.82 + person 0.11 + boy 0.04 are all persons; horse 0.88 + cow 0.09 animals
    ride = ask_binary(oracle, "CapableOf:ride")
    assert ride[0, 1] == pytest.approx(0.97 * 0.88)
    assert ask_unary(oracle, "HasProperty:alive") == pytest.approx([0, 0.97, 0, 0, 0])
    # scene 2417468: man 0.6 + woman 0.3 + person 0.6 = 1.5, capped at 1
    assert ask_unary(oracle, "CapableOf:ride horse", scene=1)[:4] == [0, 1, 0, 0]  # 4 objects, padded to 5
    assert oracle.binary(Requests.build([1], [kg("CapableOf:ride", 2)])).exp().max() == 0  # no horse there
    assert ask_unary(oracle, "HasProperty:alive", scene=1) == [0, 0, 0, 0, 0]


def test_batched_requests_keep_their_rows(table_scene):
    names = ["CapableOf:cut food", "HasProperty:alive", "CapableOf:lift food"]
    together = table_scene.unary(Requests.build([0, 0, 0], [kg(n) for n in names])).exp()
    for r, n in enumerate(names):
        assert together[r].tolist() == pytest.approx(ask_unary(table_scene, n))


def test_padding_is_an_exact_zero_and_a_composite_promises_what_all_its_oracles_do():
    # the engine trusts pads_with_zeros and does not mask the padding again: the promise is checked
    from nablafol.graph_oracles import CompositeOracle
    graphs = load_scene_graphs(FIXTURES / "predicted_sceneGraphs.json")
    batch = [graphs["2354786"], graphs["2417468"]]  # 5 and 4 objects: scene 1 is padded
    kb = KnowledgeBase([Triple("person", "CapableOf", "ride horse"), Triple("animal", "HasProperty", "alive"),
                        Triple("person", "HasProperty", "alive")])
    knowledge, scene_graph = KnowledgeOracle.from_scene_graphs(batch, kb), SceneGraphOracle(batch)
    sizes = knowledge.num_objects.tolist()
    assert sizes[0] != sizes[1] and knowledge.pads_with_zeros
    for ask, names in ((knowledge.unary, ["CapableOf:ride horse", "HasProperty:alive"]),
                       (knowledge.binary, ["CapableOf:ride"])):
        scenes = [b for b in range(len(sizes)) for _ in names]
        table = ask(Requests.build(scenes, [kg(n, 1 if ask == knowledge.unary else 2) for n in names] * len(sizes)))
        assert table.exp().max() > 0  # something is held, so the padding's zeros say something
        for r, b in enumerate(scenes):
            assert torch.all(table[r, sizes[b]:] == float("-inf"))
            if table.dim() == 3:
                assert torch.all(table[r, :, sizes[b]:] == float("-inf"))

    class Reweighted(KnowledgeOracle):  # a subclass may change the tables
        pass

    assert CompositeOracle([scene_graph, knowledge]).pads_with_zeros
    assert not Reweighted.from_scene_graphs(batch, kb).pads_with_zeros
    assert not CompositeOracle([scene_graph, Reweighted.from_scene_graphs(batch, kb)]).pads_with_zeros
