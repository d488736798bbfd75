"""While training, big freed blocks stay in the C heap for the next step instead of going back to the OS.

A training step of the neural oracle at 36 objects makes about a dozen ``(S, M, M, 256)``
temporaries of 40-90 MB. glibc serves a block that big from fresh ``mmap`` pages and unmaps it
when it is freed, so every step touched its temporaries' pages anew: 45,000-68,000 page faults a
step, each new tensor's first pass several times slower than a pass over warm memory. Inside
:func:`keep_freed_memory` no block is mapped on its own and the heap's top is not trimmed
(``mallopt(M_MMAP_MAX, 0)``, ``mallopt(M_TRIM_THRESHOLD, 2^31 - 1)``): the next step reuses the
same pages (3,000-6,000 faults a step; the step's median 598-694 -> 494-535 ms, fresh processes
side by side, ``docs/design.md``). The price: the process holds its peak heap until the block
ends, when glibc's defaults come back and ``malloc_trim`` returns the free part.

glibc only (Linux); elsewhere the block changes nothing and says so (it yields False).

Example:
    >>> with keep_freed_memory() as kept:
    ...     isinstance(kept, bool)
    True
"""
from __future__ import annotations

import contextlib
import ctypes
from typing import Iterator

M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # glibc's mallopt parameters (malloc.h)
DEFAULT_TRIM_THRESHOLD, DEFAULT_MMAP_MAX = 128 * 1024, 65536  # glibc's documented defaults
_KEEP_TRIM_THRESHOLD = 2 ** 31 - 1  # mallopt takes an int: the largest is "never trim"

_depth = 0  # nested blocks: only the outermost restores the defaults


def _glibc():
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    return libc if all(hasattr(libc, f) for f in ("gnu_get_libc_version", "mallopt", "malloc_trim")) else None


@contextlib.contextmanager
def keep_freed_memory() -> Iterator[bool]:
    """Big freed blocks kept in the heap while the block runs; yields whether that took effect."""
    global _depth
    libc = _glibc()
    if libc is None:
        yield False
        return
    kept = libc.mallopt(M_MMAP_MAX, 0) == 1 and libc.mallopt(M_TRIM_THRESHOLD, _KEEP_TRIM_THRESHOLD) == 1
    _depth += 1
    try:
        yield kept
    finally:
        _depth -= 1
        if not _depth:
            libc.mallopt(M_MMAP_MAX, DEFAULT_MMAP_MAX)
            libc.mallopt(M_TRIM_THRESHOLD, DEFAULT_TRIM_THRESHOLD)
            libc.malloc_trim(0)
