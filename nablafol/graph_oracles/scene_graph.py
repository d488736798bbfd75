"""The golden oracle: GQA scene graphs (plain or probabilistic) answer GQA predicates.

It implements the predicate table of ``docs/compiling-gqa.md`` ("GQA predicates: the contract
between the compiler and the oracles") over one batch of scene graphs. Scene ``b`` has its
objects in file order, then one **scene pseudo-object** (so ``n_b = objects + 1``).

Unary kinds (``Predicate(name, 1, kind)``), with ``p_X`` what the graph lists for object X:

| kind | P(π(X)) |
| --- | --- |
| ``name`` N | ``min(1, Σ_{c ∈ under(N)} p_X(c))``, ``under(N)`` = N and, for a category, its classes |
| ``class`` C | ``p_X(C)``: exactly C (the candidates of ``query name``) |
| ``attr`` V | ``p_X(V)``, attributes independent; the scene pseudo-object carries its graph's ``location``, ``weather``, ``place``, ``room`` |
| ``hposition`` / ``vposition`` | the box's third of the image (:mod:`nablafol.graph_oracles.geometry`) |
| ``scene`` ``scene`` | 1 for the scene pseudo-object only |

Binary kinds:

| kind | P(π(X, Y)) |
| --- | --- |
| ``rel`` R | ``p`` of ``R(X, Y)`` as stored on X; listed twice -> ``1 − (1 − p₁)(1 − p₂)`` |
| ``compare`` COMP | geometry rules (:mod:`~nablafol.graph_oracles.geometry`) or trait rules (:mod:`~nablafol.graph_oracles.traits`) |
| ``same`` TYPE | ``1 − Π_{v ∈ TYPE} (1 − p_X(v)·p_Y(v))`` for X ≠ Y (positions: from geometry) |

The scene pseudo-object is false of every other predicate and takes part in no relation.
Names, attributes and relations in a graph are raw GQA strings: they reach the vocabulary
through the ontology's ``normalize``. The vocabulary is open: a name, attribute value or
relation the ontology lacks is a predicate of its own (counted in
:attr:`SceneGraphOracle.unknown_concepts`, and answered like any other), and a ``name``,
``class``, ``attr`` or ``rel`` predicate that no graph of the batch holds is false of every
object (a scene graph is the whole truth of its image). GQA's own words (``dsl.words``):

* a pronoun is a ``name`` that holds of the objects it may stand for: ``he`` of a person whose
  name is not a woman's, ``she`` of a person whose name is not a man's, ``this``, ``it``,
  ``they``, ... of every object;
* a group name that tells a gender (``girls``, ``women``, ``men``: a plural of the ontology's
  ``gendered_names``, GQA's from ``dsl.words``) gives its object that ``gender`` value, as
  GQA's answers do: over one object named ``girls``, "Are all the people the same gender?"
  is "Yes, all the people are female". A singular name (``woman``) gives none.

A plain graph is the case where every listed fact has p = 1, so every answer is 0/1.

Speed: a batch's facts are read in a few passes over all its objects at once (names, values
and relations gathered in C, mapped to columns through the vocabulary's caches, combined with
numpy in the order the rules above name them) and stored as sparse arrays (see
:mod:`~nablafol.graph_oracles.fact_tables`); a call maps the distinct predicates to vocabulary
columns (one dict look-up each, shared by every oracle over the vocabulary) and answers all
rows with a few gathers.

    >>> from nablafol.data import load_scene_graphs
    >>> from nablafol.oracle import Requests
    >>> from nablafol.ir import Predicate
    >>> graphs = load_scene_graphs("tests/fixtures/gqa/val_sceneGraphs.json")
    >>> oracle = SceneGraphOracle([graphs["n161313"]])
    >>> oracle.num_objects
    tensor([6])
    >>> req = Requests.build([0, 0], [Predicate("furniture", kind="name"), Predicate("scene", kind="scene")])
    >>> oracle.unary(req).exp()
    tensor([[1., 0., 0., 1., 0., 0.],
            [0., 0., 0., 0., 0., 1.]])
"""
from __future__ import annotations

import weakref
from collections import Counter
from itertools import chain
from operator import attrgetter, methodcaller
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from ..errors import OracleError, ProbabilityError, ShapeError, UnknownPredicateError
from ..ir import Predicate
from ..numerics import safe_log
from ..oracle import Requests
from nablafol.dsl.words import OBJECT_PRONOUNS, PERSON_PRONOUNS

from . import geometry, traits
from .contract import BINARY_KINDS, UNARY_KINDS, refusal
from .fact_tables import BinaryFacts, UnaryFacts

__all__ = ["SceneGraphOracle", "UNARY_KINDS", "BINARY_KINDS", "COMPARATIVES", "SCENE_OBJECT_ID"]

COMPARATIVES = tuple(geometry.RULES) + tuple(traits.RULES)
SCENE_OBJECT_ID = "scene"  # the id the scene pseudo-object reports (GQA object ids are numbers)
SCENE_FIELDS = ("location", "weather", "place", "room")  # what the pseudo-object carries
_GEOMETRY_TYPES = ("hposition", "vposition")
_SAME_CHUNK = 1 << 24  # elements of the (rows, values, N, N) temporary of `same`
_OPEN_KINDS = ("name", "class", "attr")
_PLAIN_UNARY_KINDS = tuple(k for k in UNARY_KINDS if k != "class")  # the kinds a plain unary name may be
# one column per gender serves every person pronoun of it (`him`, `his` read as `he`)
_PRONOUN_COLUMN = {word: {"male": "he", "female": "she"}[gender] for word, gender in PERSON_PRONOUNS.items()}  # unary kinds whose vocabulary is open
ABSENT = -1  # the column of a predicate no graph of the batch holds: false of every object
EVERY_OBJECT = -2  # the column of `this`, `it`, `they`, ...: true of every real object (computed, not stored)


_relation_name, _relation_object, _relation_p = (attrgetter(a) for a in ("name", "object_id", "p"))
_objects, _names, _attributes, _relations_of, _object_id = (attrgetter(a) for a in (
    "objects", "names", "attributes", "relations", "id"))
_box = attrgetter("x", "y", "w", "h")
_values_of = methodcaller("values")


#: Raw strings of graphs whose columns a vocabulary keeps at most, per kind (names, values,
#: relations); cleared when full, so that a stream of distinct spellings does not grow them
#: without end. Only the look-up is forgotten: a column, once numbered, keeps its number, and
#: the strings outside the ontology stay recorded (as they stay counted, with their columns)
RAW_STRINGS_KEPT = 1 << 16


def _room(cache: dict) -> None:
    """Make room in a raw-string cache."""
    if len(cache) >= RAW_STRINGS_KEPT:
        cache.clear()


def default_ontology():
    """GQA's ontology, what an oracle given none reads scene graphs with."""
    from nablafol.dsl import Ontology  # imported late: dsl is torch-free and optional for TableOracle users
    return Ontology.gqa()


class PredicateColumns:
    """Vocabulary columns of one ontology: ``(kind, name) -> column``, and what raw scene-graph
    strings feed. Built once per ontology and shared by every oracle over it; a string outside
    the ontology gets columns of its own when first seen (an oracle built before answers them
    as absent: its facts cannot hold them)."""

    _cache: "weakref.WeakKeyDictionary[Any, PredicateColumns]" = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, ontology) -> "PredicateColumns":
        columns = cls._cache.get(ontology)
        if columns is None:
            columns = cls._cache[ontology] = cls(ontology)
        return columns

    def __init__(self, ontology):
        self.ontology = ontology
        names = sorted(ontology.classes | set(ontology.categories))
        values = sorted(set().union(*ontology.attribute_types.values()))
        unary: dict[tuple[str, str], int] = {}
        for kind, keys in (("name", names), ("class", names), ("attr", values), ("name", ("he", "she")),
                           ("hposition", geometry.POSITIONS["hposition"]),
                           ("vposition", geometry.POSITIONS["vposition"]),
                           ("scene", ("scene",)), ("trait", traits.TRAITS)):
            for key in keys:
                unary[(kind, key)] = len(unary)
        self.unary = unary
        self.n_unary = len(unary)
        self.relations = {r: i for i, r in enumerate(sorted(ontology.relations))}
        self.trait_columns = np.array([unary[("trait", t)] for t in traits.TRAITS])
        self._categories_of: dict[str, list[str]] = {}
        for category, members in ontology.categories.items():
            for member in members:
                self._categories_of.setdefault(member, []).append(category)
        self._trait_classes = traits.trait_classes(ontology)
        self._person = ontology.classes_under("person") if ontology.is_name("person") else frozenset()
        # raw string of a graph -> its columns, and the strings outside the ontology (read in C by an
        # oracle's batch pass, one string at a time by label(), value(), relation_column())
        self.label_cache: dict[str, tuple[int, ...]] = {}
        self.value_cache: dict[str, tuple[int, ...]] = {}
        self.relation_cache: dict[str, int] = {}
        self.outside_names: set[str] = set()
        self.outside_values: set[str] = set()
        self.outside_relations: set[str] = set()
        # predicate -> what every oracle over this vocabulary resolves it to, where that cannot
        # change as the vocabulary grows: (kind, column) found under the predicate's own name (a
        # key is never renumbered, and it is tried first), (kind, name) of compare and same
        self.resolved: dict[Predicate, tuple[str, int | str]] = {}
        self.unary_columns: dict[Predicate, int] = {}  # the unary ones' columns alone

    def _column(self, kind: str, key: str) -> int:
        """The column of ``(kind, key)``, added when new (the vocabulary is open)."""
        col = self.unary.get((kind, key))
        if col is None:
            col = self.unary[(kind, key)] = self.n_unary
            self.n_unary += 1
        return col

    def label_columns(self, raw: str) -> tuple[int, ...]:
        """Columns a name of the graph adds its probability to (``class``, ``name`` of itself
        and of its categories, of the pronouns that may stand for it, class traits) and, for
        a name that tells a gender, the ``attr`` column of that gender."""
        return self.label(raw)[0]

    def label_is_open(self, raw: str) -> bool:
        """Whether a name of the graph lies outside the ontology."""
        return self.label(raw)[1]

    def label(self, raw: str) -> tuple[tuple[int, ...], bool]:
        """``(label_columns(raw), label_is_open(raw))`` in one look-up."""
        found = self.label_cache.get(raw)
        if found is not None:
            return found, raw in self.outside_names
        label = self.ontology.normalize(raw)
        outside = ("name", label) not in self.unary or not self.ontology.is_name(label)
        keys = [("class", label), ("name", label)]
        keys += [("name", c) for c in self._categories_of.get(label, ()) if c != label]
        keys += [("trait", t) for t, members in self._trait_classes.items() if label in members]
        gender = self.ontology.gendered_names.get(label)
        group = label != raw.strip()  # a plural (`girls`, `men`): one object for several people
        if label in self._person or gender is not None:
            keys += [("name", p) for p in ("he", "she") if gender in (None, PERSON_PRONOUNS[p])]
        if gender is not None and group:  # a group's name tells its members' gender
            keys.append(("attr", gender))
        _room(self.label_cache)
        found = self.label_cache[raw] = tuple(self._column(*k) for k in keys)
        if outside:
            self.outside_names.add(raw)
        return found, outside

    def value_columns(self, raw: str) -> tuple[int, ...]:
        """Columns an attribute value of the graph sets (``attr``, attribute traits)."""
        return self.value(raw)[0]

    def value_is_open(self, raw: str) -> bool:
        """Whether an attribute value of the graph lies outside the ontology."""
        return self.value(raw)[1]

    def value(self, raw: str) -> tuple[tuple[int, ...], bool]:
        """``(value_columns(raw), value_is_open(raw))`` in one look-up."""
        found = self.value_cache.get(raw)
        if found is not None:
            return found, raw in self.outside_values
        value = self.ontology.normalize(raw)
        outside = not self.ontology.is_attribute_value(value)
        keys = [("attr", value)] + [("trait", t) for t, vals in traits.TRAIT_ATTRIBUTES.items() if value in vals]
        _room(self.value_cache)
        found = self.value_cache[raw] = tuple(self._column(*k) for k in keys)
        if outside:
            self.outside_values.add(raw)
        return found, outside

    def relation_column(self, raw: str) -> int:
        """The column of a relation of the graph (added when new)."""
        return self._relation(raw)[0]

    def relation_is_open(self, raw: str) -> bool:
        return self._relation(raw)[1]

    def _relation(self, raw: str) -> tuple[int, bool]:
        found = self.relation_cache.get(raw)
        if found is not None:
            return found, raw in self.outside_relations
        name = self.ontology.normalize(raw)
        col = self.relations.get(raw.strip())
        if col is None:
            col = self.relations.get(name)
        # asked of the ontology, not of the columns (which number outside names too once met)
        outside = raw.strip() not in self.ontology.relations and name not in self.ontology.relations
        if col is None:
            col = self.relations[name] = len(self.relations)
        _room(self.relation_cache)
        self.relation_cache[raw] = col
        if outside:
            self.outside_relations.add(raw)
        return col, outside

    def find(self, kind: str, name: str) -> int | None:
        """The column of a unary predicate, by its name as given or normalized; None when no
        graph has fed it yet."""
        for key in (name, self.ontology.normalize(name)):
            col = self.unary.get((kind, key))
            if col is not None:
                return col
        return None

    def find_relation(self, name: str) -> int | None:
        for key in (name.strip(), self.ontology.normalize(name)):
            col = self.relations.get(key)
            if col is not None:
                return col
        return None

    def same_columns(self, type_name: str) -> np.ndarray:
        """Unary columns of the values of an attribute type (positions: the geometry columns);
        a value no graph has fed yet has no column (it holds of no object)."""
        if type_name in _GEOMETRY_TYPES:
            return np.array([self.unary[(type_name, v)] for v in geometry.POSITIONS[type_name]])
        cols = (self.unary.get(("attr", v)) for v in self.ontology.values_of(type_name))
        return np.array(sorted(c for c in cols if c is not None), dtype=np.int64)


class SceneGraphOracle:
    """GQA predicates answered from a batch of scene graphs (see the module docstring).

    ``graphs``: the scenes of the batch, in order (scene ``b`` of the requests is
    ``graphs[b]``). ``ontology``: the vocabulary (default ``dsl.Ontology.gqa()``).
    Answers are returned on ``device`` in the default float dtype.
    """

    @property
    def pads_with_zeros(self) -> bool:
        """Every answer is ``-inf`` (an exact 0) at the objects past a scene's own (the batch's
        padding): facts are stored of real objects only, and every binary kind is masked by real
        pairs. Not promised for a subclass, which may change the tables."""
        return type(self) is SceneGraphOracle

    def __init__(self, graphs: Sequence, ontology=None, device=None):
        self.ontology = ontology if ontology is not None else default_ontology()
        self.columns = PredicateColumns.of(self.ontology)
        self.graphs = tuple(graphs)
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.unknown_concepts: Counter = Counter()  # (kind, raw string) -> occurrences outside the ontology
        sizes = np.array([len(g.objects) + 1 for g in self.graphs], dtype=np.int64)
        self._num_objects = torch.as_tensor(sizes, device=self.device)
        self._n = int(sizes.max()) if len(sizes) else 0
        self._predicate_cache: dict[Predicate, tuple[str, int | str] | None] = {}
        self._distinct: torch.Tensor | None = None  # (N, N): off the diagonal, made when first needed
        self._build(sizes)

    # ------------------------------------------------------------------ construction
    def _build(self, sizes: np.ndarray) -> None:
        """The batch's facts as arrays, in a few passes over all its objects at once: names,
        attribute values and relations are read in C (``map``, ``chain``), mapped to columns
        through the vocabulary's caches and combined with numpy, in the order the formulas of
        the module docstring name them (so sums and products are the same floating-point ones)."""
        cols, graphs, n = self.columns, self.graphs, self._n
        n_scenes = len(sizes)
        counts = sizes - 1  # real objects of each scene
        objects = list(chain.from_iterable(map(_objects, graphs)))  # every real object, scene by scene
        scene_of = np.repeat(np.arange(n_scenes), counts)
        where = scene_of * n + (np.arange(len(objects)) - np.repeat(np.cumsum(counts) - counts, counts))
        pseudo = np.arange(n_scenes, dtype=np.int64) * n + counts  # each scene's pseudo-object, as (scene * n + row)
        boxes = np.zeros((n_scenes * n, 4))
        if objects:
            boxes[where] = np.fromiter(chain.from_iterable(map(_box, objects)), dtype=np.float64,
                                       count=4 * len(objects)).reshape(-1, 4)
        images = np.array([(g.width, g.height) for g in graphs], dtype=np.float64).reshape(n_scenes, 2)
        real = np.zeros(n_scenes * n, dtype=bool)
        real[where] = True

        names, values = list(map(_names, objects)), list(map(_attributes, objects))
        scene_pairs = self._all_scene_pairs(names, values)
        name_raws, name_p, name_owner = _entries(names, where)
        value_raws, value_p, value_owner = _entries(values, where)
        scene_raws = [raw for pairs in scene_pairs for raw, _ in pairs]
        value_raws += scene_raws
        value_p = np.concatenate([value_p, np.fromiter((p for pairs in scene_pairs for _, p in pairs), dtype=np.float64,
                                                       count=len(scene_raws))])  # checked by _scene_pairs
        value_owner = np.concatenate([value_owner, np.repeat(pseudo, list(map(len, scene_pairs)))]).astype(np.int64)
        # column sets of each raw string; strings new to the vocabulary first go through it in file order
        try:
            label_cols = list(map(cols.label_cache.__getitem__, name_raws))
            value_cols = list(map(cols.value_cache.__getitem__, value_raws))
        except KeyError:
            self._in_file_order(names, values, scene_pairs, len(graphs), count=False)
            # one by one if the batch held more new strings than a cache keeps
            label_cols = list(map(cols.label_columns, name_raws))
            value_cols = list(map(cols.value_columns, value_raws))
        if not (cols.outside_names.isdisjoint(name_raws) and cols.outside_values.isdisjoint(value_raws)):
            self._in_file_order(names, values, scene_pairs, len(graphs), count=True)
        n_columns = cols.n_unary
        # names add up (capped at 1); attribute values combine by noisy-or and replace a name's
        # value for the same column (a group name's gender); the scene column holds of the pseudo-object
        name_key, name_sum = _per_column(name_owner, label_cols, name_p, n_columns, np.add, 0.0)
        value_key, not_held = _per_column(value_owner, value_cols, 1.0 - value_p, n_columns, np.multiply, 1.0)
        kept = ~np.isin(name_key, value_key)
        key = np.concatenate([name_key[kept], value_key, pseudo * n_columns + cols.unary[("scene", "scene")]])
        prob = np.concatenate([np.minimum(name_sum[kept], 1.0), 1.0 - not_held, np.ones(n_scenes)])
        held = prob > 0
        key, prob = key[held], prob[held]
        at, col = key // n_columns, key % n_columns
        n_traits = len(traits.TRAITS)
        trait_of = np.full(n_columns, -1)
        trait_of[cols.trait_columns] = np.arange(n_traits)
        self._traits = np.zeros((n_scenes * n, n_traits))
        is_trait = trait_of[col] >= 0
        self._traits[at[is_trait], trait_of[col[is_trait]]] = prob[is_trait]
        self._traits = self._traits.reshape(n_scenes, n, n_traits)
        u_at, u_col, u_p = [at], [col], [prob]

        # positions: one vectorized pass over every real object's box
        if len(where):
            box_t, image_t = torch.from_numpy(boxes[where]), torch.from_numpy(images[scene_of])
            for kind, rule in (("hposition", geometry.hposition), ("vposition", geometry.vposition)):
                which = rule(box_t, image_t).numpy()
                first = cols.unary[(kind, geometry.POSITIONS[kind][0])]  # the 3 columns are consecutive
                u_at.append(where), u_col.append(first + which), u_p.append(np.ones(len(where)))
        at = np.concatenate(u_at)
        self._n_unary = cols.n_unary  # columns added later (by other batches) hold here of nothing
        self._unary_facts = UnaryFacts(at // max(1, n), at % max(1, n), np.concatenate(u_col), np.concatenate(u_p),
                                       self._n_unary)
        self._relation_facts = self._relations(graphs, objects, where)
        self._n_relations = self._relation_facts.n_columns
        self._boxes = torch.from_numpy(boxes.reshape(n_scenes, n, 4))
        self._images = torch.from_numpy(images)
        self._real = torch.from_numpy(real.reshape(n_scenes, n))

    def _all_scene_pairs(self, names: list, values: list) -> list:
        """Each scene's ``(value, p)`` pairs; a malformed field is refused after the strings of the
        scenes before it (and of its objects) have reached the vocabulary, as when scenes were
        read one by one."""
        pairs = []
        for b, graph in enumerate(self.graphs):
            try:
                pairs.append(_scene_pairs(graph))
            except OracleError:
                self._in_file_order(names, values, pairs, b + 1, count=False)
                raise
        return pairs

    def _in_file_order(self, names: list, values: list, scene_pairs: list, n_scenes: int, count: bool) -> None:
        """The strings of the first ``n_scenes`` scenes through the vocabulary one by one, in file
        order (object by object, names before attribute values, each scene's own values after its
        objects): columns new to the vocabulary are numbered in that order, and ``count`` counts
        the strings outside the ontology in :attr:`unknown_concepts` in it."""
        label, value, unknown = self.columns.label, self.columns.value, self.unknown_concepts
        k = 0
        for b, graph in enumerate(self.graphs[:n_scenes]):
            for _ in graph.objects:
                for raw in names[k]:
                    if label(raw)[1] and count:
                        unknown[("name", raw)] += 1
                for raw in values[k]:
                    if value(raw)[1] and count:
                        unknown[("attr", raw)] += 1
                k += 1
            for raw, _ in scene_pairs[b] if b < len(scene_pairs) else ():
                if value(raw)[1] and count:
                    unknown[("attr", raw)] += 1

    def _relations(self, graphs: tuple, objects: list, where: np.ndarray) -> BinaryFacts:
        """Every listed relation in file order, with its subject's and object's rows."""
        listed = list(map(_relations_of, objects))
        counts = np.fromiter(map(len, listed), dtype=np.int64, count=len(listed))
        relations = list(chain.from_iterable(listed))
        ends = np.concatenate([[0], np.cumsum(counts)])[np.cumsum([len(g.objects) for g in graphs], dtype=np.int64)]
        targets: list[int] = []
        start = 0
        for graph, stop in zip(graphs, ends.tolist()):  # hundreds per scene: mapped in C
            index = dict(zip(map(_object_id, graph.objects), range(len(graph.objects))))
            targets.extend(map(index.__getitem__, map(_relation_object, relations[start:stop])))
            start = stop
        names = list(map(_relation_name, relations))
        probs = _probabilities(np.fromiter(map(_relation_p, relations), dtype=np.float64, count=len(relations)), names)
        return self._combined_relations(np.repeat(where, counts), names, targets, probs)

    def _combined_relations(self, owner, names, targets, probs) -> BinaryFacts:
        """One fact per (scene, subject, object, column): a relation listed twice combines by
        noisy-or, ``1 − Π (1 − p)`` in the order listed; names outside the ontology are counted."""
        cols = self.columns
        try:
            column = np.fromiter(map(cols.relation_cache.__getitem__, names), dtype=np.int64, count=len(names))
        except KeyError:  # names new to the vocabulary: numbered as met in the batch's set of names
            for name in set(names):
                cols.relation_column(name)
            column = np.fromiter(map(cols.relation_column, names), dtype=np.int64, count=len(names))
        n_columns = max(1, len(self.columns.relations))
        owner = np.asarray(owner, dtype=np.int64)
        target = np.asarray(targets, dtype=np.int64)
        not_held = 1.0 - np.asarray(probs, dtype=np.float64)
        if not cols.outside_relations.isdisjoint(names):  # counting millions of names only when some lie outside
            for name, times in Counter(names).items():
                if name in cols.outside_relations:
                    self.unknown_concepts[("rel", name)] += times
        key = (owner * self._n + target) * n_columns + column
        order = np.argsort(key, kind="stable")  # a repeated fact's listings stay in file order
        key = key[order]
        first = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]])) if len(key) else key
        stop = np.append(first[1:], len(key))
        q = not_held[order][first]
        for g in np.flatnonzero(stop - first > 1):  # listed more than once: rare
            product = 1.0
            for factor in not_held[order[first[g]:stop[g]]].tolist():
                product *= factor
            q[g] = product
        held = q < 1
        row = order[first][held]
        subject_of = owner[row]
        return BinaryFacts(subject_of // self._n, subject_of % self._n, target[row], column[row], 1 - q[held],
                           n_columns)

    # ------------------------------------------------------------------ the oracle protocol
    @property
    def num_objects(self) -> torch.Tensor:
        """``(B,)``: objects of each scene, plus its scene pseudo-object."""
        return self._num_objects

    def object_ids(self, scene: int) -> tuple[str, ...]:
        """Ids of scene ``scene``'s objects in column order; the last is :data:`SCENE_OBJECT_ID`."""
        return self.graphs[scene].object_ids + (SCENE_OBJECT_ID,)

    def knows(self, predicate: Predicate) -> bool:
        return self._resolve(predicate) is not None

    def unary(self, requests: Requests) -> torch.Tensor:
        """``(R, N)`` log-probabilities (see the module docstring)."""
        # columns as every oracle over the vocabulary finds them, bounded to this batch's
        cols = list(map(self.columns.unary_columns.get, requests.predicates))
        if None in cols:
            cols = [self._require(p, 1)[1] if c is None else c for c, p in zip(cols, requests.predicates)]
        cols = np.array(cols, dtype=np.int64)
        cols[cols >= self._n_unary] = ABSENT
        scene = checked_scenes(requests, len(self.graphs), "SceneGraphOracle")
        pred = int64_numpy(requests.predicate)
        wanted = cols[pred] if len(pred) else pred
        absent, every = wanted == ABSENT, wanted == EVERY_OBJECT
        log_probs = self._unary_facts.gather(scene, np.where(absent | every, 0, wanted), self._n,
                                             dtype=torch.get_default_dtype(), log=True)
        if absent.any():
            log_probs[torch.from_numpy(absent)] = float("-inf")
        if every.any():
            rows = torch.from_numpy(every)
            real = self._real[torch.from_numpy(scene[every])]
            log_probs[rows] = torch.zeros(real.shape, dtype=log_probs.dtype).masked_fill_(~real, float("-inf"))
        return log_probs.to(self.device)

    def binary(self, requests: Requests) -> torch.Tensor:
        """``(R, N, N)`` log-probabilities (see the module docstring)."""
        resolved = [self._require(p, 2) for p in requests.predicates]
        scene = checked_scenes(requests, len(self.graphs), "SceneGraphOracle")
        pred = int64_numpy(requests.predicate)
        dtype = torch.get_default_dtype()
        out = torch.full((len(scene), self._n, self._n), float("-inf"), dtype=dtype)
        groups: dict[tuple[str, Any], int] = {}  # one computation per group: every relation, each rule
        group_of = np.array([groups.setdefault((kind, target if kind != "rel" else None), len(groups))
                             for kind, target in resolved], dtype=np.int64)
        group = group_of[pred] if len(pred) else pred
        by_group = np.argsort(group, kind="stable")  # each group's rows in ascending order
        bounds = np.searchsorted(group[by_group], np.arange(len(groups) + 1))
        for (kind, target), g in groups.items():
            rows = by_group[bounds[g]:bounds[g + 1]]
            if not len(rows):
                continue
            if kind == "rel":
                cols = np.array([c if k == "rel" else 0 for k, c in resolved], dtype=np.int64)
                wanted = cols[pred[rows]]
                present = wanted != ABSENT  # an absent relation's rows stay -inf
                self._relation_facts.gather(scene[rows[present]], wanted[present], self._n, log=True, out=out,
                                            at=rows[present])
                continue
            elif kind == "compare" and target in geometry.RULES:
                table = torch.where(self._geometric(target, scene[rows]), 0.0, float("-inf")).to(dtype)
            else:
                probs = self._same(target, scene[rows]) if kind == "same" else self._by_traits(target, scene[rows])
                table = safe_log(probs.to(dtype))
            out[torch.from_numpy(rows)] = table
        return out.to(self.device)

    # ------------------------------------------------------------------ binary kinds
    def _pair_mask(self, scene: np.ndarray) -> torch.Tensor:
        real = self._real[torch.from_numpy(scene)]
        if self._distinct is None:
            self._distinct = ~torch.eye(self._n, dtype=torch.bool)
        return real[:, :, None] & real[:, None, :] & self._distinct

    def _geometric(self, name: str, scene: np.ndarray) -> torch.Tensor:
        """``(R, N, N)`` bool: the box rule between the real objects of each scene."""
        idx = torch.from_numpy(scene)
        box, image = self._boxes[idx], self._images[idx]
        holds = geometry.RULES[name].function(box[:, :, None, :], box[:, None, :, :], image[:, None, None, :])
        return holds & self._pair_mask(scene)

    def _by_traits(self, name: str, scene: np.ndarray) -> torch.Tensor:
        """``(R, N, N)`` probabilities of an age or health comparative."""
        values = torch.from_numpy(self._traits)[torch.from_numpy(scene)]  # (R, N, T)
        x = {t: values[:, :, None, k] for k, t in enumerate(traits.TRAITS)}
        y = {t: values[:, None, :, k] for k, t in enumerate(traits.TRAITS)}
        return traits.RULES[name].function(x, y) * self._pair_mask(scene)

    def _same(self, type_name: str, scene: np.ndarray) -> torch.Tensor:
        value_cols = self.columns.same_columns(type_name)
        value_cols = value_cols[value_cols < self._n_unary]  # values no graph of the batch holds
        v, n = len(value_cols), self._n
        out = torch.zeros((len(scene), n, n), dtype=torch.float64)
        step = max(1, _SAME_CHUNK // max(1, v * n * n))
        for lo in range(0, len(scene), step):  # chunks bound memory, not a loop over requests
            chunk = scene[lo:lo + step]
            probs = self._unary_facts.gather(np.repeat(chunk, v), np.tile(value_cols, len(chunk)), n)
            probs = probs.view(len(chunk), v, n)
            shared = probs[:, :, :, None] * probs[:, :, None, :]  # (rows, V, N, N)
            out[lo:lo + step] = -torch.expm1(torch.log1p(-shared).sum(dim=1))
        return out * self._pair_mask(scene)

    # ------------------------------------------------------------------ predicates
    def _resolve(self, predicate: Predicate) -> tuple[str, int | str] | None:
        """``(kind, column)`` for unary and ``rel``, ``(kind, name)`` for compare/same; None if unknown."""
        try:
            return self._predicate_cache[predicate]
        except KeyError:
            pass
        found = self.columns.resolved.get(predicate)
        if found is None:
            found, lasting = self._look_up(predicate)
            if lasting:
                self.columns.resolved[predicate] = found
                if predicate.arity == 1:
                    self.columns.unary_columns[predicate] = found[1]
        if found is not None and found[0] in ("rel",) + _OPEN_KINDS and found[1] >= self._n_columns(found[0]):
            found = (found[0], ABSENT)  # a column added after this batch was read: none of its graphs holds it
        self._predicate_cache[predicate] = found
        return found

    def _n_columns(self, kind: str) -> int:
        return self._n_relations if kind == "rel" else self._n_unary

    def _look_up(self, predicate: Predicate) -> tuple[tuple[str, int | str] | None, bool]:
        """``(found, lasting)``: the predicate in the vocabulary as it is now (before the batch's
        bound is applied), and whether every later look-up finds the same."""
        kind, name, columns = predicate.kind, predicate.name, self.columns
        if kind == "":  # a plain name: the one kind that holds it (never kept: the vocabulary may grow)
            matches = self._plain_matches(predicate)
            return (matches[0][1] if len(matches) == 1 else None), False
        if predicate.arity == 1 and kind == "name" and name in OBJECT_PRONOUNS:
            return (kind, EVERY_OBJECT), True
        if predicate.arity == 1 and kind in UNARY_KINDS:  # an open kind's name absent from the batch is false
            key = _PRONOUN_COLUMN.get(name, name) if kind == "name" else name
            col = columns.unary.get((kind, key))
            if col is not None:
                return (kind, col), True
            col = columns.find(kind, key)
            if col is None:
                return ((kind, ABSENT) if kind in _OPEN_KINDS else None), False
            return (kind, col), False
        if predicate.arity == 2 and kind == "rel":
            col = columns.relations.get(name.strip())
            if col is not None:
                return (kind, col), True
            col = columns.find_relation(name)
            return (kind, ABSENT if col is None else col), False
        if predicate.arity == 2 and kind == "compare" and name in COMPARATIVES:
            return (kind, name), True
        if predicate.arity == 2 and kind == "same" and (name in _GEOMETRY_TYPES or self.ontology.has_type(name)):
            return (kind, name if name in _GEOMETRY_TYPES else self.ontology.type_name(name)), True
        return None, False

    def _require(self, predicate: Predicate, arity: int):
        found = self._resolve(predicate) if predicate.arity == arity else None
        if found is None:
            raise UnknownPredicateError(f"SceneGraphOracle: unknown predicate {predicate.name!r} "
                                        f"(kind {predicate.kind!r}, arity {predicate.arity}): {self._why(predicate)}")
        return found

    def _plain_matches(self, predicate: Predicate) -> list:
        """``[(kind, found), ...]``: the kinds whose vocabulary holds a plain predicate's name (of its
        arity; ``class`` is left out, as every class is also a ``name``)."""
        kinds = _PLAIN_UNARY_KINDS if predicate.arity == 1 else BINARY_KINDS if predicate.arity == 2 else ()
        found = [(kind, self._look_up(Predicate(predicate.name, predicate.arity, kind))[0]) for kind in kinds]
        return [(kind, f) for kind, f in found if f is not None and f[1] != ABSENT]

    def _why(self, predicate: Predicate) -> str:
        if predicate.kind == "":
            matches = [kind for kind, _ in self._plain_matches(predicate)]
            if len(matches) > 1:
                return (f"ambiguous: the vocabulary holds it as {' and as '.join(matches)}; use "
                        + " or ".join(f"Predicate({predicate.name!r}, arity={predicate.arity}, kind={k!r})"
                                      for k in matches))
        return refusal(predicate, "the scene-graph oracle")

    def __repr__(self) -> str:
        return f"SceneGraphOracle({len(self.graphs)} scenes, up to {self._n} objects)"


def int64_numpy(t: torch.Tensor) -> np.ndarray:
    """An index tensor as an int64 numpy array (on the CPU, not copied when already one)."""
    return t.detach().cpu().numpy().astype(np.int64, copy=False)


def checked_scenes(requests: Requests, n_scenes: int, who: str) -> np.ndarray:
    """The requests' scene indices as numpy, checked against the oracle's batch."""
    scene = int64_numpy(requests.scene)
    if scene.size and (scene.min() < 0 or scene.max() >= n_scenes):
        bad = int(scene.min() if scene.min() < 0 else scene.max())
        raise ShapeError(f"{who}: scene index {bad} out of range for a batch of {n_scenes} scenes")
    return scene


def _scene_pairs(graph) -> list[tuple[str, float]]:
    """The ``(value, p)`` pairs the scene pseudo-object carries, field by field (a string: p = 1)."""
    pairs: list[tuple[str, float]] = []
    for field in SCENE_FIELDS:
        value = getattr(graph, field, None) if field in ("location", "weather") else None
        if value is None:
            value = graph.extra.get(field)
        if value is None:
            continue
        if isinstance(value, str):
            pairs.append((value, 1.0))
        elif isinstance(value, Mapping) and all(isinstance(k, str) and _is_probability(v) for k, v in value.items()):
            pairs.extend((k, float(v)) for k, v in value.items())
        else:
            raise OracleError(f"scene graph of image {graph.image_id}: {field!r} must be a string or "
                              f"{{value: probability}}, got {value!r:.60}")
    return pairs


def _entries(maps: list, owners: np.ndarray) -> tuple[list, np.ndarray, np.ndarray]:
    """``{raw: p}`` of each owner, flattened: ``(raws, probabilities, owner of each)`` in order."""
    raws = list(chain.from_iterable(maps))
    probs = _probabilities(np.fromiter(chain.from_iterable(map(_values_of, maps)), dtype=np.float64, count=len(raws)),
                           raws)
    return raws, probs, np.repeat(owners, np.fromiter(map(len, maps), dtype=np.int64, count=len(maps)))


def _probabilities(probs: np.ndarray, raws) -> np.ndarray:
    """``probs``, once every one is a probability; else the first that is not is named. The file
    reader refuses such values; a graph built in memory reaches the oracle unchecked (a NaN name
    read as certain, or dropped, would be a silent wrong answer)."""
    bad = ~((probs >= 0.0) & (probs <= 1.0))  # NaN fails both
    if bad.any():
        k = int(np.argmax(bad))
        raise ProbabilityError(f"scene graph oracle: {raws[k]!r} has probability {float(probs[k])!r}, not in [0, 1]")
    return probs


def _per_column(owner: np.ndarray, columns: list, factor: np.ndarray, n_columns: int, combine, start: float):
    """``(keys, values)``: for every distinct ``owner * n_columns + column``, ``start`` combined
    (``combine``: ``np.add`` or ``np.multiply``) with the ``factor`` of each entry whose
    columns hold it, one entry after the other in the order given (``ufunc.at`` is unbuffered
    and goes in index order: the same floating-point sums and products as a loop)."""
    lengths = np.fromiter(map(len, columns), dtype=np.int64, count=len(columns))
    column = np.fromiter(chain.from_iterable(columns), dtype=np.int64, count=int(lengths.sum()))
    key = np.repeat(owner * n_columns, lengths) + column
    keys, which = np.unique(key, return_inverse=True)
    values = np.full(len(keys), start)
    combine.at(values, which.reshape(-1), np.repeat(factor, lengths))
    return keys, values


def _is_probability(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0
