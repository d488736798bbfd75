"""Sparse facts answered by gathers: how the GQA oracles turn many requests into one table.

A scene graph states few facts per object (a name, a few attributes, a few relations), while
a batch asks for hundreds of thousands of ``(scene, predicate)`` rows. So facts are kept as
sorted arrays keyed by ``scene * n_columns + column`` (a *column* is a predicate's index in
the oracle's vocabulary), and a batch of requests is answered with two binary searches, one
repeat and one scatter into a zero table, never a Python loop over requests:

    >>> import numpy as np
    >>> facts = UnaryFacts(scene=[0, 0, 1], obj=[0, 1, 1], column=[2, 2, 0], prob=[1.0, 0.5, 0.25], n_columns=3)
    >>> facts.gather(np.array([0, 1, 1]), np.array([2, 0, 2]), n=2)
    tensor([[1.0000, 0.5000],
            [0.0000, 0.2500],
            [0.0000, 0.0000]], dtype=torch.float64)

Facts must be unique per ``(scene, object(s), column)``: builders combine duplicates first.
``log=True`` answers log-probabilities directly (a ``-inf`` table and the facts' logs
scattered in), which spares a ``log`` over the whole, mostly empty, table.
"""
from __future__ import annotations

import numpy as np
import torch

__all__ = ["UnaryFacts", "BinaryFacts", "expand_ranges"]


def expand_ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges ``[lo[r], hi[r])``: ``(r, i)`` for every ``i`` of every range, as two arrays.

    >>> expand_ranges(np.array([5, 0]), np.array([7, 1]))
    (array([0, 0, 1]), array([5, 6, 0]))
    """
    counts = hi - lo
    rows = np.repeat(np.arange(len(lo)), counts)
    starts = np.cumsum(counts) - counts
    within = np.arange(int(counts.sum())) - np.repeat(starts, counts)
    return rows, np.repeat(lo, counts) + within


class _Keyed:
    def __init__(self, scene, column, n_columns: int, payload: dict):
        scene = np.asarray(scene, dtype=np.int64).reshape(-1)
        column = np.asarray(column, dtype=np.int64).reshape(-1)
        self.n_columns = int(n_columns)
        key = scene * self.n_columns + column
        order = np.argsort(key, kind="stable")
        self.key = key[order]
        for name, values in payload.items():
            setattr(self, name, np.asarray(values).reshape(-1)[order])
        with np.errstate(divide="ignore"):
            self.log_prob = np.log(self.prob)

    def _values(self, idx: np.ndarray, log: bool, dtype) -> torch.Tensor:
        return torch.from_numpy((self.log_prob if log else self.prob)[idx]).to(dtype)

    @staticmethod
    def _empty(shape, log: bool, dtype) -> torch.Tensor:
        return torch.full(shape, float("-inf"), dtype=dtype) if log else torch.zeros(shape, dtype=dtype)

    def __len__(self) -> int:
        return int(self.key.shape[0])

    def _match(self, scene: np.ndarray, column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(request row, fact index) of every fact of every requested ``(scene, column)``."""
        wanted = np.asarray(scene, dtype=np.int64) * self.n_columns + np.asarray(column, dtype=np.int64)
        lo = np.searchsorted(self.key, wanted, side="left")
        hi = np.searchsorted(self.key, wanted, side="right")
        return expand_ranges(lo, hi)


class UnaryFacts(_Keyed):
    """``P(column | scene, obj) = prob``; anything absent is 0."""

    def __init__(self, scene, obj, column, prob, n_columns: int):
        super().__init__(scene, column, n_columns, {"obj": np.asarray(obj, dtype=np.int64),
                                                    "prob": np.asarray(prob, dtype=np.float64)})

    def gather(self, scene: np.ndarray, column: np.ndarray, n: int, dtype=torch.float64,
               log: bool = False) -> torch.Tensor:
        """``(R, n)`` probabilities (or their logs) of ``column[r]`` over the objects of ``scene[r]``."""
        rows, idx = self._match(scene, column)
        out = self._empty((len(scene), n), log, dtype)
        if len(rows):
            out[torch.from_numpy(rows), torch.from_numpy(self.obj[idx])] = self._values(idx, log, dtype)
        return out


class BinaryFacts(_Keyed):
    """``P(column | scene, subj, obj) = prob``; anything absent is 0."""

    def __init__(self, scene, subj, obj, column, prob, n_columns: int):
        super().__init__(scene, column, n_columns, {"subj": np.asarray(subj, dtype=np.int64),
                                                    "obj": np.asarray(obj, dtype=np.int64),
                                                    "prob": np.asarray(prob, dtype=np.float64)})

    def gather(self, scene: np.ndarray, column: np.ndarray, n: int, dtype=torch.float64,
               log: bool = False, out: torch.Tensor | None = None, at: np.ndarray | None = None) -> torch.Tensor:
        """``(R, n, n)`` probabilities (or their logs) of ``column[r](subject, object)`` in ``scene[r]``;
        with ``out`` (a table of 0s, or of ``-inf`` with ``log``), row ``r`` is written into its row
        ``at[r]`` instead, and ``out`` returned."""
        rows, idx = self._match(scene, column)
        if out is None:
            out = self._empty((len(scene), n, n), log, dtype)
        elif len(rows):
            rows = at[rows]
        if len(rows):
            out[torch.from_numpy(rows), torch.from_numpy(self.subj[idx]),
                torch.from_numpy(self.obj[idx])] = self._values(idx, log, out.dtype)
        return out
