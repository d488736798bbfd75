"""Shared helpers of the reliability tests: running the CLI in-process, a small model folder
that fits the GQA feature fixture, and the one-line-error check every refusal must pass."""
from __future__ import annotations

from pathlib import Path

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "gqa"
EVERY = FIX / "every_operation"
FEATURES = FIX / "features"
FEATURE_DIM = 16  # the fixture's features (GQA has 2048)


def run_cli(capsys, *args) -> tuple[int, str, str]:
    """Run ``nablafol ARGS`` in this process: (exit status, stdout, stderr). Warnings are added to
    stderr as a user would see them (pytest would otherwise collect them out of sight)."""
    import warnings

    from nablafol.cli import main
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    shown = "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno) for w in caught)
    return code, out, shown + err


def assert_one_line_refusal(code: int, err: str, names: str | Path) -> str:
    """Exit status 2 and exactly one stderr line, naming ``names``, with no traceback."""
    lines = err.strip().splitlines()
    assert code == 2, (code, err)
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert str(names) in lines[0], (str(names), lines[0])
    return lines[0]


def features_copy(tmp_path: Path) -> Path:
    """A copy of the GQA feature fixture, to break."""
    import shutil
    folder = tmp_path / "features"
    shutil.copytree(FEATURES, folder)
    return folder


def write_model_folder(folder: Path, calibrator: bool = False, seed: int = 0) -> Path:
    """A trained-shaped model folder over GQA's vocabulary for the 16-number feature fixture."""
    import torch

    from nablafol.dsl import Ontology
    from nablafol.neural import ConceptVocabulary, NeuralOracleModel, save_model
    onto = Ontology.gqa()
    torch.manual_seed(seed)
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(onto), feature_dim=FEATURE_DIM,
                                             hidden_dim=8, embedding_dim=4, projection_dim=4, pair_hidden_dim=4)
    save_model(folder, model, extra={"ontology": onto.to_data()})
    if calibrator:
        from nablafol.calibration import TopDownCalibrator, save_calibrator
        save_calibrator(folder, TopDownCalibrator(["name:plate", "rel:on"], embedding_dim=8, hidden_dim=8))
    return folder
