"""DFOL programs: the operators of the paper as an immutable expression DAG.

Two kinds of nodes:

* an :class:`Attention` is a formula with one free variable, evaluated to one probability
  per object (``α(F | X)``): :class:`Top`, :class:`Filter`, :class:`Neg`, :class:`Relate`,
  :class:`Conjoin`;
* a :class:`Truth` is a closed formula, evaluated to one probability:
  :class:`Aggregate` (``A_q``), and the scalar combinators :class:`Not`, :class:`And`,
  :class:`Or` that terminal GQA steps need.

A :class:`Program` is one yes/no truth, or a list of labelled candidate truths (an open
question: Algorithm 1 takes the argmax). It prints as a DFOL term and as the equivalent
FOL formula:

    >>> chair, left = Predicate("Chair"), Predicate("Left", arity=2)
    >>> p = Program.yes_no(Aggregate(Quantifier.EXISTS,
    ...                              Filter(chair, Relate.of(left, Quantifier.FORALL, Top()))))
    >>> print(p.term())
    A_∃(Filter_Chair[Relate_{Left,∀}[1]])
    >>> print(p.formula())
    ∃X ∀Y: Chair(X) ∧ Left(X, Y)

Nodes are frozen dataclasses, compared structurally and hashed once, so equal subterms
are evaluated once per program.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, fields
from itertools import filterfalse
from typing import Callable, Iterator, NamedTuple, Union

from .caching import memo
from .errors import ProgramStructureError
from .operators import Quantifier

__all__ = [
    "Predicate", "Quantifier", "Node", "Attention", "Truth", "Top", "Filter", "Neg", "Relate",
    "Atom", "Conjoin", "Aggregate", "Truths", "AggregateEach", "Pairwise", "AnyOfGroups", "Shorthand", "AnyOf",
    "AllOf", "AllSame", "Not", "And", "Or", "Program", "Shape",
]


class _Hashed:
    """Structural equality with the hash computed once (nodes are immutable DAGs)."""

    __slots__ = ()

    def __hash__(self) -> int:
        return memo(self, "_hash", self._structural_hash)

    def __getstate__(self) -> dict:
        # only the fields travel (pickle, copy): a kept hash is of this process's string hashes,
        # which another process seeds differently, and whatever else is kept is recomputed
        return {f.name: self.__dict__[f.name] for f in fields(self)}

    def _structural_hash(self) -> int:
        return hash((type(self).__name__,) + tuple(getattr(self, f.name) for f in fields(self)))


class _PredicateFields(NamedTuple):
    name: str
    arity: int = 1
    kind: str = ""


class Predicate(_PredicateFields):
    """A unary (``arity=1``) or binary (``arity=2``) predicate, by name.

    ``kind`` is a namespace the program's author chooses (the GQA compiler uses ``name``,
    ``attr``, ``rel``, ...); the engine only compares predicates and hands them to oracles.
    A named tuple: predicates are compared and hashed by the million (an open question
    has up to 1,232 candidates), and tuples do that in C.
    """

    __slots__ = ()

    def __new__(cls, name: str, arity: int = 1, kind: str = ""):
        if arity not in (1, 2):
            raise ProgramStructureError(f"predicate {name!r}: arity must be 1 or 2, got {arity}")
        if not isinstance(name, str) or not name:
            raise ProgramStructureError(f"predicate name must be a non-empty string, got {name!r}")
        return super().__new__(cls, name, arity, kind)

    def __repr__(self) -> str:
        return f"Predicate(name={self.name!r}, arity={self.arity}, kind={self.kind!r})"

    def __str__(self) -> str:
        return self.name.replace(" ", "_")


class Node(_Hashed):
    """Base of DFOL nodes."""

    def children(self) -> tuple["Node", ...]:
        return ()

    def term(self) -> str:
        raise NotImplementedError


class Attention(Node):
    """A formula with one free variable: one probability per object."""


class Truth(Node):
    """A closed formula: one probability."""


def _check(value, kind, where):
    if not isinstance(value, kind):  # messages are built only on failure: nodes are made by the million
        name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ProgramStructureError(f"{where}: expected {name}, got {type(value).__name__} {value!r:.60}")


def _check_all(values, kind, where, item):
    """A non-empty tuple of ``kind``."""
    if not isinstance(values, tuple) or not values:
        raise ProgramStructureError(f"{where} needs a non-empty tuple of {kind.__name__}")
    for v in values:
        _check(v, kind, f"{where} {item}")


def _node(cls):
    """A node class as a frozen dataclass, hashed once by :class:`_Hashed` unless it hashes itself."""
    own_hash = "__hash__" in vars(cls)
    cls = dataclass(frozen=True, eq=True)(cls)
    if not own_hash:
        cls.__hash__ = _Hashed.__hash__
    return cls


@_node
class Top(Attention):
    """``⊤``: the all-ones attention (Lemma 3.2)."""

    def term(self) -> str:
        return "1"


@_node
class Filter(Attention):
    """``Filter_π[α] = α ⊙ α(π | X)``: ``π(X) ∧ F(X)``."""

    predicate: Predicate
    input: Attention

    def __post_init__(self):
        _check(self.predicate, Predicate, "Filter predicate")
        if self.predicate.arity != 1:
            raise ProgramStructureError(f"Filter needs a unary predicate, {self.predicate.name!r} is binary")
        _check(self.input, Attention, "Filter input")

    def children(self):
        return (self.input,)

    def term(self) -> str:
        return f"Filter_{self.predicate}[{self.input.term()}]"


@_node
class Neg(Attention):
    """``Neg[α] = 1 - α``: ``¬F(X)``."""

    input: Attention

    def __post_init__(self):
        _check(self.input, Attention, "Neg input")

    def children(self):
        return (self.input,)

    def term(self) -> str:
        return f"Neg[{self.input.term()}]"


@_node
class Atom(_Hashed):
    """One binary predicate of a relate: ``π(X, Y)``, or ``π(Y, X)`` when ``reverse``.

    ``X`` is the relate's output variable, ``Y`` the variable it quantifies away.
    """

    predicate: Predicate
    reverse: bool = False

    def __post_init__(self):
        _check(self.predicate, Predicate, "Relate predicate")
        if self.predicate.arity != 2:
            raise ProgramStructureError(f"Relate needs binary predicates, {self.predicate.name!r} is unary")

    def __str__(self) -> str:
        return f"{self.predicate}⁻¹" if self.reverse else str(self.predicate)

    def formula(self, x: str, y: str) -> str:
        a, b = (y, x) if self.reverse else (x, y)
        return f"{self.predicate}({a}, {b})"


@_node
class Relate(Attention):
    """``Relate_{Π,q}[α_Y] = (⊙_{π∈Π} α(π | X, Y)) ×_q α_Y``: ``q Y: ∧Π(X, Y) ∧ G(Y)``."""

    atoms: tuple[Atom, ...]
    quantifier: Quantifier
    input: Attention

    def __post_init__(self):
        _check_all(self.atoms, Atom, "Relate", "atom")
        _check(self.quantifier, Quantifier, "Relate quantifier")
        _check(self.input, Attention, "Relate input")

    @classmethod
    def of(cls, predicate: Predicate, quantifier: Quantifier, input: Attention, reverse: bool = False) -> "Relate":
        """The relate of a single binary predicate."""
        return cls((Atom(predicate, reverse),), quantifier, input)

    def children(self):
        return (self.input,)

    def term(self) -> str:
        rel = "∧".join(str(a) for a in self.atoms)
        return f"Relate_{{{rel},{self.quantifier.symbol}}}[{self.input.term()}]"


@_node
class Conjoin(Attention):
    """``α ⊙ β``: two formulas on the same variable, ``F(X) ∧ G(X)``."""

    left: Attention
    right: Attention

    def __post_init__(self):
        _check(self.left, Attention, "Conjoin left")
        _check(self.right, Attention, "Conjoin right")

    def children(self):
        return (self.left, self.right)

    def term(self) -> str:
        return f"({self.left.term()} ⊙ {self.right.term()})"


@_node
class Aggregate(Truth):
    """``A_q(α)``: quantify the attention's variable away (Lemma 3.1)."""

    quantifier: Quantifier
    input: Attention

    def __post_init__(self):
        _check(self.quantifier, Quantifier, "Aggregate quantifier")
        _check(self.input, Attention, "Aggregate input")

    def children(self):
        return (self.input,)

    def term(self) -> str:
        return f"A_{self.quantifier.symbol}({self.input.term()})"


class Truths(Node):
    """Several truths kept in one node: one per predicate of ``predicates``
    (:class:`AggregateEach`, :class:`Pairwise`), or one per group of them (:class:`AnyOfGroups`).

    Open questions list one truth per plausible answer (GQA's ``query name`` has up to
    1,232) and ``same``/``common`` compare over every value of a type: one node for all of
    them keeps compiling and planning cheap. A :class:`Program` may list such a node among
    its candidates (it counts as ``n_truths`` of them); :class:`AnyOf` and :class:`AllOf`
    reduce a per-predicate one to one truth.
    """

    predicates: tuple[Predicate, ...]

    @property
    def n_truths(self) -> int:
        """How many truths the node stands for."""
        return len(self.predicates)

    def truths(self) -> tuple[Truth, ...]:
        """The truths this node stands for, as separate nodes (for printing and testing)."""
        raise NotImplementedError

    def generic(self) -> Truth:
        """The k-th truth with the predicate written as ``π`` (for printing)."""
        raise NotImplementedError

    def term(self) -> str:
        return self.generic().term()


_KNOWN_TUPLES: dict = {}  # id -> (tuple of unary predicates already checked, its hash); keeps them alive
_KNOWN_TUPLES_MAX = 4096  # cleared when full: the compiler's tuples come back at once, ad-hoc ones go


def _by_identity(cache: dict, predicates, make):
    """``make(predicates)``, kept in ``cache`` by the tuple's identity (the entry holds the tuple, so
    its id stays its own; cleared when full). The compiler hands the same candidate tuples (a
    type's values, up to 1,232 classes) to thousands of nodes and programs: what is made of one is
    made once."""
    known = cache.get(id(predicates))
    if known is not None and known[0] is predicates:
        return known[1]
    value = make(predicates)
    if len(cache) >= _KNOWN_TUPLES_MAX:
        cache.clear()
    cache[id(predicates)] = (predicates, value)
    return value


def _check_unary_tuple(predicates, where) -> int:
    """Check a tuple of unary predicates; returns its hash (once a tuple: :func:`_by_identity`)."""
    return _by_identity(_KNOWN_TUPLES, predicates, lambda p: _checked_hash(p, where))


def _checked_hash(predicates, where) -> int:
    if not isinstance(predicates, tuple) or not predicates:
        raise ProgramStructureError(f"{where} needs a non-empty tuple of unary predicates")
    # two passes in C (open questions carry up to 1,232 predicates); the slow loop only names the culprit
    if set(map(type, predicates)) != {Predicate} or set(map(_arity, predicates)) != {1}:
        for p in predicates:
            _check(p, Predicate, f"{where} predicate")
            if p.arity != 1:
                raise ProgramStructureError(f"{where} needs unary predicates, {p.name!r} is binary")
    return hash(predicates)


_arity = operator.itemgetter(1)  # Predicate is a (name, arity, kind) tuple


@_node
class AggregateEach(Truths):
    """``[A_q(Filter_π[α]) for π in predicates]`` (``negate``: ``[A_q(α ⊙ Neg[Filter_π[1]])]``).

    ``A_∃(Filter_π[α])`` is "some attended object is π"; with ``negate``, ``A_∃`` over
    ``α ⊙ ¬π`` is "some attended object is not π" (what "all of them are π" negates).
    """

    quantifier: Quantifier
    predicates: tuple[Predicate, ...]
    input: Attention
    negate: bool = False

    def __post_init__(self):
        _check(self.quantifier, Quantifier, "AggregateEach quantifier")
        _check_unary_tuple(self.predicates, "AggregateEach")
        _check(self.input, Attention, "AggregateEach input")

    def __hash__(self) -> int:
        # as _Hashed's, with the (long, shared) predicate tuple's hash looked up, not recomputed
        return memo(self, "_hash", lambda: hash(("AggregateEach", self.quantifier, _check_unary_tuple(
            self.predicates, "AggregateEach"), self.input, self.negate)))

    def children(self):
        return (self.input,)

    def _one(self, p: Predicate) -> Truth:
        body = Conjoin(self.input, Neg(Filter(p, Top()))) if self.negate else Filter(p, self.input)
        return Aggregate(self.quantifier, body)

    def truths(self) -> tuple[Truth, ...]:
        return tuple(self._one(p) for p in self.predicates)

    def generic(self) -> Truth:
        return self._one(_PI)


@_node
class Pairwise(Truths):
    """``[a_k ∧ b_k]``: the truths of two :class:`AggregateEach` over the same predicates, paired.

    ``AnyOf(Pairwise(A_∃ each over X, A_∃ each over Y))`` is "X and Y share one of the values"
    (GQA's two-input ``same``; the paper's TwoSame).
    """

    left: AggregateEach
    right: AggregateEach

    def __post_init__(self):
        _check(self.left, AggregateEach, "Pairwise left")
        _check(self.right, AggregateEach, "Pairwise right")
        if self.left.predicates != self.right.predicates:
            raise ProgramStructureError("Pairwise needs two AggregateEach over the same predicates")

    @property
    def predicates(self) -> tuple[Predicate, ...]:
        return self.left.predicates

    def children(self):
        return (self.left, self.right)

    def truths(self) -> tuple[Truth, ...]:
        return tuple(And((a, b)) for a, b in zip(self.left.truths(), self.right.truths()))

    def generic(self) -> Truth:
        return And((self.left.generic(), self.right.generic()))


_PER_PREDICATE = (AggregateEach, Pairwise)  # Truths with one truth per predicate


@_node
class AnyOfGroups(Truths):
    """``[∨_{k ∈ g} t_k for each group g]``: the truths of ``each`` cut, in order, into
    consecutive groups of ``sizes``, one disjunction per group (``1 - Π(1 - t_k)``).

    GQA's ``common`` asks ``same T`` of two object sets for every attribute type T: one
    :class:`Pairwise` over all the types' values, cut into one group per type, is 4 nodes
    where 27 ``AnyOf(Pairwise(...))`` were 108 (planning cost is per node). Only a
    :class:`Program` candidate may hold it.

        >>> x, y = Filter(Predicate("Cup"), Top()), Filter(Predicate("Mug"), Top())
        >>> values = (Predicate("red"), Predicate("blue"), Predicate("wood"))
        >>> common = AnyOfGroups(Pairwise(AggregateEach(Quantifier.EXISTS, values, x),
        ...                               AggregateEach(Quantifier.EXISTS, values, y)), (2, 1))
        >>> print(Program((common,), ("color", "material")).formula())
        [T ∈ {color, material}: ∃π ∈ T: (∃X: π(X) ∧ Cup(X)) ∧ (∃Y: π(Y) ∧ Mug(Y))]
        >>> [formula(t) for t in common.truths()][1]
        '(∃X: wood(X) ∧ Cup(X)) ∧ (∃Y: wood(Y) ∧ Mug(Y))'
    """

    each: Truths
    sizes: tuple[int, ...]

    def __post_init__(self):
        _check(self.each, _PER_PREDICATE, "AnyOfGroups input")
        n = self.each.n_truths
        if (not isinstance(self.sizes, tuple) or not self.sizes
                or not all(type(k) is int and k >= 1 for k in self.sizes) or sum(self.sizes) != n):
            raise ProgramStructureError(
                f"AnyOfGroups sizes must be whole numbers >= 1 adding up to the {n} truths of its input, "
                f"got {self.sizes!r:.80}")

    @property
    def n_truths(self) -> int:
        return len(self.sizes)

    def children(self):
        return (self.each,)

    def truths(self) -> tuple[Truth, ...]:
        inner, out, start = self.each.truths(), [], 0
        for k in self.sizes:
            out.append(Or(inner[start:start + k]))
            start += k
        return tuple(out)

    def generic(self) -> Truth:
        """The truth of one value of a group, the value written as ``π`` (for printing)."""
        return self.each.generic()

    def term(self) -> str:
        return f"∨_{{π ∈ T}} {self.each.term()}"


@_node
class Not(Truth):
    """``1 - s``."""

    input: Truth

    def __post_init__(self):
        _check(self.input, Truth, "Not input")

    def children(self):
        return (self.input,)

    def term(self) -> str:
        return f"¬{self.input.term()}"


class _Junction(Truth):
    """Independent closed formulas joined by :attr:`symbol`."""

    inputs: tuple[Truth, ...]
    symbol = ""

    def __post_init__(self):
        _check_all(self.inputs, Truth, type(self).__name__, "input")

    def children(self):
        return self.inputs

    def term(self) -> str:
        return "(" + f" {self.symbol} ".join(t.term() for t in self.inputs) + ")"


@_node
class And(_Junction):
    """``Π s_k``: all of independent closed formulas."""

    inputs: tuple[Truth, ...]
    symbol = "∧"


@_node
class Or(_Junction):
    """``1 - Π (1 - s_k)``: any of independent closed formulas."""

    inputs: tuple[Truth, ...]
    symbol = "∨"


class Shorthand(Truth):
    """A truth that stands for a longer formula of the other nodes: :meth:`expanded` gives its
    classical meaning (what brute force and ProbLog evaluate); the engine computes it its own way."""

    def expanded(self) -> Truth:
        raise NotImplementedError


class _OfEach(Shorthand):
    """One truth made of the truths of one :class:`Truths` node, joined by :attr:`junction`."""

    each: Truths
    junction = _Junction

    def __post_init__(self):
        _check(self.each, _PER_PREDICATE, f"{type(self).__name__} input")

    def children(self):
        return (self.each,)

    def expanded(self) -> Truth:
        return self.junction(self.each.truths())

    def term(self) -> str:
        return f"{self.junction.symbol}_{{π ∈ {_shown(self.each.predicates)}}} {self.each.term()}"


@_node
class AnyOf(_OfEach):
    """``∨_k t_k`` over the truths of one :class:`Truths` node (independent ones: ``1 - Π(1 - t_k)``)."""

    each: Truths
    junction = Or


@_node
class AllOf(_OfEach):
    """``∧_k t_k`` over the truths of one :class:`Truths` node (``Π t_k``)."""

    each: Truths
    junction = And


@_node
class AllSame(Shorthand):
    """``∃π ∈ T: ∀X: F(X) → π(X)``: every attended object has one same value ``π`` of
    ``predicates`` (true when no object is attended); GQA's one-input ``same``.

    The engine computes it from ``e = A_∃(α)`` (someone is attended, :attr:`nonempty`) and
    ``s_π = A_∃(α ⊙ Neg[Filter_π[1]])`` (someone attended lacks π, :attr:`each`) as
    ``1 - e · Π_π (s_π / e)``: the values taken independent *given that someone is attended*.
    A value no attended object can have gives ``s_π = e`` bit for bit, a factor 1, so the answer
    does not depend on the values the scene lacks; it is exact when the attention is crisp or
    when at most one value is possible (``docs/exactness.md``).

        >>> same = AllSame((Predicate("red"), Predicate("blue")), Filter(Predicate("cup"), Top()))
        >>> print(Program.yes_no(same).formula())
        ∃π ∈ {red, blue}: ∄X: cup(X) ∧ ¬π(X)
    """

    predicates: tuple[Predicate, ...]
    input: Attention

    def __post_init__(self):
        _check_unary_tuple(self.predicates, "AllSame")
        _check(self.input, Attention, "AllSame input")

    def __hash__(self) -> int:
        return memo(self, "_hash", lambda: hash(("AllSame", _check_unary_tuple(self.predicates, "AllSame"),
                                                 self.input)))

    @property
    def each(self) -> AggregateEach:
        """``[A_∃(α ⊙ Neg[Filter_π[1]]) for π]``: someone attended lacks π."""
        return memo(self, "_each", lambda: AggregateEach(Quantifier.EXISTS, self.predicates, self.input, True))

    @property
    def nonempty(self) -> "Aggregate":
        """``A_∃(α)``: someone is attended."""
        return memo(self, "_nonempty", lambda: Aggregate(Quantifier.EXISTS, self.input))

    def children(self):
        return (self.nonempty, self.each)

    def _one(self, p: Predicate) -> Truth:
        return Aggregate(Quantifier.NOT_EXISTS, Conjoin(self.input, Neg(Filter(p, Top()))))

    def expanded(self) -> Truth:
        return Or(tuple(self._one(p) for p in self.predicates))

    def term(self) -> str:
        return f"AllSame_{{π ∈ {_shown(self.predicates)}}}[{self.input.term()}]"


def _shown(predicates, limit: int = 6) -> str:
    names = [str(p) for p in predicates]
    return "{" + ", ".join(names[:limit]) + (f", … ({len(names)})" if len(names) > limit else "") + "}"


@_node
class Program(_Hashed):
    """A question as DFOL: one yes/no truth (``labels is None``), or labelled candidates.

    ``candidates`` holds truths, and :class:`AggregateEach` nodes that stand for one truth
    per predicate; ``labels`` names every candidate truth in order. ``focus`` is an optional
    attention the engine also returns (the objects the answer is about, used to report
    grounding).
    """

    candidates: tuple[Union[Truth, Truths], ...]
    labels: Union[tuple[str, ...], None] = None
    focus: Union[Attention, None] = None

    def __post_init__(self):
        if not isinstance(self.candidates, tuple) or not self.candidates:
            raise ProgramStructureError("a Program needs a non-empty tuple of Truth candidates")
        for t in self.candidates:
            _check(t, (Truth, Truths), "Program candidate")
        if self.labels is None:
            if len(self.candidates) != 1 or not isinstance(self.candidates[0], Truth):
                raise ProgramStructureError("a yes/no Program has exactly one Truth; give labels for several")
        else:
            n = self.n_candidates
            if not isinstance(self.labels, tuple) or len(self.labels) != n:
                raise ProgramStructureError(
                    f"a Program with {n} candidates needs as many labels, got {self.labels!r:.80}")
            if len(set(self.labels)) != len(self.labels):
                raise ProgramStructureError(f"candidate labels must be distinct: {self.labels!r:.80}")
        if self.focus is not None:
            _check(self.focus, Attention, "Program focus")

    @property
    def n_candidates(self) -> int:
        return sum(c.n_truths if isinstance(c, Truths) else 1 for c in self.candidates)

    def truths(self) -> tuple[Truth, ...]:
        """Every candidate as a separate truth (``AggregateEach`` expanded), in label order."""
        out: list[Truth] = []
        for c in self.candidates:
            out.extend(c.truths() if isinstance(c, Truths) else (c,))
        return tuple(out)

    @classmethod
    def yes_no(cls, truth: Truth, focus: Attention | None = None) -> "Program":
        return cls((truth,), None, focus)

    @classmethod
    def choice(cls, options: dict[str, Truth] | list[tuple[str, Truth]], focus: Attention | None = None) -> "Program":
        items = list(options.items()) if isinstance(options, dict) else list(options)
        return cls(tuple(t for _, t in items), tuple(lbl for lbl, _ in items), focus)

    @property
    def is_yes_no(self) -> bool:
        return self.labels is None

    def nodes(self) -> Iterator[Node]:
        """Every distinct node, each after its inputs (a topological order; computed once)."""
        return iter(self._walked().nodes)

    def predicates(self) -> tuple[Predicate, ...]:
        """The distinct predicates, in order of first use (computed once: programs are immutable)."""
        return self._walked().predicates

    def shape(self) -> "Shape | None":
        """The program up to its predicates (:class:`Shape`); ``None`` when a node is of a class
        the shape does not know (a subclass of a node class). Made by the walk that makes
        :meth:`nodes` and :meth:`predicates`, once.

            >>> red, blue = Predicate("red"), Predicate("blue")
            >>> one = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Filter(blue, Top()))))
            >>> two = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(blue, Filter(red, Top()))))
            >>> same = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Filter(red, Top()))))
            >>> one.shape().key == two.shape().key != same.shape().key, one.shape().unary
            (True, (Predicate(name='blue', arity=1, kind=''), Predicate(name='red', arity=1, kind='')))
        """
        return self._walked().shape

    def refilled(self, unary: dict[int, Predicate], binary: dict[int, Predicate]) -> "Program":
        """This program with other predicates at some local numbers of its :meth:`shape`
        (``unary[i]`` replaces ``shape().unary[i]``, ``binary[j]`` ``shape().binary[j]``): the
        program a compiler would make of another question of the same structure. Only the nodes
        that use a replaced predicate, and the nodes above them, are made again; the others are
        this program's own, and nothing is walked. The new predicates must keep the shape: none
        equal to another predicate of the program (else equal nodes would merge), which the caller
        checks.

            >>> red, blue, cup = Predicate("red"), Predicate("blue"), Predicate("cup")
            >>> one = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Filter(cup, Top()))))
            >>> print(one.refilled({one.shape().unary.index(red): blue}, {}).term())
            A_∃(Filter_blue[Filter_cup[1]])
        """
        walk = self._walked()
        if walk.shape is None:
            raise ProgramStructureError("a program with a node of a kind its shape does not know cannot be refilled")
        new = _rebuilt(walk.shape, walk, unary, binary)
        end = new.shape.key[len(new.nodes)]
        program = Program(tuple([new.nodes[i] for i in end[0]]), self.labels,
                                    new.nodes[end[1]] if end[1] >= 0 else None)
        memo(program, "_walk", lambda: new)  # what a walk of it would make, known already
        return program

    def _walked(self) -> "_Walk":
        return memo(self, "_walk", lambda: _walk(self))

    def repeated_predicates(self) -> frozenset[Predicate]:
        """The predicates whose ground atoms can occur twice in the grounding of one candidate
        (computed once). An atom repeats when its predicate is used at two places of the
        formula, or under a ``Relate`` (whose input is instantiated once per object of the
        relate's variable). Candidates are separate formulas: an atom shared by two candidates
        does not repeat. Making these predicates certain (0/1) makes every candidate read-once.

            >>> chair, on = Predicate("chair"), Predicate("on", arity=2)
            >>> hop = Program.yes_no(Aggregate(Quantifier.EXISTS, Relate.of(on, Quantifier.EXISTS, Filter(chair, Top()))))
            >>> sorted(p.name for p in hop.repeated_predicates()), hop.read_once
            (['chair'], False)
        """
        return memo(self, "_repeated", lambda: frozenset(_structural_repeats(self)))

    @property
    def read_once(self) -> bool:
        """True when no candidate's grounding can repeat a ground atom, in any scene: the
        engine's answers are then exact probabilities (``dfol.md``, soundness, clause 2)."""
        return not self.repeated_predicates()

    def term(self) -> str:
        """The DFOL term, e.g. ``A_∃(Filter_Chair[Relate_{Left,∀}[1]])``."""
        if self.labels is None:
            return self.candidates[0].term()
        return self._listing(lambda node: node.term(), lambda each: each.term())

    def formula(self) -> str:
        """The equivalent FOL formula, e.g. ``∃X ∀Y: Chair(X) ∧ Left(X, Y)``."""
        if self.labels is None:
            return formula(self.candidates[0])
        return self._listing(formula, _each_formula)

    def _listing(self, render, render_each) -> str:
        """``[label: rendering, ...]``; a Truths node shows once, as ``{its labels}: π(X) ...``."""
        parts, k = [], 0
        for c in self.candidates:
            if isinstance(c, Truths):
                labels = self.labels[k:k + c.n_truths]
                shown = ", ".join(labels[:6]) + (f", … ({len(labels)})" if len(labels) > 6 else "")
                index = "T" if isinstance(c, AnyOfGroups) else "π"  # a label names a group T of values π
                parts.append(f"{index} ∈ {{{shown}}}: {render_each(c)}")
                k += c.n_truths
            else:
                parts.append(f"{self.labels[k]}: {render(c)}")
                k += 1
        return "[" + ", ".join(parts) + "]"

    def __str__(self) -> str:
        return self.term()

    def __hash__(self) -> int:
        return memo(self, "_hash", self._structural_hash)

    def _structural_hash(self) -> int:
        # equal programs have equal shapes and labels: a hash of these is a structural hash, in C
        # (hashing node by node, in Python, cost more than the walk)
        shape = self.shape()
        return _Hashed._structural_hash(self) if shape is None else hash((shape, self.labels))


_PI = Predicate("π")  # stands for each predicate of an AggregateEach when printed

# --- one walk: the node order, the predicates and the shape ------------------------------
# Equal but distinct subterms are merged by the entry of each node: its kind, its other fields,
# its inputs by position in the order (equal inputs share one) and its predicates by local
# number, which is equal exactly when the nodes are (structural equality) and costs no
# structural hash. A node of a class the walk does not know (a subclass) is merged by its own
# equality, and the program then has no shape.


class Shape(NamedTuple):
    """A program up to its predicates: programs of one shape differ only in which predicates
    they name (the engine plans a shape once; ``nablafol.engine.planning``).

    ``key`` has one entry per node of :meth:`Program.nodes`, in that order: the node's kind,
    its other fields, its inputs by their position in the order, and its predicates by local
    number (unary and binary numbered apart, in order of first use), then the positions of the
    candidates and of the focus (-1: none). ``unary`` and ``binary`` are the predicates by
    local number.
    """

    key: tuple
    unary: tuple[Predicate, ...]
    binary: tuple[Predicate, ...]


class _Walk(NamedTuple):
    nodes: tuple
    predicates: tuple
    shape: "Shape | None"


def number_predicates(index: dict, predicates: tuple) -> range | tuple[int, ...]:
    """The local numbers of ``predicates`` in ``index`` (predicate -> number), the new ones
    numbered after the others in order of first use; in C, since an open question lists up to
    1,232 predicates. Written one way only (what a shape's key compares): a run of consecutive
    numbers as a ``range``, any other sequence as a tuple."""
    keys = dict.fromkeys(predicates)
    base, k = len(index), len(predicates)
    if len(keys) == k and keys.keys().isdisjoint(index.keys()):  # all new (the usual case)
        index.update(zip(keys, range(base, base + k)))
        return range(base, base + k)
    new = list(filterfalse(index.__contains__, keys))  # distinct, in order
    if new:
        index.update(zip(new, range(base, base + len(new))))
    numbers = list(map(index.__getitem__, predicates))
    first = numbers[0]
    if numbers == list(range(first, first + k)):
        return range(first, first + k)
    return tuple(numbers)


def _walk(program: "Program") -> _Walk:
    position: dict[int, int] = {}  # id(node) -> position in the order of it, or of the equal node there
    at_position = position.get
    merged: dict = {}  # entry -> position
    order: list[Node] = []
    key: list = []
    unary: dict = {}
    binary: dict = {}
    used: dict = {}  # every predicate, in order of first use
    known = True
    roots = tuple(program.candidates) + ((program.focus,) if program.focus is not None else ())
    for root in roots:
        # depth first, inputs in order, each node after its inputs; a node met again (by identity)
        # is not walked again. A node is read when its inputs are walked; until then, it pushes
        # them (a chain of one-input nodes, GQA's usual program, in one go)
        stack = [root]
        while stack:
            node = stack[-1]
            if id(node) in position:
                stack.pop()
                continue
            kind = type(node)
            entry = None
            if kind is Filter or kind is Aggregate or kind is Relate or kind is Neg:
                x = at_position(id(node.input))
                if x is None:
                    child = node.input
                    while True:
                        stack.append(child)
                        kind = type(child)
                        if not (kind is Filter or kind is Aggregate or kind is Relate or kind is Neg):
                            break
                        child = child.input
                        if id(child) in position:
                            break
                    continue
                if kind is Filter:
                    p = node.predicate
                    used[p] = None
                    entry = (Filter, unary.setdefault(p, len(unary)), x)
                elif kind is Aggregate:
                    entry = (Aggregate, node.quantifier, x)
                elif kind is Neg:
                    entry = (Neg, x)
                elif all(type(a) is Atom for a in node.atoms):  # a Relate
                    atoms = []
                    for a in node.atoms:
                        p = a.predicate
                        used[p] = None
                        atoms.append((binary.setdefault(p, len(binary)), a.reverse))
                    entry = (Relate, node.quantifier, x, tuple(atoms))
            elif kind is Top:
                entry = (Top,)
            else:
                pending = [c for c in node.children() if id(c) not in position]
                if pending:
                    stack.extend(reversed(pending))
                    continue
                if kind is AggregateEach:
                    used.update(dict.fromkeys(node.predicates))
                    entry = (AggregateEach, node.quantifier, node.negate, position[id(node.input)],
                             number_predicates(unary, node.predicates))
                elif kind is Conjoin:
                    entry = (Conjoin, position[id(node.left)], position[id(node.right)])
                elif kind is Pairwise:
                    entry = (Pairwise, position[id(node.left)], position[id(node.right)])
                elif kind is AnyOfGroups:
                    entry = (AnyOfGroups, position[id(node.each)], node.sizes)
                elif kind is AnyOf or kind is AllOf:
                    entry = (kind, position[id(node.each)])
                elif kind is AllSame:
                    entry = (AllSame, position[id(node.nonempty)], position[id(node.each)], position[id(node.input)])
                elif kind is Not or kind is And or kind is Or:
                    entry = (kind, tuple([position[id(c)] for c in node.children()]))
            if entry is None:  # a class the walk does not know: merged by its own equality
                known = False
                entry = (None, node)
                if isinstance(node, Filter):
                    used[node.predicate] = None
                elif isinstance(node, AggregateEach):
                    used.update(dict.fromkeys(node.predicates))
                elif isinstance(node, Relate):
                    used.update(dict.fromkeys(a.predicate for a in node.atoms))
            stack.pop()
            at = merged.get(entry)
            if at is None:
                at = merged[entry] = len(order)
                order.append(node)
                key.append(entry)
            position[id(node)] = at
    if not known:
        return _Walk(tuple(order), tuple(used), None)
    key.append((tuple([position[id(c)] for c in program.candidates]),
                position[id(program.focus)] if program.focus is not None else -1))
    return _Walk(tuple(order), tuple(used), Shape(tuple(key), tuple(unary), tuple(binary)))


def _rebuilt(shape: Shape, like: _Walk, unary: dict, binary: dict) -> _Walk:
    """``like`` (a walk of ``shape``) with the predicates at local numbers ``unary`` and ``binary``
    replaced: its nodes made again from the key where they use a replaced predicate or stand on
    a node made again, kept otherwise (the inverse of :func:`_walk`, which a property test checks)."""
    all_unary, all_binary = list(shape.unary), list(shape.binary)
    for i, p in unary.items():
        all_unary[i] = p
    for i, p in binary.items():
        all_binary[i] = p
    predicates = list(like.predicates)
    find = like.predicates.index  # a scan in C: a few replaced among up to 1,232 (hashing each cost more)
    for i, p in unary.items():
        predicates[find(shape.unary[i])] = p
    for i, p in binary.items():
        predicates[find(shape.binary[i])] = p
    nodes: list = []
    new: list = []  # whether each node was made again
    # the nodes are made from the checked program's parts, or predicates in its places
    for entry, old in zip(shape.key, like.nodes):
        kind = entry[0]
        if kind is Filter:
            again = entry[1] in unary or new[entry[2]]
            node = Filter(all_unary[entry[1]], nodes[entry[2]]) if again else old
        elif kind is Aggregate:
            again = new[entry[2]]
            node = Aggregate(entry[1], nodes[entry[2]]) if again else old
        elif kind is Relate:
            again = new[entry[2]] or any(p in binary for p, _ in entry[3])
            node = Relate(tuple([Atom(all_binary[p], reverse) for p, reverse in entry[3]]),
                                    entry[1], nodes[entry[2]]) if again else old
        elif kind is Neg:
            again = new[entry[1]]
            node = Neg(nodes[entry[1]]) if again else old
        elif kind is Top:
            again, node = False, old
        elif kind is AggregateEach:
            numbers = entry[4]
            again = new[entry[3]] or any(i in numbers for i in unary)
            node = AggregateEach(entry[1], (tuple(all_unary[numbers.start:numbers.stop]) if type(numbers) is range
                                                      else tuple([all_unary[i] for i in numbers])),
                                           nodes[entry[3]], entry[2]) if again else old
        elif kind is Conjoin or kind is Pairwise:
            again = new[entry[1]] or new[entry[2]]
            node = kind(nodes[entry[1]], nodes[entry[2]]) if again else old
        elif kind is AnyOfGroups:
            again = new[entry[1]]
            node = AnyOfGroups(nodes[entry[1]], entry[2]) if again else old
        elif kind is AnyOf or kind is AllOf:
            again = new[entry[1]]
            node = kind(nodes[entry[1]]) if again else old
        elif kind is AllSame:
            again = new[entry[2]] or new[entry[3]]
            node = AllSame(nodes[entry[2]].predicates, nodes[entry[3]]) if again else old
        else:  # Not, And, Or
            again = any(new[i] for i in entry[1])
            node = ((Not(nodes[entry[1][0]]) if kind is Not else kind(tuple([nodes[i] for i in entry[1]])))
                    if again else old)
        nodes.append(node)
        new.append(again)
    return _Walk(tuple(nodes), tuple(predicates), Shape(shape.key, tuple(all_unary), tuple(all_binary)))


# --- structural read-once analysis ------------------------------------------------------
# How often each predicate is used in the grounding of one candidate, capped at 2 (all that
# matters is "twice or more"); a use under a Relate counts 2, since the relate's input is
# instantiated once per object of its variable.


class _Uses:
    """Predicate -> uses (1 or 2) of the formulas under each node, computed once per node."""

    def __init__(self):
        self.known: dict = {}

    @staticmethod
    def add(*parts: dict) -> dict:
        out: dict = {}
        for part in parts:
            for p, k in part.items():
                out[p] = min(2, out.get(p, 0) + k)
        return out

    @staticmethod
    def times(uses: dict, k: int) -> dict:
        return uses if k == 1 else {p: min(2, n * k) for p, n in uses.items()}

    def of(self, node, inside: bool = False) -> dict:
        key = (node, inside)
        if key not in self.known:
            self.known[key] = self._compute(node, inside)
        return self.known[key]

    def _compute(self, node, inside: bool) -> dict:
        once = 2 if inside else 1
        if isinstance(node, Top):
            return {}
        if isinstance(node, Filter):
            return self.add({node.predicate: once}, self.of(node.input, inside))
        if isinstance(node, Neg):
            return self.of(node.input, inside)
        if isinstance(node, Conjoin):
            return self.add(self.of(node.left, inside), self.of(node.right, inside))
        if isinstance(node, Relate):
            return self.add(*({a.predicate: once} for a in node.atoms), self.of(node.input, True))
        if isinstance(node, (Aggregate, Not)):
            return self.of(node.input)
        if isinstance(node, (And, Or)):
            return self.add(*(self.of(t) for t in node.inputs))
        if isinstance(node, (AnyOf, AllOf)):  # every truth of the node, in one formula
            return self.per_truth(node.each, node.each.n_truths)
        if isinstance(node, AllSame):  # the input once per value; with one value, AllSame is its ∄
            k = len(node.predicates)
            return self.add(self.times(self.of(node.input), k if k > 1 else 1),
                            dict.fromkeys(node.predicates, 1))
        # a kind this analysis does not know (added with its own lowering): every predicate
        # below it counted twice, so that the engine's analysis of its rows decides
        return self.times(self.add(*(self.of(c, inside) for c in node.children())), 2)

    def per_truth(self, each, repeat: int) -> dict:
        """Uses in ``repeat`` truths of a per-predicate node (their inputs ``repeat`` times,
        each truth's own predicate once per side)."""
        if isinstance(each, AggregateEach):
            shared, own = self.of(each.input), 1
        else:  # Pairwise: both sides use the truth's predicate
            shared, own = self.add(self.of(each.left.input), self.of(each.right.input)), 2
        return self.add(self.times(shared, repeat), dict.fromkeys(each.predicates, own))

    def candidate(self, entry) -> dict:
        """Uses in the worst candidate of a program entry (a truth, or a Truths node of many)."""
        if isinstance(entry, AnyOfGroups):  # one candidate per group: a disjunction of its truths
            return self.per_truth(entry.each, max(entry.sizes))
        if isinstance(entry, Truths):
            return self.per_truth(entry, 1)
        return self.of(entry)


def _structural_repeats(program: "Program") -> set:
    uses = _Uses()
    return {p for entry in program.candidates for p, n in uses.candidate(entry).items() if n > 1}

# --- FOL rendering -------------------------------------------------------------------
# ∃ and ∀ are pulled to the front (prenex form: Q X (A ∧ Q' Y B) = Q X Q' Y (A ∧ B) over a
# non-empty domain); ∄ and ¬ keep their scope, written in place.

_VAR_NAMES = "XYZWVU"


class _Vars:
    def __init__(self):
        self.n = 0

    def fresh(self) -> str:
        i, self.n = self.n, self.n + 1
        return _VAR_NAMES[i] if i < len(_VAR_NAMES) else f"X{i - len(_VAR_NAMES) + 1}"


def _render(prefix: list[str], conjuncts: list[str]) -> str:
    body = " ∧ ".join(conjuncts) if conjuncts else "⊤"
    return f"{' '.join(prefix)}: {body}" if prefix else body


def _attention(node: Attention, var: str, vars: _Vars) -> tuple[list[str], list[str]]:
    if isinstance(node, Top):
        return [], []
    if isinstance(node, Filter):
        prefix, conj = _attention(node.input, var, vars)
        return prefix, [f"{node.predicate}({var})"] + conj
    if isinstance(node, Neg):
        prefix, conj = _attention(node.input, var, vars)
        inner = _render(prefix, conj)
        return [], [f"¬{inner}" if not prefix and len(conj) == 1 else f"¬({inner})"]
    if isinstance(node, Conjoin):
        p1, c1 = _attention(node.left, var, vars)
        p2, c2 = _attention(node.right, var, vars)
        return p1 + p2, c1 + c2
    if isinstance(node, Relate):
        y = vars.fresh()
        prefix, conj = _attention(node.input, y, vars)
        atoms = [a.formula(var, y) for a in node.atoms]
        if node.quantifier is Quantifier.NOT_EXISTS:
            return [], [f"(∄{y}{' ' + ' '.join(prefix) if prefix else ''}: {' ∧ '.join(atoms + conj)})"]
        return [f"{node.quantifier.symbol}{y}"] + prefix, atoms + conj
    raise ProgramStructureError(f"not an attention node: {node!r:.60}")


def _truth(node: Truth, vars: _Vars) -> str:
    if isinstance(node, Aggregate):
        x = vars.fresh()
        prefix, conj = _attention(node.input, x, vars)
        return _render([f"{node.quantifier.symbol}{x}"] + prefix, conj)
    if isinstance(node, Not):
        return f"¬({_truth(node.input, vars)})"
    if isinstance(node, (And, Or)):
        op = " ∧ " if isinstance(node, And) else " ∨ "
        parts = [_truth(t, vars) for t in node.inputs]
        return parts[0] if len(parts) == 1 else op.join(f"({p})" for p in parts)
    if isinstance(node, (AnyOf, AllOf)):
        q = "∃" if isinstance(node, AnyOf) else "∀"
        return f"{q}π ∈ {_shown(node.each.predicates)}: {_truth(node.each.generic(), vars)}"
    if isinstance(node, AllSame):
        return f"∃π ∈ {_shown(node.predicates)}: {_truth(node._one(_PI), vars)}"
    raise ProgramStructureError(f"not a truth node: {node!r:.60}")


def _each_formula(each: Truths) -> str:
    """The formula of a Truths node's k-th truth, its predicate written as ``π``."""
    if isinstance(each, AnyOfGroups):
        return f"∃π ∈ T: {formula(each.generic())}"
    return formula(each.generic())


def formula(node: Node) -> str:
    """FOL rendering of a truth (closed) or attention (free variable ``X``) node."""
    vars = _Vars()
    if isinstance(node, Attention):
        x = vars.fresh()
        return _render(*_attention(node, x, vars))
    return _truth(node, vars)
