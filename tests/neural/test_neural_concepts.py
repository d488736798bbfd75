"""The concept vocabulary: every predicate of the contract has a row, stable and serializable."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.dsl import Ontology
from nablafol.errors import UnknownPredicateError
from nablafol.ir import Predicate
from nablafol.neural import ConceptVocabulary, NeuralOracleError
from nablafol.graph_oracles.scene_graph import COMPARATIVES
from neural_helpers import TINY_ONTOLOGY, tiny_vocabulary

GQA = Ontology.gqa()
VOCABULARY = ConceptVocabulary.from_ontology(GQA)
NAMES = sorted(GQA.classes | set(GQA.categories))
VALUES = sorted(set().union(*GQA.attribute_types.values()))
RELATIONS = sorted(GQA.relations)
TYPES = sorted(GQA.attribute_types)


def test_every_gqa_predicate_of_the_contract_has_a_row_in_its_table():
    wanted = ([Predicate(n, 1, k) for n in NAMES for k in ("name", "class")]
              + [Predicate(v, 1, "attr") for v in VALUES]
              + [Predicate(v, 1, "hposition") for v in ("left", "middle", "right")]
              + [Predicate(v, 1, "vposition") for v in ("top", "middle", "bottom")]
              + [Predicate("scene", 1, "scene")]
              + [Predicate(n, 1, "name") for n in sorted(GQA.pronouns)])  # GQA selects by pronoun: `select: he`
    rows = VOCABULARY.rows(wanted)
    assert rows.min() >= 0 and rows.max() < VOCABULARY.num_unary
    binary = ([Predicate(r, 2, "rel") for r in RELATIONS] + [Predicate(c, 2, "compare") for c in COMPARATIVES]
              + [Predicate(t, 2, "same") for t in TYPES])
    rows = VOCABULARY.rows(binary)
    assert rows.min() >= 0 and rows.max() < VOCABULARY.num_binary
    # every row is used by some predicate: no dead embeddings
    assert len(set(VOCABULARY.rows(wanted))) == VOCABULARY.num_unary
    assert len(set(rows)) == VOCABULARY.num_binary == len(RELATIONS) + len(COMPARATIVES) + len(TYPES)


def test_rows_are_sorted_and_distinct_concepts_get_distinct_rows():
    assert list(VOCABULARY.unary) == sorted(VOCABULARY.unary) and list(VOCABULARY.binary) == sorted(VOCABULARY.binary)
    attrs = VOCABULARY.rows([Predicate(v, 1, "attr") for v in VALUES])
    names = VOCABULARY.rows([Predicate(n, 1, "name") for n in NAMES])
    assert len(set(attrs)) == len(VALUES) and len(set(names)) == len(NAMES) and not set(attrs) & set(names)
    # an hposition is not the attribute value of the same spelling
    assert VOCABULARY.index(Predicate("left", 1, "hposition")) != VOCABULARY.index(Predicate("left", 1, "attr"))


def test_class_shares_the_name_row_exactly_when_nothing_lies_under_it():
    v = tiny_vocabulary()
    index = lambda name, kind: v.index(Predicate(name, 1, kind))  # noqa: E731
    assert index("chair", "class") == index("chair", "name")  # a plain class
    assert index("food", "class") != index("food", "name")  # a category that is also a class
    assert index("furniture", "class") != index("furniture", "name")  # a category only
    for name in NAMES:  # on GQA: shared iff not a category
        shared = VOCABULARY.index(Predicate(name, 1, "class")) == VOCABULARY.index(Predicate(name, 1, "name"))
        assert shared == (name not in GQA.categories), name


def test_scene_level_concepts_are_the_scene_and_the_values_of_location_weather_place_room():
    mask = VOCABULARY.scene_level_mask()
    scene_values = set().union(*(GQA.values_of(t) for t in ("location", "weather", "place", "room")))
    expected = {VOCABULARY.index(Predicate(v, 1, "attr")) for v in scene_values} | {VOCABULARY.scene_row}
    assert set(mask.nonzero()[0]) == expected
    assert not mask[VOCABULARY.index(Predicate("red", 1, "attr"))]
    assert not mask[VOCABULARY.index(Predicate("kitchen", 1, "name"))]  # the class kitchen is an object


@settings(max_examples=examples(60))
@given(st.sampled_from(NAMES + VALUES + RELATIONS), st.sampled_from(["", "s", "es", "raw"]))
def test_raw_spellings_normalize_exactly_as_the_ontology_does(word, ending):
    raw = GQA.raw_form(word) if ending == "raw" else word + ending
    assert VOCABULARY.normalize(raw) == GQA.normalize(raw)
    restored = ConceptVocabulary.from_dict(json.loads(json.dumps(VOCABULARY.to_dict())))
    assert restored.normalize(raw) == GQA.normalize(raw)


def test_raw_gqa_forms_reach_the_vocabulary_row():
    assert VOCABULARY.index(Predicate("chairs", 1, "name")) == VOCABULARY.index(Predicate("chair", 1, "name"))
    assert VOCABULARY.index(Predicate("tennis", 1, "name")) == VOCABULARY.index(Predicate("tenni", 1, "name"))
    assert VOCABULARY.index(Predicate("sportactivity", 2, "same")) == VOCABULARY.index(
        Predicate("sportActivity", 2, "same"))


@settings(max_examples=examples(30))
@given(st.lists(st.sampled_from(
    [Predicate(n, 1, "name") for n in NAMES[:50]] + [Predicate(v, 1, "attr") for v in VALUES[:50]]
    + [Predicate(r, 2, "rel") for r in RELATIONS[:50]] + [Predicate(c, 2, "compare") for c in COMPARATIVES]),
    min_size=1, max_size=20))
def test_json_round_trip_gives_an_equal_vocabulary_with_the_same_rows(predicates):
    text = json.dumps(VOCABULARY.to_dict())
    restored = ConceptVocabulary.from_dict(json.loads(text))
    assert restored == VOCABULARY
    assert [restored.index(p) for p in predicates] == [VOCABULARY.index(p) for p in predicates]
    assert ConceptVocabulary.from_ontology(GQA).to_dict() == json.loads(text)  # stable across builds


@pytest.mark.parametrize("predicate, says", [
    (Predicate("unicorn", 1, "name"), "never learned"),
    (Predicate("sparkly", 1, "attr"), "never learned"),
    (Predicate("on", 1, "rel"), "takes 2 arguments"),
    (Predicate("red", 2, "attr"), "takes 1 argument"),
    (Predicate("CapableOf:lift", 2, "kg"), "kinds are"),
    (Predicate("bigger", 2, "compare"), "not a comparative"),
    (Predicate("flavour", 2, "same"), "not an attribute type"),
    (Predicate("everything", 1, "scene"), "named 'scene'"),
])
def test_an_unknown_predicate_is_named_in_one_line(predicate, says):
    assert not VOCABULARY.knows(predicate)
    with pytest.raises(UnknownPredicateError) as info:
        VOCABULARY.index(predicate)
    message = str(info.value)
    assert repr(predicate.name) in message and says in message and "\n" not in message
    with pytest.raises(UnknownPredicateError, match=repr(predicate.name)):
        VOCABULARY.rows([Predicate("red", 1, "attr"), predicate])


@pytest.mark.parametrize("data, says", [
    ({"format": "other"}, "format"),
    ({**tiny_vocabulary().to_dict(), "unary": "red"}, "'unary' must be a list"),
    ({**tiny_vocabulary().to_dict(), "unary": [["colour", "red"], ["scene", "scene"]]}, "has kind 'colour'"),
    ({**tiny_vocabulary().to_dict(), "unary": [["attr", "red"]], "scene_level": []}, "'scene', 'scene'"),
    ({**tiny_vocabulary().to_dict(), "binary": [["rel", ""]]}, "non-empty strings"),
    ({**tiny_vocabulary().to_dict(), "scene_level": [["attr", "purple"]]}, "not a unary concept"),
    ({**tiny_vocabulary().to_dict(), "aliases": {"x": 1}}, "aliases"),
])
def test_a_bad_description_is_refused_in_one_line(data, says):
    with pytest.raises(NeuralOracleError, match=says) as info:
        ConceptVocabulary.from_dict(data)
    assert "\n" not in str(info.value)


def test_a_custom_ontology_gets_its_own_rows():
    v = ConceptVocabulary.from_ontology(TINY_ONTOLOGY)
    assert v.knows(Predicate("pizza", 1, "name")) and not VOCABULARY.knows(Predicate("furniture", 1, "attr"))
    assert not v.knows(Predicate("dog", 1, "name"))
    assert v.num_binary == 3 + len(COMPARATIVES) + len(TINY_ONTOLOGY.attribute_types)
