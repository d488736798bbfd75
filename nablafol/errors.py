"""The package's exception types (torch-free, so every layer can raise them).

Every error a user can trigger derives from :class:`NablafolError` and says in one line
what is wrong and where: the offending predicate, shape, file or question.
"""
from __future__ import annotations


class NablafolError(Exception):
    """Base class of every error nablafol raises on purpose."""


class ProgramStructureError(NablafolError, ValueError):
    """A DFOL program is malformed (wrong node types, empty choice, bad labels)."""


class OracleError(NablafolError):
    """An oracle cannot answer a request, or answered with something unusable."""


class UnknownPredicateError(OracleError, KeyError):
    """No oracle knows a predicate the batch needs."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "unknown predicate"


class ProbabilityError(OracleError, ValueError):
    """Values that should be probabilities are outside [0, 1] or NaN."""


class ShapeError(NablafolError, ValueError):
    """A tensor has the wrong shape for what it is used for."""


class InputFileError(NablafolError):
    """A file given by the user cannot be used: ``str()`` is ``"{path}: {message}"``."""

    def __init__(self, path, message: str, where: str | None = None):
        self.path = str(path)
        self.message = message
        self.where = where
        super().__init__(str(self))

    def __str__(self) -> str:
        loc = f" ({self.where})" if self.where else ""
        return f"{self.path}{loc}: {self.message}"

    def __reduce__(self):  # rebuilt from its parts when it crosses from a worker process
        return type(self), (self.path, self.message, self.where)
