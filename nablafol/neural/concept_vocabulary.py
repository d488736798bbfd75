"""The concept vocabulary of the neural oracle: which embedding row answers which predicate.

Every predicate of the contract in ``docs/compiling-gqa.md`` that the compiler can emit for an
ontology gets a row, unary and binary predicates in two separate tables:

| table | kind | rows |
| --- | --- | --- |
| unary | ``name`` | every class (uncategorized ones included), every category and pronoun of the ontology |
| unary | ``class`` | every **category**; a class with nothing under it reads its ``name`` row |
| unary | ``attr`` | every attribute value (object values, untyped values and the scene's location, weather, place, room) |
| unary | ``hposition`` / ``vposition`` | ``left middle right`` / ``top middle bottom`` |
| unary | ``scene`` | ``scene`` (its answer is fixed, see :mod:`nablafol.neural.model`) |
| binary | ``rel`` | every relation of the ontology |
| binary | ``compare`` | the comparatives (``larger`` ... ``less healthy``) |
| binary | ``same`` | every attribute type, plus ``hposition`` and ``vposition`` |

Why ``class`` shares rows: for a class C with no category of that name, ``class C`` and
``name C`` are true of exactly the same objects (objects labelled C), so one embedding
serves both and the two can never disagree. A category (``food``, also a class) keeps its
own ``class`` row: ``name food`` holds of any food, ``class food`` only of objects
labelled exactly ``food``.

The vocabulary grows from the data: a model trained on a dataset is built from the ontology
widened by what the dataset names (``dsl.Ontology.joined`` with
``nablafol.compiler.vocabulary.known_values``), and its model folder records both. A
predicate the vocabulary has no row for is a concept the model never learned: asked about one,
an evaluation lists the question as skipped with :meth:`ConceptVocabulary.not_learned`'s line,
never a crash and never a silent 0.

Rows are sorted by ``(kind, name)``, so a vocabulary built twice from the same ontology is
identical, and it round-trips through JSON (:meth:`ConceptVocabulary.to_dict`). Names are
looked up as given, then in their vocabulary form (the ontology's ``normalize``, replayed
from the vocabulary's own words and raw-form aliases so that a vocabulary read back from a
model folder resolves exactly as the ontology did):

    >>> from nablafol.dsl import Ontology
    >>> from nablafol.ir import Predicate
    >>> vocabulary = ConceptVocabulary.from_ontology(Ontology.gqa())
    >>> vocabulary.index(Predicate("chair", kind="class")) == vocabulary.index(Predicate("chairs", kind="name"))
    True
    >>> vocabulary.index(Predicate("food", kind="class")) == vocabulary.index(Predicate("food", kind="name"))
    False
    >>> vocabulary.knows(Predicate("on", arity=2, kind="rel")), vocabulary.knows(Predicate("on", kind="rel"))
    (True, False)
    >>> vocabulary.not_learned(Predicate("unicorn", kind="name"))
    "concept not learned: name 'unicorn'"
    >>> grown = ConceptVocabulary.from_ontology(Ontology.gqa().joined({"name": ["unicorn"]}))
    >>> grown.knows(Predicate("unicorn", kind="name")), grown.num_unary - vocabulary.num_unary
    (True, 1)
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Iterable, Mapping, Sequence

import numpy as np

from nablafol.dsl.inflection import singular_candidates
from nablafol.errors import UnknownPredicateError
from nablafol.ir import Predicate
from nablafol.graph_oracles.contract import BINARY_KINDS as _BINARY_KINDS
from nablafol.graph_oracles.contract import UNARY_KINDS as _UNARY_KINDS
from nablafol.graph_oracles.contract import refusal
from nablafol.graph_oracles.geometry import POSITIONS
from nablafol.graph_oracles.scene_graph import COMPARATIVES, SCENE_FIELDS

from .errors import NeuralOracleError

__all__ = ["ConceptVocabulary", "UNARY_KINDS", "BINARY_KINDS", "SCENE_CONCEPT"]

UNARY_KINDS = tuple(sorted(_UNARY_KINDS))  # stable order of the vocabulary's rows
BINARY_KINDS = tuple(sorted(_BINARY_KINDS))
SCENE_CONCEPT = ("scene", "scene")  # the predicate of `select: scene`
_POSITION_TYPES = ("hposition", "vposition")
_FORMAT = "nablafol-concepts"
_LEARNED_KINDS = ("name", "class", "attr", "rel")  # open kinds: any word may be one, once learned

Concept = tuple[str, str]  # (kind, name)


class ConceptVocabulary:
    """Predicates -> embedding rows (see the module docstring).

    ``unary`` / ``binary``: the ``(kind, name)`` concepts that get a row (sorted here);
    ``scene_level``: the unary concepts the scene pseudo-object may carry (``scene`` is
    always one); ``aliases``: raw GQA spellings -> vocabulary forms (``tennis`` -> ``tenni``).
    """

    def __init__(self, unary: Iterable[Concept], binary: Iterable[Concept],
                 scene_level: Iterable[Concept] = (), aliases: Mapping[str, str] | None = None):
        self.unary: tuple[Concept, ...] = _sorted_concepts(unary, UNARY_KINDS, "unary")
        self.binary: tuple[Concept, ...] = _sorted_concepts(binary, BINARY_KINDS, "binary")
        self._unary_index = {c: i for i, c in enumerate(self.unary)}
        self._binary_index = {c: i for i, c in enumerate(self.binary)}
        if SCENE_CONCEPT not in self._unary_index:
            raise NeuralOracleError("concept vocabulary: the unary concept ('scene', 'scene') is missing "
                                    "(the scene pseudo-object is what `select: scene` finds)")
        scene_level = set(_sorted_concepts(scene_level, UNARY_KINDS, "scene-level")) | {SCENE_CONCEPT}
        stray = sorted(scene_level - set(self.unary))
        if stray:
            raise NeuralOracleError(f"concept vocabulary: scene-level concept {list(stray[0])} is not a unary concept")
        self.scene_level: frozenset[Concept] = frozenset(scene_level)
        self.aliases: Mapping[str, str] = MappingProxyType(dict(aliases or {}))
        # what the ontology's `normalize` checks candidates against: names, values, relations, types
        self._words = frozenset(n for k, n in self.unary if k in ("name", "attr")) | frozenset(
            n for k, n in self.binary if k in ("rel", "same"))
        self._same_types = {n.casefold(): n for k, n in self.binary if k == "same"}
        self._rows: dict[Predicate, int | None] = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_ontology(cls, ontology) -> "ConceptVocabulary":
        """Every predicate the compiler can emit for ``ontology`` (a :class:`dsl.Ontology`)."""
        names = ontology.classes | set(ontology.categories)
        values = set().union(*ontology.attribute_types.values()) if ontology.attribute_types else set()
        values |= getattr(ontology, "untyped", frozenset())
        pronouns = getattr(ontology, "pronouns", frozenset())
        unary = [("name", n) for n in names | pronouns] + [("class", c) for c in ontology.categories]
        unary += [("attr", v) for v in values] + [SCENE_CONCEPT]
        for kind in _POSITION_TYPES:  # the contract's thirds, and any the ontology adds
            extra = ontology.values_of(kind) if ontology.has_type(kind) else ()
            unary += [(kind, v) for v in set(POSITIONS[kind]) | set(extra)]
        binary = [("rel", r) for r in ontology.relations] + [("compare", c) for c in COMPARATIVES]
        binary += [("same", t) for t in set(ontology.attribute_types) | set(_POSITION_TYPES)]
        scene_types = set(ontology.scene_types) | {ontology.type_name(t) for t in SCENE_FIELDS if ontology.has_type(t)}
        scene_level = [("attr", v) for t in scene_types for v in ontology.values_of(t)]
        words = names | values | set(ontology.relations) | set(ontology.attribute_types)
        aliases = {ontology.raw_form(w): w for w in words if ontology.raw_form(w) != w}
        return cls(unary, binary, scene_level, aliases)

    def to_dict(self) -> dict:
        """A JSON-ready description; :meth:`from_dict` rebuilds an equal vocabulary."""
        return {"format": _FORMAT, "unary": [list(c) for c in self.unary], "binary": [list(c) for c in self.binary],
                "scene_level": sorted(list(c) for c in self.scene_level), "aliases": dict(sorted(self.aliases.items()))}

    @classmethod
    def from_dict(cls, data: Mapping) -> "ConceptVocabulary":
        if not isinstance(data, Mapping) or data.get("format") != _FORMAT:
            raise NeuralOracleError(f"concept vocabulary: expected an object with \"format\": \"{_FORMAT}\"")
        for key in ("unary", "binary", "scene_level"):
            if not isinstance(data.get(key), list):
                raise NeuralOracleError(f"concept vocabulary: {key!r} must be a list of [kind, name] pairs")
        aliases = data.get("aliases", {})
        if not isinstance(aliases, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                       for k, v in aliases.items()):
            raise NeuralOracleError("concept vocabulary: 'aliases' must map strings to strings")
        return cls(data["unary"], data["binary"], data["scene_level"], aliases)

    # ------------------------------------------------------------------ sizes and masks
    @property
    def num_unary(self) -> int:
        return len(self.unary)

    @property
    def num_binary(self) -> int:
        return len(self.binary)

    @property
    def scene_row(self) -> int:
        """The unary row of ``scene``."""
        return self._unary_index[SCENE_CONCEPT]

    def scene_level_mask(self) -> np.ndarray:
        """``(num_unary,)`` bool: the rows the scene pseudo-object may carry."""
        mask = np.zeros(self.num_unary, dtype=bool)
        mask[[self._unary_index[c] for c in self.scene_level]] = True
        return mask

    # ------------------------------------------------------------------ look-up
    def knows(self, predicate: Predicate) -> bool:
        return self._row(predicate) is not None

    def index(self, predicate: Predicate) -> int:
        """The row of ``predicate`` in the table of its arity; :class:`UnknownPredicateError` if none."""
        row = self._row(predicate)
        if row is None:
            raise UnknownPredicateError(f"neural oracle: unknown predicate {predicate.name!r} (kind "
                                        f"{predicate.kind!r}, arity {predicate.arity}): {self._why(predicate)}")
        return row

    def rows(self, predicates: Sequence[Predicate]) -> np.ndarray:
        """``(len(predicates),)`` int64 rows, one per predicate (each resolved once, then cached)."""
        return np.fromiter((self.index(p) for p in predicates), dtype=np.int64, count=len(predicates))

    def normalize(self, raw: str) -> str:
        """The vocabulary form of a raw GQA string, as ``dsl.Ontology.normalize`` gives it."""
        text = raw.strip()
        if text in self._words:
            return text
        if text in self.aliases:
            return self.aliases[text]
        for candidate in singular_candidates(text):
            if candidate in self._words:
                return candidate
            if candidate in self.aliases:
                return self.aliases[candidate]
        return text

    def _row(self, predicate: Predicate) -> int | None:
        try:
            return self._rows[predicate]
        except KeyError:
            pass
        if not isinstance(predicate, Predicate):
            raise TypeError(f"expected a nablafol.ir.Predicate, got {type(predicate).__name__} {predicate!r:.60}")
        kind, name, row = predicate.kind, predicate.name, None
        if predicate.arity == 1 and kind in UNARY_KINDS:
            for key in dict.fromkeys((name, self.normalize(name))):
                row = self._unary_index.get((kind, key))
                if row is None and kind == "class":  # a class with nothing under it: its name row
                    row = self._unary_index.get(("name", key))
                if row is not None:
                    break
        elif predicate.arity == 2 and kind == "rel":
            for key in dict.fromkeys((name, self.normalize(name))):
                row = self._binary_index.get((kind, key))
                if row is not None:
                    break
        elif predicate.arity == 2 and kind == "compare":
            row = self._binary_index.get((kind, name))
        elif predicate.arity == 2 and kind == "same":
            type_name = self._same_types.get(name.strip().casefold())
            row = None if type_name is None else self._binary_index[(kind, type_name)]
        self._rows[predicate] = row
        return row

    def not_learned(self, predicate: Predicate) -> str:
        """The line a question gets when it asks about ``predicate`` and the model has no row for
        it (a concept its training data never named, or a malformed one)."""
        if _learnable(predicate):
            return f"concept not learned: {predicate.kind} {predicate.name!r}"
        return f"concept not learned: {predicate.name!r} ({self._why(predicate)})"

    def _why(self, predicate: Predicate) -> str:
        if _learnable(predicate):
            return "a concept this model never learned"
        return refusal(predicate, "the neural oracle")

    # ------------------------------------------------------------------ identity
    def __eq__(self, other) -> bool:
        if not isinstance(other, ConceptVocabulary):
            return NotImplemented
        return (self.unary, self.binary, self.scene_level, dict(self.aliases)) == (
            other.unary, other.binary, other.scene_level, dict(other.aliases))

    __hash__ = None  # mutable cache inside; compared by content

    def __repr__(self) -> str:
        return f"ConceptVocabulary({self.num_unary} unary, {self.num_binary} binary concepts)"


def _learnable(predicate: Predicate) -> bool:
    """A name, class, value or relation of the right arity: any word may be one, once learned."""
    return predicate.kind in _LEARNED_KINDS and predicate.arity == (1 if predicate.kind in _UNARY_KINDS else 2)


def _sorted_concepts(concepts: Iterable, kinds: tuple[str, ...], what: str) -> tuple[Concept, ...]:
    """Validated ``(kind, name)`` pairs, deduplicated and sorted."""
    out = set()
    for item in concepts:
        if (not isinstance(item, (tuple, list)) or len(item) != 2
                or not all(isinstance(x, str) and x for x in item)):
            raise NeuralOracleError(f"concept vocabulary: {what} concept {item!r:.60} is not a [kind, name] "
                                    f"pair of non-empty strings")
        if item[0] not in kinds:
            raise NeuralOracleError(f"concept vocabulary: {what} concept {list(item)!r:.60} has kind "
                                    f"{item[0]!r}; {what} kinds are {', '.join(kinds)}")
        out.add((item[0], item[1]))
    return tuple(sorted(out))
