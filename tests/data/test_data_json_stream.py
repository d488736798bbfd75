"""The streaming reader yields exactly what json.loads sees, and refuses what it refuses."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiers import examples

from nablafol.data.files import json_inputs
from nablafol.data.json_stream import iter_object_members
from nablafol.errors import InputFileError

HYPOTHESIS = settings(max_examples=examples(60), deadline=None,
                      suppress_health_check=[HealthCheck.function_scoped_fixture])

json_scalars = (st.none() | st.booleans() | st.integers(-10**12, 10**12)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=12)
documents = st.dictionaries(st.text(max_size=6), json_values, max_size=6)
layouts = st.sampled_from([{}, {"indent": 1}, {"separators": (",", ":")},
                           {"indent": "\t", "ensure_ascii": False}])


def write(tmp_path: Path, text: str, name: str = "doc.json") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def members(path: Path, chunk_chars: int = 1 << 20) -> list:
    return list(iter_object_members(path, expected="{key: value}", chunk_chars=chunk_chars))


@pytest.mark.slow
@HYPOTHESIS
@given(document=documents, layout=layouts, chunk=st.integers(1, 40))
def test_members_equal_json_loads_at_any_chunk_size(tmp_path, document, layout, chunk):
    path = write(tmp_path, json.dumps(document, **layout) + "\n")
    assert members(path, chunk) == list(json.loads(path.read_text()).items())


@pytest.mark.slow
@HYPOTHESIS
@given(document=documents.filter(bool), layout=layouts, chunk=st.integers(1, 40), data=st.data())
def test_every_truncation_is_an_error_never_a_shorter_object(tmp_path, document, layout, chunk, data):
    text = json.dumps(document, **layout)
    cut = data.draw(st.integers(0, len(text) - 1))  # the closing brace is always lost
    path = write(tmp_path, text[:cut])
    with pytest.raises(InputFileError) as caught:
        members(path, chunk)
    assert str(caught.value).startswith(f"{path}: ")


@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_syntax_error_reports_the_line_and_column_json_reports(tmp_path, chunk):
    text = '{\n "a": [1, 2],\n "b": {"c": tru},\n "d": 3\n}'
    path = write(tmp_path, text)
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(InputFileError) as caught:
        members(path, chunk)
    message = str(caught.value)
    assert f"line {expected.value.lineno}, column {expected.value.colno}" in message
    assert "Expecting value" in message and message.startswith(str(path))


def test_an_error_in_a_pipe_says_its_line_and_column():
    """A path that cannot be read twice (``<(zcat ...)``, ``/dev/stdin``): where the error is
    must be counted as the text goes by, not by reading the file again."""
    import os
    import threading
    text = "{\n" + ",\n".join(f' "k{i}": {i}' for i in range(200)) + ',\n "bad": tru\n}'
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    read_end, write_end = os.pipe()

    def write() -> None:
        with os.fdopen(write_end, "w", encoding="utf-8") as stream:
            stream.write(text)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        with pytest.raises(InputFileError) as caught:
            members(Path(f"/dev/fd/{read_end}"), 64)
    finally:
        writer.join()
        os.close(read_end)
    assert f"line {expected.value.lineno}, column {expected.value.colno}" in str(caught.value)


def test_members_before_an_error_are_yielded_first(tmp_path):
    """Streaming: the reader does not parse the whole file before yielding."""
    path = write(tmp_path, '{"a": 1, "b": 2, "c": ]')
    stream = iter_object_members(path, expected="{key: value}", chunk_chars=4)
    assert next(stream) == ("a", 1)
    assert next(stream) == ("b", 2)
    with pytest.raises(InputFileError, match="Expecting value"):
        next(stream)


def test_numbers_cut_by_a_chunk_boundary_are_read_whole(tmp_path):
    path = write(tmp_path, '{"w": 123456789, "x": true, "y": -1.5e+10}')
    for chunk in range(1, 12):
        assert members(path, chunk) == [("w", 123456789), ("x", True), ("y", -1.5e10)]


@pytest.mark.parametrize("text, problem", [
    ("", "is empty, expected a JSON object {key: value}"),
    ("  \n ", "is empty"),
    ("[1, 2]", "expected a JSON object {key: value} at the top level, found a list"),
    ('"text"', "at the top level, found a string"),
    ("null", "at the top level, found null"),  # a value in words, not its first character
    ("-3", "at the top level, found a number"),
    ("true", "at the top level, found true"),
    ("xyz", "at the top level, found 'x'"),
    ('{"a": 1} {"b": 2}', "unexpected text after the top-level object"),
    ('{"a": 1 "b": 2}', "expected ',' or '}' after a member, found '\"'"),
    ('{"a" 1}', "expected ':' after a key, found '1'"),
    ("{1: 2}", "expected a string key"),
    ('{"a": 1,}', "expected a string key"),
    ('{"a": }', "Expecting value"),
    ('{"a": 1', "expected ',' or '}' after a member, found end of file"),
    ('{"a": "unterminated}', "Unterminated string"),
])
def test_malformed_files_name_the_file_and_the_problem(tmp_path, text, problem):
    path = write(tmp_path, text)
    with pytest.raises(InputFileError) as caught:
        members(path, 3)
    assert str(caught.value).startswith(f"{path}: ")
    assert problem in str(caught.value)


def test_not_utf8_missing_and_folder(tmp_path):
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"caf\xe9": 1}')
    with pytest.raises(InputFileError, match=r"latin\.json: is not UTF-8 text"):
        members(latin)
    with pytest.raises(InputFileError, match=r"nothing\.json: no such file"):
        members(tmp_path / "nothing.json")
    with pytest.raises(InputFileError, match="is a folder, expected a file"):
        members(tmp_path)


def test_byte_order_mark_is_tolerated(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert members(path) == [("a", 1)]


def test_folders_are_read_in_natural_order(tmp_path):
    for number in (10, 2, 1, 0):
        write(tmp_path, "{}", f"train_all_questions_{number}.json")
    write(tmp_path, "not json", "notes.txt")
    names = [path.name for path in json_inputs(tmp_path)]
    assert names == [f"train_all_questions_{n}.json" for n in (0, 1, 2, 10)]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputFileError, match=re.escape(f"{empty}: folder holds no .json files")):
        json_inputs(empty)
    with pytest.raises(InputFileError, match="no such file or folder"):
        json_inputs(tmp_path / "missing")


@pytest.mark.parametrize("compress, kind", [("gzip", "gzip"), ("bz2", "bzip2"), ("lzma", "xz")])
def test_a_compressed_file_is_named_as_one(tmp_path, compress, kind):
    """A compressed questions file (GQA ships plain JSON) is refused as what it is, not as
    text that is not UTF-8; any other binary file still is the latter."""
    import importlib
    path = tmp_path / "q.json"
    path.write_bytes(importlib.import_module(compress).compress(b'{"a": 1}'))
    with pytest.raises(InputFileError, match=f"is {kind}-compressed, not text: decompress it first"):
        members(path, 3)
    path.write_bytes(b'{"a": "\xff\xfe"}')
    with pytest.raises(InputFileError, match="is not UTF-8 text"):
        members(path, 3)
