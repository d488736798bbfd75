"""Where a dataset's files are: a dataset folder (the embedded layout, as ``nablafol generate``
writes it) or files named one by one.

    >>> files = dataset_files(data="tests/fixtures/gqa")
    >>> files.train_questions.name, files.features.name
    ('train_balanced_questions.json', 'features')
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from nablafol.errors import InputFileError

__all__ = ["DatasetFiles", "dataset_files", "validation_questions"]


@dataclass(frozen=True)
class DatasetFiles:
    """Training questions, the features folder, validation questions and the ontology folder
    (the last two may be absent)."""

    train_questions: Path
    features: Path
    val_questions: Optional[Path] = None
    ontology: Optional[Path] = None


def dataset_files(data=None, questions=None, features=None, val_questions=None, ontology=None) -> DatasetFiles:
    """From a dataset folder ``data`` (``train_balanced_questions.json``,
    ``val_balanced_questions.json``, ``features/``, ``ontology/``), or from the files given; a
    file given by name wins over the folder's."""
    if data is not None:
        data = Path(data)
        if not data.is_dir():
            raise InputFileError(data, "no such dataset folder")
        onto = Path(ontology) if ontology else (data / "ontology" if (data / "ontology").is_dir() else None)
        val = Path(val_questions) if val_questions else data / "val_balanced_questions.json"
        return DatasetFiles(Path(questions) if questions else data / "train_balanced_questions.json",
                            Path(features) if features else data / "features", val if val.exists() else None, onto)
    if questions is None or features is None:
        raise ValueError("dataset_files needs a dataset folder, or both questions and features")
    return DatasetFiles(Path(questions), Path(features), Path(val_questions) if val_questions else None,
                        Path(ontology) if ontology else None)


def validation_questions(path, limit: int = 0) -> list:
    """The validation questions (the first ``limit`` when it is not 0), or none without a file."""
    from nablafol.data import load_questions
    questions = list(load_questions(path).values()) if path else []
    return questions[:limit] if limit else questions
