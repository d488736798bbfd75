"""The demo's stages beside the training: a second process gives what the same function gives
in this one, and a failure there is one line here."""
import pytest
import torch

from nablafol.pipeline.demo import _learning_curves
from nablafol.pipeline.demo_beside import Beside, BesideRequest
from nablafol.pipeline.demo_report import ANSWERS_ONLY, BLACK_BOX, LABELS_ONLY, PRETRAINED, learning_curves_section
from nablafol.synthetic import generate_dataset


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("beside") / "data"
    generate_dataset(folder, n_train=40, n_val=10, n_testdev=10, seed=2, feature_dim=8)
    return folder


def request_for(data, out, **change):
    settings = dict(seed=1, parser_epochs=1, blackbox_epochs=2, ceiling_epochs=2, pretrained_epochs=1, lr=1e-3,
                    threads=1)
    return BesideRequest(data, out, **{**settings, **change})


@pytest.mark.slow
def test_a_second_process_gives_what_this_one_gives(tiny, tmp_path):
    here = Beside(request_for(tiny, tmp_path / "here"), one_process=True).result()
    there = Beside(request_for(tiny, tmp_path / "there")).result()
    assert here["black_box_predictions"] == there["black_box_predictions"] and here["black_box_predictions"]
    assert here["ceiling_predictions"] == there["ceiling_predictions"] and here["ceiling_predictions"]
    for a, b in zip(here["black_box"].model.state_dict().values(), there["black_box"].model.state_dict().values()):
        assert torch.equal(a, b)
    for key in ("ceiling_history", "pretrained_history"):
        drop = ("seconds", "val_seconds", "extra")  # the clocks differ, nothing else
        assert [{k: v for k, v in r.items() if k not in drop} for r in here[key]] == \
            [{k: v for k, v in r.items() if k not in drop} for r in there[key]]
    assert [h["val_accuracy"] for h in here["black_box"].history] == [h["val_accuracy"] for h in there["black_box"].history]
    assert (tmp_path / "there" / "parser").is_dir() and (tmp_path / "there" / "pretrained" / "config.json").exists()
    assert there["span"][0] < there["span"][1] and len(there["span"]) == 2
    assert set(there["timings"]) == set(there["stage_cpu_seconds"]) == {"parser", "black box", "ceiling", "Bayes ceiling", "pretrained"}
    assert there["parser_read"].keys() == here["parser_read"].keys() and there["parser"]["exact_match"] == here["parser"]["exact_match"]
    # every epoch validated: the learning curves' points
    assert len(there["ceiling_history"]) == 2 and all("val_accuracy" in r for r in there["ceiling_history"])
    assert len(there["pretrained_history"]) == 1 and there["pretrained_history"][0]["val_accuracy"] is not None


@pytest.mark.slow
def test_started_before_the_data_it_gives_what_it_gives_after(tiny, tmp_path):
    """The demo's way: the second process starts first, trains the parser on the training
    questions handed over while the other splits are drawn, and goes on once every file is written."""
    early = Beside(request_for(tmp_path / "data", tmp_path / "early"), before_data=True)
    handed = []
    generate_dataset(tmp_path / "data", n_train=40, n_val=10, n_testdev=10, seed=2, feature_dim=8,
                     on_split=lambda split, questions: handed.append(split) or early.hand(split, questions))
    assert handed == ["train", "val", "testdev"]
    early.written()
    there = early.result()
    here = Beside(request_for(tiny, tmp_path / "here"), one_process=True).result()
    assert there["parser_read"] == here["parser_read"] and there["parser"]["exact_match"] == here["parser"]["exact_match"]
    assert here["ceiling_predictions"] == there["ceiling_predictions"] and here["ceiling_predictions"]
    assert here["black_box_predictions"] == there["black_box_predictions"]
    assert set(there["timings"]) == {"parser", "black box", "ceiling", "Bayes ceiling", "pretrained"}


def test_the_training_questions_handed_over_are_those_written(tmp_path):
    from nablafol.data import load_questions
    handed = {}
    generate_dataset(tmp_path / "d", n_train=6, n_val=2, n_testdev=2, seed=3, feature_dim=8,
                     on_split=lambda split, questions: handed.setdefault(split, list(questions)))
    for split in ("train", "val", "testdev"):
        assert handed[split] == list(load_questions(tmp_path / "d" / f"{split}_balanced_questions.json").values())


@pytest.mark.slow
def test_a_failure_beside_before_the_data_is_one_line_here_and_handing_over_goes_on(tmp_path):
    beside = Beside(request_for(tmp_path / "no such data", tmp_path / "out"), before_data=True)
    beside.hand("train", [])  # no question: the parser refuses, the process ends
    beside.hand("train", [])
    beside.written()
    with pytest.raises(RuntimeError, match=r"^demo, stages beside the training: \w+Error: "):
        beside.result()


@pytest.mark.slow
def test_a_failure_beside_is_one_line_here(tmp_path):
    beside = Beside(request_for(tmp_path / "no such data", tmp_path / "out"))
    with pytest.raises(RuntimeError, match=r"^demo, stages beside the training: \w+Error: .*no such data"):
        beside.result()


def test_the_learning_curves_count_every_second_and_continue_the_labels():
    answers = [{"seconds": 10.0, "val_accuracy": 0.5}, {"seconds": 12.0, "val_accuracy": 0.6}]  # validation inside
    labels = [{"seconds": 3.0, "val_seconds": 1.0, "val_accuracy": 0.7}]  # validation timed apart
    pretrained = [{"seconds": 9.0, "val_accuracy": 0.8}]
    black_box = [{"seconds": 1.5, "val_seconds": 0.5, "val_accuracy": 0.4}]
    curves = _learning_curves(answers, labels, pretrained, black_box)
    assert curves[ANSWERS_ONLY] == [(10.0, 0.5), (22.0, 0.6)]
    assert curves[LABELS_ONLY] == [(4.0, 0.7)]
    assert curves[PRETRAINED] == [(13.0, 0.8)]  # continues the label curve's clock
    assert curves[BLACK_BOX] == [(2.0, 0.4)]
    text = learning_curves_section(curves, 1, {"Bayes": 0.9})
    assert "then 1 epoch(s) through the reasoning" in text and "80.00% after 13 s" in text


def test_without_pretrained_epochs_the_learning_curves_say_so_without_that_line():
    curves = _learning_curves([{"seconds": 10.0, "val_accuracy": 0.5}], [{"seconds": 3.0, "val_accuracy": 0.7}], [],
                              [{"seconds": 1.5, "val_accuracy": 0.4}])
    assert curves[PRETRAINED] == []
    text = learning_curves_section(curves, 0, {"Bayes": 0.9})  # --pretrained-epochs 0
    assert PRETRAINED not in text and "70.00% after 3 s" in text and "the supervised one answer" in text


def test_a_script_from_standard_input_cannot_spawn_so_the_demo_runs_in_one_process(monkeypatch):
    import sys
    import types

    from nablafol.pipeline.demo_beside import can_spawn
    from nablafol.pipeline.demo_report import timings_section
    main = types.ModuleType("__main__")
    main.__file__ = "<stdin>"  # what `python - < script` leaves: no file a spawned process could re-read
    monkeypatch.setitem(sys.modules, "__main__", main)
    assert not can_spawn()
    monkeypatch.setattr(main, "__file__", __file__)
    assert can_spawn()
    del main.__file__  # `python -c`, an interactive session: nothing to re-read, spawn works
    assert can_spawn()
    text = timings_section({"train oracle": 1.0}, {"parser": 2.0}, 3.0, {"this process": 3.0}, one_process=True)
    assert "in this process, before the base model's training" in text and "second process" not in text
    assert "in a second process" in timings_section({}, {}, 1.0, {})
    text = timings_section({"golden": 2.0}, {"parser": 5.0}, 9.0, {"this process": 4.0}, stage_cpu=({"golden": 1.5}, {}))
    assert "| golden | 2.0 | 1.5 |" in text and "| beside the training: parser | 5.0 | – |" in text
    assert "began, ended" not in text
    assert "| the stages beside: began, ended (seconds from the start) | 3.5, 8.0 | |" in timings_section(
        {}, {}, 9.0, {}, beside_span=[3.5, 8.0])
