"""Shared fixtures of the metrics room: the hand-scored GQA fixture in tests/fixtures/scoring."""
from __future__ import annotations

import json

import pytest
from scoring_fixture import FIXTURE_DIR, FixtureQuestion, read_predictions, read_questions


@pytest.fixture(scope="session")
def questions() -> list[FixtureQuestion]:
    return read_questions(FIXTURE_DIR / "questions.json")


@pytest.fixture(scope="session")
def base_predictions() -> dict[str, str]:
    return read_predictions(FIXTURE_DIR / "base_predictions.json")


@pytest.fixture(scope="session")
def model_predictions() -> dict[str, str]:
    return read_predictions(FIXTURE_DIR / "model_predictions.json")


@pytest.fixture(scope="session")
def expected() -> dict:
    return json.loads((FIXTURE_DIR / "expected.json").read_text())
