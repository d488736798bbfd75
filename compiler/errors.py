"""The compiler's error: a GQA program that parses but cannot become a DFOL program."""
from __future__ import annotations

from nablafol.errors import NablafolError


class CompileError(NablafolError, ValueError):
    """What is wrong, and at which step: ``step 2 'filter color': 'wooden' is not a color value``.

    ``reason`` is a short machine-friendly category (``unknown concept``, ``wrong type``,
    ``unsupported``) that evaluation summaries count skipped questions by.
    """

    def __init__(self, message: str, *, step: int | None = None, field: str | None = None,
                 reason: str = "cannot compile"):
        self.message, self.step, self.field, self.reason = message, step, field, reason
        where = f"step {step} '{field}': " if step is not None else ""
        super().__init__(f"{where}{message}")
