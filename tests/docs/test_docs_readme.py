"""The Python examples of the README, docs/oracle-learning.md and docs/library.md run, and print what they say they print.

Each ```python block runs as is; every `print(...)` line ending in `# TEXT` must print TEXT.
"""
import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
LEARNING = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "oracle-learning.md").read_text(encoding="utf-8"), flags=re.S)
LIBRARY = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "library.md").read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_examples():
    assert BLOCKS, "README.md has no ```python example"


def test_oracle_learning_has_its_example():
    assert len(LEARNING) == 1, "docs/oracle-learning.md: one ```python example (your own oracle through the engine)"


def test_library_page_shows_its_four_examples():
    """docs/library.md: second-order gradients, the public loss, an explanation, a user-DSL check."""
    assert len(LIBRARY) == 4
    for block, name in zip(LIBRARY, ("create_graph=True", "answer_loss", "explain(", "check_dsl(")):
        assert name in block


@pytest.mark.parametrize("block", BLOCKS + LEARNING + LIBRARY,
                         ids=[f"block{i}" for i in range(len(BLOCKS))] + ["oracle-learning"]
                         + [f"library{i}" for i in range(len(LIBRARY))])
def test_readme_example_prints_what_it_says(block):
    expected = [m.group(1).strip() for line in block.splitlines()
                if (m := re.match(r"\s*print\(.*\)\s*#\s*(.*)$", line))]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {"__name__": "__readme__"})
    printed = [line.strip() for line in out.getvalue().splitlines()]
    assert printed == expected
