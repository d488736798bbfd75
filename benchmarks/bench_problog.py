"""Exact reasoning, side by side: the engine against ProbLog on binary GQA programs.

Binary GQA programs (exist, verify, relate chains, negated filters, and/or) are compiled
by the project's compiler and run over random probabilistic scene graphs of N objects:
every name, attribute and relation atom of the scene is an independent coin. Predicates
whose atoms would repeat in the grounding (those under a relate, or used twice) are made
certain, so no uncertain ground atom repeats: then the engine's answer is the exact
probability, and ProbLog (knowledge compilation) must give the same number.

For each N both answer the same questions in this run: the engine once per question and
in one batch, ProbLog once per question with a time limit. A question past the limit counts
at the limit (the speed ratio is then a lower bound, marked ">"); ProbLog stops after the
first N where more than half of its questions ran out of time, or when the section's budget
is spent.

    python -m benchmarks.bench_problog [--quick]
"""
from __future__ import annotations

import math
import multiprocessing
import os
import signal
import time

import numpy as np
import torch

from nablafol.engine import Engine
from nablafol.oracle import TableOracle
from nablafol.testing import repeated_predicates

from .suite_cli import suite_main
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
    from nablafol.compiler import Compiler

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


def _problog_child(conn, program, tables, n):
    os.setsid()  # its own process group: a time-out ends ProbLog's compiler subprocess too
    start = time.perf_counter()
    answer = problog_probabilities(program, tables, n)
    conn.send((answer, time.perf_counter() - start))


def _problog_timed(program, tables, n, limit_s: float):
    """ProbLog's answers and seconds, or (None, limit) when it runs out of time.

    Each question runs in a forked child, timed inside it: past the limit the child's whole
    process group is killed, so no knowledge compiler (dsharp) keeps a core busy while the
    engine is being timed afterwards."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_problog_child, args=(send, program, tables, n), daemon=True)
    child.start()
    send.close()
    try:
        if receive.poll(limit_s + 1.0):  # + start-up and the answer's trip back
            answer, seconds = receive.recv()
            if seconds <= limit_s:
                return answer, seconds
        return None, limit_s
    except EOFError:
        raise RuntimeError("ProbLog's child process died without an answer") from None
    finally:
        if child.is_alive():
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:  # killed before its setsid: no group yet
                child.kill()
        child.join()
        receive.close()


# sizes: objects per scene; per_size: questions ProbLog answers per N (each template as often);
# batch: the engine's batch (the same shapes over fresh scenes); limit_s: per ProbLog question;
# budget_s: ProbLog's whole share of this section
SIZES = {
    "tiny": dict(sizes=[3, 5], per_size=3, batch=16, limit_s=5.0, budget_s=10.0),
    "quick": dict(sizes=[3, 5, 8, 12, 16, 20], per_size=10, batch=256, limit_s=5.0, budget_s=20.0),
    "full": dict(sizes=[3, 5, 8, 12, 16, 20, 25, 30], per_size=10, batch=1024, limit_s=20.0, budget_s=360.0),
}


def run(size: str = "full", seed: int = 0) -> dict:
    cfg = SIZES[size]
    sizes, per_size, batch = cfg["sizes"], cfg["per_size"], cfg["batch"]
    limit_s, budget_s = cfg["limit_s"], cfg["budget_s"]
    rng = np.random.default_rng(seed)
    engine = Engine(validate=False)
    warm = gqa_programs(rng, 1)[0]  # ProbLog imports its modules on first use: here, not in each child
    problog_probabilities(warm, probabilistic_scene(rng, warm, 2), 2)
    rows, spent, problog_alive = [], 0.0, True
    for n in sizes:
        programs = gqa_programs(rng, batch)
        scenes = [probabilistic_scene(rng, p, n) for p in programs]
        tensors = [{k: torch.as_tensor(v) for k, v in s.items()} for s in scenes]
        batch_oracle = TableOracle(tensors)
        with torch.no_grad():
            engine(programs, batch_oracle)  # warm: plans cached, as for any repeated program shape
            t_batch = t_single = float("inf")
            for _ in range(3):  # best of 3: other jobs on the machine add bursts of delay
                start = time.perf_counter()
                batched = engine(programs, batch_oracle).probs()[:, 0].tolist()
                t_batch = min(t_batch, (time.perf_counter() - start) / len(programs))
                start = time.perf_counter()
                single = [engine([p], TableOracle([t])).probs()[0, 0].item()
                          for p, t in zip(programs[:per_size], tensors)]
                t_single = min(t_single, (time.perf_counter() - start) / per_size)
        row = {"objects": n, "engine_batch": batch, "engine_single_ms": t_single * 1e3,
               "engine_batched_ms": t_batch * 1e3,
               "engine_single_vs_batched_max_diff": max(abs(a - b) for a, b in zip(single, batched))}
        if problog_alive:
            times, diffs, timeouts = [], [], 0
            for p, sc, got in zip(programs[:per_size], scenes, single):
                answer, seconds = _problog_timed(p, sc, n, limit_s)
                spent += seconds
                if answer is None:
                    timeouts += 1  # counted at the limit: the speed ratio becomes a lower bound
                else:
                    diffs.append(abs(answer[0] - got))
                times.append(seconds)
                if spent > budget_s:
                    row["problog_stopped"] = f"section budget of {budget_s:.0f} s spent"
                    break
            if timeouts * 2 > len(times):
                row["problog_stopped"] = f"{timeouts} of {len(times)} questions ran past {limit_s:.0f} s"
            problog_alive = "problog_stopped" not in row
            if times:
                t_problog = float(np.mean(times))
                # the median stays exact while fewer than half the questions hit the limit: the scaling fit uses it
                if timeouts * 2 < len(times):
                    row["problog_median_ms"] = float(np.median(times)) * 1e3
                row.update(problog_questions=len(times), problog_timeouts=timeouts, problog_ms=t_problog * 1e3,
                           speedup_single=t_problog / t_single, speedup_batched=t_problog / t_batch,
                           speedup_is_lower_bound=timeouts > 0)
                if diffs:
                    row["max_abs_diff"] = float(max(diffs))
        rows.append(row)
    fits = {}
    for key in ("engine_single_ms", "engine_batched_ms", "problog_median_ms"):
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
             f"  {'N':>3} {'engine 1-by-1':>14} {'engine batched':>15} {'ProbLog':>12} {'median':>10} {'x (1-by-1)':>11} "
             f"{'x (batched)':>12} {'max |diff|':>11}"]
    for r in result["rows"]:
        pl = f"{r['problog_ms']:>10.1f}ms" if "problog_ms" in r else f"{'-':>12}"
        pl += f"{r['problog_median_ms']:>8.1f}ms" if "problog_median_ms" in r else f"{'-':>10}"
        at_least = ">" if r.get("speedup_is_lower_bound") else ""
        sp1 = f"{at_least}{r['speedup_single']:,.0f}".rjust(11) if "speedup_single" in r else f"{'-':>11}"
        spb = f"{at_least}{r['speedup_batched']:,.0f}".rjust(12) if "speedup_batched" in r else f"{'-':>12}"
        diff = f"{r['max_abs_diff']:>11.1e}" if "max_abs_diff" in r else f"{'-':>11}"
        lines.append(f"  {r['objects']:>3} {r['engine_single_ms']:>12.2f}ms {r['engine_batched_ms']:>13.3f}ms "
                     f"{pl} {sp1} {spb} {diff}"
                     + (f"  {r['problog_timeouts']} of {r['problog_questions']} past the limit"
                        if r.get("problog_timeouts") else "")
                     + (f"  ProbLog stopped: {r['problog_stopped']}"
                                                   if "problog_stopped" in r else ""))
    for key, f in result["fits"].items():
        law = "polynomial" if f["residual_power_law"] <= f["residual_exponential"] else "exponential"
        lines.append(f"  {key}: log-log slope {f['loglog_slope']:.2f}, exp. rate {f['exp_rate_per_object']:.3f}/object "
                     f"-> fits {law} better (residuals {f['residual_power_law']:.3f} vs {f['residual_exponential']:.3f})")
    return lines


def main(argv=None) -> None:
    suite_main(__doc__, run, report, argv)


if __name__ == "__main__":
    main()
