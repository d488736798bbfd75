"""The package: its docstring examples run, and it imports nothing but the standard library and lark."""
import doctest
import subprocess
import sys
from pathlib import Path

import pytest

from nablafol import dsl
from nablafol import dsl
from nablafol import dsl
from nablafol import dsl
from nablafol import dsl
from nablafol import dsl

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("module", [dsl, dsl.ast, dsl.errors, dsl.inflection, dsl.ontology, dsl.parser],
                         ids=lambda m: m.__name__)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and (result.attempted > 0 or module is dsl.ast)


def test_dsl_imports_only_the_standard_library_lark_and_the_error_root():
    code = (
        "import sys; before = set(sys.modules); from nablafol import dsl; dsl.Ontology.gqa(); "
        "dsl.parse_program('select: bird (1)->query: name [0]'); "
        "new = {m.split('.')[0] for m in set(sys.modules) - before} | "
        "{m for m in set(sys.modules) - before if m.startswith('nablafol.') and not m.startswith('nablafol.dsl')}; "
        "allowed = set(sys.stdlib_module_names) | {'nablafol', 'nablafol.errors', 'nablafol.caching', 'lark'}; "
        "print(sorted(new - allowed))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr


def test_public_names():
    for name in ("parse_program", "program_from_semantic", "Program", "Step", "Objects", "Scene", "Value",
                 "Relation", "Alternatives", "AttributeType", "Empty", "ProgramError", "Ontology", "normalize"):
        assert name in dsl.__all__ and hasattr(dsl, name)
    assert issubclass(dsl.ProgramError, ValueError)
