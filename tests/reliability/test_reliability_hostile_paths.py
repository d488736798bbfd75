"""What a path or a file can carry besides content: a config that asks for 10**12 layers, HDF5
links to other files (a pipe among them), symbolic link loops, a pipe given as the questions,
huge feature values, a second run on the same output, an input rewritten during the run, a full
disk, a file one may not read. Each ends in one line naming the file, or the right result; the
cases that could hang are bounded by what the files hold, never by a clock."""
from __future__ import annotations

import errno
import json
import multiprocessing
import os
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

from reliability_helpers import (EVERY, FEATURES, FIX, assert_one_line_refusal, features_copy, run_cli,
                                 write_model_folder)

QUESTIONS = FIX / "val_balanced_questions.json"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return write_model_folder(tmp_path_factory.mktemp("model"))


def _eval_features(capsys, tmp_path, features, model, *extra):
    return run_cli(capsys, "eval", "--questions", QUESTIONS, "--features", features, "--model", model,
                   "--predictions", tmp_path / "p.json", *extra)


def _eval_graphs(capsys, predictions, *extra, questions=EVERY / "questions.json"):
    return run_cli(capsys, "eval", "--questions", questions, "--scene-graphs", EVERY / "sceneGraphs.json",
                   "--predictions", predictions, *extra)


# -- absurd configs -------------------------------------------------------------------------------
def test_parameter_count_is_a_closed_form_for_any_layer_count():
    """10**12 hidden layers counted without a loop over them (it hung every command loading it),
    equal to the sum layer by layer where that sum can be made."""
    from nablafol.neural.checkpoint import parameter_count
    from nablafol.neural.model import NeuralOracleConfig
    base = NeuralOracleConfig(feature_dim=16, num_unary=5, num_binary=3, hidden_dim=8, embedding_dim=4,
                              projection_dim=4, pair_hidden_dim=4)
    counts = [parameter_count(base.__class__(**{**base.__dict__, "hidden_layers": n})) for n in range(1, 5)]
    step = counts[1] - counts[0]
    assert step == 8 * 8 + 8 and all(b - a == step for a, b in zip(counts, counts[1:]))
    huge = parameter_count(base.__class__(**{**base.__dict__, "hidden_layers": 10**12}))
    assert huge == counts[0] + (10**12 - 1) * step


def test_a_config_asking_for_10_to_the_12_layers_is_refused(tmp_path, capsys, model):
    folder = tmp_path / "m"
    shutil.copytree(model, folder)
    config = json.loads((folder / "config.json").read_text())
    config["model"]["hidden_layers"] = 10**12
    (folder / "config.json").write_text(json.dumps(config))
    code, _, err = _eval_features(capsys, tmp_path, FEATURES, folder)
    assert "asks for" in assert_one_line_refusal(code, err, folder / "config.json")


def test_a_config_number_no_float_holds_is_refused(tmp_path, capsys, model):
    """Found by fuzzing the commands: `dropout: 10**400` (an int no float holds) raised
    OverflowError from the finiteness check itself."""
    folder = tmp_path / "m"
    shutil.copytree(model, folder)
    config = json.loads((folder / "config.json").read_text())
    for key in ("dropout", "cosine_scale", "prior_logit"):
        config["model"][key] = 10**400
        (folder / "config.json").write_text(json.dumps(config))
        code, _, err = _eval_features(capsys, tmp_path, FEATURES, folder)
        assert f"{key} must be" in assert_one_line_refusal(code, err, folder / "config.json")
        config["model"][key] = 0.5


# -- HDF5 reaching outside its file ---------------------------------------------------------------
def _replace_dataset(path: Path, name: str, make) -> None:
    with h5py.File(path, "a") as handle:
        data = handle[name][()]
        del handle[name]
        make(handle, name, data)


def test_an_hdf5_external_link_is_refused_not_followed(tmp_path, capsys, model):
    folder = features_copy(tmp_path)
    elsewhere = tmp_path / "elsewhere.h5"
    with h5py.File(folder / "gqa_objects_0.h5", "r") as handle, h5py.File(elsewhere, "w") as other:
        other["features"] = handle["features"][()]  # readable data: followed, it would be read as features

    def link(handle, name, _):
        handle[name] = h5py.ExternalLink(str(elsewhere), "features")
    _replace_dataset(folder / "gqa_objects_0.h5", "features", link)
    code, _, err = _eval_features(capsys, tmp_path, folder, model)
    line = assert_one_line_refusal(code, err, folder / "gqa_objects_0.h5")
    assert "is a link to" in line and "elsewhere.h5" in line


def test_hdf5_external_storage_in_a_pipe_is_refused_without_opening_it(tmp_path, capsys, model):
    """The boxes' bytes stored in a pipe: the pipe holds enough bytes for any read, so a reader
    that opened it would read them and answer (the test fails), never wait."""
    folder = features_copy(tmp_path)
    pipe = tmp_path / "boxes.fifo"
    os.mkfifo(pipe)
    keep_open = os.open(pipe, os.O_RDWR | os.O_NONBLOCK)  # a FIFO opened read-write does not wait
    try:
        os.write(keep_open, b"\0" * 60_000)

        def external(handle, name, data):
            handle.create_dataset(name, shape=data.shape, dtype=data.dtype, external=[(str(pipe), 0, 60_000)])
        _replace_dataset(folder / "gqa_objects_0.h5", "bboxes", external)
        code, _, err = _eval_features(capsys, tmp_path, folder, model)
    finally:
        os.close(keep_open)
    line = assert_one_line_refusal(code, err, folder / "gqa_objects_0.h5")
    assert "keeps its data in external files" in line and "boxes.fifo" in line


def test_huge_finite_features_name_the_file_and_the_image(tmp_path, capsys, model):
    folder = features_copy(tmp_path)

    def huge(handle, name, data):
        data[1, 0, :] = 1e20  # image 2354786 is row 1 of file 0; finite as float32
        handle[name] = data
    _replace_dataset(folder / "gqa_objects_0.h5", "features", huge)
    code, _, err = _eval_features(capsys, tmp_path, folder, model)
    line = assert_one_line_refusal(code, err, folder / "gqa_objects_0.h5")
    assert "(image 2354786, row 1)" in line and "NaN" in line and "1e+20" in line


# -- paths ---------------------------------------------------------------------------------------
def test_a_symbolic_link_loop_is_one_line_as_an_output_or_an_input(tmp_path, capsys):
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    for args in ((loop,), (tmp_path / "p.json", "--details", loop)):
        code, _, err = _eval_graphs(capsys, *args)
        assert "a loop of symbolic links" in assert_one_line_refusal(code, err, loop)
    code, _, err = _eval_graphs(capsys, tmp_path / "p.json", questions=loop)
    assert "a loop of symbolic links" in assert_one_line_refusal(code, err, loop)
    code, _, err = run_cli(capsys, "score", "--questions", EVERY / "questions.json", "--predictions", loop)
    assert "a loop of symbolic links" in assert_one_line_refusal(code, err, loop)


def test_questions_from_a_pipe_say_why_in_one_line(tmp_path, capsys):
    """`--questions <(cat Q)`: a pipe, read once; eval and score read the questions twice."""
    read_end, write_end = os.pipe()
    try:
        piped = f"/dev/fd/{read_end}"
        for command in (("eval", "--scene-graphs", EVERY / "sceneGraphs.json", "--predictions", tmp_path / "p.json"),
                        ("score", "--predictions", tmp_path / "p.json")):
            code, _, err = run_cli(capsys, command[0], "--questions", piped, *command[1:])
            assert "is a pipe or a device" in assert_one_line_refusal(code, err, piped)
    finally:
        os.close(read_end)
        os.close(write_end)


@pytest.mark.parametrize("content, said", [("", "is empty, expected a JSON list"),
                                           ("questionId,prediction\nop00,fork\n", "is not JSON"),
                                           ("  \n", "is empty, expected a JSON list")])
def test_an_empty_or_csv_predictions_file_says_the_format_expected(tmp_path, capsys, content, said):
    predictions = tmp_path / "p.csv"
    predictions.write_text(content)
    code, _, err = run_cli(capsys, "score", "--questions", EVERY / "questions.json", "--predictions", predictions)
    line = assert_one_line_refusal(code, err, predictions)
    assert said in line and '[{"questionId", "prediction"}, ...]' in line


def test_model_weights_one_may_not_read_say_permission_denied(tmp_path, capsys, model, monkeypatch):
    folder = tmp_path / "m"
    shutil.copytree(model, folder)
    weights = folder / "model.safetensors"
    weights.chmod(0)
    if os.geteuid() == 0:  # root reads any file: the kernel's refusal, as it comes to anyone else
        import builtins
        real_open = builtins.open

        def refusing_open(file, *args, **kwargs):
            if Path(str(file)) == weights:
                raise PermissionError(errno.EACCES, "Permission denied", str(file))
            return real_open(file, *args, **kwargs)
        monkeypatch.setattr(builtins, "open", refusing_open)
    try:
        code, _, err = _eval_features(capsys, tmp_path, FEATURES, folder)
    finally:
        weights.chmod(0o644)
    assert "permission denied" in assert_one_line_refusal(code, err, weights)


def test_a_full_disk_names_the_file_being_written(tmp_path, capsys, monkeypatch):
    real_fsync = os.fsync

    def full(fd):
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(tmp_path)):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)
    monkeypatch.setattr(os, "fsync", full)
    code, _, err = _eval_graphs(capsys, tmp_path / "p.json")
    line = assert_one_line_refusal(code, err, tmp_path / "p.json")  # its journal, beside it, is the first written
    assert "the disk is full; free space or write elsewhere" in line
    assert not (tmp_path / "p.json").exists()


# -- one run per output, inputs unchanged through the run -----------------------------------------
def _held_eval(predictions: Path, holding, release, extra=()) -> None:
    """A child process: an eval (with ``extra`` options) whose answering waits, its output locked,
    until ``release``."""
    import nablafol.pipeline.evaluation as evaluation
    from nablafol.cli import main
    real = evaluation.run_evaluation

    def paused(job, **kwargs):
        holding.set()
        release.wait()
        return real(job, **kwargs)
    import nablafol.cli.commands.evaluate  # noqa: F401 (run_evaluation is imported from the module at run time)
    evaluation.run_evaluation = paused
    code = main(["eval", "--questions", str(EVERY / "questions.json"), "--scene-graphs",
                 str(EVERY / "sceneGraphs.json"), "--predictions", str(predictions), *extra])
    os._exit(code)


def test_a_second_run_on_the_same_output_is_refused_and_the_first_is_unharmed(tmp_path, capsys):
    context = multiprocessing.get_context("fork")
    holding, release = context.Event(), context.Event()
    first = context.Process(target=_held_eval, args=(tmp_path / "p.json", holding, release))
    first.start()
    try:
        assert holding.wait(120), "the first run never took its output"
        code, _, err = _eval_graphs(capsys, tmp_path / "p.json")
        line = assert_one_line_refusal(code, err, tmp_path / "p.json")
        assert "is being written by another run" in line
    finally:
        release.set()
        first.join()
    assert first.exitcode == 0
    alone = tmp_path / "alone.json"
    assert _eval_graphs(capsys, alone)[0] == 0
    for name in ("p.json", "p.skipped.json"):  # what the first wrote is what a run alone writes
        assert (tmp_path / name).read_bytes() == (tmp_path / name.replace("p.", "alone.")).read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("p.")) == ["p.json", "p.skipped.json"]


def test_a_second_merge_into_the_same_predictions_is_refused_and_the_first_is_unharmed(tmp_path, capsys):
    """`eval --merge` holds the predictions it writes: a second merge (or a plain eval) of them is
    refused in one line while the first waits (events, no clock); the first then writes what one
    process writes."""
    predictions = tmp_path / "p.json"
    for index in range(2):
        assert _eval_graphs(capsys, predictions, "--shard", f"{index}/2")[0] == 0
    context = multiprocessing.get_context("fork")
    holding, release = context.Event(), context.Event()
    first = context.Process(target=_held_eval, args=(predictions, holding, release, ("--merge",)))
    first.start()
    try:
        assert holding.wait(120), "the merge never took its output"
        shards = sorted(p.name for p in tmp_path.iterdir())
        for extra in (("--merge",), ()):
            code, _, err = _eval_graphs(capsys, predictions, *extra)
            assert "is being written by another run" in assert_one_line_refusal(code, err, predictions)
        code, _, err = _eval_graphs(capsys, predictions, "--shard", "1/2")  # would replace a journal it reads
        assert "is being written by another run" in assert_one_line_refusal(code, err, "p.json.shard-1-of-2")
        assert sorted(p.name for p in tmp_path.iterdir()) == shards  # the shards the first merges, untouched
    finally:
        release.set()
        first.join()
    assert first.exitcode == 0
    assert _eval_graphs(capsys, tmp_path / "alone.json")[0] == 0
    assert predictions.read_bytes() == (tmp_path / "alone.json").read_bytes()


def test_rank_0_of_a_torchrun_eval_holds_the_predictions_it_merges_into(tmp_path, capsys, monkeypatch):
    """Under torchrun rank 0 merges the shards into the predictions at the end: it holds their
    lock from the start, so a run already writing them refuses the launch before any work."""
    import nablafol.pipeline.evaluation as evaluation
    from nablafol.data.output_lock import output_lock

    def must_not_run(job, **kwargs):
        raise AssertionError("the launch ran while another run held its predictions")
    monkeypatch.setattr(evaluation, "run_evaluation", must_not_run)
    for name, value in (("RANK", "0"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0")):
        monkeypatch.setenv(name, value)
    predictions = tmp_path / "p.json"
    with output_lock(predictions, "--predictions"):  # a plain eval, or a merge, of the same file
        code, _, err = _eval_graphs(capsys, predictions)
    assert "is being written by another run" in assert_one_line_refusal(code, err, predictions)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_input_rewritten_during_the_run_is_an_error_naming_it(tmp_path, capsys, monkeypatch):
    """The questions file rewritten in place, same size, once every question is answered: nothing
    is written from the mixed answers."""
    import nablafol.pipeline.evaluation as evaluation
    questions = tmp_path / "q.json"
    shutil.copy(EVERY / "questions.json", questions)
    real = evaluation.answer_stream

    def rewriting(*args, **kwargs):
        result = real(*args, **kwargs)
        text = questions.read_text()
        questions.write_text(text.replace('"fork"', '"FORK"'))
        stat = questions.stat()
        os.utime(questions, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a later time on any clock
        return result
    monkeypatch.setattr(evaluation, "answer_stream", rewriting)
    code, _, err = _eval_graphs(capsys, tmp_path / "p.json", "--details", tmp_path / "d.jsonl", questions=questions)
    progress = [line for line in err.splitlines() if line.startswith("eval ")]  # off a terminal, a line a decile
    line = assert_one_line_refusal(code, "\n".join(x for x in err.splitlines() if x not in progress), questions)
    assert "changed while the run read it" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.json"]  # no outputs, no journal, no details part
