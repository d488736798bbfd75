"""The semantic parser on the embedded dataset: training time, reading speed, and how well it
reads (exact match, execution accuracy with the golden oracle) on validation and test-dev.

    python -m benchmarks.bench_parser                  # the demo's sizes: 1,500 / 300 / 300 scenes
    python -m benchmarks.bench_parser --train 400 --val 100 --testdev 100 --epochs 2
    python -m benchmarks.bench_parser --json out/parser.json

The dataset is built in memory and its questions and scene graphs written to a scratch folder
(no features: the parser reads only text). `nablafol generate` writes no test-dev scene graphs,
as GQA ships none; here they are written from the same seeded build, so execution accuracy can
be measured on test-dev too. Training runs on one torch thread (`--threads`); the time is
reported as wall-clock and as this process's CPU time (the machine is shared: the CPU time is
the steadier figure).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from nablafol.asking import evaluate_parser  # noqa: E402
from nablafol.data import load_questions, write_questions, write_scene_graphs  # noqa: E402
from nablafol.semantic_parser import TrainingSettings, train_parser  # noqa: E402
from nablafol.synthetic import build_dataset  # noqa: E402


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=1500)
    parser.add_argument("--val", type=int, default=300)
    parser.add_argument("--testdev", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0, help="the dataset's seed")
    parser.add_argument("--parser-seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=TrainingSettings().epochs)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    dataset = build_dataset(args.train, args.val, args.testdev, args.seed)
    figures: dict = {"sizes": {s: len(q) for s, q in dataset.questions.items()}}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for split, questions in dataset.questions.items():
            write_questions(folder / f"{split}_questions.json", questions)
            write_scene_graphs(folder / f"{split}_sceneGraphs.json", dataset.scenes[split])
        train = list(load_questions(folder / "train_questions.json").values())

        wall, cpu = time.perf_counter(), time.process_time()
        result = train_parser(train, settings=TrainingSettings(epochs=args.epochs, seed=args.parser_seed))
        figures["train"] = {"questions": result.examples, "epochs": args.epochs,
                            "wall_s": round(time.perf_counter() - wall, 1), "cpu_s": round(time.process_time() - cpu, 1)}
        print(f"trained on {result.examples:,} questions, {args.epochs} epochs: {figures['train']['wall_s']} s wall, "
              f"{figures['train']['cpu_s']} s CPU")

        for split in ("val", "testdev"):
            questions = list(load_questions(folder / f"{split}_questions.json").values())
            if not questions:
                continue
            start = time.perf_counter()
            result_split = evaluate_parser(result.parser, questions, scene_graphs=folder / f"{split}_sceneGraphs.json")
            seconds = time.perf_counter() - start
            start = time.perf_counter()
            result.parser.parse_many([q.question for q in questions])
            reading = time.perf_counter() - start
            figures[split] = {**{k: v for k, v in result_split.to_dict().items() if k != "mistakes"},
                              "read_questions_per_s": round(len(questions) / reading), "eval_s": round(seconds, 1)}
            print(f"{split}: " + "; ".join(result_split.lines()[1:]) + f"; reads {len(questions) / reading:,.0f} "
                  f"questions/s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return figures


if __name__ == "__main__":
    main()
