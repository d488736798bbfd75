"""While training, big freed blocks stay in the C heap for the next step instead of going back to the OS.

A training step of the neural oracle at 36 objects makes about a dozen ``(S, M, M, 256)``
temporaries of 40-90 MB. glibc serves a block that big from fresh ``mmap`` pages and unmaps it
when it is freed, so every step touched its temporaries' pages anew: tens of thousands of page
faults a step, each new tensor's first pass several times slower than a pass over warm memory.
Inside :func:`keep_freed_memory` no block is mapped on its own and the heap's top is never
trimmed (``mallopt(M_MMAP_MAX, 0)``, ``mallopt(M_TRIM_THRESHOLD, -1)``): the next step reuses the
same pages. What that saves a training step is measured side by side in ``benchmarks/README.md``
(``python -m benchmarks.bench_micro allocator``). The price: the process holds its peak heap
until the block ends.

glibc's own adjustment of these thresholds (it raises them as big blocks are freed, up to a 32 MiB
mmap threshold) stops for the life of the process at the first ``mallopt``. So the block does not
leave glibc's start-up values behind, which would map and fault in every block above 128 KiB
afresh: it leaves the values that adjustment reaches at its cap (mmap threshold 32 MiB, trim
threshold 64 MiB, mapping on), then ``malloc_trim`` returns the free heap. Allocations from
threads other than the one that made the first big block may use glibc's other arenas, which
map blocks over 64 MiB whatever the setting (training allocates on the calling thread). Under
a preloaded jemalloc or tcmalloc ``mallopt`` is glibc's and changes nothing; the block still
yields True.

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

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_MMAP_MAX = -1, -3, -4  # glibc's mallopt parameters (malloc.h)
NEVER = -1  # M_TRIM_THRESHOLD -1: trimming off (mallopt(3))
# after the block: where glibc's dynamic thresholds end up at their cap on 64-bit systems
AFTER_MMAP_THRESHOLD, AFTER_TRIM_THRESHOLD, AFTER_MMAP_MAX = 32 * 1024 * 1024, 64 * 1024 * 1024, 65536

_depth = 0  # nested blocks: only the outermost one's end sets the after-values


def _glibc():
    try:
        libc = ctypes.CDLL(None)
    except (OSError, TypeError):  # TypeError: Windows has no handle to the process itself
        return None
    if not all(hasattr(libc, f) for f in ("gnu_get_libc_version", "mallopt", "malloc_trim")):
        return None
    libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    return libc


@contextlib.contextmanager
def keep_freed_memory() -> Iterator[bool]:
    """Big freed blocks kept in the heap while the block runs; yields whether that took effect.
    The outermost block's end leaves glibc's capped dynamic values (see the module's text)."""
    global _depth
    libc = _glibc()
    if libc is None:
        yield False
        return
    kept = libc.mallopt(M_MMAP_MAX, 0) == 1 and libc.mallopt(M_TRIM_THRESHOLD, NEVER) == 1
    _depth += 1
    try:
        yield kept
    finally:
        _depth -= 1
        if not _depth:
            libc.mallopt(M_MMAP_THRESHOLD, AFTER_MMAP_THRESHOLD)
            libc.mallopt(M_TRIM_THRESHOLD, AFTER_TRIM_THRESHOLD)
            libc.mallopt(M_MMAP_MAX, AFTER_MMAP_MAX)
            libc.malloc_trim(0)
