"""Evaluation plans the next batch (its oracle on the device, the engine's plan) in a background
thread while the current one runs: the same outcomes, in the same order, as planning in turn."""
import threading
from pathlib import Path

import pytest

from nablafol.cli import main
from nablafol.data import load_questions, load_scene_graphs
from nablafol.dsl import Ontology
from nablafol.pipeline import evaluation
from nablafol.pipeline.answering import Answerer
from nablafol.pipeline.perception import SceneGraphPerception


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from nablafol.synthetic import generate_dataset
    root = tmp_path_factory.mktemp("overlap")
    generate_dataset(root, n_train=0, n_val=12, n_testdev=0, seed=7, feature_dim=8, questions_per_scene=10)
    return root


def _perception(data, threads: list):
    """The scene-graph perception, recording the thread that builds each batch's oracle."""
    perception = SceneGraphPerception(load_scene_graphs(data / "val_sceneGraphs.json"),
                                      ontology=Ontology.from_folder(data / "ontology"), device="cpu")
    build = perception.oracle

    def oracle(images):
        threads.append(threading.current_thread().name)
        return build(images)
    perception.oracle = oracle
    return perception


def test_overlapped_outcomes_equal_outcomes_planned_in_turn(data):
    """Every field of every outcome (probabilities, attention, exactness, fallbacks), in order."""
    questions = list(load_questions(data / "val_balanced_questions.json").values())
    runs, threads = [], {}
    for overlap in (False, True):
        seen = threads[overlap] = []
        answerer = Answerer(_perception(data, seen), batch_size=8, keep_outcomes=True, overlap=overlap)
        runs.append([answerer.answer_chunk(questions[start:start + 42]) for start in range(0, len(questions), 42)])
    assert runs[0] == runs[1]
    assert len(runs[1][0]) == 42 and sum(map(len, runs[1])) == len(questions)
    assert set(threads[False]) == {threading.current_thread().name}
    assert set(threads[True]) == {"nablafol-prefetch"} and len(threads[True]) == len(threads[False])


def test_eval_on_the_cpu_through_the_overlapped_path_writes_the_same_files(data, tmp_path, monkeypatch):
    """``nablafol eval --device cpu`` plans ahead, and its predictions and details are byte for
    byte those of a run that plans each batch in turn."""
    made, outputs = [], []
    answerer = evaluation._answerer

    def recorded(job, *rest):
        made.append(answerer(job, *rest))
        made[-1].overlap = overlap
        return made[-1]
    monkeypatch.setattr(evaluation, "_answerer", recorded)
    for overlap in (False, True):
        out = tmp_path / str(overlap)
        out.mkdir()
        assert main(["eval", "--questions", str(data / "val_balanced_questions.json"),
                     "--scene-graphs", str(data / "val_sceneGraphs.json"), "--ontology", str(data / "ontology"),
                     "--predictions", str(out / "pred.json"), "--details", str(out / "details.jsonl"),
                     "--chunk-size", "32", "--batch-size", "8", "--device", "cpu"]) == 0
        outputs.append(((out / "pred.json").read_bytes(), (out / "details.jsonl").read_bytes()))
    assert [a.overlap for a in made] == [False, True]
    assert outputs[0] == outputs[1] and Path(tmp_path / "True" / "pred.json").stat().st_size > 100


def test_an_error_planning_a_later_batch_is_raised_at_that_batch(data):
    """What the background thread raised reaches the loop at the batch it belongs to."""
    questions = list(load_questions(data / "val_balanced_questions.json").values())[:24]
    perception = _perception(data, [])
    build, calls = perception.oracle, []

    def third_fails(images):
        calls.append(images)
        if len(calls) == 3:
            raise OSError("scene file went away")
        return build(images)
    perception.oracle = third_fails
    with pytest.raises(OSError, match="went away"):
        Answerer(perception, batch_size=8).answer_chunk(questions)
    assert len(calls) == 3
