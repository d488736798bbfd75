"""Checks on JSON values read from the user's files.

A record that breaks the format is reported as one :class:`InputFileError` line naming the
file, the record (``where``: a question, an image, an object) and the field; nothing is
coerced silently. Probabilities are JSON numbers in [0, 1], never NaN or infinite.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, Iterable

from nablafol.errors import InputFileError


_LARGEST_FLOAT = int(sys.float_info.max)


def _shown(number: int) -> str:
    text = str(number)
    return text if len(text) <= 20 else f"an integer of {len(text)} digits"


def count_text(number: int) -> str:
    """A count for a message: ``1,234``, or ``about 10^N`` when a hostile file makes it absurd.

    >>> count_text(10440), count_text(3 * 10**400)
    ('10,440', 'about 10^400')
    """
    return f"{number:,}" if number < 10**15 else f"about 10^{len(str(number)) - 1}"


def unique_by_id(path: Path | str, items: Iterable[Any], out: dict | None = None) -> dict:
    """``{item.id: item}`` in order (added to ``out`` when given); an id seen twice is an error."""
    out = {} if out is None else out
    for item in items:
        if item.id in out:
            raise InputFileError(path, "appears twice", f"question {item.id}")
        out[item.id] = item
    return out


def json_type(value: Any) -> str:
    """The JSON name of a Python value decoded by :mod:`json` (for error messages)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class RecordChecker:
    """Field checks for one record, raising errors that name ``path`` and ``where``."""

    __slots__ = ("path", "where")

    def __init__(self, path: Path | str, where: str | None):
        self.path = path
        self.where = where

    def fail(self, message: str) -> InputFileError:
        return InputFileError(self.path, message, self.where)

    def object(self, value: Any, what: str) -> dict:
        if not isinstance(value, dict):
            raise self.fail(f"{what} must be a JSON object, found {json_type(value)}")
        return value

    def record(self, value: Any, what: str, required: tuple[str, ...]) -> dict:
        """``value`` as a JSON object holding every ``required`` key."""
        self.object(value, what)
        for key in required:
            if key not in value:
                raise self.fail(f"{key} is missing")
        return value

    def string(self, value: Any, what: str) -> str:
        if not isinstance(value, str):
            raise self.fail(f"{what} must be a string, found {json_type(value)}")
        return value

    def optional_string(self, value: Any, what: str) -> str | None:
        return None if value is None else self.string(value, what)

    def string_list(self, value: Any, what: str) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise self.fail(f"{what} must be a list of strings, found {json_type(value)}")
        for item in value:
            if not isinstance(item, str):
                raise self.fail(f"{what} must be a list of strings, found {json_type(item)} in it")
        return tuple(value)

    def boolean(self, value: Any, what: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(f"{what} must be true or false, found {json_type(value)}")
        return value

    def number(self, value: Any, what: str) -> int | float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"{what} must be a number, found {json_type(value)}")
        if isinstance(value, int) and abs(value) > _LARGEST_FLOAT:  # JSON allows 10**400
            raise self.fail(f"{what} must be a finite number, found {_shown(abs(value))}")
        if not math.isfinite(value):
            raise self.fail(f"{what} must be a finite number, found {value}")
        return value

    def non_negative(self, value: Any, what: str) -> int | float:
        number = self.number(value, what)
        if number < 0:
            raise self.fail(f"{what} must be >= 0, found {number}")
        return number

    def positive(self, value: Any, what: str) -> int | float:
        number = self.number(value, what)
        if number <= 0:
            raise self.fail(f"{what} must be > 0, found {number}")
        return number

    def integer(self, value: Any, what: str, low: int = 0, high: int = 2**63 - 1) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"{what} must be an integer, found {json_type(value)}")
        if value < low:
            raise self.fail(f"{what} must be >= {low}, found {value}")
        if value > high:  # beyond what an index or a file number can be
            raise self.fail(f"{what} must be <= {high}, found {_shown(value)}")
        return value

    def probability(self, value: Any, what: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"{what} must be a probability (a number in [0, 1]), "
                            f"found {json_type(value)}")
        if not 0.0 <= value <= 1.0:  # also false for NaN
            raise self.fail(f"{what} must be a probability in [0, 1], found {value}")
        return float(value)

    def probability_map(self, value: Any, what: str) -> dict[str, float]:
        mapping = self.object(value, what)
        return {key: self.probability(p, f"{what}[{key!r}]") for key, p in mapping.items()}
