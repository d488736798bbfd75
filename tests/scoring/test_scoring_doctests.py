"""The docstring examples of the scoring modules run and give what they say."""
from __future__ import annotations

import doctest
from pathlib import Path

import pytest

import nablafol.scoring.answers
import nablafol.scoring.distribution
import nablafol.scoring.grounding
import nablafol.scoring.questions
import nablafol.scoring.report
import nablafol.scoring.scorer
import nablafol.scoring.scores

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("module", [nablafol.scoring.answers, nablafol.scoring.distribution, nablafol.scoring.grounding,
                                    nablafol.scoring.questions, nablafol.scoring.report, nablafol.scoring.scorer,
                                    nablafol.scoring.scores])
def test_docstring_examples(module, monkeypatch):
    monkeypatch.chdir(ROOT)  # examples read the test fixtures
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
