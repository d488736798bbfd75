"""DFOL programs: the operators of the paper as an immutable expression DAG.

An :class:`Attention` is a formula with one free variable, one probability per object
(``α(F | X)``); a :class:`Truth` is a closed formula, one probability. A :class:`Program` is
one yes/no truth, or labelled candidate truths (an open question: Algorithm 1 takes the
argmax); it prints as a DFOL term and as the equivalent FOL formula:

    >>> chair, left = Predicate("Chair"), Predicate("Left", arity=2)
    >>> p = Program.yes_no(Aggregate(Quantifier.EXISTS,
    ...                              Filter(chair, Relate.of(left, Quantifier.FORALL, Top()))))
    >>> print(p.term())
    A_∃(Filter_Chair[Relate_{Left,∀}[1]])
    >>> print(p.formula())
    ∃X ∀Y: Chair(X) ∧ Left(X, Y)

Nodes are frozen dataclasses, compared structurally and hashed once.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from itertools import accumulate, chain, count, filterfalse
from operator import itemgetter
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
        # only the fields travel: a kept hash is of this process's string hashes (seeded per process)
        return {f.name: self.__dict__[f.name] for f in fields(self)}

    def _structural_hash(self) -> int:
        return hash((type(self).__name__,) + tuple(getattr(self, f.name) for f in fields(self)))


class Predicate(NamedTuple("_PredicateFields", [("name", str), ("arity", int), ("kind", str)])):
    """A unary (``arity=1``) or binary (``arity=2``) predicate, by name. ``kind`` is a namespace
    the program's author chooses (the GQA compiler uses ``name``, ``attr``, ``rel``, ...)."""

    __slots__ = ()

    def __new__(cls, name: str, arity: int = 1, kind: str = ""):
        if arity not in (1, 2):
            raise ProgramStructureError(f"predicate {name!r}: arity must be 1 or 2, got {arity}")
        if not isinstance(name, str) or not name:
            raise ProgramStructureError(f"predicate name must be a non-empty string, got {name!r}")
        return super().__new__(cls, name, arity, kind)

    def __str__(self) -> str:
        return self.name.replace(" ", "_")


class Node(_Hashed):
    """Base of DFOL nodes. A node class's annotated fields are its inputs, predicates and other
    values: their roles, read once, drive its checks, inputs, term, walk and rebuild."""

    _fields: tuple = ()  # (name, role, kind to check or None, class name, label) per field
    _term = ""  # the DFOL term: a format string over the fields, each rendered by its role

    def __post_init__(self):
        values = self.__dict__
        for name, role, kind, where, label in self._fields:
            value = values[name]
            if role in _TUPLES:
                _check_all(value, kind, where, label)
            elif kind is not None and not isinstance(value, kind):
                _check(value, kind, f"{where} {label}")
            elif role is _UNARY and value.arity != 1:
                raise ProgramStructureError(f"{where} needs a unary predicate, {value.name!r} is binary")

    def children(self) -> tuple["Node", ...]:
        """The node's inputs, in order."""
        return ()

    def term(self) -> str:
        """The DFOL term, e.g. ``Filter_red[1]``."""
        if not self._term:  # a node kind of its own writes its term itself
            raise NotImplementedError(f"{type(self).__name__} has no DFOL term")
        values = self.__dict__
        return self._term.format_map({name: _termed(role, values[name], self)
                                      for name, role, *_ in self._fields})


class Attention(Node):
    """A formula with one free variable: one probability per object."""


class Truth(Node):
    """A closed formula: one probability."""


_arity = itemgetter(1)  # Predicate is a (name, arity, kind) tuple


def _termed(role, value, node) -> str:
    if role is _NODE:
        return value.term()
    if role is _NODES:
        return f" {node.symbol} ".join(t.term() for t in value)
    if role is _UNARIES:
        return _shown(value)
    return "∧".join(map(str, value)) if role is _ATOMS else str(value)


def _check(value, kind, where):
    if not isinstance(value, kind):  # messages are built only on failure: nodes are made by the million
        name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ProgramStructureError(f"{where}: expected {name}, got {type(value).__name__} {value!r:.60}")


def _check_all(values, kind, where, label):
    """A non-empty tuple of ``kind``, unary if predicates (up to 1,232: checked in C, then named)."""
    unary = kind is Predicate
    if not isinstance(values, tuple) or not values:
        raise ProgramStructureError(f"{where} needs a non-empty tuple of "
                                    f"{'unary predicates' if unary else kind.__name__}")
    if unary and set(map(type, values)) == {Predicate} and set(map(_arity, values)) == {1}:
        return
    for v in values:
        _check(v, kind, f"{where} {label}")
        if unary and v.arity != 1:
            raise ProgramStructureError(f"{where} needs unary predicates, {v.name!r} is binary")


# What a field is, read from its annotation: an input node, a tuple of input nodes, a unary
# predicate, a tuple of them, a relate's atoms, or any other value (kept as it is)
_NODE, _NODES, _UNARY, _UNARIES, _ATOMS, _VALUE = "node", "nodes", "unary", "unaries", "atoms", "value"
_TUPLES = frozenset((_NODES, _UNARIES, _ATOMS))
_LABELS = {"each": "input", "inputs": "input", "atoms": "atom", "predicates": "predicate"}
_SPECS: dict = {}  # class made by _node (not a subclass of one) -> (name, role) per field


def _role(kind) -> tuple:
    """``(role, kind to check or None)`` of a field annotated ``kind``."""
    if get_origin(kind) is tuple:
        item = get_args(kind)[0]
        if item is Predicate or item is Atom:
            return (_UNARIES if item is Predicate else _ATOMS), item
        return (_NODES, item) if issubclass(item, Node) else (_VALUE, None)
    if kind is Predicate:
        return _UNARY, kind
    kinds = get_args(kind) if get_origin(kind) is Union else (kind,)
    if all(isinstance(k, type) and issubclass(k, Node) for k in kinds):
        return _NODE, kinds if len(kinds) > 1 else kind
    return _VALUE, kind if isinstance(kind, type) and kind is not bool else None


def _node(cls):
    """A node class as a frozen dataclass hashed once, its fields' roles read from their annotations."""
    cls.__hash__ = _Hashed.__hash__
    cls = dataclass(frozen=True, eq=True)(cls)
    if issubclass(cls, Node):
        hints = get_type_hints(cls)
        cls._fields = tuple((f.name, *_role(hints[f.name]), cls.__name__, _LABELS.get(f.name, f.name))
                            for f in fields(cls))
        _SPECS[cls] = tuple((name, role) for name, role, *_ in cls._fields)
        if "children" not in vars(cls):
            cls.children = _inputs_of(_SPECS[cls])
    return cls


def _inputs_of(spec: tuple):
    """``children`` of a node class of fields ``spec`` (one input, the usual case, with no loop)."""
    inputs = [(name, role is _NODES) for name, role in spec if role is _NODE or role is _NODES]
    if len(inputs) == 1:  # a walk asks every node: one input field read with no loop
        (name, many), = inputs
        return (lambda self: self.__dict__[name]) if many else (lambda self: (self.__dict__[name],))
    return lambda self: tuple(c for name, many in inputs
                              for c in (self.__dict__[name] if many else (self.__dict__[name],)))


@_node
class Top(Attention):
    """``⊤``: the all-ones attention (Lemma 3.2)."""

    _term = "1"


@_node
class Filter(Attention):
    """``Filter_π[α] = α ⊙ α(π | X)``: ``π(X) ∧ F(X)``."""

    predicate: Predicate
    input: Attention
    _term = "Filter_{predicate}[{input}]"


@_node
class Neg(Attention):
    """``Neg[α] = 1 - α``: ``¬F(X)``."""

    input: Attention
    _term = "Neg[{input}]"


@_node
class Atom(_Hashed):
    """A relate's binary predicate: ``π(X, Y)`` (``X`` its output, ``Y`` quantified away), or
    ``π(Y, X)`` when ``reverse``."""

    predicate: Predicate
    reverse: bool = False

    def __post_init__(self):
        _check(self.predicate, Predicate, "Relate predicate")
        if self.predicate.arity != 2:
            raise ProgramStructureError(f"Relate needs binary predicates, {self.predicate.name!r} is unary")

    def __str__(self) -> str:
        return f"{self.predicate}⁻¹" if self.reverse else str(self.predicate)


@_node
class Relate(Attention):
    """``Relate_{Π,q}[α_Y] = (⊙_{π∈Π} α(π | X, Y)) ×_q α_Y``: ``q Y: ∧Π(X, Y) ∧ G(Y)``."""

    atoms: tuple[Atom, ...]
    quantifier: Quantifier
    input: Attention
    _term = "Relate_{{{atoms},{quantifier}}}[{input}]"

    @classmethod
    def of(cls, predicate: Predicate, quantifier: Quantifier, input: Attention, reverse: bool = False) -> "Relate":
        """The relate of a single binary predicate."""
        return cls((Atom(predicate, reverse),), quantifier, input)


@_node
class Conjoin(Attention):
    """``α ⊙ β``: two formulas on the same variable, ``F(X) ∧ G(X)``."""

    left: Attention
    right: Attention
    _term = "({left} ⊙ {right})"


@_node
class Aggregate(Truth):
    """``A_q(α)``: quantify the attention's variable away (Lemma 3.1)."""

    quantifier: Quantifier
    input: Attention
    _term = "A_{quantifier}({input})"


class Truths(Node):
    """Several truths in one node, one per predicate of ``predicates`` or per group of them: an
    open question's candidates kept cheap to compile and plan. A :class:`Program` candidate may be
    one (counting as ``n_truths``); :class:`AnyOf` and :class:`AllOf` reduce one to a truth."""

    predicates: tuple[Predicate, ...]

    @property
    def n_truths(self) -> int:
        """How many truths the node stands for."""
        return len(self.predicates)

    def truths(self) -> tuple[Truth, ...]:
        """The truths this node stands for, as separate nodes (for printing and testing)."""
        return tuple(map(self._one, self.predicates))

    def _one(self, p: Predicate) -> Truth:  # the truth of predicate p (of _PI: for printing)
        raise NotImplementedError


@_node
class AggregateEach(Truths):
    """``[A_q(Filter_π[α]) for π in predicates]``; with ``negate``, ``[A_q(α ⊙ Neg[Filter_π[1]])]``
    ("some attended object is not π" for ``A_∃``, what "all of them are π" negates)."""

    quantifier: Quantifier
    predicates: tuple[Predicate, ...]
    input: Attention
    negate: bool = False

    def _one(self, p: Predicate) -> Truth:
        body = Conjoin(self.input, Neg(Filter(p, Top()))) if self.negate else Filter(p, self.input)
        return Aggregate(self.quantifier, body)

    def term(self) -> str:
        return self._one(_PI).term()


@_node
class Pairwise(Truths):
    """``[a_k ∧ b_k]``: the truths of two :class:`AggregateEach` over the same predicates, paired
    (``AnyOf`` of it over X and Y: "X and Y share a value", GQA's two-input ``same``)."""

    left: AggregateEach
    right: AggregateEach
    _term = "({left} ∧ {right})"

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

    GQA's ``common`` (``same T`` of two object sets for every attribute type T). Only a
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
    _term = "∨_{{π ∈ T}} {each}"

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

    def _one(self, p: Predicate) -> Truth:
        return self.each._one(p)


@_node
class Not(Truth):
    """``1 - s``."""

    input: Truth
    _term = "¬{input}"


@_node
class _Junction(Truth):
    """Independent closed formulas joined by :attr:`symbol`."""

    inputs: tuple[Truth, ...]
    symbol = ""
    _term = "({inputs})"


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
    ``predicates`` (true when no object is attended); GQA's one-input ``same``. The engine computes
    ``1 - e · Π_π (s_π / e)`` from ``e = A_∃(α)`` and ``s_π`` = :attr:`each`, the values
    independent given that someone is attended (``docs/exactness.md``).

        >>> same = AllSame((Predicate("red"), Predicate("blue")), Filter(Predicate("cup"), Top()))
        >>> print(Program.yes_no(same).formula())
        ∃π ∈ {red, blue}: ∄X: cup(X) ∧ ¬π(X)
    """

    predicates: tuple[Predicate, ...]
    input: Attention
    _term = "AllSame_{{π ∈ {predicates}}}[{input}]"

    @property
    def each(self) -> AggregateEach:
        """``[A_∃(α ⊙ Neg[Filter_π[1]]) for π]``: someone attended lacks π."""
        return self.children()[1]

    def children(self):
        return memo(self, "_children", lambda: (Aggregate(Quantifier.EXISTS, self.input),
                                                AggregateEach(Quantifier.EXISTS, self.predicates, self.input, True)))

    def _one(self, p: Predicate) -> Truth:
        return Aggregate(Quantifier.NOT_EXISTS, Conjoin(self.input, Neg(Filter(p, Top()))))

    def expanded(self) -> Truth:
        return Or(tuple(map(self._one, self.predicates)))


def _shown(names, limit: int = 6) -> str:
    names = [str(p) for p in names]
    return "{" + ", ".join(names[:limit]) + (f", … ({len(names)})" if len(names) > limit else "") + "}"


@_node
class Program(_Hashed):
    """A question as DFOL: one yes/no truth (``labels is None``), or candidate truths
    (:class:`Truths` nodes among them) with ``labels`` naming each in order. ``focus`` is an
    optional attention the engine also returns (the objects the answer is about)."""

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

    def __eq__(self, other) -> bool:
        # by shape and labels, which make it again: no node read (a filled program's stay unmade)
        if not isinstance(other, Program):
            return NotImplemented
        if self.labels != other.labels:
            return False
        mine, theirs = self.shape(), other.shape()
        if mine is not None and theirs is not None:
            return mine == theirs
        return self.candidates == other.candidates and self.focus == other.focus

    def _structural_hash(self) -> int:
        shape = self.shape()
        return _Hashed._structural_hash(self) if shape is None else hash((shape, self.labels))

    @property
    def n_candidates(self) -> int:
        return 1 if self.labels is None else len(self.labels)

    def truths(self) -> tuple[Truth, ...]:
        """Every candidate as a separate truth (:class:`Truths` expanded), in label order."""
        return tuple(t for c in self.candidates for t in (c.truths() if isinstance(c, Truths) else (c,)))

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
        """The distinct predicates, in order of first use (computed once)."""
        return self._walked().predicates

    def shape(self) -> "Shape | None":
        """The program up to its predicates (:class:`Shape`), made by the walk that makes
        :meth:`nodes`; ``None`` when a node is of a class the shape does not know (a subclass).

            >>> red, blue = Predicate("red"), Predicate("blue")
            >>> one = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Filter(blue, Top()))))
            >>> two = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(blue, Filter(red, Top()))))
            >>> same = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Filter(red, Top()))))
            >>> one.shape().key == two.shape().key != same.shape().key, one.shape().unary
            (True, (Predicate(name='blue', arity=1, kind=''), Predicate(name='red', arity=1, kind='')))
        """
        return self._walked().shape

    def refilled(self, unary: dict[int, Predicate], binary: dict[int, Predicate]) -> "Program":
        """This program with ``unary[i]`` for ``shape().unary[i]`` and ``binary[j]`` for
        ``shape().binary[j]``, made without a walk (:class:`FilledProgram`). The caller keeps the
        shape: no new predicate equal to another of the program's (equal nodes would merge).

            >>> red, blue, cup = Predicate("red"), Predicate("blue"), Predicate("cup")
            >>> one = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Filter(cup, Top()))))
            >>> print(one.refilled({one.shape().unary.index(red): blue}, {}).term())
            A_∃(Filter_blue[Filter_cup[1]])
        """
        if self.shape() is None:
            raise ProgramStructureError("a program with a node of a kind its shape does not know cannot be refilled")
        return FilledProgram(self, unary, binary, self.labels)

    def _walked(self) -> "_Walk":
        return memo(self, "_walk", lambda: _walk(self))

    def repeated_predicates(self) -> frozenset[Predicate]:
        """The predicates whose ground atoms can occur twice in one candidate's grounding: used at
        two places of its formula, or under a ``Relate``. Making them certain makes it read-once.

            >>> chair, on = Predicate("chair"), Predicate("on", arity=2)
            >>> hop = Program.yes_no(Aggregate(Quantifier.EXISTS, Relate.of(on, Quantifier.EXISTS, Filter(chair, Top()))))
            >>> sorted(p.name for p in hop.repeated_predicates()), hop.read_once
            (['chair'], False)
        """
        return memo(self, "_repeated", lambda: _structural_repeats(self))

    @property
    def read_once(self) -> bool:
        """True when no candidate's grounding can repeat a ground atom, in any scene: the
        engine's answers are then exact probabilities (``dfol.md``, soundness, clause 2)."""
        return not self.repeated_predicates()

    def term(self) -> str:
        """The DFOL term, e.g. ``A_∃(Filter_Chair[Relate_{Left,∀}[1]])``."""
        return self._listing(lambda node: node.term())

    def formula(self) -> str:
        """The equivalent FOL formula, e.g. ``∃X ∀Y: Chair(X) ∧ Left(X, Y)``."""
        return self._listing(formula)

    def _listing(self, render) -> str:
        if self.labels is None:
            return render(self.candidates[0])
        parts, k = [], 0
        for c in self.candidates:
            n = c.n_truths if isinstance(c, Truths) else 1
            index = "T" if isinstance(c, AnyOfGroups) else "π"  # a label names a group T of values π
            named = f"{index} ∈ {_shown(self.labels[k:k + n])}" if isinstance(c, Truths) else self.labels[k]
            parts.append(f"{named}: {render(c)}")
            k += n
        return "[" + ", ".join(parts) + "]"

    def __str__(self) -> str:
        return self.term()


class FilledProgram(Program):
    """A program filled into another's shape (:meth:`Program.refilled`): its shape, predicates, labels
    (all that planning reads) and repeated predicates (the other's, renamed) known at once, its
    nodes made when first asked for."""

    def __init__(self, like: Program, unary: dict, binary: dict, labels):
        # frozen: written once, here, as the dataclass's own __init__ would
        shape = like.shape()
        self.__dict__.update(labels=labels, _like=like, _unary=unary, _binary=binary, _shape=Shape(
            shape.key, _replaced(shape.unary, unary), _replaced(shape.binary, binary)))

    @property
    def candidates(self) -> tuple:
        nodes = self._walked().nodes
        return tuple([nodes[i] for i in self._shape.key[-1][0]])

    @property
    def focus(self):
        focus = self._shape.key[-1][1]
        return self._walked().nodes[focus] if focus >= 0 else None

    def _walked(self) -> "_Walk":
        return memo(self, "_walk", lambda: _Walk(_rebuilt(self._shape, self._like._walked().nodes, self._unary,
                                                          self._binary), self.predicates(), self._shape))

    def shape(self) -> "Shape":
        return self._shape

    def predicates(self) -> tuple[Predicate, ...]:
        like = self._like.predicates()  # a scan in C for each replaced one: a few among up to 1,232
        return memo(self, "_predicates", lambda: _replaced(like, {
            like.index(old): new for old, new in self._swapped().items()}))

    def repeated_predicates(self) -> frozenset[Predicate]:
        return memo(self, "_repeated", self._renamed_repeats)

    def _renamed_repeats(self) -> frozenset:
        predicates = self.predicates()
        if len(set(predicates)) < len(predicates):  # two made one: not the skeleton's shape
            return _structural_repeats(self)
        swapped = self._swapped()  # the skeleton's, renamed: one shape repeats the same atoms
        return frozenset(swapped.get(p, p) for p in self._like.repeated_predicates())

    def _swapped(self) -> dict:
        like = self._like.shape()
        return {**{like.unary[i]: p for i, p in self._unary.items()},
                **{like.binary[j]: p for j, p in self._binary.items()}}

    def refilled(self, unary: dict[int, Predicate], binary: dict[int, Predicate]) -> "Program":
        # the skeleton's local numbers: filled into the skeleton at once, nothing made
        return FilledProgram(self._like, {**self._unary, **unary}, {**self._binary, **binary}, self.labels)

    def __reduce__(self):
        return Program, (self.candidates, self.labels, self.focus)  # what travels is the program made whole


def _replaced(values: tuple, at: dict) -> tuple:
    values = list(values)
    for i, value in at.items():
        values[i] = value
    return tuple(values)


_PI = Predicate("π")  # stands for each predicate of a Truths node when printed

# --- one walk: the node order, the predicates and the shape ------------------------------
# Equal but distinct subterms merge by their key entry (equal exactly when the nodes are); a node
# of a class the walk does not know (a subclass) merges by its own equality, leaving no shape.


class Shape(NamedTuple):
    """A program up to its predicates. ``key`` has one entry per node of :meth:`Program.nodes`:
    its kind, its other fields, its inputs by position and its predicates by local number (unary
    and binary apart, in order of first use), then the candidates' and the focus' (-1: none)."""

    key: tuple
    unary: tuple[Predicate, ...]
    binary: tuple[Predicate, ...]


class _Walk(NamedTuple):
    nodes: tuple
    predicates: tuple
    shape: "Shape | None"


def number_predicates(index: dict, predicates: tuple) -> range | tuple[int, ...]:
    """The local numbers of ``predicates`` in ``index`` (predicate -> number), new ones numbered
    next in order of first use: a run as a ``range``, else a tuple (one way, as a key compares)."""
    keys = dict.fromkeys(predicates)
    base, k = len(index), len(predicates)
    if len(keys) == k and keys.keys().isdisjoint(index.keys()):  # all new (the usual case)
        index.update(zip(keys, range(base, base + k)))
        return range(base, base + k)
    new = list(filterfalse(index.__contains__, keys))  # distinct, in order
    index.update(zip(new, range(base, base + len(new))))
    numbers = list(map(index.__getitem__, predicates))
    first = numbers[0]
    return range(first, first + k) if numbers == list(range(first, first + k)) else tuple(numbers)


def _walk(program: "Program") -> _Walk:
    position: dict[int, int] = {}  # id(node) -> position in the order of it, or of the equal node there
    merged: dict = {}  # entry -> position
    order: list[Node] = []
    key: list = []
    unary: dict = {}
    binary: dict = {}
    used: dict = {}  # every predicate, in order of first use
    known = True
    for root in program.candidates + ((program.focus,) if program.focus is not None else ()):
        # depth first, each node after its inputs, a node met again (by identity) not walked again;
        # a node pushed back below its missing inputs is ready when it comes up again
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
                used.update(dict.fromkeys(_own_predicates(node, (_UNARY, _UNARIES, _ATOMS))))
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


def _base(node):
    return next((c for c in type(node).__mro__ if c in _SPECS), None)


def _own_predicates(node, roles: tuple) -> list:
    """The predicates of ``node``'s fields of ``roles``, as its class's base names them."""
    found = []
    for name, role in _SPECS.get(_base(node), ()):
        value = getattr(node, name)
        if role in roles:
            found += value if role is _UNARIES else [value] if role is _UNARY else [a.predicate for a in value]
    return found


def _rebuilt(shape: Shape, like: tuple, unary: dict, binary: dict) -> tuple:
    """``like``'s nodes, made again where ``shape``'s predicates are replaced (the walk's inverse)."""
    nodes: list = []
    new: list = []  # whether each node was made again
    for entry, old in zip(shape.key, like):
        kind, values, again = entry[0], [], False
        for (name, role), value in zip(_SPECS[kind], entry[1:]):
            if role is _NODE:
                again, value = again or new[value], nodes[value]
            elif role is _NODES:
                again, value = again or any(new[i] for i in value), tuple([nodes[i] for i in value])
            elif role is _UNARY:
                again, value = again or value in unary, shape.unary[value]
            elif role is _UNARIES and not unary.keys().isdisjoint(value):
                again, value = True, tuple([shape.unary[i] for i in value])
            elif role is _ATOMS and any(p in binary for p, _ in value):
                again, value = True, tuple([Atom(shape.binary[p], reverse) for p, reverse in value])
            elif role is not _VALUE:  # predicates not replaced: the old node's own
                value = old.__dict__[name]
            values.append(value)
        nodes.append(kind(*values) if again else old)
        new.append(again)
    return tuple(nodes)


# --- structural read-once analysis ------------------------------------------------------
# How often each predicate is used in one candidate's grounding, capped at 2, node by node: a
# relate's input counts twice (once per object of its variable), the shared inputs of a
# per-predicate node's truths once per truth, and a predicate listed twice among them twice.


def _add(parts: list, own=()) -> dict:
    """The uses of ``parts``, ``(uses, times)`` pairs, and one of each of ``own``, added (capped at 2)."""
    out: dict = {}
    for uses, k in parts:
        for p, n in uses.items():
            out[p] = min(2, out.get(p, 0) + n * k)
    for p in own:
        out[p] = min(2, out.get(p, 0) + 1)
    return out


def _in_truths(each, predicates, truths: int, of: dict) -> dict:
    """The uses of one formula of ``truths`` of ``each``'s truths over ``predicates``, per side."""
    sides = 1 if isinstance(each, AggregateEach) else 2  # a Pairwise's truth reads its own on both
    return _add([(of[each], truths)], list(predicates) * sides)


def _structural_repeats(program: "Program") -> frozenset:
    of: dict = {}  # the uses under each node
    for node in program.nodes():
        if isinstance(node, (AnyOf, AllOf, AllSame)):  # a per-predicate node's truths in one formula
            of[node] = _in_truths(node.each, node.each.predicates, node.each.n_truths, of)
            continue
        base = _base(node)  # all below a kind of its own counted twice: the engine decides
        times = 2 if base is None or base is Relate else 1
        of[node] = _add([(of[c], times) for c in node.children()], _own_predicates(node, (_UNARY, _ATOMS)))
    found: list[dict] = []  # the uses of each candidate formula
    for entry in program.candidates:
        if isinstance(entry, AnyOfGroups):  # one candidate per group: a disjunction of its truths
            ends = [0, *accumulate(entry.sizes)]
            found += [_in_truths(entry.each, entry.each.predicates[a:b], b - a, of)
                      for a, b in zip(ends, ends[1:])]
        elif isinstance(entry, Truths):  # one candidate per truth, alike but for its own predicate
            found.append(_in_truths(entry, set(entry.predicates), 1, of))
        else:
            found.append(of[entry])
    return frozenset(p for uses in found for p, n in uses.items() if n > 1)

# --- FOL rendering -------------------------------------------------------------------
# ∃ and ∀ are pulled to the front (prenex form: Q X (A ∧ Q' Y B) = Q X Q' Y (A ∧ B) over a
# non-empty domain); ∄ and ¬ keep their scope, written in place.


def _render(prefix: list[str], conjuncts: list[str]) -> str:
    body = " ∧ ".join(conjuncts) if conjuncts else "⊤"
    return f"{' '.join(prefix)}: {body}" if prefix else body


def _attention(node: Attention, var: str, names: Iterator[str]) -> tuple[list[str], list[str]]:
    """The quantifier prefix and the conjuncts of an attention on ``var``."""
    if isinstance(node, Top):
        return [], []
    if isinstance(node, Conjoin):
        (p1, c1), (p2, c2) = _attention(node.left, var, names), _attention(node.right, var, names)
        return p1 + p2, c1 + c2
    if not isinstance(node, (Filter, Neg, Relate)):
        raise ProgramStructureError(f"not an attention node: {node!r:.60}")
    y = next(names) if isinstance(node, Relate) else var  # a relate's input is on a variable of its own
    prefix, conj = _attention(node.input, y, names)
    if isinstance(node, Filter):
        return prefix, [f"{node.predicate}({var})"] + conj
    if isinstance(node, Relate):
        prefix = [f"{node.quantifier.symbol}{y}"] + prefix
        conj = [f"{a.predicate}({y}, {var})" if a.reverse else f"{a.predicate}({var}, {y})"
                for a in node.atoms] + conj
        if node.quantifier is not Quantifier.NOT_EXISTS:
            return prefix, conj
        return [], [f"({_render(prefix, conj)})"]  # ∄ keeps its scope
    inner = _render(prefix, conj)
    return [], [f"¬{inner}" if not prefix and len(conj) == 1 else f"¬({inner})"]


def _truth(node: Truth, names: Iterator[str]) -> str:
    if isinstance(node, Aggregate):
        x = next(names)
        prefix, conj = _attention(node.input, x, names)
        return _render([f"{node.quantifier.symbol}{x}"] + prefix, conj)
    if isinstance(node, Not):
        return f"¬({_truth(node.input, names)})"
    if isinstance(node, _Junction):
        parts = [_truth(t, names) for t in node.inputs]
        return parts[0] if len(parts) == 1 else f" {node.symbol} ".join(f"({p})" for p in parts)
    if isinstance(node, (AnyOf, AllOf, AllSame)):
        one = node._one(_PI) if isinstance(node, AllSame) else node.each._one(_PI)
        q = "∀" if isinstance(node, AllOf) else "∃"
        return f"{q}π ∈ {_shown(node.each.predicates)}: {_truth(one, names)}"
    if isinstance(node, Truths):  # its k-th truth, the predicate written as π (in a group T)
        inner = _truth(node._one(_PI), names)
        return f"∃π ∈ T: {inner}" if isinstance(node, AnyOfGroups) else inner
    raise ProgramStructureError(f"not a truth node: {node!r:.60}")


def formula(node: Node) -> str:
    """FOL rendering of a truth (closed) or attention (free variable ``X``) node."""
    names = chain("XYZWVU", (f"X{i}" for i in count(1)))
    if isinstance(node, Attention):
        return _render(*_attention(node, next(names), names))
    return _truth(node, names)
