"""The vocabulary of the embedded dataset: a small subset of GQA's, and what applies to what.

Every name, value and relation here is GQA's (``dsl/data/gqa``; checked by the tests), with
GQA's category memberships (``apple`` is under both ``food`` and ``fruit``). The default
subset has 39 classes under 13 categories (``person`` is both a class and a category;
``pants``, ``shorts`` and ``glasses`` are plural raw forms), 30 object attribute values over
8 types, the positions, ``location`` and ``weather``, and 10 relations (9 stored in scene
graphs, plus ``same color``, which the predicate contract derives from attributes).

    >>> vocabulary = Vocabulary.default()
    >>> vocabulary.categories_of("apple")
    ('food', 'fruit')
    >>> vocabulary.palette("banana", "color")
    ('yellow', 'green', 'brown')
    >>> ontology = vocabulary.ontology()
    >>> sorted(ontology.classes_under("fruit")), ontology.is_class("person"), ontology.is_category("person")
    (['apple', 'banana'], True, True)

:func:`write_ontology` writes the subset in the exact layout of GQA's files
(``hypernyms.json``, ``attributes.json``, ``relations.json`` and a ``SOURCE.md``), so
``dsl.Ontology.from_folder`` reads it and the compiler's plausible answers are the
dataset's own vocabulary. :meth:`Vocabulary.ontology` is exactly what that folder loads to.
"""
from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Iterable, Mapping

from nablafol.dsl import Ontology

from nablafol.errors import NablafolError
from nablafol.data.files import write_text

__all__ = ["Vocabulary", "VocabularyError", "write_ontology", "OBJECT_TYPES", "POSITION_VALUES",
           "LOCATIONS", "WEATHERS", "STORED_RELATIONS", "DERIVED_RELATIONS"]


class VocabularyError(NablafolError, ValueError):
    """A vocabulary subset that is inconsistent (a class without category, an unknown type...)."""


# Object attribute types, in the order the generator draws them, with their values.
OBJECT_TYPES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "color": ("white", "black", "red", "blue", "green", "yellow", "brown", "gray", "pink", "orange"),
    "material": ("wood", "metal", "plastic", "glass", "leather"),
    "shape": ("round", "square", "rectangular"),
    "pattern": ("striped", "checkered", "dotted"),
    "size": ("large", "small"),
    "age": ("old", "young"),
    "cleanliness": ("clean", "dirty"),
    "pose": ("standing", "sitting", "walking"),
})
# Read from boxes (nablafol.graph_oracles.geometry), never listed in a scene graph.
POSITION_VALUES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "hposition": ("left", "middle", "right"), "vposition": ("top", "middle", "bottom")})
LOCATIONS = ("indoors", "outdoors")
WEATHERS = ("sunny", "cloudy", "rainy")
# Relations the scene graphs store (rules in nablafol.synthetic.scenes), and the one the
# predicate contract derives from attributes (docs/compiling-gqa.md: `same TYPE` relations).
STORED_RELATIONS = ("to the left of", "to the right of", "above", "below", "on", "under", "near",
                    "wearing", "holding")
DERIVED_RELATIONS = ("same color",)

# How often an object of a class that takes a type gets a value of it (size is derived
# from the box instead: see scenes.py).
PRESENCE: Mapping[str, float] = MappingProxyType({
    "color": 0.9, "material": 0.6, "shape": 0.7, "pattern": 0.45, "age": 0.7, "cleanliness": 0.4,
    "pose": 0.8, "size": 1.0})

_ALL_COLORS = OBJECT_TYPES["color"]
_PEOPLE = {"age": ("old", "young"), "pose": ("standing", "sitting", "walking")}
_CHILDREN = {"age": ("young",), "pose": ("standing", "sitting", "walking")}
_CLOTHES = {"color": _ALL_COLORS, "pattern": ("striped", "checkered", "dotted"), "cleanliness": ("clean", "dirty")}

# category -> classes (each membership is GQA's), and class -> {type: the values it may take}
_DEFAULT_CATEGORIES = {
    "person": ("man", "woman", "boy", "girl", "person"),
    "animal": ("dog", "cat", "horse", "cow", "bird"),
    "furniture": ("chair", "table", "couch", "bed"),
    "vehicle": ("car", "bus", "truck", "van"),
    "clothing": ("shirt", "jacket", "pants", "shorts", "hat"),
    "food": ("apple", "banana", "broccoli", "carrot", "pizza", "hamburger", "cake", "sandwich"),
    "fruit": ("apple", "banana"),
    "vegetable": ("broccoli", "carrot"),
    "fast food": ("pizza", "hamburger"),
    "dessert": ("cake",),
    "tableware": ("plate", "cup"),
    "device": ("laptop", "phone"),
    "object": ("glasses", "bowl", "bench", "umbrella"),
}
_DEFAULT_CLASS_TYPES = {
    "man": _PEOPLE, "woman": _PEOPLE, "person": _PEOPLE, "boy": _CHILDREN, "girl": _CHILDREN,
    "dog": {"color": ("white", "black", "brown", "gray"), "age": ("old", "young"),
            "pose": ("standing", "sitting", "walking"), "size": ("large", "small")},
    "cat": {"color": ("white", "black", "brown", "gray", "orange"), "age": ("old", "young"),
            "pose": ("standing", "sitting", "walking"), "size": ("large", "small")},
    "horse": {"color": ("brown", "white", "black"), "pose": ("standing", "walking"), "size": ("large", "small")},
    "cow": {"color": ("white", "black", "brown"), "pose": ("standing", "walking"), "size": ("large", "small")},
    "bird": {"color": ("white", "black", "gray", "blue", "yellow"), "size": ("large", "small")},
    "chair": {"color": ("brown", "white", "black", "red", "blue"), "material": ("wood", "metal", "plastic", "leather"),
              "cleanliness": ("clean", "dirty"), "size": ("large", "small")},
    "table": {"color": ("brown", "white", "black", "gray"), "material": ("wood", "metal", "plastic", "glass"),
              "shape": ("round", "square", "rectangular"), "cleanliness": ("clean", "dirty"),
              "size": ("large", "small")},
    "couch": {"color": ("brown", "gray", "red", "blue", "black", "white"), "material": ("leather",),
              "pattern": ("striped", "checkered"), "size": ("large", "small")},
    "bed": {"color": ("white", "blue", "pink", "gray"), "pattern": ("striped", "checkered", "dotted"),
            "cleanliness": ("clean", "dirty"), "size": ("large", "small")},
    "car": {"color": ("white", "black", "red", "blue", "gray", "yellow", "green"), "cleanliness": ("clean", "dirty"),
            "size": ("large", "small")},
    "bus": {"color": ("white", "red", "blue", "yellow", "green"), "cleanliness": ("clean", "dirty"),
            "size": ("large", "small")},
    "truck": {"color": ("white", "red", "blue", "gray", "black"), "cleanliness": ("clean", "dirty"),
              "size": ("large", "small")},
    "van": {"color": ("white", "black", "gray", "blue"), "cleanliness": ("clean", "dirty"), "size": ("large", "small")},
    "shirt": _CLOTHES, "pants": _CLOTHES, "shorts": _CLOTHES,
    "jacket": {**_CLOTHES, "material": ("leather", "plastic")},
    "hat": {"color": _ALL_COLORS, "pattern": ("striped", "checkered", "dotted")},
    "apple": {"color": ("red", "green", "yellow"), "size": ("large", "small")},
    "banana": {"color": ("yellow", "green", "brown"), "size": ("large", "small")},
    "broccoli": {"color": ("green",), "size": ("large", "small")},
    "carrot": {"color": ("orange",), "size": ("large", "small")},
    "pizza": {"shape": ("round", "square"), "size": ("large", "small")},
    "hamburger": {"size": ("large", "small")},
    "cake": {"color": ("white", "brown", "pink"), "shape": ("round", "square"), "size": ("large", "small")},
    "sandwich": {"shape": ("square", "rectangular"), "size": ("large", "small")},
    "plate": {"color": ("white", "blue", "black"), "material": ("glass", "plastic", "metal"),
              "shape": ("round", "square"), "cleanliness": ("clean", "dirty")},
    "cup": {"color": ("white", "red", "blue", "black", "green"), "material": ("glass", "plastic", "metal"),
            "cleanliness": ("clean", "dirty")},
    "laptop": {"color": ("black", "gray", "white"), "material": ("metal", "plastic")},
    "phone": {"color": ("black", "white", "gray", "pink")},
    "glasses": {"color": ("black", "brown", "red"), "material": ("plastic", "metal")},
    "bowl": {"color": ("white", "blue", "red", "green"), "material": ("glass", "plastic", "wood", "metal"),
             "shape": ("round",), "cleanliness": ("clean", "dirty")},
    "bench": {"color": ("brown", "green", "black", "gray"), "material": ("wood", "metal"), "size": ("large", "small")},
    "umbrella": {"color": ("black", "red", "blue", "pink", "yellow"), "pattern": ("striped", "dotted")},
}


@dataclass(frozen=True)
class Vocabulary:
    """A GQA vocabulary subset for the generator.

    ``categories``: {category: classes}; ``class_types``: {class: {type: palette}}, the
    object attribute types that make sense for the class and the values it may take;
    ``attributes``: {type: values} of the object attribute types; ``weathers``: the
    weather values of outdoor scenes; ``relations``: stored, then derived relations.
    """

    categories: Mapping[str, tuple[str, ...]]
    class_types: Mapping[str, Mapping[str, tuple[str, ...]]]
    attributes: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(OBJECT_TYPES))
    weathers: tuple[str, ...] = WEATHERS
    relations: tuple[str, ...] = STORED_RELATIONS + DERIVED_RELATIONS

    def __post_init__(self) -> None:
        classes = self.classes
        for cls in classes:
            if cls not in self.class_types:
                raise VocabularyError(f"class {cls!r} has no entry in class_types")
        for cls, types in self.class_types.items():
            if cls not in classes:
                raise VocabularyError(f"class_types names {cls!r}, which is under no category")
            for type_name, palette in types.items():
                if type_name not in self.attributes:
                    raise VocabularyError(f"class {cls!r}: unknown attribute type {type_name!r}")
                unknown = [v for v in palette if v not in self.attributes[type_name]]
                if unknown or not palette:
                    raise VocabularyError(f"class {cls!r}: {type_name} palette {list(palette)} must be "
                                          f"non-empty values of {list(self.attributes[type_name])}")
        for reserved in (*POSITION_VALUES, "location", "weather", "name"):
            if reserved in self.attributes:
                raise VocabularyError(f"{reserved!r} is not an object attribute type here: it is derived")
        seen: dict[str, str] = {}
        for type_name, values in self.attributes.items():
            for value in values:
                if value in seen:  # one type per value keeps untyped filters unambiguous
                    raise VocabularyError(f"value {value!r} is in both {seen[value]!r} and {type_name!r}")
                seen[value] = type_name
        names = set(classes) | set(self.categories)
        clashes = sorted(names & set(seen))
        if clashes:
            raise VocabularyError(f"{clashes} are both names and attribute values")

    # ------------------------------------------------------------------ construction
    @classmethod
    def default(cls, classes: Iterable[str] | None = None) -> "Vocabulary":
        """The default subset; ``classes`` keeps only those classes (and the categories that
        still hold one)."""
        keep = None if classes is None else set(classes)
        if keep is not None:
            unknown = sorted(keep - {c for cs in _DEFAULT_CATEGORIES.values() for c in cs})
            if unknown:
                raise VocabularyError(f"classes {unknown} are not in the default vocabulary")
        categories = {}
        for category, members in _DEFAULT_CATEGORIES.items():
            kept = tuple(m for m in members if keep is None or m in keep)
            if kept:
                categories[category] = kept
        class_types = {c: MappingProxyType(dict(t)) for c, t in _DEFAULT_CLASS_TYPES.items()
                       if keep is None or c in keep}
        return cls(MappingProxyType(categories), MappingProxyType(class_types))

    # ------------------------------------------------------------------ queries
    @property
    def classes(self) -> tuple[str, ...]:
        """Every class, in category order, each once."""
        return tuple(dict.fromkeys(c for members in self.categories.values() for c in members))

    def categories_of(self, class_name: str) -> tuple[str, ...]:
        return tuple(cat for cat, members in self.categories.items() if class_name in members)

    def types_of(self, class_name: str) -> tuple[str, ...]:
        """The attribute types that apply to a class, in drawing order."""
        types = self.class_types[class_name]
        return tuple(t for t in self.attributes if t in types)

    def palette(self, class_name: str, type_name: str) -> tuple[str, ...]:
        return self.class_types[class_name].get(type_name, ())

    def type_of_value(self, value: str) -> str:
        for type_name, values in self.attributes.items():
            if value in values:
                return type_name
        raise VocabularyError(f"{value!r} is not an object attribute value of the vocabulary")

    @property
    def stored_relations(self) -> tuple[str, ...]:
        return tuple(r for r in self.relations if r in STORED_RELATIONS)

    def ontology_files(self) -> dict[str, object]:
        """The three GQA ontology files' contents: {file name: JSON value}."""
        attributes = {t: list(v) for t, v in self.attributes.items()}
        attributes.update({t: list(v) for t, v in POSITION_VALUES.items()})
        attributes["location"] = list(LOCATIONS)
        attributes["weather"] = list(self.weathers)
        return {"hypernyms.json": {c: sorted(m) for c, m in self.categories.items()},
                "attributes.json": attributes,
                "relations.json": list(self.relations)}

    def ontology(self) -> Ontology:
        """The `dsl.Ontology` that `Ontology.from_folder` reads from :func:`write_ontology`'s
        folder (built that very way, so the two can never differ)."""
        with tempfile.TemporaryDirectory(prefix="nablafol-vocabulary-") as folder:
            write_ontology(folder, self)
            return Ontology.from_folder(folder)

    def to_json(self) -> dict:
        """The vocabulary for the dataset card."""
        return {"categories": {c: list(m) for c, m in self.categories.items()},
                "attributes": {t: list(v) for t, v in self.attributes.items()},
                "class_types": {c: {t: list(p) for t, p in types.items()} for c, types in self.class_types.items()},
                "positions": {t: list(v) for t, v in POSITION_VALUES.items()},
                "locations": list(LOCATIONS), "weathers": list(self.weathers),
                "relations": list(self.relations)}


_SOURCE = """# Ontology of the nablafol synthetic dataset

A subset of the vocabulary of the GQA dataset (Hudson & Manning, CVPR 2019), in the layout
of GQA's ontology files as shipped in `dsl/data/gqa` (see `SOURCE.md` there for their
provenance). Written by `nablafol.synthetic.vocabulary.write_ontology`; load it with
`dsl.Ontology.from_folder`.

| file | content |
| --- | --- |
| `hypernyms.json` | {n_categories} categories -> the {n_classes} classes under them (memberships as in GQA's file) |
| `attributes.json` | the object attribute types of the dataset ({object_types}), then `hposition`, `vposition` (read from boxes), `location` and `weather` (scene-level, `select: scene`) |
| `relations.json` | {n_relations} relations: the ones scene graphs store, and `same color` (derived from attributes) |

Every name, value and relation here is GQA's. Positions, `location` and `weather` are
written out in full here, where GQA's files lack or only partly list them.
"""


def write_ontology(folder, vocabulary: Vocabulary) -> list[Path]:
    """Write ``hypernyms.json``, ``attributes.json``, ``relations.json`` and ``SOURCE.md``
    into ``folder`` (created if needed); returns the paths written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, value in vocabulary.ontology_files().items():
        path = folder / name
        write_text(path, json.dumps(value, indent=4, ensure_ascii=False) + "\n")
        written.append(path)
    source = folder / "SOURCE.md"
    write_text(source, _SOURCE.format(
        n_categories=len(vocabulary.categories), n_classes=len(vocabulary.classes),
        object_types=", ".join(vocabulary.attributes), n_relations=len(vocabulary.relations)))
    written.append(source)
    return written
