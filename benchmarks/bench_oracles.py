"""SceneGraphOracle at GQA scale: building a batch, then answering its requests.

    python benchmarks/bench_oracles.py                   # plain scene graphs
    python benchmarks/bench_oracles.py --probabilistic   # names / attributes / relations with p

A synthetic batch like one `nablafol eval` batch of ~1,000 GQA questions: 100 scenes of
15-25 objects (GQA classes, attribute values and relations drawn at random), 200,000
distinct unary requests (100 scenes x 2,000 predicates: every `class` candidate of
`query name`, categories, attribute values, positions) and 5,000 binary requests (100
scenes x 50 predicates: relations, every comparative, `same` of 4 types). Times are the
median of `--repeat` runs; "per question" divides a batch's total by 1,000 questions, and the
GQA validation line extrapolates to 132k questions (132 such batches).
"""
from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np
import torch

from nablafol.dsl import Ontology
from nablafol.data import scene_graph_from_record
from nablafol.ir import Predicate
from nablafol.oracle import Requests
from nablafol.graph_oracles import COMPARATIVES, SceneGraphOracle


def random_graph(rng: np.random.Generator, image_id: str, classes, values, relations, probabilistic: bool):
    n = int(rng.integers(15, 26))
    ids = [f"{image_id}{i:03d}" for i in range(n)]
    objects = {}
    for oid in ids:
        x, y = rng.integers(0, 500, 2)
        w, h = rng.integers(5, 300, 2)
        rels = []
        for _ in range(int(rng.integers(0, 4))):
            rel = {"name": str(rng.choice(relations)), "object": str(rng.choice(ids))}
            if probabilistic:
                rel["p"] = float(rng.random())
            rels.append(rel)
        attrs = [str(v) for v in rng.choice(values, size=int(rng.integers(0, 4)), replace=False)]
        obj = {"x": int(x), "y": int(y), "w": int(w), "h": int(h), "relations": rels}
        if probabilistic:
            names = rng.choice(classes, size=3, replace=False)
            obj["names"] = {str(c): float(p) for c, p in zip(names, rng.dirichlet(np.ones(3)))}
            obj["attributes"] = {a: float(rng.random()) for a in attrs}
        else:
            obj["name"] = str(rng.choice(classes))
            obj["attributes"] = attrs
        objects[oid] = obj
    record = {"width": 640, "height": 480, "location": "indoors", "weather": "sunny", "objects": objects}
    return scene_graph_from_record(image_id, record)


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenes", type=int, default=100)
    parser.add_argument("--unary-predicates", type=int, default=2000)
    parser.add_argument("--binary-predicates", type=int, default=50)
    parser.add_argument("--probabilistic", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))

    rng = np.random.default_rng(args.seed)
    gqa = Ontology.gqa()
    classes = sorted(gqa.classes)
    values = sorted(set().union(*gqa.attribute_types.values()))
    relations = sorted(gqa.relations)
    graphs = [random_graph(rng, str(b), classes, values, relations, args.probabilistic) for b in range(args.scenes)]
    SceneGraphOracle(graphs[:1], gqa)  # builds the vocabulary columns once (cached per ontology)

    unary_pool = ([Predicate(c, kind="class") for c in classes]
                  + [Predicate(c, kind="name") for c in sorted(gqa.categories)]
                  + [Predicate(c, kind="name") for c in classes]
                  + [Predicate(v, kind="attr") for v in values]
                  + [Predicate(v, kind="hposition") for v in ("left", "middle", "right")]
                  + [Predicate(v, kind="vposition") for v in ("top", "middle", "bottom")])
    unary_pool = unary_pool[:1285] + unary_pool[-(len(values) + 6):] + unary_pool[1285:-(len(values) + 6)]
    unary_preds = unary_pool[: args.unary_predicates]
    binary_preds = ([Predicate(c, 2, "compare") for c in COMPARATIVES]
                    + [Predicate(t, 2, "same") for t in ("color", "material", "shape", "hposition")])
    binary_preds += [Predicate(r, 2, "rel") for r in relations[: max(0, args.binary_predicates - len(binary_preds))]]

    def requests(preds):
        scene = np.repeat(np.arange(args.scenes), len(preds))
        pred = np.tile(np.arange(len(preds)), args.scenes)
        order = rng.permutation(len(scene))  # the engine's order is arbitrary
        return Requests(torch.as_tensor(scene[order]), torch.as_tensor(pred[order]), tuple(preds))

    u_req, b_req = requests(unary_preds), requests(binary_preds)
    t_build, oracle = timed(lambda: SceneGraphOracle(graphs, gqa), args.repeat)
    t_unary, u_out = timed(lambda: oracle.unary(u_req), args.repeat)
    t_binary, b_out = timed(lambda: oracle.binary(b_req), args.repeat)
    total = t_build + t_unary + t_binary

    n_objects = oracle.num_objects
    print(f"# bench_oracles — {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {'probabilistic' if args.probabilistic else 'plain'} scene graphs")
    print(f"batch: {args.scenes} scenes of {int(n_objects.min())}-{int(n_objects.max())} objects (incl. the scene), "
          f"{len(u_req):,} unary requests over {len(unary_preds):,} predicates, "
          f"{len(b_req):,} binary over {len(binary_preds)}")
    print(f"build oracle       {t_build * 1e3:8.1f} ms")
    print(f"unary  {tuple(u_out.shape)!s:>16} {t_unary * 1e3:8.1f} ms   ({len(u_req) / t_unary / 1e6:.2f} M requests/s)")
    print(f"binary {tuple(b_out.shape)!s:>16} {t_binary * 1e3:8.1f} ms")
    print(f"batch total        {total * 1e3:8.1f} ms   -> GQA validation (132 such batches): {total * 132:.1f} s of oracle time")


if __name__ == "__main__":
    main()
