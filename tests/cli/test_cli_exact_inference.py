"""`nablafol eval --exact-inference --details` (issue 19): over probabilistic scene graphs, the
answers of programs that repeat atoms equal the exact probability (ProbLog) and are flagged
exact; without it, every answer the fast path gets wrong is flagged not exact."""
import json

import numpy as np
import pytest

from benchmarks.bench_exact import FAMILIES, _tables_of, probabilistic_scene
from benchmarks.problog_reference import problog_probabilities
from nablafol.cli import main
from nablafol.compiler import Compiler
from nablafol.data import write_scene_graphs
from nablafol.graph_oracles import SceneGraphOracle

FAMILIES_USED = ("relate", "two hops", "and/or, same objects", "same (one input)")


def _dataset(tmp_path, seed=5, per_family=2, objects=4):
    rng, compiler = np.random.default_rng(seed), Compiler()
    records, graphs, programs = {}, [], []
    for family in FAMILIES_USED:
        for k in range(per_family):
            graph = probabilistic_scene(rng, f"img{len(graphs)}", objects, 1.0)
            present = sorted({name for obj in graph.objects for name in obj.names})
            related = sorted({r.name for obj in graph.objects for r in obj.relations}) or ["to the left of"]
            a = str(rng.choice(present))
            b = str(rng.choice([x for x in present if x != a] or present))
            r, r2 = (str(x) for x in rng.choice(related, 2))
            text = FAMILIES[family][k % len(FAMILIES[family])].format(A=a, B=b, C="red", R=r, R2=r2)
            qid = str(1000 + len(records))
            records[qid] = {"imageId": graph.image_id, "question": "?", "answer": "yes", "semanticStr": text,
                            "types": {"structural": "verify"}}
            graphs.append(graph)
            programs.append(compiler.compile_text(text).program)
    (tmp_path / "q.json").write_text(json.dumps(records))
    write_scene_graphs(tmp_path / "sg.json", graphs)
    oracle = SceneGraphOracle(graphs)
    exact = {qid: problog_probabilities(p, _tables_of(p, oracle, i), int(oracle.num_objects[i]))[0]
             for i, (qid, p) in enumerate(zip(records, programs))}
    assert not any(p.read_once for p in programs)
    return exact


def _eval(tmp_path, capsys, *extra):
    out = tmp_path / "p.json"
    code = main(["eval", "--questions", str(tmp_path / "q.json"), "--scene-graphs", str(tmp_path / "sg.json"),
                 "--predictions", str(out), "--details", str(tmp_path / "d.jsonl"), *extra])
    printed = capsys.readouterr().out
    assert code == 0
    lines = [json.loads(line) for line in (tmp_path / "d.jsonl").read_text().splitlines()]
    return {d["questionId"]: d for d in lines}, printed


def test_exact_inference_equals_problog_and_says_so(tmp_path, capsys):
    reference = _dataset(tmp_path)
    details, printed = _eval(tmp_path, capsys, "--exact-inference")
    assert set(details) == set(reference)
    for qid, want in reference.items():
        assert details[qid]["exact"] is True, qid
        assert details[qid]["answers"]["yes"] == pytest.approx(want, abs=1e-6), qid
    assert f"exact answers: 100.00% ({len(reference)} of {len(reference)}" in printed


def test_the_fast_path_flags_every_answer_it_gets_wrong(tmp_path, capsys):
    reference = _dataset(tmp_path)
    details, printed = _eval(tmp_path, capsys)
    wrong = [qid for qid, want in reference.items() if abs(details[qid]["answers"]["yes"] - want) > 1e-6]
    assert wrong, "the fixture must hold answers the approximation gets wrong"
    for qid in wrong:
        assert details[qid]["exact"] is False, qid
    flagged = sum(d["exact"] for d in details.values())
    assert f"exact answers: {100 * flagged / len(details):.2f}%" in printed


def test_a_budget_of_one_atom_leaves_bigger_answers_approximate_and_flagged(tmp_path, capsys):
    reference = _dataset(tmp_path)
    details, _ = _eval(tmp_path, capsys, "--exact-inference", "--exact-budget", "1")
    for qid, want in reference.items():
        if abs(details[qid]["answers"]["yes"] - want) > 1e-6:
            assert details[qid]["exact"] is False, qid


def test_score_prints_the_share_of_exact_answers_of_a_details_file(tmp_path, capsys):
    _dataset(tmp_path)
    details, _ = _eval(tmp_path, capsys)
    flagged = sum(d["exact"] for d in details.values())
    assert 0 < flagged < len(details)  # the fixture has both kinds
    code = main(["score", "--questions", str(tmp_path / "q.json"), "--predictions", str(tmp_path / "p.json"),
                 "--details", str(tmp_path / "d.jsonl")])
    assert code == 0
    assert f"exact answers: {100 * flagged / len(details):.2f}% ({flagged} of {len(details)}" in capsys.readouterr().out
