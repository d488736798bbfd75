"""The batched executor (:class:`Engine`): the oracle asked once per batch for its distinct
``(scene, predicate)`` pairs, then, level by level, each operator kind run as **one** call on all
its rows, whatever the batch's size.

Example (the paper's formula (1) on one scene of two objects):
    >>> import torch
    >>> from nablafol.ir import Predicate, Program, Aggregate, Filter, Relate, Top
    >>> from nablafol.oracle import TableOracle
    >>> chair, left = Predicate("Chair"), Predicate("Left", arity=2)
    >>> program = Program.yes_no(Aggregate(Quantifier.EXISTS,
    ...                                    Filter(chair, Relate.of(left, Quantifier.FORALL, Top()))))
    >>> oracle = TableOracle([{chair: [0.9, 0.2], left: [[1.0, 0.8], [0.1, 1.0]]}])
    >>> Engine()([program], oracle).probs()
    tensor([[0.7256]])
"""
from __future__ import annotations

import warnings
from typing import Callable, Optional, Protocol, Sequence

import numpy as np
import torch

from nablafol import operators as ops
from nablafol.operators import Quantifier  # noqa: F401 (the module's example uses it)
from nablafol.errors import ProbabilityError, ProgramStructureError, ShapeError
from nablafol.ir import Program
from nablafol.oracle import Oracle, Requests, scene_sizes

from nablafol.engine.answers import (Answers, GroupReader, Tables, answer_reading, asked_table, masked_table,
                                     not_probabilities)
from nablafol.engine.bounds import answer_bounds
from nablafol.engine.circuits import CircuitCache
from nablafol.engine.exact import exact_answers, shared_atoms
from nablafol.engine.fixed_shapes import (PLAN_ARRAYS, Layout, ShapeFloors, dense_q_product, fixed_tables,
                                          layout_levels, layout_of, padded_plan, padded_requests, trimmed, upload)
from nablafol.engine.lowering import TOP
from nablafol.engine.rowwise import run_rows, steps_of
from nablafol.engine.planning import NEG_INF, BatchPlan, Group, Registry, build_batch_plan
from nablafol.engine.tiling import TiledPlans, one_object

__all__ = ["Engine", "Calibration", "CompiledQProduct", "EXACT_BUDGET", "run_fixed"]

#: Shared uncertain atoms exact mode conditions on per program, by default
EXACT_BUDGET = 16
MAX_EXACT_BUDGET = 24


class Calibration(Protocol):
    """A function the engine calls on every attention it computes (except ``Top``); a
    ``prepare(programs, device)`` method, if it has one, is called first with the batch's programs.

    ``log_a`` ``(G, N)`` are the rows of one operator kind at one level, ``mask`` their objects,
    ``program`` ``(G,)`` each row's program in the batch and ``step`` ``(G,)`` its position in
    that program's ``ProgramPlan.attention_steps``. It returns calibrated log-attentions of the
    same shape (``calibration/`` implements it).
    """

    def __call__(self, log_a: torch.Tensor, mask: torch.Tensor, program: torch.Tensor,
                 step: torch.Tensor) -> torch.Tensor: ...


class _Store:
    """Rows computed so far: one buffer, or with autograd a concatenation per level (no writes)."""

    def __init__(self, first: torch.Tensor, total: int):
        self.filled, self.grad, self.rows = first.shape[0], torch.is_grad_enabled(), first
        if not self.grad:  # rows past `filled` are written before anything reads them
            self.rows = first.new_empty((self.filled + total,) + first.shape[1:])
            self.rows[: self.filled] = first

    def extend(self, outs: list) -> None:
        if self.grad and outs:
            self.rows = torch.cat([self.rows] + outs)
        elif not self.grad:
            for out in outs:
                self.rows[self.filled: self.filled + out.shape[0]] = out
                self.filled += out.shape[0]


def _reading(a: np.ndarray, device):
    """A ``slice`` (a view) where an index array's rows are consecutive, else its index tensor."""
    flat = a[:, 0] if a.ndim == 2 and a.shape[1] == 1 else a
    if flat.ndim == 1 and flat.size and flat[0] >= 0 and (np.diff(flat) == 1).all():
        run = slice(int(flat[0]), int(flat[0]) + flat.size)
        return run if flat is a else (run, None)
    return torch.as_tensor(a, dtype=torch.long, device=device)


def _flip(reverse: np.ndarray, device):
    """Where a relate column's atoms are reversed: None for none, True for all, else a mask."""
    if reverse.all() or not reverse.any():
        return True if reverse.any() else None
    return torch.as_tensor(reverse, device=device)[:, None, None]


def _requests(plan: BatchPlan, keys: np.ndarray, arity: int, device) -> Requests:
    def make() -> Requests:
        scene, local, predicates = padded_requests(keys, plan, len(keys))
        return Requests(torch.as_tensor(scene, device=device),
                        torch.as_tensor(local, device=device), predicates)
    return plan.kept(("requests", arity, device), make)


def _batched(plan: BatchPlan, device) -> tuple:
    """What a batched run reads of ``plan``, as ``layout_levels`` gives it: plan-wide, then levels."""
    def group(g: Group) -> tuple:
        a = g.arrays
        index = {name: _reading(rows, device) for name, rows in a.items()
                 if name not in ("tables", "reverse", "pad")}
        if "pad" in a:  # a mask, not rows to read
            index["pad"] = torch.as_tensor(a["pad"], device=device)
        width = a["tables"].shape[1] if "tables" in a else 0
        columns = [(_reading(np.ascontiguousarray(a["tables"][:, k]), device),
                    _flip(a["reverse"][:, k], device)) for k in range(width)]
        return g.operator, slice(g.start, g.stop), index, columns
    plan_wide = [getattr(plan, name) for name in PLAN_ARRAYS] + answer_reading(plan, plan.n_programs)
    return upload(plan_wide, device), [([group(g) for g in v], [group(g) for g in s]) for v, s in plan.levels]


def _run(plan_wide: list, levels: list, tables: Tables, q_product: Callable,
         calibration: Optional[Callable]) -> tuple:
    """``(log_probs, log_complement, candidate_mask, focus, object_mask)`` of a run of ``levels``."""
    v_scene, v_program, v_step, program_scene, answer_rows, candidates, focus, no_focus = plan_wide
    tables = tables.with_neutral()
    unary, binary, object_mask = tables.unary, tables.binary, tables.object_mask
    n, dtype = object_mask.shape[1], tables.dtype
    vec = _Store(object_mask.new_zeros((0, n), dtype=dtype), v_scene.shape[0])
    # (log p, log(1 - p)): complements stay exact through ∃, ∄, ¬ and ∨
    sca = _Store(torch.tensor([[0.0, NEG_INF], [NEG_INF, 0.0]], dtype=dtype, device=object_mask.device),
                 sum(rows.stop - rows.start for _, sgroups in levels for _, rows, _, _ in sgroups))
    masked = tables.padded or calibration is not None
    for level in levels:
        for store, groups in zip((vec, sca), level):  # a level's attentions, then its truths
            outs = []
            for operator, at, index, columns in groups:
                if operator.vector:
                    mask = object_mask[v_scene[at]] if masked else None
                else:  # a truth read from an attention: its objects
                    mask = object_mask[v_scene[index["vin"]]] if tables.padded and "vin" in index else None
                out = operator.run(GroupReader(index, columns, at.stop - at.start, vec.rows, sca.rows, unary, binary,
                                               mask, q_product))
                if calibration is not None and operator.vector and operator is not TOP:
                    out = calibration(out, mask, v_program[at], v_step[at]).masked_fill(~mask, NEG_INF)
                outs.append(out)
            store.extend(outs)
    vec, sca = vec.rows, sca.rows
    if vec.shape[0]:
        focused = vec[focus].masked_fill(no_focus[:, None], NEG_INF)
    else:  # yes/no questions of no attention at all
        focused = vec.new_full((focus.shape[0], n), NEG_INF)
    # the candidate mask is the user's to edit, not the plan's
    return sca[:, 0][answer_rows], sca[:, 1][answer_rows], candidates.clone(), focused, object_mask[program_scene]


def run_fixed(layout: Layout, index: list, unary: Optional[torch.Tensor], binary: Optional[torch.Tensor],
              object_mask: torch.Tensor, calibration: Optional[Callable] = None) -> tuple:
    """The level loop over a padded batch at the shapes ``layout`` fixes, tensor operations alone
    (what ``torch.compile(mode="reduce-overhead")`` records once per layout and replays).
    ``index``: the tensors of :func:`~nablafol.engine.fixed_shapes.layout_of`'s arrays."""
    dtype = unary.dtype if unary is not None else binary.dtype if binary is not None else torch.get_default_dtype()
    tables = Tables(unary, binary, object_mask, dtype, True, neutral=False)
    log_probs, log_complement, candidate_mask, focus, objects = _run(*layout_levels(layout, index), tables,
                                                                     dense_q_product, calibration)
    p = layout.programs  # a padded entry writes into the row after the programs'
    return log_probs[:p], log_complement[:p], candidate_mask[:p], focus, objects


class CompiledQProduct:
    """The Q-product through ``torch.compile``: one fused loop instead of a dozen passes. Rows are
    marked dynamic; objects stay static (one compilation per scene size), keeping it vectorized."""

    def __init__(self):
        self._fn = torch.compile(ops.q_product_fused, dynamic=None)
        self.failed: Optional[str] = None  # why compiling failed: eager from then on

    def __call__(self, log_r, log_y, mask_x, mask_y, quantifier):
        if log_r.shape[0] < 2 or self.failed:  # size-0/1 dims cannot be marked dynamic
            return ops.q_product(log_r, log_y, mask_x, mask_y, quantifier)
        if mask_y is not None:  # masked here, not in the kernel: a mask inside its loop halves its speed
            log_y = log_y.masked_fill(~mask_y, NEG_INF)
        for t in (log_r, log_y, mask_x):
            if t is not None:  # no mask when nothing is padded
                torch._dynamo.mark_dynamic(t, 0)
        try:
            return self._fn(log_r, log_y, mask_x, None, quantifier)
        except Exception as e:  # no C compiler, an unsupported backend...
            self.failed = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            warnings.warn(f"torch.compile of the Q-product failed ({self.failed[:200]}); using the eager Q-product",
                          RuntimeWarning, stacklevel=2)
            return ops.q_product(log_r, log_y, mask_x, None, quantifier)


_SCENE_0 = np.zeros(1, dtype=np.int64)


class Engine(torch.nn.Module):
    """Evaluates batches of DFOL programs over an oracle; a parameter-free ``nn.Module``.

    ``calibration`` (optional, :class:`Calibration`) is called after every attention step; a
    module's parameters belong to the engine. ``validate`` checks what oracles return (shape, NaN,
    probabilities above 1), naming the predicate. ``compile=True`` runs the Q-product through
    ``torch.compile``.

    ``exact=True`` gives the exact probability of programs that are not read-once: conditioning
    on the uncertain atoms a program repeats, up to ``exact_budget`` of them, else (or where
    cheaper) a compiled circuit kept in ``self.circuits``; past that, the fast path's answer,
    flagged (:attr:`Answers.exact`). ``bounds=True`` adds sound bounds on every answer
    (:attr:`Answers.bounds`, :mod:`nablafol.engine.bounds`).

    ``fixed_shapes=True`` runs every batch at bucketed shapes with no host read between its first
    operator and its answers (:mod:`nablafol.engine.fixed_shapes`), recorded and replayed with
    ``compile=True``; its answers are the eager path's within ``docs/numerics.md``'s tolerance.
    """

    def __init__(self, calibration: Optional[Callable] = None, validate: bool = True, compile: bool = False,
                 exact: bool = False, exact_budget: int = EXACT_BUDGET, bounds: bool = False,
                 fixed_shapes: bool = False):
        super().__init__()
        if fixed_shapes and (exact or bounds):
            raise ProgramStructureError("fixed_shapes runs the fast path at fixed shapes; exact inference and bounds "
                                        "are not fixed-shape work: use one or the other")
        if not (type(exact_budget) is int and 0 <= exact_budget <= MAX_EXACT_BUDGET):
            raise ProgramStructureError(f"exact_budget must be a whole number of atoms from 0 to {MAX_EXACT_BUDGET}, "
                                        f"got {exact_budget!r}")
        if (exact or bounds) and calibration is not None:
            raise ProgramStructureError(f"{'exact inference' if exact else 'bounds'} computes probabilities of the "
                                        "formulas; a calibrator changes them: use one or the other")
        self.calibration, self.validate = calibration, validate
        self.exact, self.exact_budget, self.bounds = bool(exact), exact_budget, bool(bounds)
        self.registry = Registry()
        self.circuits = CircuitCache()
        self._tiled = TiledPlans(self.registry)
        self.fixed_shapes = bool(fixed_shapes)
        self.shape_floors = ShapeFloors()
        self._q_product = CompiledQProduct() if compile and not fixed_shapes else ops.q_product
        self._run_fixed = (torch.compile(run_fixed, mode="reduce-overhead", dynamic=False) if compile and fixed_shapes
                           else run_fixed)

    def plan(self, programs: Sequence[Program], scenes=None) -> BatchPlan:
        """The plan of ``programs`` on ``scenes`` (all 0 by default); one program object over any
        scenes is planned once and kept."""
        if scenes is None and len(programs) == 1 and isinstance(programs[0], Program):
            return self._tiled(programs[0], _SCENE_0)  # one question: no array made
        scenes = np.zeros(len(programs), dtype=np.int64) if scenes is None else np.asarray(scenes, dtype=np.int64)
        if (len(programs) and scenes.shape == (len(programs),) and isinstance(programs[0], Program)
                and one_object(programs) and scenes.min() >= 0):
            return self._tiled(programs[0], scenes)
        return build_batch_plan(programs, scenes, self.registry)

    def forward(self, programs: Sequence[Program], oracle: Oracle, scenes=None,
                plan: Optional[BatchPlan] = None) -> Answers:
        """Evaluate ``programs``; program ``k`` runs on scene ``scenes[k]`` of the oracle's batch.

        ``scenes`` defaults to ``0, 1, 2, ...`` when the oracle holds one scene per program,
        and to all zeros when it holds a single scene. ``plan``: what :meth:`plan_for` gave for
        the same arguments, made beforehand (e.g. while an earlier batch ran).
        """
        programs = list(programs)
        plan = self.plan_for(programs, oracle, scenes) if plan is None else plan
        prepare = getattr(self.calibration, "prepare", None)
        if prepare is not None:
            prepare(programs, device=scene_sizes(oracle.num_objects).device)
        if self.fixed_shapes:
            answers, tables = self._fixed(plan, oracle)
        else:
            tables = self.tables(plan, oracle)
            answers = (exact_answers(self, programs, plan, tables.with_neutral()) if self.exact
                       else self.execute(plan, tables))
        if self.calibration is None and not self.exact:  # computed when first asked
            answers._exact = lambda detached=tables.detached(): torch.as_tensor(
                shared_atoms(self, programs, plan, detached.with_neutral()).count == 0)
        if self.bounds:
            answers.bounds = answer_bounds(programs, plan, tables.detached(), answers,
                                           self.exact_budget)
        return answers

    def plan_for(self, programs: Sequence[Program], oracle: Oracle, scenes=None) -> BatchPlan:
        """The plan :meth:`forward` runs for these arguments (host work alone)."""
        programs, n_scenes = list(programs), int(scene_sizes(oracle.num_objects).shape[0])
        if scenes is None:
            if n_scenes not in (1, len(programs)):
                raise ShapeError(f"{len(programs)} programs over {n_scenes} scenes: pass scenes= to say which is which")
            return self.plan(programs, None if n_scenes == 1 else np.arange(len(programs)))
        scenes = np.asarray(scenes.cpu() if torch.is_tensor(scenes) else scenes, dtype=np.int64).reshape(-1)
        if scenes.shape[0] != len(programs):
            raise ShapeError(f"scenes has {scenes.shape[0]} entries for {len(programs)} programs")
        if scenes.size and (scenes.min() < 0 or scenes.max() >= n_scenes):
            raise ShapeError(f"scene index {int(scenes.max() if scenes.max() >= n_scenes else scenes.min())} "
                             f"out of range for an oracle of {n_scenes} scenes")
        return self.plan(programs, scenes)

    def _fixed(self, plan: BatchPlan, oracle: Oracle) -> tuple[Answers, Tables]:
        """The fast path at bucketed shapes, trimmed back to the batch, and its tables."""
        num_objects, sizes = scene_sizes(oracle.num_objects), self.shape_floors.sizes(plan)
        n_scenes, device = num_objects.shape[0], num_objects.device
        requests = [padded_requests(keys, plan, size) for keys, size in zip((plan.unary_keys, plan.binary_keys),
                                                                             sizes[-2:])]

        def uploaded():
            layout, arrays = layout_of(padded_plan(plan, sizes))
            return layout, upload(arrays + [part for r in requests for part in r[:2]], device)
        layout, index = plan.kept(("fixed shapes", device, sizes), uploaded)
        asked = {1: Requests(index[-4], index[-3], requests[0][2]), 2: Requests(index[-2], index[-1], requests[1][2])}
        scenes = self.shape_floors.scenes(n_scenes)
        got, invalid, n = fixed_tables(oracle, asked, self.validate, scenes)
        log_probs, log_complement, candidate_mask, focus, object_mask = self._run_fixed(
            layout, index[:-4], got.unary, got.binary, got.object_mask, self.calibration)
        if invalid is not None and bool(invalid):  # the eager check names what and where
            self.tables(plan, oracle)
            raise ProbabilityError(f"{type(oracle).__name__}: a table holds a probability outside [0, 1]")
        tables = trimmed(got, n, len(plan.unary_keys), len(plan.binary_keys), n_scenes)
        p, k = plan.n_programs, plan.candidate_width
        return Answers(log_probs[:p, :k], candidate_mask[:p, :k], plan.labels, focus[:p, :n],
                       object_mask[:p, :n], log_complement[:p, :k]), tables

    def shared_atoms(self, programs: Sequence[Program], oracle: Oracle, scenes=None) -> np.ndarray:
        """``(P,)``: how many uncertain ground atoms each program repeats in its scene (0: the fast
        path is exact; exact mode runs ``2**k`` worlds of a program that repeats ``k``)."""
        programs = list(programs)
        plan = self.plan_for(programs, oracle, scenes)
        with torch.no_grad():
            return shared_atoms(self, programs, plan, self.tables(plan, oracle).with_neutral()).count

    def _ask(self, oracle, requests: Requests, arity: int, n: int, object_mask: torch.Tensor,
             padded: bool) -> Optional[torch.Tensor]:
        if not len(requests):
            return None
        table = asked_table(oracle, requests, arity, object_mask.device, n)
        # one pass finds a table with no NaN and nothing above log 1: nothing to name
        suspect = self.validate and table.numel() and not bool(table.detach().max() <= 0)
        # an oracle that pads with exact zeros is not masked again, unless its table is suspect
        if padded and (suspect or not getattr(oracle, "pads_with_zeros", False)):
            table = masked_table(table, requests, object_mask)  # before the check: padding is no entry
        bad = not_probabilities(table) if suspect else None
        if bad is not None and bool(bad.any()):  # named: its predicate, scene and objects
            r = int(bad.flatten(1).any(1).nonzero()[0])
            pred = requests.predicates[int(requests.predicate[r])]
            idx = tuple(int(i) for i in bad[r].nonzero()[0])
            value = float(table[r][idx].detach().exp()) if not torch.isnan(table[r][idx]) else float("nan")
            raise ProbabilityError(f"{type(oracle).__name__}: predicate {pred.name!r} (scene {int(requests.scene[r])}, "
                                   f"objects {idx}) has probability {value!r}, outside [0, 1]")
        return table

    def run(self, plan: BatchPlan, oracle: Oracle) -> Answers:
        """:meth:`execute` over the oracle's tables."""
        return self.execute(plan, self.tables(plan, oracle))

    def tables(self, plan: BatchPlan, oracle: Oracle) -> Tables:
        """What the oracle says about every ``(scene, predicate)`` pair the plan needs."""
        num_objects = scene_sizes(oracle.num_objects)
        device, sizes = num_objects.device, num_objects.tolist()
        n = max(sizes, default=0)
        padded = min(sizes, default=0) != n
        if padded:
            object_mask = torch.arange(n, device=device)[None, :] < num_objects[:, None]  # (B, N)
        else:
            object_mask = torch.ones((num_objects.shape[0], n), dtype=torch.bool, device=device)
        unary, binary = (self._ask(oracle, _requests(plan, keys, arity, device), arity, n, object_mask, padded)
                         for arity, keys in ((1, plan.unary_keys), (2, plan.binary_keys)))
        dtype = unary.dtype if unary is not None else binary.dtype if binary is not None else torch.get_default_dtype()
        return Tables(unary, binary, object_mask, dtype, padded, neutral=False)

    def execute(self, plan: BatchPlan, tables: Tables) -> Answers:
        """Run a plan's operators, level by level, over its tables (the fast path)."""
        # row by row reads tables with no all-ones relation: it leaves a relate's padding out
        if (self.calibration is None and not tables.padded and not tables.neutral
                and not isinstance(self._q_product, CompiledQProduct) and (steps := steps_of(plan)) is not None):
            return run_rows(steps, plan, tables, self._q_product)
        device = tables.object_mask.device
        log_probs, log_complement, candidate_mask, focus, objects = _run(
            *plan.kept(("batched", device), lambda: _batched(plan, device)), tables, self._q_product, self.calibration)
        return Answers(log_probs, candidate_mask, plan.labels, focus, objects, log_complement)
