"""Ontology extensions: classes joining categories (dsl.extension, Ontology.with_categories)."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.dsl import Ontology, OntologyExtension, VocabularyFileError, load_ontology

GQA = Ontology.gqa()
CATEGORIES = sorted(GQA.categories)
CLASSES = sorted(GQA.classes)


@settings(max_examples=examples(40), deadline=None)
@given(st.dictionaries(st.sampled_from(CATEGORIES + ["gadget"]),
                       st.lists(st.sampled_from(CLASSES[:300] + ["zorse", "quokkas"]), min_size=1, max_size=4),
                       min_size=1, max_size=3))
def test_an_extension_adds_exactly_its_classes_under_its_categories(additions):
    wider = GQA.with_categories(additions)
    for category in set(CATEGORIES) | set(additions):
        before = GQA.categories.get(category, frozenset())
        added = {GQA.normalize(c) for c in additions.get(category, ())} - {category}
        assert wider.categories[category] == before | added
    joined = {GQA.normalize(c) for category, cs in additions.items() for c in cs if GQA.normalize(c) != category}
    assert wider.classes == GQA.classes | joined
    assert wider.relations == GQA.relations and wider.pronouns == GQA.pronouns
    for type_name, values in GQA.attribute_types.items():  # only the scene types named like a category grow
        extra = {GQA.normalize(c) for c in additions.get(type_name, ())} if type_name in GQA.scene_types else set()
        assert wider.attribute_types[type_name] == values | (extra - {type_name})


def test_an_extension_of_nothing_new_is_the_ontology_itself():
    assert GQA.with_categories({"place": ["road"], "vehicle": ["train cars"]}) is GQA


def test_the_train_car_joins_place_and_stays_a_vehicle():
    wider = OntologyExtension({"place": {"train car": 3}}).applied_to(GQA)
    assert wider.categories_of("train car") == {"place", "vehicle"}
    assert "train car" in wider.values_of("place") and "train car" not in GQA.values_of("place")


def test_a_file_round_trips_and_loads_beside_the_ontology(tmp_path):
    extension = OntologyExtension({"place": {"train car": 3, "road": 1}}, {"questions": "train.json"})
    path = tmp_path / "ext.json"
    path.write_text(json.dumps(extension.to_data()))
    read = OntologyExtension.from_file(path)
    assert read == extension and read.learned_from == {"questions": "train.json"} and read.additions == 2
    assert "train car" in load_ontology(None, path).classes_under("place")
    assert load_ontology(None, None) is GQA


@pytest.mark.parametrize("content, said", [
    ("{", "not JSON"),
    ('{"categories": {}}', "not an ontology extension"),
    ('{"format": "nablafol ontology extension", "version": 9, "categories": {}}', "version 9"),
    ('{"format": "nablafol ontology extension", "version": 1, "categories": []}', "\"categories\" must be"),
    ('{"format": "nablafol ontology extension", "version": 1, "categories": {"place": {"road": 0}}}', "class 'road'"),
    ('{"format": "nablafol ontology extension", "version": 1, "categories": {"place": {"": 2}}}', "class ''"),
    ('{"format": "nablafol ontology extension", "version": 1, "categories": {" ": {"road": 2}}}', "category ' '"),
])
def test_a_bad_extension_file_is_one_line_naming_it(tmp_path, content, said):
    path = tmp_path / "ext.json"
    path.write_text(content)
    with pytest.raises(VocabularyFileError) as caught:
        OntologyExtension.from_file(path)
    assert str(caught.value).startswith(str(path)) and said in str(caught.value)
    assert len(str(caught.value).splitlines()) == 1


def test_a_missing_extension_file_is_one_line(tmp_path):
    with pytest.raises(VocabularyFileError, match="cannot read"):
        load_ontology(None, tmp_path / "nothing.json")
