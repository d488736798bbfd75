"""GQA questions: ``*_questions.json`` files, ``{questionId: record}``, read as :class:`Question`.

A record is GQA's exactly (https://cs.stanford.edu/people/dorarad/gqa/download.html)::

    "20968244": {"imageId": "2354786", "question": "...", "answer": "horse",
                 "semantic": [{"operation": "select", "argument": "man (3817110)",
                               "dependencies": []}, ...],
                 "semanticStr": "select: man (3817110)->...", "entailed": [...],
                 "equivalent": [...], "types": {"detailed", "semantic", "structural"},
                 "groups": {...}, "isBalanced": true, "fullAnswer": "...",
                 "annotations": {...}}

Only ``imageId`` is required here. A question without a program (neither ``semantic``
nor ``semanticStr``) is still yielded: :meth:`Question.program_source` returns None and
the caller skips it with a reason. Every field not named above is kept, verbatim, in
:attr:`Question.extra`. A path may be one file or a folder of them (GQA's
``train_all_questions/``), read in natural sorted order.

Memory: :func:`iter_questions` decodes one record at a time; :func:`load_questions` keeps
the compact records only (the fields the pipeline reads as Python values, everything else
as its JSON text), which keeps GQA's validation split (132k questions, 130 MB of JSON)
well under 2 GB (``benchmarks/bench_read.py`` measures it).
"""
from __future__ import annotations

import json
import operator
import os
import sys
from dataclasses import dataclass, field
from json.encoder import c_make_encoder, encode_basestring
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, NamedTuple

from nablafol.data.fields import RecordChecker, json_type
from nablafol.data.files import json_inputs, write_question_entries
from nablafol.data.json_stream import iter_object_members
from nablafol.errors import InputFileError

_EXPECTED = "{questionId: question}"
# GQA's field name -> Question attribute, for the fields read into typed attributes
_KNOWN = {"imageId": "image_id", "question": "question", "answer": "answer",
          "semantic": "semantic", "semanticStr": "semantic_str", "entailed": "entailed",
          "equivalent": "equivalent", "types": "types", "isBalanced": "is_balanced"}
_KNOWN_KEYS = frozenset(_KNOWN)
_GET_KNOWN = operator.itemgetter(*_KNOWN)
_EMPTY = ""
_intern = sys.intern
_new = object.__new__


class ProgramSource(NamedTuple):
    """Where a question's program comes from: ``field`` is ``"semantic"`` (``value`` is
    the list of steps, each a raw ``{"operation", "argument", "dependencies"}`` dict) or
    ``"semanticStr"`` (``value`` is the one-line text)."""

    field: str
    value: Any


@dataclass(frozen=True, slots=True)
class Question:
    """One GQA question. Treat the containers as read-only.

    ``answer`` is None in test sets; ``semantic`` is the raw list of steps (a tuple) or
    None; ``extra`` (a fresh dict on each access) holds every other field of the record
    (``groups``, ``fullAnswer``, ``annotations``, anything a tool added) verbatim.
    """

    id: str
    image_id: str
    question: str | None = None
    answer: str | None = None
    semantic: tuple[dict, ...] | None = None
    semantic_str: str | None = None
    entailed: tuple[str, ...] = ()
    equivalent: tuple[str, ...] = ()
    types: Mapping[str, Any] = field(default_factory=dict)
    is_balanced: bool | None = None
    extra_json: str = field(default="{}", repr=False)

    @property
    def extra(self) -> dict[str, Any]:
        """The record's other fields, verbatim (kept as JSON text: one string per question)."""
        return json.loads(self.extra_json)

    def program_source(self) -> ProgramSource | None:
        """``semantic`` when present and non-empty, else ``semanticStr``, else None."""
        if self.semantic:
            return ProgramSource("semantic", self.semantic)
        if self.semantic_str is not None and self.semantic_str.strip():
            return ProgramSource("semanticStr", self.semantic_str)
        return None

    def to_record(self) -> dict[str, Any]:
        """The question as a GQA record: reading it back gives an equal Question.

        ``entailed``, ``equivalent`` and ``types`` are always written (empty when the
        source lacked them); other absent fields stay absent."""
        record: dict[str, Any] = {"imageId": self.image_id}
        for name, attribute in _KNOWN.items():
            value = getattr(self, attribute)
            if name == "imageId" or value is None:
                continue
            if isinstance(value, tuple):
                value = list(value)
            record[name] = value
        record.update(self.extra)
        return record


# Question's slot setters: GQA's records are built by setting them directly
(_set_id, _set_image_id, _set_question, _set_answer, _set_semantic, _set_semantic_str, _set_entailed, _set_equivalent,
 _set_types, _set_is_balanced, _set_extra_json) = (getattr(Question, name).__set__ for name in (
    "id", "image_id", "question", "answer", "semantic", "semantic_str", "entailed", "equivalent", "types",
    "is_balanced", "extra_json"))


def encode_extra(extra: Mapping[str, Any]) -> str:
    """The canonical JSON text :attr:`Question.extra_json` holds (sorted keys, so equal
    extras compare equal).

    >>> encode_extra({"groups": {"local": "x", "global": None}, "fullAnswer": "Oui, à gauche."})
    '{"fullAnswer":"Oui, à gauche.","groups":{"global":null,"local":"x"}}'
    """
    if _C_ENCODER is None:
        return json.dumps(extra, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "".join(_C_ENCODER(extra, 0))


# json.dumps(extra, sort_keys=True, ensure_ascii=False, separators=(",", ":")) calls this same C
# encoder after Python work that costs twice the encoding itself per question; without the circular
# check (markers None), which extras, plain JSON data, never need
_C_ENCODER = None if c_make_encoder is None else c_make_encoder(
    None, json.JSONEncoder().default, encode_basestring, None, ":", ",", True, False, True)


def question_from_record(question_id: str, record: Any, *, path: Path | str = "<record>") -> Question:
    """Build a :class:`Question` from one decoded GQA record, checking field types."""
    if type(record) is dict and _KNOWN_KEYS <= record.keys():
        question = _gqa_question(question_id, record)
        if question is not None:
            return question
    return _checked_question(question_id, record, path)


def _gqa_question(question_id: str, record: dict) -> Question | None:
    # GQA's own records (every known field present, each of its usual type): 145,000 at the
    # validation split's size, so they are checked in a few C-level steps and built directly;
    # None sends anything else to the field-by-field check (which says what is wrong)
    image_id, text, answer, semantic, semantic_str, entailed, equivalent, types, is_balanced = _GET_KNOWN(record)
    if not (type(image_id) is str and type(text) is str and type(semantic_str) is str and type(semantic) is list
            and type(entailed) is list and type(equivalent) is list and type(types) is dict
            and type(is_balanced) is bool and (type(answer) is str or answer is None)):
        return None
    try:  # join refuses anything but strings: the lists are lists of strings, the types' values strings
        _EMPTY.join(entailed), _EMPTY.join(equivalent), _EMPTY.join(types.values())
    except TypeError:
        return None
    extra = {key: value for key, value in record.items() if key not in _KNOWN}
    # the slots set directly, as Question(...) sets them, without its keyword handling
    question = _new(Question)
    _set_id(question, question_id)
    _set_image_id(question, _intern(image_id))
    _set_question(question, text)
    _set_answer(question, answer)
    _set_semantic(question, tuple(map(_compact_step, semantic)))
    _set_semantic_str(question, semantic_str)
    _set_entailed(question, tuple(entailed))
    _set_equivalent(question, tuple(equivalent))
    _set_types(question, dict(zip(map(_intern, types), map(_intern, types.values()))))
    _set_is_balanced(question, is_balanced)
    _set_extra_json(question, encode_extra(extra) if extra else "{}")
    return question


def _checked_question(question_id: str, record: Any, path: Path | str) -> Question:
    check = RecordChecker(path, f"question {question_id}")
    check.object(record, "the question record")
    if "imageId" not in record:
        raise check.fail("imageId is missing")
    image_id = check.string(record["imageId"], "imageId")
    semantic = record.get("semantic")
    if semantic is not None:
        if not isinstance(semantic, list):
            raise check.fail(f"semantic must be a list of steps, found {json_type(semantic)}")
        semantic = tuple(_compact_step(step) for step in semantic)
    types = record.get("types")
    if types is None:
        types = {}
    else:
        types = {_intern(k): (_intern(v) if isinstance(v, str) else v)
                 for k, v in check.object(types, "types").items()}
    is_balanced = record.get("isBalanced")
    extra = {key: value for key, value in record.items() if key not in _KNOWN}
    return Question(
        id=question_id,
        image_id=_intern(image_id),
        question=check.optional_string(record.get("question"), "question"),
        answer=check.optional_string(record.get("answer"), "answer"),
        semantic=semantic,
        semantic_str=check.optional_string(record.get("semanticStr"), "semanticStr"),
        entailed=check.string_list(record.get("entailed", []), "entailed"),
        equivalent=check.string_list(record.get("equivalent", []), "equivalent"),
        types=types,
        is_balanced=None if is_balanced is None else check.boolean(is_balanced, "isBalanced"),
        extra_json=encode_extra(extra) if extra else "{}",
    )


def _compact_step(step: Any) -> Any:
    # Steps stay raw (the program reader judges them); only shared keys/operations are
    # interned so 132k questions do not each hold their own copies of "operation".
    if type(step) is dict and tuple(step) == _GQA_STEP_KEYS:
        operation, dependencies, argument = _GET_STEP(step)
        if type(operation) is str:  # GQA's step, in its order: the keys are this module's (interned) constants
            return {"operation": _intern(operation), "dependencies": dependencies, "argument": argument}
    if isinstance(step, dict):
        return {_intern(k): (_intern(v) if k == "operation" and isinstance(v, str) else v)
                for k, v in step.items()}
    return step


_GQA_STEP_KEYS = ("operation", "dependencies", "argument")
_GET_STEP = operator.itemgetter(*_GQA_STEP_KEYS)


def iter_questions(path: str | os.PathLike) -> Iterator[Question]:
    """Yield the questions of a file or folder, streaming, in file order.

    Duplicate ids are not detected here (that needs every id in memory; see
    :func:`load_questions`).
    """
    for part in json_inputs(path):
        for question_id, record in iter_object_members(part, expected=_EXPECTED):
            yield question_from_record(question_id, record, path=part)


def load_questions(path: str | os.PathLike) -> dict[str, Question]:
    """All questions of a file or folder as ``{questionId: Question}``, in file order.

    A question id seen twice (in one file or across a folder's files) is an error.
    """
    questions: dict[str, Question] = {}
    for part in json_inputs(path):
        for question_id, record in iter_object_members(part, expected=_EXPECTED):
            if question_id in questions:
                raise InputFileError(part, "appears twice", f"question {question_id}")
            questions[question_id] = question_from_record(question_id, record, path=part)
    return questions


def write_questions(path: str | os.PathLike, questions: Iterable[Question]) -> None:
    """Write questions as one GQA ``*_questions.json`` file (ids must be unique)."""
    write_question_entries(path, ((q.id, json.dumps(q.id) + ": " + json.dumps(q.to_record(), ensure_ascii=False))
                                  for q in questions), "{}")
