"""Which benchmark an annotation file belongs to, told from its first record.

============  ====================================================================
``gqa``       a JSON object ``{questionId: {...}}`` (or a folder of such files)
``vcr``       JSON lines whose records have ``annot_id`` / ``answer_choices`` (VCR, GD-VCR)
``aokvqa``    a JSON list whose records have ``choices`` and ``direct_answers`` or
              ``correct_choice_idx`` or ``difficult_direct_answer``
``cric``      a JSON list whose records have a ``program`` (and ``target``, ``question_type``)
============  ====================================================================

Only the beginning of the file is read (a GQA training file is hundreds of MB).

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "val.jsonl").write_text('{"annot_id": "val-0", "answer_choices": []}\\n')
    >>> _ = (folder / "q.json").write_text('[{"question_id": "1", "program": [], "target": []}]')
    >>> detect_benchmark(folder / "val.jsonl"), detect_benchmark(folder / "q.json")
    ('vcr', 'cric')
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from nablafol.data.files import json_inputs, not_text, open_text
from nablafol.errors import InputFileError

__all__ = ["BENCHMARKS", "detect_benchmark"]

BENCHMARKS = ("gqa", "cric", "aokvqa", "vcr")
_CHUNK = 1 << 16
_MOST = 1 << 26  # a first record larger than this is not one of these benchmarks' files
_DECODER = json.JSONDecoder()


def detect_benchmark(path: str | os.PathLike, option: str = "--benchmark") -> str:
    """``gqa``, ``cric``, ``aokvqa`` or ``vcr``; an InputFileError when its records are none of them
    (naming ``option``, the command's way to say which it is).

    A file that holds no records at all (empty, not JSON, a list of numbers) is read as GQA's, whose
    reader then says in one line what is wrong with it.
    """
    path = Path(path)
    first = json_inputs(path)[0] if path.is_dir() else path
    if not first.exists():
        raise InputFileError(first, "no such file or folder")
    with open_text(first) as stream:
        try:
            text = stream.read(_CHUNK)
            start = len(text) - len(text.lstrip())
            opening = text[start:start + 1]
            if opening == "{":
                line = text[start:].split("\n", 1)[0]
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError):  # a GQA object spans lines; its reader judges it
                    return "gqa"
                return "vcr" if isinstance(record, dict) and ("annot_id" in record or "answer_choices" in record) \
                    else "gqa"
            if opening == "[":
                record = _first_item(stream, text, start + 1, first)
                if isinstance(record, dict):
                    if "program" in record:
                        return "cric"
                    if "choices" in record and {"direct_answers", "correct_choice_idx",
                                                "difficult_direct_answer"} & set(record):
                        return "aokvqa"
                else:  # not a list of records: GQA's reader says what is wrong with it
                    return "gqa"
            else:  # empty, or not JSON: GQA's reader says what is wrong with it
                return "gqa"
        except UnicodeDecodeError as error:
            raise not_text(first, error) from None
    raise InputFileError(first, "cannot tell which benchmark the file is (GQA, CRIC, A-OKVQA or VCR); "
                                f"give {option}")


def _first_item(stream, text: str, position: int, path: Path):
    """The first element of a JSON list whose text begins at ``position``, reading on as needed."""
    while True:
        rest = text[position:].lstrip()
        if rest.startswith("]"):
            return None
        try:
            return _DECODER.raw_decode(rest)[0]
        except RecursionError:
            return None
        except ValueError:  # cut by the chunk's end (or broken: the benchmark's reader will say)
            more = stream.read(_CHUNK)
            if not more or len(text) > _MOST:
                return None
            text += more
