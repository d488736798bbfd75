"""What the subcommands share: loading inputs with one-line errors, the ontology option."""
from __future__ import annotations

import json
from pathlib import Path


class UsageError(Exception):
    """A command-line mistake (exit status 2, one line)."""


def error_line(error: Exception) -> str | None:
    """One line for an error caused by the user's input, or None for a bug (re-raised)."""
    import dsl
    from nablafol.errors import NablafolError
    if isinstance(error, (NablafolError, dsl.ProgramError, dsl.VocabularyFileError, dsl.UnknownConceptError)):
        return str(error).splitlines()[0]
    if isinstance(error, OSError):
        return f"{error.filename or ''}: {error.strerror or error}".lstrip(": ")
    return None


def add_ontology_argument(parser) -> None:
    parser.add_argument("--ontology", metavar="DIR",
                        help="vocabulary folder (hypernyms.json, attributes.json, relations.json); default: GQA's")


def load_ontology(folder):
    from dsl import Ontology
    return Ontology.gqa() if folder is None else Ontology.from_folder(folder)


def write_json(path, obj) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
