"""Exact reasoning, side by side: the engine against ProbLog on binary GQA programs.

Binary GQA programs (exist, verify, relate chains, negated filters, and/or) are compiled
by the project's compiler and run over random probabilistic scene graphs of N objects:
every name, attribute and relation atom of the scene is an independent coin. Predicates
whose atoms would repeat in the grounding (those under a relate, or used twice) are made
certain, so no uncertain ground atom repeats: then the engine's answer is the exact
probability, and ProbLog (knowledge compilation) must give the same number.

For each N both answer the same questions in this run: the engine once per question and
in one batch, ProbLog once per question with a time limit; ProbLog stops at the first N
where a question runs out of time (or the section's budget is spent).
"""
from __future__ import annotations

import math
import signal
import time

import numpy as np
import torch

from nablafol.engine import Engine
from nablafol.oracle import TableOracle
from nablafol.testing import repeated_predicates

from .problog_reference import knowledge_compiler, problog_probabilities

# GQA program shapes whose compiled form is a yes/no formula (A, B: names; C: a colour; R: relations)
TEMPLATES = [
    "select: {A} (1)->exist: ? [0]",
    "select: {A} (1)->filter color: {C} [0]->exist: ? [1]",
    "select: {A} (1)->verify color: {C} [0]",
    "select: {A} (1)->filter color: not({C}) [0]->exist: ? [1]",
    "select: {A} (1)->relate: {B},{R},s (2) [0]->exist: ? [1]",
    "select: {A} (1)->verify rel: {B},{R},o (2) [0]",
    "select: {A} (1)->relate: _,{R},o (2) [0]->filter color: not({C}) [1]->exist: ? [2]",
    "select: {A} (1)->relate: _,{R},o (2) [0]->relate: {B},{R2},s (3) [1]->exist: ? [2]",
    "select: {A} (1)->exist: ? [0]->select: {B} (2)->exist: ? [2]->and:  [1, 3]",
    "select: {A} (1)->exist: ? [0]->select: {B} (2)->filter color: {C} [2]->exist: ? [3]->or:  [1, 4]",
]
NAMES = ["chair", "table", "man", "woman", "car", "dog", "tree", "window", "plate", "shirt"]
COLORS = ["red", "blue", "white", "black", "green", "brown"]
RELATIONS = ["on", "near", "to the left of", "behind", "holding", "wearing"]


def gqa_programs(rng: np.random.Generator, count: int) -> list:
    """``count`` compiled binary GQA programs, cycling through the templates."""
    from compiler import Compiler

    compiler = Compiler()
    programs = []
    for k in range(count):
        a, b = rng.choice(NAMES, 2, replace=False)
        r, r2 = rng.choice(RELATIONS, 2, replace=False)
        text = TEMPLATES[k % len(TEMPLATES)].format(A=a, B=b, C=rng.choice(COLORS), R=r, R2=r2)
        compiled = compiler.compile_text(text)
        assert compiled.is_binary, text
        programs.append(compiled.program)
    return programs


def probabilistic_scene(rng: np.random.Generator, program, n: int) -> dict:
    """Tables for ``program``'s predicates over ``n`` objects; repeating ones are certain (0/1)."""
    certain = repeated_predicates(program)
    tables = {}
    for p in program.predicates():
        shape = (n,) * p.arity
        if p in certain:
            tables[p] = (rng.random(shape) < 0.5).astype(np.float64)
        else:
            tables[p] = rng.uniform(0.02, 0.98, shape)
    return tables


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _problog_timed(program, tables, n, limit_s: float):
    """ProbLog's answers and seconds, or (None, limit) when it runs out of time."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    start = time.perf_counter()
    try:
        return problog_probabilities(program, tables, n), time.perf_counter() - start
    except _Timeout:
        return None, limit_s
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run(quick: bool = False, seed: int = 0) -> dict:
    sizes = [3, 5, 8, 12, 16, 20, 25] if quick else [3, 5, 8, 12, 16, 20, 25, 30, 40]
    per_size = 10 if quick else 20  # questions ProbLog answers per N (each template as often)
    batch = 256 if quick else 1024  # the engine's batch: the same shapes over fresh scenes
    limit_s = 10.0 if quick else 30.0  # per ProbLog question
    budget_s = 40.0 if quick else 420.0  # ProbLog's whole share of this section
    rng = np.random.default_rng(seed)
    engine = Engine(validate=False)
    rows, spent, problog_alive = [], 0.0, True
    for n in sizes:
        programs = gqa_programs(rng, batch)
        scenes = [probabilistic_scene(rng, p, n) for p in programs]
        tensors = [{k: torch.as_tensor(v) for k, v in s.items()} for s in scenes]
        batch_oracle = TableOracle(tensors)
        with torch.no_grad():
            engine(programs, batch_oracle)  # warm: plans cached, as for any repeated program shape
            start = time.perf_counter()
            batched = engine(programs, batch_oracle).probs()[:, 0].tolist()
            t_batch = (time.perf_counter() - start) / len(programs)
            start = time.perf_counter()
            single = [engine([p], TableOracle([t])).probs()[0, 0].item()
                      for p, t in zip(programs[:per_size], tensors)]
            t_single = (time.perf_counter() - start) / per_size
        row = {"objects": n, "engine_batch": batch, "engine_single_ms": t_single * 1e3,
               "engine_batched_ms": t_batch * 1e3,
               "engine_single_vs_batched_max_diff": max(abs(a - b) for a, b in zip(single, batched))}
        if problog_alive:
            times, diffs = [], []
            for p, s, got in zip(programs[:per_size], scenes, single):
                answer, seconds = _problog_timed(p, s, n, limit_s)
                spent += seconds
                if answer is None:
                    problog_alive = False
                    row["problog_stopped"] = f"a question ran past {limit_s:.0f} s"
                    break
                times.append(seconds)
                diffs.append(abs(answer[0] - got))
                if spent > budget_s:
                    problog_alive = False
                    row["problog_stopped"] = f"section budget of {budget_s:.0f} s spent"
                    break
            if times:
                t_problog = float(np.mean(times))
                row.update(problog_questions=len(times), problog_ms=t_problog * 1e3, max_abs_diff=float(max(diffs)),
                           speedup_single=t_problog / t_single, speedup_batched=t_problog / t_batch)
        rows.append(row)
    fits = {}
    for key in ("engine_single_ms", "engine_batched_ms", "problog_ms"):
        pts = [(r["objects"], r[key]) for r in rows if key in r and r["objects"] >= 5]
        if len(pts) >= 3:
            x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
            lin = np.array([p[0] for p in pts], dtype=float)
            slope, icpt = np.polyfit(x, y, 1)
            rate, icpt_e = np.polyfit(lin, y, 1)
            # which law fits the measured times better: t ~ N^k (polynomial) or t ~ e^{cN} (exponential)
            res_pow = float(np.sum((y - (slope * x + icpt)) ** 2))
            res_exp = float(np.sum((y - (rate * lin + icpt_e)) ** 2))
            fits[key] = {"loglog_slope": float(slope), "exp_rate_per_object": float(rate),
                         "doubling_objects": math.log(2) / rate if rate > 0 else None,
                         "residual_power_law": res_pow, "residual_exponential": res_exp}
    return {"rows": rows, "fits": fits, "problog_limit_s": limit_s, "problog_budget_s": budget_s,
            "dtype": "float64", "backend": _backend()}


def _backend() -> str:
    import problog

    return f"ProbLog {problog.version.version}, {knowledge_compiler()} circuits"


def report(result: dict) -> list[str]:
    lines = [f"Exact reasoning vs {result['backend']}: binary GQA programs, float64; ProbLog's mean per question "
             f"vs the engine's, one by one and in batches of {result['rows'][0]['engine_batch']}:",
             f"  {'N':>3} {'engine 1-by-1':>14} {'engine batched':>15} {'ProbLog':>12} {'x (1-by-1)':>11} "
             f"{'x (batched)':>12} {'max |diff|':>11}"]
    for r in result["rows"]:
        pl = f"{r['problog_ms']:>10.1f}ms" if "problog_ms" in r else f"{'-':>12}"
        sp1 = f"{r['speedup_single']:>11,.0f}" if "speedup_single" in r else f"{'-':>11}"
        spb = f"{r['speedup_batched']:>12,.0f}" if "speedup_batched" in r else f"{'-':>12}"
        diff = f"{r['max_abs_diff']:>11.1e}" if "max_abs_diff" in r else f"{'-':>11}"
        lines.append(f"  {r['objects']:>3} {r['engine_single_ms']:>12.2f}ms {r['engine_batched_ms']:>13.3f}ms "
                     f"{pl} {sp1} {spb} {diff}" + (f"  ProbLog stopped: {r['problog_stopped']}"
                                                   if "problog_stopped" in r else ""))
    for key, f in result["fits"].items():
        law = "polynomial" if f["residual_power_law"] <= f["residual_exponential"] else "exponential"
        lines.append(f"  {key}: log-log slope {f['loglog_slope']:.2f}, exp. rate {f['exp_rate_per_object']:.3f}/object "
                     f"-> fits {law} better (residuals {f['residual_power_law']:.3f} vs {f['residual_exponential']:.3f})")
    return lines
