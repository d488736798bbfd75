"""Several oracles as one: each predicate goes to the first oracle that knows it.

All oracles describe the same scenes (their ``num_objects`` must be equal), e.g. a
:class:`~nablafol.graph_oracles.SceneGraphOracle` for GQA's predicates and a
:class:`~nablafol.graph_oracles.KnowledgeOracle` for ``kg`` facts. One call of ``unary`` /
``binary`` is split into one call per oracle (only the rows it owns) and the answers are put
back in request order; gradients flow through to oracles that have them.

    >>> from nablafol.ir import Predicate
    >>> from nablafol.oracle import Requests, TableOracle
    >>> red, big = Predicate("red"), Predicate("big")
    >>> oracle = CompositeOracle([TableOracle([{red: [1.0, 0.0]}]), TableOracle([{big: [0.5, 0.5]}])])
    >>> oracle.unary(Requests.build([0, 0], [big, red])).exp()
    tensor([[0.5000, 0.5000],
            [1.0000, 0.0000]])
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..errors import ShapeError, UnknownPredicateError
from ..ir import Predicate
from ..oracle import Requests

__all__ = ["CompositeOracle"]


class CompositeOracle(torch.nn.Module):
    """Route predicates to ``oracles`` in order of preference (see the module docstring).

    Every oracle must have ``num_objects``, ``unary``, ``binary`` and ``knows(predicate)``.
    Oracles that are ``torch.nn.Module`` become submodules (their parameters are the
    composite's).
    """

    def __init__(self, oracles: Sequence):
        super().__init__()
        self.oracles = list(oracles)
        if not self.oracles:
            raise ValueError("CompositeOracle needs at least one oracle")
        for k, oracle in enumerate(self.oracles):
            missing = [m for m in ("num_objects", "unary", "binary", "knows") if not hasattr(oracle, m)]
            if missing:
                raise TypeError(f"oracle {k} ({type(oracle).__name__}) lacks {', '.join(missing)}")
        self.submodules = torch.nn.ModuleList([o for o in self.oracles if isinstance(o, torch.nn.Module)])
        first = self.oracles[0].num_objects
        for k, oracle in enumerate(self.oracles[1:], start=1):
            sizes = oracle.num_objects
            if tuple(sizes.shape) != tuple(first.shape) or not torch.equal(sizes.cpu(), first.cpu()):
                raise ShapeError(f"CompositeOracle: oracle {k} ({type(oracle).__name__}) has scenes of "
                                 f"{_brief(sizes)} objects, oracle 0 ({type(self.oracles[0]).__name__}) "
                                 f"{_brief(first)}: they must describe the same scenes")
        self._owner_cache: dict[Predicate, int] = {}

    @property
    def num_objects(self) -> torch.Tensor:
        return self.oracles[0].num_objects

    @property
    def pads_with_zeros(self) -> bool:
        """Its rows are its oracles' rows: ``-inf`` at padding when every one of them promises it."""
        return all(getattr(o, "pads_with_zeros", False) for o in self.oracles)

    def knows(self, predicate: Predicate) -> bool:
        return self.owner(predicate) is not None

    def owner(self, predicate: Predicate) -> int | None:
        """Index of the first oracle that knows ``predicate``, or None."""
        found = self._owner_cache.get(predicate)
        if found is None:
            found = next((k for k, o in enumerate(self.oracles) if o.knows(predicate)), None)
            if found is not None:
                self._owner_cache[predicate] = found
        return found

    def unary(self, requests: Requests) -> torch.Tensor:
        return self._route(requests, "unary")

    def binary(self, requests: Requests) -> torch.Tensor:
        return self._route(requests, "binary")

    def _route(self, requests: Requests, method: str) -> torch.Tensor:
        owners = []
        for p in requests.predicates:
            k = self.owner(p)
            if k is None:
                asked = ", ".join(f"{type(o).__name__}" for o in self.oracles)
                raise UnknownPredicateError(f"CompositeOracle: no oracle knows predicate {p.name!r} "
                                            f"(kind {p.kind!r}, arity {p.arity}); asked {asked}")
            owners.append(k)
        owners_of_pred = np.array(owners, dtype=np.int64)
        pred = requests.predicate.detach().cpu().numpy()
        row_owner = owners_of_pred[pred] if len(pred) else pred
        if len(set(owners)) <= 1:  # one oracle owns everything: no split
            return getattr(self.oracles[owners[0] if owners else 0], method)(requests)
        pieces, order = [], []
        for k in sorted(set(owners)):
            rows = np.nonzero(row_owner == k)[0]
            if not len(rows):
                continue
            mine = [i for i, o in enumerate(owners) if o == k]
            local = np.full(len(owners), -1, dtype=np.int64)
            local[mine] = np.arange(len(mine))
            idx = torch.as_tensor(rows, device=requests.scene.device)
            sub = Requests(requests.scene[idx],
                           torch.as_tensor(local[pred[rows]], device=requests.predicate.device),
                           tuple(requests.predicates[i] for i in mine))
            pieces.append(getattr(self.oracles[k], method)(sub))
            order.append(rows)
        stacked = torch.cat([p.to(pieces[0].device, pieces[0].dtype) for p in pieces])
        inverse = np.empty(len(pred), dtype=np.int64)
        inverse[np.concatenate(order)] = np.arange(len(pred))
        return stacked[torch.as_tensor(inverse, device=stacked.device)]

    def __repr__(self) -> str:
        return f"CompositeOracle({', '.join(type(o).__name__ for o in self.oracles)})"


def _brief(sizes: torch.Tensor) -> str:
    values = sizes.tolist()
    return str(values if len(values) <= 8 else values[:8] + ["..."])
