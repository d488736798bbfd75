"""The circuits suite without its anchor installed: the engine's side is measured and the table's
row says what is missing, rather than the run failing. Timings are never asserted."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, home of benchmarks/

from benchmarks import bench_circuits  # noqa: E402
from benchmarks.run import check  # noqa: E402


def test_without_klay_the_circuits_rows_say_what_is_missing(monkeypatch):
    monkeypatch.setattr(bench_circuits, "missing_anchor", lambda: "klay is not installed (pip install -e '.[bench]')")
    result = bench_circuits.run("tiny")
    assert result["rows"] and all("engine_warm_us" in row and "klay_warm_us" not in row for row in result["rows"])
    rows = bench_circuits.checks(result, check)
    assert rows[0]["name"] == "circuits: questions past the node budget" and rows[0]["value"] == 0
    assert "not measured: klay is not installed" in rows[-1]["measured"] and rows[-1]["met"] is None
    assert bench_circuits.report(result)  # the report prints what there is
