"""Scoring from files: GQA's questions, a predictions file, and the optional split, choices,
attentions and scene graphs (what ``nablafol score`` reads).

Every unusable file ends in one :class:`~nablafol.errors.InputFileError` line naming it; a
split or an attentions file that does not fit the questions names that file.

>>> scores = score_files("tests/fixtures/scoring/questions.json", "tests/fixtures/scoring/model_predictions.json")
>>> scores.overall.accuracy["all"], len(scores.missing)
(0.65, 1)
"""
from __future__ import annotations

import os

from nablafol.scoring.answers import exact_match, vocabulary_match
from nablafol.scoring.questions import ScoringError
from nablafol.scoring.scores import Scores, Split, score

__all__ = ["score_files"]

PathLike = str | os.PathLike


def score_files(questions: PathLike, predictions: PathLike, *, split: PathLike | None = None,
                choices: PathLike | None = None, attentions: PathLike | None = None,
                attention_kind: str = "objects", scene_graphs: PathLike | None = None,
                exact: bool = True, by: str | None = None, reference: str | None = None) -> Scores:
    """Every metric of a predictions file; ``exact=False`` compares answers by vocabulary form;
    ``by`` adds the accuracy of every slice of that field of the question records, with its gap
    to the ``reference`` slice (default: the largest; :func:`~nablafol.scoring.slices.score_slices`)."""
    import dataclasses

    from nablafol.scoring.benchmarks import GqaAccuracy
    from nablafol.scoring.slices import score_slices
    from nablafol.data import load_questions, load_scene_graphs, read_predictions
    from nablafol.data.attentions import read_attentions
    from nablafol.data.choices import load_choices
    from nablafol.errors import InputFileError
    if attentions is not None and scene_graphs is None:
        raise ScoringError("attentions need the scene graphs of the questions' images (--scene-graphs): "
                           "grounding reads the annotated objects' boxes there")
    question_set = load_questions(questions)
    split_value = _read_split(split) if split is not None else None
    loaded_attentions = read_attentions(attentions, attention_kind) if attentions is not None else None
    match = exact_match if exact else vocabulary_match
    predicted = read_predictions(predictions)
    try:
        scores = score(question_set.values(), predicted, split_value, match=match,
                       choices=load_choices(choices) if choices is not None else None,
                       attentions=loaded_attentions,
                       scene_graphs=load_scene_graphs(scene_graphs) if scene_graphs is not None else None)
        if by is None:
            return scores
        slices = score_slices(question_set.values(), predicted, by, lambda: GqaAccuracy(match), reference,
                              record=lambda q: q.to_record())
        return dataclasses.replace(scores, slices=slices)
    except ScoringError as error:  # what does not fit the questions: name the file it came from
        if split is not None and str(error).startswith("split"):
            raise InputFileError(split, str(error)) from None
        if attentions is not None and "scene graph" in str(error):
            raise InputFileError(scene_graphs, str(error)) from None
        raise


def _read_split(path: PathLike) -> Split:
    from nablafol.data.json_stream import load_json
    from nablafol.errors import InputFileError
    data = load_json(path, expected_type=dict, expected='a split {"easy": [...], "hard": [...]}')
    try:
        return Split.from_json(data)
    except ScoringError as error:
        raise InputFileError(path, str(error).removeprefix("split: ")) from None
