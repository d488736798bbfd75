"""A short fuzz run of every reader of untrusted text (the targets in fuzz_targets.py), driven
by hypothesis: any exception other than the package's own errors fails. The long runs are
`python -m tests.reliability.fuzz_targets --seconds N` (counts in docs/reliability.md)."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fuzz_targets import TARGETS, Target, attempt, main, run_for

EXAMPLES = {"program_text": 300, "semantic_list": 300, "questions_file": 150, "scene_graphs_file": 150,
            "predictions_file": 200, "split_file": 100, "cric_files": 100, "aokvqa_files": 100, "vcr_files": 100}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_target_never_crashes(name):
    target = TARGETS[name]

    @settings(max_examples=EXAMPLES[name], database=None)
    @given(st.randoms(use_true_random=False))
    def run(rng):
        assert attempt(target, target.generate(rng)) in ("accepted", "refused", "skipped", "not JSON")

    run()


@pytest.mark.slow
def test_generators_reach_both_outcomes():
    """The generators are neither all-valid nor all-garbage: each target accepts some inputs and
    refuses others, so the runs above exercise both paths."""
    for target in TARGETS.values():
        rng = random.Random(1)
        outcomes = {attempt(target, target.generate(rng)) for _ in range(80)}
        assert "refused" in outcomes and outcomes & {"accepted", "skipped"}, (target.name, outcomes)


def test_a_crash_is_counted_and_its_input_kept(tmp_path, capsys):
    """The harness can fail: an exception that is not the package's own is a crash."""
    def fragile(data: bytes) -> None:
        if data.startswith(b"{"):
            raise KeyError("boom")

    counts = run_for(Target("fragile", fragile, TARGETS["predictions_file"].generate), 0.3, 0, tmp_path)
    assert counts["crashes"] > 0 and len(list(tmp_path.iterdir())) == counts["crashes"]
    assert "crash in fragile: KeyError: 'boom'" in capsys.readouterr().err


def test_the_runner_prints_counts_and_exits_0_without_crashes(capsys):
    assert main(["--seconds", "0.2", "--target", "predictions_file", "--target", "program_text"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split() == ["target", "seconds", "inputs", "accepted", "skipped", "refused", "crashes"]
    assert [r.split()[0] for r in rows[1:]] == ["predictions_file", "program_text"]
    assert all(int(r.split()[2].replace(",", "")) > 0 and r.split()[-1] == "0" for r in rows[1:])
