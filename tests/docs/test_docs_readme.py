"""The README's Python examples run, and print what the README says they print.

Each ```python block runs as is; every `print(...)` line ending in `# TEXT` must print TEXT.
"""
import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_examples():
    assert BLOCKS, "README.md has no ```python example"


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_prints_what_it_says(block):
    expected = [m.group(1).strip() for line in block.splitlines()
                if (m := re.match(r"\s*print\(.*\)\s*#\s*(.*)$", line))]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {"__name__": "__readme__"})
    printed = [line.strip() for line in out.getvalue().splitlines()]
    assert printed == expected
