"""The fast path's approximation, measured: error against exact values, and what exactness costs.

GQA programs of every family whose grounding repeats atoms (relate and verify-rel chains, two
hops, and/or over the same objects, one- and two-input same/different, common, query after a
relate) are compiled by the project's compiler and answered over random *probabilistic* scene
graphs of N objects (GQA's format with ``names`` / ``attributes`` dicts and relation ``p``,
read by the golden scene-graph oracle): every listed fact is an independent coin.

For each family and N the suite reports, over the answers exact mode computes within its
budget, the fast path's absolute error against the exact value (mean, median, max; an open
question's error is its largest over candidates), the share of answers that flip (yes/no
across 0.5, or another argmax), the share the fast path itself flags exact (and that the flag
is sound: a flagged answer's error is at most 1e-6), and the number of shared uncertain atoms
exact mode conditions on. One-input ``same`` is also answered with the paper's formula
(``1 - Π_v A_∃(X ⊙ Neg[Filter_v[1]])``), to compare with the formulation that replaced it.

Timings: exact mode against the fast path (both batched, this run), at small N and on GQA-size
scenes whose facts are mostly certain (few shared uncertain atoms: the case the 10x aim is
about); ProbLog per question on a sample, whose answers exact mode must equal to 1e-6.

    python -m benchmarks.bench_exact [--quick]
"""
from __future__ import annotations

import time

import numpy as np
import torch

from nablafol.compiler import Compiler
from nablafol.data.scene_graphs import scene_graph_from_record
from nablafol.engine import Engine
from nablafol.graph_oracles import SceneGraphOracle
from nablafol.ir import AllOf, AggregateEach, AllSame, Not, Program, Quantifier
from nablafol.oracle import Requests

from .bench_problog import _backend, _problog_timed
from .suite_cli import suite_main

NAMES = ["chair", "table", "man", "woman", "car", "dog", "cup", "plate", "shirt", "bag"]
COLORS = ["red", "blue", "white", "black", "green", "brown"]
MATERIALS = ["wood", "metal", "plastic", "glass"]
RELATIONS = ["on", "near", "behind", "holding"]
LEFT = "to the left of"  # GQA stores spatial relations densely: every pair of objects apart

# family -> GQA program templates (A, B names; C a colour; R, R2 relations); all repeat atoms
FAMILIES = {
    "relate": ["select: {A}->relate: {B},{R},s [0]->exist: ? [1]",
               "select: {A}->relate: _,to the left of,o [0]->exist: ? [1]"],
    "verify rel after relate": ["select: {A}->relate: _,{R},o [0]->verify rel: {B},{R2},s [1]"],
    "two hops": ["select: {A}->relate: _,{R},o [0]->relate: {B},{R2},s [1]->exist: ? [2]",
                 "select: {A}->relate: _,to the left of,o [0]->relate: {B},{R},s [1]->exist: ? [2]"],
    "and/or, same objects": [
        "select: {A}->exist: ? [0]->select: {A}->filter color: {C} [2]->exist: ? [3]->and:  [1, 4]",
        "select: {A}->filter color: {C} [0]->exist: ? [1]->select: {A}->filter color: not({C}) [3]->exist: ? [4]"
        "->or:  [2, 5]"],
    "same (one input)": ["select: {A}->same: color [0]", "select: {A}->different: material [0]"],
    "same (two inputs)": ["select: {A}->select: {B} ->same color:  [0, 1]",
                          "select: {A}->select: {B} ->different material:  [0, 1]"],
    "common (open)": ["select: {A}->select: {B} ->common:  [0, 1]"],
    "query after relate (open)": ["select: {A}->relate: _,{R},s [0]->query: color [1]"],
}
PAPER_SAME = "same (one input), paper's formula"

SIZES = {
    "tiny": dict(sizes=[3], per_family=4, budget=12, gqa_sizes=[8], gqa_batch=16, problog=4, problog_limit_s=5.0),
    "quick": dict(sizes=[3, 5, 8], per_family=24, budget=14, gqa_sizes=[16], gqa_batch=128, problog=12,
                  problog_limit_s=5.0),
    "full": dict(sizes=[3, 5, 8, 12], per_family=64, budget=14, gqa_sizes=[16, 24], gqa_batch=512, problog=40,
                 problog_limit_s=20.0),
}
RELATIONS_PER_OBJECT = 3.0  # on average, as subject (GQA's scene graphs have a few per object)
GQA_UNCERTAIN = 0.04  # share of a GQA-size scene's facts that are uncertain (a confident generator)
FEW_ATOMS = 4  # "few shared uncertain atoms": the 10x aim is stated for programs conditioning on at most this many


def probabilistic_scene(rng: np.random.Generator, image_id: str, n: int, uncertain: float = 1.0):
    """A GQA scene graph of ``n`` objects in the probabilistic format: each fact is uncertain
    (a probability in (0, 1)) with probability ``uncertain``, else certain."""
    def p():
        return round(float(rng.uniform(0.15, 0.95)), 3) if rng.random() < uncertain else 1.0

    objects = {}
    boxes = rng.integers(0, 460, n)  # x of each 40-pixel-wide box: "to the left of" holds for every pair apart
    for i in range(n):
        first, second = rng.choice(NAMES, 2, replace=False)
        q = p()
        names = {str(first): q} if q == 1.0 else {str(first): q, str(second): round(float(rng.uniform(0.05, 1 - q)), 3)}
        attributes = {str(c): p() for c in rng.choice(COLORS, int(rng.integers(1, 3)), replace=False)}
        attributes[str(rng.choice(MATERIALS))] = p()
        relations = [{"name": str(rng.choice(RELATIONS)), "object": str(j), "p": p()}
                     for j in range(n) if j != i and rng.random() < min(1.0, RELATIONS_PER_OBJECT / (n - 1))]
        relations += [{"name": LEFT, "object": str(j), "p": p()} for j in range(n) if boxes[i] + 40 <= boxes[j]]
        objects[str(i)] = {"names": names, "x": int(boxes[i]), "y": int(rng.integers(0, 300)),
                           "w": 40, "h": 40, "attributes": attributes, "relations": relations}
    return scene_graph_from_record(image_id, {"width": 500, "height": 400, "objects": objects})


def questions(rng: np.random.Generator, compiler: Compiler, family: str, count: int, n: int, uncertain: float,
              first_id: int = 0):
    """``count`` (program, scene graph) pairs of one family, each over a fresh scene."""
    templates = FAMILIES[family]
    out = []
    for k in range(count):
        graph = probabilistic_scene(rng, f"img{first_id + k}", n, uncertain)
        present = sorted({name for obj in graph.objects for name in obj.names})
        related = sorted({r.name for obj in graph.objects for r in obj.relations}) or RELATIONS
        a = str(rng.choice(present))  # names and relations the scene has: questions that can be true
        b = str(rng.choice([x for x in present if x != a] or NAMES))
        r, r2 = (str(x) for x in rng.choice(related, 2))
        text = templates[k % len(templates)].format(A=a, B=b, C=rng.choice(COLORS), R=r, R2=r2)
        out.append((compiler.compile_text(text).program, graph))
    return out


def paper_same(program: Program) -> Program:
    """The program with each AllSame written as the paper's ``1 - Π_v A_∃(X ⊙ Neg[Filter_v[1]])``."""
    def rewrite(node):
        if isinstance(node, AllSame):
            return Not(AllOf(AggregateEach(Quantifier.EXISTS, node.predicates, node.input, negate=True)))
        if isinstance(node, Not):
            return Not(rewrite(node.input))
        return node
    return Program(tuple(rewrite(c) for c in program.candidates), program.labels, program.focus)


def _answer(engine, programs, graphs):
    oracle = SceneGraphOracle(graphs)
    with torch.no_grad():
        start = time.perf_counter()
        answers = engine(programs, oracle, np.arange(len(programs)))
        flags = answers.exact.clone()
        seconds = time.perf_counter() - start
    return answers, flags, seconds


def _timed(engine, programs, graphs, repeat: int = 3) -> float:
    """Best of ``repeat`` batched runs, seconds (the first run also warms the engine's caches)."""
    oracle = SceneGraphOracle(graphs)
    scenes = np.arange(len(programs))
    best = float("inf")
    with torch.no_grad():
        engine(programs, oracle, scenes)
        for _ in range(repeat):
            start = time.perf_counter()
            engine(programs, oracle, scenes)
            best = min(best, time.perf_counter() - start)
    return best


def errors(fast, exact, exact_flags, programs) -> tuple[dict, dict]:
    """Per answer computed exactly (by index): the fast path's error, and whether it flips."""
    err, flips = {}, {}
    for i, prog in enumerate(programs):
        if not exact_flags[i]:
            continue
        k = prog.n_candidates
        f, e = fast.probs()[i, :k].double(), exact.probs()[i, :k].double()
        err[i] = float((f - e).abs().max())
        flips[i] = bool((f[0] > 0.5) != (e[0] > 0.5)) if prog.is_yes_no else int(f.argmax()) != int(e.argmax())
    return err, flips


def _summary(err: list, flips: list) -> dict:
    if not err:
        return {"answers": 0}
    a = np.array(err)
    return {"answers": len(err), "mean_abs_error": float(a.mean()), "median_abs_error": float(np.median(a)),
            "max_abs_error": float(a.max()), "flipped": float(np.mean(flips))}


def _tables_of(program, oracle, scene: int) -> dict:
    tables = {}
    for p in program.predicates():
        req = Requests.build([scene], [p])
        t = oracle.unary(req) if p.arity == 1 else oracle.binary(req)
        n = int(oracle.num_objects[scene])
        tables[p] = t[0][(slice(0, n),) * p.arity].exp().double().numpy()
    return tables


def run(size: str = "full", seed: int = 0) -> dict:
    cfg = SIZES[size]
    rng = np.random.default_rng(seed)
    compiler = Compiler()
    fast_engine = Engine(validate=False)
    exact_engine = Engine(validate=False, exact=True, exact_budget=cfg["budget"])
    rows, problog_sample = [], []
    for n in cfg["sizes"]:
        for family in list(FAMILIES) + [PAPER_SAME]:
            base = "same (one input)" if family == PAPER_SAME else family
            pairs = questions(rng, compiler, base, cfg["per_family"], n, 1.0)
            programs = [p for p, _ in pairs]
            if family == PAPER_SAME:
                programs = [paper_same(p) for p in programs]
            graphs = [g for _, g in pairs]
            fast, fast_flags, _ = _answer(fast_engine, programs, graphs)
            exact, exact_flags, _ = _answer(exact_engine, programs, graphs)
            err, flips = errors(fast, exact, exact_flags, programs)
            row = {"family": family, "objects": n, "questions": len(programs),
                   "within_budget": float(exact_flags.float().mean()),
                   "fast_flagged_exact": float(fast_flags.float().mean()),
                   "flagged_max_abs_error": max((e for i, e in err.items() if fast_flags[i]), default=0.0),
                   **_summary(list(err.values()), list(flips.values()))}
            if family != PAPER_SAME:
                row["fast_ms"] = _timed(fast_engine, programs, graphs) / len(programs) * 1e3
                row["exact_ms"] = _timed(exact_engine, programs, graphs) / len(programs) * 1e3
                if n == cfg["sizes"][0]:
                    problog_sample.extend((p, g, float(exact.probs()[i, 0]), bool(exact_flags[i]))
                                          for i, (p, g) in enumerate(zip(programs, graphs))
                                          if p.is_yes_no and len(problog_sample) < cfg["problog"] * 4)
            rows.append(row)
    gqa = _gqa_size(rng, compiler, cfg, fast_engine, exact_engine)
    problog = _against_problog(rng, problog_sample, cfg)
    return {"rows": rows, "gqa_size": gqa, "problog": problog, "budget": cfg["budget"],
            "backend": _backend()}


def _gqa_size(rng, compiler, cfg, fast_engine, exact_engine) -> list:
    """Exact mode's cost against the fast path on GQA-size scenes with mostly certain facts."""
    out = []
    for n in cfg["gqa_sizes"]:
        pairs = []
        for family in FAMILIES:
            pairs.extend(questions(rng, compiler, family, cfg["gqa_batch"] // len(FAMILIES), n, GQA_UNCERTAIN,
                                   first_id=len(pairs)))
        programs, graphs = [p for p, _ in pairs], [g for _, g in pairs]
        count = exact_engine.shared_atoms(programs, SceneGraphOracle(graphs), np.arange(len(programs)))
        few = [i for i in range(len(programs)) if count[i] <= FEW_ATOMS]
        sub_p, sub_g = [programs[i] for i in few], [graphs[i] for i in few]
        t_fast = _timed(fast_engine, sub_p, sub_g)
        t_exact = _timed(exact_engine, sub_p, sub_g)
        out.append({"objects": n, "questions": len(sub_p), "of": len(programs),
                    "shared_atoms_mean": float(count[few].mean()), "shared_atoms_max": int(count[few].max()),
                    "conditioned": float((count[few] > 0).mean()),
                    "fast_ms": t_fast / len(sub_p) * 1e3, "exact_ms": t_exact / len(sub_p) * 1e3,
                    "ratio": t_exact / t_fast})
    return out


def _against_problog(rng, sample, cfg) -> dict:
    """ProbLog's exact answers on a sample of the smallest scenes: exact mode must equal them."""
    diffs, times, timeouts = [], [], 0
    picked = [sample[i] for i in rng.permutation(len(sample))[:cfg["problog"]]] if sample else []
    for program, graph, exact_p, computed in picked:
        oracle = SceneGraphOracle([graph])
        tables = _tables_of(program, oracle, 0)
        answer, seconds = _problog_timed(program, tables, int(oracle.num_objects[0]), cfg["problog_limit_s"])
        times.append(seconds)
        if answer is None:
            timeouts += 1
        elif computed:
            diffs.append(abs(answer[0] - exact_p))
    return {"questions": len(picked), "timeouts": timeouts, "max_abs_diff": max(diffs, default=None),
            "compared": len(diffs), "problog_ms_mean": float(np.mean(times)) * 1e3 if times else None,
            "problog_ms_median": float(np.median(times)) * 1e3 if times else None}


def report(result: dict) -> list[str]:
    lines = [f"The fast path against exact values (exact mode, budget {result['budget']} shared atoms), binary and "
             f"open GQA programs over dense probabilistic scene graphs:",
             f"  {'family':<36} {'N':>3} {'answers':>8} {'mean':>9} {'median':>9} {'max':>8} {'flipped':>8} "
             f"{'flag=exact':>10} {'fast ms':>8} {'exact ms':>9}"]
    for r in result["rows"]:
        if not r.get("answers"):
            lines.append(f"  {r['family']:<36} {r['objects']:>3} {0:>8}  (none within the budget)")
            continue
        times = (f"{r['fast_ms']:>8.3f} {r['exact_ms']:>9.3f}" if "fast_ms" in r else f"{'':>8} {'':>9}")
        lines.append(f"  {r['family']:<36} {r['objects']:>3} {r['answers']:>4}/{r['questions']:<3} "
                     f"{r['mean_abs_error']:>9.4f} {r['median_abs_error']:>9.4f} {r['max_abs_error']:>8.4f} "
                     f"{r['flipped']:>8.1%} {r['fast_flagged_exact']:>10.1%} {times}")
    for g in result["gqa_size"]:
        lines.append(f"  GQA size, N={g['objects']}, {g['questions']} of {g['of']} questions with <= {FEW_ATOMS} shared "
                     f"uncertain atoms (mean {g['shared_atoms_mean']:.2f}, {g['conditioned']:.0%} conditioned): exact "
                     f"{g['exact_ms']:.3f} vs fast {g['fast_ms']:.3f} ms/question = {g['ratio']:.2f}x")
    p = result["problog"]
    if p["questions"]:
        diff = f"{p['max_abs_diff']:.1e}" if p["max_abs_diff"] is not None else "-"
        lines.append(f"  {result['backend']}: {p['questions']} questions ({p['timeouts']} past the limit), mean "
                     f"{p['problog_ms_mean']:.1f} ms, median {p['problog_ms_median']:.1f} ms per question; "
                     f"max |exact mode - ProbLog| {diff} over {p['compared']}")
    return lines


def main(argv=None) -> None:
    suite_main(__doc__, run, report, argv)


if __name__ == "__main__":
    main()
