"""One run at a time per output: a lock held while a run writes a file or a folder.

Two runs writing the same predictions file (or model folder) at once raced on its journal and
temporary files: tracebacks, a torn details file under its final name. The lock is an advisory
``flock`` on a file beside the output (``OUT.lock``, for a folder too); the second run
is refused in one line and the first goes on unharmed. The kernel releases a ``flock`` when its
process ends however it ends, so a run killed with the lock held blocks nothing: the lock file
it leaves is taken over by the next run. A finished run removes its lock file.

    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "predictions.json"
    >>> with output_lock(out, "--predictions"):
    ...     try:
    ...         with output_lock(out, "--predictions"):
    ...             pass
    ...     except OutputBusy as busy:
    ...         print(str(busy).split(": ", 1)[1][:58])
    is being written by another run (its lock: predictions.jso
    >>> sorted(p.name for p in out.parent.iterdir())
    []
"""
from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Iterator

from nablafol.errors import InputFileError

LOCK_SUFFIX = ".lock"


class OutputBusy(InputFileError):
    """Another run holds the output's lock."""


def lock_path(output: str | os.PathLike) -> Path:
    """The lock file of an output (a file or a folder): beside it, never inside a folder whose
    files a run reads or checks."""
    output = Path(os.path.abspath(output))
    return output.with_name(output.name + LOCK_SUFFIX)


@contextlib.contextmanager
def output_lock(output: str | os.PathLike, option: str) -> Iterator[Path]:
    """Hold ``output``'s lock for the ``with`` block, or raise :class:`OutputBusy` (one line
    naming ``output`` and ``option``) when another run holds it. Never waits."""
    path = lock_path(output)
    handle = _acquire(path, output, option)
    try:
        yield path
    finally:
        # unlinked while still held: a run that opens the old file now finds it unlinked and retries
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(handle)


def _acquire(path: Path, output, option: str) -> int:
    while True:
        try:
            handle = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise InputFileError(path, f"the lock of {option} {output} cannot be made "
                                       f"({error.strerror or error})") from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            raise OutputBusy(output, f"is being written by another run (its lock: {path.name}); wait for it to "
                                     f"end, or give {option} another path") from None
        except OSError:  # a file system without flock: no lock rather than no run
            return handle
        try:
            same = os.path.samestat(os.fstat(handle), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            return handle
        os.close(handle)  # the holder removed it as we opened it: take the new one
