"""The GQA grammar, as the semantic parser uses it: the very file ``nablafol.dsl`` parses with
(``dsl/grammar/gqa.lark``), never a copy, compiled without a transformer so that a decoder can
feed it one token at a time (Lark's interactive LALR parser) and ask what may come next.

    >>> from lark import Token
    >>> parser = interactive_parser()
    >>> parser.feed_token(Token("HEAD", "select: "))
    >>> sorted(terminals_accepted(parser) & {"PHRASE", "QUESTION", "$END"})
    ['$END', 'PHRASE', 'QUESTION']
    >>> question_words("Is the T-shirt to the left of the man's cup?")
    ['is', 'the', 't-shirt', 'to', 'the', 'left', 'of', 'the', "man's", 'cup']
    >>> word_forms(["are", "the", "benches", "red"])
    [None, None, 'bench', None]
"""
from __future__ import annotations

import functools
import re
import unicodedata
from importlib import resources

from lark import Lark

__all__ = ["gqa_grammar", "interactive_parser", "terminals_accepted", "question_words", "is_word", "word_forms"]

#: The Lark terminal a program's names, values and relations are written in (words joined by spaces).
PHRASE = "PHRASE"


@functools.cache  # reads the grammar shipped with the package (caching rule 3)
def gqa_grammar() -> Lark:
    """``dsl/grammar/gqa.lark`` compiled for token-by-token parsing (LALR, no transformer)."""
    text = resources.files("nablafol.dsl").joinpath("grammar/gqa.lark").read_text(encoding="utf-8")
    return Lark(text, parser="lalr", start="program")


def interactive_parser():
    """A fresh interactive parser at the start of a program."""
    return gqa_grammar().parse_interactive(start="program")


_ACCEPTED: dict[tuple, frozenset] = {}


def terminals_accepted(parser) -> frozenset:
    """The terminals (and ``$END``) the parser accepts next. Memoized by the LALR state stack,
    which is all that decides it (a program's stacks are few and repeat across questions)."""
    key = tuple(parser.parser_state.state_stack)
    found = _ACCEPTED.get(key)
    if found is None:
        found = _ACCEPTED[key] = frozenset(parser.accepts())
    return found


@functools.cache  # a terminal of the grammar shipped with the package (caching rule 3)
def _phrase_pattern() -> re.Pattern:
    return re.compile(gqa_grammar().get_terminal(PHRASE).pattern.to_regexp())


def question_words(text: str) -> list[str]:
    """The words of a question, composed (NFC: a letter typed as a base and a combining accent is
    one letter, as the grammar's words want) and lower-cased: the pieces of every run of text the
    grammar would read as a PHRASE. Every word is a valid program word, so any of them can be
    copied into a program as it is.

        >>> question_words("What color is the cu\u0301p?")  # u + a combining acute: ú
        ['what', 'color', 'is', 'the', 'cúp']
    """
    text = unicodedata.normalize("NFC", text).lower()
    return [word for match in _phrase_pattern().finditer(text) for word in match.group().split(" ")]


def is_word(text: str) -> bool:
    """True when ``text`` is one word the grammar accepts inside a PHRASE."""
    return " " not in text and _phrase_pattern().fullmatch(text) is not None


def word_forms(words: list[str]) -> list[str | None]:
    """Each word's GQA vocabulary form where it differs (``benches`` -> ``bench``: the dsl's
    ``normalize``), else None: programs name concepts in that form, questions often do not."""
    from nablafol.dsl import normalize
    out: list[str | None] = []
    for word in words:
        form = normalize(word)
        out.append(form if form != word and is_word(form) else None)
    return out
