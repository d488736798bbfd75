"""What the subcommands share: loading inputs with one-line errors, the ontology option."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Mapping

from nablafol.errors import NablafolError


class UsageError(NablafolError):
    """A command-line mistake (exit status 2, one line)."""


def error_line(error: Exception) -> str | None:
    """One line for an error caused by the user's input, or None for a bug (re-raised)."""
    from nablafol.errors import NablafolError
    if isinstance(error, NablafolError):
        return str(error).splitlines()[0]
    if isinstance(error, OSError):
        return os_error_line(error)
    if isinstance(error, RuntimeError) and str(error).startswith(_LINK_LOOP):  # pathlib's resolve()
        return f"{str(error)[len(_LINK_LOOP):].strip()}: {LINK_LOOP_LINE}"
    if isinstance(error, MemoryError) or (isinstance(error, RuntimeError) and _ALLOCATION_FAILED in str(error)):
        # sizes the machine cannot hold (numpy's MemoryError, torch's allocator): the options' doing
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        return f"not enough memory for what was asked ({first}): smaller sizes, or a larger machine"
    return None


_ALLOCATION_FAILED = "can't allocate memory"  # torch's CPU allocator's words
_LINK_LOOP = "Symlink loop from"  # pathlib's words
LINK_LOOP_LINE = "a loop of symbolic links (each names the next, back to the first): give a real path"


def os_error_line(error: OSError) -> str:
    """One line for a failed system call: the file, then what happened in words a user acts on
    (a full disk and a missing permission said as such)."""
    import errno
    advice = {errno.ENOSPC: "the disk is full: free space, or write elsewhere",
              errno.EDQUOT: "the disk quota is used up: free space, or write elsewhere",
              errno.EACCES: "permission denied: give read (or write) permission, or another path",
              errno.ELOOP: LINK_LOOP_LINE}.get(error.errno)
    what = advice or error.strerror or str(error)
    return f"{error.filename or ''}: {what}".lstrip(": ")


def is_link_loop(path) -> bool:
    """Whether ``path`` is (or passes through) a loop of symbolic links."""
    import errno
    try:
        os.stat(path)
    except OSError as error:
        return error.errno == errno.ELOOP
    except ValueError:  # a NUL in the name: not a loop (opening it says what it is)
        return False
    return False


def add_renamed_option(parser, old: str, new: str, *, takes_value: bool) -> None:
    """Keep the old spelling ``old`` of option ``new`` working (docs/design.md, one vocabulary of
    flags): it sets ``new``'s value, with one line on stderr naming the new spelling; hidden from
    --help so that the help shows one vocabulary. ``parser`` may be a mutually exclusive group."""
    import argparse

    class Renamed(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            print(f"nablafol: {old} is now spelled {new} (the old spelling still works)", file=sys.stderr)
            setattr(namespace, self.dest, values if takes_value else True)

    dest = new.lstrip("-").replace("-", "_")
    parser.add_argument(old, dest=dest, action=Renamed, nargs=None if takes_value else 0, help=argparse.SUPPRESS,
                        **({"metavar": dest.upper()} if takes_value else {}))


def add_exact_match_argument(parser) -> None:
    """``--exact-match``: answers compared as strings, as GQA's eval.py (``--exact`` before it
    was renamed: read beside ``--exact-inference`` it said the opposite of what it does)."""
    parser.add_argument("--exact-match", action="store_true", help="score by exact string match (GQA's eval.py) "
                        "instead of vocabulary forms")
    add_renamed_option(parser, "--exact", "--exact-match", takes_value=False)


def add_allow_no_answers_argument(parser, help_text: str) -> None:
    """``--allow-no-answers``: a run that answered or matched nothing is not an error (one name
    across commands; without it such a run exits 2, its 0% being no one's accuracy)."""
    parser.add_argument("--allow-no-answers", action="store_true", help=help_text)


def add_ontology_argument(parser) -> None:
    parser.add_argument("--ontology", metavar="DIR",
                        help="vocabulary folder (hypernyms.json, attributes.json, relations.json); default: GQA's")
    parser.add_argument("--ontology-extension", metavar="FILE",
                        help="classes joining the ontology's categories, learned from training questions' "
                             "groundings (`nablafol vocabulary --categories-out`; docs/real-gqa.md)")


def load_ontology(folder, extension=None):
    from nablafol.dsl import load_ontology as load
    return load(folder, extension)


def write_json(path, obj) -> None:
    """Write JSON atomically (a unique temporary file, renamed; nothing left behind on failure)."""
    from nablafol.data.files import atomic_writer
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{path}: is a folder; give a file path")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(path) as f:
        f.write(json.dumps(obj, indent=1, ensure_ascii=False) + "\n")


def output_file(path, inputs: Mapping | None = None, read_whole: tuple = ("--questions",)) -> Path:
    """Check an output file path before any work: not a folder, not a device, pipe or socket (a
    file is written whole and renamed over the old one: it would replace the device), and not one
    of ``inputs`` (option -> path, None: not given) nor inside the folder of an input whose
    folder is read whole (``read_whole``: every .json file of a questions folder; a later run
    would read the output as questions); its folder is created."""
    path = Path(path)
    if is_link_loop(path):
        raise UsageError(f"{path}: {LINK_LOOP_LINE}")
    check_inputs(inputs or {})
    if path.is_dir():
        raise UsageError(f"{path}: is a folder; give a file path")
    if path.exists() and not path.is_file():  # is_file follows a link: a link to a file is written through
        raise UsageError(f"{path}: is not a regular file (a device, a pipe or a socket); give a file path")
    for option, given in (inputs or {}).items():
        if given is not None:
            clash = output_clash(path, Path(given), option in read_whole)
            if clash is not None:
                raise UsageError(f"{path}: {clash.format(f'{option} {given}')}: give another path")
    # the folder of what is written: a link's target's (a link is written through)
    Path(os.path.realpath(path)).parent.mkdir(parents=True, exist_ok=True)
    return path


#: the inputs a command reads more than once (its format told from its start, then read whole)
READ_AGAIN = ("--questions",)


def check_inputs(inputs: Mapping) -> None:
    """Before any work, the input paths (option -> path, None: not given) that cannot be read as
    the command reads them: a loop of symbolic links, and a pipe (``<(cat Q)``) or device given
    for an input read more than once (its second reading would find it empty)."""
    import stat
    for option, given in inputs.items():
        if given is None:
            continue
        if is_link_loop(given):
            raise UsageError(f"{option} {given}: {LINK_LOOP_LINE}")
        if option in READ_AGAIN:
            try:
                mode = os.stat(given).st_mode
            except (OSError, ValueError):
                continue  # missing or unreadable: its reader says so in its own line
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise UsageError(f"{option} {given}: is a pipe or a device (as <(...) gives), which can be read "
                                 f"once; this command reads it twice (its format, then its questions): save it to "
                                 f"a file and give that")


def output_clash(out: Path, given: Path, read_whole: bool) -> str | None:
    """How writing ``out`` would harm ``given`` (the same file, by any name; a file inside
    ``given``'s folder when it is read whole), or None."""
    if out.resolve() == given.resolve() or (out.exists() and given.exists() and os.path.samefile(out, given)):
        return "is also {}; writing it would lose what is there"
    if read_whole and given.is_dir() and given.resolve() in out.resolve().parents:
        return "is inside the folder of {}, which is read whole: a later run would read it as input"
    return None


def _number(convert, accept, requirement: str):
    """An argparse type: ``convert`` the text, then refuse it unless ``accept`` (naming ``requirement``)."""
    def parse(text: str):
        import argparse
        import math
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'a whole number' if convert is int else 'a number'}, "
                                             f"got {text!r}") from None
        if (isinstance(value, float) and not math.isfinite(value)) or not accept(value):
            raise argparse.ArgumentTypeError(f"must be {requirement}, got {text}")
        return value
    return parse


def whole_number(low: int, high: int):
    """An argparse type: a whole number from ``low`` to ``high``."""
    return _number(int, lambda v: low <= v <= high, f"from {low} to {high}")


def real_number(low: float, high: float):
    """An argparse type: a finite number from ``low`` to ``high``."""
    return _number(float, lambda v: low <= v <= high, f"a number from {low:g} to {high:g}")


#: a seed torch and numpy both take (torch.manual_seed refuses more than a signed 64-bit number)
seed_number = whole_number(0, 2**63 - 1)
#: torch's intra-op threads: far more than any machine's cores crashed torch itself (100,000: a segfault)
MAX_THREADS = 1024
positive_int = _number(int, lambda v: v >= 1, "at least 1")
non_negative_int = _number(int, lambda v: v >= 0, "0 or more")
probability = _number(float, lambda v: 0.0 <= v <= 1.0, "in [0, 1]")
positive_float = _number(float, lambda v: v > 0, "a positive number")
non_negative_float = _number(float, lambda v: v >= 0, "a number >= 0")


def device(text: str):
    """A torch device that exists here (checked before any work)."""
    import torch
    try:
        dev = torch.device(text)
        torch.empty(0, device=dev)
    except (RuntimeError, AssertionError) as e:
        raise UsageError(f"--device {text}: not available here ({str(e).splitlines()[0]})") from None
    return dev


def add_threads_argument(parser, default: int = 1) -> None:
    parser.add_argument("--threads", type=whole_number(0, MAX_THREADS), default=default, metavar="N",
                        help=f"torch threads (default {default}; 0: torch's own choice). One thread is the default "
                             "because the tensors of a batch are small: split over threads, they mostly wait on "
                             "each other (docs/design.md)")


def with_threads(threads: int, work):
    """``work()`` run with ``threads`` torch threads (0: unchanged), the caller's setting restored
    afterwards (tests run the commands in-process)."""
    import torch
    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        return work()
    finally:
        torch.set_num_threads(before)
