"""GQA's submission format: a JSON list ``[{"questionId": str, "prediction": str}, ...]``.

The same file GQA's official evaluation script and leaderboard read. Reading checks the
shape and refuses a question id given twice (which prediction would count?).
"""
from __future__ import annotations

import json
import os
from json.encoder import encode_basestring
from typing import Any, Iterable, Iterator, Mapping

from nablafol.data.fields import RecordChecker
from nablafol.data.files import atomic_writer
from nablafol.data.json_stream import load_json
from nablafol.errors import InputFileError


def write_predictions(path: str | os.PathLike,
                      predictions: Mapping[str, str] | Iterable[tuple[str, str]], *,
                      check_unique: bool = True) -> int:
    """Write ``{questionId: answer}`` (or ``(questionId, answer)`` pairs) in order, one entry
    per line; returns how many were written. Ids must be unique strings, answers strings;
    ``check_unique=False`` when the caller has checked uniqueness (a million ids in a set cost memory).

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "predictions.json"
    >>> write_predictions(path, {"20968244": "horse"})
    1
    >>> path.read_text()
    '[\\n{"questionId": "20968244", "prediction": "horse"}\\n]\\n'
    """
    pairs = predictions.items() if isinstance(predictions, Mapping) else predictions
    seen: set[str] = set()
    written = 0
    with atomic_writer(path) as stream:
        stream.write("[")
        for question_id, prediction in pairs:
            if not isinstance(question_id, str) or not isinstance(prediction, str):
                raise TypeError(f"a prediction is a (questionId: str, prediction: str) pair, "
                                f"got ({question_id!r}, {prediction!r})")
            if check_unique:
                if question_id in seen:
                    raise ValueError(f"question {question_id} has two predictions")
                seen.add(question_id)
            # what json.dumps({...}, ensure_ascii=False) writes, without building a dict and an
            # encoder per entry (a tenth of the time for GQA's 132k predictions)
            entry = '{"questionId": ' + encode_basestring(question_id) + ', "prediction": ' + \
                encode_basestring(prediction) + "}"
            stream.write(("\n" if not written else ",\n") + entry)
            written += 1
        stream.write("\n]\n")
    return written


def read_predictions(path: str | os.PathLike) -> dict[str, str]:
    """``{questionId: prediction}`` from a submission file, in file order.

    Entries may carry other keys (ignored); ``questionId`` and ``prediction`` must be strings.
    """
    return {question_id: check.string(value, "prediction") for question_id, value, check in question_entries(
        path, "prediction", 'a JSON list [{"questionId", "prediction"}, ...]', "has two predictions")}


def question_entries(path: str | os.PathLike, field: str, expected: str,
                     twice: str) -> Iterator[tuple[str, Any, RecordChecker]]:
    """``(questionId, entry[field], checker)`` of a JSON list of ``{"questionId", field}`` objects
    (GQA's predictions and attentions files), checked; a question id given twice is refused
    (``twice`` says how)."""
    entries = load_json(path, expected_type=list, expected=expected)
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        check = RecordChecker(path, f"entry {index}")
        check.object(entry, f"a {field} entry" if field != "prediction" else "a prediction")
        for key in ("questionId", field):
            if key not in entry:
                raise check.fail(f"{key} is missing")
        question_id = check.string(entry["questionId"], "questionId")
        if question_id in seen:
            raise InputFileError(path, twice, f"question {question_id}")
        seen.add(question_id)
        yield question_id, entry[field], check
