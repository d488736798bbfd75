"""Questions with predicted programs: what the pipeline evaluates instead of the golden ones.

Each question's ``semantic`` and ``semanticStr`` are replaced by the program the parser reads
from its text; the golden line, if any, is kept in the record as ``goldSemanticStr`` (so the
file still says what was annotated). A question the parser cannot read keeps no program and
says why in ``parserError`` (:func:`parser_error`), so a pipeline skips it with that reason.

    >>> from nablafol.data import Question
    >>> from nablafol.semantic_parser import tiny_parser
    >>> gold = Question("q1", "1", "What color is the chair?", None, None, "select: chair (7)->query: color [0]")
    >>> (read, unreadable) = with_predicted_programs([gold, Question("q2", "1", "...")], tiny_parser())
    >>> read.semantic_str, read.extra["goldSemanticStr"]
    ('select: chair->query: color [0]', 'select: chair (7)->query: color [0]')
    >>> unreadable.program_source() is None, parser_error(unreadable)
    (True, "cannot read the question '...': it has no words")
"""
from __future__ import annotations

import dataclasses
import json
from typing import Iterable, Iterator

from nablafol.data.questions import Question, encode_extra
from nablafol.dsl import semantic_line

from .errors import ParserError, UnreadableQuestionError

__all__ = ["with_predicted_programs", "parser_error", "GOLD_FIELD", "ERROR_FIELD"]

GOLD_FIELD, ERROR_FIELD = "goldSemanticStr", "parserError"


def with_predicted_programs(questions: Iterable[Question], parser, *, batch_size: int = 256,
                            min_probability: float | None = None) -> Iterator[Question]:
    """Yield each question with the parser's program in place of its own (streaming: ``batch_size``
    questions are read at a time, in order)."""
    if not (isinstance(batch_size, int) and batch_size >= 1):
        raise ParserError(f"batch_size must be a whole number >= 1, got {batch_size!r}")
    chunk: list[Question] = []
    for question in questions:
        chunk.append(question)
        if len(chunk) == batch_size:
            yield from _read(chunk, parser, min_probability)
            chunk = []
    if chunk:
        yield from _read(chunk, parser, min_probability)


def _read(chunk: list[Question], parser, min_probability) -> Iterator[Question]:
    results = parser.parse_many([q.question or "" for q in chunk], min_probability=min_probability)
    for question, result in zip(chunk, results):
        extra = question.extra
        source = question.program_source()
        if source is not None:
            extra[GOLD_FIELD] = source.value if source.field == "semanticStr" else semantic_line(list(source.value))
        if isinstance(result, UnreadableQuestionError):
            extra[ERROR_FIELD] = str(result)
            yield dataclasses.replace(question, semantic=None, semantic_str=None, extra_json=encode_extra(extra))
        else:
            extra.pop(ERROR_FIELD, None)
            yield dataclasses.replace(question, semantic=tuple(result.program.to_semantic()),
                                      semantic_str=result.text, extra_json=encode_extra(extra))


def parser_error(question) -> str | None:
    """Why the parser could not read this question (None: it could, or it was not asked; any
    question with an ``extra_json`` record, GQA's or CRIC's)."""
    extra_json = getattr(question, "extra_json", "{}")
    return json.loads(extra_json).get(ERROR_FIELD) if ERROR_FIELD in extra_json else None
