"""The Python examples of the README and of docs/*.md (library.md, oracle-learning.md and the pages
the README's examples moved to) run, and print what they say they print; the README stays a page
for users (at most 300 lines) whose links lead somewhere.

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
#: pages whose examples moved out of the README, each with how many ```python examples it holds
MOVED = {"scoring.md": 1, "benchmarks.md": 1}
PAGES = [(f"{page}:{i}", block) for page in MOVED for i, block in enumerate(
    re.findall(r"```python\n(.*?)```", (ROOT / "docs" / page).read_text(encoding="utf-8"), flags=re.S))]
README_MAX_LINES = 300
DESIGN_MAX_LINES = 250  # docs/design.md: one page of the architecture and its decisions
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


def test_moved_examples_are_where_they_moved():
    assert {page: sum(name.startswith(page + ":") for name, _ in PAGES) for page in MOVED} == MOVED


def test_readme_is_a_page_not_a_log():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= README_MAX_LINES


def test_the_design_notes_stay_one_short_page():
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    assert len(design.splitlines()) <= DESIGN_MAX_LINES, "move long derivations beside their code (docs/*.md)"


def test_readme_links_lead_to_files():
    text = README.read_text(encoding="utf-8")
    links = [link for link in re.findall(r"\]\(([^)#]+)\)", text) if "://" not in link]
    assert "benchmarks/FIGURES.md" in links and "docs/library.md" in links
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


@pytest.mark.parametrize("block", [pytest.param(b, id=f"block{i}") for i, b in enumerate(BLOCKS)]
                         # it trains an oracle: among the longest tests of a measured run
                         + [pytest.param(b, id="oracle-learning", marks=pytest.mark.slow) for b in LEARNING]
                         + [pytest.param(b, id=name) for name, b in PAGES]
                         # check_dsl's example runs a property's examples: the longest of the pages' examples
                         + [pytest.param(b, id=f"library{i}", marks=[pytest.mark.slow] if "check_dsl(" in b else [])
                            for i, b in enumerate(LIBRARY)])
def test_readme_example_prints_what_it_says(block):
    expected = [m.group(1).strip() for line in block.splitlines()
                if (m := re.match(r"\s*print\(.*\)\s*#\s*(.*)$", line))]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {"__name__": "__readme__"})
    printed = [line.strip() for line in out.getvalue().splitlines()]
    assert printed == expected
