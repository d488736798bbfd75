"""The reasoning evaluation score of the paper (section 4, Tables 1-3) for any predictions.

A *base model* (trained oracle + parameter-free DFOL on the golden programs) splits a test
set ``T`` into the easy set ``T_e`` (questions it answers correctly: perception alone
suffices) and the hard set ``T_h`` (the rest, including the questions it gave no
prediction for). Any model ``M`` on the same visual features is then scored by

    Acc_h = accuracy of M on T_h        Err_e = error of M on T_e = 1 - accuracy on T_e

each with its consistency, for all / open / binary questions (:mod:`nablafol.scoring.scorer`
gives the definitions; counted over the balanced
questions, as GQA counts them). ``M`` need not be a DFOL model: only its predictions are read.

Hard / easy consistency (the paper does not say; decided here): the hard set is scored as
a test set of its own -- anchors are the hard questions ``M`` answers correctly, and their
entailed questions are looked up *in the hard set only* (same for easy). Reasons:

- The paper's tables call the subsets "Hard Test-Dev" and "Easy Test-Dev", i.e. test sets
  evaluated like Test-Dev, where GQA only looks up entailed questions inside the set.
- Its observation that "even when models struggle on the hard set, their struggle is
  consistent across logically related questions" is only a statement about the hard set
  if the related questions are hard too. Looked up in the whole set, a hard anchor's easy
  neighbours -- which any perception-based model answers well -- would lift the hard
  consistency whatever the model does on hard questions.
- It fits Table 3: ∇-FOL, nearly the base model (Acc_h 1.81%, Err_e 2.39%), has hard
  consistency 19.44% against 89.90% easy. Within the hard set a near-base model must
  score low (the entailed hard questions are mostly wrong); whole-set lookups would
  mix in its ~97%-right easy questions.

Consequence (tested): the ``hard`` row equals the ``overall`` row of ``score`` run on the
hard questions alone, and the base model has ``Acc_h = Err_e = 0``, hard consistency
``None`` (no correct anchor) and easy consistency 1 (or ``None``).

>>> from types import SimpleNamespace as Q
>>> qs = [Q(id="1", answer="red", entailed=("2",), types={"structural": "query"}),
...       Q(id="2", answer="yes", entailed=("1",), types={"structural": "verify"})]
>>> split = make_split(qs, {"1": "blue", "2": "yes"})
>>> split.easy, split.hard
(('2',), ('1',))
>>> score(qs, {"1": "red", "2": "no"}, split).to_json()["hard"]["all"]
{'accuracy': 1.0, 'consistency': None, 'count': 1}
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike

from nablafol.scoring.answers import AnswerMatch, exact_match
from nablafol.scoring.questions import (ANSWER_GROUPS, BinaryOverride, ScorableQuestion, ScoringError,
                                        check_predictions, check_questions, prediction_of)
from nablafol.scoring.scorer import Scorer, SubsetScore, update_together
from nablafol.scoring.slices import SliceReport

__all__ = ["Scores", "Split", "make_split", "score"]

_GROUP_LABELS = {"open": "Open", "binary": "Binary", "all": "All"}
_TABLE_ROWS = ("open", "binary", "all")  # the paper's row order


def _id_tuple(ids: object, what: str) -> tuple[str, ...]:
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise ScoringError(f"split: {what!r} must be a list of question ids, got {type(ids).__name__}")
    bad = [i for i in ids if not isinstance(i, str)]  # not next(..., None): null is a bad id too
    if bad:
        raise ScoringError(f"split: {what!r} holds a non-string question id {bad[0]!r}")
    return tuple(ids)


@dataclass(frozen=True)
class Split:
    """The hard / easy split of a question set by a base model's predictions.

    ``easy`` and ``hard`` are disjoint and, for the set they were made from, cover it.
    ``base_missing`` names the hard questions the base model gave no prediction for.
    """

    easy: tuple[str, ...]
    hard: tuple[str, ...]
    base_missing: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        lists = {name: _id_tuple(getattr(self, name), name) for name in ("easy", "hard", "base_missing")}
        for name, ids in lists.items():
            object.__setattr__(self, name, ids)
            seen: set[str] = set()
            twice = next((i for i in ids if i in seen or seen.add(i)), None)
            if twice is not None:
                raise ScoringError(f"split: question {twice!r} appears twice in {name!r}")
        both = set(self.easy) & set(self.hard)
        if both:
            raise ScoringError(
                f"split: {len(both)} question(s) are both easy and hard (e.g. {min(both)!r})"
            )
        stray = set(self.base_missing) - set(self.hard)
        if stray:
            raise ScoringError(
                f"split: {len(stray)} question(s) the base model missed are not hard (e.g. {min(stray)!r})"
            )

    def to_json(self, base_path: str | PathLike, questions_path: str | PathLike) -> dict:
        """The ``nablafol split`` file: io-formats' fields plus ``base_missing``."""
        return {
            "easy": list(self.easy),
            "hard": list(self.hard),
            "base": str(base_path),
            "questions": str(questions_path),
            "base_missing": list(self.base_missing),
        }

    @classmethod
    def from_json(cls, data: object) -> Split:
        """Read back :meth:`to_json`'s object (``base_missing`` optional)."""
        if not isinstance(data, Mapping):
            raise ScoringError(f"split: expected a JSON object, got {type(data).__name__}")
        absent = [key for key in ("easy", "hard") if key not in data]
        if absent:
            raise ScoringError(f"split: missing the {absent[0]!r} list")
        return cls(easy=data["easy"], hard=data["hard"], base_missing=data.get("base_missing", ()))


def make_split(questions: Iterable[ScorableQuestion], base_predictions: Mapping[str, str], *,
               match: AnswerMatch = exact_match) -> Split:
    """Easy = questions the base model answers correctly (exact match), hard = the rest.

    Lists keep the questions' order; a question without a base prediction is hard and
    listed in ``base_missing``.
    """
    checked = check_questions(questions)
    base_predictions = check_predictions(base_predictions)
    easy, hard, missing = [], [], []
    for question in checked:
        predicted = prediction_of(base_predictions, question.id)
        (easy if match(predicted, question.answer) else hard).append(question.id)
        if predicted is None:
            missing.append(question.id)
    return Split(easy=tuple(easy), hard=tuple(hard), base_missing=tuple(missing))


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


@dataclass(frozen=True)
class Scores:
    """Scores of one predictions set: ``overall``, and ``hard`` / ``easy`` given a split.

    ``unknown_predictions`` names predictions for questions outside the set (ignored);
    ``slices`` the accuracy per value of a field (``nablafol score --by``), or None.
    """

    overall: SubsetScore
    hard: SubsetScore | None = None
    easy: SubsetScore | None = None
    unknown_predictions: tuple[str, ...] = ()
    slices: SliceReport | None = None

    @property
    def nothing_matched(self) -> bool:
        """No prediction is for a question of the set (another split's file, or ``[]``): every
        score is 0 for a reason that is not the model's."""
        count = self.overall.count["all"]
        return count > 0 and len(self.missing) >= count

    @property
    def missing(self) -> tuple[str, ...]:
        """Questions of the set without a prediction (counted wrong)."""
        return self.overall.missing

    def to_json(self) -> dict:
        """The ``nablafol score --json`` object of io-formats.md, fractions in [0, 1], and under
        ``gqa`` every metric of GQA's script on the whole set (:meth:`SubsetScore.gqa_json`)."""
        result = {"overall": self.overall.to_json("accuracy")}
        if self.hard is not None and self.easy is not None:
            result["hard"] = self.hard.to_json("accuracy")
            result["easy"] = self.easy.to_json("error")
        result["gqa"] = self.overall.gqa_json()
        if self.slices is not None:
            result["by"] = self.slices.to_json()
        return result

    def notes(self) -> list[str]:
        """One line per thing scored differently from the plain case: questions left out or
        counted wrong, inputs ignored (what GQA's script would refuse or crash on)."""
        overall, lines = self.overall, []
        if overall.unbalanced:
            lines.append(f"unbalanced questions: {overall.unbalanced} left out (isBalanced false, as GQA's "
                         f"eval.py; still read as entailed questions by consistency)")
        if self.missing:
            lines.append(f"missing predictions: {len(self.missing)} (counted wrong), e.g. {self.missing[0]!r}")
        if self.unknown_predictions:
            lines.append(f"predictions for questions outside the set: {len(self.unknown_predictions)} "
                         f"(ignored), e.g. {self.unknown_predictions[0]!r}")
        if overall.without_choices:
            lines.append(f"questions without choices: {overall.without_choices} (counted neither valid nor plausible)")
        if overall.without_attention:
            lines.append(f"questions without attention: {overall.without_attention} (grounding 0)")
        return lines

    def format_table(self) -> str:
        """A table like the paper's Tables 1-3: rows Open / Binary / All, percentages.

        ``-`` marks an undefined value (no question, or no consistency anchor).
        """
        groups = [("Overall", self.overall, "Accuracy", "accuracy")]
        if self.hard is not None and self.easy is not None:
            groups += [("Hard", self.hard, "Acc_h", "accuracy"), ("Easy", self.easy, "Err_e", "error")]
        columns = [("Split", [_GROUP_LABELS[g] for g in _TABLE_ROWS])]
        spans = []
        for title, subset, rate_header, rate in groups:
            spans.append((title, len(columns)))
            rates = getattr(subset, rate)
            columns += [
                (rate_header, [_percent(rates[g]) for g in _TABLE_ROWS]),
                ("Consistency", [_percent(subset.consistency[g]) for g in _TABLE_ROWS]),
                ("Count", [str(subset.count[g]) for g in _TABLE_ROWS]),
            ]
        widths = [max(len(header), *(len(cell) for cell in cells)) for header, cells in columns]

        def line(cells: Sequence[str]) -> str:
            first = cells[0].ljust(widths[0])
            rest = (cell.rjust(width) for cell, width in zip(cells[1:], widths[1:]))
            return "  ".join([first, *rest]).rstrip()

        title_cells = [""] * len(columns)
        for title, start in spans:
            title_cells[start] = title
        # Group titles start over their group's first column, left-aligned there.
        title_line = "  ".join(cell.ljust(width) for cell, width in zip(title_cells, widths)).rstrip()
        lines = [title_line, line([header for header, _ in columns])]
        lines += [line([cells[row] for _, cells in columns]) for row in range(len(_TABLE_ROWS))]
        return "\n".join(lines + self.notes())


def _check_split_covers(split: Split, questions: list[ScorableQuestion]) -> None:
    ids = {q.id for q in questions}
    unknown = [i for i in (*split.easy, *split.hard) if i not in ids]
    if unknown:
        raise ScoringError(
            f"split names {len(unknown)} question(s) not in the question set (e.g. {unknown[0]!r})"
        )
    named = set(split.easy) | set(split.hard)
    uncovered = [q.id for q in questions if q.id not in named]
    if uncovered:
        raise ScoringError(
            f"split misses {len(uncovered)} question(s) of the question set (e.g. {uncovered[0]!r})"
        )


def score(questions: Iterable[ScorableQuestion], predictions: Mapping[str, str],
          split: Split | None = None, *, is_binary: BinaryOverride = None, match: AnswerMatch = exact_match,
          choices: Mapping | None = None, attentions: Mapping | None = None,
          scene_graphs: Mapping | None = None) -> Scores:
    """Every metric of ``predictions`` on ``questions``; Acc_h / Err_e given a split.

    ``split`` must cover exactly the questions given. ``is_binary`` overrides the open /
    binary rule (see :func:`nablafol.scoring.questions.answer_group`). ``choices``
    (questionId -> :class:`~nablafol.data.choices.Choices`) adds validity and plausibility;
    ``attentions`` (questionId -> attention entry) with ``scene_graphs`` (imageId ->
    :class:`~nablafol.data.SceneGraph`, for the annotated regions) adds grounding. The
    result does not depend on the order of the questions.
    """
    checked = check_questions(questions)
    predictions = check_predictions(predictions)
    if attentions is not None and scene_graphs is None:
        raise ScoringError("grounding needs the scene graphs of the questions' images (the annotated regions)")
    ids = {q.id for q in checked}
    unknown = tuple(sorted(str(k) for k in predictions if k not in ids))

    def scorer() -> Scorer:
        return Scorer(match, is_binary=is_binary, validity=choices is not None, grounding=attentions is not None)

    def update(scorers: tuple[Scorer, ...], question: ScorableQuestion) -> None:
        attention = None if attentions is None else attentions.get(question.id)
        update_together(scorers, question, prediction_of(predictions, question.id),
                        choices=None if choices is None else choices.get(question.id), attention=attention,
                        scene=None if attention is None else _scene_of(question, scene_graphs))

    overall = scorer()
    if split is None:
        for question in checked:
            update((overall,), question)
        return Scores(overall=overall.compute(), unknown_predictions=unknown)
    try:
        if not isinstance(split, Split):
            raise ScoringError(f"split must be a Split, got {type(split).__name__}")
        _check_split_covers(split, checked)
    except ScoringError:
        for question in checked:  # a question that cannot be scored is told first, as ever
            update((overall,), question)
        raise
    hard_ids = set(split.hard)
    hard, easy = scorer(), scorer()
    for question in checked:  # each question read once for the whole set and its part
        update((overall, hard if question.id in hard_ids else easy), question)
    return Scores(overall=overall.compute(), hard=hard.compute(), easy=easy.compute(), unknown_predictions=unknown)


def _scene_of(question: ScorableQuestion, scene_graphs: Mapping):
    image = getattr(question, "image_id", None)
    graph = scene_graphs.get(image) if image is not None else None
    if graph is None:
        raise ScoringError(f"question {question.id!r}: no scene graph for its image {image!r} "
                           f"(grounding reads the annotated objects' boxes there)")
    return graph
