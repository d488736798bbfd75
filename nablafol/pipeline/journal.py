"""The record of a streaming evaluation, so that an interrupted run resumes without redoing work.

``nablafol eval`` answers questions chunk by chunk, in the order of the questions file. After
each chunk it appends the chunk's outcomes to the journal (JSON lines beside the predictions
file) and then a *commit* line holding how many questions of the stream are done and how long
the details file was; the commit is flushed to disk. A run killed at any moment leaves a
journal whose last commit describes work that is complete; whatever follows it (a torn line,
half a chunk) is cut off when the run resumes. Lines::

    {"journal": "nablafol-eval", "version": 2, "settings": {...}}   the header (first line)
    {"q": "<questionId>", "p": "<prediction>"}                        an answered question
    {"q": "<questionId>", "p": "<prediction>", "g": true}             ... a guess (every candidate at 0)
    {"q": "<questionId>", "p": "<prediction>", "f": true}             ... a presupposition fallback
    {"q": "<questionId>", "skip": "<reason>", "detail": "<line>"}     a skipped question
    {"done": <questions of the stream consumed>, "details_bytes": <size>}   a commit
    {"done": ..., "details_bytes": ..., "sealed": true}              the stream ended (shards)

A shard of a split evaluation (``nablafol eval --shard I/N``) keeps its journal, sealed, for
the merge: :class:`ShardedJournal` reads the shards' journals as the one journal of a single
run (chunk ``k`` from shard ``k mod N``).

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "predictions.json.journal"
    >>> journal = EvalJournal.start(path, {"threshold": 0.5})
    >>> journal.commit([("1", "red", None, PLAIN), ("2", None, ("no scene", "no scene for image 'x'"), PLAIN)], done=2)
    >>> with open(path, "a") as f: _ = f.write('{"q": "3", "p": "bl')   # killed mid-chunk
    >>> again = EvalJournal.resume(path, {"threshold": 0.5})
    >>> again.done, [c for c in again.chunks()]
    (2, [(2, [('1', 'red', None, 0), ('2', None, ('no scene', "no scene for image 'x'"), 0)])])
"""
from __future__ import annotations

import json
import os
import re
from json.encoder import encode_basestring_ascii as _quoted
from pathlib import Path
from typing import Iterator, Optional

from nablafol.data.files import atomic_writer, naming_full_disk
from nablafol.errors import InputFileError

FORMAT = "nablafol-eval"
VERSION = 3  # 2: a guess is marked ("g"); 3: a presupposition fallback ("f"): an older journal would count none
_COMMIT = b'{"done"'  # how a commit line starts (json.dumps keeps the key order it is given)

# (questionId, prediction or None, (reason, detail) of a skip or None, the prediction's mark: PLAIN, GUESS
# (True also reads as a guess) or FALLBACK)
Entry = tuple
PLAIN, GUESS, FALLBACK = 0, 1, 2
_MARKS = {GUESS: "g", FALLBACK: "f"}


class EvalJournal:
    """An append-only journal; ``done`` and ``details_bytes`` are those of its last commit,
    ``sealed`` whether that commit says the stream ended."""

    def __init__(self, path: Path, settings: dict, done: int, details_bytes: int, end: int, sealed: bool = False):
        self.path, self.settings = path, settings
        self.done, self.details_bytes, self.sealed = done, details_bytes, sealed
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
        journal = cls._scan(path, settings)
        with open(journal.path, "r+b") as f:
            f.truncate(journal._end)
            _sync(f)
        return journal

    @classmethod
    def open_sealed(cls, path, settings: dict) -> "EvalJournal":
        """The finished journal at ``path``, to read (nothing is written); refused (one line)
        when it is not sealed, was written with other settings, or is not a journal."""
        journal = cls._scan(path, settings)
        if not journal.sealed:
            raise InputFileError(path, f"is not finished ({journal.done:,} questions committed): run its shard "
                                       "again with --resume before merging")
        return journal

    @classmethod
    def _scan(cls, path, settings: dict) -> "EvalJournal":
        """The journal at ``path`` as its last commit leaves it (what follows is ignored)."""
        path = Path(path)
        done, details_bytes, end, sealed = 0, 0, None, False
        with open(path, "rb") as f:
            header = f.readline()
            try:
                head = json.loads(header)
                assert head["journal"] == FORMAT and header.endswith(b"\n")
            except Exception:
                raise InputFileError(path, "is not a nablafol eval journal; remove it to start over") from None
            if head.get("version") != VERSION:
                raise InputFileError(path, f"is a journal of version {head.get('version')!r}, this nablafol writes "
                                           f"version {VERSION}: run again without --resume (its shards too)")
            if head["settings"] != settings:
                changed = sorted(k for k in set(settings) | set(head["settings"])
                                 if settings.get(k) != head["settings"].get(k))
                raise InputFileError(path, f"was written by a run with other settings ({', '.join(changed)}); "
                                           "run with the same options, or without --resume to start over")
            end = f.tell()
            for line in f:
                if not line.endswith(b"\n"):
                    break  # a torn last line: the run died writing it
                if line.startswith(_COMMIT):
                    record = json.loads(line)
                    done, details_bytes = record["done"], record["details_bytes"]
                    sealed = bool(record.get("sealed"))
                    end = f.tell()
        return cls(path, settings, done, details_bytes, end, sealed)

    def chunks(self) -> Iterator[tuple[int, list[Entry]]]:
        """``(done, entries)`` of every committed chunk, in order (for replaying them)."""
        for done, _, entries in self.commits():
            yield done, entries

    def commits(self) -> Iterator[tuple[int, int, list[Entry]]]:
        """``(done, details_bytes, entries)`` of every commit, in order (a seal: no entries)."""
        lines: list[bytes] = []
        with open(self.path, "rb") as f:
            f.readline()
            while f.tell() < self._end:
                line = f.readline()
                if not line.startswith(_COMMIT):
                    lines.append(line)
                    continue
                record = json.loads(line)
                # a commit's entries decoded in one call (one call a line was most of reading them back)
                entries = list(map(_entry, json.loads(b"[" + b",".join(lines) + b"]"))) if lines else []
                yield record["done"], record["details_bytes"], entries
                lines = []

    def entries(self) -> Iterator[Entry]:
        """Every committed entry, in order."""
        for _, entries in self.chunks():
            yield from entries

    def commit(self, entries, done: int, details_bytes: int = 0) -> None:
        """Append a chunk's entries and its commit line; on disk when this returns."""
        lines = []
        for question_id, prediction, skip, guessed in entries:
            if skip is None and not guessed and type(question_id) is str and type(prediction) is str:
                # json.dumps's text for this record, by its own quoting function (without its general path)
                lines.append(f'{{"q": {_quoted(question_id)}, "p": {_quoted(prediction)}}}')
                continue
            record = ({"q": question_id, "p": prediction, _MARKS[guessed]: True} if guessed
                      else {"q": question_id, "p": prediction}) \
                if skip is None else {"q": question_id, "skip": skip[0], "detail": skip[1]}
            lines.append(json.dumps(record, ensure_ascii=True))
        lines.append(json.dumps({"done": done, "details_bytes": details_bytes}))
        self._append(lines)
        self.done, self.details_bytes = done, details_bytes

    def _append(self, lines: list[str]) -> None:
        if self._stream is None:
            self._stream = open(self.path, "a", encoding="utf-8", newline="\n")
        with naming_full_disk(self.path):  # a full disk: the last commit still describes finished work
            self._stream.write("\n".join(lines) + "\n")
            _sync(self._stream)
        self._end = self._stream.tell()

    def seal(self) -> None:
        """Commit that the stream ended (a shard's journal is then ready to merge)."""
        self._append([json.dumps({"done": self.done, "details_bytes": self.details_bytes, "sealed": True})])
        self.sealed = True

    def close(self, remove: bool = False) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if remove:
            self.path.unlink(missing_ok=True)


def _entry(record: dict) -> Entry:
    if "skip" in record:
        return record["q"], None, (record["skip"], record["detail"]), PLAIN
    return record["q"], record["p"], None, (GUESS if record.get("g") is True else
                                            FALLBACK if record.get("f") is True else PLAIN)


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


class ShardedJournal:
    """The sealed journals of the shards of one evaluation, read as the journal of a single run:
    chunk ``k`` of the question stream is the next commit of shard ``k mod N`` (each shard
    answered its chunks in stream order, so its commits are those chunks, in order).

    ``entries()``, ``chunks()`` and ``close(remove)`` as :class:`EvalJournal`; ``pieces()``
    also says, for each chunk, which shard holds it and where its details lie in that
    shard's details file.
    """

    def __init__(self, journals: list[EvalJournal]):
        self.journals = journals
        self.path = journals[0].path if journals else None

    @classmethod
    def find(cls, predictions_path, settings: dict) -> "ShardedJournal":
        """The shards' journals written for ``predictions_path``, each checked against
        ``settings`` (plus its shard) and required finished; one line when one is missing."""
        from nablafol.pipeline.sharding import EvalShard
        predictions_path = Path(predictions_path)
        counts = cls.shard_counts(predictions_path)
        if not counts:
            raise InputFileError(predictions_path, "no shard journal to merge (run `nablafol eval --shard I/N` "
                                                   "with the same options first)")
        if len(counts) > 1:
            raise InputFileError(predictions_path, f"shard journals of several splits lie beside it "
                                                   f"({', '.join(f'of {n}' for n in counts)}); remove the stale ones")
        journals = []
        for index in range(counts[0]):
            shard = EvalShard(index, counts[0])
            path = journal_path(shard.path(predictions_path))
            if not path.exists():
                raise InputFileError(path, f"is missing: shard {shard} has not run (or ran elsewhere)")
            journals.append(EvalJournal.open_sealed(path, shard_settings(settings, shard)))
        return cls(journals)

    @staticmethod
    def shard_counts(predictions_path) -> list[int]:
        """The shard counts N of the ``--shard I/N`` journals lying beside ``predictions_path``
        (one for a run ready to merge), in increasing order."""
        predictions_path = Path(predictions_path)
        pattern = re.compile(re.escape(predictions_path.name) + r"\.shard-(\d+)-of-(\d+)\.journal$")
        return sorted({int(m.group(2)) for m in (pattern.match(p.name) for p in predictions_path.parent.glob(
            predictions_path.name + ".shard-*-of-*.journal")) if m})

    def pieces(self) -> Iterator[tuple[int, int, int, list[Entry]]]:
        """``(shard, details_start, details_end, entries)`` of every chunk, in stream order."""
        count = len(self.journals)
        commits = [self._chunks_of(journal) for journal in self.journals]
        k = 0
        while True:
            piece = next(commits[k % count], None)
            if piece is None:
                stray = next((i for i, rest in enumerate(commits) if next(rest, None) is not None), None)
                if stray is not None:  # a shard with a chunk after the stream's end: not one split
                    raise InputFileError(self.journals[stray].path, "holds chunks beyond the end of the others' "
                                                                    "stream (shards of different inputs?)")
                return
            yield (k % count, *piece)
            k += 1

    @staticmethod
    def _chunks_of(journal: EvalJournal) -> Iterator[tuple[int, int, list[Entry]]]:
        before = 0
        for _, details_bytes, entries in journal.commits():
            if entries:  # a seal commits nothing
                yield before, details_bytes, entries
            before = details_bytes

    def chunks(self) -> Iterator[tuple[int, list[Entry]]]:
        done = 0
        for _, _, _, entries in self.pieces():
            done += len(entries)
            yield done, entries

    def entries(self) -> Iterator[Entry]:
        for _, entries in self.chunks():
            yield from entries

    def close(self, remove: bool = False) -> None:
        for journal in self.journals:
            journal.close(remove)


def shard_settings(settings: dict, shard) -> dict:
    """The settings a shard's journal records: the run's, and which shard it is."""
    return {**settings, "shard": [shard.index, shard.count]}
