"""The benchmark suite's one entry point: runs the suites, prints one table, writes JSON.

    python -m benchmarks.run                      # every suite, full size (about 10 minutes on 2 cores)
    python -m benchmarks.run --quick              # smaller sizes, about a minute
    python -m benchmarks.run --only batched scaling --json out/bench.json

Suites: problog (exact answers and speed against ProbLog), exact (the fast path's error where atoms
repeat, by family and scene size; exact mode against ProbLog and its cost), batched (batched vs one question
at a time), engine (throughput; Q-product against a copy of the same bytes, eager and
torch.compile), scaling (time against objects, batch size, program length; fitted slopes,
drawn to --plot), training (questions/s of the Trainer), limits (issue 23's five aims against
the machine's own limits: training roofline, eval at GQA scale against reading its files, one
engine call, the eager Q-product against a copy, end to end against ProbLog), launches (aten calls per
training step at two batch sizes; one program over many scenes, per question-scene), circuits (exact
mode by k against ProbLog + SDD + KLay, cold and warm), bounds (width and share decided of the sound
intervals, by budget). Every figure
that compares two things is a ratio of two timings taken in this run. The table lists each aim: measured,
aim, met (yes / NO / "-" where a figure has no aim or the run was too small to reach it).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch

from . import (bench_batched, bench_bounds, bench_circuits, bench_engine, bench_exact, bench_launches, bench_limits,
               bench_problog, bench_scaling, bench_training, figures)
from .timing import best_time

SUITES = ("problog", "exact", "batched", "engine", "scaling", "training", "limits", "launches", "circuits", "bounds")
DEFAULT_PLOT = Path(__file__).resolve().parent / "scaling.png"
EXACT_TOLERANCE = 1e-6
PROBLOG_SPEEDUP_AIM, PROBLOG_AT_OBJECTS = 1000.0, 20
BANDWIDTH_AIM = 0.5  # of a plain copy's, for large batches
AIM_BATCH = 1024  # the batched-vs-single aim is stated at this batch size
LARGE_QPRODUCT_TERMS = 10_000_000  # R·N·N from which a Q-product counts as a large batch


def check(name: str, measured: str, aim: str, met, value=None) -> dict:
    return {"name": name, "measured": measured, "aim": aim, "met": met, "value": value}


def problog_checks(r: dict) -> list[dict]:
    rows = [row for row in r["rows"] if "max_abs_diff" in row]
    out = []
    if rows:
        worst = max(row["max_abs_diff"] for row in rows)
        answered = sum(row["problog_questions"] - row["problog_timeouts"] for row in rows)
        out.append(check("exact: engine = ProbLog", f"max |diff| {worst:.1e} over {answered} questions, "
                         f"N={rows[0]['objects']}..{rows[-1]['objects']}", f"<= {EXACT_TOLERANCE:g}",
                         worst <= EXACT_TOLERANCE, worst))
    at = [row for row in r["rows"] if row["objects"] == PROBLOG_AT_OBJECTS and "speedup_batched" in row]
    if at:
        row = at[0]
        bound = ">=" if row["speedup_is_lower_bound"] else ""
        out.append(check(f"vs ProbLog at {PROBLOG_AT_OBJECTS} objects, batched",
                         f"{bound}{row['speedup_batched']:,.0f}x ({row['problog_ms']:.0f} vs "
                         f"{row['engine_batched_ms']:.3f} ms/question)", f">= {PROBLOG_SPEEDUP_AIM:,.0f}x",
                         row["speedup_batched"] >= PROBLOG_SPEEDUP_AIM, row["speedup_batched"]))
        out.append(check(f"vs ProbLog at {PROBLOG_AT_OBJECTS} objects, one at a time",
                         f"{bound}{row['speedup_single']:,.0f}x", "-", None, row["speedup_single"]))
    else:
        reached = max((row["objects"] for row in r["rows"] if "problog_ms" in row), default=None)
        out.append(check(f"vs ProbLog at {PROBLOG_AT_OBJECTS} objects", f"not measured (ProbLog reached N={reached})",
                         f">= {PROBLOG_SPEEDUP_AIM:,.0f}x", None))
    stopped = [row for row in r["rows"] if "problog_stopped" in row]
    where = f"ProbLog stopped after N={stopped[0]['objects']}" if stopped else "ProbLog ran every N"
    for key, label in (("problog_median_ms", "ProbLog (median)"), ("engine_batched_ms", "engine batched")):
        f = r["fits"].get(key)
        if f:
            law = "polynomial" if f["residual_power_law"] <= f["residual_exponential"] else "exponential"
            out.append(check(f"scaling in N: {label}", f"slope {f['loglog_slope']:.2f}, x2 per "
                             f"{f['doubling_objects'] or float('inf'):.1f} objects; fits {law} better"
                             + (f" ({where})" if key == "problog_median_ms" else ""), "-", None, f["loglog_slope"]))
    return out


EXACT_MODE_AIM = 10.0  # exact mode's cost, at most this many times the fast path's, where few atoms are shared


def exact_checks(r: dict) -> list[dict]:
    out = []
    p = r["problog"]
    if p["compared"]:
        out.append(check("exact mode = ProbLog (programs that repeat atoms)",
                         f"max |diff| {p['max_abs_diff']:.1e} over {p['compared']} questions", f"<= {EXACT_TOLERANCE:g}",
                         p["max_abs_diff"] <= EXACT_TOLERANCE, p["max_abs_diff"]))
    flagged = max((row["flagged_max_abs_error"] for row in r["rows"]), default=0.0)
    out.append(check("fast path flagged exact = exact value", f"max |diff| {flagged:.1e}", f"<= {EXACT_TOLERANCE:g}",
                     flagged <= EXACT_TOLERANCE, flagged))
    for family in dict.fromkeys(row["family"] for row in r["rows"]):
        rows = [row for row in r["rows"] if row["family"] == family and row.get("answers")]
        if rows:
            n = sum(row["answers"] for row in rows)
            mean = sum(row["mean_abs_error"] * row["answers"] for row in rows) / n
            flips = sum(row["flipped"] * row["answers"] for row in rows) / n
            worst = max(row["max_abs_error"] for row in rows)
            out.append(check(f"fast path error: {family}", f"mean {mean:.4f}, max {worst:.4f}, {flips:.1%} flipped "
                             f"({n} answers, N={rows[0]['objects']}..{rows[-1]['objects']})", "-", None, mean))
    for g in r["gqa_size"]:
        out.append(check(f"exact mode / fast path, GQA size N={g['objects']}, <= {bench_exact.FEW_ATOMS} shared atoms",
                         f"{g['ratio']:.2f}x ({g['exact_ms']:.3f} vs {g['fast_ms']:.3f} ms/question, "
                         f"{g['conditioned']:.0%} conditioned)", f"<= {EXACT_MODE_AIM:g}x",
                         g["ratio"] <= EXACT_MODE_AIM, g["ratio"]))
    return out


def batched_checks(r: dict) -> list[dict]:
    return [check(f"batched vs one at a time, batch {r['batch']:,}",
                  f"{r['speedup']:.1f}x ({r['single_ms_per_question']:.3f} vs {r['batched_ms_per_question']:.4f} "
                  f"ms/question)", f">= {r['aim_speedup']:.0f}x",
                  r["speedup"] >= r["aim_speedup"] if r["batch"] >= AIM_BATCH else None, r["speedup"]),
            check("batched = one at a time", f"max |diff| {r['max_abs_prob_diff']:.1e}", "0",
                  r["max_abs_prob_diff"] == 0.0, r["max_abs_prob_diff"])]


def engine_checks(r: dict) -> list[dict]:
    out = []
    for mode, t in r["throughput"].items():
        out.append(check(f"throughput, {mode}, batches of {r['batch']}",
                         f"{t['plans_cached_qps']:,.0f} q/s (plans cached), {t['new_programs_qps']:,.0f} (new)", "-",
                         None, t["plans_cached_qps"]))
    if {"eager", "compiled"} <= set(r["throughput"]):
        eager, compiled = r["throughput"]["eager"], r["throughput"]["compiled"]
        for key, label in (("plans_cached_qps", "plans cached"), ("new_programs_qps", "new programs")):
            gain = compiled[key] / eager[key]  # Engine(compile=True) is opt-in: eager stays the default
            out.append(check(f"Engine(compile=True) throughput, {label}", f"{gain:.2f}x eager", "-", None, gain))
    for q in r["qproduct"]:
        large = q["rows"] * q["objects"] ** 2 >= LARGE_QPRODUCT_TERMS
        for mode in ("eager", "compiled"):
            if mode in q:
                ratio = q[mode]["copy_over_qproduct"]
                out.append(check(f"Q-product / copy bandwidth, {mode}, R={q['rows']:,} N={q['objects']}",
                                 f"{ratio:.2f} ({q[mode]['qproduct_ms']:.1f} vs copy {q[mode]['copy_ms']:.1f} ms)",
                                 f">= {BANDWIDTH_AIM}" if large and mode == "compiled" else "-",
                                 ratio >= BANDWIDTH_AIM if large and mode == "compiled" else None, ratio))
        if "compiled_speedup" in q:
            out.append(check(f"torch.compile helps, R={q['rows']:,} N={q['objects']}",
                             f"{q['compiled_speedup']:.2f}x eager", "> 1", q["compiled_speedup"] > 1.0,
                             q["compiled_speedup"]))
    return out


def scaling_checks(r: dict) -> list[dict]:
    out = []
    for name, c in r["curves"].items():
        ok = abs(c["slope"] - c["expected_slope"]) <= c["tolerance"]
        out.append(check(f"scaling: {name}", f"slope {c['slope']:.2f} (whole grid {c['slope_all']:.2f}), "
                         f"x {c['x'][0]}..{c['x'][-1]}", f"{c['expected_slope']:.0f} ± {c['tolerance']}", ok, c["slope"]))
    return out


def training_checks(r: dict) -> list[dict]:
    out = [check(f"training, batches of {r['batch']}", f"{r['questions_per_s']:,.0f} questions/s "
                 f"({r['steps']} steps)", "-", None, r["questions_per_s"])]
    w = r.get("feature_wait")
    for source in ("files", "memory") if w is not None else ():
        c = w[source]
        before, after = c["before"]["wait_share"], c["after"]["wait_share"]
        out.append(check(f"waiting for features ({source}), share of a step, N={w['objects']} batch {w['batch']}",
                         f"{after:.1%} read ahead ({before:.1%} read in the step); weights identical: "
                         f"{'yes' if c['weights_identical'] else 'NO'}", f"< {bench_training.WAIT_SHARE_AIM:.0%}",
                         after < bench_training.WAIT_SHARE_AIM and c["weights_identical"], after))
    return out


def run_suite(name: str, size: str, plot_path: Path | None) -> tuple[dict, list[dict], list[str]]:
    if name == "problog":
        r = bench_problog.run(size)
        return r, problog_checks(r), bench_problog.report(r)
    if name == "exact":
        r = bench_exact.run(size)
        return r, exact_checks(r), bench_exact.report(r)
    if name == "batched":
        r = bench_batched.run(size)
        return r, batched_checks(r), bench_batched.report(r)
    if name == "engine":
        r = bench_engine.run(size)
        return r, engine_checks(r), []
    if name == "scaling":
        r = bench_scaling.run(size)
        lines = bench_scaling.report(r)
        if plot_path is not None:
            r["plot"] = str(bench_scaling.plot(r, plot_path))
            lines.append(f"  plot: {r['plot']}")
        return r, scaling_checks(r), lines
    if name == "limits":
        r = bench_limits.run(size)
        return r, bench_limits.checks(r, check), bench_limits.report(r)
    if name == "launches":
        r = bench_launches.run(size)
        return r, bench_launches.checks(r, check), bench_launches.report(r)
    if name in ("circuits", "bounds"):
        suite = bench_circuits if name == "circuits" else bench_bounds
        r = suite.run(size)
        return r, suite.checks(r, check), suite.report(r)
    r = bench_training.run(size)
    return r, training_checks(r), bench_training.report(r)


def commit() -> str | None:
    """The checkout's commit (``+changes`` when files differ from it), or None outside a git checkout."""
    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+changes" if dirty else "")


def machine() -> dict:
    return {"python": platform.python_version(), "torch": torch.__version__, "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "cuda": torch.cuda.is_available(),
            "calibration": calibration()}


def calibration() -> dict:
    """Two fixed workloads, to tell a slower machine from slower code across days: a plain Python
    loop (the interpreter) and decoding a JSON text shaped like a scene-graph file (300,000 small
    objects, the collector off, as ``nablafol eval`` loads): allocation, hence page faults. The
    same virtual machine has shown the same decode taking 3x longer from one day to the next."""
    import gc
    import resource
    start = time.perf_counter()
    sum(i * i for i in range(2_000_000))
    loop = time.perf_counter() - start
    text = json.dumps({str(k): {"name": "man", "x": k, "relations": [{"name": "to the left of", "object": str(j)}
                                                                    for j in range(30)]} for k in range(10_000)})
    enabled = gc.isenabled()
    gc.disable()
    try:
        before = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        decoded = json.loads(text)
        decode = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
        del decoded
    finally:
        if enabled:
            gc.enable()
    return {"python_loop_s": loop, "json_mb": len(text) / 1e6, "json_decode_s": decode,
            "json_minor_faults": after.ru_minflt - before.ru_minflt,
            "json_system_s": after.ru_stime - before.ru_stime,
            "mm_gflops": mm_gflops(), "cpu_vector": cpu_vector()}


def mm_gflops(n: int = 1024) -> float:
    """float32 ``torch.mm`` of two ``n x n`` matrices on the current threads, best of 5: the
    processor's matmul rate, which the training roofline divides by (on 2026-11-27 one host gave
    145-155 GFLOP/s where the earlier ones gave 60-85: the ratio aims move with the host)."""
    a, b = torch.rand(n, n), torch.rand(n, n)
    out = torch.empty(n, n)
    torch.mm(a, b, out=out)  # warm
    return 2 * n ** 3 / best_time(lambda: torch.mm(a, b, out=out), 5) / 1e9


def cpu_vector() -> str:
    """The widest vector extension the processor lists (Linux's ``/proc/cpuinfo`` flags), with
    ``+ AMX`` when it has matrix tiles too; ``unknown`` elsewhere."""
    try:
        with open("/proc/cpuinfo") as info:
            flags = next((line.split(":", 1)[1].split() for line in info if line.startswith("flags")), [])
    except OSError:
        return "unknown"
    simd = next((name for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("sse4_2", "SSE4.2"))
                 if flag in flags), "unknown")
    return simd + (" + AMX" if "amx_tile" in flags else "")


def table(checks: list[dict]) -> list[str]:
    width = max([len(c["name"]) for c in checks] + [4])
    mwidth = max([len(c["measured"]) for c in checks] + [8])
    lines = [f"{'name':<{width}}  {'measured':<{mwidth}}  {'aim':<10}  met", "-" * (width + mwidth + 19)]
    for c in checks:
        met = "-" if c["met"] is None else "yes" if c["met"] else "NO"
        lines.append(f"{c['name']:<{width}}  {c['measured']:<{mwidth}}  {c['aim']:<10}  {met}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="smaller sizes (about a minute)")
    size.add_argument("--tiny", action="store_true", help="smallest sizes: checks that the suites run (seconds)")
    ap.add_argument("--only", nargs="+", choices=SUITES, metavar="NAME", help=f"suites to run, of: {', '.join(SUITES)}")
    ap.add_argument("--json", type=Path, default=None, help="write every figure here")
    ap.add_argument("--plot", type=Path, default=DEFAULT_PLOT, help="where the scaling curves are drawn")
    ap.add_argument("--figures", type=Path, default=figures.DEFAULT_MARKDOWN,
                    help="the table of aims a full-size run updates (Markdown; its .json beside it)")
    ap.add_argument("--from-json", type=Path, metavar="RESULT",
                    help="run nothing: write the table of aims (--figures) from a full-size run's --json")
    ap.add_argument("--commit", help="with --from-json: the commit that run measured, where its JSON does not say")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads (default 1: on a machine shared with other jobs, ops split over "
                         "2 threads stall whenever one core is busy; 0 keeps torch's default)")
    args = ap.parse_args(argv)
    if args.from_json:
        return figures_from(ap, args)
    if args.threads < 0:
        ap.error(f"--threads must be >= 0, got {args.threads}")
    threads = torch.get_num_threads()
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        return _run(args, argv)
    finally:
        torch.set_num_threads(threads)  # the caller's setting back (tests call main in-process)


def figures_from(ap: argparse.ArgumentParser, args) -> int:
    """``--from-json``: the table of aims written again from a saved full-size run."""
    try:
        result = json.loads(args.from_json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        ap.error(f"--from-json {args.from_json}: not a benchmark result ({exc})")
    if not isinstance(result, dict) or not {"checks", "suites", "date", "size"} <= set(result):
        ap.error(f"--from-json {args.from_json}: not a benchmark result (it needs checks, suites, date and size)")
    if result["size"] != "full":
        ap.error(f"--from-json {args.from_json}: a {result['size']} run; the aims are stated at full size")
    if args.commit:
        result["commit"] = args.commit
    rows = figures.write(result, args.figures, SUITES)
    print(f"{len(rows)} aims: {args.figures} and {args.figures.with_suffix('.json').name}")
    return 0


def _run(args, argv) -> int:
    size_name = "tiny" if args.tiny else "quick" if args.quick else "full"
    names = [s for s in SUITES if not args.only or s in args.only]
    started = datetime.datetime.now(datetime.timezone.utc)
    result = {"date": started.isoformat(timespec="seconds"), "command": " ".join(["python -m benchmarks.run"] + (
        sys.argv[1:] if argv is None else list(argv))), "commit": commit(), "size": size_name, "machine": machine(),
        "suites": {}, "checks": []}
    for name in names:
        start = time.perf_counter()
        print(f"[{name}] running ...", flush=True)
        r, checks, lines = run_suite(name, size_name, args.plot)
        r["seconds"] = time.perf_counter() - start
        for c in checks:
            c["suite"] = name
            if size_name == "tiny":  # too small for any aim: tiny only shows that the suites run
                c["met"] = None
        result["suites"][name] = r
        result["checks"].extend(checks)
        print("\n".join(lines + [f"[{name}] {r['seconds']:.1f} s"]), flush=True)
    m = result["machine"]
    print(f"\n{m['processor']}, {m['cpus']} CPUs, {m['torch_threads']} torch threads, torch {m['torch']}, "
          f"Python {m['python']}; {size_name} size; {result['date']}")
    c = m["calibration"]
    print(f"calibration (taken at the start): Python loop {c['python_loop_s']:.2f} s; {c['json_mb']:.0f} MB of "
          f"scene-graph-like JSON decoded in {c['json_decode_s']:.2f} s ({c['json_minor_faults']:,} page faults, "
          f"{c['json_system_s']:.2f} s of system time); float32 mm {c['mm_gflops']:.0f} GFLOP/s ({c['cpu_vector']})")
    print("\n".join(table(result["checks"])))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1, default=float) + "\n")
        print(f"figures: {args.json}")
    if size_name == "full":  # the aims are stated at full size: smaller runs only print
        figures.write(result, args.figures, SUITES)
        print(f"table of aims: {args.figures}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
