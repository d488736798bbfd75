"""A parser folder: JSON and safetensors only; what is written reads back the same; a broken
or hostile folder is refused in one line naming the file, and nothing in it ever runs."""
import json
import pickle
import shutil

import pytest
import torch

from nablafol.errors import InputFileError
from nablafol.semantic_parser import load_parser, save_parser


def copy_of(parser_folder, tmp_path):
    folder = tmp_path / "parser"
    shutil.copytree(parser_folder, folder)
    return folder


def edit_config(folder, **changes):
    path = folder / "parser.json"
    config = json.loads(path.read_text())
    for key, value in changes.items():
        if value is ...:
            config.pop(key)
        else:
            config[key] = value
    path.write_text(json.dumps(config))


def refused(folder, *needles):
    with pytest.raises(InputFileError) as caught:
        load_parser(folder)
    message = str(caught.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message, message
    return message


@pytest.mark.slow
def test_a_saved_parser_reads_back_the_same(trained, tmp_path, dataset):
    parser, _ = trained
    save_parser(tmp_path / "p", parser)
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == ["parser.json", "parser.safetensors"]
    loaded = load_parser(tmp_path / "p")
    for (name, a), (_, b) in zip(parser.network.state_dict().items(), loaded.network.state_dict().items()):
        assert torch.equal(a, b), name
    questions = ["Is the cup red?", "What color is the zebra?", "Is the man walking?", "?"]
    assert [getattr(r, "text", str(r)) for r in parser.parse_many(questions)] == \
        [getattr(r, "text", str(r)) for r in loaded.parse_many(questions)]
    assert loaded.info["examples"] == parser.info["examples"] and loaded.info["history"] == parser.info["history"]


def test_no_folder_and_no_config_are_refused(tmp_path):
    refused(tmp_path / "nowhere", "no such folder")
    (tmp_path / "a_file").write_text("{}")
    refused(tmp_path / "a_file", "is a file, not a folder")
    (tmp_path / "empty").mkdir()
    refused(tmp_path / "empty", "parser.json", "missing")


@pytest.mark.slow
@pytest.mark.parametrize("changes,needle", [
    (dict(format="nablafol-model"), "not a semantic parser"),
    (dict(format_version=99), "format_version 99"),
    (dict(question_words="all"), "'question_words' must be a list of strings"),
    (dict(heads=[1, 2]), "'heads' must be a list of strings"),
    (dict(network={"word_dim": 4}), "'network' must be an object"),
    (dict(min_probability="high"), "'min_probability'"),
    (dict(max_steps=0), "max_steps"),
    (dict(words=["two words"]), "not one word"),
    (dict(heads=["select", "exist", "frobnicate"]), "frobnicate"),
    (dict(max_phrase_words=10_000), "max_phrase_words"),
])
def test_a_broken_config_is_refused_in_one_line(parser_folder, tmp_path, changes, needle):
    folder = copy_of(parser_folder, tmp_path)
    edit_config(folder, **changes)
    refused(folder, "parser.json", needle)


@pytest.mark.slow
def test_a_config_that_is_not_json_is_refused(parser_folder, tmp_path):
    folder = copy_of(parser_folder, tmp_path)
    (folder / "parser.json").write_text("{not json")
    refused(folder, "parser.json", "JSON")


@pytest.mark.slow
def test_sizes_far_beyond_the_tensors_on_disk_are_refused_before_anything_is_built(parser_folder, tmp_path):
    folder = copy_of(parser_folder, tmp_path)
    edit_config(folder, network={"word_dim": 24, "unit_dim": 24, "hidden_dim": 1 << 18})
    refused(folder, "parser.json", "asks for")


@pytest.mark.slow
def test_tensors_that_do_not_fit_the_config_are_refused(parser_folder, tmp_path):
    folder = copy_of(parser_folder, tmp_path)
    edit_config(folder, network={"word_dim": 24, "unit_dim": 24, "hidden_dim": 50})
    refused(folder, "parser.safetensors", "tensor", "has shape", "needs")


@pytest.mark.slow
def test_missing_or_unreadable_tensors_are_refused(parser_folder, tmp_path):
    folder = copy_of(parser_folder, tmp_path)
    (folder / "parser.safetensors").unlink()
    refused(folder, "missing")
    (folder / "parser.safetensors").write_bytes(b"\x00garbage")
    refused(folder, "parser.safetensors", "not a readable safetensors file")


class _Payload:
    def __reduce__(self):  # would run when unpickled
        return (print, ("this must never run",))


@pytest.mark.slow
def test_a_pickle_that_would_run_code_is_refused(parser_folder, tmp_path, capsys):
    folder = copy_of(parser_folder, tmp_path)
    (folder / "parser.safetensors").unlink()
    (folder / "parser.pt").write_bytes(pickle.dumps({"words.weight": _Payload()}))
    refused(folder, "parser.pt", "weights-only")
    assert "this must never run" not in capsys.readouterr().out
