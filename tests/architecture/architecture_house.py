"""The installed modules of the checkout and their imports, read from the source (nothing is run).

Folders map to installed names as ``setup.cfg`` says (``dsl/`` is ``nablafol.dsl``); imports
inside functions count (a lazy import is still a dependency).
"""
from __future__ import annotations

import ast
import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The layers of the house, bottom to top: a module may import its own layer and those below.
#: Data flows text -> AST -> DFOL -> tensors -> answers, then the pipeline, then the CLI.
LAYERS = (
    ("foundation", ("nablafol.errors", "nablafol.numerics", "nablafol.files", "nablafol.caching",
                    "nablafol.progress", "nablafol.plotting")),
    ("text", ("nablafol.dsl", "nablafol.data")),
    ("dfol", ("nablafol.operators", "nablafol.ir")),
    ("compiler", ("nablafol.compiler",)),
    ("engine", ("nablafol.oracle", "nablafol.engine", "nablafol.losses", "nablafol.explain", "nablafol.testing")),
    ("perception", ("nablafol.graph_oracles", "nablafol.neural", "nablafol.calibration", "nablafol.baselines",
                    "nablafol.synthetic", "nablafol.semantic_parser")),
    ("answers", ("nablafol.scoring",)),
    ("pipeline", ("nablafol.pipeline", "nablafol.asking")),
    ("cli", ("nablafol.cli",)),
)


def setup_config() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return config


def package_dirs() -> dict[str, str]:
    """Installed package name -> folder, from setup.cfg."""
    lines = setup_config().get("options", "package_dir").strip().splitlines()
    return dict((k.strip(), v.strip()) for k, v in (line.split("=", 1) for line in lines))


def declared_packages() -> list[str]:
    return setup_config().get("options", "packages").split()


def _folder_of(package: str) -> Path:
    dirs = package_dirs()
    best = max((name for name in dirs if package == name or package.startswith(name + ".")), key=len)
    rest = package[len(best):].lstrip(".")
    return ROOT / dirs[best] / Path(*rest.split(".")) if rest else ROOT / dirs[best]


def modules() -> dict[str, Path]:
    """Installed module name -> file, for every declared package's modules."""
    out = {}
    for package in declared_packages():
        folder = _folder_of(package)
        for path in sorted(folder.glob("*.py")):
            name = package if path.stem == "__init__" else f"{package}.{path.stem}"
            out[name] = path
    return out


def imports(mods: dict[str, Path] | None = None) -> dict[str, set[str]]:
    """Module -> the project's modules it imports (resolved to the longest known name)."""
    mods = modules() if mods is None else mods

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for module, path in mods.items():
        targets = set()
        for source, name in imported_names(module, path):
            if name is None:
                targets.add(source)
            else:
                targets.add(f"{source}.{name}" if f"{source}.{name}" in mods else source)
        edges[module] = {r for r in map(resolve, targets) if r and r != module}
    return edges


def imported_names(module: str, path: Path):
    """``(source, name)`` for every name ``module`` imports from a module (relative imports
    resolved), and ``(module, None)`` for every plain ``import module``."""
    package = module if path.stem == "__init__" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((a.name, None) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            yield from ((source, a.name) for a in node.names)


def layer_of(module: str) -> int | None:
    """The index of the module's layer (None for the root package ``nablafol`` itself, whose
    public names load lazily from the layers)."""
    for index, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return index
    return None


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]; counter[0] += 1; stack.append(start); on.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter[0]; counter[0] += 1; stack.append(w); on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop(); on.discard(w); component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return out
