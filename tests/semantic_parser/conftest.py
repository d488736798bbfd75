"""Shared fixtures of the semantic parser's tests: a small generated dataset (GQA's formats)
and a parser trained on it in seconds, built once per test session."""
from __future__ import annotations

from pathlib import Path

import pytest

from nablafol.data import load_questions
from nablafol.semantic_parser import TrainingSettings, save_parser, train_parser
from nablafol.synthetic import generate_dataset

#: Small and quick: the suite trains a parser in seconds, not minutes.
TEST_SETTINGS = TrainingSettings(epochs=10, batch_size=16, lr=1e-2, word_dim=24, unit_dim=24, hidden_dim=48, seed=0)


def simple_questions(path) -> list:
    """The two-step verify/query questions of a questions file ("Is the cup red?", "What color
    is the cup?"): few enough templates for a parser trained in seconds to learn them."""
    from nablafol.dsl import parse_program
    out = []
    for question in load_questions(path).values():
        program = parse_program(question.semantic_str)
        if len(program) == 2 and program.steps[1].operation in ("query", "verify") and program.steps[1].type != "rel":
            out.append(question)
    return out


@pytest.fixture(scope="session")
def dataset(tmp_path_factory) -> Path:
    """The embedded dataset at a small size: 60 training and 15 validation scenes (with scene
    graphs), 10 test-dev scenes, small features."""
    folder = tmp_path_factory.mktemp("parser-data")
    generate_dataset(folder, n_train=60, n_val=15, n_testdev=10, seed=3, feature_dim=8)
    return folder


@pytest.fixture(scope="session")
def trained(dataset):
    """(parser, training result) trained on the dataset's simple training questions."""
    result = train_parser(simple_questions(dataset / "train_balanced_questions.json"), settings=TEST_SETTINGS)
    return result.parser, result


@pytest.fixture(scope="session")
def parser_folder(trained, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("parser")
    save_parser(folder, trained[0])
    return folder
