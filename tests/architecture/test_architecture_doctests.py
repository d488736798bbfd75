"""Every docstring example of the installed modules runs (from the project's root, where the
examples find the test fixtures)."""
from __future__ import annotations

import doctest
import importlib
import os

import pytest

from architecture_house import ROOT, modules

#: modules whose examples need an optional package
NEEDS = {"nablafol.dsl.testing": "hypothesis", "nablafol.testing.strategies": "hypothesis",
         "nablafol.testing.dsl_check": "hypothesis"}


#: modules whose examples train a model or run a whole command: among the longest tests of a measured run
SLOW_EXAMPLES = {"nablafol.semantic_parser", "nablafol.semantic_parser.training", "nablafol.asking.ask",
                 "nablafol.asking.parser_evaluation", "nablafol.pipeline.collector", "nablafol.neural.optimizer",
                 "nablafol.pipeline.label_training", "nablafol.semantic_parser.folder",
                 "nablafol.semantic_parser.predicted_programs", "nablafol.semantic_parser.reader"}


@pytest.mark.parametrize("name", [pytest.param(m, marks=[pytest.mark.slow] if m in SLOW_EXAMPLES else [])
                                  for m in sorted(m for m in modules() if not m.endswith("__main__"))])
def test_docstring_examples(name, monkeypatch):
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    monkeypatch.chdir(ROOT)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0
