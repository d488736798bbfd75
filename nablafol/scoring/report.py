"""GQA's metrics as its evaluation script prints them, and as rows for a report.

:func:`format_gqa` prints a :class:`~nablafol.scoring.scorer.SubsetScore` the way GQA's
``eval.py`` does (the main metrics, then each accuracy breakdown with its question counts);
metrics that were not asked for (validity and plausibility without choices, grounding without
attentions) are left out, as the script leaves out those it was not asked for, and an
undefined value (no question, no consistency anchor) prints as ``-``.

:func:`score_run` scores a run (its predictions, and the engine's attention from its details
file) with every metric; :func:`gqa_rows` gives the rows a report table shows.

>>> from types import SimpleNamespace as Q
>>> from nablafol.scoring import score
>>> qs = [Q(id="1", answer="red", entailed=(), types={"structural": "query", "semantic": "attr"},
...         question="What color is it?", semantic=[{"operation": "query", "argument": "color"}])]
>>> print(format_gqa(score(qs, {"1": "red"}).overall))
Binary: -
Open: 100.00%
Accuracy: 100.00%
Consistency: -
Distribution: - (lower is better)
<BLANKLINE>
Accuracy / structural type:
  query: 100.00% (1 questions)
<BLANKLINE>
Accuracy / semantic type:
  attr: 100.00% (1 questions)
<BLANKLINE>
Accuracy / steps number:
  1: 100.00% (1 questions)
<BLANKLINE>
Accuracy / words number:
  4: 100.00% (1 questions)
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from nablafol.scoring.answers import AnswerMatch, vocabulary_match
from nablafol.scoring.questions import ScorableQuestion
from nablafol.scoring.scorer import SubsetScore, breakdown_order

__all__ = ["format_gqa", "gqa_rows", "score_run"]

_BREAKDOWN_TITLES = (("structural", "Accuracy / structural type"), ("semantic", "Accuracy / semantic type"),
                     ("steps", "Accuracy / steps number"), ("length", "Accuracy / words number"))


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def gqa_rows(result: SubsetScore) -> list[tuple[str, str]]:
    """``(metric, value)`` in GQA's order (binary, open, accuracy, consistency, validity,
    plausibility, grounding, distribution), the metrics not asked for left out."""
    rows = [("Binary", _percent(result.accuracy["binary"])), ("Open", _percent(result.accuracy["open"])),
            ("Accuracy", _percent(result.accuracy["all"])), ("Consistency", _percent(result.consistency["all"]))]
    if result.validity is not None:
        rows += [("Validity", _percent(result.validity)), ("Plausibility", _percent(result.plausibility))]
    if result.grounding is not None:
        rows.append(("Grounding", _percent(result.grounding)))
    distribution = "-" if result.distribution is None else f"{result.distribution:.2f}"
    rows.append(("Distribution", f"{distribution} (lower is better)"))
    return rows


def format_gqa(result: SubsetScore) -> str:
    """The scores as GQA's ``eval.py`` prints them (percentages with 2 decimals)."""
    lines = [f"{name}: {value}" for name, value in gqa_rows(result)]
    for breakdown, title in _BREAKDOWN_TITLES:
        lines += ["", f"{title}:"]
        tallies = result.breakdowns[breakdown]
        lines += [f"  {key}: {_percent(tallies[key].accuracy)} ({tallies[key].count} questions)"
                  for key in sorted(tallies, key=breakdown_order)]
    return "\n".join(lines)


def score_run(questions: Iterable[ScorableQuestion], predictions: Mapping[str, str], *,
              match: AnswerMatch = vocabulary_match, choices: Mapping | None = None,
              details: Iterable | None = None, scene_graphs: Mapping | None = None,
              regions_of: Callable[[str], Mapping] | None = None) -> SubsetScore:
    """Every metric of a run on ``questions``: validity and plausibility given the dataset's
    ``choices``; grounding given the run's ``details`` (lines with the engine's ``attention``)
    and the ``scene_graphs`` of the questions' images. ``regions_of(image)`` names the boxes of
    the attention's objects (default: the scene graph's; a run over features names objects by
    row: pass ``lambda image: feature_regions(store[image])``)."""
    from nablafol.data.attentions import attentions_from_details, scene_graph_regions
    from nablafol.scoring.scores import score
    questions = list(questions)
    attentions = None
    if details is not None:
        if scene_graphs is None:
            raise ValueError("grounding needs the scene graphs of the questions' images")
        image_of = {q.id: q.image_id for q in questions}
        regions = regions_of or (lambda image: scene_graph_regions(scene_graphs[image]))
        attentions = dict(attentions_from_details((d for d in details if d.question_id in image_of), image_of,
                                                  regions))
    return score(questions, predictions, match=match, choices=choices, attentions=attentions,
                 scene_graphs=scene_graphs).overall
