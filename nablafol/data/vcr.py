"""VCR's files (and GD-VCR's, which share them): ``{split}.jsonl`` annotations, per-image
metadata with the detections' boxes, and the leaderboard's predictions CSV.

An annotation line (https://github.com/rowanz/r2c, ``dataloaders/vcr.py``; GD-VCR adds
``region``, ``keywords``, ... see ``tests/fixtures/vcr/SOURCE.md``) writes text as tokens,
where a token is a word or a list of detection indices (``[2]`` is ``[person3]``: the third
entry of ``objects``)::

    {"annot_id": "val-0", "objects": ["person", "person", "person", "car"],
     "img_fn": "lsmdc_.../....jpg", "metadata_fn": "lsmdc_.../....json",
     "question": ["Does", [2], "feel", "comfortable", "?"],
     "answer_choices": [["Yes", ...], ["No", "she", "does", "not", "."], ...], "answer_label": 1,
     "rationale_choices": [[...], ...], "rationale_label": 1, "movie": "...", ...}

The metadata file of an image (``metadata_fn``, under the images folder) holds ``boxes``
``[[x1, y1, x2, y2, score], ...]`` in the order of ``objects``: a tag names the box at its
index (:meth:`VcrItem.tagged_boxes`). The leaderboard takes a CSV (``models/eval_for_leaderboard.py``
of r2c): ``annot_id``, ``answer_0`` .. ``answer_3`` and ``rationale_conditioned_on_a{i}_{j}``
for each answer ``i`` and rationale ``j`` (probabilities); GD-VCR scores answers only, so the
rationale columns may be left out (all or none).

    >>> item = vcr_item_from_record({"annot_id": "val-0", "objects": ["person", "person", "car"],
    ...     "question": ["What", "are", [0, 1], "doing", "near", [2], "?"],
    ...     "answer_choices": [["Talking", "."], ["Driving", [2], "."]], "answer_label": 0}, "<record>", 1)
    >>> item.text(item.question)
    'What are [person1] and [person2] doing near [car3] ?'
    >>> item.tags
    (0, 1, 2)
"""
from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from nablafol.data.fields import RecordChecker, json_type
from nablafol.data.files import atomic_writer, not_text, open_text
from nablafol.data.json_stream import json_line, load_json
from nablafol.errors import InputFileError

__all__ = ["VcrItem", "VcrPrediction", "load_vcr", "vcr_item_from_record", "read_vcr_predictions",
           "write_vcr_predictions", "Token"]

Token = str | tuple[int, ...]
Box = tuple[float, float, float, float]
_KNOWN = ("annot_id", "objects", "question", "answer_choices", "answer_label", "rationale_choices",
          "rationale_label", "img_fn", "metadata_fn")


@dataclass(frozen=True, slots=True)
class VcrItem:
    """One VCR question: tokens with tags (tuples of detection indices), labels (None in the
    test split), and the detections' boxes when the metadata was read."""

    annot_id: str
    objects: tuple[str, ...]
    question: tuple[Token, ...]
    answer_choices: tuple[tuple[Token, ...], ...]
    answer_label: int | None = None
    rationale_choices: tuple[tuple[Token, ...], ...] = ()
    rationale_label: int | None = None
    img_fn: str | None = None
    metadata_fn: str | None = None
    boxes: tuple[Box, ...] | None = None
    extra_json: str = "{}"

    @property
    def id(self) -> str:
        return self.annot_id

    @property
    def tags(self) -> tuple[int, ...]:
        """Every detection the question, answers and rationales name, sorted."""
        texts = (self.question, *self.answer_choices, *self.rationale_choices)
        return tuple(sorted({i for text in texts for token in text if isinstance(token, tuple) for i in token}))

    def tag_name(self, index: int) -> str:
        """``[person3]`` for detection 2 (VCR numbers detections from 1 in text)."""
        return f"[{self.objects[index]}{index + 1}]"

    def text(self, tokens) -> str:
        """Tokens joined by spaces, each tag written as its names (``[person1] and [person2]``)."""
        words = []
        for token in tokens:
            if isinstance(token, tuple):
                names = [self.tag_name(i) for i in token]
                words.append(names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1])
            else:
                words.append(token)
        return " ".join(words)

    def tagged_boxes(self) -> dict[str, Box]:
        """``{"[person3]": (x1, y1, x2, y2)}`` for every tagged detection (needs the metadata)."""
        if self.boxes is None:
            raise ValueError(f"{self.annot_id}: boxes were not read (give the images folder)")
        return {self.tag_name(i): self.boxes[i] for i in self.tags}

    def record(self) -> dict[str, Any]:
        """The record's fields by their file names (tags as lists), for slicing scores by any field."""
        def tokens(text):
            return [list(t) if isinstance(t, tuple) else t for t in text]
        return {"annot_id": self.annot_id, "objects": list(self.objects), "question": tokens(self.question),
                "answer_choices": [tokens(c) for c in self.answer_choices], "answer_label": self.answer_label,
                "rationale_choices": [tokens(c) for c in self.rationale_choices],
                "rationale_label": self.rationale_label, "img_fn": self.img_fn, "metadata_fn": self.metadata_fn,
                **json.loads(self.extra_json)}


@dataclass(frozen=True, slots=True)
class VcrPrediction:
    """A model's probabilities for one question: one per answer choice, and (optionally) one
    per rationale choice given each answer choice (``rationales[i][j]``: rationale ``j``
    given answer ``i``)."""

    answers: tuple[float, ...]
    rationales: tuple[tuple[float, ...], ...] | None = None


def vcr_item_from_record(record: Any, path, line: int) -> VcrItem:
    """One decoded annotation line, checked (tags must name detections of ``objects``)."""
    check = RecordChecker(path, f"line {line}")
    check.record(record, "a VCR record", ("annot_id", "objects", "question", "answer_choices"))
    annot_id = check.string(record["annot_id"], "annot_id")
    check = RecordChecker(path, f"line {line}, {annot_id}")
    objects = check.string_list(record["objects"], "objects")

    def text(value, what) -> tuple[Token, ...]:
        if not isinstance(value, list):
            raise check.fail(f"{what} must be a list of tokens, found {json_type(value)}")
        out: list[Token] = []
        for token in value:
            if isinstance(token, str):
                out.append(token)
            elif isinstance(token, list) and token:
                tag = tuple(check.integer(i, f"a tag in {what}", 0, 2**31) for i in token)
                bad = [i for i in tag if i >= len(objects)]
                if bad:
                    raise check.fail(f"{what}: tag [{bad[0]}] names no detection ({len(objects)} objects)")
                out.append(tag)
            else:
                raise check.fail(f"{what}: a token is a word or a non-empty list of detection indices, "
                                 f"found {json_type(token)}")
        return tuple(out)

    def choices(key) -> tuple[tuple[Token, ...], ...]:
        value = record.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not value:
            raise check.fail(f"{key} must be a non-empty list of token lists")
        return tuple(text(c, f"{key}[{i}]") for i, c in enumerate(value))

    answers, rationales = choices("answer_choices"), choices("rationale_choices")
    if not answers:
        raise check.fail("answer_choices is empty")

    def label(key, options) -> int | None:
        value = record.get(key)
        if value is None:
            return None
        if not options:
            raise check.fail(f"{key} is given but there are no choices to label")
        return check.integer(value, key, 0, len(options) - 1)

    extra = {k: v for k, v in record.items() if k not in _KNOWN}
    return VcrItem(annot_id, objects, text(record["question"], "question"), answers, label("answer_label", answers),
                   rationales, label("rationale_label", rationales),
                   check.optional_string(record.get("img_fn"), "img_fn"),
                   check.optional_string(record.get("metadata_fn"), "metadata_fn"),
                   extra_json=json.dumps(extra, sort_keys=True) if extra else "{}")


def load_vcr(path: str | os.PathLike, images: str | os.PathLike | None = None) -> dict[str, VcrItem]:
    """``{annot_id: VcrItem}`` from a ``{split}.jsonl`` file, in file order; with ``images``
    (the folder ``metadata_fn`` is relative to), each item carries its detections' boxes."""
    items: dict[str, VcrItem] = {}
    with open_text(path) as stream:
        try:
            for number, line in enumerate(stream, start=1):
                if not line.strip():
                    continue
                item = vcr_item_from_record(json_line(line, path, f"line {number}"), path, number)
                if item.annot_id in items:
                    raise InputFileError(path, "appears twice", f"line {number}, {item.annot_id}")
                items[item.annot_id] = item
        except UnicodeDecodeError as error:
            raise not_text(path, error) from None
    if images is not None:
        cache: dict[str, tuple[Box, ...]] = {}
        for annot_id, item in items.items():
            if item.metadata_fn is None:
                raise InputFileError(path, "metadata_fn is missing: its boxes cannot be found", annot_id)
            if item.metadata_fn not in cache:
                cache[item.metadata_fn] = read_boxes(Path(images) / item.metadata_fn)
            boxes = cache[item.metadata_fn]
            short = [i for i in item.tags if i >= len(boxes)]
            if short:
                raise InputFileError(Path(images) / item.metadata_fn,
                                     f"has {len(boxes)} boxes, {item.tag_name(short[0])} of {annot_id} needs more")
            items[annot_id] = _with_boxes(item, boxes)
    return items


def _with_boxes(item: VcrItem, boxes) -> VcrItem:
    from dataclasses import replace
    return replace(item, boxes=boxes)


def read_boxes(path: Path) -> tuple[Box, ...]:
    """The ``boxes`` of one image's metadata file, as ``(x1, y1, x2, y2)`` (the score dropped)."""
    data = load_json(path, expected_type=dict, expected='an image metadata object {"boxes": [...], ...}')
    check = RecordChecker(path, "boxes")
    if "boxes" not in data or not isinstance(data["boxes"], list):
        raise check.fail("must be a list of [x1, y1, x2, y2, score] boxes")
    out = []
    for i, box in enumerate(data["boxes"]):
        if not isinstance(box, list) or len(box) not in (4, 5):
            raise InputFileError(path, "a box is [x1, y1, x2, y2] or [x1, y1, x2, y2, score]", f"box {i}")
        x1, y1, x2, y2 = (check.number(v, f"box {i}") for v in box[:4])
        if x2 < x1 or y2 < y1:
            raise InputFileError(path, f"corners out of order ({x1}, {y1}, {x2}, {y2})", f"box {i}")
        out.append((float(x1), float(y1), float(x2), float(y2)))
    return tuple(out)


# -- predictions: the leaderboard CSV ----------------------------------------------------------

def _rationale_column(answer: int, rationale: int) -> str:
    return f"rationale_conditioned_on_a{answer}_{rationale}"


def read_vcr_predictions(path: str | os.PathLike) -> dict[str, VcrPrediction]:
    """``{annot_id: VcrPrediction}`` from a leaderboard CSV (rationale columns optional)."""
    with open_text(path) as stream:
        try:
            rows = list(csv.reader(stream))
        except (csv.Error, UnicodeDecodeError) as error:
            raise InputFileError(path, f"is not a readable CSV file ({error})") from None
    if not rows:
        raise InputFileError(path, "is empty; expected a CSV with a header annot_id,answer_0,...")
    header = [h.strip() for h in rows[0]]
    if "annot_id" not in header:
        raise InputFileError(path, "the header has no annot_id column (the leaderboard CSV: annot_id,answer_0,...)")
    n = sum(1 for h in header if h.startswith("answer_"))
    answer_cols = [f"answer_{i}" for i in range(n)]
    if n == 0 or any(c not in header for c in answer_cols):
        raise InputFileError(path, "the header needs answer_0, answer_1, ... columns")
    rationale_cols = [[_rationale_column(i, j) for j in range(n)] for i in range(n)]
    given = [h for h in header if h.startswith("rationale_conditioned_on_a")]
    if given and sorted(given) != sorted(c for row in rationale_cols for c in row):
        raise InputFileError(path, f"rationale columns must be all of rationale_conditioned_on_a{{0..{n - 1}}}_"
                                   f"{{0..{n - 1}}} or none, found {len(given)}")
    position = {h: i for i, h in enumerate(header)}
    out: dict[str, VcrPrediction] = {}
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InputFileError(path, f"has {len(row)} fields, the header {len(header)}", f"line {number}")
        annot_id = row[position["annot_id"]].strip()
        if annot_id in out:
            raise InputFileError(path, "appears twice", f"line {number}, {annot_id}")

        def number_at(column: str) -> float:
            text = row[position[column]].strip()
            try:
                value = float(text)
            except ValueError:
                raise InputFileError(path, f"{column} must be a number, found {text!r}", f"line {number}") from None
            if not math.isfinite(value):
                raise InputFileError(path, f"{column} must be a finite number, found {text}", f"line {number}")
            return value

        answers = tuple(number_at(c) for c in answer_cols)
        rationales = tuple(tuple(number_at(c) for c in cols) for cols in rationale_cols) if given else None
        out[annot_id] = VcrPrediction(answers, rationales)
    return out


def write_vcr_predictions(path: str | os.PathLike, predictions: Mapping[str, VcrPrediction]) -> int:
    """Write the leaderboard CSV (rationale columns when every prediction has them)."""
    items = list(predictions.items())
    n = len(items[0][1].answers) if items else 4
    with_rationales = bool(items) and all(p.rationales is not None for _, p in items)
    header = ["annot_id"] + [f"answer_{i}" for i in range(n)]
    if with_rationales:
        header += [_rationale_column(i, j) for i in range(n) for j in range(n)]
    with atomic_writer(path) as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(header)
        for annot_id, p in items:
            if len(p.answers) != n:
                raise ValueError(f"{annot_id}: {len(p.answers)} answer probabilities, the others have {n}")
            row = [annot_id, *map(repr, p.answers)]
            if with_rationales:
                row += [repr(v) for r in p.rationales for v in r]
            writer.writerow(row)
    return len(items)
