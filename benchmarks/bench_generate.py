"""How long the embedded dataset takes to generate, stage by stage, and how big it is.

    python benchmarks/bench_generate.py                 # the default sizes (1,500 / 300 / 300 scenes)
    python benchmarks/bench_generate.py --train 300 --val 60 --testdev 60
    python benchmarks/bench_generate.py --keep out/     # keep the files

Times the whole `generate_dataset` call and, from its progress callback, the scene and
question stage and the feature stage; then reports the files' sizes, the questions per
scene and the yes/no balance.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nablafol.synthetic import generate_dataset  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=1500)
    parser.add_argument("--val", type=int, default=300)
    parser.add_argument("--testdev", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--feature-dim", type=int, default=64)
    parser.add_argument("--keep", type=Path, default=None, help="write here and keep the files")
    args = parser.parse_args(argv)

    stages: dict[str, float] = {}
    start = time.perf_counter()

    def progress(done: int, total: int, stage: str) -> None:
        key = "features" if stage == "features" else "scenes and questions"
        stages[key] = time.perf_counter() - start

    with tempfile.TemporaryDirectory() as scratch:
        out = args.keep or Path(scratch)
        summary = generate_dataset(out, n_train=args.train, n_val=args.val, n_testdev=args.testdev, seed=args.seed,
                                   feature_dim=args.feature_dim, progress=progress)
        total = time.perf_counter() - start
        scenes = sum(summary.scenes.values())
        questions = sum(summary.questions.values())
        print(f"{scenes:,} scenes, {questions:,} questions ({questions / scenes:.1f} per scene) in {total:.1f} s")
        first = stages.get("scenes and questions", total)
        print(f"  scenes + questions  {first:6.1f} s  ({scenes / first:,.0f} scenes/s)")
        print(f"  features + files    {total - first:6.1f} s")
        card = json.loads((out / "dataset_card.json").read_text())
        for split, info in card["splits"].items():
            print(f"  {split:<8} {info['scenes']:>6,} scenes {info['questions']:>7,} questions "
                  f"yes {info['yes']:,} / no {info['no']:,}")
        for name in summary.files:
            print(f"  {name:<36} {(out / name).stat().st_size / 1e6:8.2f} MB")


if __name__ == "__main__":
    main()
