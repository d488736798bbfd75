"""The subcommands of ``nablafol`` (each module: ``HELP``, ``add_arguments(parser)``, ``run(args)``)."""
from __future__ import annotations

from . import answer, calibrate, demo, evaluate, generate, parse, parser, score, split, train, vocabulary
from .common import UsageError, error_line

__all__ = ["parse", "parser", "answer", "evaluate", "split", "score", "train", "calibrate", "generate", "demo",
           "vocabulary", "UsageError", "error_line"]
