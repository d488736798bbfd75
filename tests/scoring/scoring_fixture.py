"""Readers for the hand-scored GQA fixture in tests/fixtures/scoring (metrics room helpers).

A uniquely named module, not conftest: several rooms have a conftest.py and only one can
be imported under that name.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

FIXTURE_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "scoring"


@dataclass(frozen=True)
class FixtureQuestion:
    """The fields scoring reads, as the project's question reader will provide them."""

    id: str
    answer: str | None
    entailed: tuple[str, ...] = ()
    types: dict = field(default_factory=dict)


def read_questions(path: Path) -> list[FixtureQuestion]:
    raw = json.loads(path.read_text())
    return [
        FixtureQuestion(id=qid, answer=q.get("answer"), entailed=tuple(q.get("entailed", ())),
                        types=dict(q.get("types", {})))
        for qid, q in raw.items()
    ]


def read_predictions(path: Path) -> dict[str, str]:
    return {p["questionId"]: p["prediction"] for p in json.loads(path.read_text())}


def exact(value: str | None) -> float | None:
    """An expected ``"n/d"`` string as the float the code must return exactly."""
    return None if value is None else float(Fraction(value))
