"""The exceptions of the `dsl` package.

`ProgramError` is the one error a program reader raises: syntax errors (from the
grammar), shape errors (an operation given the wrong kind of argument) and
structure errors (a dependency that points forward, a step nobody uses) all come
out as a `ProgramError` that says what is wrong and where:

    >>> from nablafol.dsl import parse_program
    >>> parse_program("select: bird (329774)->query: name [1]")
    Traceback (most recent call last):
    ...
    nablafol.dsl.errors.ProgramError: step 1 'query': dependency [1] must point to an earlier step (0) at line 1, column 36
      select: bird (329774)->query: name [1]
                                         ^

`UnknownConceptError` is raised by `Ontology.require` for a name, value, type or
relation the vocabulary does not know.
"""
from __future__ import annotations

from nablafol.errors import NablafolError  # the one error root (torch-free)

__all__ = ["ProgramError", "UnknownConceptError", "VocabularyFileError"]

# How many characters of the program to show on each side of the caret.
_CONTEXT_SPAN = 40


class ProgramError(NablafolError, ValueError):
    """A GQA program that cannot be read.

    Attributes:
        message: what is wrong, one line, without the location.
        text: the text the location refers to (the program line, or for the JSON
            form the step written as ``operation: argument [dependencies]``), or None.
        line, column: 1-based position of the problem in `text` (None when the
            problem has no position, e.g. a step that is not a dict).
        expected: readable descriptions of what would have been accepted there.
        step: index of the offending step when known.
    """

    def __init__(self, message: str, *, text: str | None = None, line: int | None = None,
                 column: int | None = None, expected: tuple[str, ...] = (), step: int | None = None):
        self.message = message
        self.text = text
        self.line = line
        self.column = column
        self.expected = tuple(expected)
        self.step = step
        super().__init__(self._render())

    @property
    def context(self) -> str:
        """The offending line (clipped around the problem) with a caret under the column, or ''."""
        if self.text is None or self.line is None or self.column is None:
            return ""
        return caret_context(self.text, self.line, self.column)

    def _headline(self) -> str:
        where = f" at line {self.line}, column {self.column}" if self.column is not None else ""
        expected = f"; expected {_join_alternatives(self.expected)}" if self.expected else ""
        return f"{self.message}{expected}{where}"

    def _render(self) -> str:
        context = self.context
        return self._headline() + ("\n" + context if context else "")

    def __reduce__(self):  # keep the keyword-only attributes through pickling (multiprocessing)
        return (_rebuild_program_error, (self.message, self.text, self.line, self.column, self.expected, self.step))


def _rebuild_program_error(message, text, line, column, expected, step) -> ProgramError:
    return ProgramError(message, text=text, line=line, column=column, expected=expected, step=step)


class UnknownConceptError(NablafolError, LookupError):
    """A name, attribute value, attribute type or relation that the vocabulary does not know.

    Attributes: `concept` (as given), `kind` ('name', 'value', 'type' or 'relation'),
    `normalized` (the form that was looked up).
    """

    def __init__(self, concept: str, kind: str, normalized: str | None = None):
        self.concept = concept
        self.kind = kind
        self.normalized = normalized if normalized is not None else concept
        shown = repr(concept) if self.normalized == concept else f"{concept!r} (looked up as {self.normalized!r})"
        super().__init__(f"unknown {kind} {shown}: not in the vocabulary")

    def __str__(self) -> str:  # LookupError would quote the message like a KeyError
        return self.args[0]


class VocabularyFileError(NablafolError, ValueError):
    """A vocabulary file that cannot be read: ``str()`` is ``"{path}: {problem}"``."""

    def __init__(self, path, problem: str):
        self.path, self.problem = str(path), problem
        super().__init__(f"{self.path}: {problem}")


def caret_context(text: str, line: int, column: int, span: int = _CONTEXT_SPAN) -> str:
    """Two lines: the `line`-th line of `text` clipped to `span` characters around `column`
    (1-based), and a caret under that column. Clipped ends are marked with '...'.
    """
    lines = text.split("\n")
    row = lines[line - 1] if 0 < line <= len(lines) else ""
    position = max(column - 1, 0)
    start = max(position - span, 0)
    end = position + span
    prefix = "..." if start > 0 else ""
    suffix = "..." if end < len(row) else ""
    excerpt = prefix + row[start:end] + suffix
    caret = " " * (len(prefix) + position - start) + "^"
    return "  " + excerpt + "\n  " + caret


def _join_alternatives(items: tuple[str, ...]) -> str:
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " or " + items[-1]
