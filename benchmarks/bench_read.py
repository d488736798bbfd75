"""Peak memory and time of the GQA readers on files the size of GQA's validation split.

Generates (once, in a temporary folder) a ``val_all``-sized questions file of 132,062
realistic records (~1 KB each, every field GQA writes) and 10,696 scene graphs, then
measures each reader in a fresh process (peak RSS from ``getrusage``, so one measurement
never inherits another's high-water mark):

    python benchmarks/bench_read.py            # full size
    python benchmarks/bench_read.py --questions 20000 --images 2000   # quicker
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_NAMES = ["man", "woman", "table", "chair", "shirt", "tree", "car", "window", "horse",
          "coffee table", "surfboard", "wall", "sky", "grass", "building", "plate", "dog"]
_ATTRIBUTES = ["white", "black", "blue", "wooden", "metal", "large", "small", "standing",
               "green", "red", "tall", "young", "sitting", "brown", "open"]
_RELATIONS = ["on", "to the left of", "to the right of", "wearing", "holding", "near",
              "behind", "in front of", "riding", "on top of"]


def _object_id(rng: random.Random) -> str:
    return str(rng.randrange(1_000_000, 4_000_000))


def make_question(rng: random.Random, index: int) -> tuple[str, dict]:
    """One question in GQA's exact layout, about 1 KB of JSON like a real record."""
    question_id = f"{20_000_000 + index:08d}"
    image = f"{2_300_000 + index // 12}"
    name, other = rng.sample(_NAMES, 2)
    relation = rng.choice(_RELATIONS)
    attribute = rng.choice(_ATTRIBUTES)
    a, b = _object_id(rng), _object_id(rng)
    steps = [
        {"operation": "select", "dependencies": [], "argument": f"{name} ({a})"},
        {"operation": "filter color", "dependencies": [0], "argument": attribute},
        {"operation": "relate", "dependencies": [1], "argument": f"{other},{relation},s ({b})"},
        {"operation": "query", "dependencies": [2], "argument": "name"},
    ]
    semantic_str = (f"select: {name} ({a})->filter color: {attribute} [0]->"
                    f"relate: {other},{relation},s ({b}) [1]->query: name [2]")
    record = {
        "semantic": steps,
        "entailed": [f"{20_000_000 + index + k:08d}" for k in (1, 2, 3, 5, 8)],
        "equivalent": [question_id, f"{20_000_000 + index + 4:08d}"],
        "question": f"What is the {other} that is {relation} the {attribute} {name}?",
        "imageId": image,
        "isBalanced": rng.random() < 0.1,
        "groups": {"global": "thing", "local": f"14-{name}_{relation},s"},
        "answer": other,
        "semanticStr": semantic_str,
        "annotations": {"answer": {"0": b}, "question": {"4": b, "9:11": a},
                        "fullAnswer": {"1": b, "6:8": a}},
        "types": {"detailed": "relS", "semantic": "rel", "structural": "query"},
        "fullAnswer": f"The {other} is {relation} the {attribute} {name}.",
    }
    return question_id, record


def make_scene_graph(rng: random.Random, index: int) -> tuple[str, dict]:
    """One scene graph in GQA's layout: ~17 objects, ~3 attributes and ~5 relations each."""
    ids = [_object_id(rng) + f"{k:02d}" for k in range(rng.randrange(8, 27))]
    objects = {}
    for object_id in ids:
        x, y = rng.randrange(0, 400), rng.randrange(0, 300)
        objects[object_id] = {
            "name": rng.choice(_NAMES),
            "x": x, "y": y, "w": rng.randrange(1, 100), "h": rng.randrange(1, 100),
            "attributes": rng.sample(_ATTRIBUTES, rng.randrange(0, 4)),
            "relations": [{"name": rng.choice(_RELATIONS), "object": rng.choice(ids)}
                          for _ in range(rng.randrange(0, 10))],
        }
    return f"{2_300_000 + index}", {"width": 500, "height": 375, "objects": objects}


def write_object_file(path: Path, members) -> int:
    """Write ``{key: value, ...}`` member by member (never the whole dict in memory)."""
    with open(path, "w", encoding="utf-8") as stream:
        stream.write("{")
        for count, (key, value) in enumerate(members):
            stream.write(("" if count == 0 else ", ") + json.dumps(key) + ": " + json.dumps(value))
        stream.write("}")
    return path.stat().st_size


def _measure(mode: str, path: str) -> dict:
    """Run in a fresh process: read ``path`` one way and report peak RSS and time."""
    start = time.perf_counter()
    if mode == "json.load (baseline)":
        with open(path, encoding="utf-8") as stream:
            count = len(json.load(stream))
    elif mode == "iter_questions":
        from nablafol.data import iter_questions
        count = sum(1 for _ in iter_questions(path))
    elif mode == "load_questions":
        from nablafol.data import load_questions
        count = len(load_questions(path))
    elif mode == "load_scene_graphs":
        from nablafol.data import load_scene_graphs
        count = len(load_scene_graphs(path))
    else:
        raise ValueError(mode)
    seconds = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"mode": mode, "count": count, "seconds": round(seconds, 2), "peak_rss_mib": round(peak_mib)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=132_062)
    parser.add_argument("--images", type=int, default=10_696)
    parser.add_argument("--baseline", action="store_true", help="also measure plain json.load")
    parser.add_argument("--measure", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(_measure(*args.measure)))
        return
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as folder:
        questions = Path(folder) / "val_all_questions.json"
        scene_graphs = Path(folder) / "val_sceneGraphs.json"
        size_q = write_object_file(questions, (make_question(rng, i) for i in range(args.questions)))
        size_sg = write_object_file(scene_graphs, (make_scene_graph(rng, i) for i in range(args.images)))
        print(f"{questions.name}: {args.questions} questions, {size_q / 2**20:.0f} MiB; "
              f"{scene_graphs.name}: {args.images} images, {size_sg / 2**20:.0f} MiB")
        runs = [("iter_questions", questions), ("load_questions", questions),
                ("load_scene_graphs", scene_graphs)]
        if args.baseline:
            runs.insert(0, ("json.load (baseline)", questions))
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        for mode, path in runs:
            output = subprocess.run([sys.executable, __file__, "--measure", mode, str(path)],
                                    check=True, capture_output=True, text=True, env=env).stdout
            result = json.loads(output)
            print(f"{result['mode']:>22}: {result['count']:>7} records  {result['seconds']:>6.2f} s  "
                  f"peak RSS {result['peak_rss_mib']:>5} MiB")


if __name__ == "__main__":
    main()
