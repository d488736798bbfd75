"""The vocabulary subset is GQA's, and its ontology folder loads as `dsl.Ontology`."""
from __future__ import annotations

import json

import pytest

from nablafol.dsl import Ontology
from nablafol.synthetic import Vocabulary, VocabularyError, write_ontology
from nablafol.synthetic.vocabulary import POSITION_VALUES


@pytest.fixture(scope="module")
def vocabulary():
    return Vocabulary.default()


def test_default_subset_has_the_promised_shape(vocabulary):
    assert 35 <= len(vocabulary.classes) <= 45 and 10 <= len(vocabulary.categories) <= 14
    assert {"person", "animal", "furniture", "food", "clothing", "vehicle"} <= set(vocabulary.categories)
    assert "person" in vocabulary.classes and "person" in vocabulary.categories  # a class that is a category
    assert {"pants", "shorts", "glasses"} <= set(vocabulary.classes)  # plural raw forms
    values = [v for vs in vocabulary.attributes.values() for v in vs]
    assert 25 <= len(values) <= 35 and len(values) == len(set(values))
    assert {"color", "material", "size", "shape", "pattern"} <= set(vocabulary.attributes)
    assert {"to the left of", "to the right of", "above", "below", "on", "near"} <= set(vocabulary.relations)


def test_everything_is_gqa_vocabulary_with_gqa_memberships(vocabulary):
    gqa = Ontology.gqa()
    for category, classes in vocabulary.categories.items():
        assert set(classes) <= gqa.classes_under(category), category
    files = vocabulary.ontology_files()
    for type_name, values in files["attributes.json"].items():
        assert all(gqa.is_attribute_value(v, type_name) for v in values), type_name
    assert all(gqa.is_relation(r) for r in vocabulary.relations)
    assert all(gqa.normalize(c) == c for c in vocabulary.classes)  # raw GQA forms meet the vocabulary


def test_ontology_folder_in_gqa_layout_loads_as_the_same_ontology(vocabulary, tmp_path):
    written = write_ontology(tmp_path, vocabulary)
    assert sorted(p.name for p in written) == ["SOURCE.md", "attributes.json", "hypernyms.json", "relations.json"]
    hypernyms = json.loads((tmp_path / "hypernyms.json").read_text())
    assert isinstance(hypernyms, dict) and all(isinstance(v, list) for v in hypernyms.values())
    assert isinstance(json.loads((tmp_path / "relations.json").read_text()), list)
    assert "subset" in (tmp_path / "SOURCE.md").read_text()
    loaded, built = Ontology.from_folder(tmp_path), vocabulary.ontology()
    assert loaded.categories == built.categories and loaded.relations == built.relations
    assert loaded.attribute_types == built.attribute_types
    assert loaded.classes_under("fruit") == {"apple", "banana"}
    assert loaded.values_of("hposition") == set(POSITION_VALUES["hposition"])
    assert {"location", "weather"} <= set(loaded.scene_types)


def test_restricted_vocabulary_keeps_only_categories_that_still_hold_a_class():
    small = Vocabulary.default(classes=["man", "dog", "table", "apple"])
    assert small.classes == ("man", "dog", "table", "apple")
    assert set(small.categories) == {"person", "animal", "furniture", "food", "fruit"}
    with pytest.raises(VocabularyError, match="'spaceship'"):
        Vocabulary.default(classes=["spaceship"])


@pytest.mark.parametrize("change, words", [
    (dict(class_types={"dog": {"flavor": ("sweet",)}}), "unknown attribute type 'flavor'"),
    (dict(class_types={"dog": {"color": ("plaid",)}}), "palette"),
    (dict(class_types={}), "class 'dog' has no entry"),
    (dict(class_types={"dog": {}}, attributes={"color": ("dog",)}), "both names and attribute values"),
    (dict(class_types={"dog": {}}, attributes={"color": ("red",), "tone": ("red",)}), "in both"),
])
def test_inconsistent_vocabulary_is_refused_in_one_line(change, words):
    arguments = dict(categories={"animal": ("dog",)}, class_types={"dog": {}})
    arguments.update(change)
    with pytest.raises(VocabularyError) as caught:
        Vocabulary(**arguments)
    assert words in str(caught.value) and "\n" not in str(caught.value)
