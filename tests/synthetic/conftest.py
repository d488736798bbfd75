"""Datasets shared by the synthetic tests: built once per session (they take seconds)."""
from __future__ import annotations

import pytest

from nablafol.synthetic import build_dataset, generate_dataset

WRITTEN_SIZES = dict(n_train=40, n_val=15, n_testdev=15, seed=5, feature_dim=16)


@pytest.fixture(scope="session")
def written_sizes():
    """The arguments the `written` dataset was made with."""
    return dict(WRITTEN_SIZES)


@pytest.fixture(scope="session")
def dataset():
    """A mid-sized dataset in memory: enough scenes for every operation to occur."""
    return build_dataset(n_train=320, n_val=40, n_testdev=40, seed=3)


@pytest.fixture(scope="session")
def written(tmp_path_factory):
    """A small dataset written to disk, and its summary."""
    folder = tmp_path_factory.mktemp("synthetic")
    calls = []
    summary = generate_dataset(folder, progress=lambda done, total, stage: calls.append((done, total, stage)),
                               **WRITTEN_SIZES)
    return folder, summary, calls
