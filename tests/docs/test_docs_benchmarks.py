"""The worked examples of the neighbouring benchmarks (docs/benchmarks.md) and of `nablafol parse`
(docs/commands.md) print what the pages show."""
import re
import shlex
from pathlib import Path

import pytest

from nablafol.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
SECTION = PAGE[PAGE.index("## The commands, with a worked example each"):]
SECTION = SECTION[:SECTION.index("\n## ", 1)]


def console_examples(text: str) -> list[str]:
    """The ``$ COMMAND`` examples of the first console block (```` ``` ```` then ``$ ``) of ``text``."""
    start = text.index("```\n$ ") + 4
    return re.split(r"^\$ ", text[start:text.index("\n```\n", start)], flags=re.M)[1:]


EXAMPLES = console_examples(SECTION)
COMMANDS_PAGE = console_examples((ROOT / "docs" / "commands.md").read_text(encoding="utf-8"))


def _command_and_output(example: str) -> tuple[list[str], str]:
    command, _, output = example.partition("\n")
    while command.endswith("\\"):
        more, _, output = output.partition("\n")
        command = command[:-1] + " " + more.strip()
    return shlex.split(command), output.strip()


def test_every_benchmark_has_a_worked_example():
    assert len(EXAMPLES) == 4 and all("nablafol score" in e for e in EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES + COMMANDS_PAGE,
                         ids=[f"example{i}" for i in range(len(EXAMPLES))] + ["parse"])
def test_the_worked_example_prints_what_the_readme_shows(example, tmp_path, capsys, monkeypatch):
    argv, expected = _command_and_output(example)
    assert argv[0] == "nablafol"
    monkeypatch.chdir(tmp_path)  # --json files land here; inputs are read from the checkout
    argv = [str(ROOT / a) if a.startswith("tests/") else a for a in argv[1:]]
    assert main(argv) == 0
    assert capsys.readouterr().out.strip() == expected
