"""An ontology extension: classes a dataset's own questions file under categories the shipped
ontology lists them nowhere near, with the evidence counted.

GQA's vocabulary files (dsl/data/gqa) file `train car` under `vehicle` only, while GQA's
questions ask `relate: place,on,o` of a train car. GQA's questions carry their groundings (the
object ids of each step), so training questions say, for every category they name, which
objects of the training scene graphs belong to it. ``nablafol vocabulary --categories-out``
gathers that evidence (nablafol.compiler.categories) into an extension; `eval`, `train` and the
oracles take it beside the ontology (``--ontology-extension FILE``). An extension is learned from
training records only, never from the questions being evaluated (docs/real-gqa.md).

The file (JSON)::

    {"format": "nablafol ontology extension", "version": 1,
     "learned from": {"questions": [...], "scene graphs": [...], ...},
     "categories": {"place": {"train car": 3, "road": 1}}}

``categories`` maps a category to the classes it gains, each with the number of groundings that
showed it (for review: a user may delete a line). Classes are vocabulary forms.

    >>> from nablafol.dsl import Ontology
    >>> extension = OntologyExtension({"place": {"train car": 3}})
    >>> wider = extension.applied_to(Ontology.gqa())
    >>> "train car" in wider.classes_under("place"), "train car" in Ontology.gqa().classes_under("place")
    (True, False)
    >>> "train car" in wider.values_of("place")   # `query: place` of the scene competes it too
    True
    >>> OntologyExtension.from_data(extension.to_data()) == extension
    True
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from .errors import VocabularyFileError

__all__ = ["OntologyExtension", "EXTENSION_FORMAT", "load_ontology"]

EXTENSION_FORMAT = "nablafol ontology extension"
VERSION = 1


@dataclass(frozen=True)
class OntologyExtension:
    """Classes joining categories: ``{category: {class: groundings}}``, and where they were
    learned (``learned_from``: free-form provenance, written back unchanged)."""

    categories: Mapping[str, Mapping[str, int]]
    learned_from: Mapping = field(default_factory=dict, compare=False)

    def applied_to(self, ontology):
        """``ontology`` with every class of the extension under its category (a category the
        ontology lacks is made); ``ontology`` itself when nothing is new."""
        return ontology.with_categories({c: list(classes) for c, classes in self.categories.items()})

    @property
    def additions(self) -> int:
        """How many (category, class) pairs the extension adds."""
        return sum(len(classes) for classes in self.categories.values())

    def to_data(self) -> dict:
        return {"format": EXTENSION_FORMAT, "version": VERSION, "learned from": dict(self.learned_from),
                "categories": {c: dict(sorted(classes.items(), key=lambda kv: (-kv[1], kv[0])))
                               for c, classes in sorted(self.categories.items())}}

    @classmethod
    def from_data(cls, data, where: str = "ontology extension") -> "OntologyExtension":
        """An extension from its JSON content; ``VocabularyFileError`` (naming ``where``) when it
        is not one."""
        if not isinstance(data, dict) or data.get("format") != EXTENSION_FORMAT:
            raise VocabularyFileError(where, f"not an ontology extension (no \"format\": \"{EXTENSION_FORMAT}\"; "
                                             "`nablafol vocabulary --categories-out` writes one)")
        if data.get("version") != VERSION:
            raise VocabularyFileError(where, f"ontology extension version {data.get('version')!r}; this nablafol "
                                             f"reads version {VERSION}")
        categories = data.get("categories")
        if not isinstance(categories, dict):
            raise VocabularyFileError(where, "\"categories\" must be {category: {class: groundings}}")
        for category, classes in categories.items():
            if not (isinstance(category, str) and category.strip() and isinstance(classes, dict)):
                raise VocabularyFileError(where, f"category {category!r}: expected a non-empty name and "
                                                 "{class: groundings}")
            for name, count in classes.items():
                if not (isinstance(name, str) and name.strip()) or type(count) is not int or count < 1:
                    raise VocabularyFileError(where, f"category {category!r}, class {name!r}: expected a non-empty "
                                                     f"class and a whole number of groundings >= 1, got {count!r}")
        learned = data.get("learned from", {})
        return cls({c: dict(classes) for c, classes in categories.items()},
                   learned if isinstance(learned, dict) else {})

    @classmethod
    def from_file(cls, path) -> "OntologyExtension":
        """Read an extension file; one-line ``VocabularyFileError`` naming the file otherwise."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise VocabularyFileError(path, f"cannot read ({e.strerror or e})") from None
        except UnicodeDecodeError:
            raise VocabularyFileError(path, "not UTF-8 text") from None
        try:
            data = json.loads(text)
        except ValueError as e:
            raise VocabularyFileError(path, f"not JSON ({e})") from None
        return cls.from_data(data, str(path))

    def lines(self, examples: int = 12) -> list[str]:
        """The extension as text, for review: each category with its classes, most grounded first."""
        out = []
        for category, classes in sorted(self.categories.items()):
            ranked = sorted(classes.items(), key=lambda kv: (-kv[1], kv[0]))
            shown = ", ".join(f"{name} ×{n}" for name, n in ranked[:examples])
            out.append(f"  {category} (+{len(ranked):,}): {shown}{', …' if len(ranked) > examples else ''}")
        return out


def load_ontology(folder=None, extension=None):
    """The vocabulary of ``folder`` (dsl/data/gqa's layout; GQA's when None), widened by the
    extension file ``extension`` when given: what every command's ``--ontology`` and
    ``--ontology-extension`` mean. Bad files raise ``VocabularyFileError`` (one line)."""
    from .ontology import Ontology
    ontology = Ontology.gqa() if folder is None else Ontology.from_folder(folder)
    return ontology if extension is None else OntologyExtension.from_file(extension).applied_to(ontology)
