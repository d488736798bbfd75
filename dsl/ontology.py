"""The vocabulary programs are written in: classes, categories, attributes, relations.

    >>> from nablafol.dsl import Ontology, normalize
    >>> gqa = Ontology.gqa()
    >>> sorted(gqa.classes_under("food"))[:3]
    ['almond', 'anchovy', 'appetizer']
    >>> sorted(gqa.values_of("vposition"))
    ['bottom', 'middle', 'top']
    >>> normalize("plates"), normalize("glasses"), normalize("tennis")
    ('plate', 'glasses', 'tenni')
    >>> gqa.raw_form("tenni")
    'tennis'

`Ontology.gqa()` is GQA's vocabulary as shipped in dsl/data/gqa (see SOURCE.md there),
completed with what GQA programs use but the files lack: `vposition` (top, middle,
bottom), `middle` for `hposition`, and the scene-level types `location` (indoors,
outdoors), `place` and `room` (their values are the classes of the categories of
those names). `sportActivity`/`sportactivity` are one type: types match case-
insensitively, because GQA writes `filter sportActivity` while the file lists both.
Names, values and relations match exactly: GQA writes them in lower case.

Surface forms. The shipped names are singulars made by a naive singularizer
(`tenni`, `adida`, `cactu`, `brushing tooth`) while GQA's programs and scene graphs
use raw forms (`tennis`, `plates`, `skis`, `people`). One function maps raw to
vocabulary forms, `normalize`, and `raw_form` maps back for reporting answers:

  normalize(raw): `raw` itself if the vocabulary has it (so `glasses`, `pants`,
    `shorts`, `grass`, `glass`, `bus` stay as they are: the vocabulary lists them);
    else the first singular candidate of its last word (dsl.inflection) that the
    vocabulary has, directly or through the table of naive-singularizer forms
    (`pizza slice` -> `pizza slouse`, `wii` -> `wius`); else `raw` unchanged, for
    the caller to report as unknown. It is idempotent.
  raw_form(vocabulary form): GQA's spelling of it (`tenni` -> `tennis`); the identity
    for the forms GQA writes itself. normalize(raw_form(v)) == v for every form v.

The vocabulary is open (docs/compiling-gqa.md, "An open vocabulary"). Besides categories and typed
values, an ontology holds *uncategorized classes* (names no category lists), *untyped values*
(attribute values no type lists: scene graphs write attributes untyped) and *pronouns*
(dsl.words: `he` stands for the person classes a man may be, `this` for every class). What a
dataset names beyond the files joins through `joined`, which returns a wider ontology: a name
becomes a class of its own, a value joins the type its step gives it (or the untyped values),
a relation joins the relations:

    >>> wider = gqa.joined({"name": ["unicorns"], "material": ["granite"], None: ["grassy"]})
    >>> "granite" in wider.values_of("material"), wider.is_class("unicorns"), wider.types_of("grassy")
    (True, True, frozenset())
    >>> sorted(gqa.classes_under("she"))[:4], len(gqa.classes_under("this")) == len(gqa.classes)
    (['alien', 'athlete', 'audience', 'baker'], True)

The shipped files are copied unchanged; these decisions live here, in code.
"""
from __future__ import annotations

from nablafol.caching import bounded_cache, memo

import functools
import json
from importlib import resources
from types import MappingProxyType
from typing import Iterable, Mapping

from .errors import UnknownConceptError, VocabularyFileError
from .inflection import singular_candidates
from .words import GENDER_OF_NAME, OBJECT_PRONOUNS, PERSON_CATEGORY, PRONOUNS, pronoun_gender

__all__ = ["Ontology", "normalize", "raw_form", "KINDS"]

KINDS = ("name", "value", "type", "relation")

# Vocabulary forms produced by the naive singularizer that GQA never writes -> GQA's form.
GQA_RAW_FORMS = {
    "tenni": "tennis", "adida": "adidas", "cactu": "cactus", "octopu": "octopus",
    "brushing tooth": "brushing teeth", "shaking hand": "shaking hands", "wius": "wii",
    "pizza slouse": "pizza slice", "sunglass": "sunglasses", "pajama": "pajamas",
    "bleacher": "bleachers", "headphone": "headphones", "earphone": "earphones",
    "chopstick": "chopsticks", "sideway": "sideways",
}
# Types GQA asks of the whole image (`select: scene`) rather than of objects.
GQA_SCENE_TYPES = ("location", "weather", "place", "room")


class Ontology:
    """A vocabulary: categories -> classes, attribute types -> values, relations.

    Build one from plain data (`Ontology(hypernyms, attributes, relations)`, the layout of
    the GQA files: {category: [class, ...]}, {type: [value, ...]}, [relation, ...]) or get
    GQA's with `Ontology.gqa()`. Query methods take vocabulary forms; `lookup`/`require`
    take raw forms and normalize them first.
    """

    def __init__(self, hypernyms: Mapping[str, Iterable[str]], attributes: Mapping[str, Iterable[str]],
                 relations: Iterable[str], *, raw_forms: Mapping[str, str] | None = None,
                 scene_types: Iterable[str] = (), classes: Iterable[str] = (), untyped: Iterable[str] = (),
                 pronouns: Iterable[str] = (), gendered_names: Mapping[str, str] | None = None):
        self.categories: Mapping[str, frozenset[str]] = MappingProxyType(
            {category: frozenset(classes) for category, classes in hypernyms.items()})
        categorized = frozenset().union(*self.categories.values())
        #: classes no category lists (names a dataset brought: see `joined`)
        self.uncategorized: frozenset[str] = frozenset(classes) - categorized - set(self.categories)
        self.classes: frozenset[str] = categorized | self.uncategorized
        #: pronouns this vocabulary reads as names (dsl.words)
        self.pronouns: frozenset[str] = frozenset(pronouns) & PRONOUNS
        #: names that tell a person's gender (dsl.words; GQA's vocabulary reads them so, a
        #: vocabulary folder only when it lists them): `girl` -> `female`
        self.gendered_names: Mapping[str, str] = MappingProxyType(dict(gendered_names or {}))
        merged: dict[str, set[str]] = {}
        self._type_keys: dict[str, str] = {}  # casefolded -> first spelling seen
        for type_name, values in attributes.items():
            key = self._type_keys.setdefault(type_name.casefold(), type_name)
            merged.setdefault(key, set()).update(values)
        self.attribute_types: Mapping[str, frozenset[str]] = MappingProxyType(
            {type_name: frozenset(values) for type_name, values in merged.items()})
        self.relations: frozenset[str] = frozenset(relations)
        by_value: dict[str, set[str]] = {}
        for type_name, values in self.attribute_types.items():
            for value in values:
                by_value.setdefault(value, set()).add(type_name)
        #: attribute values no type lists (scene graphs write attributes untyped)
        self.untyped: frozenset[str] = frozenset(untyped) - set(by_value)
        by_value.update({value: set() for value in self.untyped})
        self._types_by_value = {value: frozenset(types) for value, types in by_value.items()}
        self.scene_types: frozenset[str] = frozenset(self._type_keys.get(t.casefold(), t) for t in scene_types)
        self._raw_forms = dict(raw_forms or {})
        self._aliases = {raw: form for form, raw in self._raw_forms.items()}
        self._vocabulary = (self.classes | set(self.categories) | set(self._types_by_value)
                            | set(self.attribute_types) | self.relations | self.pronouns)
        self._normalized = bounded_cache(self._normalize_uncached, 1 << 14)

    # ------------------------------------------------------------------ construction

    @classmethod
    def gqa(cls) -> "Ontology":
        """GQA's vocabulary (package data dsl/data/gqa), completed; built once."""
        return _gqa_ontology()

    @classmethod
    def from_data(cls, hypernyms, attributes, relations, classes=(), untyped=(), pronouns=(),
                  gendered_names=None) -> "Ontology":
        """A vocabulary from the three files' contents (and `to_data`'s optional parts), completed
        as GQA's is (see `from_folder`). Contents of the wrong shape raise ValueError naming the part."""
        part = _misshapen_part(hypernyms, attributes, relations)
        if part is None:
            part = next((name for name, words in (("classes", classes), ("untyped", untyped),
                                                  ("pronouns", pronouns))
                         if not (isinstance(words, (list, tuple)) and all(isinstance(w, str) for w in words))), None)
        if part is None and gendered_names is not None and not (
                isinstance(gendered_names, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                         for k, v in gendered_names.items())):
            part = "gendered_names"
        if part is not None:
            shape = {"gendered_names": "{name: gender}"}.get(part, "[word, ...]")
            raise ValueError(f"vocabulary: {part} must be {VOCABULARY_SHAPES.get(part, shape)}, every word a "
                             "non-empty string")
        return _completed(hypernyms, attributes, relations, classes=classes, untyped=untyped, pronouns=pronouns,
                          gendered_names=gendered_names)

    def to_data(self) -> dict:
        """The vocabulary as the three files' contents (`from_data` of it gives an equal vocabulary),
        plus what the files cannot hold, only when there is any: `classes` (uncategorized),
        `untyped` (values of no type), `pronouns` and `gendered_names`."""
        data = {"hypernyms": {c: sorted(m) for c, m in sorted(self.categories.items())},
                "attributes": {t: sorted(v) for t, v in sorted(self.attribute_types.items())},
                "relations": sorted(self.relations)}
        for key, words in (("classes", self.uncategorized), ("untyped", self.untyped), ("pronouns", self.pronouns)):
            if words:
                data[key] = sorted(words)
        if self.gendered_names:
            data["gendered_names"] = dict(sorted(self.gendered_names.items()))
        return data

    def joined(self, known: Mapping[str | None, Iterable[str]]) -> "Ontology":
        """This vocabulary widened by what a dataset names (raw forms, normalized here):
        `known` maps `"name"` to names, `"relation"` to relations, an attribute type to values of
        that type, and `None` to untyped values. A name the vocabulary lacks becomes a class of its
        own (no category: the ontology alone gives categories), a pronoun joins the pronouns
        (dsl.words); a typed value joins its type (a
        new type is created); an untyped value joins the untyped values unless some type or name
        already has it. Returns `self` when nothing is new.

            >>> Ontology.gqa().joined({"color": ["red"]}) is Ontology.gqa()
            True
        """
        names, relations, untyped, pronouns = set(), set(), set(), set()
        typed: dict[str, set[str]] = {}
        for key, raws in known.items():
            forms = {self.normalize(raw) for raw in raws if isinstance(raw, str) and raw.strip()}
            if key == "name":
                names |= {f for f in forms if not self.is_name(f)}
                pronouns |= names & PRONOUNS
                names -= PRONOUNS
            elif key == "relation":
                relations |= forms - self.relations
            elif key is None:
                untyped |= {f for f in forms if f not in self._types_by_value and not self.is_name(f)}
            elif key in ("hposition", "vposition"):
                continue  # fixed by geometry: never widened
            else:
                type_name = self._type_keys.get(key.casefold(), key)
                new = forms - self.attribute_types.get(type_name, frozenset())
                if new:
                    typed.setdefault(type_name, set()).update(new)
        # a plural whose singular comes too is the same name (`unicorns`, `unicorn`): keep the singular
        names = {n for n in names if not any(c in names for c in singular_candidates(n))}
        if not (names or relations or untyped or typed or pronouns):
            return self
        attributes = {t: set(v) for t, v in self.attribute_types.items()}
        for type_name, values in typed.items():
            attributes.setdefault(type_name, set()).update(values)
        joined_values = set().union(*typed.values()) if typed else set()
        return Ontology(self.categories, attributes, self.relations | relations,
                        raw_forms=self._raw_forms, scene_types=self.scene_types,
                        classes=self.uncategorized | names,
                        untyped=(self.untyped | untyped) - joined_values, pronouns=self.pronouns | pronouns,
                        gendered_names=self.gendered_names)

    def with_categories(self, categories: Mapping[str, Iterable[str]]) -> "Ontology":
        """This vocabulary with more classes under its categories (raw forms, normalized here):
        what an ontology extension adds (dsl.extension). A class the vocabulary lacks becomes a
        class; a category it lacks is made; a scene-level type named like a category (`place`,
        `room`) gains the new classes as values, as the shipped ones are completed. Returns
        `self` when nothing is new.

            >>> gqa = Ontology.gqa()
            >>> wider = gqa.with_categories({"place": ["train cars"]})
            >>> sorted(wider.categories_of("train car")), "train car" in wider.values_of("place")
            (['place', 'vehicle'], True)
            >>> gqa.with_categories({"place": ["road"]}) is gqa
            True
        """
        hypernyms = {c: set(members) for c, members in self.categories.items()}
        grown: dict[str, set[str]] = {}
        for category, raws in categories.items():
            forms = {self.normalize(raw) for raw in raws if isinstance(raw, str) and raw.strip()}
            new = forms - hypernyms.get(category, set()) - {category}
            if new:
                hypernyms.setdefault(category, set()).update(new)
                grown[category] = new
        if not grown:
            return self
        attributes = {t: set(v) for t, v in self.attribute_types.items()}
        for category, new in grown.items():
            if category in self.scene_types:
                attributes.setdefault(category, set()).update(new)
        return Ontology(hypernyms, attributes, self.relations, raw_forms=self._raw_forms,
                        scene_types=self.scene_types, classes=self.uncategorized, untyped=self.untyped,
                        pronouns=self.pronouns, gendered_names=self.gendered_names)

    @classmethod
    def from_folder(cls, folder) -> "Ontology":
        """A vocabulary in the layout of dsl/data/gqa (`hypernyms.json`, `attributes.json`,
        `relations.json`), completed as GQA's is (positions, scene-level types). A dataset
        may carry its own, smaller vocabulary this way (the embedded dataset does)."""
        from pathlib import Path
        folder = Path(folder)
        loaded = []
        for name in ("hypernyms.json", "attributes.json", "relations.json"):
            path = folder / name
            try:
                loaded.append(json.loads(path.read_text(encoding="utf-8")))
            except OSError as e:
                raise VocabularyFileError(path, f"cannot read ({e.strerror or e})") from None
            except ValueError as e:
                raise VocabularyFileError(path, f"not JSON ({e})") from None
        part = _misshapen_part(*loaded)
        if part is not None:
            raise VocabularyFileError(folder / f"{part}.json", f"expected {VOCABULARY_SHAPES[part]}, every word a "
                                                              "non-empty string")
        return _completed(*loaded)

    # ------------------------------------------------------------------ queries (vocabulary forms)

    def is_class(self, name: str) -> bool:
        return name in self.classes

    def is_category(self, name: str) -> bool:
        return name in self.categories

    def is_name(self, name: str) -> bool:
        """A class, a category or a pronoun: what `select`/`relate` may name."""
        return name in self.classes or name in self.categories or name in self.pronouns

    def classes_under(self, name: str) -> frozenset[str]:
        """The classes NAME stands for: a class -> itself; a category -> its classes, and
        itself too when it is also a class (`person`, `food`); a pronoun -> the classes it may
        stand for (dsl.words)."""
        if name in self.pronouns:
            return self._pronoun_classes(name)
        if name in self.categories:
            extra = {name} if name in self.classes else set()
            return self.categories[name] | extra
        if name in self.classes:
            return frozenset({name})
        raise UnknownConceptError(name, "name")

    @property
    def _person_classes(self) -> frozenset[str]:
        return memo(self, "_person_classes_memo", self._compute_person_classes)

    def _compute_person_classes(self) -> frozenset[str]:
        person = self.categories.get(PERSON_CATEGORY, frozenset())
        return person | ({PERSON_CATEGORY} if PERSON_CATEGORY in self.classes else set())

    def _pronoun_classes(self, pronoun: str) -> frozenset[str]:
        if pronoun in OBJECT_PRONOUNS:
            return self.classes
        gender = pronoun_gender(pronoun)
        return frozenset(c for c in self._person_classes if self.gendered_names.get(c, gender) == gender)

    def categories_of(self, class_name: str) -> frozenset[str]:
        """The categories a class sits under (possibly several, possibly none)."""
        if class_name not in self.classes and class_name not in self.categories:
            raise UnknownConceptError(class_name, "name")
        return frozenset(c for c, members in self.categories.items() if class_name in members)

    def has_type(self, type_name: str) -> bool:
        return type_name.casefold() in self._type_keys

    def type_name(self, type_name: str) -> str:
        """The vocabulary's spelling of an attribute type ('sportactivity' -> 'sportActivity')."""
        try:
            return self._type_keys[type_name.casefold()]
        except KeyError:
            raise UnknownConceptError(type_name, "type") from None

    def values_of(self, type_name: str) -> frozenset[str]:
        """The values of an attribute type (matched case-insensitively)."""
        return self.attribute_types[self.type_name(type_name)]

    def types_of(self, value: str) -> frozenset[str]:
        """The attribute types a value belongs to ('light' -> {'tone', 'weight'})."""
        try:
            return self._types_by_value[value]
        except KeyError:
            raise UnknownConceptError(value, "value") from None

    def is_attribute_value(self, value: str, type_name: str | None = None) -> bool:
        """Whether `value` is a value (of `type_name`, when given)."""
        if type_name is None:
            return value in self._types_by_value
        return self.has_type(type_name) and value in self.values_of(type_name)

    def is_relation(self, name: str) -> bool:
        return name in self.relations

    # ------------------------------------------------------------------ surface forms

    def normalize(self, raw: str) -> str:
        """The vocabulary form of a raw GQA string (see the module doc); `raw` unchanged
        when the vocabulary has no form for it."""
        return self._normalized(raw)

    def _normalize_uncached(self, raw: str) -> str:
        if not isinstance(raw, str):
            raise TypeError(f"normalize takes a str, got {type(raw).__name__}")
        text = raw.strip()
        if text in self._vocabulary:
            return text
        if text in self._aliases:
            return self._aliases[text]
        for candidate in singular_candidates(text):
            if candidate in self._vocabulary:
                return candidate
            if candidate in self._aliases:
                return self._aliases[candidate]
        return text

    def raw_form(self, form: str) -> str:
        """GQA's spelling of a vocabulary form, for reporting answers ('tenni' -> 'tennis')."""
        return self._raw_forms.get(form, form)

    def lookup(self, raw: str, kind: str) -> str | None:
        """The vocabulary form of `raw` as a `kind` ('name', 'value', 'type', 'relation'),
        or None if the vocabulary has no such concept."""
        if kind == "type":
            return self._type_keys.get(raw.strip().casefold())
        form = self.normalize(raw)
        if kind == "name":
            known = self.is_name(form)
        elif kind == "value":
            known = form in self._types_by_value
        elif kind == "relation":
            known = form in self.relations
        else:
            raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
        return form if known else None

    def require(self, raw: str, kind: str) -> str:
        """Like `lookup`, but raise `UnknownConceptError` naming the concept when unknown."""
        form = self.lookup(raw, kind)
        if form is None:
            raise UnknownConceptError(raw, kind, self.normalize(raw) if kind != "type" else raw)
        return form

    def __repr__(self) -> str:
        return (f"Ontology({len(self.classes)} classes, {len(self.categories)} categories, "
                f"{len(self.attribute_types)} attribute types, {len(self.relations)} relations)")


def _load_json(name: str):
    return json.loads(resources.files(__package__).joinpath(f"data/gqa/{name}").read_text(encoding="utf-8"))


@functools.cache  # a file shipped with the package, read once
def _gqa_ontology() -> Ontology:
    # GQA's programs select by pronoun (`select: he`): its vocabulary reads them as names
    return _completed(_load_json("hypernyms.json"), _load_json("attributes.json"), _load_json("relations.json"),
                      pronouns=PRONOUNS, gendered_names=GENDER_OF_NAME)


VOCABULARY_SHAPES = {"hypernyms": "{category: [class, ...]}", "attributes": "{type: [value, ...]}",
                     "relations": "[relation, ...]"}


def _misshapen_part(hypernyms, attributes, relations) -> str | None:
    """The first of the three parts whose content is not in its file's shape (its words
    non-empty strings: an empty one names no predicate), or None."""
    def word(item) -> bool:
        return isinstance(item, str) and bool(item.strip())

    def strings(items) -> bool:
        return isinstance(items, list) and all(map(word, items))

    for name, part in (("hypernyms", hypernyms), ("attributes", attributes)):
        if not (isinstance(part, dict) and all(word(k) and strings(v) for k, v in part.items())):
            return name
    return None if strings(relations) else "relations"


def _completed(hypernyms, attributes, relations, classes=(), untyped=(), pronouns=(), gendered_names=None) -> Ontology:
    attributes = {type_name: list(values) for type_name, values in attributes.items()}
    # What GQA's programs use but the files lack (see the module doc).
    attributes["hposition"] = sorted(set(attributes.get("hposition", ("left", "right"))) | {"middle"})
    attributes["vposition"] = ["top", "middle", "bottom"]
    attributes["location"] = sorted(set(attributes.get("location", ())) | {"indoors", "outdoors"})
    attributes["place"] = sorted(set(attributes.get("place", ())) | set(hypernyms.get("place", ())))
    attributes["room"] = sorted(set(attributes.get("room", ())) | set(hypernyms.get("room", ())))
    return Ontology(hypernyms, attributes, relations, raw_forms=GQA_RAW_FORMS, scene_types=GQA_SCENE_TYPES,
                    classes=classes, untyped=untyped, pronouns=pronouns, gendered_names=gendered_names)


def normalize(raw: str) -> str:
    """Raw GQA surface form -> GQA vocabulary form: `Ontology.gqa().normalize(raw)`."""
    return _gqa_ontology().normalize(raw)


def raw_form(form: str) -> str:
    """GQA vocabulary form -> GQA's raw spelling: `Ontology.gqa().raw_form(form)`."""
    return _gqa_ontology().raw_form(form)
