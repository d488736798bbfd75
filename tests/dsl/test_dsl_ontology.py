"""GQA's vocabulary: shipped data, completions, queries, and raw surface forms."""
import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from nablafol.dsl import Ontology, UnknownConceptError, normalize, raw_form
from nablafol.dsl.inflection import singular_candidates

GQA = Ontology.gqa()
SHARED = Path("/work/shared/gqa-ontology")
PACKAGED = Path(__file__).resolve().parents[2] / "dsl" / "data" / "gqa"


def test_gqa_is_built_once_and_counts_match_the_files():
    assert Ontology.gqa() is GQA
    hypernyms = json.loads((PACKAGED / "hypernyms.json").read_text())
    assert len(GQA.categories) == 53 == len(hypernyms)
    assert len(GQA.classes) == 1232 and len(GQA.relations) == 334
    assert "sportactivity" not in GQA.attribute_types and "sportActivity" in GQA.attribute_types


@pytest.mark.skipif(not SHARED.exists(), reason="the shared ontology folder is not on this machine")
def test_packaged_files_are_unchanged_copies():
    for name in ("hypernyms.json", "attributes.json", "relations.json"):
        assert hashlib.sha256((PACKAGED / name).read_bytes()).digest() == \
            hashlib.sha256((SHARED / name).read_bytes()).digest()
    source = (PACKAGED / "SOURCE.md").read_text()
    assert "MIT License" in source and "This copy" in source


def test_categories_and_classes_including_names_that_are_both():
    assert GQA.is_category("furniture") and not GQA.is_class("furniture")
    assert GQA.is_class("chair") and "chair" in GQA.classes_under("furniture")
    for both in ("person", "food"):
        assert GQA.is_class(both) and GQA.is_category(both)
        under = GQA.classes_under(both)
        assert both in under and len(under) > 10
    assert GQA.classes_under("chair") == frozenset({"chair"})
    assert GQA.categories_of("glass") >= {"material"} and len(GQA.categories_of("grass")) == 2  # plant, place
    assert GQA.is_name("vegetable") and not GQA.is_name("vegetables")


def test_attribute_types_with_gqa_completions():
    assert GQA.values_of("vposition") == frozenset({"top", "middle", "bottom"})
    assert GQA.values_of("hposition") == frozenset({"left", "middle", "right"})
    assert GQA.values_of("location") == frozenset({"indoors", "outdoors"})
    assert {"shore", "harbor", "beach", "kitchen"} <= GQA.values_of("place")
    assert GQA.values_of("room") == GQA.categories["room"]
    assert GQA.scene_types == frozenset({"location", "weather", "place", "room"})
    assert GQA.values_of("sportactivity") == GQA.values_of("sportActivity") == GQA.values_of("SPORTACTIVITY")
    assert GQA.type_name("sportactivity") == "sportActivity"


def test_values_may_belong_to_several_types():
    assert GQA.types_of("light") == frozenset({"tone", "weight"})
    assert GQA.types_of("middle") == frozenset({"hposition", "vposition"})
    assert {"height", "length"} <= GQA.types_of("short")
    assert GQA.is_attribute_value("white") and GQA.is_attribute_value("white", "color")
    assert not GQA.is_attribute_value("white", "shape") and not GQA.is_attribute_value("white", "nope")
    assert GQA.is_relation("to the left of") and not GQA.is_relation("left of")


@pytest.mark.parametrize("query, argument", [
    ("classes_under", "unicorn"), ("categories_of", "unicorn"), ("values_of", "smell"),
    ("types_of", "sparkly"), ("type_name", "smell"),
])
def test_unknown_concepts_raise_a_clear_error(query, argument):
    with pytest.raises(UnknownConceptError) as caught:
        getattr(GQA, query)(argument)
    assert repr(argument) in str(caught.value) and caught.value.concept == argument


@pytest.mark.parametrize("raw, form", [
    ("plates", "plate"), ("benches", "bench"), ("vegetables", "vegetable"), ("nuts", "nut"),
    ("skis", "ski"), ("shelves", "shelf"), ("knives", "knife"), ("olives", "olive"), ("cookies", "cookie"),
    ("fries", "fry"), ("buses", "bus"), ("boxes", "box"), ("dishes", "dish"), ("tomatoes", "tomato"),
    ("horses", "horse"), ("dragonflies", "dragonfly"), ("t-shirts", "t-shirt"), ("leaves", "leaf"),
    ("people", "person"), ("men", "man"), ("children", "child"),
    ("tennis", "tenni"), ("adidas", "adida"), ("cactus", "cactu"), ("octopus", "octopu"),
    ("brushing teeth", "brushing tooth"), ("shaking hands", "shaking hand"), ("taking pictures", "taking picture"),
    ("sunglasses", "sunglass"), ("pajamas", "pajama"), ("pizza slices", "pizza slouse"), ("wii", "wius"),
    # forms the vocabulary lists itself stay as they are
    ("glasses", "glasses"), ("glass", "glass"), ("grass", "grass"), ("pants", "pants"), ("shorts", "shorts"),
    ("jeans", "jeans"), ("goggles", "goggles"), ("scissors", "scissors"), ("bus", "bus"),
    ("asparagus", "asparagus"), ("wine glasses", "wine glasses"), ("dress", "dress"),
    ("  plates ", "plate"),  # GQA's trailing spaces mean nothing
])
def test_normalize_maps_raw_gqa_forms_to_vocabulary_forms(raw, form):
    assert normalize(raw) == form
    assert GQA.normalize(raw) == form


def test_unknown_raw_forms_come_back_unchanged():
    for raw in ("unicorns", "tennis racket", "gas", "Plates"):  # lookups are case-sensitive: GQA is lower case
        assert normalize(raw) == raw.strip()
    with pytest.raises(TypeError):
        normalize(3)


@pytest.mark.parametrize("form, raw", [
    ("tenni", "tennis"), ("adida", "adidas"), ("brushing tooth", "brushing teeth"), ("cactu", "cactus"),
    ("pizza slouse", "pizza slice"), ("wius", "wii"), ("sunglass", "sunglasses"),
    ("plate", "plate"), ("glasses", "glasses"), ("person", "person"),
])
def test_raw_form_reports_vocabulary_forms_as_gqa_writes_them(form, raw):
    assert raw_form(form) == raw


def test_normalize_inverts_raw_form_on_the_whole_vocabulary():
    vocabulary = (GQA.classes | set(GQA.categories) | GQA.relations | set(GQA.attribute_types)
                  | {v for values in GQA.attribute_types.values() for v in values})
    assert len(vocabulary) > 1500
    assert [form for form in sorted(vocabulary) if normalize(raw_form(form)) != form] == []


@given(st.one_of(st.sampled_from(sorted(GQA.classes)),
                 st.text("abcdefghijklmnopqrstuvwxyz -'", max_size=15)))
@example("sizes")  # -> "size", an attribute type: a known form like the others (found by hypothesis)
def test_normalize_is_idempotent_and_only_moves_to_known_forms(raw):
    once = normalize(raw)
    assert normalize(once) == once
    assert once == raw.strip() or once in GQA.classes or GQA.lookup(once, "value") or GQA.is_relation(once) \
        or GQA.is_category(once) or once in GQA.attribute_types


def test_lookup_and_require():
    assert GQA.lookup("plates", "name") == "plate"
    assert GQA.lookup("furniture", "name") == "furniture"
    assert GQA.lookup("tennis", "name") == "tenni"
    assert GQA.lookup("white", "value") == "white" and GQA.lookup("white", "name") is None
    assert GQA.lookup("to the left of", "relation") == "to the left of"
    assert GQA.lookup("sportactivity", "type") == "sportActivity" and GQA.lookup("smell", "type") is None
    assert GQA.lookup("unicorns", "name") is None
    assert GQA.require("benches", "name") == "bench"
    with pytest.raises(UnknownConceptError, match="unknown name 'unicorns'"):
        GQA.require("unicorns", "name")
    with pytest.raises(UnknownConceptError, match=r"'dogz' \(looked up as 'dog'\)|unknown relation"):
        GQA.require("dogz", "relation")
    with pytest.raises(ValueError, match="unknown kind"):
        GQA.lookup("dog", "colour")


def test_an_ontology_from_plain_data():
    small = Ontology({"animal": ["dog", "cat"], "dog": ["puppy"]}, {"color": ["red"], "Color": ["blue"]},
                     ["near"])
    assert small.classes_under("animal") == frozenset({"dog", "cat"})
    assert small.classes_under("dog") == frozenset({"dog", "puppy"})  # a class and a category
    assert small.values_of("color") == frozenset({"red", "blue"})  # types merge case-insensitively
    assert small.normalize("dogs") == "dog" and small.normalize("tennis") == "tennis"
    assert small.raw_form("dog") == "dog" and repr(small).startswith("Ontology(3 classes, 2 categories")


def test_singular_candidates():
    assert singular_candidates("benches") == ["bench", "benche"]
    assert singular_candidates("shelves")[0] == "shelf"
    assert singular_candidates("berries")[0] == "berry"
    assert singular_candidates("brushing teeth") == ["brushing tooth"]
    assert singular_candidates("glass") == [] and singular_candidates("is") == []


def test_ontology_from_folder_matches_gqa(tmp_path):
    import shutil
    from importlib import resources

    from nablafol.dsl import Ontology
    for name in ("hypernyms.json", "attributes.json", "relations.json"):
        shutil.copy(resources.files("dsl").joinpath(f"data/gqa/{name}"), tmp_path / name)
    loaded, gqa = Ontology.from_folder(tmp_path), Ontology.gqa()
    assert loaded.classes == gqa.classes and dict(loaded.attribute_types) == dict(gqa.attribute_types)
    assert loaded.relations == gqa.relations


def test_ontology_from_folder_reports_bad_files(tmp_path):
    import pytest

    from nablafol.dsl import Ontology, VocabularyFileError
    with pytest.raises(VocabularyFileError, match="hypernyms.json: cannot read"):
        Ontology.from_folder(tmp_path)
    (tmp_path / "hypernyms.json").write_text("{not json")
    (tmp_path / "attributes.json").write_text("{}")
    (tmp_path / "relations.json").write_text("[]")
    with pytest.raises(VocabularyFileError, match="hypernyms.json: not JSON"):
        Ontology.from_folder(tmp_path)
    (tmp_path / "hypernyms.json").write_text('{"furniture": "chair"}')
    with pytest.raises(VocabularyFileError, match=r"expected \{category"):
        Ontology.from_folder(tmp_path)
    # an empty word names no predicate: refused naming its file, not later by the predicate it makes
    (tmp_path / "hypernyms.json").write_text('{"furniture": ["chair"]}')
    for part, content in (("attributes", '{"color": ["red", ""]}'), ("attributes", '{" ": ["red"]}'),
                          ("relations", '["on", "  "]'), ("hypernyms", '{"furniture": [""]}')):
        for name, good in (("attributes", "{}"), ("relations", "[]"), ("hypernyms", '{"furniture": ["chair"]}')):
            (tmp_path / f"{name}.json").write_text(content if name == part else good)
        with pytest.raises(VocabularyFileError, match=f"{part}.json: .*every word a non-empty string"):
            Ontology.from_folder(tmp_path)


def test_ontology_data_round_trip():
    from nablafol.dsl import Ontology
    gqa = Ontology.gqa()
    again = Ontology.from_data(**gqa.to_data())
    assert again.classes == gqa.classes and dict(again.attribute_types) == dict(gqa.attribute_types)
    assert dict(again.categories) == dict(gqa.categories) and again.relations == gqa.relations
