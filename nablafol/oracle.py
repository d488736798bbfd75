"""The oracle protocol, and the first oracle: explicit probability tables.

An oracle answers "how probable is predicate π of these objects" for a batch of scenes.
The engine asks it once per batch: one call for all unary requests and one for all
binary requests, each request a distinct ``(scene, predicate)`` pair that some program
of the batch needs. Answers are **log-probabilities** (``-inf`` is an exact 0), padded to
the batch's largest scene:

* ``unary(requests) -> (R, N)``: ``log α(π | x_i)``;
* ``binary(requests) -> (R, N, N)``: ``log α(π | x_i, y_j)`` (row = first argument).

Values at padded objects are ignored (the engine writes ``-inf`` there); an oracle whose
``pads_with_zeros`` is true promises ``-inf`` there already, and is not masked again. Oracles
don't know programs; the engine doesn't know where probabilities come from.

Example:
    >>> import torch
    >>> from nablafol.ir import Predicate
    >>> oracle = TableOracle([{"red": [0.9, 0.1]}, {"red": [0.5, 0.5, 1.0]}])
    >>> oracle.num_objects
    tensor([2, 3])
    >>> req = Requests.build([1, 0], [Predicate("red"), Predicate("red")])
    >>> oracle.unary(req).exp()
    tensor([[0.5000, 0.5000, 1.0000],
            [0.9000, 0.1000, 0.0000]])
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence, runtime_checkable

import numpy as np
import torch

from .caching import memo
from .errors import ProbabilityError, ShapeError, UnknownPredicateError
from .ir import Predicate
from .numerics import safe_log


@dataclass(frozen=True)
class Requests:
    """Distinct ``(scene, predicate)`` pairs: ``scene[r]`` and ``predicates[predicate[r]]``."""

    scene: torch.Tensor  # (R,) int64, on the oracle's device
    predicate: torch.Tensor  # (R,) int64 index into `predicates`
    predicates: tuple[Predicate, ...]  # distinct predicates of one arity

    def __len__(self) -> int:
        return self.scene.shape[0]

    @classmethod
    def build(cls, scenes: Sequence[int], predicates: Sequence[Predicate], device=None) -> "Requests":
        """Requests from parallel lists (convenience for tests and small uses)."""
        distinct = tuple(dict.fromkeys(predicates))
        index = {p: i for i, p in enumerate(distinct)}
        return cls(
            torch.as_tensor(list(scenes), dtype=torch.long, device=device),
            torch.as_tensor([index[p] for p in predicates], dtype=torch.long, device=device),
            distinct,
        )

    def pairs(self) -> tuple:
        """``(scene, predicate)`` per request, as Python values (for oracles that loop); read once (an
        engine asks a plan's requests again at every call of it)."""
        return memo(self, "_pairs", lambda: tuple((s, self.predicates[p])
                                                   for s, p in zip(self.scene.tolist(), self.predicate.tolist())))


@runtime_checkable
class Oracle(Protocol):
    """What the engine needs from a perception system (see the module docstring)."""

    @property
    def num_objects(self) -> torch.Tensor:
        """``(B,)`` int64: the number of objects of each scene of the batch."""

    def unary(self, requests: Requests) -> torch.Tensor:
        """``(R, N)`` log-probabilities of unary predicates."""

    def binary(self, requests: Requests) -> torch.Tensor:
        """``(R, N, N)`` log-probabilities of binary predicates."""


def _check_probabilities(tables: list) -> None:
    """Every table of ``tables`` (``(scene, predicate, values)`` in the order given) holds
    probabilities (no NaN, nothing outside [0, 1]); else the first bad value is named. One check
    over all the values at once: a scene's tables are often tiny, and a check per table was most
    of the oracle's making."""
    def inside(t: torch.Tensor) -> torch.Tensor:
        return (t >= 0) & (t <= 1)  # NaN fails both comparisons

    if not tables:
        return
    with torch.no_grad():
        # vectors as they are, matrices by view where they can be (reshape's dispatch cost 3x the cat)
        try:
            values = torch.cat([t if t.dim() == 1 else t.view(-1) if t.is_contiguous() else t.reshape(-1)
                                for _, _, t in tables])
        except RuntimeError:  # tables on several devices (checked only when cat refuses: it costs nothing else)
            first = tables[0][2].device
            elsewhere = next((entry for entry in tables if entry[2].device != first), None)
            if elsewhere is None:
                raise
            b, pred, t = elsewhere
            raise ShapeError(f"scene {b}, predicate {pred.name!r}: table on {t.device}, the first table on {first}: "
                             f"give every table on one device, or TableOracle(..., device=...) to move them") from None
        if bool(inside(values).all()):
            return
    for b, pred, t in tables:
        bad = ~inside(t)
        if bool(bad.any()):
            first = tuple(int(i) for i in bad.nonzero()[0])
            raise ProbabilityError(f"scene {b}, predicate {pred.name!r}: value {t[first].item()!r} at {first} "
                                   f"is not a probability in [0, 1]")


_FEW_TABLES = 32  # up to this many tables, their sizes are checked in Python (numpy's calls cost more)


class TableOracle(torch.nn.Module):
    """Predicate probabilities given explicitly, one dict per scene.

    ``scenes[b]`` maps a predicate (a :class:`Predicate`, or a plain name: arity is then
    read from the value's shape) to a probability vector ``(n_b,)`` or matrix
    ``(n_b, n_b)``. Values may be tensors that require grad: gradients flow back to them.
    ``num_objects`` gives scene sizes when a scene has no table to infer it from.

    It is the building block of other oracles: anything that can produce such tables
    (scene graphs, detectors) can hand them to this class.
    """

    def __init__(self, scenes: Sequence[Mapping], num_objects: Sequence[int] | None = None, device=None):
        super().__init__()
        if isinstance(scenes, Mapping):
            scenes = [scenes]
        self._unary: list[dict[Predicate, torch.Tensor]] = []
        self._binary: list[dict[Predicate, torch.Tensor]] = []
        sizes, checked = [], []
        for b, tables in enumerate(scenes):
            unary, binary, n = {}, {}, None if num_objects is None else int(num_objects[b])
            for key, value in tables.items():
                if device is None and type(value) is torch.Tensor and value.is_floating_point():
                    t = value  # the common case, as cheap as can be: a batch of small scenes has thousands
                else:
                    t = torch.as_tensor(value, dtype=torch.get_default_dtype() if not torch.is_tensor(value) else None,
                                        device=device)
                    if not torch.is_floating_point(t):
                        t = t.to(torch.get_default_dtype())
                shape = t.shape
                pred = key if isinstance(key, Predicate) else Predicate(str(key), arity=len(shape) if len(shape) in (1, 2) else 1)
                if len(shape) != pred.arity or (len(shape) == 2 and shape[0] != shape[1]):
                    raise ShapeError(f"scene {b}, predicate {pred.name!r}: expected a "
                                     f"{'vector (n,)' if pred.arity == 1 else 'square matrix (n, n)'}, got shape {tuple(shape)}")
                n = shape[0] if n is None else n
                if shape[0] != n:
                    raise ShapeError(f"scene {b}, predicate {pred.name!r}: has {shape[0]} objects, scene {b} has {n}")
                (unary if pred.arity == 1 else binary)[pred] = t
                checked.append((b, pred, t))
            if n is None:
                raise ShapeError(f"scene {b}: no tables and no num_objects to tell its size")
            self._unary.append(unary)
            self._binary.append(binary)
            sizes.append(n)
        if device is None and checked:  # the tables' own device (all on one: else named below)
            device = checked[0][2].device
        _check_probabilities(checked)
        self.register_buffer("_num_objects", torch.tensor(sizes, dtype=torch.long, device=device), persistent=False)
        self._max_objects = max(sizes, default=0)  # a plain int: no device sync per request

    @property
    def num_objects(self) -> torch.Tensor:
        return self._num_objects

    def _apply(self, fn, recurse=True):
        """``.to(device)``, ``.double()``...: the tables go where the sizes go (they are plain dicts,
        not buffers torch would move)."""
        for store in (self._unary, self._binary):
            for tables in store:
                for predicate, table in tables.items():
                    tables[predicate] = fn(table)
        return super()._apply(fn, recurse)

    def knows(self, predicate: Predicate) -> bool:
        store = self._unary if predicate.arity == 1 else self._binary
        return any(predicate in tables for tables in store)

    def _gather(self, requests: Requests, store, arity: int) -> torch.Tensor:
        n = self._max_objects
        try:
            found = [store[scene][pred] for scene, pred in requests.pairs()]
        except KeyError:
            scene, pred = next((s, p) for s, p in requests.pairs() if p not in store[s])
            raise UnknownPredicateError(f"TableOracle: scene {scene} has no table for predicate {pred.name!r} "
                                        f"(arity {pred.arity})") from None
        if not found:
            return safe_log(torch.zeros((0,) + (n,) * arity, device=self._num_objects.device))
        # one stack and one pad per scene size, not one per request (the tables of a batch of
        # small scenes are tiny: per-request calls were most of such a call's time)
        def padded(tables: list, size: int) -> torch.Tensor:
            block = torch.stack(tables)
            return block if size == n else torch.nn.functional.pad(block, [0, n - size] * arity)

        if len(found) == 1 and found[0].shape[0] == n and found[0].is_contiguous():
            return safe_log(found[0][None])  # a view, not stack's copy: the log makes the new table
        if len(found) <= _FEW_TABLES and all(t.shape[0] == n for t in found):  # one question's few full-size tables
            return safe_log(torch.stack(found))
        sizes = np.fromiter([t.shape[0] for t in found], dtype=np.int64, count=len(found))  # not len(): Python-level
        kinds = np.unique(sizes).tolist()
        if len(kinds) == 1:  # the requests' order as it is
            return safe_log(padded(found, kinds[0]))
        order = np.argsort(sizes, kind="stable")  # requests grouped by size, each group in request order
        starts = np.searchsorted(sizes[order], kinds).tolist()
        blocks = [padded([found[r] for r in order[first:last].tolist()], size)
                  for size, first, last in zip(kinds, starts, starts[1:] + [len(order)])]
        back = torch.as_tensor(np.argsort(order, kind="stable"), device=blocks[0].device)  # the requests' order
        return safe_log(torch.cat(blocks)[back])

    def unary(self, requests: Requests) -> torch.Tensor:
        return self._gather(requests, self._unary, 1)

    def binary(self, requests: Requests) -> torch.Tensor:
        return self._gather(requests, self._binary, 2)
