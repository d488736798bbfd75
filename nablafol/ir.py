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
from collections import Counter
from itertools import accumulate, count, filterfalse
from typing import Iterator, NamedTuple, Union, get_args, get_origin, get_type_hints

from .caching import memo
from .errors import ProgramStructureError
from .operators import Quantifier

__all__ = [
    "Predicate", "Quantifier", "Node", "Attention", "Truth", "Top", "Filter", "Neg", "Relate",
    "Atom", "Conjoin", "Aggregate", "Truths", "AggregateEach", "Pairwise", "AnyOfGroups",
    "Shorthand", "AnyOf", "AllOf", "AllSame", "Not", "And", "Or", "Program", "Shape",
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
    """Base of DFOL nodes. A node class's fields say what it is made of (:func:`_node` reads
    their annotations): its inputs (nodes), its predicates and its other values. The
    constructor checks each field against its annotation, :meth:`children` lists the inputs,
    and the walk and the rebuild of a :class:`Program` read and make every field the same way."""

    _fields: tuple = ()  # (name, role, kind to check or None, class name, label) per field: _node

    def __post_init__(self):
        values = self.__dict__
        for name, role, kind, where, label in self._fields:
            value = values[name]
            if role is _UNARIES:
                _check_unary_tuple(value, where)
            elif role is _NODES or role is _ATOMS:
                _check_all(value, kind, where, label)
            elif kind is not None and not isinstance(value, kind):
                _check(value, kind, f"{where} {label}")
            elif role is _UNARY and value.arity != 1:
                raise ProgramStructureError(
                    f"{where} needs a unary predicate, {value.name!r} is binary")

    def children(self) -> tuple["Node", ...]:
        """The node's inputs, in order (made for each class by :func:`_node` from its fields)."""
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


# What a field is, read from its annotation: an input node, a tuple of input nodes, a unary
# predicate, a tuple of them, a relate's atoms, or any other value (kept as it is)
_NODE, _NODES, _UNARY, _UNARIES, _ATOMS = "node", "nodes", "unary", "unaries", "atoms"
_VALUE = "value"
_LABELS = {"each": "input", "inputs": "input", "atoms": "atom"}  # a field as checks name it
_SPECS: dict = {}  # class made by _node (not a subclass of one) -> (name, role) per field


def _role(kind) -> tuple:
    """``(role, kind to check or None)`` of a field annotated ``kind``."""
    if kind is Predicate:
        return _UNARY, kind
    if get_origin(kind) is tuple:
        item = get_args(kind)[0]
        if item is Predicate or item is Atom or issubclass(item, Node):
            return (_UNARIES if item is Predicate else _ATOMS if item is Atom else _NODES), item
        return _VALUE, None
    kinds = get_args(kind) if get_origin(kind) is Union else (kind,)
    if all(isinstance(k, type) and issubclass(k, Node) for k in kinds):
        return _NODE, kinds if len(kinds) > 1 else kind
    return _VALUE, kind if isinstance(kind, type) and kind is not bool else None


def _node(cls):
    """A node class as a frozen dataclass, hashed once by :class:`_Hashed` (a hash the class
    holds, which ``dataclass`` keeps), its fields' roles read from their annotations."""
    cls.__hash__ = _Hashed.__hash__
    cls = dataclass(frozen=True, eq=True)(cls)
    if issubclass(cls, Node):
        hints = get_type_hints(cls)
        cls._fields = tuple((f.name, *_role(hints[f.name]), cls.__name__,
                             _LABELS.get(f.name, f.name)) for f in fields(cls))
        _SPECS[cls] = tuple((name, role) for name, role, *_ in cls._fields)
        if "children" not in vars(cls):
            cls.children = _inputs_of(_SPECS[cls])
    return cls


def _inputs_of(spec: tuple):
    """``children`` of a node class of fields ``spec``: its input fields' values, in order (one
    input field, the usual case, read with no loop: a walk asks every node)."""
    inputs = [(name, role is _NODES) for name, role in spec if role is _NODE or role is _NODES]
    if not inputs:
        return Node.children
    if len(inputs) == 1:
        (name, many), = inputs
        return (lambda self: self.__dict__[name]) if many else (lambda self: (self.__dict__[name],))
    return lambda self: tuple(c for name, many in inputs
                              for c in (self.__dict__[name] if many else (self.__dict__[name],)))


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

    def term(self) -> str:
        return f"Filter_{self.predicate}[{self.input.term()}]"


@_node
class Neg(Attention):
    """``Neg[α] = 1 - α``: ``¬F(X)``."""

    input: Attention

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

    @classmethod
    def of(cls, predicate: Predicate, quantifier: Quantifier, input: Attention, reverse: bool = False) -> "Relate":
        """The relate of a single binary predicate."""
        return cls((Atom(predicate, reverse),), quantifier, input)

    def term(self) -> str:
        rel = "∧".join(str(a) for a in self.atoms)
        return f"Relate_{{{rel},{self.quantifier.symbol}}}[{self.input.term()}]"


@_node
class Conjoin(Attention):
    """``α ⊙ β``: two formulas on the same variable, ``F(X) ∧ G(X)``."""

    left: Attention
    right: Attention

    def term(self) -> str:
        return f"({self.left.term()} ⊙ {self.right.term()})"


@_node
class Aggregate(Truth):
    """``A_q(α)``: quantify the attention's variable away (Lemma 3.1)."""

    quantifier: Quantifier
    input: Attention

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
        return tuple(map(self._one, self.predicates))

    def generic(self) -> Truth:
        """The k-th truth with the predicate written as ``π`` (for printing)."""
        return self._one(_PI)

    def _one(self, p: Predicate) -> Truth:
        """The truth of the predicate ``p``."""
        raise NotImplementedError

    def term(self) -> str:
        return self.generic().term()


_arity = operator.itemgetter(1)  # Predicate is a (name, arity, kind) tuple


def _check_unary_tuple(predicates, where) -> None:
    """A non-empty tuple of unary predicates (an open question's holds up to 1,232)."""
    if not isinstance(predicates, tuple) or not predicates:
        raise ProgramStructureError(f"{where} needs a non-empty tuple of unary predicates")
    # two passes in C; the slow loop only names the culprit
    if set(map(type, predicates)) != {Predicate} or set(map(_arity, predicates)) != {1}:
        for p in predicates:
            _check(p, Predicate, f"{where} predicate")
            if p.arity != 1:
                raise ProgramStructureError(f"{where} needs unary predicates, {p.name!r} is binary")


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

    def _one(self, p: Predicate) -> Truth:
        body = Conjoin(self.input, Neg(Filter(p, Top()))) if self.negate else Filter(p, self.input)
        return Aggregate(self.quantifier, body)


@_node
class Pairwise(Truths):
    """``[a_k ∧ b_k]``: the truths of two :class:`AggregateEach` over the same predicates, paired.

    ``AnyOf(Pairwise(A_∃ each over X, A_∃ each over Y))`` is "X and Y share one of the values"
    (GQA's two-input ``same``; the paper's TwoSame).
    """

    left: AggregateEach
    right: AggregateEach

    def __post_init__(self):
        super().__post_init__()
        if self.left.predicates != self.right.predicates:
            raise ProgramStructureError("Pairwise needs two AggregateEach over the same predicates")

    @property
    def predicates(self) -> tuple[Predicate, ...]:
        return self.left.predicates

    def _one(self, p: Predicate) -> Truth:
        return And((self.left._one(p), self.right._one(p)))

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

    each: Union[AggregateEach, Pairwise]
    sizes: tuple[int, ...]

    def __post_init__(self):
        super().__post_init__()
        n = self.each.n_truths
        if (not isinstance(self.sizes, tuple) or not self.sizes
                or not all(type(k) is int and k >= 1 for k in self.sizes) or sum(self.sizes) != n):
            raise ProgramStructureError(
                f"AnyOfGroups sizes must be whole numbers >= 1 adding up to the {n} truths of its input, "
                f"got {self.sizes!r:.80}")

    @property
    def n_truths(self) -> int:
        return len(self.sizes)

    def truths(self) -> tuple[Truth, ...]:
        inner, ends = self.each.truths(), accumulate(self.sizes)
        return tuple(Or(inner[end - k:end]) for k, end in zip(self.sizes, ends))

    def generic(self) -> Truth:
        """The truth of one value of a group, the value written as ``π`` (for printing)."""
        return self.each.generic()

    def term(self) -> str:
        return f"∨_{{π ∈ T}} {self.each.term()}"


@_node
class Not(Truth):
    """``1 - s``."""

    input: Truth

    def term(self) -> str:
        return f"¬{self.input.term()}"


@_node
class _Junction(Truth):
    """Independent closed formulas joined by :attr:`symbol`."""

    inputs: tuple[Truth, ...]
    symbol = ""

    def term(self) -> str:
        return "(" + f" {self.symbol} ".join(t.term() for t in self.inputs) + ")"


@_node
class And(_Junction):
    """``Π s_k``: all of independent closed formulas."""

    symbol = "∧"


@_node
class Or(_Junction):
    """``1 - Π (1 - s_k)``: any of independent closed formulas."""

    symbol = "∨"


class Shorthand(Truth):
    """A truth that stands for a longer formula of the other nodes: :meth:`expanded` gives its
    classical meaning (what brute force and ProbLog evaluate); the engine computes it its own way."""

    def expanded(self) -> Truth:
        raise NotImplementedError


@_node
class _OfEach(Shorthand):
    """One truth made of the truths of one :class:`Truths` node, joined by :attr:`junction`."""

    each: Union[AggregateEach, Pairwise]
    junction = _Junction

    def expanded(self) -> Truth:
        return self.junction(self.each.truths())

    def term(self) -> str:
        return f"{self.junction.symbol}_{{π ∈ {_shown(self.each.predicates)}}} {self.each.term()}"


@_node
class AnyOf(_OfEach):
    """``∨_k t_k`` over the truths of one :class:`Truths` node (independent ones: ``1 - Π(1 - t_k)``)."""

    junction = Or


@_node
class AllOf(_OfEach):
    """``∧_k t_k`` over the truths of one :class:`Truths` node (``Π t_k``)."""

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
        return Or(tuple(map(self._one, self.predicates)))

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
            n = sum(c.n_truths if isinstance(c, Truths) else 1 for c in self.candidates)
            if not isinstance(self.labels, tuple) or len(self.labels) != n:
                raise ProgramStructureError(
                    f"a Program with {n} candidates needs as many labels, got {self.labels!r:.80}")
            if len(set(self.labels)) != len(self.labels):
                raise ProgramStructureError(f"candidate labels must be distinct: {self.labels!r:.80}")
        if self.focus is not None:
            _check(self.focus, Attention, "Program focus")

    # hashed by shape and labels (``_structural_hash``), and equal by them: equal programs have
    # equal shapes and labels, and a shape makes its program again (``_rebuilt``), so comparing
    # them is structural equality without reading a node (a filled program's nodes stay unmade)
    __hash__ = _Hashed.__hash__

    def __eq__(self, other) -> bool:
        if other is self:
            return True
        if not isinstance(other, Program):
            return NotImplemented
        if self.labels != other.labels:
            return False
        mine, theirs = self.shape(), other.shape()
        if mine is not None and theirs is not None:
            return mine == theirs
        return self.candidates == other.candidates and self.focus == other.focus

    @property
    def n_candidates(self) -> int:
        # the labels name every candidate truth (checked when made); a yes/no program has one
        return 1 if self.labels is None else len(self.labels)

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
        that use a replaced predicate, and the nodes above them, are made again, the others are
        this program's own, and that only when a node is first asked for (:class:`FilledProgram`):
        nothing is walked. The new predicates must keep the shape: none
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
        return FilledProgram(walk, unary, binary, self.labels)

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

    def _structural_hash(self) -> int:
        # equal programs have equal shapes and labels: a hash of these is a structural hash, in C
        # (hashing node by node, in Python, cost more than the walk)
        shape = self.shape()
        return _Hashed._structural_hash(self) if shape is None else hash((shape, self.labels))


class FilledProgram(Program):
    """A program filled into another's shape (:meth:`Program.refilled`), equal to the program made
    whole: its shape, predicates and labels are known at once (all that planning and the engine's
    caches read), its nodes are made the first time something asks for them (``candidates``,
    ``focus``, :meth:`nodes`, a rendering, the read-once analysis). A compiler fills most
    programs of a stream into skeletons it met, and an eval asks none of them for a node."""

    def __init__(self, like: "_Walk", unary: dict, binary: dict, labels):
        values = self.__dict__  # frozen: written once, here, as the dataclass's own __init__ would
        values["labels"], values["_like"], values["_unary"], values["_binary"] = labels, like, unary, binary
        values["_shape"] = _refilled_shape(like.shape, unary, binary)

    @property
    def candidates(self) -> tuple:
        return self._made()[0]

    @property
    def focus(self):
        return self._made()[1]

    def _made(self) -> tuple:
        def make():
            walk = self._walked()
            end = walk.shape.key[len(walk.nodes)]
            return tuple([walk.nodes[i] for i in end[0]]), (walk.nodes[end[1]] if end[1] >= 0 else None)
        return memo(self, "_roots", make)

    def _walked(self) -> "_Walk":
        values = self.__dict__
        return memo(self, "_walk", lambda: _rebuilt(values["_shape"], values["_like"], values["_unary"],
                                                    values["_binary"]))

    def shape(self) -> "Shape":
        return self.__dict__["_shape"]

    def predicates(self) -> tuple[Predicate, ...]:
        values = self.__dict__
        return memo(self, "_predicates", lambda: _refilled_predicates(values["_like"], values["_unary"],
                                                                      values["_binary"]))

    def refilled(self, unary: dict[int, Predicate], binary: dict[int, Predicate]) -> "Program":
        # the same local numbers as the skeleton's: filled into the skeleton at once, nothing made
        values = self.__dict__
        return FilledProgram(values["_like"], {**values["_unary"], **unary}, {**values["_binary"], **binary},
                             self.labels)

    def __reduce__(self):
        return Program, (self.candidates, self.labels, self.focus)  # what travels is the program made whole


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
        # is not walked again. A node pushed back with its missing inputs above it is ready (its
        # inputs walked) when it comes up again
        stack = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if id(node) in position:
                continue
            if not ready:
                missing = [c for c in node.children() if id(c) not in position]
                if missing:
                    stack.append((node, True))
                    while len(missing) == 1:  # a chain of one-input nodes (GQA's usual program)
                        stack.append((missing[0], True))
                        missing = [c for c in missing[0].children() if id(c) not in position]
                    stack.extend([(c, False) for c in reversed(missing)])
                    continue
            kind = type(node)
            spec = _SPECS.get(kind)
            if spec is None or kind is Relate and any(type(a) is not Atom for a in node.atoms):
                known = False  # a class the walk does not know: merged by its own equality
                _note_predicates(node, used)
                entry = (None, node)
            else:
                entry = [kind]
                values = node.__dict__
                for name, role in spec:
                    value = values[name]
                    if role is _NODE:
                        value = position[id(value)]
                    elif role is _VALUE:
                        pass
                    elif role is _NODES:
                        value = tuple([position[id(c)] for c in value])
                    elif role is _UNARY:
                        used[value] = None
                        value = unary.setdefault(value, len(unary))
                    elif role is _UNARIES:
                        used.update(dict.fromkeys(value))
                        value = number_predicates(unary, value)
                    elif role is _ATOMS:
                        used.update(dict.fromkeys(a.predicate for a in value))
                        value = tuple([(binary.setdefault(a.predicate, len(binary)), a.reverse)
                                       for a in value])
                    entry.append(value)
                entry = tuple(entry)
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


def _note_predicates(node, used: dict) -> None:
    """The predicates of a node of a class the walk does not know, as its known base names them."""
    spec = next((_SPECS[c] for c in type(node).__mro__ if c in _SPECS), ())
    for name, role in spec:
        value = getattr(node, name)
        if role is _UNARY:
            used[value] = None
        elif role is _UNARIES:
            used.update(dict.fromkeys(value))
        elif role is _ATOMS:
            used.update(dict.fromkeys(a.predicate for a in value))


def _refilled_shape(shape: Shape, unary: dict, binary: dict) -> Shape:
    """``shape`` with the predicates at local numbers ``unary`` and ``binary`` replaced."""
    all_unary, all_binary = list(shape.unary), list(shape.binary)
    for i, p in unary.items():
        all_unary[i] = p
    for i, p in binary.items():
        all_binary[i] = p
    return Shape(shape.key, tuple(all_unary), tuple(all_binary))


def _refilled_predicates(like: _Walk, unary: dict, binary: dict) -> tuple:
    """The predicates of ``like`` in order of first use, those at local numbers ``unary`` and
    ``binary`` of its shape replaced."""
    shape = like.shape
    predicates = list(like.predicates)
    find = like.predicates.index  # a scan in C: a few replaced among up to 1,232 (hashing each cost more)
    for i, p in unary.items():
        predicates[find(shape.unary[i])] = p
    for i, p in binary.items():
        predicates[find(shape.binary[i])] = p
    return tuple(predicates)


def _rebuilt(shape: Shape, like: _Walk, unary: dict, binary: dict) -> _Walk:
    """``like`` (a walk of a program of ``shape``'s key) made again as the walk of that program
    with the predicates of ``shape`` (``like``'s own but at local numbers ``unary`` and
    ``binary``): its nodes made again from the key where they use a replaced predicate or stand
    on a node made again, kept otherwise (the inverse of :func:`_walk`, which a property test
    checks)."""
    all_unary, all_binary = shape.unary, shape.binary
    nodes: list = []
    new: list = []  # whether each node was made again
    for entry, old in zip(shape.key, like.nodes):
        kind, spec, again = entry[0], _SPECS[entry[0]], False
        for (_, role), value in zip(spec, entry[1:]):
            again = (new[value] if role is _NODE else any(new[i] for i in value) if role is _NODES
                     else value in unary if role is _UNARY
                     else any(i in value for i in unary) if role is _UNARIES
                     else any(p in binary for p, _ in value) if role is _ATOMS else False)
            if again:
                break
        if not again:
            nodes.append(old)
            new.append(False)
            continue
        values = []
        for (_, role), value in zip(spec, entry[1:]):
            if role is _NODE:
                value = nodes[value]
            elif role is _NODES:
                value = tuple([nodes[i] for i in value])
            elif role is _UNARY:
                value = all_unary[value]
            elif role is _UNARIES:
                value = (tuple(all_unary[value.start:value.stop]) if type(value) is range
                         else tuple([all_unary[i] for i in value]))
            elif role is _ATOMS:
                value = tuple([Atom(all_binary[p], reverse) for p, reverse in value])
            values.append(value)
        nodes.append(kind(*values))
        new.append(True)
    return _Walk(tuple(nodes), _refilled_predicates(like, unary, binary), shape)


# --- structural read-once analysis ------------------------------------------------------
# How often each predicate is used in the grounding of one candidate, capped at 2 (all that
# matters is "twice or more"), node by node in the walk's order: a node's inputs, then its own
# predicates once. A relate's input counts twice (instantiated once per object of its variable),
# the shared inputs of a per-predicate node's truths once per truth, and a predicate listed twice
# among them twice.


def _add(parts) -> dict:
    """The uses of ``parts``, ``(uses, times)`` pairs, added (each capped at 2)."""
    out: dict = {}
    for uses, k in parts:
        for p, n in uses.items():
            out[p] = min(2, out.get(p, 0) + n * k)
    return out


def _uses(node, of: dict) -> dict:
    """The uses under ``node``, its inputs' (``of``) known."""
    if isinstance(node, (AnyOf, AllOf, AllSame)):  # a per-predicate node's truths in one formula
        return _in_truths(node.each, node.each.predicates, node.each.n_truths, of)
    base = next((c for c in type(node).__mro__ if c in _SPECS), None)
    if base is None:  # a kind of its own (added with its own lowering): every predicate below it
        # counted twice, so that the engine's analysis of its rows decides
        return _add([(of[c], 2) for c in node.children()])
    parts = [(of[c], 2 if base is Relate else 1) for c in node.children()]
    for name, role in _SPECS[base]:
        value = getattr(node, name)
        if role is _UNARY:
            parts.append(({value: 1}, 1))
        elif role is _ATOMS:
            parts += [({a.predicate: 1}, 1) for a in value]
    return _add(parts)


def _in_truths(each, predicates: tuple, truths: int, of: dict) -> dict:
    """The uses of one formula of ``truths`` truths of the per-predicate node ``each``: its inputs
    once per truth, each of ``predicates`` (the truths' own) once per side."""
    sides = (each,) if isinstance(each, AggregateEach) else (each.left, each.right)
    own = dict.fromkeys(predicates, len(sides))
    if len(own) < len(predicates):  # a predicate listed twice is used twice
        own.update((p, 2) for p, n in Counter(predicates).items() if n > 1)
    return _add([(of[side.input], truths) for side in sides] + [(own, 1)])


def _structural_repeats(program: "Program") -> set:
    of: dict = {}
    for node in program.nodes():
        of[node] = _uses(node, of)
    found: list[dict] = []  # the uses of each candidate formula
    for entry in program.candidates:
        if isinstance(entry, AnyOfGroups):  # one candidate per group: a disjunction of its truths
            ends = [0, *accumulate(entry.sizes)]
            found += [_in_truths(entry.each, entry.each.predicates[a:b], b - a, of)
                      for a, b in zip(ends, ends[1:])]
        elif isinstance(entry, Truths):  # one candidate per truth, alike but for its own predicate
            found.append(_in_truths(entry, tuple(dict.fromkeys(entry.predicates)), 1, of))
        else:
            found.append(of[entry])
    return {p for uses in found for p, n in uses.items() if n > 1}

# --- FOL rendering -------------------------------------------------------------------
# ∃ and ∀ are pulled to the front (prenex form: Q X (A ∧ Q' Y B) = Q X Q' Y (A ∧ B) over a
# non-empty domain); ∄ and ¬ keep their scope, written in place.

def _variables() -> Iterator[str]:
    """Fresh variable names: X, Y, Z, W, V, U, then X1, X2, ..."""
    yield from "XYZWVU"
    yield from (f"X{i}" for i in count(1))


def _render(prefix: list[str], conjuncts: list[str]) -> str:
    body = " ∧ ".join(conjuncts) if conjuncts else "⊤"
    return f"{' '.join(prefix)}: {body}" if prefix else body


def _attention(node: Attention, var: str, names: Iterator[str]) -> tuple[list[str], list[str]]:
    """The quantifier prefix and the conjuncts of an attention on ``var``."""
    if isinstance(node, Top):
        return [], []
    if isinstance(node, Conjoin):
        p1, c1 = _attention(node.left, var, names)
        p2, c2 = _attention(node.right, var, names)
        return p1 + p2, c1 + c2
    if isinstance(node, Relate):
        y = next(names)
        prefix, conj = _attention(node.input, y, names)
        atoms = [a.formula(var, y) for a in node.atoms]
        if node.quantifier is Quantifier.NOT_EXISTS:
            return [], [f"(∄{y}{' ' + ' '.join(prefix) if prefix else ''}: {' ∧ '.join(atoms + conj)})"]
        return [f"{node.quantifier.symbol}{y}"] + prefix, atoms + conj
    if not isinstance(node, (Filter, Neg)):
        raise ProgramStructureError(f"not an attention node: {node!r:.60}")
    prefix, conj = _attention(node.input, var, names)
    if isinstance(node, Filter):
        return prefix, [f"{node.predicate}({var})"] + conj
    inner = _render(prefix, conj)
    return [], [f"¬{inner}" if not prefix and len(conj) == 1 else f"¬({inner})"]


def _truth(node: Truth, names: Iterator[str]) -> str:
    if isinstance(node, Aggregate):
        x = next(names)
        prefix, conj = _attention(node.input, x, names)
        return _render([f"{node.quantifier.symbol}{x}"] + prefix, conj)
    if isinstance(node, Not):
        return f"¬({_truth(node.input, names)})"
    if isinstance(node, (And, Or)):
        parts = [_truth(t, names) for t in node.inputs]
        return parts[0] if len(parts) == 1 else f" {node.symbol} ".join(f"({p})" for p in parts)
    if isinstance(node, (AnyOf, AllOf)):
        q = "∃" if isinstance(node, AnyOf) else "∀"
        return f"{q}π ∈ {_shown(node.each.predicates)}: {_truth(node.each.generic(), names)}"
    if isinstance(node, AllSame):
        return f"∃π ∈ {_shown(node.predicates)}: {_truth(node._one(_PI), names)}"
    raise ProgramStructureError(f"not a truth node: {node!r:.60}")


def _each_formula(each: Truths) -> str:
    """The formula of a Truths node's k-th truth, its predicate written as ``π``."""
    if isinstance(each, AnyOfGroups):
        return f"∃π ∈ T: {formula(each.generic())}"
    return formula(each.generic())


def formula(node: Node) -> str:
    """FOL rendering of a truth (closed) or attention (free variable ``X``) node."""
    names = _variables()
    if isinstance(node, Attention):
        return _render(*_attention(node, next(names), names))
    return _truth(node, names)
