"""GQA's choices files: ``{split}_choices.json``, each question's valid and plausible answers.

The layout GQA distributes beside its questions and its evaluation script reads::

    {"20968244": {"valid": ["horse", "cow", ...], "plausible": ["horse", "zebra", ...]}, ...}

``valid`` answers are those that can be an answer to the question at all (a colour for a
colour question, yes/no for a yes/no question); ``plausible`` those that make sense in the
world of the dataset (``purple`` is valid but not plausible for an apple's colour).

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "val_choices.json"
>>> write_choices(path, {"1": Choices(valid=("red", "blue"), plausible=("red",))})
1
>>> load_choices(path)
{'1': Choices(valid=('red', 'blue'), plausible=('red',))}
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Iterable, Iterator, Mapping, NamedTuple

from nablafol.data.fields import RecordChecker
from nablafol.data.files import json_inputs, write_question_entries
from nablafol.data.json_stream import iter_object_members
from nablafol.errors import InputFileError

__all__ = ["Choices", "iter_choices", "load_choices", "write_choices"]

_EXPECTED = '{questionId: {"valid": [...], "plausible": [...]}}'


class Choices(NamedTuple):
    """One question's valid and plausible answers (GQA's raw forms)."""

    valid: tuple[str, ...]
    plausible: tuple[str, ...]

    def to_record(self) -> dict[str, list[str]]:
        return {"valid": list(self.valid), "plausible": list(self.plausible)}


def choices_from_record(question_id: str, record: Any, *, path: os.PathLike | str = "<record>") -> Choices:
    """Check and read one ``{"valid": [...], "plausible": [...]}`` record."""
    check = RecordChecker(path, f"question {question_id}")
    check.object(record, "a choices record")
    lists = []
    for key in ("valid", "plausible"):
        if key not in record:
            raise check.fail(f"{key} is missing")
        lists.append(tuple(sys.intern(answer) for answer in check.string_list(record[key], key)))
    return Choices(*lists)


def iter_choices(path: str | os.PathLike) -> Iterator[tuple[str, Choices]]:
    """``(questionId, Choices)`` of a file (or a folder of them), streaming, in file order."""
    for part in json_inputs(path):
        for question_id, record in iter_object_members(part, expected=_EXPECTED):
            yield question_id, choices_from_record(question_id, record, path=part)


def load_choices(path: str | os.PathLike) -> dict[str, Choices]:
    """``{questionId: Choices}``; a question id given twice is an error."""
    choices: dict[str, Choices] = {}
    for question_id, record in iter_choices(path):
        if question_id in choices:
            raise InputFileError(path, "appears twice", f"question {question_id}")
        choices[question_id] = record
    return choices


def write_choices(path: str | os.PathLike, choices: Mapping[str, Choices] | Iterable[tuple[str, Choices]]) -> int:
    """Write a choices file (one question per line, in order); returns how many were written."""
    pairs = choices.items() if isinstance(choices, Mapping) else choices
    return write_question_entries(path, ((question_id, json.dumps(question_id) + ": " + json.dumps(
        record.to_record(), ensure_ascii=False)) for question_id, record in pairs), brackets="{}")
