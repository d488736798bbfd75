"""The figures table is generated from a run's results: one row per aim, each with the commit and
date of the run that measured it; a later run replaces only the rows of the suites it ran."""
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the repository root, home of benchmarks/

from benchmarks import figures  # noqa: E402


def fake_run(date: str, commit: str, checks: list[tuple], size: str = "full") -> dict:
    return {"date": date, "commit": commit, "size": size, "suites": {suite: {} for suite, *_ in checks},
            "checks": [{"suite": suite, "name": name, "measured": measured, "aim": aim, "met": met, "value": 0.0}
                       for suite, name, measured, aim, met in checks]}


FIRST = fake_run("2026-11-20T10:00:00+00:00", "aaaaaaa", [
    ("batched", "batched vs one at a time", "52.7x", ">= 50x", True),
    ("batched", "informative only", "3 q/s", "-", None),
    ("limits", "one engine call", "241 us | median", "< 200 us", False),
])


def test_one_row_per_aim_with_its_run():
    rows = figures.rows_of(FIRST)
    assert [r["what"] for r in rows] == ["batched vs one at a time", "one engine call"]  # no aim, no row
    assert rows[1] == {"suite": "limits", "what": "one engine call", "figure": "241 us | median", "aim": "< 200 us",
                       "met": False, "command": "python -m benchmarks.run --only limits", "commit": "aaaaaaa",
                       "date": "2026-11-20T10:00:00+00:00", "size": "full"}


def test_a_later_run_replaces_only_its_suites_rows():
    later = fake_run("2026-11-21T09:00:00+00:00", "bbbbbbb", [("limits", "one engine call", "190 us", "< 200 us", True)])
    rows = figures.merged(figures.rows_of(FIRST), later)
    assert [(r["what"], r["commit"], r["met"]) for r in rows] == [
        ("batched vs one at a time", "aaaaaaa", True), ("one engine call", "bbbbbbb", True)]
    gone = fake_run("2026-11-22T09:00:00+00:00", "ccccccc", [("limits", "another aim", "1", "< 2", True)])
    assert [r["what"] for r in figures.merged(rows, gone)] == ["batched vs one at a time", "another aim"]


def test_markdown_escapes_cells_and_marks_a_missed_aim():
    page = figures.markdown(figures.rows_of(FIRST))
    table = [line for line in page.splitlines() if line.startswith("| ")]
    assert table[0] == "| what | figure | aim | met | command | commit, date |"
    assert table[1] == "| --- | --- | --- | --- | --- | --- |"
    assert table[2] == ("| batched vs one at a time | 52.7x | >= 50x | yes | `python -m benchmarks.run --only batched` "
                        "| aaaaaaa, 2026-11-20 |")
    assert table[3] == ("| one engine call | 241 us \\| median | < 200 us | **NO** | "
                        "`python -m benchmarks.run --only limits` | aaaaaaa, 2026-11-20 |")


def test_write_keeps_markdown_and_json_together(tmp_path):
    page = tmp_path / "FIGURES.md"
    figures.write(FIRST, page)
    figures.write(fake_run("2026-11-21T09:00:00+00:00", "bbbbbbb", [("batched", "batched vs one at a time", "40x",
                                                                    ">= 50x", False)]), page)
    saved = json.loads(page.with_suffix(".json").read_text())
    assert [(r["what"], r["commit"]) for r in saved["rows"]] == [("batched vs one at a time", "bbbbbbb"),
                                                                ("one engine call", "aaaaaaa")]
    assert {suite: run["commit"] for suite, run in saved["measured"].items()} == {"batched": "bbbbbbb",
                                                                                  "limits": "aaaaaaa"}
    assert page.read_text() == figures.markdown(saved["rows"], measured=saved["measured"])
    assert "- `limits`: aaaaaaa, 2026-11-20T10:00:00+00:00; unknown" in page.read_text()


def test_suites_no_run_measured_are_listed_with_their_command(tmp_path):
    page = figures.markdown(figures.rows_of(FIRST), suites=("problog", "batched", "training", "limits"),
                            measured={"training": {}})  # measured, with no aim: no row, not missing
    assert page.splitlines()[-1].startswith(
        "No full-size run recorded here has measured these suites yet: `python -m benchmarks.run --only problog` (")
    figures.write(fake_run("2026-11-21T09:00:00+00:00", "b", [("training", "throughput", "600 q/s", "-", None)]),
                  tmp_path / "F.md", suites=("training", "limits"))
    assert "`python -m benchmarks.run --only limits` (" in (tmp_path / "F.md").read_text()
    assert "--only training" not in (tmp_path / "F.md").read_text()


def test_from_json_refuses_a_small_run_in_one_line(tmp_path, capsys):
    from benchmarks import run as bench_run
    small = tmp_path / "quick.json"
    small.write_text(json.dumps(fake_run("2026-11-21T09:00:00+00:00", "b", [], size="quick")))
    for path in (small, tmp_path / "missing.json"):
        with pytest.raises(SystemExit) as exc:
            bench_run.main(["--from-json", str(path), "--figures", str(tmp_path / "F.md")])
        assert exc.value.code == 2
        assert str(path) in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (tmp_path / "F.md").exists()


def test_from_json_writes_the_table_with_the_given_commit(tmp_path):
    from benchmarks import run as bench_run
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps({**FIRST, "commit": None}))
    assert bench_run.main(["--from-json", str(saved), "--commit", "ddddddd", "--figures", str(tmp_path / "F.md")]) == 0
    rows = json.loads((tmp_path / "F.json").read_text())["rows"]
    assert {r["commit"] for r in rows} == {"ddddddd"} and len(rows) == 2


def test_the_committed_table_is_the_one_its_json_generates():
    saved = json.loads(figures.DEFAULT_MARKDOWN.with_suffix(".json").read_text(encoding="utf-8"))
    assert saved["rows"], "benchmarks/FIGURES.json holds no row"
    assert figures.DEFAULT_MARKDOWN.read_text(encoding="utf-8") == figures.markdown(saved["rows"], saved["suites"],
                                                                                    saved["measured"])
