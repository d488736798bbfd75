"""Constrained decoding: which units may come next, so that every program decoded parses.

Three things are checked at every unit, none of them restated here:

* **syntax**: Lark's interactive LALR parser over ``dsl/grammar/gqa.lark`` (the file the dsl
  parses with) says which terminals may come next;
* **argument shapes**: each operation field's forms and their readings come from the dsl
  (:mod:`.signatures`);
* **structure**: a dependency points to an earlier step that yields what the step consumes,
  and the program can still end well (every step but the last used, the last yielding an
  answer) within ``max_steps`` steps: :class:`StructurePlanner` finds the fewest steps that
  close a program from its open ends, over the operations the decoder can write.

So a decoder that picks any allowed unit, at every point, ends with a program
``nablafol.dsl.parse_program`` accepts (tested over random networks and questions).

    >>> from .units import ProgramUnits
    >>> units = ProgramUnits(["select", "exist", "query", "verify color"], ["name", "cup"], max_steps=3)
    >>> spec = DecodingSpec(units, max_phrase_words=2)
    >>> automaton = ProgramAutomaton(spec, question_length=0)
    >>> sorted(units.names[u] for u in automaton.allowed()[0])     # a program starts with a select
    ['verb:select']
    >>> for name in ["verb:select", "word:cup", "</phrase>", "type:", "->", "verb:query", "word:name", "</phrase>"]:
    ...     automaton.advance(units.id(name))
    >>> sorted(units.names[u] for u in automaton.allowed()[0])     # query has no type
    ['type:']
    >>> automaton.advance(units.id("type:")); sorted(units.names[u] for u in automaton.allowed()[0])
    ['dep:0']
    >>> automaton.advance(units.id("dep:0")); sorted(units.names[u] for u in automaton.allowed()[0])
    ['<end>']
    >>> automaton.advance(units.id("<end>")); automaton.text()
    'select: cup->query: name [0]'
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from lark import Token

from nablafol.dsl import Kind

from .errors import ParserError
from .grammar import interactive_parser, terminals_accepted
from .signatures import FORMS, Signature, step_signatures
from .units import ARROW, CLOSE, END, ProgramUnits

__all__ = ["DecodingSpec", "ProgramAutomaton", "StructurePlanner"]

_O, _B = Kind.OBJECTS, Kind.BOOLEAN
# Units that are one grammar token of fixed text: unit name -> (terminal, text).
_FIXED = {"not(": ("NOT", "not("), ")": ("_RPAR", ")"), "|": ("_BAR", "|"), ",": ("_COMMA", ","),
          "_": ("ANY", "_"), "s": ("ROLE", "s"), "o": ("ROLE", "o"), "?": ("QUESTION", "?")}
# Form slot -> the terminals that fill it.
_SLOT = {"NAME": ("PHRASE", "ANY")}


class StructurePlanner:
    """The fewest steps that close a program, over abstract states ``(open objects, open yes/no,
    objects, yes/no)``: how many steps no later step uses yet, by kind, and how many steps of
    each kind exist (capped at the largest arity: a step needs that many distinct inputs).
    Closing means every step but the last is used and the last yields an answer or yes/no.
    Taking open steps as inputs is never worse than taking used ones, so the plan is exact."""

    def __init__(self, operations):
        self.operations = tuple(sorted({(a, c, y) for a, c, y in operations}, key=lambda o: (o[0], o[1].value,
                                                                                              o[2].value)))
        self.cap = max([a for a, _, _ in self.operations] + [1])
        self._memo: dict[tuple, float] = {}

    def state(self, open_kinds, all_kinds) -> tuple:
        return (sum(k is _O for k in open_kinds), sum(k is _B for k in open_kinds),
                min(sum(k is _O for k in all_kinds), self.cap), min(sum(k is _B for k in all_kinds), self.cap))

    def apply(self, state: tuple, operation, taken_open: int | None = None):
        """``(new state, closes)`` after one more step ``operation = (arity, consumes, yields)``
        taking ``taken_open`` open inputs (default: as many as it can), or None if impossible."""
        arity, consumes, yields = operation
        open_o, open_b, all_o, all_b = state
        if consumes not in (_O, _B) or (all_o if consumes is _O else all_b) < arity:
            return None
        available = open_o if consumes is _O else open_b
        taken = min(arity, available) if taken_open is None else taken_open
        if consumes is _O:
            open_o -= taken
        else:
            open_b -= taken
        if yields is Kind.ANSWER:
            return (open_o, open_b, all_o, all_b), open_o == 0 and open_b == 0
        if yields is _O:
            open_o, all_o = open_o + 1, min(all_o + 1, self.cap)
        else:
            open_b, all_b = open_b + 1, min(all_b + 1, self.cap)
        return (open_o, open_b, all_o, all_b), yields is _B and open_o == 0 and open_b == 1

    def steps_to_close(self, state: tuple, limit: int) -> float:
        """The fewest further steps (at least 1) that close a program from ``state``; ``inf`` when
        more than ``limit`` would be needed (or none can)."""
        key = (state, limit)
        if key not in self._memo:
            self._memo[key] = self._search(state, limit)
        return self._memo[key]

    def _search(self, start: tuple, limit: int) -> float:
        frontier, seen, depth = [start], {start}, 0
        while frontier and depth < limit:
            depth += 1
            following = []
            for state in frontier:
                for operation in self.operations:
                    after = self.apply(state, operation)
                    if after is None:
                        continue
                    new, closes = after
                    if closes:
                        return depth
                    if operation[2] is not Kind.ANSWER and new not in seen:
                        seen.add(new)
                        following.append(new)
            frontier = following
        return math.inf


class DecodingSpec:
    """What the automaton needs of a parser: its units, the signatures of its operation fields
    (grouped by verb), the planner over them and the limits (steps per program, words per phrase)."""

    def __init__(self, units: ProgramUnits, max_phrase_words: int):
        if not (isinstance(max_phrase_words, int) and 1 <= max_phrase_words <= 64):
            raise ParserError(f"max_phrase_words must be a whole number in 1..64, got {max_phrase_words!r}")
        self.units, self.max_phrase_words, self.max_steps = units, max_phrase_words, units.max_steps
        self.by_verb: dict[int, tuple[Signature, ...]] = {}
        for field_ in units.heads:
            found = step_signatures(field_)
            if not found:
                raise ParserError(f"operation {field_!r} is not one the GQA programs know")
            verb = units.verb_unit(field_)
            self.by_verb[verb] = self.by_verb.get(verb, ()) + found
        self.planner = StructurePlanner((s.arity, s.consumes, s.yields)
                                        for found in self.by_verb.values() for s in found)
        if not units.words:
            raise ParserError("the decoder needs at least one word it can write")
        if self.planner.steps_to_close((0, 0, 0, 0), self.max_steps) > self.max_steps:
            raise ParserError(f"the operations {', '.join(units.heads)} cannot write a whole program in "
                              f"{self.max_steps} steps")
        self.fixed = {units.id(name): value for name, value in _FIXED.items()}
        self.by_terminal: dict[str, tuple[int, ...]] = {}
        for unit, (terminal, _) in self.fixed.items():
            self.by_terminal[terminal] = self.by_terminal.get(terminal, ()) + (unit,)
        words = frozenset(units.word_ids())
        close = units.id(CLOSE)
        # inside a phrase: (may add a word, may close) -> allowed units
        self.phrase_sets = {(True, False): words, (True, True): words | {close}, (False, True): frozenset({close})}
        self.end, self.arrow, self.close = units.id(END), units.id(ARROW), close
        self._verbs_memo: dict[tuple, frozenset] = {}

    def feasible(self, state: tuple, signature: Signature, taken_open: int | None, steps_after: int) -> bool:
        """Whether a step of ``signature`` taking ``taken_open`` open inputs leaves a program that
        can close in ``steps_after`` more steps."""
        after = self.planner.apply(state, (signature.arity, signature.consumes, signature.yields), taken_open)
        if after is None:
            return False
        new, closes = after
        if signature.yields is Kind.ANSWER:
            return closes
        return closes or self.planner.steps_to_close(new, steps_after) <= steps_after

    def verbs(self, state: tuple, steps_after: int) -> frozenset:
        """The verb units a step may start with from ``state``."""
        key = (state, steps_after)
        if key not in self._verbs_memo:
            self._verbs_memo[key] = frozenset(
                unit for unit, found in self.by_verb.items()
                if any(self.feasible(state, s, None, steps_after) for s in found))
        return self._verbs_memo[key]


@dataclass
class _Step:
    verb: int
    alive: list                    # signatures still possible for the argument read so far
    head: int                      # where the operation field goes in the text, once its type is read
    position: int = 0              # terminals of the argument read so far
    words: list = field(default_factory=list)
    in_phrase: bool = False
    signature: Signature | None = None  # fixed by the type unit
    deps: list = field(default_factory=list)


def _fills(signature: Signature, position: int, terminal: str) -> bool:
    form = FORMS[signature.form]
    return position < len(form) and terminal in _SLOT.get(form[position], (form[position],))


class ProgramAutomaton:
    """One program being decoded: :meth:`allowed` units (and whether a question word may be
    copied) next, :meth:`advance` by one unit (``word`` is the copied word, for a copy)."""

    def __init__(self, spec: DecodingSpec, question_length: int):
        self.spec, self.question_length = spec, question_length
        self.parser = interactive_parser()
        self.kinds: list[Kind] = []       # what each finished step yields
        self.open: set[int] = set()       # finished steps no later step uses yet
        self.pieces: list[str] = []
        self.step: _Step | None = None
        self.after_step = False
        self.done = False

    # -- what may come next ---------------------------------------------------------------
    def _state(self) -> tuple:
        return self.spec.planner.state([self.kinds[i] for i in self.open], self.kinds)

    def _steps_after(self) -> int:
        return self.spec.max_steps - len(self.kinds) - 1

    def allowed(self) -> tuple[frozenset, bool]:
        """``(units, copy)``: the units that may come next, and whether a question word may be copied."""
        spec = self.spec
        if self.done:
            return frozenset(), False
        if self.after_step:
            return self._endings(), False
        step = self.step
        if step is None:
            return spec.verbs(self._state(), self._steps_after()), False
        if step.in_phrase:
            more = len(step.words) < spec.max_phrase_words
            return spec.phrase_sets[(more, bool(step.words))], more and self.question_length > 0
        if step.signature is not None:  # reading dependencies
            return self._dependencies(step.signature, step.deps), False
        accepted = terminals_accepted(self.parser)
        units: set[int] = set()
        copy = False
        for signature in step.alive:
            form = FORMS[signature.form]
            if step.position == len(form):
                if self._can_finish(signature, accepted):
                    units.add(spec.units.type_unit(signature.field))
                continue
            for terminal in _SLOT.get(form[step.position], (form[step.position],)):
                if terminal not in accepted:
                    continue
                if terminal == "PHRASE":
                    units |= spec.phrase_sets[(True, False)]
                    copy = copy or self.question_length > 0
                else:
                    units.update(spec.by_terminal[terminal])
        return frozenset(units), copy

    def _can_finish(self, signature: Signature, accepted: frozenset) -> bool:
        """Whether the argument read may end a step of ``signature`` (inputs and endings exist)."""
        if signature.arity:
            return "DEPENDENCIES" in accepted and bool(self._dependencies(signature, []))
        return bool(self._endings(signature))

    def _dependencies(self, signature: Signature, chosen_so_far: list) -> frozenset:
        index = len(self.kinds)
        chosen = set(chosen_so_far)
        left = signature.arity - len(chosen) - 1
        state = self._state()
        out = set()
        for j in range(index):
            if j in chosen or self.kinds[j] is not signature.consumes:
                continue
            others_open = sum(1 for i in self.open if i not in chosen and i != j and self.kinds[i] is signature.consumes)
            others = sum(1 for i in range(index) if i not in chosen and i != j and self.kinds[i] is signature.consumes)
            if others < left:
                continue
            taken = sum(1 for i in chosen | {j} if i in self.open) + min(left, others_open)
            if self.spec.feasible(state, signature, taken, self._steps_after()):
                out.add(self.spec.units.dep_unit(j))
        return frozenset(out)

    def _endings(self, finishing: Signature | None = None) -> frozenset:
        """After a finished step (or one ``finishing`` now without inputs): '->' and/or '<end>'."""
        kinds, open_steps = list(self.kinds), set(self.open)
        if finishing is not None:
            kinds.append(finishing.yields)
            open_steps.add(len(kinds) - 1)
        last = kinds[-1]
        accepted = terminals_accepted(self.parser)
        out = set()
        if last is not Kind.ANSWER and len(kinds) < self.spec.max_steps and "_ARROW" in accepted:
            state = self.spec.planner.state([kinds[i] for i in open_steps], kinds)
            steps_left = self.spec.max_steps - len(kinds)
            if self.spec.planner.steps_to_close(state, steps_left) <= steps_left:
                out.add(self.spec.arrow)
        closes = last is Kind.ANSWER or (last is _B and open_steps == {len(kinds) - 1})
        if closes and "$END" in accepted:
            out.add(self.spec.end)
        return frozenset(out)

    # -- moving on ------------------------------------------------------------------------
    def _feed(self, terminal: str, text: str) -> None:
        self.parser.feed_token(Token(terminal, text))
        self.pieces.append(text)

    def advance(self, unit: int | None, word: str | None = None) -> None:
        """Take one unit (``unit`` None and ``word`` given: a copied question word). The caller
        picks among :meth:`allowed`; anything else is a bug, raised as such."""
        spec, units = self.spec, self.spec.units
        allowed, copy = self.allowed()
        if (unit is None and not (copy and word)) or (unit is not None and unit not in allowed):
            raise AssertionError(f"unit {unit!r} / word {word!r} is not allowed here")
        kind = None if unit is None else units.terminal(unit)
        if kind == "WORD":
            unit, word, kind = None, units.word(unit), None
        step = self.step
        if kind == "VERB":
            # the field's text is known once the type is read; the grammar reads HEAD either way
            self.parser.feed_token(Token("HEAD", units.verb(unit) + ": "))
            self.pieces.append("")
            self.step = _Step(unit, [s for s in spec.by_verb[unit]
                                     if spec.feasible(self._state(), s, None, self._steps_after())],
                              head=len(self.pieces) - 1)
        elif unit is None:  # a word of a phrase
            if not step.in_phrase:
                step.in_phrase = True
                step.alive = [s for s in step.alive if _fills(s, step.position, "PHRASE")]
            step.words.append(word)
        elif unit == spec.close:
            self._feed("PHRASE", " ".join(step.words))
            step.words, step.in_phrase, step.position = [], False, step.position + 1
        elif unit in spec.fixed:
            terminal, text = spec.fixed[unit]
            step.alive = [s for s in step.alive if _fills(s, step.position, terminal)]
            self._feed(terminal, text)
            step.position += 1
        elif kind == "TYPE":
            field_ = units.field(step.verb, unit)
            step.signature = next(s for s in step.alive if s.field == field_
                                  and len(FORMS[s.form]) == step.position)
            self.pieces[step.head] = field_ + ": "
            if not step.signature.arity:
                self._finish_step()
        elif kind == "DEP":
            step.deps.append(units.dep(unit))
            if len(step.deps) == step.signature.arity:
                self._feed("DEPENDENCIES", " [" + ", ".join(map(str, step.deps)) + "]")
                self._finish_step()
        elif unit == spec.arrow:
            self._feed("_ARROW", "->")
            self.after_step = False
        else:  # <end>
            self.parser.feed_eof()
            self.done = True

    def _finish_step(self) -> None:
        step = self.step
        self.open -= set(step.deps)
        self.kinds.append(step.signature.yields)
        self.open.add(len(self.kinds) - 1)
        self.step, self.after_step = None, True

    def text(self) -> str:
        """The program written so far (the whole program once :attr:`done`)."""
        return "".join(self.pieces)
