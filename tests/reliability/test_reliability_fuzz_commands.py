"""A short fuzz run of every command (the targets of fuzz_commands.py), driven by hypothesis:
each input is a whole command run in this process, which must exit 0 or 2 with no traceback.
The long run is `python tests/reliability/fuzz_commands.py --inputs 10000` (counts in
docs/reliability.md)."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiers import examples

from fuzz_commands import TARGETS, Refused, Target, attempt, run_command, run_inputs


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_command_never_crashes(name):
    target = TARGETS[name]

    @settings(max_examples=examples(6), database=None)
    @given(st.randoms(use_true_random=False))
    def run(rng):
        assert attempt(target, target.generate(rng)) in ("accepted", "refused")

    run()


def test_the_generators_reach_both_outcomes_of_a_command():
    for name in ("score", "eval_questions"):
        target, rng = TARGETS[name], random.Random(2)
        assert {attempt(target, target.generate(rng)) for _ in range(40)} == {"accepted", "refused"}, name


def test_a_command_that_raises_is_a_crash_and_its_input_kept(tmp_path, capsys):
    """The harness can fail: an exception out of the command (here: a traceback's worth) counts."""
    def fragile(data: bytes) -> str:
        if data.startswith(b"["):
            raise KeyError("boom")
        return run_command(["parse", "--", "select: plate->exist: ? [0]"])

    counts = run_inputs(Target("fragile", fragile, TARGETS["split"].generate), 30, 0, tmp_path)
    assert counts["crashes"] > 0 and len(list(tmp_path.iterdir())) == counts["crashes"]
    assert "crash in fragile: KeyError: 'boom'" in capsys.readouterr().err


def test_exit_status_2_is_a_refusal_and_a_traceback_is_not(monkeypatch):
    import sys

    import nablafol.cli
    with pytest.raises(Refused):
        run_command(["score", "--questions", "/nonexistent/q.json", "--predictions", "/nonexistent/p.json"])

    def printing_a_traceback(argv):
        print("Traceback (most recent call last):", file=sys.stderr)
        return 0
    monkeypatch.setattr(nablafol.cli, "main", printing_a_traceback)
    with pytest.raises(AssertionError):
        run_command(["parse", "--", "select: plate->exist: ? [0]"])
