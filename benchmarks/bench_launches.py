"""What a training step launches, and what one program costs per scene.

    python -m benchmarks.bench_launches [--quick]

Four figures, on the CPU, one torch thread:

* **launches per step**: the aten calls of one optimizer step of the ``Trainer`` (features ->
  oracle -> engine -> loss -> backward -> Adam), counted with ``torch.profiler`` (the calls made
  from Python and autograd, not those inside other aten calls), at batch 64 and 1,024 on scenes
  of 36 objects; beside them the batch's distinct programs and the groups (one operator kind at
  one level) the engine runs. The aim: the count at 1,024 at most 1.2x the count at 64, i.e.
  launches that do not grow with the batch's number of distinct programs. Counted, never timed:
  the count is the same on any machine.
* **one program over many scenes**: each of the read-once binary GQA programs of
  ``bench_problog`` (its predicates that would repeat in the grounding made certain) run once
  over 1,024 scenes of 12 objects with their own random tables, forward only; the CPU time per
  question-scene (the wall time beside it: see ``best_wall_and_cpu``), with the tables already in memory (an oracle that gathers them from one
  stacked tensor: the engine's work, not the oracle's). The aim: ``PER_SCENE_AIM_US``. KLay
  (arithmetic circuits as torch layers) evaluates the same questions' compiled circuits in
  ``KLAY_US`` forward (as measured beside the engine when the aim was set; ``klaycircuits`` is
  not installed here). Beside it, the same batch as equal but distinct program objects, planned copy
  by copy (the path every batch took before one program's plan was tiled), with the same answers;
  and the same batch through ``Engine(compile=True)``, its Q-product fused into one loop.
  Each answer is checked against the program run alone on that scene.
* **slow paths**: what a relate's Q-product pays beyond its arithmetic on this machine's torch:
  ``exp`` over ``-inf`` terms (exact zeros) against finite ones, ``where`` with a mixed mask against
  a uniform one, ``log`` of 0 (a certain term's ``-expm1(0)``) against ``log`` of 1, over a block of
  the size above.
* **arithmetic floor**: one ``log1mexp`` over a relate's terms alone, per question-scene, in
  float32 and float64: the least a relate's ∃ Q-product costs in the project's numerics.
"""
from __future__ import annotations

import math
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from nablafol.testing import aten_calls

from .suite_cli import suite_main
from .timing import best_time

LAUNCH_RATIO_AIM = 1.2
PER_SCENE_AIM_US = 4.0
KLAY_US = (0.38, 0.41)  # forward per question-scene, the same questions (not run here)

# launches: objects a scene, the two batch sizes, training scenes generated (4 questions each);
# scenes: scenes per program, objects a scene, timing repeats (best of), scenes checked one by one
SIZES = {"tiny": dict(launches=dict(objects=4, batches=(8, 32), scenes=12),
                      scenes=dict(scenes=16, objects=4, repeats=1, checked=4)),
         "quick": dict(launches=dict(objects=36, batches=(64, 256), scenes=80),
                       scenes=dict(scenes=256, objects=12, repeats=3, checked=16)),
         "full": dict(launches=dict(objects=36, batches=(64, 1024), scenes=300),
                      scenes=dict(scenes=1024, objects=12, repeats=5, checked=32))}


def run(size: str = "full", seed: int = 0) -> dict:
    cfg = SIZES[size]
    return {"launches": launches_per_step(**cfg["launches"], seed=seed),
            "scenes": one_program_many_scenes(**cfg["scenes"], seed=seed),
            "slow_paths": slow_paths(cfg["scenes"]["scenes"], cfg["scenes"]["objects"], seed),
            "floor": arithmetic_floor(cfg["scenes"]["scenes"], cfg["scenes"]["objects"], cfg["scenes"]["repeats"], seed)}


def arithmetic_floor(scenes: int, objects: int, repeats: int, seed: int = 0) -> dict:
    """The least elementwise work a relate's ∃ Q-product needs over ``scenes`` scenes of
    ``objects`` objects: one ``log1mexp`` (the engine's, :mod:`nablafol.numerics`) over a
    ``(scenes, objects, objects)`` block of finite log-probabilities, alone, per question-scene, in
    float32 and float64 (best CPU time of ``4 · repeats`` calls); a program's floor is this once per
    relate."""
    from nablafol.numerics import log1mexp

    g = torch.Generator().manual_seed(seed)
    terms = -8 * torch.rand((scenes, objects, objects), generator=g, dtype=torch.float64)
    out = {"terms": terms.numel()}
    with torch.no_grad():
        for name, dtype in (("float32", torch.float32), ("float64", torch.float64)):
            x = terms.to(dtype)
            out[f"{name}_us_per_scene"] = best_wall_and_cpu(lambda: log1mexp(x), 4 * repeats)[1] / scenes * 1e6
    return out


def slow_paths(scenes: int, objects: int, seed: int = 0) -> dict:
    """Where a Q-product's passes over a ``(scenes, objects, objects)`` float32 block of terms slow
    down on this machine's torch: ``exp`` over terms that are ``-inf`` (an exact 0: padding, a
    certain predicate's false atoms) against the same pass over finite ones, and ``where`` with a
    mask of mixed values against one of all True (its two branches, as ``log1mexp`` picks them)."""
    g = torch.Generator().manual_seed(seed)
    finite = -8 * torch.rand((scenes, objects, objects), generator=g)
    zeros = torch.full_like(finite, float("-inf"))
    mixed = torch.rand(finite.shape, generator=g) < 0.5
    uniform = torch.ones_like(mixed)
    ones = torch.ones_like(finite)  # log of 1 against log of 0: -expm1(0) is what log1mexp meets at a certain term
    t = {name: best_time(work, 20) for name, work in (
        ("exp_finite", lambda: torch.exp(finite)), ("exp_neg_inf", lambda: torch.exp(zeros)),
        ("log_one", lambda: torch.log(ones)), ("log_zero", lambda: torch.log(1 - ones)),
        ("where_uniform", lambda: torch.where(uniform, finite, zeros)),
        ("where_mixed", lambda: torch.where(mixed, finite, zeros)))}
    return {"terms": finite.numel(), **{f"{k}_us": v * 1e6 for k, v in t.items()},
            "exp_ratio": t["exp_neg_inf"] / t["exp_finite"], "where_ratio": t["where_mixed"] / t["where_uniform"],
            "log_ratio": t["log_zero"] / t["log_one"]}


def launches_per_step(objects: int, batches: tuple, scenes: int, seed: int = 0) -> dict:
    """Aten calls of one training step at each batch size (after a warm-up step on the same batch)."""
    from .bench_training import trainer_on_generated_data

    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        every_question = dict(curriculum_start=1 << 20, checkpoint_seconds=0)
        model, trainer, examples = trainer_on_generated_data(
            Path(scratch), max(batches), seed, train=every_question, n_train=scenes, n_val=1, n_testdev=1,
            min_objects=objects, max_objects=objects, questions_per_scene=4)
        rng = np.random.default_rng(seed)
        model.train()
        for size in batches:
            batch = [examples[i] for i in rng.choice(len(examples), size=min(size, len(examples)), replace=False)]
            trainer._step(batch)  # warm: plans kept, as at every step after an epoch's first
            outer, every = aten_calls(lambda: trainer._step(batch))
            plan = trainer.engine.plan([e.compiled.program for e in batch], np.arange(len(batch)))
            rows.append({"batch": len(batch), "aten_calls": outer, "aten_calls_all": every,
                         "distinct_programs": len({id(e.compiled.program) for e in batch}),
                         "groups": sum(len(v) + len(s) for v, s in plan.levels), "levels": len(plan.levels)})
    return {"objects": objects, "rows": rows, "ratio": rows[-1]["aten_calls"] / rows[0]["aten_calls"]}


class StackedTables:
    """An oracle whose tables are already in memory, one stacked tensor per arity: a request is one
    gather (what is timed is the engine's work, not the oracle's)."""

    def __init__(self, unary: dict, binary: dict, objects: int, scenes: int):
        self.names = {arity: {p: i for i, p in enumerate(tables)} for arity, tables in ((1, unary), (2, binary))}
        # (predicates · scenes, n[, n]): a request is one row, copied whole
        self.stacks = {arity: torch.stack(list(tables.values())).log().flatten(0, 1) if tables else None
                       for arity, tables in ((1, unary), (2, binary))}
        self.scenes = scenes
        self.num_objects = torch.full((scenes,), objects, dtype=torch.long)

    def _gather(self, requests, arity: int) -> torch.Tensor:
        rows = torch.as_tensor([self.names[arity][p] for p in requests.predicates], dtype=torch.long)
        return self.stacks[arity].index_select(0, rows[requests.predicate] * self.scenes + requests.scene)

    def unary(self, requests):
        return self._gather(requests, 1)

    def binary(self, requests):
        return self._gather(requests, 2)


def program_scenes(rng: np.random.Generator, program, objects: int, scenes: int) -> dict:
    """``{predicate: (scenes, n[, n]) probabilities}``: ``program``'s tables over each scene, drawn
    as ``bench_problog`` draws one scene's (repeating predicates certain: the program is read-once)."""
    from .bench_problog import probabilistic_scene

    drawn = [probabilistic_scene(rng, program, objects) for _ in range(scenes)]
    return {p: torch.as_tensor(np.stack([d[p] for d in drawn]), dtype=torch.float32) for p in drawn[0]}


def one_program_many_scenes(scenes: int, objects: int, repeats: int, checked: int, seed: int = 0) -> dict:
    """Forward time per question-scene of each ``bench_problog`` template's program over ``scenes``
    scenes; the answers of the first ``checked`` scenes against the program run alone on each."""
    from nablafol.engine import Engine
    from nablafol.ir import Program
    from nablafol.oracle import TableOracle

    from .bench_problog import TEMPLATES, gqa_programs

    rng = np.random.default_rng(seed)
    engine = Engine(validate=False)
    fused = Engine(validate=False, compile=True)  # the Q-product as one loop (torch.compile)
    fused_failed, rows = None, []
    for program in gqa_programs(rng, len(TEMPLATES)):
        tables = program_scenes(rng, program, objects, scenes)
        unary = {p: t for p, t in tables.items() if p.arity == 1}
        binary = {p: t for p, t in tables.items() if p.arity == 2}
        oracle = StackedTables(unary, binary, objects, scenes)
        programs, at = [program] * scenes, np.arange(scenes)
        # equal programs that are distinct objects: planned copy by copy, as before the plan was tiled
        copies = [Program(program.candidates, program.labels) for _ in range(scenes)]
        with torch.no_grad():
            answers = engine(programs, oracle, at).probs()[:, 0]  # warm: the plan kept
            seconds, cpu = best_wall_and_cpu(lambda: engine(programs, oracle, at).probs(), repeats)
            assert torch.equal(engine(copies, oracle, at).probs()[:, 0], answers)
            per_copy, per_copy_cpu = best_wall_and_cpu(lambda: engine(copies, oracle, at).probs(), repeats)
            alone = [float(engine([program], TableOracle([{p: t[s] for p, t in tables.items()}])).probs()[0, 0])
                     for s in range(min(checked, scenes))]
            with warnings.catch_warnings(record=True) as said:  # a failed compilation warns, then runs eager
                warnings.simplefilter("always")
                fused_diff = float((fused(programs, oracle, at).probs()[:, 0] - answers).abs().max())  # warm
            failed = [str(w.message) for w in said if "torch.compile" in str(w.message)]
            fused_failed = fused_failed or (failed[0] if failed else None)
            _, fused_cpu = best_wall_and_cpu(lambda: fused(programs, oracle, at).probs(), repeats)
        diff = max(abs(a - float(b)) for a, b in zip(alone, answers[:len(alone)]))
        rows.append({"program": str(program), "us_per_scene": cpu / scenes * 1e6,
                     "us_per_scene_fused": fused_cpu / scenes * 1e6, "max_abs_diff_fused": fused_diff,
                     "us_per_scene_per_copy": per_copy_cpu / scenes * 1e6, "wall_us_per_scene": seconds / scenes * 1e6,
                     "wall_us_per_scene_per_copy": per_copy / scenes * 1e6, "max_abs_diff_alone": diff})
    out = {"scenes": scenes, "objects": objects, "rows": rows, "fused_failed": fused_failed,
           "max_abs_diff": max(r["max_abs_diff_alone"] for r in rows),
           "max_abs_diff_fused": max(r["max_abs_diff_fused"] for r in rows)}
    for key in ("us_per_scene", "us_per_scene_per_copy", "wall_us_per_scene", "wall_us_per_scene_per_copy",
                "us_per_scene_fused"):
        values = [r[key] for r in rows]
        out[f"worst_{key}"], out[f"median_{key}"] = max(values), float(np.median(values))
    return out


def best_wall_and_cpu(work, repeats: int) -> tuple[float, float]:
    """The best wall time and the best CPU time of this process over ``repeats`` calls of ``work()``:
    on a machine shared with other jobs a call longer than the scheduler's slice is often
    descheduled for longer than it runs, which the wall clock counts and the process's CPU time
    does not (one torch thread: the CPU time is the call's work)."""
    wall = cpu = float("inf")
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        work()
        wall, cpu = min(wall, time.perf_counter() - w), min(cpu, time.process_time() - c)
    return wall, cpu


def checks(r: dict, check) -> list[dict]:
    launch, scene = r["launches"], r["scenes"]
    small, large = launch["rows"][0], launch["rows"][-1]
    at_aim = large["batch"] >= 1024
    # the aim holds for the engine as a user would run it for speed: eager, or with compile=True
    best = min(scene["worst_us_per_scene"], scene["worst_us_per_scene_fused"] if not scene["fused_failed"] else math.inf)
    out = [check(f"aten calls per training step, batch {large['batch']:,} / {small['batch']}, N={launch['objects']}",
                 f"{launch['ratio']:.2f}x ({large['aten_calls']:,} vs {small['aten_calls']:,}; engine groups "
                 f"{large['groups']} vs {small['groups']}, distinct programs {large['distinct_programs']} vs "
                 f"{small['distinct_programs']})", f"<= {LAUNCH_RATIO_AIM}x",
                 launch["ratio"] <= LAUNCH_RATIO_AIM if at_aim else None, launch["ratio"]),
           check(f"one program over {scene['scenes']:,} scenes of {scene['objects']} objects, forward CPU time per "
                 f"question-scene (worst of {len(scene['rows'])} read-once GQA programs, eager or fused)",
                 f"eager {scene['worst_us_per_scene']:.2f} µs (median {scene['median_us_per_scene']:.2f}; planned "
                 f"copy by copy {scene['worst_us_per_scene_per_copy']:.2f}, median "
                 f"{scene['median_us_per_scene_per_copy']:.2f}; wall {scene['worst_wall_us_per_scene']:.2f}); "
                 f"Q-product fused {_fused(scene)}; KLay {KLAY_US[0]}-{KLAY_US[1]}",
                 f"<= {PER_SCENE_AIM_US:g} µs", best <= PER_SCENE_AIM_US if scene["scenes"] >= 1024 else None, best),
           check(f"exp over -inf terms / over finite ones ({r['slow_paths']['terms']:,} float32)",
                 f"{r['slow_paths']['exp_ratio']:.1f}x; where, mixed / uniform mask: "
                 f"{r['slow_paths']['where_ratio']:.1f}x", "-", None, r["slow_paths"]["exp_ratio"]),
           check(f"arithmetic floor: one log1mexp over a relate's {r['floor']['terms']:,} terms, per question-scene",
                 f"{r['floor']['float32_us_per_scene']:.2f} µs float32, {r['floor']['float64_us_per_scene']:.2f} µs "
                 f"float64 (once per relate)", "-", None, r["floor"]["float32_us_per_scene"]),
           check("one program over many scenes = each scene alone", f"max |diff| {scene['max_abs_diff']:.1e}", "<= 1e-6",
                 scene["max_abs_diff"] <= 1e-6, scene["max_abs_diff"])]
    return out


def _fused(scene: dict) -> str:
    """The fused engine's worst and median, or why it ran eager."""
    if scene["fused_failed"]:
        return f"not compiled ({scene['fused_failed'][:80]})"
    return f"worst {scene['worst_us_per_scene_fused']:.2f}, median {scene['median_us_per_scene_fused']:.2f} µs"


def report(r: dict) -> list[str]:
    launch, scene = r["launches"], r["scenes"]
    lines = [f"Aten calls per training step, N={launch['objects']} (outer calls; all calls; distinct programs; "
             f"engine groups over levels):"]
    for row in launch["rows"]:
        lines.append(f"  batch {row['batch']:>5,}: {row['aten_calls']:>6,} ({row['aten_calls_all']:,} in all); "
                     f"{row['distinct_programs']:,} programs; {row['groups']} groups over {row['levels']} levels")
    lines.append(f"  ratio {launch['ratio']:.2f}x (aim <= {LAUNCH_RATIO_AIM}x)")
    lines.append(f"One program over {scene['scenes']:,} scenes of {scene['objects']} objects, forward, µs per "
                 f"question-scene (KLay {KLAY_US[0]}-{KLAY_US[1]}, not run here): CPU time planned once, copy by copy; "
                 f"wall time planned once, copy by copy:")
    for row in scene["rows"]:
        lines.append(f"  {row['us_per_scene']:>7.2f} {row['us_per_scene_per_copy']:>7.2f} {row['wall_us_per_scene']:>7.2f} "
                     f"{row['wall_us_per_scene_per_copy']:>7.2f}  {row['program'][:90]}")
    lines.append(f"  Q-product fused (torch.compile), CPU time: {_fused(scene)}; its answers against the eager ones: "
                 f"max |diff| {scene['max_abs_diff_fused']:.1e}")
    lines.append(f"  CPU time: worst {scene['worst_us_per_scene']:.2f} ({scene['worst_us_per_scene_per_copy']:.2f} copy "
                 f"by copy), median {scene['median_us_per_scene']:.2f} ({scene['median_us_per_scene_per_copy']:.2f}) "
                 f"(aim <= {PER_SCENE_AIM_US:g}); against each scene alone: max |diff| {scene['max_abs_diff']:.1e}")
    slow = r["slow_paths"]
    lines.append(f"Passes over {slow['terms']:,} float32 terms: exp over -inf {slow['exp_ratio']:.1f}x its time over "
                 f"finite terms ({slow['exp_neg_inf_us']:,.0f} vs {slow['exp_finite_us']:,.0f} µs); where with a mixed "
                 f"mask {slow['where_ratio']:.1f}x with an all-True one ({slow['where_mixed_us']:,.0f} vs "
                 f"{slow['where_uniform_us']:,.0f} µs); log of 0 {slow['log_ratio']:.1f}x log of 1")
    floor = r["floor"]
    lines.append(f"Arithmetic floor: one log1mexp over {floor['terms']:,} terms, {floor['float32_us_per_scene']:.2f} µs a "
                 f"question-scene in float32, {floor['float64_us_per_scene']:.2f} in float64 (a program: once per relate)")
    return lines


def main(argv=None) -> None:
    suite_main(__doc__, run, report, argv)


if __name__ == "__main__":
    main()
