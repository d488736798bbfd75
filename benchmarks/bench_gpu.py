"""The engine and the oracle's training on an accelerator: its own limits, and the same answers.

    python -m benchmarks.bench_gpu [--quick] [--device cuda] [--eval-folder F | --eval-tenth] [--json out.json]

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
   ``val_sceneGraphs.json``; ``--eval-tenth``: the tenth of GQA validation that
   ``benchmarks/README.md`` measures, generated once by :data:`TENTH_COMMAND` into a cache folder,
   a 60-scene one with ``--quick``): ``nablafol eval`` with ``--device cpu`` and with the device,
   wall time of each and whether the two predictions files are byte-identical; then **layouts**:
   how many fixed-shape layouts (recordings) random batches of its questions make.
6. **training roofline**: a training step's achieved fraction of the device's mm rate (2048-d
   features), the reasoning's share, and where the step goes (the device's busy time), one
   section per case (objects, batch).
7. **steps** (one section a case): a training step with today's eager engine beside the same step
   with ``Engine(fixed_shapes=True)`` (and, with ``--compile``, with
   ``Engine(fixed_shapes=True, compile=True)``: the reasoning through
   ``torch.compile(mode="reduce-overhead")``, CUDA graphs), alternating three rounds in this
   process: questions per second, the ratio to the eager step, and the device's busy share of a
   profiled step (on the CPU, the share of the step inside torch operators).

What issue "Training and evaluation at accelerator speed" asks of a GPU, in one command:
``python -m benchmarks.bench_gpu --eval-tenth --compile --only eval "steps N=36 batch 1024" --json gpu.json``
(the busy share and q/s at 36 objects, batch 1,024; eval on the device against the CPU on the
tenth; ``--eval-folder F`` instead of ``--eval-tenth`` reads a tenth generated elsewhere).
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
                 roofline_scenes=8, steps=1, paths=[(4, 8)], tenth_scenes=12),
    "quick": dict(copy_mb=256, mm_rows=2304, programs=256, calls=300, qproduct=[(4096, 100)],
                  roofline=[(10, 64), (36, 64)], roofline_scenes=64, steps=3, paths=[(10, 64)], tenth_scenes=60),
    "full": dict(copy_mb=1024, mm_rows=9216, programs=1024, calls=1000,
                 qproduct=[(4096, 100), (16384, 50), (65536, 25), (1024, 200)],
                 roofline=[(10, 64), (10, 256), (36, 64), (36, 256), (36, 1024)], roofline_scenes=256, steps=5,
                 paths=[(36, 256), (36, 1024)], tenth_scenes=1000),
}
#: The tenth of GQA validation benchmarks/README.md measures eval on (14,604 questions at 1,000 scenes)
TENTH_COMMAND = ["generate", "--train", "0", "--testdev", "0", "--questions-per-scene", "14", "--objects", "8", "24",
                 "--large-scenes", "0.1", "--spatial-neighbours", "2", "--seed", "7", "--val"]


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


def tenth_folder(scenes: int) -> Path:
    """The GQA-like set of :data:`TENTH_COMMAND` at ``scenes`` validation scenes, generated once
    into a cache folder (1,000: the tenth of GQA validation)."""
    folder = Path(tempfile.gettempdir()) / "nablafol-bench" / f"gqa-tenth-{scenes}"
    if not (folder / "val_sceneGraphs.json").exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "nablafol.cli", TENTH_COMMAND[0], "--out", str(folder),
                        *TENTH_COMMAND[1:], str(scenes)], check=True, stdout=subprocess.DEVNULL)
    return folder


def layout_reuse(folder: Path, batch: int, count: int, seed: int = 0) -> dict:
    """How often random batches of a set's questions need a new fixed-shape layout (a new
    recording): with buckets alone, and with the engine's shape floors (host work only)."""
    from nablafol.compiler import Compiler
    from nablafol.data import load_questions
    from nablafol.dsl import Ontology
    from nablafol.engine import Engine
    from nablafol.engine.fixed_shapes import ShapeFloors, layout_of, padded_plan
    from nablafol.pipeline.answering import Skip, compile_question
    compiler = Compiler(Ontology.from_folder(folder / "ontology"))
    programs = [c.program for q in load_questions(folder / "val_balanced_questions.json").values()
                for c in (compile_question(q, compiler),) if not isinstance(c, Skip)]
    rng, engine, floors = np.random.default_rng(seed), Engine(), ShapeFloors()
    out = {"programs": len(programs), "batch": batch, "batches": count}
    for name, sizes in (("buckets", lambda plan: None), ("floors", floors.sizes)):
        seen, late = set(), 0
        for k in range(count):
            pick = rng.choice(len(programs), batch, replace=False)
            plan = engine.plan([programs[i] for i in pick], pick % 16)  # 16 scenes a batch
            before = len(seen)
            seen.add(layout_of(padded_plan(plan, sizes(plan)))[0])
            late += k >= count // 2 and len(seen) > before
        out[name] = {"layouts": len(seen), "new_in_second_half": late}
    return out


def step_paths(device, objects: int, batch: int, steps: int, compiled: bool, seed: int = 0) -> dict:
    """A training step at ``objects`` and ``batch`` with the eager engine (today's), with the
    fixed-shape path and (``compiled``) that step through ``torch.compile(mode="reduce-overhead")``,
    alternating three rounds of ``steps`` steps: questions per second and the device's busy share."""
    from nablafol.engine import Engine

    from .bench_limits import FEATURE_DIM, device_shares
    from .bench_training import trainer_on_generated_data
    with tempfile.TemporaryDirectory() as scratch:
        model, trainer, examples = trainer_on_generated_data(
            Path(scratch), batch, seed, FEATURE_DIM, n_train=max(batch, 64), n_val=1, n_testdev=1,
            min_objects=objects, max_objects=objects, questions_per_scene=2, device=device)
        sync = synchronizer(device)
        rng = np.random.default_rng(seed)
        batches = [[examples[i] for i in rng.choice(len(examples), size=min(batch, len(examples)), replace=False)]
                   for _ in range(steps)]
        paths = {"eager": Engine(), "fixed shapes": Engine(fixed_shapes=True)}
        if compiled:  # the reasoning recorded once per layout and replayed (CUDA graphs on CUDA)
            paths["fixed shapes, compiled"] = Engine(fixed_shapes=True, compile=True)
        times = {name: [] for name in paths}
        out = {"objects": objects, "batch": len(batches[0]), "steps": steps}
        for name, engine in list(paths.items()):  # warm: plans, allocations, compiling
            trainer.engine = engine
            start = time.perf_counter()
            try:
                trainer._step(batches[0])
                sync()
            except Exception as error:  # noqa: BLE001 - compiling may fail where the eager paths run
                out[f"{name} error"] = f"{type(error).__name__}: {str(error)[:300]}"
                del paths[name], times[name]
                continue
            out[f"{name} first step s"] = time.perf_counter() - start
        for _ in range(3):
            for name, engine in paths.items():
                trainer.engine = engine
                start = time.perf_counter()
                for b in batches:
                    trainer._step(b)
                sync()
                times[name].append((time.perf_counter() - start) / len(batches))
        on_cpu = torch.device(device).type == "cpu"
        activities = [torch.profiler.ProfilerActivity.CPU] + ([] if on_cpu else [torch.profiler.ProfilerActivity.CUDA])
        for name, engine in paths.items():
            trainer.engine = engine
            step_s = statistics.median(times[name])
            with torch.profiler.profile(activities=activities) as prof:
                trainer._step(batches[-1])
                sync()
            if on_cpu:  # nothing runs beside the host: the share of the step inside torch operators
                busy = sum(e.self_cpu_time_total for e in prof.key_averages()) / 1e6 / step_s
            else:
                busy = device_shares(prof, prof.key_averages(), step_s)["accelerator busy"]
            out[name] = {"step_s": step_s, "questions_per_s": len(batches[0]) / step_s, "busy_share": busy,
                         "rounds_s": times[name]}
        for name in paths:
            out[name]["over_eager"] = out[name]["questions_per_s"] / out["eager"]["questions_per_s"]
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
        sections.append(("layouts", lambda: layout_reuse(eval_folder, cfg["paths"][-1][1], 400)))
    for n, b in cfg["roofline"]:  # one section a case: a long run keeps the cases it finished
        sections.append((f"roofline N={n} batch {b}",
                         lambda n=n, b=b: roofline_case(n, b, max(cfg["roofline_scenes"], b), cfg["steps"],
                                                        device=device)))
    for n, b in cfg["paths"]:
        sections.append((f"steps N={n} batch {b}", lambda n=n, b=b: step_paths(device, n, b, cfg["steps"], compiled)))
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
    if name == "layouts":
        return [f"fixed-shape layouts over {section['batches']} random batches of {section['batch']}: buckets "
                f"{section['buckets']['layouts']} ({section['buckets']['new_in_second_half']} new in the second half), "
                f"floors {section['floors']['layouts']} ({section['floors']['new_in_second_half']})"]
    if name.startswith("steps"):
        paths = [k for k, v in section.items() if isinstance(v, dict)]
        return [f"training step N={section['objects']} batch {section['batch']}: " + "; ".join(
            f"{k} {section[k]['questions_per_s']:,.0f} q/s ({section[k]['over_eager']:.2f}x), busy "
            f"{section[k]['busy_share']:.0%}" for k in paths)]
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
    ap.add_argument("--eval-tenth", action="store_true",
                    help="eval on the tenth of GQA validation (generated once; 60 scenes with --quick)")
    ap.add_argument("--compile", action="store_true",
                    help="the Q-product through torch.compile too, and the fixed-shape step with mode=reduce-overhead")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here (after every section)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads on the CPU (0: torch's default)")
    ap.add_argument("--only", nargs="+", default=None, metavar="SECTION",
                    help="only the sections whose names start so (ceilings, same_answers, one_call, qproduct, eval, "
                         "roofline, 'roofline N=36', steps)")
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
    size = args.size or ("quick" if args.quick else "full")
    evaluating = not args.only or any("eval".startswith(o) for o in args.only)
    eval_folder = tenth_folder(SIZES[size]["tenth_scenes"]) if args.eval_tenth and evaluating else args.eval_folder
    try:
        result = run(size, device, eval_folder, args.compile, save, args.only)
    finally:
        torch.set_num_threads(threads)
    print("\n".join(report(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
