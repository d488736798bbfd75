"""The written dataset: GQA's files, readable by nablafol.data, deterministic to the byte."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nablafol.dsl import Ontology, program_from_semantic
from nablafol.data import FeatureStore, load_questions, load_scene_graphs
from nablafol.synthetic import CrispExecutor, DatasetError, build_dataset, generate_dataset

ROOT = Path(__file__).resolve().parents[2]
FILES = ["dataset_card.json", "features/gqa_objects_0.h5", "features/gqa_objects_info.json", "ontology/SOURCE.md",
         "ontology/attributes.json", "ontology/hypernyms.json", "ontology/relations.json",
         "testdev_balanced_questions.json", "testdev_choices.json", "train_balanced_questions.json",
         "train_choices.json", "train_sceneGraphs.json", "val_balanced_questions.json", "val_choices.json",
         "val_sceneGraphs.json"]


@pytest.mark.slow
def test_files_are_gqas_and_read_back(written):
    folder, summary, _ = written
    assert list(summary.files) == FILES and all((folder / f).is_file() for f in FILES)
    assert not (folder / "testdev_sceneGraphs.json").exists()  # as in GQA
    assert summary.scenes == {"train": 40, "val": 15, "testdev": 15}
    graphs = {**load_scene_graphs(folder / "train_sceneGraphs.json"), **load_scene_graphs(folder / "val_sceneGraphs.json")}
    questions = {split: load_questions(folder / f"{split}_balanced_questions.json") for split in ("train", "val", "testdev")}
    assert {s: len(q) for s, q in questions.items()} == summary.questions
    with FeatureStore(folder / "features") as store:
        assert len(store) == 70
        for split, qs in questions.items():
            for q in qs.values():
                assert q.image_id in store and (split == "testdev" or q.image_id in graphs)
                program_from_semantic(list(q.semantic))
        for image_id, graph in graphs.items():  # rows follow the scene graph's object order
            features, boxes, width, height = store[image_id]
            assert features.shape == (len(graph.objects), 16) and (width, height) == (graph.width, graph.height)
            expected = [(o.x, o.y, o.x + o.w, o.y + o.h) for o in graph.objects]
            assert np.array_equal(boxes, np.array(expected, dtype=np.float32))


@pytest.mark.slow
def test_answers_in_the_files_equal_a_rerun_of_the_crisp_executor(written, written_sizes):
    folder, _, _ = written
    executor = CrispExecutor(Ontology.from_folder(folder / "ontology"))
    for split in ("train", "val"):
        graphs = load_scene_graphs(folder / f"{split}_sceneGraphs.json")
        for q in load_questions(folder / f"{split}_balanced_questions.json").values():
            assert executor.answer(program_from_semantic(list(q.semantic)), graphs[q.image_id]) == q.answer
    # testdev ships without scene graphs: its scenes come from the same seed, in memory
    arguments = {k: v for k, v in written_sizes.items() if k != "feature_dim"}
    memory = build_dataset(**arguments)
    scenes = {g.image_id: g for g in memory.scenes["testdev"]}
    on_disk = load_questions(folder / "testdev_balanced_questions.json")
    assert [q.to_record() for q in on_disk.values()] == [q.to_record() for q in memory.questions["testdev"]]
    for q in on_disk.values():
        assert executor.answer(program_from_semantic(list(q.semantic)), scenes[q.image_id]) == q.answer


@pytest.mark.slow
def test_dataset_card(written):
    folder, summary, _ = written
    card = json.loads((folder / "dataset_card.json").read_text())
    assert card["seed"] == 5 and card["features"]["dim"] == 16 and card["features"]["slots"] == 100
    assert {s: v["scenes"] for s, v in card["splits"].items()} == summary.scenes
    assert {s: v["questions"] for s, v in card["splits"].items()} == summary.questions
    assert all(v["yes"] == v["no"] for v in card["splits"].values())
    strengths = {c: v["strength"] for c, v in card["concepts"].items()}
    assert strengths["man"] > 0 and set(card["features"]["hidden_concepts"]) == {
        c for c, s in strengths.items() if s <= 0.1}
    assert "scene-graph order" in card["features"]["row_order"]
    assert set(card["vocabulary"]["categories"]) == set(json.loads((folder / "ontology/hypernyms.json").read_text()))


@pytest.mark.slow
def test_progress_reaches_its_total(written):
    _, _, calls = written
    totals = {total for _, total, _ in calls}
    assert totals == {140}
    done = [d for d, _, _ in calls]
    assert done == sorted(done) and done[-1] == 140 and calls[-1][2] == "features"


@pytest.mark.slow
def test_same_seed_gives_byte_identical_files_in_another_process(written, written_sizes, tmp_path):
    folder, _, _ = written
    code = (f"import sys; from nablafol.synthetic import generate_dataset; "
            f"generate_dataset(sys.argv[1], **{written_sizes!r})")
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, env=env, check=True, capture_output=True)
    for name in FILES:
        assert (tmp_path / name).read_bytes() == (folder / name).read_bytes(), name


@pytest.mark.slow
def test_another_seed_gives_another_dataset(written, tmp_path):
    folder, _, _ = written
    generate_dataset(tmp_path, n_train=3, n_val=1, n_testdev=1, seed=6, feature_dim=4)
    other = build_dataset(n_train=3, n_val=1, n_testdev=1, seed=5)
    mine = load_scene_graphs(tmp_path / "train_sceneGraphs.json")
    assert [g.to_record() for g in mine.values()] != [g.to_record() for g in other.scenes["train"]]
    with FeatureStore(tmp_path / "features") as store:
        assert store[next(iter(mine))].features.shape[1] == 4


@pytest.mark.parametrize("arguments, words", [
    (dict(n_train=-1), "n_train must be a whole number >= 0"),
    (dict(n_train=0, n_val=0, n_testdev=0), "at least one scene"),
    (dict(feature_dim=1), "feature_dim"),
    (dict(seed="zero"), "seed"),
    (dict(questions_per_scene=0), "questions_per_scene"),
    (dict(noise_std=float("nan")), "noise_std"),
    (dict(spatial_neighbours=0), "spatial neighbours"),
    (dict(spatial_neighbours=True), "spatial neighbours"),
])
def test_bad_arguments_are_one_clear_line(tmp_path, arguments, words):
    with pytest.raises(DatasetError) as caught:
        generate_dataset(tmp_path, **{"n_train": 1, "n_val": 0, "n_testdev": 0, **arguments})
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_an_output_path_that_is_a_file_is_refused(tmp_path):
    target = tmp_path / "taken"
    target.write_text("")
    with pytest.raises(DatasetError, match="not a folder"):
        generate_dataset(target, n_train=1, n_val=0, n_testdev=0)


def test_spatial_neighbours_reach_the_files_and_the_card(tmp_path):
    summary = generate_dataset(tmp_path, n_train=6, n_val=0, n_testdev=0, feature_dim=4, seed=2,
                               min_objects=8, max_objects=12, spatial_neighbours=1)
    card = json.loads((tmp_path / "dataset_card.json").read_text())
    graphs = load_scene_graphs(tmp_path / "train_sceneGraphs.json")
    dense = build_dataset(6, 0, 0, 2, min_objects=8, max_objects=12)
    assert card["spatial_neighbours"] == 1 and summary.scenes["train"] == 6
    sparse_count = sum(len(o.relations) for g in graphs.values() for o in g.objects)
    dense_count = sum(len(o.relations) for g in dense.scenes["train"] for o in g.objects)
    assert [g.image_id for g in dense.scenes["train"]] == list(graphs)  # the same scenes, fewer relations
    assert sparse_count < dense_count / 3
    executor = CrispExecutor(Ontology.from_folder(tmp_path / "ontology"))  # answers follow the sparse graphs
    for q in load_questions(tmp_path / "train_balanced_questions.json").values():
        assert executor.answer(program_from_semantic(list(q.semantic)), graphs[q.image_id]) == q.answer
