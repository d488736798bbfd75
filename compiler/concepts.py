"""GQA concepts -> DFOL predicates, following the predicate contract of docs/design.md.

One :class:`Concepts` per ontology turns raw GQA strings into interned
:class:`nablafol.ir.Predicate` objects (normalizing surface forms first) and lists the
plausible answers of open questions:

    >>> from nablafol.dsl import Ontology
    >>> c = Concepts(Ontology.gqa())
    >>> c.name("plates"), c.value("white", "color"), c.relation("to the left of")
    (Predicate(name='plate', arity=1, kind='name'), Predicate(name='white', arity=1, kind='attr'), \
Predicate(name='to the left of', arity=2, kind='rel'))
    >>> c.relation("bigger than")
    Predicate(name='larger', arity=2, kind='compare')
"""
from __future__ import annotations

from nablafol.caching import bounded_cache, memo


from nablafol.dsl import Ontology

from nablafol.ir import Predicate

from .errors import CompileError

POSITION_TYPES = frozenset({"hposition", "vposition"})
# GQA relations that are comparisons or attribute matches, not facts a scene graph stores
COMPARATIVE_RELATIONS = {
    "larger than": "larger", "bigger than": "larger", "smaller than": "smaller", "taller than": "taller",
    "shorter than": "shorter", "higher than": "higher", "lower than": "lower", "longer than": "longer",
    "older than": "older", "younger than": "younger", "healthier than": "healthier",
}
SAME_RELATIONS = {"same color": "color", "same material": "material", "same shape": "shape"}
SCENE = Predicate("scene", 1, "scene")


class Concepts:
    """Resolves GQA's raw strings against one ontology (pure; results are cached).

    ``knowledge_relations`` (e.g. CRIC's ``CapableOf``, ``UsedFor``) extend the language the
    way CRIC's programs do: ``filter CapableOf: lift food`` is the knowledge predicate
    ``Predicate("CapableOf:lift food", 1, "kg")`` (true of objects whose class has that fact).
    """

    def __init__(self, ontology: Ontology, knowledge_relations=()):
        self.ontology = ontology
        self.knowledge_relations = frozenset(knowledge_relations)
        self.pred = bounded_cache(Predicate, 1 << 16)  # interned: equal predicates are (mostly) one object
        self._candidates = bounded_cache(self._candidates_uncached, 4096)
        excluded = POSITION_TYPES | set(ontology.scene_types)
        # what `common` compares (a type without values could never be shared: left out)
        self.common_types = tuple(sorted(t for t in ontology.attribute_types
                                         if t not in excluded and ontology.values_of(t)))

    # -- single concepts ------------------------------------------------------------------
    def name(self, raw: str) -> Predicate:
        form = self.ontology.lookup(raw, "name")
        if form is None:
            raise CompileError(f"unknown name {raw!r}: not a class or category of the vocabulary",
                               reason="unknown concept")
        return self.pred(form, 1, "name")

    def name_form(self, raw: str) -> str:
        return self.name(raw).name

    def type(self, raw: str) -> str:
        if raw in POSITION_TYPES or raw == "name":
            return raw
        t = self.ontology.lookup(raw, "type")
        if t is None:
            raise CompileError(f"unknown attribute type {raw!r}", reason="unknown concept")
        return t

    def value(self, raw: str, type_: str | None) -> Predicate:
        """The predicate of ``filter/verify/choose [TYPE]: VALUE``."""
        if type_ is not None and type_ in self.knowledge_relations:
            return self.pred(f"{type_}:{raw.strip()}", 1, "kg")
        if type_ is not None:
            t = self.type(type_)
            if t == "name":
                return self.name(raw)
            if t in POSITION_TYPES:
                if raw not in self.ontology.values_of(t):
                    raise CompileError(f"{raw!r} is not a {t} value ({', '.join(sorted(self.ontology.values_of(t)))})",
                                       reason="wrong type")
                return self.pred(raw, 1, t)
            form = self.ontology.normalize(raw)
            if not self.ontology.is_attribute_value(form, t):
                if self.ontology.is_attribute_value(form):
                    raise CompileError(f"{raw!r} is not a {t} value", reason="wrong type")
                raise CompileError(f"unknown {t} value {raw!r}: not in the vocabulary", reason="unknown concept")
            return self.pred(form, 1, "attr")
        form = self.ontology.normalize(raw)
        if self.ontology.is_attribute_value(form):
            return self.pred(form, 1, "attr")
        if self.ontology.is_name(form):
            return self.pred(form, 1, "name")
        raise CompileError(f"unknown value {raw!r}: not an attribute value or a name of the vocabulary",
                           reason="unknown concept")

    def relation(self, raw: str) -> Predicate:
        text = raw.strip()
        if text in COMPARATIVE_RELATIONS:
            return self.pred(COMPARATIVE_RELATIONS[text], 2, "compare")
        if text in SAME_RELATIONS:
            return self.pred(SAME_RELATIONS[text], 2, "same")
        form = self.ontology.lookup(text, "relation")
        if form is None:
            raise CompileError(f"unknown relation {raw!r}: not in the vocabulary", reason="unknown concept")
        return self.pred(form, 2, "rel")

    def comparative(self, comp: str) -> Predicate:
        return self.pred(comp, 2, "compare")

    # -- plausible answers -----------------------------------------------------------------
    def candidates(self, type_: str, source: str | None = None) -> tuple[tuple[Predicate, ...], tuple[str, ...]]:
        """Predicates and answer labels (GQA raw forms) of ``query TYPE``.

        ``query name`` competes the classes under the name that selected the objects
        (``source``; all classes when they came from ``_``), as exact-class predicates, so
        the most specific class wins.
        """
        return self._candidates(type_, source)

    @property
    def common_values(self) -> tuple[tuple[Predicate, ...], tuple[int, ...]]:
        """The values of every :attr:`common_types` type, one type after the other, and how
        many each type has (one tuple, the same object every time: nodes share it)."""
        return memo(self, "_common_values", self._common_values)

    def _common_values(self) -> tuple[tuple[Predicate, ...], tuple[int, ...]]:
        per_type = [self.candidates(t)[0] for t in self.common_types]
        return tuple(p for preds in per_type for p in preds), tuple(len(preds) for preds in per_type)

    def _candidates_uncached(self, type_: str, source: str | None):
        t = self.type(type_)
        if t == "name":
            classes = sorted(self.ontology.classes_under(source) if source else self.ontology.classes)
            preds = tuple(self.pred(c, 1, "class") for c in classes)
            return preds, self._labels(classes)
        values = sorted(self.ontology.values_of(t))
        kind = t if t in POSITION_TYPES else "attr"
        return tuple(self.pred(v, 1, kind) for v in values), self._labels(values)

    def _labels(self, forms) -> tuple[str, ...]:
        labels = tuple(self.ontology.raw_form(f) for f in forms)
        if len(set(labels)) != len(labels):  # two forms with one raw spelling: keep forms apart
            labels = tuple(forms)
        return labels
