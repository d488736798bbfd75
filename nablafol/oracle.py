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


def scene_sizes(num_objects) -> torch.Tensor:
    """An oracle's ``num_objects`` as the engine reads it, a ``(B,)`` int64 tensor: given as such a
    tensor (any integer dtype), a list or tuple of whole numbers, or one whole number (one scene).
    Anything else is refused in one line.

        >>> scene_sizes(3), scene_sizes([2, 4]), scene_sizes(torch.tensor([5], dtype=torch.int32))
        (tensor([3]), tensor([2, 4]), tensor([5]))
    """
    if type(num_objects) is torch.Tensor and num_objects.dtype == torch.long and num_objects.dim() == 1:
        return num_objects  # the common case: nothing to convert
    if torch.is_tensor(num_objects):
        if num_objects.dtype.is_floating_point or num_objects.dtype.is_complex or num_objects.dtype == torch.bool:
            raise ShapeError(f"num_objects: expected whole numbers, got a tensor of dtype {num_objects.dtype}")
        sizes = num_objects.reshape(-1) if num_objects.dim() == 0 else num_objects
        if sizes.dim() != 1:
            raise ShapeError(f"num_objects: expected one size per scene, got a tensor of shape {tuple(num_objects.shape)}")
        sizes = sizes.long()
    else:
        values = [num_objects] if isinstance(num_objects, (int, np.integer)) else num_objects
        if not isinstance(values, (list, tuple, np.ndarray)) or not all(
                isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
            raise ShapeError(f"num_objects: expected a tensor, a list of whole numbers or a whole number, "
                             f"got {num_objects!r:.80}")
        sizes = torch.tensor([int(v) for v in values], dtype=torch.long)
    if sizes.numel() and bool((sizes < 0).any()):
        raise ShapeError(f"num_objects: a scene cannot have {int(sizes.min())} objects")
    return sizes


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
            raise ProbabilityError(f"scene {b}, predicate {pred.name!r}: value {t[first].detach().item()!r} at {first} "
                                   f"is not a probability in [0, 1]")


def _plain_match(predicate: Predicate, tables: Mapping) -> "Predicate | None | list":
    """The one key of ``tables`` that answers ``predicate`` by its name and arity, where one side
    names no kind (a plain ``"red"`` table answers a compiled ``Predicate("red", kind="attr")``, a
    table given for ``Predicate("red", kind="attr")`` answers a plain ``Predicate("red")``); None
    when there is none, the list of them when there are several (ambiguous)."""
    kinds = [k for k in tables if k.name == predicate.name and k.arity == predicate.arity
             and (k.kind == "" or predicate.kind == "") and k != predicate]
    return kinds[0] if len(kinds) == 1 else (kinds or None)


def _shown(key: Predicate) -> str:
    return repr(key.name) if not key.kind else f"Predicate({key.name!r}, kind={key.kind!r})" if key.arity == 1 else \
        f"Predicate({key.name!r}, arity={key.arity}, kind={key.kind!r})"


def _table_key(scene: int, predicate: Predicate, tables: Mapping) -> Predicate:
    """The key of scene ``scene``'s ``tables`` that answers ``predicate`` (:func:`_plain_match`); a
    predicate none answers, or several, is refused in one line listing the keys to use."""
    match = _plain_match(predicate, tables)
    if isinstance(match, Predicate):
        return match
    what = f"predicate {predicate.name!r} (kind {predicate.kind!r}, arity {predicate.arity})"
    if match:
        raise UnknownPredicateError(f"TableOracle: scene {scene}: {what} is ambiguous: its tables "
                                    f"{', '.join(map(_shown, sorted(match)))} all answer it; give the program's "
                                    f"predicate one of their kinds")
    same_name = [k for k in tables if k.name == predicate.name]
    keys = sorted(tables, key=lambda k: (k.name, k.kind))
    listed = ", ".join(map(_shown, keys[:12])) + (f", ... ({len(keys)} in all)" if len(keys) > 12 else "")
    hint = (f"; give it under {predicate.name!r} (any kind) or {_shown(predicate)}" if not same_name else
            f"; {', '.join(map(_shown, same_name))} has another arity or kind")
    raise UnknownPredicateError(f"TableOracle: scene {scene} has no table for {what}{hint}; "
                                f"its {'unary' if predicate.arity == 1 else 'binary'} tables: {listed or 'none'}")


_FEW_TABLES = 32  # up to this many tables, their sizes are checked in Python (numpy's calls cost more)


class TableOracle(torch.nn.Module):
    """Predicate probabilities given explicitly, one dict per scene.

    ``scenes[b]`` maps a predicate (a :class:`Predicate`, or a plain name: arity is then
    read from the value's shape) to a probability vector ``(n_b,)`` or matrix
    ``(n_b, n_b)``. A plain name answers a predicate of that name and arity of any kind (a
    compiled GQA program's ``Predicate("red", kind="attr")``), and a table keyed by a kind's
    predicate answers the plain one, unless several tables would (then the error lists them). Values may be tensors that require grad: gradients flow back to them.
    ``num_objects`` (a tensor, a list, or one number for one scene: :func:`scene_sizes`) gives scene
    sizes when a scene has no table to infer it from.

    It is the building block of other oracles: anything that can produce such tables
    (scene graphs, detectors) can hand them to this class.
    """

    def __init__(self, scenes: Sequence[Mapping], num_objects: Sequence[int] | int | torch.Tensor | None = None,
                 device=None):
        super().__init__()
        if isinstance(scenes, Mapping):
            scenes = [scenes]
        if num_objects is not None:
            num_objects = scene_sizes(num_objects).tolist()
            if len(num_objects) != len(scenes):
                raise ShapeError(f"num_objects gives {len(num_objects)} sizes for {len(scenes)} scenes")
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
        self._keys: dict = {}  # (scene, predicate asked) -> the key of its table, where they differ (_key)

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
        return any(predicate in tables or _plain_match(predicate, tables) is not None for tables in store)

    def _key(self, scene: int, predicate: Predicate, tables: Mapping) -> Predicate:
        """:func:`_table_key`, found once per scene and predicate (a model asks the same ones at every step)."""
        key = self._keys.get((scene, predicate))
        if key is None:
            key = self._keys[(scene, predicate)] = _table_key(scene, predicate, tables)
        return key

    def _gather(self, requests: Requests, store, arity: int) -> torch.Tensor:
        n = self._max_objects
        try:
            found = [store[scene][pred] for scene, pred in requests.pairs()]
        except KeyError:  # a plain name for a kind's predicate, or the other way round; else refused
            found = [tables[pred] if pred in tables else tables[self._key(scene, pred, tables)]
                     for scene, pred in requests.pairs() for tables in (store[scene],)]
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
