"""`bench_eval_scale.py marginal`: eval's and the JSON decode's marginal CPU per question, from
the questions file and its first half. The commands are stood in for by a clock that charges
each question a known cost, so the arithmetic is checked, never a timing."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, home of benchmarks/

from benchmarks import bench_eval_scale  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"


def test_marginal_is_the_cost_between_the_half_and_the_whole(monkeypatch):
    source = FIXTURE / "val_balanced_questions.json"
    ids = list(json.loads(source.read_text(encoding="utf-8")))
    seen = []

    def charged(command):  # eval: 1 s + 2 ms a question; the decode: 0.1 s + 0.5 ms a question
        path = Path(command[command.index("--questions") + 1] if "eval" in command else command[-1])
        held = list(json.loads(path.read_text(encoding="utf-8")))
        seen.append(("eval" if "eval" in command else "json", held))
        return (1.0 + 2e-3 * len(held)) if "eval" in command else (0.1 + 5e-4 * len(held))

    monkeypatch.setattr(bench_eval_scale, "_child_cpu", charged)
    result = bench_eval_scale.marginal(source, FIXTURE / "val_sceneGraphs.json", rounds=2, extra=[])
    assert result["questions"] == {"whole": len(ids), "half": len(ids) // 2}
    assert abs(result["eval"]["marginal_us"] - 2000) < 1e-6 and abs(result["json"]["marginal_us"] - 500) < 1e-6
    assert result["eval"]["per_round_us"] == [2000.0, 2000.0] and abs(result["eval_over_json"] - 4) < 1e-9
    # the four commands in turn, each round; the half is the whole's first half, in its order
    assert [kind for kind, _ in seen] == ["eval", "json", "eval", "json"] * 2
    assert seen[0][1] == ids and seen[2][1] == ids[:len(ids) // 2]


def test_the_floor_sums_the_decode_the_engine_s_operators_and_the_score():
    result = bench_eval_scale.floor(FIXTURE / "val_balanced_questions.json", FIXTURE / "val_sceneGraphs.json",
                                    rounds=1)
    assert result["questions"] == result["answered"] == 12 and result["batches"] >= 1  # the fixture answers all
    parts = [result[k] for k in ("decode_us", "kernels_us", "score_us")]
    assert all(p > 0 for p in parts) and result["kernels_us"] <= result["engine_us"]
    assert abs(result["floor_us"] - sum(parts)) < 0.11  # each part rounded to 0.1
    assert abs(result["floor_over_decode"] - result["floor_us"] / result["decode_us"]) < 0.01
