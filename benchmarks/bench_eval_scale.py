"""`nablafol eval` at scale: a questions file of any size over the same scenes, then peak memory,
time, and an interrupted-and-resumed run.

    # a million questions: the source's records repeated under new ids (entailed ids follow)
    python benchmarks/bench_eval_scale.py make --source data/gqa-scale/val_balanced_questions.json \\
        --count 1000000 --out /tmp/q1m.json
    # one run under /usr/bin/time -v; with --kill-after S the run is killed (SIGKILL) after S
    # seconds, then resumed with --resume, and what the journal held is checked against the
    # resumed run's count of questions it did itself
    python benchmarks/bench_eval_scale.py run --questions /tmp/q1m.json \\
        --scene-graphs data/gqa-scale/val_sceneGraphs.json --out /tmp/eval1m [--kill-after 120]
    # where the time goes: CPU time of each phase of one in-process run (wrappers, no profiler)
    python benchmarks/bench_eval_scale.py phases -- --questions Q --scene-graphs SG --predictions /tmp/p.json
    # the marginal CPU time per question of `nablafol eval` (the questions file against its first
    # half, over the same scene graphs), beside that of decoding the same questions' JSON alone
    python benchmarks/bench_eval_scale.py marginal --questions Q --scene-graphs SG [--rounds 5]
    # the floor of that marginal: what no cut in the eval's Python removes (decoding a question,
    # the engine's torch work for it in its batch, scoring it), each per question, in this process
    python benchmarks/bench_eval_scale.py floor --questions Q --scene-graphs SG [--rounds 3]

Copy ``k`` of a question gets the id ``{id}~{k}`` (copy 0 keeps its id); its ``entailed`` and
``equivalent`` ids get the same suffix, so consistency is measured within each copy.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path


def make(source: Path, count: int, out: Path) -> int:
    """Write ``count`` questions: the source's, again and again, under new ids; returns how many."""
    from nablafol.data.json_stream import iter_object_members
    written = 0
    with open(out, "w", encoding="utf-8") as stream:
        stream.write("{")
        copy = 0
        while written < count:
            before = written
            for question_id, record in iter_object_members(source, expected="{questionId: question}"):
                if written == count:
                    break
                suffix = f"~{copy}" if copy else ""
                if suffix:
                    for key in ("entailed", "equivalent"):
                        if isinstance(record.get(key), list):
                            record[key] = [f"{e}{suffix}" for e in record[key]]
                stream.write(("\n" if not written else ",\n") + json.dumps(question_id + suffix) + ": "
                             + json.dumps(record, ensure_ascii=False))
                written += 1
            if written == before:
                raise SystemExit(f"{source}: holds no questions")
            copy += 1
        stream.write("\n}\n")
    return written


def _tree_pss_mb(root: int) -> float:
    """Proportional set size of ``root`` and every process under it, summed (MB): memory the
    tree really holds, pages shared by forked workers counted once."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, ()))
        try:
            with open(f"/proc/{pid}/smaps_rollup") as rollup:
                total += sum(int(line.split()[1]) for line in rollup if line.startswith("Pss:"))
        except OSError:
            pass
    return total / 1024


def _timed_eval(argv: list[str], kill_after: float | None, logs: Path) -> dict:
    """Run `nablafol eval` under /usr/bin/time -v, its output into ``logs``.stdout/.stderr (to
    follow it while it runs); returns wall seconds, peak RSS of the largest process (MB), peak
    PSS of the whole process tree (MB, sampled every second: workers included), exit code, stdout."""
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "nablafol.cli", "eval", *argv]
    began = time.perf_counter()
    peak_pss = 0.0
    with open(f"{logs}.stdout", "w") as out, open(f"{logs}.stderr", "w") as err:
        child = subprocess.Popen(command, stdout=out, stderr=err, text=True, start_new_session=True)
        while child.poll() is None:
            peak_pss = max(peak_pss, _tree_pss_mb(child.pid))
            if kill_after is not None and time.perf_counter() - began > kill_after:
                os.killpg(child.pid, signal.SIGKILL)  # the whole session: `time` and nablafol under it
                child.wait()
                break
            time.sleep(1.0)
    wall = time.perf_counter() - began
    stdout, stderr = Path(f"{logs}.stdout").read_text(), Path(f"{logs}.stderr").read_text()
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    cpu = [float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", stderr)]
    return {"wall_s": round(wall, 1), "cpu_s": round(sum(cpu), 1) if cpu else None,
            "peak_rss_mb": int(peak.group(1)) // 1024 if peak else None, "peak_tree_pss_mb": round(peak_pss),
            "exit": child.returncode,
            "stdout": stdout, "stderr_tail": stderr[-600:]}


def run(questions: Path, scene_graphs: Path, out: Path, kill_after: float | None, extra: list[str]) -> None:
    from nablafol.pipeline.journal import EvalJournal, journal_path
    out.mkdir(parents=True, exist_ok=True)
    argv = ["--questions", str(questions), "--scene-graphs", str(scene_graphs),
            "--predictions", str(out / "predictions.json"), *extra]
    first = _timed_eval(argv, kill_after, out / "run1")
    print(json.dumps({k: v for k, v in first.items() if k != "stderr_tail"}, indent=1))
    if kill_after is None:
        return
    journal = journal_path(out / "predictions.json")
    header = json.loads(journal.read_text(encoding="utf-8").split("\n", 1)[0])
    committed = EvalJournal.resume(journal, header["settings"]).done
    print(f"killed after {kill_after} s; the journal holds {committed:,} finished questions")
    second = _timed_eval(argv + ["--resume"], None, out / "run2")
    print(json.dumps({k: v for k, v in second.items() if k != "stderr_tail"}, indent=1))
    found = re.search(r"([\d,]+) done in this run, ([\d,]+) read from the journal", second["stdout"])
    if found is None:
        raise SystemExit("the resumed run did not say what it did: " + second["stderr_tail"])
    done_now, replayed = (int(g.replace(",", "")) for g in found.groups())
    print(f"resumed: {replayed:,} read from the journal (committed before the kill: {committed:,}), "
          f"{done_now:,} answered in the resumed run; nothing redone: {replayed == committed}")


def phases(eval_argv: list[str]) -> None:
    """Run `nablafol eval` in this process with a timer around each phase; print each phase's CPU
    seconds (the thread's that ran it: the next batch is planned in a background thread) and its
    share of the process's CPU. Indented phases are parts of the one above them. Run on a set and
    on its first half, the differences over the questions between are each phase's marginal."""
    from collections import defaultdict
    import nablafol.engine as engine
    import nablafol.pipeline.answering as answering
    import nablafol.pipeline.evaluation as evaluation
    import nablafol.pipeline.perception as perception
    from nablafol.cli import main as cli_main
    from nablafol.pipeline.journal import EvalJournal
    from nablafol.scoring import Scorer
    spent: dict[str, float] = defaultdict(float)
    labels: list[str] = []  # in the order they print

    def timed(owner, name: str, label: str) -> None:
        original = getattr(owner, name)
        labels.append(label)

        def wrapper(*args, **kwargs):
            began = time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                spent[label] += time.thread_time() - began
        setattr(owner, name, wrapper)

    def timed_stream(owner, name: str, label: str) -> None:  # a generator: the time of each item it yields
        original = getattr(owner, name)
        labels.append(label)

        def wrapper(*args, **kwargs):
            items = iter(original(*args, **kwargs))
            while True:
                began = time.thread_time()
                item = next(items, _END)
                spent[label] += time.thread_time() - began
                if item is _END:
                    return
                yield item
        setattr(owner, name, wrapper)

    timed(evaluation, "_answerer", "set up (reads the scene graphs)")
    timed_stream(evaluation, "_questions", "read questions (JSON -> Question)")
    timed(answering, "compile_question", "compile (parse + translate, cached)")
    timed(answering.Answerer, "_unknown_predicate", "check the predicates are known")
    timed(answering.Answerer, "_planned", "plan a batch")
    timed(perception.SceneGraphPerception, "oracle", "  the perception's oracle")
    timed(engine.Engine, "plan_for", "  engine: plan_for")
    timed_stream(answering.Answerer, "_answer", "answer a batch (engine and outcomes)")
    timed(engine.Engine, "tables", "  engine: tables (ask the oracle)")
    timed(engine.Engine, "execute", "  engine: execute")
    timed(Scorer, "update", "score")
    timed(EvalJournal, "commit", "journal commits (fsync)")
    timed(evaluation, "write_predictions", "write the predictions from the journal")
    began = time.process_time()
    code = cli_main(["eval", *eval_argv])
    total = time.process_time() - began
    for label in labels:
        print(f"{label:45s} {spent[label]:8.3f} s {100 * spent[label] / total:5.1f}%")
    print(f"{'whole command (process CPU)':45s} {total:8.3f} s (exit {code})")


_END = object()


def _child_cpu(command: list[str]) -> float:
    """CPU seconds (user + system) of one run of ``command``, as the kernel counts the reaped child."""
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:4])} ... failed: {done.stderr[-600:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


_DECODE = "import json, sys; json.load(open(sys.argv[1], encoding='utf-8'))"


def marginal(questions: Path, scene_graphs: Path, rounds: int, extra: list[str]) -> dict:
    """The marginal CPU time per question of ``nablafol eval`` and of decoding the questions' JSON
    alone: each run on the questions file and on its first half (both written again alike, over
    the same scene graphs), the four commands in turn, ``rounds`` times; a round's marginal is
    (whole - half) / the questions between them, and the medians of the rounds are given."""
    import statistics
    import tempfile
    items = list(json.loads(questions.read_text(encoding="utf-8")).items())
    sizes = {"whole": len(items), "half": len(items) // 2}
    with tempfile.TemporaryDirectory() as scratch:
        commands = {}
        for name, size in sizes.items():
            path = Path(scratch) / f"{name}.json"
            path.write_text(json.dumps(dict(items[:size]), ensure_ascii=False), encoding="utf-8")
            commands["eval", name] = [sys.executable, "-m", "nablafol.cli", "eval", "--questions", str(path),
                                      "--scene-graphs", str(scene_graphs),
                                      "--predictions", str(Path(scratch) / f"{name}-predictions.json"), *extra]
            commands["json", name] = [sys.executable, "-c", _DECODE, str(path)]
        cpu: dict = {key: [] for key in commands}
        for _ in range(rounds):
            for key, command in commands.items():
                cpu[key].append(_child_cpu(command))
    between = sizes["whole"] - sizes["half"]
    result = {"questions": sizes, "rounds": rounds}
    for what in ("eval", "json"):
        per_round = [(w - h) / between * 1e6 for w, h in zip(cpu[what, "whole"], cpu[what, "half"])]
        result[what] = {"marginal_us": statistics.median(per_round), "per_round_us": [round(m, 1) for m in per_round],
                        "whole_cpu_s": statistics.median(cpu[what, "whole"]),
                        "half_cpu_s": statistics.median(cpu[what, "half"])}
    result["eval_over_json"] = result["eval"]["marginal_us"] / result["json"]["marginal_us"]
    return result


def floor(questions: Path, scene_graphs: Path, rounds: int) -> dict:
    """Per question, in this process (CPU of this thread, the collector off as the command runs
    it; medians of ``rounds``): ``decode``, ``json.load`` of the questions file; ``engine``, the
    engine answering each batch the eval made again with its plan given (planning and compiling
    done), and ``kernels``, the share of it spent inside torch's operators (their self CPU time
    over the whole, both under torch's profiler: the tensor work with no Python around it); ``score``, the scorer updated with every question
    and its prediction. ``floor`` sums the decode, the kernels and the score: the part of a
    question's marginal that no cut in the eval's Python removes."""
    import gc
    import statistics
    import torch
    from torch.profiler import ProfilerActivity, profile
    from nablafol.data import iter_questions
    from nablafol.pipeline.evaluation import EvaluationJob, _answerer
    from nablafol.scoring import Scorer, vocabulary_match
    job = EvaluationJob(questions=questions, predictions=Path("/dev/null"), scene_graphs=scene_graphs)
    answerer = _answerer(job)
    answerer.overlap = False
    batches = []  # (programs, oracle, scenes, plan) of each batch the eval answered
    planned = answerer._planned

    def keep(batch):
        made = planned(batch)
        batches.append(([c.program for _, c in batch], *made))
        return made
    answerer._planned = keep
    gc.disable()
    try:
        read = list(iter_questions(questions))
        outcomes = answerer.answer_chunk(read)
        predictions = [getattr(o, "prediction", None) for o in outcomes]
        answered = sum(1 for o in outcomes if hasattr(o, "prediction"))
        n = len(read)
        measured: dict = {"decode": [], "engine": [], "kernels": [], "score": []}
        if not batches:
            raise SystemExit(f"{questions}: no question was answered")
        with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]):  # the profiler's own first start
            answerer.engine(*batches[0][:3], plan=batches[0][3])
        for _ in range(rounds):
            began = time.thread_time()
            with open(questions, encoding="utf-8") as stream:
                json.load(stream)
            measured["decode"].append((time.thread_time() - began) / n)
            began = time.thread_time()
            with torch.no_grad():
                for programs, oracle, scenes, plan in batches:
                    answerer.engine(programs, oracle, scenes, plan=plan)
            measured["engine"].append((time.thread_time() - began) / answered)
            began = time.perf_counter()  # the profiler times its operators by the wall clock: so is their whole
            with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as profiler:
                for programs, oracle, scenes, plan in batches:
                    answerer.engine(programs, oracle, scenes, plan=plan)
            profiled = time.perf_counter() - began
            kernels = sum(e.self_cpu_time_total for e in profiler.key_averages() if e.key.startswith("aten::"))
            # the profiler slows every operator: their share of the profiled run, of the unprofiled time
            measured["kernels"].append(min(1.0, kernels / 1e6 / profiled) * measured["engine"][-1])
            scorer = Scorer(vocabulary_match)
            began = time.thread_time()
            for question, prediction in zip(read, predictions):
                if question.answer is not None:
                    scorer.update(question, prediction)
            scorer.compute()
            measured["score"].append((time.thread_time() - began) / n)
    finally:
        gc.enable()
    result = {"questions": n, "answered": answered, "batches": len(batches), "rounds": rounds}
    for what, values in measured.items():
        result[what + "_us"] = round(statistics.median(values) * 1e6, 1)
        result[what + "_range_us"] = [round(min(values) * 1e6, 1), round(max(values) * 1e6, 1)]
    result["floor_us"] = round(result["decode_us"] + result["kernels_us"] + result["score_us"], 1)
    result["floor_over_decode"] = round(result["floor_us"] / result["decode_us"], 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("make", help="write a questions file of --count questions")
    p.add_argument("--source", type=Path, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("run", help="time one eval (and, with --kill-after, kill and resume it)")
    p.add_argument("--questions", type=Path, required=True)
    p.add_argument("--scene-graphs", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--kill-after", type=float)
    sub.add_parser("phases", help="time each phase of one in-process eval (eval options after --)")
    p = sub.add_parser("marginal", help="marginal CPU per question of eval and of decoding the questions' JSON "
                                        "(further eval options after --)")
    p.add_argument("--questions", type=Path, required=True)
    p.add_argument("--scene-graphs", type=Path, required=True)
    p.add_argument("--rounds", type=int, default=5)
    p = sub.add_parser("floor", help="per question: the decode, the engine's torch work in its batch, the score")
    p.add_argument("--questions", type=Path, required=True)
    p.add_argument("--scene-graphs", type=Path, required=True)
    p.add_argument("--rounds", type=int, default=3)
    args, extra = parser.parse_known_args()
    if args.command == "floor":
        print(json.dumps(floor(args.questions, args.scene_graphs, args.rounds), indent=1))
    elif args.command == "marginal":
        print(json.dumps(marginal(args.questions, args.scene_graphs, args.rounds, [a for a in extra if a != "--"]),
                         indent=1))
    elif args.command == "phases":
        phases([a for a in extra if a != "--"])
    elif args.command == "make":
        print(f"{make(args.source, args.count, args.out):,} questions -> {args.out}")
    else:
        run(args.questions, args.scene_graphs, args.out, args.kill_after, extra)


if __name__ == "__main__":
    main()
