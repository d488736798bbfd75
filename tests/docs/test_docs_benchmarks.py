"""The README's worked examples of the neighbouring benchmarks print what the README shows."""
import re
import shlex
from pathlib import Path

import pytest

from nablafol.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SECTION = README[README.index("## Other benchmarks"):]
SECTION = SECTION[:SECTION.index("\n## ", 1)]
EXAMPLES = re.split(r"^\$ ", SECTION[SECTION.index("```\n$ ") + 4:SECTION.index("\n```\n", SECTION.index("```\n$ "))],
                    flags=re.M)[1:]


def _command_and_output(example: str) -> tuple[list[str], str]:
    command, _, output = example.partition("\n")
    while command.endswith("\\"):
        more, _, output = output.partition("\n")
        command = command[:-1] + " " + more.strip()
    return shlex.split(command), output.strip()


def test_every_benchmark_has_a_worked_example():
    assert len(EXAMPLES) == 4 and all("nablafol score" in e for e in EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"example{i}" for i in range(len(EXAMPLES))])
def test_the_worked_example_prints_what_the_readme_shows(example, tmp_path, capsys, monkeypatch):
    argv, expected = _command_and_output(example)
    assert argv[0] == "nablafol"
    monkeypatch.chdir(tmp_path)  # --json files land here; inputs are read from the checkout
    argv = [str(ROOT / a) if a.startswith("tests/") else a for a in argv[1:]]
    assert main(argv) == 0
    assert capsys.readouterr().out.strip() == expected
