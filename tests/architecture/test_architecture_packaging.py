"""What `pip install` puts in site-packages: one top-level package, its data files declared as
data (no setuptools warning that a data folder is treated as a package), safetensors declared."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

import pytest

from architecture_house import ROOT, setup_config


@pytest.mark.slow
def test_the_wheel_holds_one_top_level_package_with_its_data(tmp_path):
    source = tmp_path / "source"  # a clean copy: no build/ folder left by an earlier build
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__",
                                                                 ".hypothesis", "runs", "tests", "benchmarks"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
                            "-w", str(tmp_path), "-v"], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    log = built.stdout + built.stderr
    assert "absent from the `packages` configuration" not in log
    assert "SetuptoolsDeprecationWarning" not in log
    (wheel,) = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"nablafol"}
    for data in ("nablafol/dsl/grammar/gqa.lark", "nablafol/dsl/data/gqa/hypernyms.json",
                 "nablafol/graph_oracles/data/knowledge_sample.tsv"):
        assert data in names
    assert "nablafol/dsl/parser.py" in names and "nablafol/calibration/beta.py" in names


def test_safetensors_is_a_declared_dependency():
    requires = setup_config().get("options", "install_requires").split()
    assert any(r.startswith("safetensors") for r in requires)
