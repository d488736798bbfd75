"""The semantic parser's error types (both :class:`~nablafol.errors.NablafolError`: one line each)."""
from __future__ import annotations

from nablafol.errors import NablafolError

__all__ = ["ParserError", "UnreadableQuestionError"]


class ParserError(NablafolError, ValueError):
    """Settings, training data or a parser that cannot be used: what is wrong, in one line."""


class UnreadableQuestionError(NablafolError, ValueError):
    """A question the parser cannot read into a program (no words, too long, or read with a
    confidence below the parser's threshold). ``question`` is the text, ``reason`` one line;
    ``guess`` the closest program text when there is one (for a message, never for answering)."""

    def __init__(self, question: str, reason: str, guess: str | None = None):
        self.question, self.reason, self.guess = question, reason, guess
        shown = question if len(question) <= 80 else question[:77] + "..."
        super().__init__(f"cannot read the question {shown!r}: {reason}")

    def __reduce__(self):  # rebuilt from its parts when it crosses a process boundary
        return type(self), (self.question, self.reason, self.guess)
