"""The house's shape, checked from the source: imports run one way, no circle, nothing generic
installed at the top of site-packages, every package declared."""
from __future__ import annotations

import ast

import pytest

from architecture_house import (LAYERS, ROOT, cycles, declared_packages, imported_names, imports, layer_of,
                                modules)


def test_every_module_has_a_layer():
    unplaced = [m for m in modules() if m != "nablafol" and layer_of(m) is None]
    assert unplaced == [], f"add these to a layer of tests/architecture/architecture_house.py: {unplaced}"


@pytest.mark.slow
def test_no_import_cycle_between_files():
    assert cycles(imports()) == []


@pytest.mark.slow
def test_imports_never_point_to_a_higher_layer():
    wrong = []
    for module, targets in imports().items():
        here = layer_of(module)
        for target in sorted(targets):
            there = layer_of(target)
            if here is not None and there is not None and there > here:
                wrong.append(f"{module} ({LAYERS[here][0]}) imports {target} ({LAYERS[there][0]})")
    assert wrong == [], "\n".join(wrong)


def private_imports(mods: dict) -> list[str]:
    """Every ``from <a module of the project> import _name`` in another module of it."""
    found = []
    for module, path in mods.items():
        for source, name in imported_names(module, path):
            project = source == "nablafol" or source.startswith("nablafol.")
            if project and source != module and name and name.startswith("_") and not name.startswith("__"):
                found.append(f"{module} imports {name} from {source}")
    return found


def test_no_module_imports_another_modules_private_names():
    """A ``_name`` is its module's own: another module that needs it needs it public."""
    assert private_imports(modules()) == []


def test_a_private_import_is_found(tmp_path):
    module = tmp_path / "thief.py"
    module.write_text("def f():\n    from .plotting import _hidden, shown\n    from . import __version__\n")
    assert private_imports({"nablafol.thief": module}) == ["nablafol.thief imports _hidden from nablafol.plotting"]


@pytest.mark.slow
def test_no_module_imports_the_card_folders_by_their_folder_names():
    """`dsl/`, `compiler/`, `calibration/` install as nablafol.dsl, nablafol.compiler,
    nablafol.calibration: an import of a bare `dsl` would work only inside the checkout."""
    bare = []
    for path in [*modules().values(), *ROOT.glob("tests/**/*.py"), *ROOT.glob("benchmarks/*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            bare += [f"{path.relative_to(ROOT)}: {n}" for n in names
                     if n.split(".")[0] in ("dsl", "compiler", "calibration")]
    assert bare == []


def test_the_declared_packages_are_exactly_the_folders():
    from architecture_house import _folder_of, package_dirs
    declared = set(declared_packages())
    found = set()
    for name, folder in package_dirs().items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    # a folder mapped elsewhere (nablafol.dsl is dsl/) is not also a package under nablafol/
    assert declared == found
    for package in declared:
        assert (_folder_of(package) / "__init__.py").exists()


@pytest.mark.parametrize("layer", [name for name, _ in LAYERS])
def test_each_layer_holds_modules(layer):
    assert any(LAYERS[layer_of(m)][0] == layer for m in modules() if layer_of(m) is not None)


#: What a command may not touch itself: answering, journaling, workers, the engine, tensors.
#: A command parses options, calls one library function, prints (docs/design.md).
NOT_IN_COMMANDS = ("torch", "nablafol.engine", "nablafol.pipeline.answering", "nablafol.pipeline.journal",
                   "nablafol.pipeline.workers")


def test_commands_hold_no_answering_scoring_or_journaling_logic():
    found = []
    for module, path in modules().items():
        if not module.startswith("nablafol.cli.commands.") or module.endswith(".common"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            found += [f"{module} imports {n}" for n in names
                      if any(n == bad or n.startswith(bad + ".") for bad in NOT_IN_COMMANDS)]
    assert found == [], "\n".join(found)
