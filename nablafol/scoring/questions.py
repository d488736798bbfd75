"""What scoring reads of a question: GQA's fields, and the checks that a set can be scored.

Any object with GQA's fields under :class:`nablafol.data.Question`'s names can be scored; only
``id``, ``answer``, ``entailed`` and ``types`` are required, the rest are read when present
(``is_balanced``, ``question``, ``semantic``/``semantic_str``, ``groups`` and ``annotations``,
directly or in ``extra``). Where a field is missing (this module's decisions):

- no ``isBalanced``: the question is balanced (counted), as every question of a file that
  does not say;
- no ``types.structural``: binary iff the gold answer is ``yes`` or ``no``; reported under the
  structural type ``unknown`` (likewise semantic type, steps and length: ``unknown``);
- no ``semantic`` list: the steps are read from ``semanticStr`` (each ``->`` part, without its
  ``[dependencies]``, is the ``operation: argument`` text GQA's script inspects).

>>> from types import SimpleNamespace as Q
>>> q = Q(id="1", answer="no", entailed=(), types={"structural": "verify"}, question="Is the cup red?",
...       semantic=[{"operation": "select", "argument": "cup (5)"},
...                 {"operation": "verify color", "argument": "red"}])
>>> answer_group(q), words_number(q), steps_number(q), is_balanced(q)
('binary', 4, 2, True)
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from itertools import repeat
from typing import Any, Protocol, Union

from nablafol.data.questions import Question
from nablafol.errors import NablafolError

__all__ = [
    "ANSWER_GROUPS", "UNKNOWN", "BinaryOverride", "ScorableQuestion", "ScoringError", "answer_group",
    "question_types",
    "annotated_objects", "check_entailed", "check_predictions", "check_questions", "detailed_type", "global_group",
    "is_balanced", "prediction_of", "refers_to_scene", "semantic_type", "steps_number", "structural_type",
    "words_number",
]

#: The groups every table reports, in this order: all questions, open, binary.
ANSWER_GROUPS: tuple[str, ...] = ("all", "open", "binary")

#: The key of a breakdown (structural type, steps, ...) for questions that do not say.
UNKNOWN = "unknown"

_BINARY_ANSWERS = frozenset({"yes", "no"})
# GQA's eval.py: steps whose "operation: argument" text holds one of these do not add reasoning
_NOT_A_STEP = ("exist", "query: name", "choose name")
_DEPENDENCIES = re.compile(r"\s*\[[\d,\s]*\]\s*$")
_SCAN = json.JSONDecoder().scan_once  # json.loads's decoder: one value from a position
_UNREAD = object()  # _last_member: not read without decoding the whole text


class ScoringError(NablafolError, ValueError):
    """Questions, predictions or a split cannot be scored; the message says what and where."""


class ScorableQuestion(Protocol):
    """What scoring needs of a question (GQA field names, any object that has them).

    ``types`` is GQA's ``{"structural": ..., "semantic": ..., "detailed": ...}`` and may
    be empty; ``entailed`` lists the ids of questions whose answers it logically implies.
    """

    @property
    def id(self) -> str: ...

    @property
    def answer(self) -> str | None: ...

    @property
    def entailed(self) -> tuple[str, ...]: ...

    @property
    def types(self) -> Mapping[str, str]: ...


#: Says which questions are binary where ``types`` cannot (see :func:`answer_group`).
BinaryOverride = Union[Callable[[ScorableQuestion], bool], Mapping[str, bool], None]


def question_types(question: ScorableQuestion) -> tuple[str | None, str | None, str | None]:
    """GQA's ``types`` of a question: ``(structural, semantic, detailed)``, each None when absent.

    >>> from types import SimpleNamespace as Q
    >>> question_types(Q(types={"structural": "query", "semantic": "attr", "detailed": "queryAttr"}))
    ('query', 'attr', 'queryAttr')
    """
    types = getattr(question, "types", None)
    if not types or not hasattr(types, "get"):
        return None, None, None
    structural, semantic, detailed = types.get("structural"), types.get("semantic"), types.get("detailed")
    # a type is a non-empty string (written out: this runs once per scored question)
    return (structural if type(structural) is str and structural else None,
            semantic if type(semantic) is str and semantic else None,
            detailed if type(detailed) is str and detailed else None)


def structural_type(question: ScorableQuestion) -> str | None:
    """GQA's ``types.structural`` of a question (``query``, ``verify``, ...), or None."""
    return question_types(question)[0]


def semantic_type(question: ScorableQuestion) -> str | None:
    """GQA's ``types.semantic`` (``attr``, ``cat``, ``global``, ``obj``, ``rel``), or None."""
    return question_types(question)[1]


def detailed_type(question: ScorableQuestion) -> str | None:
    """GQA's ``types.detailed`` (``twoCommon``, ``relVerify``, ...), or None."""
    return question_types(question)[2]


def answer_group(question: ScorableQuestion, is_binary: BinaryOverride = None, *,
                 structural: str | None = None) -> str:
    """``"open"`` or ``"binary"``: the override, else GQA's rule, else the answer.

    GQA's rule: open iff ``types.structural == "query"`` (so ``choose`` and ``compare``
    questions are binary though their answers are not yes/no).

    >>> from types import SimpleNamespace as Q
    >>> answer_group(Q(id="1", answer="tree", entailed=(), types={"structural": "compare"}))
    'binary'
    >>> answer_group(Q(id="2", answer="yes", entailed=(), types={}))
    'binary'
    >>> answer_group(Q(id="2", answer="yes", entailed=(), types={}), {"2": False})
    'open'

    ``structural`` may be given when the caller has read it already.
    """
    if callable(is_binary):
        return "binary" if is_binary(question) else "open"
    if is_binary is not None and question.id in is_binary:
        return "binary" if is_binary[question.id] else "open"
    if structural is None:
        structural = structural_type(question)
    if structural is not None:
        return "open" if structural == "query" else "binary"
    return "binary" if question.answer in _BINARY_ANSWERS else "open"


def is_balanced(question: ScorableQuestion) -> bool:
    """GQA's ``isBalanced``; a question that does not say is balanced."""
    return getattr(question, "is_balanced", None) is not False


def words_number(question: ScorableQuestion) -> int | None:
    """GQA's question length: the words of the question text split on white space, or None."""
    text = getattr(question, "question", None)
    return len(text.split()) if isinstance(text, str) else None


def steps_number(question: ScorableQuestion) -> int | None:
    """GQA's reasoning steps: the program's steps less those whose ``operation: argument``
    text contains ``exist``, ``query: name`` or ``choose name`` (eval.py's rule, substrings
    and all); None without a program (``semantic``, else each ``->`` part of ``semanticStr``
    without its ``[dependencies]``)."""
    parts = getattr(question, "semantic", None)
    from_steps = bool(parts)
    if not from_steps:
        line = getattr(question, "semantic_str", None)
        if not (isinstance(line, str) and line.strip()):
            return None
        parts = line.split("->")
    exist, query_name, choose_name = _NOT_A_STEP
    steps = 0
    for part in parts:  # one loop, no generator: this runs once per scored question
        if from_steps:
            text = f"{part.get('operation', '')}: {part.get('argument', '')}" if hasattr(part, "get") else ""
        else:
            text = _DEPENDENCIES.sub("", part).strip()
        if not (exist in text or query_name in text or choose_name in text):
            steps += 1
    return steps


def _field(question: ScorableQuestion, name: str) -> Any:
    """A GQA field kept as an attribute or in ``extra`` (``nablafol.data.Question``)."""
    if type(question) is Question:  # no such attribute: its extra fields are its JSON text's
        value = None
        found = _last_member(question.extra_json, name)
        if found is not _UNREAD:
            return found
    else:
        value = getattr(question, name, None)
    if value is None:
        extra_json = getattr(question, "extra_json", None)
        if isinstance(extra_json, str) and f'"{name}"' not in extra_json:
            return None  # most fields are absent: do not decode the extra fields for nothing
        extra = getattr(question, "extra", None)
        if isinstance(extra, Mapping):
            value = extra.get(name)
    return value


def _last_member(text: str, name: str) -> Any:
    """``json.loads(text).get(name)`` where that is quick to read without decoding the rest:
    None when ``text`` (JSON text of an object, as ``Question.extra_json``) does not hold
    ``"name"``; the value when ``"name":`` is the object's last member (``groups`` in GQA's
    records, sorted last); else ``_UNREAD``.

    Why the value is the object's: an unescaped quote (one after ``,`` or ``{``) cannot be
    inside a string, so ``"name":`` there is a key, and the value after it is the one any
    decoder reads; when that value ends one character before the text does, that character
    closes the key's object and the whole text, so the key is the top object's, and its last
    (the one ``json.loads`` keeps when a key repeats).

        >>> _last_member('{"a":{"groups":1},"groups":{"global":"x"}}', "groups")
        {'global': 'x'}
        >>> _last_member('{"groups":{"groups":2}}', "groups") is _UNREAD  # the inner one: decode it all
        True
    """
    key = f'"{name}":'
    at = text.rfind(key)
    if at < 0:
        return None if f'"{name}"' not in text else _UNREAD
    if at == 0 or text[at - 1] not in ",{":
        return _UNREAD
    try:
        value, end = _SCAN(text, at + len(key))  # JSONDecoder.raw_decode's own step
    except (StopIteration, ValueError):
        return _UNREAD
    return value if end == len(text) - 1 and text[end] == "}" else _UNREAD


def global_group(question: ScorableQuestion) -> str | None:
    """GQA's ``groups.global`` (the answer distribution's question group), or None."""
    groups = _field(question, "groups")
    value = groups.get("global") if isinstance(groups, Mapping) else None
    return value if isinstance(value, str) else None


def annotated_objects(question: ScorableQuestion) -> list[str]:
    """The object ids GQA's ``annotations`` point at from the question and then from the full
    answer (``answer`` annotations are not read: eval.py does not), in that order, repeats kept."""
    annotations = _field(question, "annotations")
    if not isinstance(annotations, Mapping):
        return []
    ids = []
    for part in ("question", "fullAnswer"):
        pointers = annotations.get(part) or {}
        if isinstance(pointers, Mapping):
            ids += [str(p) for p in pointers.values()]
    return ids


def refers_to_scene(question: ScorableQuestion) -> bool:
    """eval.py's test for adding the whole image to the gold regions: some step *has a key*
    named ``scene`` (GQA's steps have ``operation``, ``argument``, ``dependencies``, so this is
    never true of GQA's files; kept so that grounding gives the script's numbers)."""
    semantic = getattr(question, "semantic", None) or ()
    return any(isinstance(step, Mapping) and "scene" in step for step in semantic)


def check_questions(questions: Iterable[ScorableQuestion]) -> list[ScorableQuestion]:
    """The questions as a list, after checking that every one can be scored.

    Refuses (:class:`ScoringError`, one line) duplicate ids, non-string ids or answers,
    a malformed ``entailed``, and questions without a gold answer (how many, one example).
    """
    checked = list(questions)
    seen: set[str] = set()
    unanswered: list[str] = []
    for position, question in enumerate(checked):
        qid = getattr(question, "id", None)
        if not isinstance(qid, str) or not qid:
            raise ScoringError(f"question #{position}: id must be a non-empty string, got {qid!r}")
        if qid in seen:
            raise ScoringError(f"question {qid!r} appears twice in the evaluated set")
        seen.add(qid)
        answer = getattr(question, "answer", None)
        if answer is None:
            unanswered.append(qid)
        elif not isinstance(answer, str):
            raise ScoringError(f"question {qid!r}: gold answer must be a string, got {type(answer).__name__}")
        check_entailed(question)
    if unanswered:
        raise ScoringError(
            f"{len(unanswered)} question(s) have no gold answer and cannot be scored "
            f"(e.g. {unanswered[0]!r}); score a split that has answers (train/val/testdev)"
        )
    return checked


def check_entailed(question: ScorableQuestion) -> tuple[str, ...]:
    """The question's entailed ids; a malformed list is refused."""
    entailed = getattr(question, "entailed", None) or ()
    if isinstance(entailed, str) or not all(map(isinstance, entailed, repeat(str))):
        raise ScoringError(f"question {question.id!r}: entailed must be a sequence of question ids")
    return tuple(entailed)


def prediction_of(predictions: Mapping[str, str], qid: str) -> str | None:
    """The prediction for ``qid`` (``None`` when absent); a non-string one is refused."""
    predicted = predictions.get(qid)
    if predicted is not None and not isinstance(predicted, str):
        raise ScoringError(f"prediction for question {qid!r} must be a string, got {type(predicted).__name__}")
    return predicted


def check_predictions(predictions: object) -> Mapping[str, str]:
    """``predictions`` itself, once it is known to be a mapping questionId -> answer."""
    if not isinstance(predictions, Mapping):
        raise ScoringError(f"predictions must be a mapping questionId -> answer, got {type(predictions).__name__}")
    return predictions
