"""Exact answers where the fast path approximates: conditioning on the repeated uncertain atoms.

``P(F) = Σ_w P(w) · P(F | w)`` over the ``2^k`` assignments ``w`` of a program's ``k`` repeated
uncertain atoms (:mod:`nablafol.engine.grounding`), each world exact on the fast path, all run as
one batch. Where :func:`circuit_preferred` (or past ``exact_budget``), a circuit answers instead
(:mod:`nablafol.engine.circuits`); one past its node budget keeps the fast path's answer,
flagged not exact (``docs/exactness.md``, "Exact mode").

    >>> import torch
    >>> from nablafol.engine import Engine
    >>> from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Relate, Top
    >>> from nablafol.oracle import TableOracle
    >>> red, on = Predicate("red"), Predicate("on", arity=2)
    >>> hop = Program.yes_no(Aggregate(Quantifier.EXISTS, Relate.of(on, Quantifier.EXISTS, Filter(red, Top()))))
    >>> oracle = TableOracle([{red: [0.0, 0.5], on: [[0.0, 1.0], [1.0, 1.0]]}])
    >>> fast, exact = Engine()([hop], oracle), Engine(exact=True)([hop], oracle)
    >>> fast.probs().item(), fast.exact.item(), exact.probs().item(), exact.exact.item()
    (0.75, False, 0.5, True)
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence

from nablafol.engine.answers import Answers, Tables, answer_reading
from nablafol.engine.circuits import CircuitJobs, answer_by_circuits, padded
from nablafol.engine.grounding import RepeatedAtoms, repeated_atoms
from nablafol.engine.planning import BatchPlan, build_batch_plan, request_key, split_key
from nablafol.ir import Program
from nablafol.numerics import log1mexp, log_sum_exp

NEG_INF = float("-inf")

__all__ = ["exact_answers", "shared_atoms", "circuit_preferred", "WORLDS_PER_RUN", "COMPILE_WORLDS"]

#: What compiling a question's circuit costs, in worlds of Shannon expansion (a fast-path run each)
COMPILE_WORLDS = 64
#: Worlds (program copies) one run of exact mode evaluates at most (memory); more run in turn
WORLDS_PER_RUN = 1 << 12


def shared_atoms(engine, programs: Sequence[Program], plan: BatchPlan, tables) -> RepeatedAtoms:
    """The uncertain ground atoms each program repeats in its scene (``count``: how many; 0 where
    the fast path's answer is exact)."""
    need = np.array([i for i, p in enumerate(programs) if not p.read_once], dtype=np.int64)
    if need.size:  # what a program repeats may be certain in its scene (plain scene graphs)
        need = need[~_certain_repeats(programs, need, plan, tables)]
    if not need.size:
        unary, binary = np.zeros((0, 3), dtype=np.int64), np.zeros((0, 4), dtype=np.int64)
        return RepeatedAtoms(unary, binary, np.zeros(len(programs), dtype=np.int64))
    rows: list = [None] * len(programs)  # only the programs that can repeat an atom are analysed
    for i in need.tolist():
        rows[i] = engine.registry.packed(programs[i]).plan.grounding
    return repeated_atoms(plan, rows, tables.unary, tables.binary, tables.object_mask)


def _certain_repeats(programs, need: np.ndarray, plan: BatchPlan, tables) -> np.ndarray:
    """Whether every atom each program of ``need`` can repeat is certain in its scene."""
    pid = {p: i for i, p in enumerate(plan.predicates)}
    out = np.ones(len(need), dtype=bool)
    for arity, keys, table in ((1, plan.unary_keys, tables.unary),
                               (2, plan.binary_keys, tables.binary)):
        if table is None or not len(keys):
            continue
        asked = [(k, pid[p]) for k, i in enumerate(need)
                 for p in programs[i].repeated_predicates() if p.arity == arity]
        if not asked:
            continue
        owner, ids = np.array(asked, dtype=np.int64).T
        t = table[: len(keys)].flatten(1)
        crisp = ((t == 0) | torch.isneginf(t)).all(1).cpu().numpy()
        key = request_key(plan.program_scene[need[owner]], ids, len(plan.predicates))
        out[owner[~crisp[np.searchsorted(keys, key)]]] = False
    return out


def exact_answers(engine, programs: Sequence[Program], plan: BatchPlan, tables) -> Answers:
    """The batch's answers, exact for every program that repeats at most ``engine.exact_budget``
    uncertain atoms (``Answers.exact`` says which)."""
    jobs, rows = None, np.array([i for i, p in enumerate(programs) if not p.read_once], np.int64)
    repeating = {id(programs[i]): programs[i] for i in rows}.values()  # a program object asked once
    if rows.size and all(engine.circuits.knows(p) for p in repeating):  # each had a circuit lately
        jobs = CircuitJobs(programs, plan, tables, rows)
    if jobs is not None and all(engine.circuits.holds(k) for k in jobs.keys):  # no atoms to find
        n_jobs = sum(len(m) for m in jobs.members)
        fast = n_jobs < len(programs)
        answers = engine.execute(plan, tables) if fast else _unanswered(plan, tables)
        if _by_circuits(engine, answers, jobs).size == n_jobs:  # else one is past its node budget
            answers._exact = torch.ones(plan.n_programs, dtype=torch.bool)
            return answers
    atoms = shared_atoms(engine, programs, plan, tables)
    count = atoms.count
    answers = engine.execute(plan, tables)  # the fast path: exact where nothing uncertain repeats
    compiled = np.zeros(len(programs), dtype=bool)
    if (count > 0).any():  # the jobs circuits answer (circuit_preferred)
        if jobs is None:
            jobs = CircuitJobs(programs, plan, tables, np.nonzero(count > 0)[0])
        k = [int(count[members[0]]) for members in jobs.members]  # the same for a job's programs
        jobs = jobs.keeping([j for j, key in enumerate(jobs.keys) if k[j] > 0 and circuit_preferred(
            engine.circuits, key, k[j], len(jobs.members[j]), engine.exact_budget)])
        compiled[_by_circuits(engine, answers, jobs)] = True
    answers._exact = torch.as_tensor((count <= engine.exact_budget) | compiled)
    expand = np.nonzero((count > 0) & (count <= engine.exact_budget) & ~compiled)[0]
    if not expand.size:
        return answers
    worlds, parts, owner = 1 << count[expand], [], []
    ends = np.cumsum(worlds)
    for start in range(0, int(ends[-1]), WORLDS_PER_RUN):  # a program's worlds may span runs
        at = np.arange(start, min(start + WORLDS_PER_RUN, int(ends[-1])))  # across programs
        i = np.searchsorted(ends, at, side="right")
        program, world = expand[i], at - (ends[i] - worlds[i])
        parts.append(_worlds(engine, programs, plan, tables, atoms, program, world, answers))
        owner.append(np.unique(program))
    owner = np.concatenate(owner)
    _write(answers, np.unique(owner), *(_log_sum_by(owner, torch.cat(p)) for p in zip(*parts)))
    return answers


def _unanswered(plan: BatchPlan, tables) -> Answers:
    """Answers of the plan's shape with nothing written: probabilities 0, no focus."""
    device = tables.object_mask.device
    mask = torch.as_tensor(answer_reading(plan, plan.n_programs)[1], device=device)
    log_probs = torch.full(mask.shape, NEG_INF, dtype=tables.dtype, device=device)
    focus = log_probs.new_full((plan.n_programs, tables.object_mask.shape[1]), NEG_INF)
    masks = tables.object_mask[torch.as_tensor(plan.program_scene, device=device)]
    return Answers(log_probs, mask, plan.labels, focus, masks, torch.zeros_like(log_probs))


def _write(answers: Answers, rows: np.ndarray, log_p, log_c, focus) -> None:
    """``answers`` with these rows written in (candidates, complements, focus)."""
    if not rows.size:
        return
    at, absent = torch.as_tensor(rows, device=answers.log_probs.device), ~answers.candidate_mask
    answers.log_probs = answers.log_probs.index_copy(0, at, log_p).masked_fill(absent, NEG_INF)
    log_c = answers.log_complement.index_copy(0, at, log_c)
    answers.log_complement = log_c.masked_fill(absent, 0.0)
    answers.focus = answers.focus.index_copy(0, at, focus)


def _by_circuits(engine, answers: Answers, jobs: CircuitJobs) -> np.ndarray:
    """Writes the jobs' answers by their circuits into ``answers``: the rows written."""
    rows, *written = answer_by_circuits(engine.circuits, jobs, answers.log_probs.shape[1],
                                        answers.focus.shape[1], answers.log_probs)
    _write(answers, rows, *written)
    return rows


def circuit_preferred(cache, key: tuple, k: int, copies: int, budget: int) -> bool:
    """The cost model: whether a circuit answers the ``copies`` programs of one question and
    certainty pattern that repeat ``k`` uncertain atoms, rather than Shannon expansion of
    ``copies · 2^k`` worlds (a compilation costs about :data:`COMPILE_WORLDS`; docs/exactness.md,
    "The cost model")."""
    if cache.holds(key) or k > budget or copies << k > COMPILE_WORLDS:
        return True
    return cache.asked_before(key)


def _log_sum_by(owner: np.ndarray, values: torch.Tensor) -> torch.Tensor:
    """``log Σ e^values`` over the rows of each owner (``owner`` sorted): a row per owner."""
    rows = torch.split(values, np.unique(owner, return_counts=True)[1].tolist())
    return log_sum_exp(pad_sequence(rows, batch_first=True, padding_value=NEG_INF), dim=1)


def _worlds(engine, programs, plan: BatchPlan, tables, atoms: RepeatedAtoms, program, world,
            answers: Answers):
    """``log Σ_w P(w) P(F | w)`` per program of a run: log p, log(1 - p), focus, padded."""
    device = tables.object_mask.device
    chunk, owner = np.unique(program, return_inverse=True)  # world -> its row of the run
    n_scenes = tables.object_mask.shape[0]
    worlds = [programs[chunk[o]] for o in owner]  # each world a scene of its own, after the batch's
    world_plan = build_batch_plan(worlds, n_scenes + np.arange(owner.size), engine.registry,
                                  plan.predicates)
    base_scene = np.concatenate([np.arange(n_scenes), plan.program_scene[chunk[owner]]])
    place = np.full(len(programs), -1, dtype=np.int64)
    place[chunk] = np.arange(len(chunk))
    log_weight = torch.zeros(owner.size, dtype=tables.dtype, device=device)
    u_mine, b_mine = (found[place[found[:, 0]] >= 0] for found in (atoms.unary, atoms.binary))
    n_unary = np.bincount(place[u_mine[:, 0]], minlength=len(chunk))  # binary atoms' first bit
    rebuilt = []
    for arity, table, mine, offset in ((1, tables.unary, u_mine, np.zeros_like(n_unary)),
                                       (2, tables.binary, b_mine, n_unary)):
        set_world, set_atom, value = _settings(mine, place, owner, world, offset)
        setting = mine[set_atom]  # (program, request, object...) of each atom a world sets
        if len(set_world):  # log P(w): each set atom's log p or log(1 - p)
            log_p = table[tuple(torch.as_tensor(c, device=device) for c in setting[:, 1:].T)]
            term = torch.where(torch.as_tensor(value, device=device), log_p, log1mexp(log_p))
            log_weight = log_weight.index_add(0, torch.as_tensor(set_world, device=device), term)
        rebuilt.append(_retabled(arity, table, plan, world_plan, base_scene, setting,
                                 n_scenes + set_world, value))
    (unary, u_remap), (binary, b_remap) = rebuilt
    for vgroups, _ in world_plan.levels:  # the world plan reads the rebuilt tables
        for g in vgroups:
            for name, remap in (("table", u_remap), ("tables", b_remap)):
                if name in g.arrays:
                    g.arrays[name] = remap[g.arrays[name]]
    masks = tables.object_mask[torch.as_tensor(base_scene, device=device)]
    result = engine.execute(world_plan, Tables(unary, binary, masks, tables.dtype, tables.padded,
                                               neutral=True))
    log_p, log_c, focus = (_log_sum_by(owner, values + log_weight[:, None])
                           for values in (result.log_probs, result.log_complement, result.focus))
    width = answers.log_probs.shape[1]  # a run may have fewer candidates than the batch
    return (padded(log_p, width, NEG_INF), padded(log_c, width, 0.0),
            padded(focus, answers.focus.shape[1], NEG_INF))


def _settings(mine: np.ndarray, place, owner, world, first_bit: np.ndarray):
    """(world, atom, 0/1) of each atom a world sets, its program's bits from ``first_bit`` on."""
    prog = place[mine[:, 0]]
    per = np.bincount(prog, minlength=len(first_bit))
    first = np.concatenate([[0], np.cumsum(per)[:-1]])
    bit = np.arange(len(mine)) - first[prog] + first_bit[prog]
    n = per[owner]  # atoms per world
    w = np.repeat(np.arange(owner.size), n)
    atom = first[owner[w]] + np.arange(w.size) - np.repeat(np.cumsum(n) - n, n)
    return w, atom, ((world[w] >> bit[atom]) & 1).astype(bool)


def _retabled(arity: int, table, plan, world_plan, base_scene, setting, set_scene, value):
    """The world plan's table of one arity, and each request's row: its scene's, or a set copy."""
    plan_keys, keys = ((plan.unary_keys, world_plan.unary_keys) if arity == 1
                       else (plan.binary_keys, world_plan.binary_keys))
    if table is None or not len(keys):
        return table, np.zeros(1, dtype=np.int64)
    n = len(plan.predicates)  # the world plan's numbering too
    scene, pid = split_key(keys, n)
    source = np.searchsorted(plan_keys, request_key(base_scene[scene], pid, n))
    _, set_pid = split_key(plan_keys[setting[:, 1]], n)
    request = np.searchsorted(keys, request_key(set_scene, set_pid, n))
    changed, slot = np.unique(request, return_inverse=True)
    device = table.device
    copies = table[torch.as_tensor(source[changed], dtype=torch.long, device=device)].clone()
    if request.size:
        index = (slot.reshape(-1),) + tuple(setting[:, 2:].T)
        copies[tuple(torch.as_tensor(c, device=device) for c in index)] = torch.where(
            torch.as_tensor(value, device=device), 0.0, float("-inf")).to(copies.dtype)
    neutral = arity == 2  # a binary table keeps its neutral all-ones table last
    base, remap = table.shape[0] - neutral, source.copy()
    remap[changed] = base + np.arange(changed.size)
    remap = np.append(remap, base + changed.size) if neutral else remap
    return torch.cat([table[:base], copies, table[base:]]), remap
