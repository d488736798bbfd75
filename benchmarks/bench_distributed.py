"""Training throughput on several processes: how it scales, and why not further.

    python -m benchmarks.bench_distributed [--data DATASET] [--steps 30] [--batch 64] [--processes 2]

Three runs of the same training (the neural oracle at its default sizes, every program length,
global batch ``--batch``), each ``--steps`` optimizer steps timed after 5 warm-up steps:

* ``one``: one process, one shard (an unsplit run);
* ``independent``: ``--processes`` unsplit trainings side by side, no process group: what the
  machine gives that many processes when they never wait for each other;
* ``split``: ``--processes`` processes of one run (gloo, DistributedDataParallel, one shard
  each, ``batch / processes`` questions per process and step);
* ``allreduce``: the exchange alone: ``--processes`` processes all-reducing a float32 tensor
  of the model's size (its gradients) 20 times over gloo; the median time.

Throughput is global-batch questions per second (for ``independent``: the sum of the
processes'). Each process's CPU time over the timed steps gives the share of a core it had (CPU
/ wall) and its CPU milliseconds per global question; ``one``'s over ``split``'s (the busiest
process) estimates the scaling with a free core per process, whatever the load now (an estimate:
it leaves out the waiting for the slower process at each step). ``split / one`` is the scaling;
``independent / one`` is its ceiling on this machine as it is now; ``split / independent`` is
what the exchanges themselves cost (gradient all-reduce, the agreed step totals, waiting for the
slower process). Peak memory is each process's maximum resident set. Without ``--data`` a
dataset of 300 training scenes is made in a temporary folder.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import socket
import tempfile
import time
from pathlib import Path

WARMUP = 5
PRELOAD = ["torch", "torch.distributed", "nablafol.pipeline.oracle_training", "nablafol.pipeline.distributed"]


class _Enough(Exception):
    """Raised by the timing callback once the timed steps are done."""


def _train(rank: int, world: int, port: int, data: str, out: str, batch: int, steps: int, split: bool, results):
    import torch
    torch.set_num_threads(1)
    if split:
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(port))
    from nablafol.pipeline.datasets import DatasetFiles, dataset_files
    from nablafol.pipeline.distributed import Launch
    from nablafol.pipeline.oracle_training import TrainConfig, TrainingJob, train_oracle
    files = dataset_files(data)
    files = DatasetFiles(files.train_questions, files.features, None, files.ontology)  # no validation pass
    times, cpu = [], []

    def timing(event) -> None:
        if event.kind == "step":
            times.append(time.perf_counter())
            cpu.append(time.process_time())  # every thread of the process (gloo's too)
            if event.step == WARMUP + steps:
                raise _Enough

    config = TrainConfig(epochs=1, batch_size=batch, curriculum_start=100, checkpoint_every=0, checkpoint_seconds=0)
    job = TrainingJob(files, Path(out) / f"model{rank}", config, launch=Launch.from_environment() if split else None,
                      callbacks=[timing])
    try:
        train_oracle(job, log=lambda *_: None)
    except _Enough:
        pass
    seconds = times[WARMUP + steps - 1] - times[WARMUP - 1]
    # split: the run's global batches per second (every process steps with the others)
    results.put({"rank": rank, "questions_per_s": batch * steps / seconds,
                 "cpu_s": cpu[WARMUP + steps - 1] - cpu[WARMUP - 1], "wall_s": seconds,
                 "questions": batch * steps, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})


def _allreduce(rank: int, world: int, port: int, parameters: int, results) -> None:
    import statistics

    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    tensor, times = torch.ones(parameters), []
    for _ in range(25):
        start = time.perf_counter()
        dist.all_reduce(tensor)
        times.append(time.perf_counter() - start)
    dist.destroy_process_group()
    results.put({"rank": rank, "ms": 1000 * statistics.median(times[5:])})


def _parameters(data: str) -> int:
    """The parameter count of the neural oracle the training builds (default sizes) for ``data``."""
    from nablafol.data import FeatureStore
    from nablafol.dsl import Ontology
    from nablafol.neural import ConceptVocabulary, NeuralOracleModel
    from nablafol.pipeline.datasets import dataset_files
    files = dataset_files(data)
    ontology = Ontology.gqa() if files.ontology is None else Ontology.from_folder(files.ontology)
    store = FeatureStore(files.features)
    width = store[store.image_ids()[0]].features.shape[1]
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(ontology), feature_dim=width)
    return sum(p.numel() for p in model.parameters())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(mode: str, processes: int, data: str, out: str, batch: int, steps: int) -> dict:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    world = 1 if mode == "one" else processes
    results, port = ctx.Queue(), _free_port()
    if mode == "allreduce":
        parameters = _parameters(data)
        children = [ctx.Process(target=_allreduce, args=(rank, world, port, parameters, results))
                    for rank in range(world)]
        for child in children:
            child.start()
        for child in children:
            child.join()
        got = [results.get() for _ in children]
        return {"mode": mode, "processes": world, "parameters": parameters, "ms": max(r["ms"] for r in got)}
    children = [ctx.Process(target=_train, args=(rank, world, port, data, out, batch, steps, mode == "split", results))
                for rank in range(world)]
    for child in children:
        child.start()
    for child in children:
        child.join()
    got = sorted((results.get() for _ in children), key=lambda r: r["rank"])
    # independent: the processes' rates add up; split: one run, rank 0 tells its rate
    total = got[0]["questions_per_s"] if mode == "split" else sum(r["questions_per_s"] for r in got)
    return {"mode": mode, "processes": world, "questions_per_s": total,
            "peak_mb": [round(r["peak_mb"]) for r in got],
            # the share of a core each process had, and its CPU time per question it stepped over:
            # with a core to itself and no waiting, a run goes as fast as its busiest process
            "core_share": [r["cpu_s"] / r["wall_s"] for r in got],
            "cpu_ms_per_question": max(1000 * r["cpu_s"] / r["questions"] for r in got)}


MODES = ("one", "independent", "split", "allreduce")


def run(data: str | None = None, steps: int = 30, batch: int = 64, processes: int = 2, modes=MODES) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        if data is None:
            from nablafol.synthetic import generate_dataset
            data = str(Path(scratch) / "data")
            generate_dataset(data, n_train=300, n_val=0, n_testdev=0, seed=0)
        load = os.getloadavg()
        rows = [_run(mode, processes, data, scratch, batch, steps) for mode in modes]
    by = {r["mode"]: r["questions_per_s"] for r in rows if "questions_per_s" in r}
    out = {"rows": rows, "batch": batch, "steps": steps, "cores": os.cpu_count(), "load_before": load}
    if {"one", "split"} <= by.keys():
        out["scaling"] = by["split"] / by["one"]
    if {"one", "independent"} <= by.keys():
        out["ceiling"] = by["independent"] / by["one"]
    if {"independent", "split"} <= by.keys():
        out["exchange_cost"] = 1 - by["split"] / by["independent"]
    cpu = {r["mode"]: r["cpu_ms_per_question"] for r in rows if "cpu_ms_per_question" in r}
    if {"one", "split"} <= cpu.keys():
        out["cpu_bound_scaling"] = cpu["one"] / cpu["split"]
    reduce = next((r for r in rows if r["mode"] == "allreduce"), None)
    if reduce is not None and "split" in by:
        step_ms = 1000 * batch / by["split"]
        out["allreduce_share"] = reduce["ms"] / step_ms
    return out


def report(r: dict) -> list[str]:
    lines = [f"{r['steps']} steps of global batch {r['batch']} after {WARMUP} warm-up steps, {r['cores']} cores, "
             f"load average {r['load_before'][0]:.1f}"]
    for row in r["rows"]:
        if row["mode"] == "allreduce":
            lines.append(f"  allreduce    {row['processes']} process(es): {row['ms']:.1f} ms for {row['parameters']:,} "
                         f"float32 numbers (the gradients)")
            continue
        lines.append(f"  {row['mode']:<12} {row['processes']} process(es): {row['questions_per_s']:8.1f} questions/s, "
                     f"peak memory per process {', '.join(f'{m} MB' for m in row['peak_mb'])}, "
                     f"core share {', '.join(f'{100 * c:.0f}%' for c in row['core_share'])}, "
                     f"CPU {row['cpu_ms_per_question']:.2f} ms per global question (busiest process)")
    if "scaling" in r:
        lines.append(f"scaling (split / one) {r['scaling']:.2f}x")
    if "ceiling" in r:
        lines.append(f"ceiling on this machine now (independent / one) {r['ceiling']:.2f}x")
    if "cpu_bound_scaling" in r:
        lines.append(f"scaling with a free core per process, from CPU time (one / split CPU per question; an estimate "
                     f"that ignores waiting): {r['cpu_bound_scaling']:.2f}x")
    if "exchange_cost" in r:
        lines.append(f"the exchanges cost {100 * r['exchange_cost']:.0f}% of the independent rate")
    if "allreduce_share" in r:
        lines.append(f"the gradient all-reduce alone is {100 * r['allreduce_share']:.0f}% of a split step")
    return lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="a dataset folder (default: 300 training scenes, made here)")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    args = ap.parse_args(argv)
    print("\n".join(report(run(args.data, args.steps, args.batch, args.processes, args.modes))))


if __name__ == "__main__":
    main()
