"""`nablafol eval --details D --explain K`: each details line carries the answer's explanation
(:func:`nablafol.explain`, as `nablafol answer --explain --json` gives it), a resumed run's
details are byte-identical to an uninterrupted run's, and the option is part of the job's identity."""
import json
from pathlib import Path

import pytest
import torch

from nablafol.cli import main
from nablafol.pipeline.journal import journal_path

CHUNK = 4


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from nablafol.synthetic import generate_dataset
    root = tmp_path_factory.mktemp("evalexplain")
    generate_dataset(root, n_train=0, n_val=4, n_testdev=0, seed=4, feature_dim=8, questions_per_scene=4)
    return root


def _argv(data, out: Path, *extra):
    return ["eval", "--questions", str(data / "val_balanced_questions.json"),
            "--scene-graphs", str(data / "val_sceneGraphs.json"), "--ontology", str(data / "ontology"),
            "--predictions", str(out / "pred.json"), "--details", str(out / "details.jsonl"),
            "--chunk-size", str(CHUNK), "--batch-size", "3", "--explain", "2", *extra]


def _outputs(out: Path) -> tuple:
    return (out / "pred.json").read_bytes(), (out / "details.jsonl").read_bytes()


@pytest.fixture(scope="module")
def reference(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    assert main(_argv(data, out)) == 0
    return _outputs(out)


@pytest.mark.slow
def test_each_details_line_carries_the_explanation_of_calling_explain_directly(data, reference):
    from nablafol import Engine, explain
    from nablafol.compiler import Compiler
    from nablafol.data import load_questions, load_scene_graphs, scene_graph_words
    from nablafol.dsl import Ontology
    from nablafol.pipeline.perception import SceneGraphPerception
    graphs = load_scene_graphs(data / "val_sceneGraphs.json")
    names, values = scene_graph_words(graphs)  # the open vocabulary eval answers with
    ontology = Ontology.from_folder(data / "ontology").joined({"name": names, None: values})
    perception = SceneGraphPerception(graphs, ontology=ontology)
    compiler = Compiler(ontology)
    questions = load_questions(data / "val_balanced_questions.json")
    lines = [json.loads(line) for line in reference[1].decode().splitlines()]
    compared = {"yes/no": 0, "open": 0}
    for line in lines:
        assert "explanation" in line, line["questionId"]
        if line.get("fallback"):  # explained on the widened program, which the compiler alone does not give
            continue
        question = questions[line["questionId"]]
        compiled = compiler.compile_source(question.program_source())
        direct = explain(Engine(), compiled.program, perception.oracle([question.image_id]), 0, k=2, facts=2)
        assert line["explanation"] == json.loads(json.dumps(direct.to_dict())), line["questionId"]
        assert line["explanation"]["answer"] == line["prediction"]
        assert len(line["explanation"]["facts"]) <= 2
        assert all(len(step["objects"]) <= 2 for step in line["explanation"]["steps"])
        compared["yes/no" if compiled.is_binary else "open"] += 1
    assert compared["yes/no"] and compared["open"], compared


def test_an_interrupted_run_resumed_gives_byte_identical_explanations(data, reference, tmp_path, monkeypatch,
                                                                     capsys):
    """Interrupted when the third chunk starts (an event, not a time), refused when resumed with
    another --explain, then resumed to the same bytes without answering the finished chunks again."""
    from nablafol.data import load_questions
    from nablafol.pipeline.answering import Answerer
    ids = list(load_questions(data / "val_balanced_questions.json"))
    original = Answerer.answer_chunk
    answered = []

    def interrupted_at_the_third_chunk(self, chunk, progress=None):
        if chunk[0].id == ids[2 * CHUNK]:
            raise KeyboardInterrupt
        answered.extend(q.id for q in chunk)
        return original(self, chunk, progress)

    monkeypatch.setattr(Answerer, "answer_chunk", interrupted_at_the_third_chunk)
    assert main(_argv(data, tmp_path)) == 130
    assert journal_path(tmp_path / "pred.json").exists() and not (tmp_path / "details.jsonl").exists()
    assert len(answered) == 2 * CHUNK
    capsys.readouterr()
    for other in (["--explain", "3"], []):
        argv = _argv(data, tmp_path, "--resume")
        argv = argv[:argv.index("--explain")] + argv[argv.index("--explain") + 2:] + other
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "other settings (explain)" in err[0], err
    answered.clear()
    monkeypatch.setattr(Answerer, "answer_chunk", lambda self, chunk, progress=None:
                        answered.extend(q.id for q in chunk) or original(self, chunk, progress))
    assert main(_argv(data, tmp_path, "--resume")) == 0
    assert _outputs(tmp_path) == reference
    assert len(answered) == len(ids) - 2 * CHUNK  # the finished chunks were not answered again


@pytest.mark.slow
def test_workers_give_byte_identical_explanations(data, reference, tmp_path):
    # each question is explained on its own scene: nothing depends on which process answers it
    assert main(_argv(data, tmp_path, "--workers", "2")) == 0
    assert _outputs(tmp_path) == reference


def test_shards_merged_give_byte_identical_explanations(data, reference, tmp_path):
    for shard in ("0/2", "1/2"):
        assert main(_argv(data, tmp_path, "--shard", shard)) == 0
    assert main(_argv(data, tmp_path, "--merge")) == 0
    assert _outputs(tmp_path) == reference


def test_explain_without_details_is_one_line(data, tmp_path, capsys):
    argv = _argv(data, tmp_path)
    at = argv.index("--details")
    assert main(argv[:at] + argv[at + 2:]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--explain" in err[0] and "--details" in err[0]
    assert not (tmp_path / "pred.json").exists()


def test_the_neural_oracle_is_explained_too(data, tmp_path):
    from nablafol.dsl import Ontology
    from nablafol.neural import ConceptVocabulary, NeuralOracleModel, save_model
    ontology = Ontology.from_folder(data / "ontology")
    torch.manual_seed(0)
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(ontology), feature_dim=8, hidden_dim=8)
    save_model(tmp_path / "model", model, extra={"ontology": ontology.to_data()})
    argv = _argv(data, tmp_path)
    at = argv.index("--scene-graphs")
    argv[at:at + 2] = ["--features", str(data / "features"), "--model", str(tmp_path / "model")]
    at = argv.index("--ontology")
    del argv[at:at + 2]
    assert main(argv) == 0
    lines = [json.loads(line) for line in (tmp_path / "details.jsonl").read_text().splitlines()]
    assert lines and all(line["explanation"]["answer"] == line["prediction"] for line in lines
                         if not line.get("fallback"))
    assert any(fact["effect"] != 0 for line in lines for fact in line["explanation"]["facts"])
