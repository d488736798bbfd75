"""Opening the user's files for reading and writing results safely.

Every failure to open becomes one :class:`~nablafol.errors.InputFileError` line naming the
file; outputs are written to a temporary file beside the target and renamed into place, so
an interrupted run never leaves half a predictions file behind.
"""
from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path
from typing import IO, Iterable, Iterator

from nablafol.errors import InputFileError


def open_text(path: str | os.PathLike) -> IO[str]:
    """Open ``path`` as UTF-8 text (a leading BOM is tolerated) or raise InputFileError."""
    path = Path(path)
    if path.is_dir():
        raise InputFileError(path, "is a folder, expected a file")
    try:
        return open(path, encoding="utf-8-sig", newline="")
    except FileNotFoundError:
        raise InputFileError(path, "no such file") from None
    except OSError as error:
        raise InputFileError(path, f"cannot be read ({error.strerror or error})") from None


_COMPRESSED = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"), (b"PK\x03\x04", "zip"),
               (b"\x28\xb5\x2f\xfd", "zstd"))


def not_text(path: str | os.PathLike, error: UnicodeDecodeError | None = None) -> InputFileError:
    """The one-line refusal of a file that is not UTF-8 text; a compressed file is named as one
    (nablafol reads JSON as GQA ships it, uncompressed)."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(8)
    except OSError:
        head = b""
    for magic, kind in _COMPRESSED:
        if head.startswith(magic):
            return InputFileError(path, f"is {kind}-compressed, not text: decompress it first")
    return InputFileError(path, "is not UTF-8 text" + (f" ({error.reason})" if error is not None else ""))


def _natural_key(name: str) -> list:
    # train_all_questions_2.json sorts before train_all_questions_10.json
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def json_inputs(path: str | os.PathLike) -> list[Path]:
    """The JSON files behind ``path``: the file itself, or a folder's ``*.json`` files.

    A folder (GQA's ``train_all_questions/``) is read in natural sorted order of file
    names, ``_2`` before ``_10``, so results never depend on the file system's order.
    """
    path = Path(path)
    if path.is_dir():
        parts = sorted((p for p in path.iterdir() if p.suffix == ".json" and p.is_file()),
                       key=lambda p: _natural_key(p.name))
        if not parts:
            raise InputFileError(path, "folder holds no .json files")
        return parts
    if not path.exists():
        raise InputFileError(path, "no such file or folder")
    return [path]


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: str = "w") -> Iterator[IO]:
    """The one way nablafol writes a file: all at once or not at all.

    The content goes to a temporary file in the same folder, which is flushed to disk
    (``fsync``) and then renamed over ``path``; a crash at any moment leaves either the old file
    or the new one, never a torn one, and no temporary file survives a failure. A symbolic link
    is written through (its target replaced, the link kept); a device, pipe or socket is refused
    (the rename would replace it). ``mode`` is ``"w"`` (text, UTF-8, ``\n`` line ends) or
    ``"wb"`` (bytes).

        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "out.json"
        >>> with atomic_writer(path) as f:
        ...     _ = f.write("[]")
        >>> path.read_text(), [p.name for p in path.parent.iterdir()]
        ('[]', ['out.json'])
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_writer writes text ('w') or bytes ('wb'), not {mode!r}")
    path = Path(path)
    if path.is_symlink():  # written through the link, as a shell's > writes: the link stays a link
        path = Path(os.path.realpath(path))
    if path.exists() and not path.is_file():  # renamed over, a device or a pipe would be replaced by a file
        raise InputFileError(path, "cannot be written: not a regular file (a device, a pipe or a socket)")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputFileError(path, "cannot be written: its folder does not exist")
    try:
        handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as error:
        raise InputFileError(path, f"cannot be written ({error.strerror or error})") from None
    try:
        text = {"encoding": "utf-8", "newline": "\n"} if mode == "w" else {}
        with os.fdopen(handle, mode, **text) as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())  # on disk before the rename makes it the file
        os.chmod(temp_name, 0o666 & ~_umask())  # mkstemp makes 0600; a written file gets the usual mode
        os.replace(temp_name, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        if isinstance(error, OSError) and is_write_failure(error):  # the system's words name no file
            raise write_failure(path, error) from None
        raise


_FULL = {"ENOSPC": "the disk is full", "EDQUOT": "the disk quota is used up", "EFBIG": "the file is too large "
         "for its file system"}


def is_write_failure(error: OSError) -> bool:
    """Whether ``error`` is a write that found no room (a full disk or quota), which names no file
    of its own."""
    import errno
    return any(error.errno == getattr(errno, name, None) for name in _FULL)


@contextlib.contextmanager
def naming_full_disk(path: str | os.PathLike) -> Iterator[None]:
    """Writes to ``path`` in the block: a full disk (or quota) is :func:`write_failure`'s line
    naming ``path``, not the system's, which names no file."""
    try:
        yield
    except OSError as error:
        if is_write_failure(error):
            raise write_failure(path, error) from None
        raise


def write_failure(path: str | os.PathLike, error: OSError) -> InputFileError:
    """The one line for a file that could not be written because there was no room: the file,
    and what to do (the system's words name no file)."""
    import errno
    reason = next((text for name, text in _FULL.items() if error.errno == getattr(errno, name, None)),
                  error.strerror or str(error))
    return InputFileError(path, f"cannot be written: {reason}; free space or write elsewhere (nothing was replaced)")


def write_text(path: str | os.PathLike, text: str) -> None:
    """``text`` written to ``path`` through :func:`atomic_writer`."""
    with atomic_writer(path) as stream:
        stream.write(text)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_question_entries(path: str | os.PathLike, entries: Iterable[tuple[str, str]], brackets: str = "[]",
                           *, kind: str = "question") -> int:
    """Write a JSON list (``brackets="[]"``) or object (``"{}"``) of one entry per question (or
    image: ``kind``), one per line, atomically: ``entries`` are ``(id, entry's JSON text)``; an
    id given twice is refused (ValueError). Returns how many were written."""
    seen: set[str] = set()
    with atomic_writer(path) as stream:
        stream.write(brackets[0])
        for key, text in entries:
            if key in seen:
                raise ValueError(f"{kind} {key} given twice")
            stream.write(("\n" if not seen else ",\n") + text)
            seen.add(key)
        stream.write(f"\n{brackets[1]}\n")
    return len(seen)
