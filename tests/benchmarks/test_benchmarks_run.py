"""The benchmark entry point runs every suite (tiny sizes) and writes its figures as JSON;
the optional torch.compile path of the engine falls back to the eager Q-product when
compiling fails. Timings are never asserted: only structure and exactness."""
import gc
import json
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, home of benchmarks/

from benchmarks import run as bench_run  # noqa: E402
from nablafol.engine import Engine  # noqa: E402
from nablafol.ir import Aggregate, Filter, Predicate, Program, Quantifier, Relate, Top  # noqa: E402
from nablafol.oracle import TableOracle  # noqa: E402


@pytest.mark.slow
def test_tiny_run_writes_every_suite_and_a_table(tmp_path, capsys):
    out, plot = tmp_path / "bench.json", tmp_path / "scaling.png"
    assert bench_run.main(["--tiny", "--json", str(out), "--plot", str(plot)]) == 0
    result = json.loads(out.read_text())
    assert result["size"] == "tiny" and result["date"].startswith("20")
    assert {"python", "torch", "cpus", "torch_threads", "processor"} <= set(result["machine"])
    assert result["machine"]["torch_threads"] == 1  # the default --threads
    calibration = result["machine"]["calibration"]  # fixed workloads, to compare machines across days
    assert calibration["python_loop_s"] > 0 and calibration["json_decode_s"] > 0 and calibration["json_mb"] > 5
    assert calibration["mm_gflops"] > 0 and calibration["cpu_vector"].split(" + ")[0] in ("AVX-512", "AVX2", "SSE4.2", "unknown")
    assert set(result["suites"]) == set(bench_run.SUITES)
    assert all(s["seconds"] > 0 for s in result["suites"].values())
    checks = result["checks"]
    assert {c["suite"] for c in checks} == set(bench_run.SUITES)
    for c in checks:
        assert set(c) == {"name", "measured", "aim", "met", "value", "suite"}
        assert c["met"] is None  # tiny runs judge no aim
    by_name = {c["name"]: c for c in checks}
    # exactness is a property, not a timing: it holds at any size
    assert by_name["exact: engine = ProbLog"]["value"] <= 1e-6
    assert by_name["batched = one at a time"]["value"] == 0.0
    # features read ahead train the same weights as features read in the step (a property: the
    # shares of a step are timings, printed, not asserted)
    for source in ("files", "memory"):
        wait = result["suites"]["training"]["feature_wait"][source]
        assert wait["weights_identical"] is True and wait["before"]["steps"] == wait["after"]["steps"] > 0
    curves = result["suites"]["scaling"]["curves"]
    assert set(curves) == {"objects_relate", "objects_filter", "batch", "length"}
    assert all(len(c["x"]) == len(c["seconds"]) >= 3 for c in curves.values())
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # issue 23's aims: each printed with its verdict; the FLOPs counted from the network's sizes
    # agree with torch's own count of the step (a count, not a timing)
    limits = {c["name"].split(",")[0] for c in checks if c["suite"] == "limits"}
    assert {"training roofline", "reasoning share of a step", "one engine call", "end to end vs ProbLog median"} <= limits
    assert any(name.startswith("eager Q-product / copy") for name in limits)
    for case in result["suites"]["limits"]["roofline"]:
        assert 0.7 <= case["flops_model"]["step"] / case["flops_counted"] <= 1.3
    # the Q-product's arithmetic floor is taken over bench_qproduct's own terms (their share above -log 2)
    from benchmarks.bench_engine import qproduct_inputs
    for q in result["suites"]["limits"]["qproduct"]:
        log_r, log_y = qproduct_inputs(q["rows"], q["objects"])
        above = float((log_r + log_y[:, None, :] > -0.6931471805599453).double().mean())
        assert q["arithmetic_floor"]["share_above_log_half"] == pytest.approx(above, abs=1e-6)
        assert q["copy_over_floor"] > 0
    # end to end as `nablafol eval` runs (the collector off) and as a library call (on), the collector on after
    e2e = result["suites"]["limits"]["end_to_end"]
    assert {"marginal_us", "marginal_collector_on_us"} <= set(e2e) and gc.isenabled()
    printed = capsys.readouterr().out
    assert "measured" in printed and "exact: engine = ProbLog" in printed
    assert "its arithmetic alone" in printed and "by the arithmetic alone" in printed


@pytest.mark.slow
def test_only_runs_the_named_suites(tmp_path):
    out = tmp_path / "bench.json"
    assert bench_run.main(["--tiny", "--only", "batched", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["suites"]) == {"batched"}


def test_bad_arguments_are_refused_in_one_line(capsys):
    for argv in (["--threads", "-1"], ["--only", "nothing"]):
        with pytest.raises(SystemExit) as exc:
            bench_run.main(argv)
        assert exc.value.code == 2
        assert len(capsys.readouterr().err.strip().splitlines()[-1]) > 0


@pytest.mark.slow
def test_compile_failure_falls_back_to_the_eager_q_product():
    chair, left = Predicate("chair"), Predicate("left", arity=2)
    program = Program.yes_no(Aggregate(Quantifier.EXISTS, Filter(chair, Relate.of(left, Quantifier.EXISTS, Top()))))
    tables = [{chair: [0.9, 0.2, 0.5], left: [[0.3, 0.8, 0.1], [0.1, 0.6, 0.2], [0.7, 0.4, 0.9]]}] * 4
    expected = Engine()([program] * 4, TableOracle(tables)).probs()
    engine = Engine(compile=True)

    def broken(*args, **kwargs):
        raise RuntimeError("no C compiler here")

    engine._q_product._fn = broken
    with pytest.warns(RuntimeWarning, match="using the eager Q-product"):
        got = engine([program] * 4, TableOracle(tables)).probs()
    assert torch.equal(got, expected)
    assert "no C compiler here" in engine._q_product.failed
    assert torch.equal(engine([program] * 4, TableOracle(tables)).probs(), expected)  # eager from then on


@pytest.mark.slow
def test_the_gpu_script_runs_every_section_on_the_cpu_too(tmp_path, capsys):
    """bench_gpu's sections, tiny, on the CPU: each keeps its figures (none fails), the same answers
    hold, and a machine without CUDA asked for it is told so in one line."""
    from benchmarks import bench_gpu
    out = tmp_path / "gpu.json"
    assert bench_gpu.main(["--size", "tiny", "--device", "cpu", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    sections = [k for k in result if k.endswith(" seconds")]
    assert len(sections) == 6 and not [k for k, v in result.items() if isinstance(v, dict) and "error" in v]
    same = result["same_answers"]
    assert same["fast_float64_cpu_max_abs_diff"] == 0.0 and same["exact_float32_cpu_max_abs_diff"] < 1e-5
    assert all(v == same["programs"] for k, v in same.items() if k.endswith("same_predictions"))
    assert result["roofline N=4 batch 8"]["step_s"] > 0
    steps = result["steps N=4 batch 8"]  # today's eager step beside the fixed-shape one
    assert steps["eager"]["over_eager"] == 1.0 and steps["fixed shapes"]["questions_per_s"] > 0
    if not torch.cuda.is_available():
        capsys.readouterr()
        assert bench_gpu.main(["--device", "cuda"]) == 0
        assert capsys.readouterr().out.startswith("bench_gpu: no CUDA device here")


@pytest.mark.slow
def test_the_eval_is_timed_in_two_passes_over_one_set():
    """Where an eval's time goes (issue 23, aim 2): the set answered twice by one answerer in one
    process; the first pass compiles every program, the second none (counted, not timed)."""
    from benchmarks import bench_limits
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"
    t = bench_limits.two_passes(fixtures / "val_balanced_questions.json", fixtures / "val_sceneGraphs.json")
    questions = json.loads((fixtures / "val_balanced_questions.json").read_text())
    distinct = {json.dumps(q["semantic"]) for q in questions.values()}
    assert 0 < t["programs"] <= len(distinct)
    assert t["plans"][0] > 0 and t["plans"][1] >= 0  # shapes planned in each pass (counted, not timed)
    assert all(t[k] > 0 for k in ("import_s", "read_s", "first_pass_s", "second_pass_s"))
    eval_row = {"questions": len(questions), "scenes": 1, "objects_per_scene": 1.0, "relations_per_object": 1.0,
                "eval_s": 1.0, "eval_cpu_s": 1.0, "eval_peak_pss_mb": 1, "eval_peak_rss_mb": 1, "read_s": 0.5,
                "read_peak_rss_mb": 1.0, "eval_over_read": 2.0, "passes": t}
    printed = bench_limits.eval_lines(eval_row)
    assert len(printed) == 2 and f"{t['programs']:,} programs met for the first time" in printed[1]
    assert f"shapes planned {t['plans'][0]:,} then {t['plans'][1]:,} times" in printed[1]
    older = {k: v for k, v in eval_row.items() if k != "passes"}  # a run's JSON from before the two passes
    assert len(bench_limits.eval_lines(older)) == 1
