"""`nablafol eval --shard I/N` then `--merge` (or under torchrun): the merged outputs are byte
for byte those of one process, the scores are the whole set's, and a shard that did not finish
is refused, then resumed."""
import shutil
from pathlib import Path

import pytest

from nablafol.cli import main
from nablafol.pipeline.journal import EvalJournal

from distributed_helpers import tiny_dataset, torchrun

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "gqa" / "every_operation"
CRIC = Path(__file__).resolve().parents[1] / "fixtures" / "cric"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Three evaluations: golden scene graphs (one question skipped: its concept needs a knowledge
    base), a neural oracle over features (details full of float probabilities), and CRIC's
    questions (CRIC's predictions, written from the details)."""
    import torch

    from nablafol.dsl import Ontology
    from nablafol.neural import ConceptVocabulary, NeuralOracleModel, save_model
    root = tmp_path_factory.mktemp("sharded")
    data = tiny_dataset(root / "data")
    onto = Ontology.from_folder(data / "ontology")
    torch.manual_seed(0)
    model = NeuralOracleModel.for_vocabulary(ConceptVocabulary.from_ontology(onto), feature_dim=16, hidden_dim=16)
    save_model(root / "model", model, extra={"ontology": onto.to_data()})
    return {
        "golden": ["--questions", FIX / "questions.json", "--scene-graphs", FIX / "sceneGraphs.json",
                   "--chunk-size", "4", "--batch-size", "3"],
        "features": ["--questions", data / "val_balanced_questions.json", "--features", data / "features",
                     "--model", root / "model", "--chunk-size", "5", "--batch-size", "4"],
        "cric": ["--questions", CRIC / "val_questions.json", "--scene-graphs", CRIC / "scene_graphs.json",
                 "--knowledge", CRIC / "knowledge_graph.json", "--chunk-size", "2"],
    }


def _eval(capsys, out: Path, args, *extra) -> tuple[int, str, str]:
    code = main(["eval", *map(str, args), "--predictions", str(out / "pred.json"),
                 "--details", str(out / "details.jsonl"), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _files(out: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def _scores(stdout: str) -> list[str]:
    """The printed scores and skips (the first line holds the run's timing or how it was merged;
    the last names the skipped file, in each run's own folder)."""
    return [line for line in stdout.splitlines()[1:] if not line.startswith("all skipped questions")]


def _attentions(kind: str, out: Path) -> list[str]:
    """GQA's attentions file too, for the golden run (written at the end from the details)."""
    return ["--attentions", str(out / "attentions.json")] if kind == "golden" else []


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["golden", "features", "cric"])
def test_shards_merged_equal_one_process_byte_for_byte(inputs, kind, tmp_path, capsys):
    one, split = tmp_path / "one", tmp_path / "split"
    code, single_out, err = _eval(capsys, one, inputs[kind], *_attentions(kind, one))
    assert code == 0, err
    for index in range(3):  # shard 1 with forked workers: how a shard answers its chunks does not matter
        extra = ["--workers", "2"] if index == 1 else []
        code, out, err = _eval(capsys, split, inputs[kind], "--shard", f"{index}/3", *extra, *_attentions(kind, split))
        assert code == 0 and out.startswith(f"shard {index}/3: "), err
    assert not (split / "pred.json").exists()
    code, merged_out, err = _eval(capsys, split, inputs[kind], "--merge", *_attentions(kind, split))
    assert code == 0, err
    assert _files(split) == _files(one)  # predictions, details, skipped list; no shard file left
    assert _scores(merged_out) == _scores(single_out) and "merged from 3 shards" in merged_out
    if kind == "golden":
        assert {"pred.skipped.json", "attentions.json"} <= set(_files(one))


@pytest.mark.slow
def test_torchrun_eval_answers_a_shard_per_process_and_rank_0_merges(inputs, tmp_path, capsys):
    one, split = tmp_path / "one", tmp_path / "split"
    code, single_out, _ = _eval(capsys, one, inputs["features"])
    assert code == 0
    launched = torchrun("eval", *inputs["features"], "--predictions", split / "pred.json",
                        "--details", split / "details.jsonl")
    assert launched.returncode == 0, launched.stderr[-3000:]
    assert _files(split) == _files(one)
    assert "merged from 2 shards" in launched.stdout and "shard 1/2: " in launched.stdout
    assert all(line in launched.stdout for line in _scores(single_out))


@pytest.mark.slow
def test_an_unfinished_shard_is_refused_then_resumed_without_answering_again(inputs, tmp_path, capsys, monkeypatch):
    one, split = tmp_path / "one", tmp_path / "split"
    args = inputs["golden"]
    assert _eval(capsys, one, args)[0] == 0
    assert _eval(capsys, split, args, "--shard", "0/2")[0] == 0

    def killed(self):  # the shard dies after its last chunk, before it seals its journal
        raise KeyboardInterrupt
    monkeypatch.setattr(EvalJournal, "seal", killed)
    assert _eval(capsys, split, args, "--shard", "1/2")[0] == 130
    monkeypatch.undo()
    code, _, err = _eval(capsys, split, args, "--merge")
    assert code == 2 and "pred.json.shard-1-of-2.journal" in err and "is not finished" in err
    assert len(err.strip().splitlines()) == 1
    code, out, err = _eval(capsys, split, args, "--shard", "1/2", "--resume")
    assert code == 0 and "0 done in this run" in out, err
    assert _eval(capsys, split, args, "--merge")[0] == 0
    assert _files(split) == _files(one)


@pytest.mark.slow
def test_a_missing_shard_or_one_run_with_other_options_is_refused_in_one_line(inputs, tmp_path, capsys):
    args = inputs["golden"]
    assert _eval(capsys, tmp_path, args, "--shard", "0/2")[0] == 0
    code, _, err = _eval(capsys, tmp_path, args, "--merge")
    assert code == 2 and "shard-1-of-2.journal" in err and "has not run" in err and len(err.strip().splitlines()) == 1
    assert _eval(capsys, tmp_path, args, "--shard", "1/2", "--threshold", "0.4")[0] == 0
    code, _, err = _eval(capsys, tmp_path, args, "--merge")
    assert code == 2 and "other settings (threshold)" in err and len(err.strip().splitlines()) == 1
    code, _, err = _eval(capsys, tmp_path, args, "--merge", "--shard", "0/2")
    assert code == 2 and "give one of the two" in err
    shutil.rmtree(tmp_path)
    tmp_path.mkdir()
    code, _, err = _eval(capsys, tmp_path, args, "--merge")
    assert code == 2 and "no shard journal to merge" in err
