"""Why an answer: per step, the objects the program attends to; per fact, how much it moves the answer.

:func:`explain` runs one program on one scene of an oracle and returns an :class:`Explanation`:

* ``steps``: every attention step of the program (each distinct attention node, inputs first), its
  DFOL term and the ``k`` objects with the most attention, with that attention;
* ``facts``: the facts (a predicate of some objects, with the oracle's probability) that move the
  answer's probability most, each with ``effect`` = P(answer) − P(answer without the fact).

How a fact's effect is measured (``method``):

* ``"remove"`` (the default): exactly, by leaving the fact out (its probability set to 0) and
  answering again: every such scene runs as one batch of the same engine. It is what "the answer
  rests on this fact" means, and it sees saturation: of two red objects under ``∃``, removing
  either changes nothing, which a gradient at the current tables overstates. Exact with respect
  to the engine given (its fast path, or ``Engine(exact=True)``'s exact probabilities).
* ``"gradient"``: ``p · ∂P(answer)/∂p`` at the current tables, the first-order estimate of the same
  removal, from one backward pass: for scenes with many facts, where a batch per fact costs too much.

    >>> import torch
    >>> from nablafol import Aggregate, Engine, Filter, Predicate, Program, Quantifier, Relate, TableOracle, Top
    >>> cup, red, on = Predicate("cup"), Predicate("red"), Predicate("on", arity=2)
    >>> program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(cup, Relate.of(on, Quantifier.EXISTS,
    ...                                                                            Filter(red, Top())))))
    >>> oracle = TableOracle([{cup: [0.9, 0.1, 0.0], red: [0.0, 0.2, 0.95],
    ...                        on: [[0.0, 0.1, 0.8], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]}])
    >>> why = explain(Engine(), program, oracle, k=1, facts=3)
    >>> why.answer, round(why.probability, 3)  # 0.9 · (1 - (1 - 0.1 · 0.2)(1 - 0.8 · 0.95))
    ('yes', 0.688)
    >>> last = why.steps[-1]
    >>> last.term, [(o, round(a, 3)) for o, a in last.objects]  # the cup on something red: object 0
    ('Filter_cup[Relate_{on,∃}[Filter_red[1]]]', [(0, 0.688)])
    >>> [(f.predicate.name, f.objects, round(f.effect, 3)) for f in why.facts]
    [('cup', (0,), 0.688), ('on', (0, 2), 0.67), ('red', (2,), 0.67)]
"""
from __future__ import annotations

from dataclasses import dataclass, field
import torch

from .errors import ShapeError
from .ir import Aggregate, Attention, Predicate, Program, Quantifier
from .oracle import Oracle, Requests, TableOracle, scene_sizes

__all__ = ["explain", "Explanation", "Step", "Fact", "METHODS"]

METHODS = ("remove", "gradient")


@dataclass(frozen=True)
class Step:
    """One attention step: its DFOL ``term`` and its ``objects``, ``((object, attention), ...)``
    most attended first (object ids where the oracle names them, else indices)."""

    index: int
    term: str
    objects: tuple


@dataclass(frozen=True)
class Fact:
    """A ground atom of the scene: ``predicate`` of ``objects`` with the oracle's ``probability``,
    and ``effect``: how much the answer's probability falls without it (negative: it rises)."""

    predicate: Predicate
    objects: tuple
    probability: float
    effect: float

    def to_dict(self) -> dict:
        return {"predicate": self.predicate.name, "kind": self.predicate.kind, "objects": list(self.objects),
                "probability": self.probability, "effect": self.effect}


@dataclass(frozen=True)
class Explanation:
    """Why a program answered as it did on one scene (see the module docstring)."""

    answer: str
    probability: float
    method: str
    steps: tuple = ()
    facts: tuple = ()
    object_ids: tuple = field(default=(), repr=False)

    def to_dict(self) -> dict:
        return {"answer": self.answer, "probability": self.probability, "method": self.method,
                "steps": [{"step": s.index, "term": s.term,
                           "objects": [{"object": o, "attention": a} for o, a in s.objects]} for s in self.steps],
                "facts": [f.to_dict() for f in self.facts]}

    def lines(self) -> list[str]:
        """The explanation as ``nablafol answer --explain`` prints it."""
        how = "leaving each fact out" if self.method == "remove" else "p · gradient, a first-order estimate"
        out = [f"why {self.answer!r} ({self.probability:.3f}):"]
        for s in self.steps:
            shown = ", ".join(f"{o} {a:.2f}" for o, a in s.objects) or "none"
            out.append(f"  step {s.index} {s.term}: {shown}")
        out.append(f"  facts moving it most ({how}):")
        for f in self.facts:
            out.append(f"    {f.predicate.name}({', '.join(map(str, f.objects))}) p={f.probability:.3f}: "
                       f"{f.effect:+.3f}")
        return out


def explain(engine, program: Program, oracle: Oracle, scene: int = 0, *, k: int = 3, facts: int = 5,
            method: str = "remove") -> Explanation:
    """Explain ``program``'s answer on scene ``scene`` of ``oracle`` by ``engine``: the ``k`` most
    attended objects of every attention step, and the ``facts`` facts whose removal moves the
    answer's probability most (by ``method``: see the module docstring)."""
    if method not in METHODS:
        raise ShapeError(f"explain: method must be one of {', '.join(METHODS)}, got {method!r}")
    if not (isinstance(k, int) and k >= 0 and isinstance(facts, int) and facts >= 0):
        raise ShapeError(f"explain: k and facts are counts (0 or more), got k={k!r}, facts={facts!r}")
    sizes = scene_sizes(oracle.num_objects)
    if not 0 <= scene < sizes.shape[0]:
        raise ShapeError(f"explain: scene {scene} out of range for an oracle of {sizes.shape[0]} scenes")
    n = int(sizes[scene])
    ids = tuple(oracle.object_ids(scene)) if hasattr(oracle, "object_ids") else tuple(range(n))
    tables = _scene_tables(program, oracle, scene, n)
    with torch.no_grad():
        answers = engine([program], TableOracle([tables], num_objects=[n]))
    answer = answers.predictions()[0]
    probability = float(answers.candidate_probabilities(0)[answer])
    steps = _steps(engine, program, tables, n, k, ids)
    effects = _removal_effects(engine, program, answer, tables, n) if method == "remove" else \
        _gradient_effects(engine, program, answer, tables, n)
    effects.sort(key=lambda e: (-abs(e[3]), e[0], e[1]))  # ties in a fixed order: by predicate, then objects
    named = tuple(Fact(p, tuple(ids[i] for i in at), prob, effect) for p, at, prob, effect in effects[:facts])
    return Explanation(answer, probability, method, steps, named, ids)


def _scene_tables(program: Program, oracle: Oracle, scene: int, n: int) -> dict:
    """The oracle's probabilities of the program's predicates on one scene, as plain tables."""
    tables = {}
    with torch.no_grad():
        for arity, ask in ((1, oracle.unary), (2, oracle.binary)):
            predicates = [p for p in program.predicates() if p.arity == arity]
            if predicates:
                rows = ask(Requests.build([scene] * len(predicates), predicates,
                                          device=scene_sizes(oracle.num_objects).device))
                for p, row in zip(predicates, rows):
                    cut = row[:n] if arity == 1 else row[:n, :n]
                    tables[p] = cut.exp().double().cpu().clamp(0.0, 1.0)
    return tables


def _steps(engine, program: Program, tables: dict, n: int, k: int, ids: tuple) -> tuple:
    """Each attention node's attention, all in one batch (each a program with that node as focus)."""
    nodes = [node for node in program.nodes() if isinstance(node, Attention)]
    if not nodes:
        return ()
    probes = [Program.yes_no(Aggregate(Quantifier.EXISTS, node), focus=node) for node in nodes]
    with torch.no_grad():
        focus = engine(probes, TableOracle([tables], num_objects=[n])).focus[:, :n].exp()
    steps = []
    for index, (node, row) in enumerate(zip(nodes, focus)):
        values, at = row.topk(min(k, n))
        steps.append(Step(index, node.term(), tuple((ids[int(i)], float(v)) for v, i in zip(values, at) if v > 0)))
    return tuple(steps)


def _answer_probability(answers, answer: str) -> torch.Tensor:
    """``(P,)``: the probability of ``answer`` in each program's answers (yes/no: P(no) exactly)."""
    labels = answers.labels[0]
    if labels is None:
        column = answers.log_probs[:, 0] if answer == "yes" else answers.log_complement[:, 0]
    else:
        column = answers.log_probs[:, labels.index(answer)]
    return column.exp()


def _facts(tables: dict) -> list:
    """``(predicate, objects)`` of every atom with a probability above 0."""
    return [(p, tuple(int(i) for i in at)) for p, t in tables.items() for at in (t > 0).nonzero().tolist()]


def _removal_effects(engine, program: Program, answer: str, tables: dict, n: int) -> list:
    """Every fact's exact effect: the scene as it is, then once per fact with that fact at 0, one batch."""
    found = _facts(tables)
    scenes = [tables]
    for p, at in found:
        changed = dict(tables)
        changed[p] = tables[p].clone()
        changed[p][at] = 0.0
        scenes.append(changed)
    with torch.no_grad():
        answers = engine([program] * len(scenes), TableOracle(scenes, num_objects=[n] * len(scenes)))
    p_answer = _answer_probability(answers, answer).tolist()
    return [(p, at, float(tables[p][at]), p_answer[0] - p_answer[1 + r]) for r, (p, at) in enumerate(found)]


def _gradient_effects(engine, program: Program, answer: str, tables: dict, n: int) -> list:
    """Every fact's ``p · ∂P(answer)/∂p``, from one backward pass."""
    leaves = {p: t.clone().requires_grad_() for p, t in tables.items()}
    answers = engine([program], TableOracle([leaves], num_objects=[n]))
    grads = torch.autograd.grad(_answer_probability(answers, answer).sum(), list(leaves.values()), allow_unused=True)
    slope = {p: torch.zeros_like(t) if g is None else g for (p, t), g in zip(leaves.items(), grads)}
    return [(p, at, float(tables[p][at]), float(tables[p][at] * slope[p][at])) for p, at in _facts(tables)]

