"""Commonsense facts about classes, as CRIC's knowledge graph states them: ``head relation tail``.

A triple says something about every object of class ``head`` (``fork CapableOf lift food``,
``cat IsA-Taxonomy feline``), with a confidence in [0, 1] (default 1). CRIC (Gao et al.)
draws its triples from ConceptNet, keeps 11 relations (``IsA``, ``IsA-Taxonomy``,
``UsedFor``, ``CapableOf``, ``AtLocation``, ``HasProperty``, ``HasA``, ``HasPrerequisite``,
``ReceivesAction``, ``HasSubevent``, ``MadeFrom``) and reads them under the closed-world
assumption: what the graph does not state is false.

Files (the user's own knowledge, or :meth:`KnowledgeBase.sample`):

* **TSV** (any name not ending in ``.json``): one triple a line,
  ``head<TAB>relation<TAB>tail[<TAB>confidence]``; blank lines and lines starting with ``#``
  are skipped; an optional first line ``head relation tail [confidence]`` (tab-separated)
  is a header.
* **JSON** (``*.json``): a list (or ``{"triples": [...]}``) whose items are
  ``{"head", "relation", "tail", "confidence"?}`` objects or ``[head, relation, tail,
  confidence?]`` lists.

Text is trimmed and inner runs of whitespace become one space; a relation has no spaces and
no ``:`` (predicates are named ``RELATION:TAIL``). A bad line or item raises
:class:`~nablafol.errors.InputFileError` naming the file, the line or item, and the problem.

    >>> kb = KnowledgeBase([Triple("fork", "CapableOf", "lift food"), Triple("cat", "IsA", "animal", 0.9)])
    >>> len(kb), sorted(kb.relations), kb.triples[1].fact
    (2, ['CapableOf', 'IsA'], 'IsA:animal')
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..data.files import not_text
from ..errors import InputFileError

__all__ = ["Triple", "KnowledgeBase", "SAMPLE_FILE"]

SAMPLE_FILE = "knowledge_sample.tsv"  # in nablafol/oracles/data
_HEADER = ("head", "relation", "tail")


@dataclass(frozen=True)
class Triple:
    """``relation(head, tail)`` with a confidence; ``fact`` is its unary predicate name."""

    head: str
    relation: str
    tail: str
    confidence: float = 1.0

    def __post_init__(self):
        for field in ("head", "relation", "tail"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value.split():
                raise ValueError(f"{field} must be a non-empty string, got {value!r}")
            object.__setattr__(self, field, " ".join(value.split()))
        if " " in self.relation or ":" in self.relation:
            raise ValueError(f"relation {self.relation!r} must be one word without ':'")
        c = self.confidence
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c) or not 0 <= c <= 1:
            raise ValueError(f"confidence must be a number in [0, 1], got {c!r}")
        object.__setattr__(self, "confidence", float(c))

    @property
    def fact(self) -> str:
        """``"RELATION:TAIL"``: the name of the unary ``kg`` predicate this triple gives its head."""
        return f"{self.relation}:{self.tail}"


class KnowledgeBase:
    """An immutable collection of :class:`Triple` (duplicates kept; readers take the most
    confident)."""

    def __init__(self, triples: Iterable[Triple]):
        self.triples: tuple[Triple, ...] = tuple(triples)
        for t in self.triples:
            if not isinstance(t, Triple):
                raise TypeError(f"expected Triple, got {type(t).__name__} {t!r:.60}")

    @property
    def relations(self) -> frozenset[str]:
        return frozenset(t.relation for t in self.triples)

    def __len__(self) -> int:
        return len(self.triples)

    def __iter__(self) -> Iterator[Triple]:
        return iter(self.triples)

    def __add__(self, other: "KnowledgeBase") -> "KnowledgeBase":
        return KnowledgeBase(self.triples + tuple(other))

    def __repr__(self) -> str:
        return f"KnowledgeBase({len(self.triples)} triples, relations {sorted(self.relations)})"

    # ------------------------------------------------------------------ files
    @classmethod
    def load(cls, path: str | os.PathLike) -> "KnowledgeBase":
        """Read a TSV or JSON knowledge file (see the module docstring)."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise not_text(path, e) from None
        except OSError as e:
            raise InputFileError(path, f"cannot read the knowledge file: {e.strerror or e}") from None
        if path.suffix.lower() == ".json":
            return cls(_json_triples(path, text))
        return cls(_tsv_triples(path, text))

    @classmethod
    def sample(cls) -> "KnowledgeBase":
        """A small built-in knowledge base about GQA classes (``data/knowledge_sample.tsv``),
        written for this project in CRIC's relations."""
        ref = resources.files("nablafol.graph_oracles").joinpath(f"data/{SAMPLE_FILE}")
        return cls(_tsv_triples(Path(str(ref)), ref.read_text(encoding="utf-8")))


def _tsv_triples(path: Path, text: str) -> Iterator[Triple]:
    first = True
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [f.strip() for f in line.split("\t")]
        if first and tuple(f.lower() for f in fields[:3]) == _HEADER:
            first = False
            continue
        first = False
        where = f"line {number}"
        if len(fields) not in (3, 4):
            raise InputFileError(path, f"expected head<TAB>relation<TAB>tail[<TAB>confidence], "
                                       f"found {len(fields)} tab-separated field(s)", where)
        confidence: Any = 1.0
        if len(fields) == 4:
            try:
                confidence = float(fields[3])
            except ValueError:
                raise InputFileError(path, f"confidence {fields[3]!r} is not a number", where) from None
        yield _triple(path, where, fields[0], fields[1], fields[2], confidence)


def _json_triples(path: Path, text: str) -> Iterator[Triple]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputFileError(path, f"not JSON: {e.msg}", f"line {e.lineno}, column {e.colno}") from None
    if isinstance(data, dict) and "triples" in data:
        data = data["triples"]
    if not isinstance(data, list):
        raise InputFileError(path, "expected a list of triples (or {\"triples\": [...]})")
    for i, item in enumerate(data):
        where = f"item {i}"
        if isinstance(item, dict):
            missing = [k for k in _HEADER if k not in item]
            if missing:
                raise InputFileError(path, f"missing {', '.join(missing)}", where)
            yield _triple(path, where, item["head"], item["relation"], item["tail"], item.get("confidence", 1.0))
        elif isinstance(item, list) and len(item) in (3, 4):
            yield _triple(path, where, *item)
        else:
            raise InputFileError(path, "a triple is {\"head\", \"relation\", \"tail\", \"confidence\"?} "
                                       f"or [head, relation, tail, confidence?], found {json.dumps(item)[:60]}", where)


def _triple(path: Path, where: str, head, relation, tail, confidence=1.0) -> Triple:
    try:
        return Triple(head, relation, tail, confidence)
    except ValueError as e:
        raise InputFileError(path, str(e), where) from None
