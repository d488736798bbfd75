"""CRIC's files: question files, scene graphs (Visual Genome's layout) and predictions.

**Questions** (``train_questions.json``, ``val_questions.json``, ``test_v1_questions.json``,
layout of https://cricvqa.github.io; see ``tests/fixtures/cric/SOURCE.md``): a JSON list of ::

    {"sub_graph": {"relations": [...], "attributes": [...], "knowledge_items": [...]},
     "image_id": 2370436, "question": "What tableware can lift the object on the plate?",
     "question_id": "11", "question_type": "QueryObjSG", "answer": "fork",
     "target": [1058498],                      # the ground-truth grounding: object ids
     "program": [{"function": "Initial", "text_input": [], "output": [...]}, ...],
     "wrong_part": ""}                         # why, when the answer is "no"

The program is read by :mod:`nablafol.dsl.cric` when it is compiled or scored;
:meth:`CricQuestion.program_source` hands it to a compiler as ``("cric", steps)``.

**Scene graphs** (``scene_graphs.json``, "similar to the annotations in Visual Genome"): a
list of ``{"image_id", "objects": [{"object_id", "x", "y", "w", "h", "names": [...],
"attributes": [...]}], "relationships": [{"predicate", "subject_id", "object_id"}]}``, read
into nablafol's :class:`~nablafol.data.SceneGraph` (the first of ``names`` is the object's
name; ``width``/``height`` when the image has them, else the extent of its boxes).

**Knowledge graph** (``knowledge_graph.json``, ``<head, relation, tail>`` items): read by
:meth:`nablafol.graph_oracles.KnowledgeBase.load` (a list of triples or of
``{"head", "relation", "tail"}`` objects).

**Predictions.** CRIC publishes no evaluation script or submission format; a model answers
and points at one object (``docs/benchmarks.md``)::

    {"11": {"answer": "fork", "grounding": 1058498, "modules": [[...], [...], ...]}}

``grounding`` is the chosen object id (null for "no object": what a "no" asks for);
``modules`` (optional) lists, step by step, the object ids each function found (null for a
step not predicted), for the per-module IoU. A nablafol ``--details`` file (JSON lines with
``questionId``, ``prediction`` and ``attention``) is read as predictions too: the grounding
is the most attended object (:func:`grounding_from_attention`); a run's module outputs
are the objects each step's attention finds (:func:`objects_found`).

    >>> grounding_from_attention({"7": 0.2, "9": 0.9, "scene": 1.0}, "fork"), grounding_from_attention({"7": 1.0}, "no")
    ('9', None)
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from nablafol.data.fields import RecordChecker, json_type, unique_by_id
from nablafol.data.files import atomic_writer, json_inputs, not_text, open_text
from nablafol.data.json_stream import decoder_limit, json_line, load_json
from nablafol.data.questions import ProgramSource
from nablafol.data.scene_graphs import SceneGraph, scene_graph_from_record
from nablafol.errors import InputFileError

__all__ = ["CricQuestion", "CricPrediction", "load_cric_questions", "load_cric_scene_graphs",
           "read_cric_predictions", "write_cric_predictions", "grounding_from_attention", "objects_found", "prediction_from_attentions", "VERIFY",
           "RECOGNIZE"]

VERIFY, RECOGNIZE = "Verify", "Recognize"
_KNOWN = ("image_id", "question", "question_id", "question_type", "answer", "target", "program", "wrong_part")
_SCENE = "scene"  # nablafol's scene pseudo-object: never a CRIC candidate


def _object_id(check: RecordChecker, value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or value == "":
        raise check.fail(f"{what} must be an object id (an integer or a string), found {json_type(value)}")
    return str(value)


@dataclass(frozen=True, slots=True)
class CricQuestion:
    """One CRIC question; ``program`` is the raw list of steps, ``target`` the ground-truth
    grounding (object ids as strings)."""

    id: str
    image_id: str
    question: str | None
    question_type: str | None
    answer: str | None
    target: tuple[str, ...]
    program: tuple[dict, ...]
    wrong_part: str | None = None
    extra_json: str = "{}"

    @property
    def group(self) -> str:
        """CRIC's answer group: ``Verify`` when the answer is yes or no, else ``Recognize``."""
        return VERIFY if self.answer in ("yes", "no") else RECOGNIZE

    def program_source(self) -> ProgramSource:
        """``("cric", steps)``: for :meth:`nablafol.compiler.cric.CricCompiler.compile_json`."""
        return ProgramSource("cric", self.program)

    def record(self) -> dict[str, Any]:
        """The record's fields by their file names (for slicing scores by any field)."""
        return {"image_id": self.image_id, "question": self.question, "question_id": self.id,
                "question_type": self.question_type, "answer": self.answer, "target": list(self.target),
                "program": list(self.program), "wrong_part": self.wrong_part, "group": self.group,
                **json.loads(self.extra_json)}


@dataclass(frozen=True, slots=True)
class CricPrediction:
    """A model's answer, the one object it points at (None: no object), and optionally the
    objects each step of the program found (None where a step was not predicted)."""

    answer: str | None
    grounding: str | None = None
    modules: tuple[tuple[str, ...] | None, ...] | None = None


def _question(path, index: int, record: Any) -> CricQuestion:
    check = RecordChecker(path, f"item {index}")
    check.record(record, "a CRIC question", ("question_id", "image_id", "program"))
    qid = _object_id(check, record["question_id"], "question_id")
    check = RecordChecker(path, f"question {qid}")
    image = _object_id(check, record["image_id"], "image_id")
    program = record["program"]
    if not isinstance(program, list) or not all(isinstance(step, dict) for step in program):
        raise check.fail("program must be a list of {function, text_input, output} steps")
    target = record.get("target", [])
    if not isinstance(target, list):
        raise check.fail(f"target must be a list of object ids, found {json_type(target)}")
    sub_graph = record.get("sub_graph")
    if sub_graph is not None:
        check.object(sub_graph, "sub_graph")
    extra = {k: v for k, v in record.items() if k not in _KNOWN}  # sub_graph among them, verbatim
    return CricQuestion(
        id=qid, image_id=image, question=check.optional_string(record.get("question"), "question"),
        question_type=check.optional_string(record.get("question_type"), "question_type"),
        answer=check.optional_string(record.get("answer"), "answer"),
        target=tuple(_object_id(check, t, "an id of target") for t in target), program=tuple(program),
        wrong_part=check.optional_string(record.get("wrong_part"), "wrong_part"),
        extra_json=json.dumps(extra, sort_keys=True) if extra else "{}")


def load_cric_questions(path: str | os.PathLike) -> dict[str, CricQuestion]:
    """``{question_id: CricQuestion}`` from a CRIC question file (or a folder of them), in order."""
    out: dict[str, CricQuestion] = {}
    for part in json_inputs(path):
        records = load_json(part, expected_type=list, expected="a JSON list of CRIC questions")
        unique_by_id(part, (_question(part, index, record) for index, record in enumerate(records)), out)
    return out


def load_cric_scene_graphs(path: str | os.PathLike) -> dict[str, SceneGraph]:
    """``{image_id: SceneGraph}`` from CRIC's ``scene_graphs.json`` (Visual Genome's layout)."""
    images = load_json(path, expected_type=list, expected="a JSON list of Visual Genome scene graphs")
    out: dict[str, SceneGraph] = {}
    for index, image in enumerate(images):
        check = RecordChecker(path, f"item {index}")
        check.object(image, "a scene graph")
        if "image_id" not in image:
            raise check.fail("image_id is missing")
        image_id = _object_id(check, image["image_id"], "image_id")
        if image_id in out:
            raise InputFileError(path, "appears twice", f"image {image_id}")
        out[image_id] = scene_graph_from_record(image_id, _gqa_layout(path, image_id, image), path=path)
    return out


def _gqa_layout(path, image_id: str, image: dict) -> dict:
    """A Visual Genome scene graph as GQA's ``{"width", "height", "objects": {id: ...}}``
    record, for the one scene-graph reader (which checks every field)."""
    check = RecordChecker(path, f"image {image_id}")
    objects: dict[str, dict] = {}
    for raw in check_list(check, image.get("objects", []), "objects"):
        check.object(raw, "an object")
        if "object_id" not in raw:
            raise check.fail("an object has no object_id")
        oid = _object_id(check, raw["object_id"], "object_id")
        if oid in objects:
            raise check.fail(f"object {oid} appears twice")
        names = raw.get("names", [raw["name"]] if "name" in raw else None)
        if not isinstance(names, list) or not names:
            raise check.fail(f"object {oid}: names must be a non-empty list of strings")
        gqa = {k: raw[k] for k in ("x", "y", "w", "h") if k in raw}
        gqa.update(name=names[0], attributes=raw.get("attributes", []), relations=[])
        objects[oid] = gqa
    for raw in check_list(check, image.get("relationships", []), "relationships"):
        check.object(raw, "a relationship")
        for key in ("predicate", "subject_id", "object_id"):
            if key not in raw:
                raise check.fail(f"a relationship has no {key}")
        subject = _object_id(check, raw["subject_id"], "subject_id")
        if subject not in objects:
            raise check.fail(f"relationship {raw['predicate']!r}: subject {subject} is not an object of this image")
        objects[subject]["relations"].append({"name": raw["predicate"],
                                              "object": _object_id(check, raw["object_id"], "object_id")})
    extent_w = max((_number(o.get("x")) + _number(o.get("w")) for o in objects.values()), default=1.0)
    extent_h = max((_number(o.get("y")) + _number(o.get("h")) for o in objects.values()), default=1.0)
    return {"width": image.get("width", max(extent_w, 1.0)), "height": image.get("height", max(extent_h, 1.0)),
            "objects": objects}


def check_list(check: RecordChecker, value: Any, what: str) -> list:
    if not isinstance(value, list):
        raise check.fail(f"{what} must be a list, found {json_type(value)}")
    return value


def _number(value: Any) -> float:
    # only for the image extent; the scene-graph reader checks every box itself
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


# -- predictions ---------------------------------------------------------------------------

def grounding_from_attention(attention: Mapping[str, float], answer: str | None,
                             candidates: Iterable[str] | None = None) -> str | None:
    """The one object a run points at: none for a "no" answer, else the most attended of the
    candidates (the attention's objects, the scene pseudo-object left out; ties: the first)."""
    if answer is None or answer == "no":
        return None
    ids = [c for c in (attention if candidates is None else candidates) if c != _SCENE and c in attention]
    if not ids:
        return None
    return max(ids, key=lambda c: attention[c])  # max keeps the first of equal values


def objects_found(attention: Mapping[str, float], threshold: float = 0.5) -> tuple[str, ...]:
    """The objects an attention puts at or above ``threshold`` (what a module found, for
    ``modules``), in the attention's order, the scene pseudo-object left out."""
    return tuple(c for c, p in attention.items() if c != _SCENE and p >= threshold)


def prediction_from_attentions(answer: str | None, attention: Mapping[str, float],
                               steps: Mapping[int, Mapping[str, float]] | None = None, n_steps: int = 0,
                               threshold: float = 0.5) -> CricPrediction:
    """A run's CRIC prediction: its answer, the object its final attention points at, and the
    objects each step's attention finds (``steps``: step index -> attention; other steps None).

    >>> prediction_from_attentions("fork", {"1": 0.9, "2": 0.1}, {0: {"1": 1.0, "2": 1.0}}, n_steps=2)
    CricPrediction(answer='fork', grounding='1', modules=(('1', '2'), None))
    """
    modules = None
    if steps is not None:
        modules = tuple(objects_found(steps[i], threshold) if i in steps else None for i in range(n_steps))
    return CricPrediction(answer, grounding_from_attention(attention, answer), modules)


def read_cric_predictions(path: str | os.PathLike) -> dict[str, CricPrediction]:
    """``{question_id: CricPrediction}`` from CRIC predictions (the JSON object above) or from a
    nablafol ``--details`` file (JSON lines)."""
    with open_text(path) as stream:
        try:
            text = stream.read()
        except UnicodeDecodeError as error:
            raise not_text(path, error) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        if error.msg != "Extra data":  # JSON lines decode as one value followed by extra data
            raise InputFileError(path, f"not valid JSON at line {error.lineno}, column {error.colno}: "
                                       f"{error.msg}") from None
        return _from_details(path, text)
    except (RecursionError, ValueError) as error:  # after its subclass above: beyond the decoder's limits
        raise InputFileError(path, f"cannot be used: {decoder_limit(error)}") from None
    if isinstance(data, dict) and "questionId" in data:  # a details file of one line
        return _from_details(path, text)
    if not isinstance(data, dict):
        raise InputFileError(path, 'expected {question_id: {"answer", "grounding", "modules"?}} at the top level, '
                                   f"found {json_type(data)}")
    out: dict[str, CricPrediction] = {}
    for qid, entry in data.items():
        check = RecordChecker(path, f"question {qid}")
        check.object(entry, "a prediction")
        if "answer" not in entry:
            raise check.fail("answer is missing")
        grounding = entry.get("grounding")
        out[qid] = CricPrediction(check.optional_string(entry["answer"], "answer"),
                                  None if grounding is None else _object_id(check, grounding, "grounding"),
                                  _modules(check, entry.get("modules")))
    return out


def _modules(check: RecordChecker, value: Any) -> tuple[tuple[str, ...] | None, ...] | None:
    """``modules``: per step, a list of object ids or null."""
    if value is None:
        return None
    return tuple(None if m is None else tuple(_object_id(check, i, "an id in modules")
                                              for i in check_list(check, m, "a step of modules"))
                 for m in check_list(check, value, "modules"))


def _from_details(path, text: str) -> dict[str, CricPrediction]:
    out: dict[str, CricPrediction] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        check = RecordChecker(path, f"line {number}")
        record = json_line(line, path, f"line {number}")
        check.object(record, "a details line")
        if "questionId" not in record:
            raise check.fail("questionId is missing")
        qid = check.string(record["questionId"], "questionId")
        if qid in out:
            raise check.fail(f"question {qid} appears twice")
        answer = check.optional_string(record.get("prediction"), "prediction")
        attention = check.probability_map(record.get("attention") or {}, "attention")
        out[qid] = CricPrediction(answer, grounding_from_attention(attention, answer),
                                  _modules(check, record.get("modules")))
    return out


def write_cric_predictions(path: str | os.PathLike, predictions: Mapping[str, CricPrediction]) -> int:
    """Write CRIC predictions (the JSON object above); returns how many."""
    def entry(p: CricPrediction) -> dict:
        out: dict[str, Any] = {"answer": p.answer, "grounding": p.grounding}
        if p.modules is not None:
            out["modules"] = [None if m is None else list(m) for m in p.modules]
        return out
    with atomic_writer(path) as stream:
        stream.write(json.dumps({qid: entry(p) for qid, p in predictions.items()}, indent=1) + "\n")
    return len(predictions)
