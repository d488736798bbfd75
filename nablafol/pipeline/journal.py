"""The record of a streaming evaluation, so that an interrupted run resumes without redoing work.

``nablafol eval`` answers questions chunk by chunk, in the order of the questions file. After
each chunk it appends the chunk's outcomes to the journal (JSON lines beside the predictions
file) and then a *commit* line holding how many questions of the stream are done and how long
the details file was; the commit is flushed to disk. A run killed at any moment leaves a
journal whose last commit describes work that is complete; whatever follows it (a torn line,
half a chunk) is cut off when the run resumes. Lines::

    {"journal": "nablafol-eval", "version": 1, "settings": {...}}   the header (first line)
    {"q": "<questionId>", "p": "<prediction>"}                        an answered question
    {"q": "<questionId>", "skip": "<reason>", "detail": "<line>"}     a skipped question
    {"done": <questions of the stream consumed>, "details_bytes": <size>}   a commit

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "predictions.json.journal"
    >>> journal = EvalJournal.start(path, {"threshold": 0.5})
    >>> journal.commit([("1", "red", None), ("2", None, ("no scene", "no scene for image 'x'"))], done=2)
    >>> with open(path, "a") as f: _ = f.write('{"q": "3", "p": "bl')   # killed mid-chunk
    >>> again = EvalJournal.resume(path, {"threshold": 0.5})
    >>> again.done, [c for c in again.chunks()]
    (2, [(2, [('1', 'red', None), ('2', None, ('no scene', "no scene for image 'x'"))])])
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator, Optional

from nablafol.data.files import atomic_writer
from nablafol.errors import InputFileError

FORMAT = "nablafol-eval"
VERSION = 1

# (questionId, prediction or None, (reason, detail) of a skip or None)
Entry = tuple


class EvalJournal:
    """An append-only journal; ``done`` and ``details_bytes`` are those of its last commit."""

    def __init__(self, path: Path, settings: dict, done: int, details_bytes: int, end: int):
        self.path, self.settings = path, settings
        self.done, self.details_bytes = done, details_bytes
        self._end = end  # byte offset just after the last commit (or the header)
        self._stream = None

    @classmethod
    def start(cls, path, settings: dict) -> "EvalJournal":
        """A new, empty journal (replacing any old one); the header appears whole or not at all."""
        path = Path(path)
        header = json.dumps({"journal": FORMAT, "version": VERSION, "settings": settings}, ensure_ascii=True) + "\n"
        with atomic_writer(path) as f:
            f.write(header)
            _sync(f)
        return cls(path, settings, 0, 0, len(header.encode("utf-8")))

    @classmethod
    def resume(cls, path, settings: dict) -> "EvalJournal":
        """The journal at ``path`` cut back to its last commit; refused (one line) when it was
        written with other settings or is not a journal."""
        path = Path(path)
        done, details_bytes, end = 0, 0, None
        with open(path, "rb") as f:
            header = f.readline()
            try:
                head = json.loads(header)
                assert head["journal"] == FORMAT and head["version"] == VERSION and header.endswith(b"\n")
            except Exception:
                raise InputFileError(path, "is not a nablafol eval journal; remove it to start over") from None
            if head["settings"] != settings:
                changed = sorted(k for k in set(settings) | set(head["settings"])
                                 if settings.get(k) != head["settings"].get(k))
                raise InputFileError(path, f"was written by a run with other settings ({', '.join(changed)}); "
                                           "run with the same options, or without --resume to start over")
            end = f.tell()
            for line in f:
                if not line.endswith(b"\n"):
                    break  # a torn last line: the run died writing it
                if line.startswith(b'{"done"'):
                    record = json.loads(line)
                    done, details_bytes = record["done"], record["details_bytes"]
                    end = f.tell()
        with open(path, "r+b") as f:
            f.truncate(end)
            _sync(f)
        return cls(path, settings, done, details_bytes, end)

    def chunks(self) -> Iterator[tuple[int, list[Entry]]]:
        """``(done, entries)`` of every committed chunk, in order (for replaying them)."""
        entries: list[Entry] = []
        with open(self.path, "rb") as f:
            f.readline()
            while f.tell() < self._end:
                record = json.loads(f.readline())
                if "done" in record:
                    yield record["done"], entries
                    entries = []
                else:
                    entries.append(_entry(record))

    def entries(self) -> Iterator[Entry]:
        """Every committed entry, in order."""
        for _, entries in self.chunks():
            yield from entries

    def commit(self, entries, done: int, details_bytes: int = 0) -> None:
        """Append a chunk's entries and its commit line; on disk when this returns."""
        if self._stream is None:
            self._stream = open(self.path, "a", encoding="utf-8", newline="\n")
        lines = []
        for question_id, prediction, skip in entries:
            record = {"q": question_id, "p": prediction} if skip is None else \
                {"q": question_id, "skip": skip[0], "detail": skip[1]}
            lines.append(json.dumps(record, ensure_ascii=True))
        lines.append(json.dumps({"done": done, "details_bytes": details_bytes}))
        self._stream.write("\n".join(lines) + "\n")
        _sync(self._stream)
        self.done, self.details_bytes = done, details_bytes
        self._end = self._stream.tell()

    def close(self, remove: bool = False) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if remove:
            self.path.unlink(missing_ok=True)


def _entry(record: dict) -> Entry:
    if "skip" in record:
        return record["q"], None, (record["skip"], record["detail"])
    return record["q"], record["p"], None


def _sync(stream) -> None:
    stream.flush()
    os.fsync(stream.fileno())


def journal_path(predictions_path) -> Path:
    """Where the journal of a run writing ``predictions_path`` lives."""
    predictions_path = Path(predictions_path)
    return predictions_path.with_name(predictions_path.name + ".journal")


def input_fingerprint(path) -> Optional[list]:
    """``[[path, size, modification time], ...]`` of the file, or of every file under the folder
    (None for no path): what tells a journal's inputs from changed ones without reading them."""
    if path is None:
        return None
    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    fingerprint = []
    for file in files:
        try:
            stat = file.stat()
        except OSError:
            continue  # a missing input is reported, in one line, by the reader that needs it
        fingerprint.append([str(file.resolve()), stat.st_size, stat.st_mtime_ns])
    return fingerprint
