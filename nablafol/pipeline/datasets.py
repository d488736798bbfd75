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

__all__ = ["DatasetFiles", "dataset_files", "validation_questions", "vocabulary_of"]


@dataclass(frozen=True)
class DatasetFiles:
    """Training questions, the features folder, validation questions and the ontology folder
    (the last two may be absent)."""

    train_questions: Path
    features: Path
    val_questions: Optional[Path] = None
    ontology: Optional[Path] = None
    ontology_extension: Optional[Path] = None  # classes joining the ontology's categories (dsl.extension)


def dataset_files(data=None, questions=None, features=None, val_questions=None, ontology=None,
                  ontology_extension=None) -> DatasetFiles:
    """From a dataset folder ``data`` (``train_balanced_questions.json``,
    ``val_balanced_questions.json``, ``features/``, ``ontology/``), or from the files given; a
    file given by name wins over the folder's; ``ontology_extension`` is a file given by name."""
    extension = Path(ontology_extension) if ontology_extension else None
    if data is not None:
        data = Path(data)
        if not data.is_dir():
            raise InputFileError(data, "no such dataset folder")
        onto = Path(ontology) if ontology else (data / "ontology" if (data / "ontology").is_dir() else None)
        val = Path(val_questions) if val_questions else data / "val_balanced_questions.json"
        return DatasetFiles(Path(questions) if questions else data / "train_balanced_questions.json",
                            Path(features) if features else data / "features", val if val.exists() else None, onto,
                            extension)
    if questions is None or features is None:
        raise ValueError("dataset_files needs a dataset folder, or both questions and features")
    return DatasetFiles(Path(questions), Path(features), Path(val_questions) if val_questions else None,
                        Path(ontology) if ontology else None, extension)


def validation_questions(path, limit: int = 0) -> list:
    """The validation questions (the first ``limit`` when it is not 0), or none without a file."""
    from nablafol.data import load_questions
    questions = list(load_questions(path).values()) if path else []
    return questions[:limit] if limit else questions


def plan_lines(files: DatasetFiles, shards: int, val_limit: int = 0) -> list[str]:
    """What each of ``shards`` shards of a training run over ``files`` reads (``nablafol train --plan``)."""
    from nablafol.data import FeatureStore
    from nablafol.pipeline.sharding import plan_report
    return plan_report(files.train_questions, FeatureStore(files.features), shards,
                       validation_questions(files.val_questions, val_limit))


def vocabulary_of(questions, scene_graphs=None, ontology=None, model=None):
    """What ``nablafol vocabulary`` prints: the concepts of a questions file (and scene graphs),
    known to ``ontology`` (a :class:`nablafol.dsl.Ontology`; GQA's by default), to the model of
    the folder ``model``, or new (a :class:`nablafol.compiler.vocabulary.VocabularyReport`)."""
    from nablafol.compiler.vocabulary import dataset_vocabulary
    model_knows = None
    if model is not None:
        from nablafol.pipeline.model_folder import load_model_folder
        model_knows = load_model_folder(model, calibrator=False).vocabulary.knows
    return dataset_vocabulary(questions, scene_graphs, ontology, model_knows)
