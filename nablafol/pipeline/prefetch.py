"""The coming steps' inputs read in a background thread while the current step runs: :class:`Prefetch`.

Training reads each step's features (from the store or memory, padded into one batch, and on an
accelerator copied to it) before the step can start; done in the step's own thread, that reading
is time the step waits. A :class:`Prefetch` calls ``read(key)`` for the keys of the coming steps,
in their order, in one background thread, at most ``depth`` results ahead of the consumer, which
takes each result with :meth:`Prefetch.take`. What is read, and the order it is used in, are the
same as reading in the step itself: the weights a run trains are bit-identical.

An exception raised by ``read`` reaches the consumer when it takes that key's result (the steps
before it run as they would have), the same exception with its own message; the thread reads
nothing after it. Leaving the ``with`` block (the end, an error, ``KeyboardInterrupt``) stops the
thread and waits for it: no read outlives the loop that asked for it.

    >>> with Prefetch(lambda key: key * 2, [1, 2, 3]) as ahead:
    ...     [ahead.take(key) for key in (1, 2, 3)]
    [2, 4, 6]
"""
from __future__ import annotations

import queue
import threading
from typing import Callable, Hashable, Iterable

__all__ = ["Prefetch"]

_END = object()  # what the thread puts after the last key


class Prefetch:
    """``read(key)`` for each of ``keys`` in order, in a background thread, at most ``depth``
    results ahead of :meth:`take` (besides the one being read). Use it as a context manager."""

    def __init__(self, read: Callable, keys: Iterable[Hashable], depth: int = 1):
        if not (isinstance(depth, int) and depth >= 1):
            raise ValueError(f"Prefetch: depth must be a whole number >= 1, got {depth!r}")
        self._read, self._keys = read, iter(keys)
        self._results: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nablafol-prefetch", daemon=True)
        self._ended = False

    def __enter__(self) -> "Prefetch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def take(self, key: Hashable):
        """The result of ``read(key)``, ``key`` being the next of the keys (a consumer that asks
        out of order is a bug, refused); the exception ``read`` raised for it, raised here."""
        if self._thread.ident is None:
            raise RuntimeError(f"prefetch: {key!r} asked outside the with block (nothing is read there)")
        if self._ended:
            raise RuntimeError(f"prefetch: {key!r} asked after the last key")
        item = self._results.get()
        if item is _END:
            self._ended = True
            raise RuntimeError(f"prefetch: {key!r} asked after the last key")
        read_key, value, error = item
        if error is not None:
            self._ended = True
            raise error
        if read_key != key:
            self._ended = True
            raise RuntimeError(f"prefetch: {key!r} asked where {read_key!r} comes next")
        return value

    def close(self) -> None:
        """Stop reading and wait for the thread: what it read and nobody took is dropped."""
        self._stop.set()
        while self._thread.is_alive():
            self._drain()  # a thread blocked on a full queue gets its place, then sees the stop
            self._thread.join(0.05)
        self._drain()

    def _drain(self) -> None:
        while True:
            try:
                self._results.get_nowait()
            except queue.Empty:
                return

    def _run(self) -> None:
        try:
            for key in self._keys:
                if self._stop.is_set():
                    return
                self._results.put((key, self._read(key), None))
        except BaseException as error:  # the consumer's to raise, at the step it belongs to
            self._results.put((None, None, error))
            return
        self._results.put(_END)
