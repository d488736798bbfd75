"""The engine and the oracle's training on an accelerator: its own limits, and the same answers.

    python -m benchmarks.bench_gpu [--quick] [--device cuda] [--eval-folder F] [--json out.json]

Every figure is measured in this run, on ``--device`` (CUDA by default; on a machine without it
the script says so in one line and measures nothing). Sections, in this order, each kept in the
JSON as soon as it is done (a section that fails keeps its error and the next one runs):

1. **ceilings**: a device-to-device copy (bytes read + written per second) and the ``torch.mm``
   rate on the oracle's shapes, in torch's default float32 precision and with TF32 allowed.
2. **same answers**: GQA programs over probabilistic scenes, the engine on the device against
   the engine on the CPU (float32 and float64; exact mode too): largest probability difference,
   predictions equal.
3. **one call**: the fixed cost of one engine call (4 steps, 10 objects) on the device and on
   the CPU, alternating in this process.
4. **Q-product against a copy** of the same bytes, eager (and compiled, last, with ``--compile``).
5. **eval** (with ``--eval-folder``: a folder holding ``val_balanced_questions.json`` and
   ``val_sceneGraphs.json``): ``nablafol eval`` with ``--device cpu`` and with the device, wall
   time of each and whether the two predictions files are byte-identical.
6. **training roofline**: a training step's achieved fraction of the device's mm rate (2048-d
   features), the reasoning's share, and where the step goes (the device's busy time), one
   section per case (objects, batch).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import torch

from .timing import best_time, synchronizer

SIZES = {
    "tiny": dict(copy_mb=8, mm_rows=64, programs=16, calls=20, qproduct=[(64, 16)], roofline=[(4, 8)],
                 roofline_scenes=8, steps=1),
    "quick": dict(copy_mb=256, mm_rows=2304, programs=256, calls=300, qproduct=[(4096, 100)],
                  roofline=[(10, 64), (36, 64)], roofline_scenes=64, steps=3),
    "full": dict(copy_mb=1024, mm_rows=9216, programs=1024, calls=1000,
                 qproduct=[(4096, 100), (16384, 50), (65536, 25), (1024, 200)],
                 roofline=[(10, 64), (10, 256), (36, 64), (36, 256), (36, 1024)], roofline_scenes=256, steps=5),
}


def ceilings(device, copy_mb: int, mm_rows: int) -> dict:
    """The device's copy bandwidth and mm rates (float32 as torch computes it by default; TF32)."""
    from nablafol.neural.model import NeuralOracleConfig

    from .bench_limits import FEATURE_DIM, mm_rate
    sync = synchronizer(device)
    source = torch.rand(copy_mb * 2 ** 18, device=device)  # float32: copy_mb MiB
    destination = torch.empty_like(source)
    destination.copy_(source)
    copy_s = best_time(lambda: destination.copy_(source), 10, sync)
    config = NeuralOracleConfig(feature_dim=FEATURE_DIM, num_unary=1, num_binary=1)  # the default sizes
    was = torch.backends.cuda.matmul.allow_tf32
    try:
        rates = {}
        for name, tf32 in (("float32", False), ("tf32", True)):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            rates[name] = mm_rate(config, mm_rows, repeats=5, device=device)["flops_per_s"] / 1e12
    finally:
        torch.backends.cuda.matmul.allow_tf32 = was
    return {"copy_gb": source.numel() * 4 / 1e9, "copy_gb_per_s": 2 * source.numel() * 4 / copy_s / 1e9,
            "mm_rows": mm_rows, "mm_tflops_float32": rates["float32"], "mm_tflops_tf32": rates["tf32"]}


def same_answers(device, count: int, seed: int = 0) -> dict:
    """The engine's answers on ``device`` against the CPU's, float32 and float64, fast path and exact mode."""
    from nablafol.engine import Engine
    from nablafol.oracle import TableOracle

    from .bench_problog import gqa_programs
    rng = np.random.default_rng(seed)
    programs = gqa_programs(rng, count)
    scenes = []
    for program in programs:  # every table uncertain: repeated atoms make the fast path and exact mode differ
        n = int(rng.integers(3, 12))
        scenes.append({p: rng.uniform(0.02, 0.98, (n,) * p.arity) for p in program.predicates()})
    out = {"programs": count}
    for exact in (False, True):
        reference = None
        for dtype, where in ((torch.float64, "cpu"), (torch.float32, "cpu"), (torch.float64, device),
                             (torch.float32, device)):
            oracle = TableOracle([{p: torch.as_tensor(t, dtype=dtype, device=where) for p, t in s.items()}
                                  for s in scenes])
            with torch.no_grad():
                answers = Engine(exact=exact)(programs, oracle)
            probs = answers.probs().double().cpu().masked_fill(~answers.candidate_mask.cpu(), 0.0)
            if reference is None:
                reference = (probs, answers.predictions())
                continue
            key = f"{'exact' if exact else 'fast'}_{str(dtype).removeprefix('torch.')}_{torch.device(where).type}"
            out[key + "_max_abs_diff"] = float((probs - reference[0]).abs().max())
            out[key + "_same_predictions"] = sum(a == b for a, b in zip(answers.predictions(), reference[1]))
    return out


def one_call_here_and_there(device, calls: int) -> dict:
    """One engine call's fixed cost on the CPU and on ``device``, three rounds alternating."""
    from .bench_limits import one_call
    rounds = {"cpu": [], "device": []}
    for _ in range(3):
        rounds["cpu"].append(one_call(calls)["median_us"])
        rounds["device"].append(one_call(calls, device)["median_us"])
    return {"calls": calls, "cpu_median_us": statistics.median(rounds["cpu"]),
            "device_median_us": statistics.median(rounds["device"]), "rounds": rounds}


def qproducts(device, sizes, compiled: bool = False) -> list[dict]:
    """The ∃ Q-product against a copy of the same bytes, best of 20, eager (or through torch.compile)."""
    from .bench_engine import bench_qproduct
    out = []
    for rows, n in sizes:
        start = time.perf_counter()
        tq, tc, gb, _ = bench_qproduct(rows, n, compile_=compiled, repeats=20, device=device)
        out.append({"rows": rows, "objects": n, "gb": gb, "qproduct_ms": tq * 1e3, "copy_ms": tc * 1e3,
                    "copy_over_qproduct": tc / tq, "copy_gb_per_s": 2 * gb / tc,
                    "seconds_incl_compiling": time.perf_counter() - start})
    return out


def eval_here_and_there(device, folder: Path) -> dict:
    """``nablafol eval`` (golden oracle) with ``--device cpu`` and with ``device``: times, same bytes."""
    out = {}
    with tempfile.TemporaryDirectory() as scratch:
        files = {}
        for name, where in (("cpu", "cpu"), ("device", str(device)), ("cpu_again", "cpu")):
            files[name] = Path(scratch) / f"{name}.json"
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "nablafol.cli", "eval", "--questions",
                                   str(folder / "val_balanced_questions.json"), "--scene-graphs",
                                   str(folder / "val_sceneGraphs.json"), "--predictions", str(files[name]),
                                   "--device", where], capture_output=True, text=True)
            out[f"{name}_s"] = time.perf_counter() - start
            if done.returncode != 0:
                raise RuntimeError(f"nablafol eval --device {where} failed: {done.stderr[-600:]}")
            out[f"{name}_summary"] = done.stdout.strip().splitlines()[-3:]
        out["same_bytes"] = files["cpu"].read_bytes() == files["device"].read_bytes()
        out["questions"] = len(json.loads(files["cpu"].read_text()))
    return out


def run(size: str, device, eval_folder: Path | None = None, compiled: bool = False, save=None,
        only: list[str] | None = None) -> dict:
    """Every section on ``device`` (or those whose names start with one of ``only``), cheapest and
    surest first; ``save(result, name)`` after each (a failed one keeps its error and the next one runs)."""
    from .bench_limits import roofline_case
    cfg = SIZES[size]
    sections = [
        ("ceilings", lambda: ceilings(device, cfg["copy_mb"], cfg["mm_rows"])),
        ("same_answers", lambda: same_answers(device, cfg["programs"])),
        ("one_call", lambda: one_call_here_and_there(device, cfg["calls"])),
        ("qproduct", lambda: qproducts(device, cfg["qproduct"])),
    ]
    if eval_folder is not None:
        sections.append(("eval", lambda: eval_here_and_there(device, eval_folder)))
    for n, b in cfg["roofline"]:  # one section a case: a long run keeps the cases it finished
        sections.append((f"roofline N={n} batch {b}",
                         lambda n=n, b=b: roofline_case(n, b, max(cfg["roofline_scenes"], b), cfg["steps"],
                                                        device=device)))
    if compiled:  # last: compiling takes the longest and may fail where the rest works
        sections.append(("qproduct_compiled", lambda: qproducts(device, cfg["qproduct"], compiled=True)))
    if only:
        sections = [(name, section) for name, section in sections if name.startswith(tuple(only))]
    result = {"device": str(device), "torch": torch.__version__, "size": size}
    if torch.device(device).type == "cuda":
        result["device_name"] = torch.cuda.get_device_name(device)
    for name, section in sections:
        start = time.perf_counter()
        try:
            result[name] = section()
        except Exception as error:  # noqa: BLE001 - a benchmark run reports every section it can
            result[name] = {"error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()}
        result[name + " seconds"] = time.perf_counter() - start
        if save is not None:
            save(result, name)
    return result


def _section_lines(name: str, section) -> list[str]:
    if isinstance(section, dict) and "error" in section:
        return [f"{name}: FAILED {section['error']}"]
    if name == "ceilings":
        return [f"ceilings: copy {section['copy_gb_per_s']:,.0f} GB/s (read + written, {section['copy_gb']:.1f} GB), "
                f"mm {section['mm_tflops_float32']:.1f} TFLOP/s float32, {section['mm_tflops_tf32']:.1f} TF32 "
                f"({section['mm_rows']} rows)"]
    if name == "same_answers":
        return ["same answers (" + f"{section['programs']} programs, against float64 on the CPU): " + ", ".join(
            f"{k.removesuffix('_max_abs_diff')} {v:.1e}" for k, v in section.items() if k.endswith("diff"))
            + "; predictions equal: " + ", ".join(f"{section[k]}/{section['programs']}" for k in section
                                                   if k.endswith("predictions"))]
    if name == "one_call":
        return [f"one call (4 steps, 10 objects): CPU {section['cpu_median_us']:.0f} us, device "
                f"{section['device_median_us']:.0f} us (medians of 3 rounds of {section['calls']})"]
    if name.startswith("qproduct"):
        how = "compiled" if name.endswith("compiled") else "eager"
        return [f"Q-product ({how}) R={q['rows']} N={q['objects']}: {q['qproduct_ms']:.3f} ms, copy {q['copy_ms']:.3f} "
                f"ms ({q['copy_gb_per_s']:,.0f} GB/s) -> {q['copy_over_qproduct']:.2f}" for q in section]
    if name.startswith("roofline"):
        c = section
        return [f"training N={c['objects']} batch {c['batch']}: step {c['step_s'] * 1e3:.1f} ms "
                f"({c['batch'] / c['step_s']:,.0f} q/s), {c['achieved_gflops'] / 1e3:.2f} of "
                f"{c['mm_rate_gflops'] / 1e3:.1f} TFLOP/s = {c['fraction_of_mm_rate']:.3f}; reasoning "
                f"{c['reasoning_share']:.2f} of the step; " + ", ".join(f"{k} {v:.0%}" for k, v in c["shares"].items()),
                "    top operators (ms): " + ", ".join(f"{k} {v:.2f}" for k, v in c["top_ops_ms"])]
    if name == "eval":
        return [f"eval ({section['questions']:,} q): --device cpu {section['cpu_s']:.1f} s "
                f"(again {section['cpu_again_s']:.1f} s), on the device {section['device_s']:.1f} s; "
                f"predictions byte-identical: {section['same_bytes']}"]
    return [f"{name}: {section}"]


def report(r: dict) -> list[str]:
    lines = [f"on {r.get('device_name', r['device'])} (torch {r['torch']}, size {r['size']})"]
    for name, section in r.items():
        if name not in ("device", "device_name", "torch", "size") and not name.endswith(" seconds"):
            lines += _section_lines(name, section)
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--size", choices=sorted(SIZES), default=None, help="a size by name (overrides --quick)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--eval-folder", type=Path, default=None)
    ap.add_argument("--compile", action="store_true", help="the Q-product through torch.compile too")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here (after every section)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads on the CPU (0: torch's default)")
    ap.add_argument("--only", nargs="+", default=None, metavar="SECTION",
                    help="only the sections whose names start so (ceilings, same_answers, one_call, qproduct, eval, "
                         "roofline, 'roofline N=36')")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print(f"bench_gpu: no CUDA device here (torch {torch.__version__}); nothing measured")
        return 0
    threads = torch.get_num_threads()
    if args.threads:
        torch.set_num_threads(args.threads)

    def save(result, name):
        if args.json is not None:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(result, indent=1, default=str))
        print("\n".join(_section_lines(name, result[name])), flush=True)  # progress: each section as it ends
    try:
        result = run(args.size or ("quick" if args.quick else "full"), device, args.eval_folder, args.compile, save,
                     args.only)
    finally:
        torch.set_num_threads(threads)
    print("\n".join(report(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
