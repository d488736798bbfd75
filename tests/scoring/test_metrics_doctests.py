"""The docstring examples of the metrics and scoring modules run and give what they say."""
from __future__ import annotations

import doctest

import pytest

import nablafol.scoring.metrics
import nablafol.scoring.scores


@pytest.mark.parametrize("module", [nablafol.scoring.metrics, nablafol.scoring.scores])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
