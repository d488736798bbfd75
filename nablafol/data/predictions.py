"""GQA's submission format: a JSON list ``[{"questionId": str, "prediction": str}, ...]``.

The same file GQA's official evaluation script and leaderboard read. Reading checks the
shape and refuses a question id given twice (which prediction would count?).
"""
from __future__ import annotations

import json
import os
from typing import Iterable, Mapping

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
            entry = json.dumps({"questionId": question_id, "prediction": prediction},
                               ensure_ascii=False)
            stream.write(("\n" if not written else ",\n") + entry)
            written += 1
        stream.write("\n]\n")
    return written


def read_predictions(path: str | os.PathLike) -> dict[str, str]:
    """``{questionId: prediction}`` from a submission file, in file order.

    Entries may carry other keys (ignored); ``questionId`` and ``prediction`` must be strings.
    """
    entries = load_json(path, expected_type=list,
                        expected='a JSON list [{"questionId", "prediction"}, ...]')
    predictions: dict[str, str] = {}
    for index, entry in enumerate(entries):
        check = RecordChecker(path, f"entry {index}")
        check.object(entry, "a prediction")
        for key in ("questionId", "prediction"):
            if key not in entry:
                raise check.fail(f"{key} is missing")
        question_id = check.string(entry["questionId"], "questionId")
        if question_id in predictions:
            raise InputFileError(path, "has two predictions", f"question {question_id}")
        predictions[question_id] = check.string(entry["prediction"], "prediction")
    return predictions
