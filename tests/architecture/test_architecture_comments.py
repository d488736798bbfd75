"""Comments say why, not how long: no comment or docstring in the library's folders names a measured
time (µs, ms, s, minutes, ...) or an issue number. A timing goes stale the day the code changes; its
home is benchmarks/ (FIGURES.md, HISTORY.md), and an issue's number means nothing to a reader."""
import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("nablafol", "dsl", "compiler", "calibration")

#: a number (or a range of numbers) with a unit of time: "4 µs", "5.8 ms", "24-30 s", "2 minutes";
#: the one-letter units want a space before them, so "0s" (zeros) and "2h" (a width) are not times
TIMING = re.compile(r"(?<![\w.])\d[\d,.]*(?:\s*(?:-|–|to)\s*\d[\d,.]*)?"
                    r"(?:\s*(?:µs|us|ns|ms|secs?|seconds?|minutes?|mins?|hours?)\b|\s+[sh]\b)")
ISSUE = re.compile(r"\b(?:issues?|PR|pull request)\s*#?\d+|(?<![\w&])#\d+\b", re.I)


def comments_and_docstrings(source: str):
    """(line, text) of every comment and every docstring (module, class, function) of ``source``."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                for offset, line in enumerate(first.value.value.splitlines()):
                    yield first.lineno + offset, line


def offences(source: str) -> list[tuple[int, str]]:
    return [(line, match.group(0)) for line, text in comments_and_docstrings(source)
            for pattern in (TIMING, ISSUE) if (match := pattern.search(text))]


def library_files() -> list[Path]:
    files = [path for folder in FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))]
    assert len(files) > 50, "the library's folders were not found"
    return files


def test_no_comment_or_docstring_names_a_timing_or_an_issue():
    found = []
    for path in library_files():
        name = path.relative_to(ROOT).as_posix()
        found += [f"{name}:{line}: {what!r}" for line, what in offences(path.read_text(encoding="utf-8"))]
    assert not found, "timings or issue numbers in comments or docstrings (their home is benchmarks/):\n" + "\n".join(found)


@pytest.mark.parametrize("text", [
    "# 5-9 µs, most of planning a batch", "# took 24 s of a 94 s run", "# 11.8 ms on an H100",
    "# (issue 23's one-question call)", "# see #16", "# 2 minutes on two cores", "# 290us median"])
def test_the_check_finds_what_it_refuses(text):
    assert offences(f"x = 1  {text}\n")
    assert offences(f'def f():\n    """{text[2:]}"""\n')


@pytest.mark.parametrize("text", ["# a table of 0s", "# (P, T, 2h)", "# 128 steps at most", "# float32, 2^18 terms",
                                  "# checkpoint_seconds: a setting", "# A&#39;s"])
def test_the_check_leaves_other_numbers_alone(text):
    assert not offences(f"x = 1  {text}\n")
