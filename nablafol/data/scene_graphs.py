"""GQA scene graphs, plain and probabilistic: ``*_sceneGraphs.json`` read as :class:`SceneGraph`.

GQA's layout (``{imageId: graph}``)::

    "2354786": {"width": 500, "height": 333, "location": "...", "weather": "...",
                "objects": {"3817110": {"name": "man", "x": 12, "y": 40, "w": 110, "h": 250,
                                        "attributes": ["standing", "young"],
                                        "relations": [{"name": "riding", "object": "3817112"}]}}}

A relation is stored on its subject: object A with ``{"name": "riding", "object": B}``
means ``riding(A, B)``.

The probabilistic extension (what a scene-graph generator emits) gives each listed fact a
probability; anything not listed has probability 0:

- ``"names": {name: p, ...}`` instead of, or beside, ``"name"``;
- ``"attributes": {value: p, ...}`` instead of a list;
- ``"p"`` on a relation (default 1).

A plain graph is the case where every listed fact has p = 1, so both read into the same
types: ``names`` and ``attributes`` become ``{value: p}`` dicts (``"name": "man"`` ->
``{"man": 1.0}``).

Decisions (checked by the tests):

- ``name`` and ``names`` together: ``names`` is the distribution and ``name`` (kept as
  :attr:`SceneObject.name`, the object's label) must be one of its keys; with ``names``
  only, the label is the most probable name (the first listed on ties).
- A relation whose target is not an object of the same image is an error, not a skip:
  a scene graph that points outside itself is broken, and dropping facts silently would
  change answers.
- Probabilities must be numbers in [0, 1] (NaN and infinities refused); boxes and image
  sizes finite numbers, ``w``, ``h`` >= 0 and ``width``, ``height`` > 0.
- Object order is the file's; duplicate relations are kept as listed (not merged).
- Fields this module does not know are kept verbatim in ``extra`` (graph and object level).
- :class:`SceneGraphTexts` is the lazy reading: the file's JSON and ids are checked on
  opening, each scene's content when it is first asked for (with the same messages).
"""
from __future__ import annotations

import json
import operator
import os
import sys
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Iterator, Mapping

from nablafol.data.fields import RecordChecker, json_type
from nablafol.data.files import json_inputs, write_question_entries
from nablafol.data.json_stream import iter_object_member_texts, iter_object_members
from nablafol.errors import InputFileError

_EXPECTED = "{imageId: scene graph}"
_NO_EXTRA: Mapping[str, Any] = MappingProxyType({})
_GRAPH_FIELDS = ("width", "height", "location", "weather", "objects")
_OBJECT_FIELDS = ("name", "names", "x", "y", "w", "h", "attributes", "relations")
_RELATION_FIELDS = ("name", "object", "p")
_intern = sys.intern
_LARGEST_INT = 2 ** 53  # larger integer coordinates take the full check (which refuses them above ~1.8e308)


def _no_extra() -> Mapping[str, Any]:
    return _NO_EXTRA


@dataclass(frozen=True, slots=True)
class SceneRelation:
    """``name(subject, object_id)`` with probability ``p``; the subject is the object that
    lists this relation."""

    name: str
    object_id: str
    p: float = 1.0
    extra: Mapping[str, Any] = field(default_factory=_no_extra, repr=False)


@dataclass(frozen=True, slots=True)
class SceneObject:
    """One object: a name distribution, a box (x, y, w, h in pixels, GQA's convention),
    attribute probabilities and the relations it is the subject of.

    ``name`` is the label (defaults to the most probable name); it is always a key of
    ``names``.
    """

    id: str
    names: Mapping[str, float]
    x: float
    y: float
    w: float
    h: float
    attributes: Mapping[str, float] = field(default_factory=_no_extra)
    relations: tuple[SceneRelation, ...] = ()
    name: str | None = None
    extra: Mapping[str, Any] = field(default_factory=_no_extra, repr=False)

    def __post_init__(self) -> None:
        if not self.names:
            raise ValueError(f"object {self.id}: names is empty")
        if self.name is None:
            object.__setattr__(self, "name", max(self.names, key=self.names.__getitem__))
        elif self.name not in self.names:
            raise ValueError(f"object {self.id}: name {self.name!r} is not among names")

    @property
    def is_plain(self) -> bool:
        """Whether every listed fact is certain (a plain GQA object)."""
        return (len(self.names) == 1 and all(p == 1.0 for p in self.names.values())
                and all(p == 1.0 for p in self.attributes.values())
                and all(r.p == 1.0 for r in self.relations))

    def to_record(self) -> dict[str, Any]:
        """GQA layout; ``names``/attribute dicts/``p`` appear only where a fact is uncertain,
        so a plain object is written exactly as GQA writes it."""
        record: dict[str, Any] = {"name": self.name}
        if dict(self.names) != {self.name: 1.0}:
            record["names"] = dict(self.names)
        record.update(x=self.x, y=self.y, w=self.w, h=self.h)
        if all(p == 1.0 for p in self.attributes.values()):
            record["attributes"] = list(self.attributes)
        else:
            record["attributes"] = dict(self.attributes)
        record["relations"] = [
            {"name": r.name, "object": r.object_id, **({} if r.p == 1.0 else {"p": r.p}),
             **r.extra} for r in self.relations]
        record.update(self.extra)
        return record


@dataclass(frozen=True, slots=True)
class SceneGraph:
    """One image's scene graph; ``objects`` in file order."""

    image_id: str
    width: float
    height: float
    objects: tuple[SceneObject, ...]
    location: str | None = None
    weather: str | None = None
    extra: Mapping[str, Any] = field(default_factory=_no_extra, repr=False)

    @property
    def object_ids(self) -> tuple[str, ...]:
        return tuple(obj.id for obj in self.objects)

    def find(self, object_id: str) -> SceneObject | None:
        """The object with this id, or None."""
        return next((obj for obj in self.objects if obj.id == object_id), None)

    @property
    def is_plain(self) -> bool:
        """Whether every fact of the graph has probability 1."""
        return all(obj.is_plain for obj in self.objects)

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"width": self.width, "height": self.height}
        if self.location is not None:
            record["location"] = self.location
        if self.weather is not None:
            record["weather"] = self.weather
        record["objects"] = {obj.id: obj.to_record() for obj in self.objects}
        record.update(self.extra)
        return record


_new = object.__new__
# the slot setters of SceneObject's fields and SceneRelation's: the plain records are built by setting them
# directly
(_set_obj_id, _set_obj_names, _set_obj_x, _set_obj_y, _set_obj_w, _set_obj_h, _set_obj_attributes, _set_obj_relations,
 _set_obj_name, _set_obj_extra) = (getattr(SceneObject, name).__set__ for name in (
    "id", "names", "x", "y", "w", "h", "attributes", "relations", "name", "extra"))
_set_rel_name, _set_rel_object_id, _set_rel_p, _set_rel_extra = (getattr(SceneRelation, name).__set__
                                                  for name in ("name", "object_id", "p", "extra"))


def scene_graph_from_record(image_id: str, record: Any, *,
                            path: Path | str = "<record>") -> SceneGraph:
    """Build and check a :class:`SceneGraph` from one decoded ``{imageId: graph}`` value."""
    check = RecordChecker(path, f"image {image_id}")
    check.object(record, "the scene graph")
    for required in ("width", "height", "objects"):
        if required not in record:
            raise check.fail(f"{required} is missing")
    objects_record = check.object(record["objects"], "objects")
    plain = _SceneRelations()  # (name, object id) -> its SceneRelation, shared by the scene's subjects
    objects = tuple(_object_from_record(image_id, object_id, value, path, plain)
                    for object_id, value in objects_record.items())
    targets = set()
    for obj in objects:
        targets.update(map(_TARGET, obj.relations))
    if not targets <= objects_record.keys():  # say which relation points outside, the first in file order
        for obj in objects:
            for relation in obj.relations:
                if relation.object_id not in objects_record:
                    raise InputFileError(
                        path, f"relation {relation.name!r} points to object {relation.object_id}, "
                              f"which is not an object of this image",
                        f"image {image_id}, object {obj.id}")
    extra = {k: v for k, v in record.items() if k not in _GRAPH_FIELDS}
    return SceneGraph(
        image_id=image_id,
        width=check.positive(record["width"], "width"),
        height=check.positive(record["height"], "height"),
        objects=objects,
        location=check.optional_string(record.get("location"), "location"),
        weather=check.optional_string(record.get("weather"), "weather"),
        extra=extra or _NO_EXTRA,
    )


class _SceneRelations(dict):
    """``(name, object id)`` -> the scene's one plain :class:`SceneRelation` of that pair, its strings
    interned, made on first look-up (``[]``; a name or object id not a string: KeyError)."""

    __slots__ = ()

    def __missing__(self, key: tuple) -> SceneRelation:
        name, object_id = key
        if type(name) is not str or type(object_id) is not str:
            raise KeyError(key)
        # the slots set directly (as SceneRelation(name, object_id) sets them, less its keyword handling)
        relation = self[key] = _new(SceneRelation)
        _set_rel_name(relation, _intern(name))
        _set_rel_object_id(relation, _intern(object_id))
        _set_rel_p(relation, 1.0)
        _set_rel_extra(relation, _NO_EXTRA)
        return relation


_PLAIN_KEYS = frozenset(("name", "x", "y", "w", "h", "attributes", "relations"))


def _object_from_record(image_id: str, object_id: str, record: Any, path: Path | str,
                        plain: _SceneRelations) -> SceneObject:
    # GQA's own objects (a name, an integer box, a list of attribute strings, relations; nothing
    # else): 200,000 at the validation split's size, so they are checked in a few C-level passes
    # and built directly; anything else goes through the field-by-field check below
    if type(record) is dict and record.keys() == _PLAIN_KEYS:
        name, x, y, w, h, attributes, relations = _GET_PLAIN(record)
        if (type(name) is str and type(x) is int and type(y) is int and type(w) is int and type(h) is int
                and w >= 0 and h >= 0 and abs(x) <= _LARGEST_INT and abs(y) <= _LARGEST_INT
                and w <= _LARGEST_INT and h <= _LARGEST_INT
                and type(attributes) is list and type(relations) is list
                and all(type(a) is str for a in attributes)):
            # the slots, as SceneObject(...) sets them: its __post_init__ has nothing to check (names
            # holds name) or to fill in (name is given)
            obj = _new(SceneObject)
            _set_obj_id(obj, object_id)
            _set_obj_names(obj, {name: 1.0})
            _set_obj_x(obj, x)
            _set_obj_y(obj, y)
            _set_obj_w(obj, w)
            _set_obj_h(obj, h)
            _set_obj_attributes(obj, dict.fromkeys(attributes, 1.0))
            _set_obj_relations(obj, _relations_from_records(None, relations, plain, path, image_id, object_id))
            _set_obj_name(obj, name)
            _set_obj_extra(obj, _NO_EXTRA)
            return obj
    check = RecordChecker(path, f"image {image_id}, object {object_id}")
    check.object(record, "the object")
    name = check.optional_string(record.get("name"), "name")
    if record.get("names") is not None:
        names = check.probability_map(record["names"], "names")
        if not names:
            raise check.fail("names is empty")
        if name is not None and name not in names:
            raise check.fail(f"name {name!r} is not among names {sorted(names)}")
    elif name is not None:
        names = {name: 1.0}
    else:
        raise check.fail("has neither name nor names")
    box = {}
    for side in ("x", "y", "w", "h"):
        if side not in record:
            raise check.fail(f"{side} is missing")
        box[side] = check.number(record[side], side)
    for side in ("w", "h"):
        check.non_negative(box[side], side)
    attributes_record = record.get("attributes", [])
    if isinstance(attributes_record, list):
        attributes = {check.string(a, "attributes"): 1.0 for a in attributes_record}
    elif isinstance(attributes_record, dict):
        attributes = check.probability_map(attributes_record, "attributes")
    else:
        raise check.fail(f"attributes must be a list or {{value: p}}, "
                         f"found {json_type(attributes_record)}")
    relations_record = record.get("relations", [])
    if not isinstance(relations_record, list):
        raise check.fail("relations must be a list of {\"name\", \"object\"} objects")
    relations = _relations_from_records(check, relations_record, plain, path, image_id, object_id)
    extra = {k: v for k, v in record.items() if k not in _OBJECT_FIELDS}
    return SceneObject(id=object_id, names=names, attributes=attributes, relations=relations,
                       name=name, extra=extra or _NO_EXTRA, **box)


_NAME_AND_OBJECT = operator.itemgetter("name", "object")
_GET_PLAIN = operator.itemgetter("name", "x", "y", "w", "h", "attributes", "relations")
_TARGET = operator.attrgetter("object_id")


def _relations_from_records(check: RecordChecker | None, records: list, plain: _SceneRelations, path: Path | str,
                            image_id: str, object_id: str) -> tuple[SceneRelation, ...]:
    # hundreds per scene, nearly all a {"name", "object"} pair of strings: all looked up in C (types,
    # lengths, keys, the scene's relations, which make a new pair's on first look-up); anything else
    # goes through the full check, record by record (``check``: None until one is needed)
    if not records:
        return ()
    if set(map(type, records)) == _ONLY_DICT and set(map(len, records)) == _ONLY_TWO:
        try:
            return tuple(map(plain.__getitem__, map(_NAME_AND_OBJECT, records)))
        except (KeyError, TypeError):  # not all {"name", "object"}, or not strings (unhashable ones included)
            pass
    if check is None:
        check = RecordChecker(path, f"image {image_id}, object {object_id}")
    return tuple(_relation_from_record(check, index, value, plain) for index, value in enumerate(records))


_ONLY_DICT, _ONLY_TWO = {dict}, {2}


def _relation_from_record(check: RecordChecker, index: int, record: Any, plain: _SceneRelations) -> SceneRelation:
    # GQA's relations are {"name", "object"} strings, hundreds per scene: the common case goes
    # straight through, one frozen SceneRelation per distinct (name, object) of the scene
    # (many subjects are "to the left of" the same object), its strings interned
    if type(record) is dict and len(record) == 2:
        name, object_id = record.get("name"), record.get("object")
        if type(name) is str and type(object_id) is str:
            return plain[name, object_id]
    what = f"relations[{index}]"
    check.object(record, what)
    for required in ("name", "object"):
        if required not in record:
            raise check.fail(f"{what}.{required} is missing")
    extra = {k: v for k, v in record.items() if k not in _RELATION_FIELDS}
    return SceneRelation(
        name=_intern(check.string(record["name"], f"{what}.name")),
        object_id=_intern(check.string(record["object"], f"{what}.object")),
        p=check.probability(record["p"], f"{what}.p") if "p" in record else 1.0,
        extra=extra or _NO_EXTRA,
    )


def iter_scene_graphs(path: str | os.PathLike) -> Iterator[SceneGraph]:
    """Yield the scene graphs of a file (or a folder of files), streaming, in file order."""
    for part in json_inputs(path):
        for image_id, record in iter_object_members(part, expected=_EXPECTED):
            yield scene_graph_from_record(image_id, record, path=part)


def load_scene_graphs(path: str | os.PathLike) -> dict[str, SceneGraph]:
    """All scene graphs as ``{imageId: SceneGraph}``; an image id seen twice is an error."""
    return {image_id: scene_graph_from_record(image_id, record, path=part)
            for part, image_id, record in _unique_members(path, iter_object_members)}


def _unique_members(path: str | os.PathLike, members) -> Iterator[tuple]:
    """``(file, *member)`` for every member of every scene-graph file of ``path`` (``members``:
    a reader of :mod:`~nablafol.data.json_stream`), refusing an image id seen twice."""
    seen: set[str] = set()
    for part in json_inputs(path):
        for member in members(part, expected=_EXPECTED):
            if member[0] in seen:
                raise InputFileError(part, "appears twice", f"image {member[0]}")
            seen.add(member[0])
            yield (part, *member)


class SceneGraphTexts(Mapping):
    """``{imageId: SceneGraph}`` over scene-graph files whose scenes are kept as their JSON
    text, each read (decoded and checked) when first asked for; the last ``cache_size`` read
    are kept.

    For processes forked after loading (``nablafol eval --workers``): text is never written
    to after loading, so the workers share it instead of copying it, and each scene is
    turned into objects by the worker that needs it, in parallel. Opening checks the JSON,
    that every member is an object with an ``objects`` object, and that no image id repeats.

    >>> graphs = SceneGraphTexts("tests/fixtures/gqa/val_sceneGraphs.json")
    >>> graphs.object_count("n161313"), len(graphs["n161313"].objects)
    (5, 5)
    """

    def __init__(self, path: str | os.PathLike, cache_size: int = 256):
        self.cache_size = cache_size
        self._texts: dict[str, tuple[str, int, Path]] = {}  # image -> (JSON text, objects, file)
        self._cache: OrderedDict[str, SceneGraph] = OrderedDict()
        names: set[str] = set()
        values: set[str] = set()
        for part, image_id, record, text in _unique_members(path, iter_object_member_texts):
            objects = record.get("objects") if type(record) is dict else None
            if type(objects) is not dict:
                scene_graph_from_record(image_id, record, path=part)  # raises, saying what is wrong
            self._texts[image_id] = (text, len(objects), part)
            for obj in objects.values():  # the words, while the record is decoded anyway
                _add_words(obj, names, values)
        self._words = (frozenset(names), frozenset(values))

    def words(self) -> tuple[frozenset, frozenset]:
        """``(names, attribute values)`` the scenes' objects hold, as written (known without
        reading the scenes again)."""
        return self._words

    def object_count(self, image_id: str) -> int:
        """The scene's number of objects (known without reading the scene)."""
        return self._texts[image_id][1]

    def __getitem__(self, image_id: str) -> SceneGraph:
        graph = self._cache.get(image_id)
        if graph is not None:
            self._cache.move_to_end(image_id)
            return graph
        text, _, part = self._texts[image_id]
        graph = self._cache[image_id] = scene_graph_from_record(image_id, json.loads(text), path=part)
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return graph

    def __contains__(self, image_id: object) -> bool:
        return image_id in self._texts

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)


def scene_graph_words(graphs: Mapping) -> tuple[frozenset, frozenset]:
    """``(names, attribute values)`` the objects of ``graphs`` (image id -> :class:`SceneGraph`,
    or :class:`SceneGraphTexts`) hold, as written: what an open query over them may answer.

        >>> names, values = scene_graph_words(load_scene_graphs("tests/fixtures/gqa/val_sceneGraphs.json"))
        >>> names == SceneGraphTexts("tests/fixtures/gqa/val_sceneGraphs.json").words()[0], len(values) > 0
        (True, True)
    """
    if isinstance(graphs, SceneGraphTexts):
        return graphs.words()
    names = {name for graph in graphs.values() for obj in graph.objects for name in obj.names}
    values = {value for graph in graphs.values() for obj in graph.objects for value in obj.attributes}
    return frozenset(names), frozenset(values)


def _add_words(obj, names: set, values: set) -> None:
    """The names and attribute values of one object record, as :class:`SceneObject` reads them
    (strings only: a malformed record is refused when its scene is read)."""
    if type(obj) is not dict:
        return
    found = obj.get("names")
    found = found if isinstance(found, dict) else [obj.get("name")]
    names.update(n for n in found if isinstance(n, str))
    attributes = obj.get("attributes")
    if isinstance(attributes, (list, dict)):
        values.update(v for v in attributes if isinstance(v, str))


def write_scene_graphs(path: str | os.PathLike, graphs: Iterable[SceneGraph]) -> None:
    """Write scene graphs as one ``*_sceneGraphs.json`` file (image ids must be unique;
    NaN or infinite numbers are refused: they are not JSON)."""
    write_question_entries(path, ((g.image_id, json.dumps(g.image_id) + ": " + json.dumps(
        g.to_record(), ensure_ascii=False, allow_nan=False)) for g in graphs), "{}", kind="image")
