"""The decoder's vocabulary: a program is written as a sequence of *units*.

Each step is written as its verb, its argument, its type, then its dependencies:

    select: wall->filter color: white [0]->relate: _,on,s [1]->query: name [2]

is ``verb:select wall </phrase> type: -> verb:filter white </phrase> type:color dep:0 -> verb:relate
_ , on </phrase> , s type: dep:1 -> verb:query name </phrase> type: dep:2 <end>``. The type
comes after the argument (the text keeps GQA's order) because the value decides it: having
written ``white``, ``color`` is the easy choice; before, it would be a guess. A PHRASE is
spelled word by word and closed by ``</phrase>``, so names the parser never saw can be copied
from the question one word at a time. Object ids are not units: the parser writes programs
without them (reasoning never reads them; see docs/semantic-parser.md).

    >>> from nablafol.dsl import parse_program
    >>> units = ProgramUnits(heads=["select", "query"], words=["name"], max_steps=4)
    >>> program_units(parse_program("select: wall (12)->query: name [0]"))
    ['verb:select', 'word:wall', '</phrase>', 'type:', '->', 'verb:query', 'word:name', '</phrase>', 'type:', 'dep:0', '<end>']
    >>> [units.terminal(units.id(u)) for u in ("dep:0", "word:name", "verb:query", "type:")], units.id("word:wall")
    (['DEP', 'WORD', 'VERB', 'TYPE'], None)
    >>> units.field(units.id("verb:query"), units.id("type:"))
    'query'
"""
from __future__ import annotations

from typing import Iterable, Sequence

from nablafol.dsl import Alternatives, AttributeType, Empty, Objects, Program, Relation, Scene, Value

from .errors import ParserError
from .grammar import is_word, word_forms

__all__ = ["ProgramUnits", "program_units", "SPECIAL", "PAD", "BOS", "END", "ARROW", "CLOSE", "COPY",
           "VERB", "TYPE", "WORD", "DEP"]

PAD, BOS, END, ARROW, CLOSE, COPY = "<pad>", "<bos>", "<end>", "->", "</phrase>", "<copy>"
# Fixed units -> the grammar terminal each stands for (None: not a token of the program text).
SPECIAL: dict[str, str | None] = {
    PAD: None, BOS: None, COPY: None, END: "$END", ARROW: "_ARROW", CLOSE: "PHRASE",
    "not(": "NOT", ")": "_RPAR", "|": "_BAR", ",": "_COMMA", "_": "ANY", "s": "ROLE", "o": "ROLE", "?": "QUESTION",
}
VERB, TYPE, WORD, DEP = "verb:", "type:", "word:", "dep:"


def _phrase(text: str) -> list[str]:
    return [WORD + w for w in text.split(" ")] + [CLOSE]


def _argument_units(argument) -> list[str]:
    if isinstance(argument, Scene):
        return _phrase(str(argument))
    if isinstance(argument, (Objects, AttributeType)):
        return _phrase(argument.name)
    if isinstance(argument, Value):
        return ["not(", *_phrase(argument.value), ")"] if argument.negated else _phrase(argument.value)
    if isinstance(argument, Alternatives):
        out = _phrase(argument.values[0])
        for value in argument.values[1:]:
            out += ["|", *_phrase(value)]
        return out
    if isinstance(argument, Relation):
        out = ["_"] if argument.any_name else _phrase(argument.name)
        out += [",", *_phrase(argument.relations[0])]
        for relation in argument.relations[1:]:
            out += ["|", *_phrase(relation)]
        return out + [",", argument.role]
    if isinstance(argument, Empty):
        return ["?"] if argument.marker == "?" else []
    raise ParserError(f"no units write the argument {argument!r}")


def program_units(program: Program) -> list[str]:
    """The units of ``program`` (object ids dropped), ending with ``<end>``."""
    out: list[str] = []
    for index, step in enumerate(program.steps):
        if index:
            out.append(ARROW)
        out.append(VERB + step.operation)
        out += _argument_units(step.argument)
        out.append(TYPE + (step.type or ""))
        out += [DEP + str(d) for d in step.dependencies]
    return out + [END]


class ProgramUnits:
    """Unit <-> id: the fixed units, ``dep:0`` .. ``dep:{max_steps - 2}``, one ``verb:V`` and one
    ``type:T`` per verb and type of the operation fields ``heads`` (``type:`` for none), one
    ``word:W`` per word the decoder may write without copying it."""

    def __init__(self, heads: Iterable[str], words: Iterable[str], max_steps: int):
        heads, words = list(heads), list(words)
        if not (isinstance(max_steps, int) and not isinstance(max_steps, bool) and 1 <= max_steps <= 64):
            raise ParserError(f"max_steps must be a whole number in 1..64, got {max_steps!r}")
        for name, items in (("heads", heads), ("words", words)):
            if not all(isinstance(item, str) and item for item in items) or len(set(items)) != len(items):
                raise ParserError(f"{name} must be distinct non-empty strings")
        bad = next((w for w in words if not is_word(w)), None)
        if bad is not None:
            raise ParserError(f"word {bad!r} is not one word of the GQA grammar")
        self.heads, self.words, self.max_steps = tuple(heads), tuple(words), max_steps
        self.verbs = tuple(dict.fromkeys(h.partition(" ")[0] for h in heads))
        self.types = tuple(dict.fromkeys(h.partition(" ")[2] for h in heads))
        self.names: list[str] = (list(SPECIAL) + [DEP + str(i) for i in range(max_steps - 1)]
                                 + [VERB + v for v in self.verbs] + [TYPE + t for t in self.types]
                                 + [WORD + w for w in words])
        self._ids = {name: i for i, name in enumerate(self.names)}
        self.first_dep = len(SPECIAL)
        self.first_verb = self.first_dep + max_steps - 1
        self.first_type = self.first_verb + len(self.verbs)
        self.first_word = self.first_type + len(self.types)

    def __len__(self) -> int:
        return len(self.names)

    def id(self, name: str) -> int | None:
        return self._ids.get(name)

    def terminal(self, unit: int) -> str | None:
        """What kind of token ``unit`` is: a grammar terminal name, or ``DEP``, ``VERB``, ``TYPE``, ``WORD``."""
        if unit < self.first_dep:
            return SPECIAL[self.names[unit]]
        if unit < self.first_verb:
            return "DEP"
        if unit < self.first_type:
            return "VERB"
        return "TYPE" if unit < self.first_word else "WORD"

    def dep(self, unit: int) -> int:
        return unit - self.first_dep

    def verb(self, unit: int) -> str:
        return self.verbs[unit - self.first_verb]

    def field(self, verb: int, type_: int) -> str:
        """The operation field a verb unit and a type unit make (``filter`` + ``color``)."""
        kind = self.types[type_ - self.first_type]
        return f"{self.verb(verb)} {kind}" if kind else self.verb(verb)

    def type_unit(self, field: str) -> int:
        return self._ids[TYPE + field.partition(" ")[2]]

    def verb_unit(self, field: str) -> int:
        return self._ids[VERB + field.partition(" ")[0]]

    def word(self, unit: int) -> str:
        return self.words[unit - self.first_word]

    def dep_unit(self, index: int) -> int:
        return self.first_dep + index

    def word_ids(self) -> range:
        return range(self.first_word, len(self.names))

    def copies(self, words: Sequence[str]) -> list[list]:
        """What each question position lets the decoder copy, per kind of copy (the blocks of
        ``nablafol.semantic_parser.network.COPY_GROUPS``): the word; its vocabulary form
        (None where it has none of its own); the type it names, by itself or by its form (None
        where it names none of the decoder's types).

            >>> ProgramUnits(["choose younger", "same color"], ["x"], 3).copies(["who", "is", "younger", "colors"])
            [['who', 'is', 'younger', 'colors'], [None, None, None, 'color'], [None, None, 'younger', 'color']]
        """
        forms = word_forms(list(words))
        known = set(self.types) - {""}
        types = [w if w in known else f if f in known else None for w, f in zip(words, forms)]
        return [list(words), forms, types]

    def encode(self, names: Sequence[str]) -> list[int]:
        missing = next((n for n in names if n not in self._ids), None)
        if missing is not None:
            raise ParserError(f"unit {missing!r} is not in the decoder's vocabulary")
        return [self._ids[n] for n in names]
