"""GQA concepts -> DFOL predicates, following the predicate contract of docs/compiling-gqa.md.

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

The vocabulary is open (docs/compiling-gqa.md, "An open vocabulary"): a name, value or relation the
ontology lacks is a predicate of its own, in its normalized form. A typed value is an
attribute value of its type; an untyped one (`filter: baby`) is read as an attribute value
when the vocabulary knows it as one (or knows it nowhere), else as a name:

    >>> c.name("unicorn"), c.value("granite", "material"), c.value("baby", None), c.value("chair", None)
    (Predicate(name='unicorn', arity=1, kind='name'), Predicate(name='granite', arity=1, kind='attr'), Predicate(name='baby', arity=1, kind='attr'), Predicate(name='chair', arity=1, kind='name'))
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
# Types GQA writes for the name of the objects: `same: type` ("Are all the animals the same type?")
NAME_TYPES = frozenset({"name", "type"})
SCENE = Predicate("scene", 1, "scene")


def is_knowledge_type(step_type: str | None) -> bool:
    """Whether a step's type is written as a knowledge relation (`filter CapableOf: lift food`):
    CamelCase, which no attribute type GQA writes is but `sportActivity`.

        >>> is_knowledge_type("CapableOf"), is_knowledge_type("sportActivity"), is_knowledge_type("color")
        (True, False, False)
    """
    return (step_type is not None and step_type[1:] != step_type[1:].lower()
            and step_type.casefold() != "sportactivity")


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
        # a program's words repeat across programs: each raw word is resolved once
        self._names = bounded_cache(self._name_uncached, 1 << 16)
        self._values = bounded_cache(self._value_uncached, 1 << 16)
        self._relations = bounded_cache(self._relation_uncached, 1 << 14)
        excluded = POSITION_TYPES | set(ontology.scene_types)
        # what `common` compares (a type without values could never be shared: left out)
        self.common_types = tuple(sorted(t for t in ontology.attribute_types
                                         if t not in excluded and ontology.values_of(t)))

    # -- single concepts ------------------------------------------------------------------
    def name(self, raw: str) -> Predicate:
        """A class, category or pronoun of the vocabulary; any other name is a class of its own."""
        return self._names(raw)

    def _name_uncached(self, raw: str) -> Predicate:
        return self.pred(self._open_form(raw, "name"), 1, "name")

    def _open_form(self, raw: str, what: str) -> str:
        form = self.ontology.normalize(raw)
        if not form:
            raise CompileError(f"empty {what}", reason="unsupported")
        return form

    def name_form(self, raw: str) -> str:
        return self.name(raw).name

    def type(self, raw: str) -> str:
        """The vocabulary's spelling of an attribute type (`type` is the name); a type the
        vocabulary lacks is taken as written (its values are what steps give it)."""
        if raw in POSITION_TYPES or raw in NAME_TYPES:
            return "name" if raw in NAME_TYPES else raw
        t = self.ontology.lookup(raw, "type")
        return raw.strip() if t is None else t

    def value(self, raw: str, type_: str | None) -> Predicate:
        """The predicate of ``filter/verify/choose [TYPE]: VALUE``."""
        return self._values(raw, type_)

    def _value_uncached(self, raw: str, type_: str | None) -> Predicate:
        if type_ is not None and type_ in self.knowledge_relations:
            return self.pred(f"{type_}:{raw.strip()}", 1, "kg")
        if type_ is not None and not self.ontology.has_type(type_) and is_knowledge_type(type_):
            raise CompileError(f"{type_!r} is a knowledge relation: give a knowledge base (--knowledge)",
                               reason="unknown concept")
        if type_ is not None:
            t = self.type(type_)
            if t == "name":
                return self.name(raw)
            if t in POSITION_TYPES:
                if raw not in self.ontology.values_of(t):
                    raise CompileError(f"{raw!r} is not a {t} value ({', '.join(sorted(self.ontology.values_of(t)))})",
                                       reason="wrong type")
                return self.pred(raw, 1, t)
            # a typed value is a value of its type, listed there or not (it joins the type)
            return self.pred(self._open_form(raw, f"{t} value"), 1, "attr")
        # untyped: an attribute value, unless only a name of the vocabulary has that form
        form = self._open_form(raw, "value")
        if not self.ontology.is_attribute_value(form) and self.ontology.is_name(form):
            return self.pred(form, 1, "name")
        return self.pred(form, 1, "attr")

    def relation(self, raw: str) -> Predicate:
        """The predicate of a relate's relation (a comparison or attribute match has its own kind)."""
        return self._relations(raw)

    def _relation_uncached(self, raw: str) -> Predicate:
        text = raw.strip()
        if text in COMPARATIVE_RELATIONS:
            return self.pred(COMPARATIVE_RELATIONS[text], 2, "compare")
        if text in SAME_RELATIONS:
            return self.pred(SAME_RELATIONS[text], 2, "same")
        form = self.ontology.lookup(text, "relation")
        return self.pred(form if form is not None else self._open_form(text, "relation"), 2, "rel")

    def comparative(self, comp: str) -> Predicate:
        return self.pred(comp, 2, "compare")

    # -- plausible answers -----------------------------------------------------------------
    def candidates(self, type_: str, source: str | None = None) -> tuple[tuple[Predicate, ...], tuple[str, ...]]:
        """Predicates and answer labels (GQA raw forms) of ``query TYPE``.

        ``query name`` competes the classes under the name that selected the objects
        (``source``; all classes when they came from ``_``; the name itself when the vocabulary
        does not know it), as exact-class predicates, so the most specific class wins. Other
        types compete the values the ontology lists for them (with what a dataset added: see
        ``dsl.Ontology.joined``); a type with no known value cannot be asked
        (``CompileError``, reason ``unknown concept``).
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
            if source is None:
                classes = sorted(self.ontology.classes)
            elif self.ontology.is_name(source):
                classes = sorted(self.ontology.classes_under(source))
            else:
                classes = [source]
            preds = tuple(self.pred(c, 1, "class") for c in classes)
            return preds, self._labels(classes)
        values = sorted(self.ontology.values_of(t)) if self.ontology.has_type(t) else []
        if not values:
            raise CompileError(f"no values known for the attribute type {type_!r}", reason="unknown concept")
        kind = t if t in POSITION_TYPES else "attr"
        return tuple(self.pred(v, 1, kind) for v in values), self._labels(values)

    def _labels(self, forms) -> tuple[str, ...]:
        labels = tuple(self.ontology.raw_form(f) for f in forms)
        if len(set(labels)) != len(labels):  # two forms with one raw spelling: keep forms apart
            labels = tuple(forms)
        return labels
