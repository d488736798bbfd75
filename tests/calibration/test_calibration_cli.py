"""`nablafol calibrate --inspect`: a calibrator's parameters per step, from the command line."""
import json
from pathlib import Path

import pytest
import torch

from nablafol.calibration import TopDownCalibrator, format_step_parameters, save_calibrator, step_parameters
from nablafol.compiler import Compiler
from nablafol.dsl import Ontology
from nablafol.cli import main
from nablafol.neural import ConceptVocabulary, NeuralOracleModel, save_model

QUESTIONS = Path(__file__).resolve().parents[1] / "fixtures" / "gqa" / "every_operation" / "questions.json"
PROGRAM = "select: plate->relate: _,on,s [0]->exist: ? [1]"


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    onto = Ontology.gqa()
    torch.manual_seed(0)
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(onto), feature_dim=8, hidden_dim=8,
                                             embedding_dim=4, projection_dim=4, pair_hidden_dim=4)
    save_model(folder, model, extra={"ontology": onto.to_data()})
    calibrator = TopDownCalibrator(["name:plate", "rel:on"], embedding_dim=8, hidden_dim=8)
    torch.nn.init.normal_(calibrator.head[-1].weight, std=1.0)
    save_calibrator(folder, calibrator)
    return folder, calibrator.eval()


def run_cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_inspect_a_program_line_prints_the_table_and_draws(model_folder, tmp_path, capsys):
    folder, calibrator = model_folder
    code, out, err = run_cli(capsys, "calibrate", "--model", folder, "--inspect", PROGRAM, "--plot", tmp_path / "c.png")
    assert code == 0, err
    program = Compiler(Ontology.gqa()).compile_text(PROGRAM).program
    assert f"DFOL: {program.term()}" in out
    assert format_step_parameters(step_parameters(calibrator, program)) in out  # the saved calibrator's numbers
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    assert not (folder / "calibrator_state.pt").exists()  # inspecting trains nothing


@pytest.mark.slow
def test_inspect_a_question_by_id(model_folder, capsys):
    folder, calibrator = model_folder
    code, out, err = run_cli(capsys, "calibrate", "--model", folder, "--inspect", "op00", "--questions", QUESTIONS)
    assert code == 0, err
    semantic = json.loads(QUESTIONS.read_text())["op00"]["semantic"]
    program = Compiler(Ontology.gqa()).compile_semantic(semantic).program
    assert out.startswith("question op00")
    assert format_step_parameters(step_parameters(calibrator, program)) in out


@pytest.mark.slow
@pytest.mark.parametrize("args,message", [
    (["--inspect", "op99", "--questions", QUESTIONS], "'op99' is neither a GQA program line nor a question id"),
    (["--inspect", "select: plate->exist: ? [3]"], "dependency [3] must point to an earlier step"),
    (["--inspect", "select: unicorn->exist: ? [0]"], "concept not learned: name 'unicorn'"),
    (["--plot", "c.png"], "--plot draws what --inspect reads"),
    (["--inspect", PROGRAM, "--data", "no/such/folder"], "no such dataset folder"),
])
def test_bad_input_is_one_line(model_folder, capsys, args, message):
    code, out, err = run_cli(capsys, "calibrate", "--model", model_folder[0], *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.slow
def test_a_model_without_a_calibrator_is_one_line(tmp_path, model_folder, capsys):
    folder = tmp_path / "plain"
    folder.mkdir()
    for f in model_folder[0].iterdir():
        if not f.name.startswith("calibrator"):
            (folder / f.name).write_bytes(f.read_bytes())
    code, _, err = run_cli(capsys, "calibrate", "--model", folder, "--inspect", PROGRAM)
    assert code == 2 and "no calibrator in this model folder" in err


@pytest.mark.slow
def test_a_plot_matplotlib_cannot_write_or_a_file_of_the_model_is_refused_before_any_work(model_folder, tmp_path,
                                                                                         capsys):
    import shutil
    folder = tmp_path / "m"
    shutil.copytree(model_folder[0], folder)
    code, out, err = run_cli(capsys, "calibrate", "--model", folder, "--inspect", PROGRAM, "--plot", tmp_path / "c.txt")
    assert code == 2 and out == "" and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "--plot" in err and ".txt" in err and ".png" in err and ".pdf" in err
    assert not (tmp_path / "c.txt").exists()
    (folder / "notes.png").write_bytes(b"the user's")  # any file of the model folder is an input
    code, out, err = run_cli(capsys, "calibrate", "--model", folder, "--inspect", PROGRAM, "--plot",
                             folder / "notes.png")
    assert code == 2 and out == "" and "give another path" in err and len(err.strip().splitlines()) == 1
    assert (folder / "notes.png").read_bytes() == b"the user's"
