"""How tight the sound bounds are where the fast path is not exact, by family and budget.

The generated non-read-once benchmark of ``bench_exact`` (GQA programs of every family whose
grounding repeats atoms, compiled by the project's compiler, over random probabilistic scene
graphs whose every fact is an independent coin). For each family and budget ``k`` (atoms
conditioned on), over the answers the fast path does not flag exact, ``Engine(bounds=True,
exact_budget=k)`` gives an interval per answer; the suite reports its mean width (an answer's:
its yes probability's, or its predicted candidate's), the share of yes/no answers whose
interval decides the answer (wholly above or at most 0.5), the share of open answers where one
candidate's lower bound is at least every other candidate's upper bound, and the time
per question against the fast path's (this run). Every interval is checked against exact mode
(budget ``EXACT``): the exact value must be inside it (``outside`` counts those that are not).

    python -m benchmarks.bench_bounds [--quick]
"""
from __future__ import annotations

import time

import numpy as np
import torch

from nablafol.compiler import Compiler
from nablafol.engine import Engine
from nablafol.graph_oracles import SceneGraphOracle

from .bench_exact import FAMILIES, questions
from .suite_cli import suite_main

BUDGETS = (0, 2, 4, 8)
EXACT = 16  # exact mode's budget for the reference values
SIZES = {
    "tiny": dict(objects=3, per_family=3),
    "quick": dict(objects=5, per_family=12),
    "full": dict(objects=8, per_family=32),
}
TOLERANCE = 1e-5  # float32 answers and tables


def _run(engine, programs, graphs):
    oracle = SceneGraphOracle(graphs)
    with torch.no_grad():
        start = time.perf_counter()
        answers = engine(programs, oracle, np.arange(len(programs)))
        answers.exact  # the flags, computed when read
        return answers, time.perf_counter() - start


def _decided(lower: np.ndarray, upper: np.ndarray, yes_no: bool) -> bool:
    """Whether every probability inside the intervals gives one answer: yes/no, the interval on one
    side of 0.5; open, the candidate of the highest lower bound at or above every other's upper."""
    if yes_no:
        return bool(lower[0] > 0.5 or upper[0] <= 0.5)
    best = int(lower.argmax())
    others = np.delete(upper, best)
    return bool(not others.size or lower[best] >= others.max())


def run(size: str = "full", seed: int = 0) -> dict:
    cfg = SIZES[size]
    rng = np.random.default_rng(seed)
    compiler = Compiler()
    rows = []
    for family in FAMILIES:
        pairs = questions(rng, compiler, family, cfg["per_family"], cfg["objects"], 1.0)
        programs, graphs = [p for p, _ in pairs], [g for _, g in pairs]
        fast, fast_s = _run(Engine(validate=False), programs, graphs)
        exact, _ = _run(Engine(validate=False, exact=True, exact_budget=EXACT), programs, graphs)
        loose = [i for i in range(len(programs)) if not bool(fast.exact[i])]
        shared = Engine(validate=False).shared_atoms(programs, SceneGraphOracle(graphs), np.arange(len(programs)))
        row = {"family": family, "questions": len(programs), "not_exact": len(loose),
               "shared_atoms_mean": float(shared[loose].mean()) if loose else 0.0, "fast_ms": fast_s / len(programs) * 1e3,
               "budgets": {}}
        for k in BUDGETS:
            bounded, seconds = _run(Engine(validate=False, bounds=True, exact_budget=k), programs, graphs)
            lower, upper = (b.double().numpy() for b in bounded.bounds)
            widths, decided_yn, decided_open, outside, reference = [], [], [], 0, 0
            for i in loose:
                n = programs[i].n_candidates
                lo, hi = lower[i, :n], upper[i, :n]
                predicted = int(fast.probs()[i, :n].argmax())
                widths.append(float(hi[predicted] - lo[predicted]))
                (decided_yn if programs[i].is_yes_no else decided_open).append(
                    _decided(lo, hi, programs[i].is_yes_no))
                if bool(exact.exact[i]):
                    reference += 1
                    value = exact.probs()[i, :n].double().numpy()
                    outside += int(((value < lo - TOLERANCE) | (value > hi + TOLERANCE)).any())
            row["budgets"][k] = {"mean_width": float(np.mean(widths)) if widths else 0.0,
                                 "decided_yes_no": float(np.mean(decided_yn)) if decided_yn else None,
                                 "yes_no": len(decided_yn),
                                 "decided_open": float(np.mean(decided_open)) if decided_open else None,
                                 "open": len(decided_open), "outside": outside, "checked": reference,
                                 "ms": seconds / len(programs) * 1e3}
        rows.append(row)
    return {"rows": rows, "objects": cfg["objects"], "budgets": list(BUDGETS), "exact_budget": EXACT}


def checks(r: dict, check) -> list[dict]:
    """The table of aims' rows: every interval holds the exact value; by budget, the mean width
    and the share of answers decided over every family (the table by family is the report's)."""
    ks, rows = r["budgets"], r["rows"]
    outside = sum(row["budgets"][k]["outside"] for row in rows for k in ks)
    checked = sum(row["budgets"][k]["checked"] for row in rows for k in ks)
    out = [check("bounds: exact value outside its interval", f"{outside} of {checked} intervals "
                 f"({len(rows)} families, scenes of {r['objects']} objects)", "0", outside == 0, outside)]
    for k in ks:
        loose = [row for row in rows if row["not_exact"]]
        n = sum(row["not_exact"] for row in loose)
        width = sum(row["budgets"][k]["mean_width"] * row["not_exact"] for row in loose) / max(1, n)
        decided = sum((row["budgets"][k]["decided_yes_no"] or 0) * row["budgets"][k]["yes_no"]
                      + (row["budgets"][k]["decided_open"] or 0) * row["budgets"][k]["open"] for row in loose)
        out.append(check(f"bounds at budget {k}: mean width, share of answers decided", f"{width:.3f}, "
                         f"{decided / max(1, n):.0%} of {n} answers not exact", "-", None, width))
    return out


def _share(x) -> str:
    return "-" if x is None else f"{x:.0%}"


def report(result: dict) -> list[str]:
    ks = result["budgets"]
    lines = [f"Sound bounds where the fast path is not exact: mean width / share of answers the interval decides, "
             f"by budget k (scenes of {result['objects']} objects, every fact uncertain):",
             f"  {'family':<28} {'not exact':>9} {'shared':>6} " + " ".join(f"{'k=' + str(k):>17}" for k in ks)
             + "  ms/question at k=" + "/".join(map(str, ks)) + " (fast path)"]
    for r in result["rows"]:
        cells = []
        for k in ks:
            b = r["budgets"][k]
            decided = b["decided_yes_no"] if b["yes_no"] else b["decided_open"]
            cells.append(f"{b['mean_width']:>9.3f} / {_share(decided):>5}")
        times = "/".join(f"{r['budgets'][k]['ms']:.1f}" for k in ks)
        lines.append(f"  {r['family']:<28} {r['not_exact']:>4}/{r['questions']:<4} {r['shared_atoms_mean']:>6.1f} "
                     + " ".join(f"{c:>17}" for c in cells) + f"  {times} ({r['fast_ms']:.2f})")
    outside = sum(r["budgets"][k]["outside"] for r in result["rows"] for k in ks)
    checked = sum(r["budgets"][k]["checked"] for r in result["rows"] for k in ks)
    lines.append(f"  exact value (exact mode, budget {result['exact_budget']}) outside its interval: {outside} of "
                 f"{checked} intervals checked")
    return lines


def main(argv=None) -> None:
    suite_main(__doc__, run, report, argv)


if __name__ == "__main__":
    main()
