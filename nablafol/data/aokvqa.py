"""A-OKVQA's files: ``aokvqa_v1p0_{split}.json`` annotations and ``{question_id: {...}}`` predictions.

The annotation file is a JSON list of records (https://github.com/allenai/aokvqa, its
README and ``load_aokvqa.py``; see ``tests/fixtures/aokvqa/SOURCE.md``)::

    {"split": "val", "image_id": 461751, "question_id": "22jbM6gDxdaMaunuzgrsBB",
     "question": "What is in the motorcyclist's mouth?",
     "choices": ["toothpick", "food", "popsicle stick", "cigarette"], "correct_choice_idx": 3,
     "direct_answers": ["cigarette", ...ten answers...], "difficult_direct_answer": false,
     "rationales": ["He's smoking while riding.", ...three rationales...]}

The test split has no ``correct_choice_idx``, ``direct_answers`` or ``rationales``: such a
question reads (the fields are None) but cannot be scored. Predictions are the file the
official ``evaluation/eval_predictions.py`` and the leaderboard take::

    {"22jbM6gDxdaMaunuzgrsBB": {"multiple_choice": "cigarette", "direct_answer": "cigarette"}}

either key may be left out, other keys are ignored (as the official script does). Every unusable record is one :class:`InputFileError` line.

    >>> import json, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "aokvqa_v1p0_val.json"
    >>> _ = path.write_text(json.dumps([{"question_id": "q1", "image_id": 1, "question": "What?",
    ...     "choices": ["a", "b"], "correct_choice_idx": 1, "direct_answers": ["b"] * 10,
    ...     "difficult_direct_answer": False, "rationales": ["Because."]}]))
    >>> q = load_aokvqa(path)["q1"]
    >>> q.correct_choice, q.image_id, q.rationales
    ('b', '1', ('Because.',))
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Mapping

from nablafol.data.fields import RecordChecker, unique_by_id
from nablafol.data.json_stream import load_json

__all__ = ["AokvqaQuestion", "AokvqaPrediction", "load_aokvqa", "read_aokvqa_predictions", "aokvqa_predictions_json"]

_KNOWN = ("split", "image_id", "question_id", "question", "choices", "correct_choice_idx", "direct_answers",
          "difficult_direct_answer", "rationales")


@dataclass(frozen=True, slots=True)
class AokvqaQuestion:
    """One A-OKVQA record (``image_id`` as a string; answers None in the test split)."""

    id: str
    image_id: str
    question: str
    choices: tuple[str, ...]
    correct_choice_idx: int | None
    direct_answers: tuple[str, ...] | None
    difficult_direct_answer: bool
    rationales: tuple[str, ...] | None
    split: str | None = None
    extra_json: str = "{}"

    @property
    def correct_choice(self) -> str | None:
        return None if self.correct_choice_idx is None else self.choices[self.correct_choice_idx]

    def record(self) -> dict[str, Any]:
        """The record's fields by their file names (for slicing scores by any field)."""
        return {"split": self.split, "image_id": self.image_id, "question_id": self.id, "question": self.question,
                "choices": list(self.choices), "correct_choice_idx": self.correct_choice_idx,
                "direct_answers": None if self.direct_answers is None else list(self.direct_answers),
                "difficult_direct_answer": self.difficult_direct_answer,
                "rationales": None if self.rationales is None else list(self.rationales),
                **json.loads(self.extra_json)}


@dataclass(frozen=True, slots=True)
class AokvqaPrediction:
    """A model's answers to one question; either may be absent."""

    multiple_choice: str | None = None
    direct_answer: str | None = None


def load_aokvqa(path: str | os.PathLike) -> dict[str, AokvqaQuestion]:
    """``{question_id: AokvqaQuestion}`` from an ``aokvqa_v1p0_{split}.json`` file, in file order."""
    records = load_json(path, expected_type=list, expected="a JSON list of A-OKVQA records")
    return unique_by_id(path, (_question(path, index, record) for index, record in enumerate(records)))


def _question(path, index: int, record: Any) -> AokvqaQuestion:
    check = RecordChecker(path, f"record {index}")
    check.record(record, "an A-OKVQA record", ("question_id", "image_id", "question", "choices"))
    qid = check.string(record["question_id"], "question_id")
    check = RecordChecker(path, f"question {qid}")
    image = record["image_id"]
    if isinstance(image, bool) or not isinstance(image, (int, str)):
        raise check.fail("image_id must be an integer or a string")
    choices = check.string_list(record["choices"], "choices")
    if not choices:
        raise check.fail("choices is empty")
    correct = record.get("correct_choice_idx")
    if correct is not None:
        correct = check.integer(correct, "correct_choice_idx", 0, len(choices) - 1)
    answers = record.get("direct_answers")
    if answers is not None:
        answers = check.string_list(answers, "direct_answers")
        if not answers:
            raise check.fail("direct_answers is empty")
    rationales = record.get("rationales")
    if rationales is not None:
        rationales = check.string_list(rationales, "rationales")
    difficult = record.get("difficult_direct_answer", False)
    extra = {k: v for k, v in record.items() if k not in _KNOWN}
    return AokvqaQuestion(
        id=qid, image_id=str(image), question=check.string(record["question"], "question"), choices=choices,
        correct_choice_idx=correct, direct_answers=answers,
        difficult_direct_answer=check.boolean(difficult, "difficult_direct_answer"), rationales=rationales,
        split=check.optional_string(record.get("split"), "split"),
        extra_json=json.dumps(extra, sort_keys=True) if extra else "{}")


def read_aokvqa_predictions(path: str | os.PathLike) -> dict[str, AokvqaPrediction]:
    """``{question_id: AokvqaPrediction}`` from the official predictions format."""
    data = load_json(path, expected_type=dict,
                     expected='{question_id: {"multiple_choice": ..., "direct_answer": ...}}')
    out: dict[str, AokvqaPrediction] = {}
    for qid, entry in data.items():
        check = RecordChecker(path, f"question {qid}")
        check.object(entry, "a prediction")
        out[qid] = AokvqaPrediction(check.optional_string(entry.get("multiple_choice"), "multiple_choice"),
                                    check.optional_string(entry.get("direct_answer"), "direct_answer"))
    return out


def aokvqa_predictions_json(predictions: Mapping[str, AokvqaPrediction]) -> dict[str, dict[str, str]]:
    """The official predictions format of ``{question_id: AokvqaPrediction}`` (absent answers left out)."""
    return {qid: {k: v for k, v in (("multiple_choice", p.multiple_choice), ("direct_answer", p.direct_answer))
                  if v is not None} for qid, p in predictions.items()}
