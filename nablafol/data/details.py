"""Per-question details of a run: JSON lines, one object per question.

Each line holds ``questionId``, ``prediction``, ``answers`` (candidate -> probability;
binary questions ``{"yes": p, "no": 1 - p}``), ``grounding`` (ids of the objects the
final attention puts at or above 0.5), ``formula`` (the program's FOL formula) and any
extra keys the caller adds (a skipped question's reason, timings, ...). ``prediction``
and ``formula`` may be null (a question skipped before it had either).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Iterator, Mapping

from nablafol.data.fields import RecordChecker
from nablafol.data.files import atomic_writer, not_text, open_text
from nablafol.data.json_stream import json_line
from nablafol.errors import InputFileError

_STANDARD = ("questionId", "prediction", "answers", "grounding", "formula")


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Details:
    """What a run says about one question (one line of a details file)."""

    question_id: str
    prediction: str | None
    answers: Mapping[str, float] = field(default_factory=_empty)
    grounding: tuple[str, ...] = ()
    formula: str | None = None
    extra: Mapping[str, Any] = field(default_factory=_empty)

    def to_record(self) -> dict[str, Any]:
        clash = set(self.extra) & set(_STANDARD)
        if clash:
            raise ValueError(f"question {self.question_id}: extra keys {sorted(clash)} "
                             f"would overwrite standard fields")
        return {"questionId": self.question_id, "prediction": self.prediction,
                "answers": dict(self.answers), "grounding": list(self.grounding),
                "formula": self.formula, **self.extra}


def write_details(path: str | os.PathLike, details: Iterable[Details]) -> int:
    """Write one JSON line per :class:`Details` (ids unique); returns how many were written.

    NaN or infinite probabilities are refused (they are not JSON).
    """
    seen: set[str] = set()
    with atomic_writer(path) as stream:
        for item in details:
            if item.question_id in seen:
                raise ValueError(f"question {item.question_id} has two details lines")
            stream.write(details_line(item))
            seen.add(item.question_id)
    return len(seen)


def details_line(item: Details) -> str:
    """One line of a details file (with its newline); NaN or infinite probabilities are refused."""
    try:
        # ASCII escapes: no U+2028 or U+0085 inside a line for line-splitting tools
        return json.dumps(item.to_record(), ensure_ascii=True, allow_nan=False) + "\n"
    except ValueError as error:
        raise ValueError(f"question {item.question_id}: {error}") from None


def iter_details(path: str | os.PathLike) -> Iterator[Details]:
    """Yield the lines of a details file as :class:`Details`, checked; blank lines skipped."""
    with open_text(path) as stream:
        try:
            for number, line in enumerate(stream, start=1):
                if line.strip():
                    yield _details_from_line(path, number, line)
        except UnicodeDecodeError as error:
            raise not_text(path, error) from None


def exact_share(path: str | os.PathLike) -> tuple[int, int]:
    """``(answers flagged exact, answers)`` of a details file: the ``"exact"`` flag that
    ``nablafol eval`` writes per answer (``docs/exactness.md``); a line without it is not exact."""
    exact = answered = 0
    for item in iter_details(path):
        answered += 1
        exact += item.extra.get("exact") is True
    return exact, answered


@dataclass(frozen=True)
class BoundsShare:
    """What the ``"bounds"`` of a details file say (``nablafol eval --bounds``): ``answers`` with
    bounds, of which ``yes_no`` are yes/no answers and ``decided`` of those have an interval on one
    side of 0.5 (every probability in it gives the same answer); ``mean_width`` of the predicted
    answer's interval, over the answers with bounds (None when there are none)."""

    answers: int
    yes_no: int
    decided: int
    mean_width: float | None


def bounds_share(path: str | os.PathLike) -> BoundsShare:
    """The bounds of a details file (:class:`BoundsShare`); a line whose ``"bounds"`` are not
    ``{candidate: [lower, upper]}`` with ``0 <= lower <= upper <= 1`` is refused, by its question."""
    answers = yes_no = decided = 0
    width = 0.0
    for item in iter_details(path):
        bounds = item.extra.get("bounds")
        if bounds is None:
            continue
        interval = bounds.get(item.prediction) if isinstance(bounds, dict) else None
        if not _is_interval(interval) or not all(map(_is_interval, bounds.values())):
            raise InputFileError(path, "has bounds that are not [lower, upper] pairs in [0, 1] for each answer, "
                                       "the predicted one among them", f"question {item.question_id}")
        answers += 1
        width += interval[1] - interval[0]
        if set(bounds) == {"yes", "no"}:
            yes_no += 1
            low, high = bounds["yes"]
            decided += low > 0.5 or high <= 0.5
    return BoundsShare(answers, yes_no, decided, width / answers if answers else None)


def _is_interval(value) -> bool:
    return (isinstance(value, list) and len(value) == 2 and all(type(v) in (int, float) for v in value)
            and 0.0 <= value[0] <= value[1] <= 1.0)


def read_details(path: str | os.PathLike) -> dict[str, Details]:
    """``{questionId: Details}``; a question id on two lines is an error."""
    result: dict[str, Details] = {}
    for item in iter_details(path):
        if item.question_id in result:
            raise InputFileError(path, "appears on two lines", f"question {item.question_id}")
        result[item.question_id] = item
    return result


def _details_from_line(path: str | os.PathLike, number: int, line: str) -> Details:
    check = RecordChecker(path, f"line {number}")
    record = json_line(line.rstrip("\r\n"), path, f"line {number}")
    check.object(record, "a details line")
    if "questionId" not in record:
        raise check.fail("questionId is missing")
    grounding, answers = record.get("grounding"), record.get("answers")
    return Details(
        question_id=check.string(record["questionId"], "questionId"),
        prediction=check.optional_string(record.get("prediction"), "prediction"),
        answers={} if answers is None else check.probability_map(answers, "answers"),
        grounding=() if grounding is None else check.string_list(grounding, "grounding"),
        formula=check.optional_string(record.get("formula"), "formula"),
        extra={k: v for k, v in record.items() if k not in _STANDARD},
    )
