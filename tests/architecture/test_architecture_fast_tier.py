"""The fast tier (`python -m pytest -m "not slow"`, docs/testing.md) covers every room: each folder of
tests/ keeps at least one test that is not marked slow, and the marker is registered."""
import ast
import configparser
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _is_param(node) -> bool:
    """Whether a node is a ``pytest.param(...)`` call: its marks mark that one case, not the test."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "param"


def _nodes_outside_params(node):
    yield node
    for child in ast.iter_child_nodes(node):
        if not _is_param(child):
            yield from _nodes_outside_params(child)


def _marks_slow(decorators) -> bool:
    """Whether a decorator list (or a ``pytestmark`` value) holds ``pytest.mark.slow`` for the
    whole test; a case marked slow inside ``pytest.param`` leaves the test's other cases fast."""
    return any(isinstance(node, ast.Attribute) and node.attr == "slow"
               and isinstance(node.value, ast.Attribute) and node.value.attr == "mark"
               for decorator in decorators for node in _nodes_outside_params(decorator))


def fast_tests(path: Path) -> list[str]:
    """The test functions of a file that the fast tier runs (by name; classes' methods included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module_marks = [node.value for node in tree.body if isinstance(node, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)]
    if _marks_slow(module_marks):
        return []
    found = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test") and not _marks_slow(node.decorator_list):
            found += [f.name for f in node.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test")
                      and not _marks_slow(f.decorator_list)]
        elif isinstance(node, ast.FunctionDef) and node.name.startswith("test") and not _marks_slow(node.decorator_list):
            found.append(node.name)
    return found


def rooms() -> list[Path]:
    return sorted(p for p in TESTS.iterdir() if p.is_dir() and any(p.glob("test_*.py")))


def test_every_room_keeps_a_fast_test():
    assert len(rooms()) >= 10
    empty = [room.name for room in rooms() if not any(fast_tests(f) for f in room.glob("test_*.py"))]
    assert not empty, f"rooms the fast tier would not cover (every test marked slow): {empty}"


def test_the_reader_sees_marks_on_functions_classes_and_modules(tmp_path):
    source = tmp_path / "test_x.py"
    source.write_text("import pytest\n\n@pytest.mark.slow\ndef test_a(): pass\n\ndef test_b(): pass\n\n"
                      "@pytest.mark.slow\nclass TestC:\n    def test_c(self): pass\n")
    assert fast_tests(source) == ["test_b"]
    source.write_text("import pytest\npytestmark = [pytest.mark.slow]\n\ndef test_b(): pass\n")
    assert fast_tests(source) == []
    source.write_text("import pytest\n\n@pytest.mark.parametrize('n', [1, pytest.param(2, marks=pytest.mark.slow)])\n"
                      "def test_d(n): pass\n\n@pytest.mark.parametrize('n', [pytest.param(2, marks=[pytest.mark.slow])])\n"
                      "@pytest.mark.slow\ndef test_e(n): pass\n")
    assert fast_tests(source) == ["test_d"]


def test_the_slow_marker_is_registered():
    config = configparser.ConfigParser()
    config.read(TESTS.parent / "setup.cfg", encoding="utf-8")
    markers = config["tool:pytest"]["markers"]
    assert any(line.strip().startswith("slow:") for line in markers.splitlines())
