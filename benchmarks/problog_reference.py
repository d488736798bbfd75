"""DFOL programs and probability tables as ProbLog programs: an independent exact solver.

Every ground atom of a table becomes a ProbLog probabilistic fact (``0.3::u1(4).``; certain
atoms become plain facts, impossible ones are left out), and the program's formula becomes
rules, one ProbLog predicate per IR node: an attention node is ``aK(X)``, a relate's body
``bK(X, Y)``, a closed formula ``tK``. ProbLog grounds the rules and compiles them into a
circuit (knowledge compilation): its answer is the exact probability of the formula, with
no read-once assumption. On read-once programs the engine must return the same number.

    >>> from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Top
    >>> red = Predicate("red")
    >>> p = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(red, Top())))
    >>> print(to_problog(p, {red: [0.5, 1.0]}, 2))
    obj(0). obj(1).
    0.5::p0(0). p0(1).
    a0(X) :- obj(X).
    a1(X) :- p0(X), a0(X).
    t2 :- a1(X).
    query(t2).
    >>> round(problog_probabilities(p, {red: [0.5, 0.5]}, 2)[0], 12)
    0.75
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from nablafol.ir import (Aggregate, And, Conjoin, Filter, Neg, Not, Or, Predicate, Program, Quantifier, Relate,
                         Shorthand, Top)


def _fact(name: str, args: tuple, prob: float) -> str:
    atom = f"{name}({', '.join(str(a) for a in args)})"
    if prob >= 1.0:
        return f"{atom}."
    return f"{float(prob)!r}::{atom}."


class _Writer:
    """Emits one ProbLog predicate per distinct IR node (shared subterms are written once)."""

    def __init__(self, names: dict[Predicate, str]):
        self.names = names
        self.rules: list[str] = []
        self.memo: dict = {}
        self.count = 0

    def _new(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count - 1}"

    def attention(self, node) -> str:
        if node in self.memo:
            return self.memo[node]
        if isinstance(node, Top):
            name = self._new("a")
            self.rules.append(f"{name}(X) :- obj(X).")
        elif isinstance(node, Filter):
            inner = self.attention(node.input)
            name = self._new("a")
            self.rules.append(f"{name}(X) :- {self.names[node.predicate]}(X), {inner}(X).")
        elif isinstance(node, Neg):
            inner = self.attention(node.input)
            name = self._new("a")
            self.rules.append(f"{name}(X) :- obj(X), \\+{inner}(X).")
        elif isinstance(node, Conjoin):
            left, right = self.attention(node.left), self.attention(node.right)
            name = self._new("a")
            self.rules.append(f"{name}(X) :- {left}(X), {right}(X).")
        elif isinstance(node, Relate):
            inner = self.attention(node.input)
            body = self._new("b")
            atoms = ", ".join(f"{self.names[a.predicate]}({'Y, X' if a.reverse else 'X, Y'})" for a in node.atoms)
            self.rules.append(f"{body}(X, Y) :- {atoms}, {inner}(Y).")
            name = self._new("a")
            if node.quantifier is Quantifier.EXISTS:
                self.rules.append(f"{name}(X) :- {body}(X, Y).")
            elif node.quantifier is Quantifier.NOT_EXISTS:
                some = self._new("e")
                self.rules.append(f"{some}(X) :- {body}(X, Y).")
                self.rules.append(f"{name}(X) :- obj(X), \\+{some}(X).")
            else:  # ∀Y: body(X, Y), i.e. no Y where it fails
                fails = self._new("c")
                self.rules.append(f"{fails}(X) :- obj(X), obj(Y), \\+{body}(X, Y).")
                self.rules.append(f"{name}(X) :- obj(X), \\+{fails}(X).")
        else:
            raise TypeError(f"no ProbLog translation for attention node {type(node).__name__}")
        self.memo[node] = name
        return name

    def truth(self, node) -> str:
        if isinstance(node, Shorthand):
            node = node.expanded()
        if node in self.memo:
            return self.memo[node]
        if isinstance(node, Aggregate):
            inner = self.attention(node.input)
            name = self._new("t")
            if node.quantifier is Quantifier.EXISTS:
                self.rules.append(f"{name} :- {inner}(X).")
            elif node.quantifier is Quantifier.NOT_EXISTS:
                some = self._new("e")
                self.rules.append(f"{some} :- {inner}(X).")
                self.rules.append(f"{name} :- \\+{some}.")
            else:
                fails = self._new("c")
                self.rules.append(f"{fails} :- obj(X), \\+{inner}(X).")
                self.rules.append(f"{name} :- \\+{fails}.")
        elif isinstance(node, Not):
            inner = self.truth(node.input)
            name = self._new("t")
            self.rules.append(f"{name} :- \\+{inner}.")
        elif isinstance(node, And):
            inner = [self.truth(t) for t in node.inputs]
            name = self._new("t")
            self.rules.append(f"{name} :- {', '.join(inner)}.")
        elif isinstance(node, Or):
            inner = [self.truth(t) for t in node.inputs]
            name = self._new("t")
            self.rules.extend(f"{name} :- {t}." for t in inner)
        else:
            raise TypeError(f"no ProbLog translation for truth node {type(node).__name__}")
        self.memo[node] = name
        return name


def to_problog(program: Program, tables: Mapping[Predicate, object], n_objects: int) -> str:
    """The ProbLog text: facts of ``tables`` over ``n_objects`` objects, rules, one query per candidate."""
    return _translate(program, tables, n_objects)[0]


def _translate(program, tables, n_objects) -> tuple[str, list[str]]:
    preds = program.predicates()
    names = {p: f"p{i}" for i, p in enumerate(preds)}  # GQA names have spaces: ProbLog gets short ones
    lines = [" ".join(f"obj({i})." for i in range(n_objects))]
    for p in preds:
        table = np.asarray(tables[p], dtype=np.float64)
        facts = [_fact(names[p], idx, table[idx]) for idx in np.ndindex(table.shape) if table[idx] > 0.0]
        if facts:
            lines.append(" ".join(facts))
        else:  # no true atom at all: declare the predicate so rules that use it fail instead of erroring
            lines.append(f"{names[p]}({', '.join(['none'] * p.arity)}) :- fail.")
    writer = _Writer(names)
    queries = [writer.truth(t) for t in program.truths()]
    lines.extend(writer.rules)
    lines.extend(f"query({q})." for q in dict.fromkeys(queries))
    return "\n".join(lines), queries


def knowledge_compiler() -> str:
    """The circuit ProbLog compiles to here: ``sdd`` when PySDD is installed, else ``ddnnf`` (dsharp)."""
    try:
        import pysdd  # noqa: F401
    except ImportError:
        return "ddnnf"
    return "sdd"


def problog_probabilities(program: Program, tables: Mapping[Predicate, object], n_objects: int,
                          compiler: str | None = None) -> list[float]:
    """Exact probability of each candidate of ``program``, computed by ProbLog.

    ``compiler`` names ProbLog's knowledge compiler (``sdd``, ``ddnnf``); default: :func:`knowledge_compiler`.
    """
    from problog import get_evaluatable
    from problog.program import PrologString

    text, queries = _translate(program, tables, n_objects)
    result = get_evaluatable(compiler or knowledge_compiler()).create_from(PrologString(text)).evaluate()
    by_name = {str(term): float(p) for term, p in result.items()}
    return [by_name[name] for name in queries]
