"""The semantic parser: question text -> GQA program, by a network decoded under the grammar.

    >>> from nablafol.semantic_parser import tiny_parser
    >>> parser = tiny_parser()                 # a parser trained for seconds on a few questions
    >>> read = parser.parse("What color is the cup?")
    >>> read.text, read.program.is_binary
    ('select: cup->query: color [0]', False)
    >>> parser.parse("?!")
    Traceback (most recent call last):
    ...
    nablafol.semantic_parser.errors.UnreadableQuestionError: cannot read the question '?!': it has no words

Decoding is greedy and constrained (:mod:`.constraint`), so whatever the network scores, the
program read is one ``nablafol.dsl.parse_program`` accepts. Programs carry no object ids.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch

from nablafol.dsl import Program, ProgramError, parse_program

from .constraint import DecodingSpec, ProgramAutomaton
from .errors import ParserError, UnreadableQuestionError
from .grammar import question_words
from .network import COPY_GROUPS, ParserNetwork
from .units import BOS, COPY, ProgramUnits

__all__ = ["SemanticParser", "ParsedQuestion", "PAD_WORD", "UNKNOWN_WORD"]

PAD_WORD, UNKNOWN_WORD = "<pad>", "<unknown>"


@dataclass(frozen=True)
class ParsedQuestion:
    """A question read: the ``program`` (no object ids), its GQA ``text`` (``semanticStr``), and the
    ``probability`` the network gives that program (the product over its units)."""

    question: str
    program: Program
    text: str
    probability: float


class SemanticParser:
    """Question text -> :class:`ParsedQuestion`. Build with :func:`train_parser` or :func:`load_parser`.

    ``question_words``: the words the encoder knows (others read as unknown, and can still be
    copied); ``units``: what the decoder writes (``spec``: their decoding spec, if already
    built); ``max_phrase_words`` bounds a name's words,
    ``max_question_words`` a question's; a program read with a probability below
    ``min_probability`` is refused as unreadable (0: never)."""

    def __init__(self, network: ParserNetwork, question_words: Sequence[str], units: ProgramUnits, *,
                 max_phrase_words: int | None = None, max_question_words: int, min_probability: float = 0.0,
                 info: dict | None = None, spec: DecodingSpec | None = None):
        if list(question_words[:2]) != [PAD_WORD, UNKNOWN_WORD] or len(set(question_words)) != len(question_words):
            raise ParserError(f"question words must start with {PAD_WORD!r}, {UNKNOWN_WORD!r} and be distinct")
        if not (isinstance(max_question_words, int) and 1 <= max_question_words <= 4096):
            raise ParserError(f"max_question_words must be a whole number in 1..4096, got {max_question_words!r}")
        if not (isinstance(min_probability, (int, float)) and 0.0 <= min_probability <= 1.0):
            raise ParserError(f"min_probability must be in [0, 1], got {min_probability!r}")
        config = network.config
        if config.question_words != len(question_words) or config.units != len(units):
            raise ParserError(f"the network reads {config.question_words} words and writes {config.units} units; "
                              f"the vocabularies have {len(question_words)} and {len(units)}")
        self.network = network.eval()
        self.question_words, self.units = list(question_words), units
        self.word_ids = {w: i for i, w in enumerate(self.question_words)}
        if spec is not None and spec.units is not units:
            raise ParserError("the decoding spec given is for other units")
        self.spec = spec if spec is not None else DecodingSpec(units, max_phrase_words)
        self.max_question_words, self.min_probability = max_question_words, float(min_probability)
        self.info = dict(info or {})

    @property
    def max_phrase_words(self) -> int:
        return self.spec.max_phrase_words

    # -- reading ---------------------------------------------------------------------------
    def parse(self, question: str, *, min_probability: float | None = None) -> ParsedQuestion:
        """Read one question; raise :class:`UnreadableQuestionError` when it cannot be read."""
        (result,) = self.parse_many([question], min_probability=min_probability)
        if isinstance(result, UnreadableQuestionError):
            raise result
        return result

    def parse_many(self, questions: Sequence[str], *, batch_size: int = 256,
                   min_probability: float | None = None) -> list:
        """One :class:`ParsedQuestion` or :class:`UnreadableQuestionError` per question, in order."""
        if isinstance(questions, str):
            raise ParserError("parse_many takes a list of questions; give one question to parse()")
        threshold = self.min_probability if min_probability is None else min_probability
        results: list = [None] * len(questions)
        readable = []
        for index, question in enumerate(questions):
            if not isinstance(question, str):
                raise ParserError(f"a question is text (str), got {type(question).__name__}")
            words = question_words(question)
            if not words:
                results[index] = UnreadableQuestionError(question, "it has no words")
            elif len(words) > self.max_question_words:
                results[index] = UnreadableQuestionError(
                    question, f"it has {len(words)} words, more than the {self.max_question_words} this parser reads")
            else:
                readable.append((index, words))
        readable.sort(key=lambda item: len(item[1]))  # batches of similar lengths pad little
        for start in range(0, len(readable), batch_size):
            batch = readable[start:start + batch_size]
            for (index, _), (text, log_probability) in zip(batch, self._decode([w for _, w in batch])):
                results[index] = self._result(questions[index], text, log_probability, threshold)
        return results

    def _result(self, question: str, text: str, log_probability: float, threshold: float):
        try:
            program = parse_program(text)
        except ProgramError as error:  # the automaton guarantees this never happens: a bug
            raise AssertionError(f"the constrained decoder wrote {text!r}, which does not parse: {error}") from None
        probability = math.exp(log_probability)
        written = program.to_semantic_str()
        if probability < threshold:
            return UnreadableQuestionError(question, f"the closest program ({written}) has probability "
                                                     f"{probability:.3f}, below {threshold:g}", written)
        return ParsedQuestion(question, program, written, probability)

    @torch.no_grad()
    def _decode(self, batch: list[list[str]]) -> list[tuple[str, float]]:
        """Greedy constrained decoding of a batch of questions (their words) -> (text, log p)."""
        network, units = self.network, self.units
        device = next(network.parameters()).device
        lengths = torch.tensor([len(w) for w in batch])
        longest = int(lengths.max())
        words = torch.zeros(len(batch), longest, dtype=torch.long)
        copyable = torch.zeros(len(batch), COPY_GROUPS, longest, dtype=torch.bool)
        columns = []  # per question: what each copy column writes (a word, or a type's text; None: nothing)
        for b, question in enumerate(batch):
            words[b, :len(question)] = torch.tensor([self.word_ids.get(w, 1) for w in question])
            pad = [None] * (longest - len(question))
            groups = [group + pad for group in units.copies(question)]
            copyable[b] = torch.tensor([[c is not None for c in group] for group in groups])
            columns.append([c for group in groups for c in group])
        states, hidden = network.encode(words.to(device), lengths.to(device))
        automata = [ProgramAutomaton(self.spec, len(w)) for w in batch]
        words_end = 2 * longest  # copy columns before this write words; the rest name types
        first = [{} for _ in batch]  # word -> the position fed back when it is written
        for b, row in enumerate(columns):
            for column, word in enumerate(row[:words_end]):
                if word is not None:
                    first[b].setdefault(word, column % longest)
        previous = torch.full((len(batch), 1), units.id(BOS), dtype=torch.long)
        copied = torch.full((len(batch), 1), -1, dtype=torch.long)
        log_p = [0.0] * len(batch)
        unit_masks: dict[frozenset, torch.Tensor] = {}
        type_units: dict[frozenset, dict] = {}
        active = list(range(len(batch)))
        while active:
            rows = torch.tensor(active)
            scores, new_hidden = network.decode(states[rows], lengths[rows], hidden[:, rows], previous[rows].to(device),
                                                copied[rows].to(device), copyable[rows])
            hidden = hidden.clone()
            hidden[:, rows] = new_hidden
            scores = scores[:, 0].log_softmax(dim=-1).cpu()
            masks = []
            for b in active:
                allowed, copy = automata[b].allowed()
                if allowed not in unit_masks:
                    unit_masks[allowed] = torch.zeros(len(units), dtype=torch.bool)
                    unit_masks[allowed][list(allowed)] = True
                    type_units[allowed] = {units.types[u - units.first_type]: u for u in allowed
                                           if units.terminal(u) == "TYPE"}
                named = type_units[allowed]
                masks.append(torch.cat([unit_masks[allowed], torch.tensor(
                    [c is not None and (copy if k < words_end else c in named) for k, c in enumerate(columns[b])])]))
            choice = scores.masked_fill(~torch.stack(masks), float("-inf")).argmax(dim=-1).tolist()
            still = []
            for row, (b, pick) in enumerate(zip(active, choice)):
                automaton, column = automata[b], pick - len(units)
                if column >= words_end or (column < 0 and units.terminal(pick) == "TYPE"):
                    unit = pick if column < 0 else type_units[automaton.allowed()[0]][columns[b][column]]
                    text = units.types[unit - units.first_type]
                    log_p[b] += self._log_p(scores[row], unit, [words_end + k for k, c in
                                                                enumerate(columns[b][words_end:]) if text and c == text])
                    automaton.advance(unit)
                    previous[b, 0], copied[b, 0] = unit, -1
                elif column >= 0 or units.terminal(pick) == "WORD":
                    word = columns[b][column] if column >= 0 else units.word(pick)
                    log_p[b] += self._log_p(scores[row], units.id("word:" + word),
                                            [k for k, c in enumerate(columns[b][:words_end]) if c == word])
                    automaton.advance(None, word)
                    position = first[b].get(word, -1)  # a word of the question is fed back as a copy
                    previous[b, 0] = units.id(COPY) if position >= 0 else pick
                    copied[b, 0] = position
                else:
                    log_p[b] += float(scores[row, pick])
                    automaton.advance(pick)
                    previous[b, 0], copied[b, 0] = pick, -1
                if not automaton.done:
                    still.append(b)
            active = still
        return [(a.text(), p) for a, p in zip(automata, log_p)]

    def _log_p(self, scores: torch.Tensor, unit: int | None, columns: list[int]) -> float:
        """log p of one choice that a unit and/or copy columns all make."""
        picks = [len(self.units) + k for k in columns] + ([unit] if unit is not None else [])
        return float(torch.logsumexp(scores[picks], dim=0))
