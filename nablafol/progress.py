"""A small progress bar for long commands (stderr; redraws in place on a terminal, else
prints a line every 10%, or, when the total is unknown, at most one line every few seconds)."""
from __future__ import annotations

import sys
import time


UNKNOWN_TOTAL_SECONDS = 5.0


class ProgressBar:
    """``bar = ProgressBar("eval", total); bar(done)`` ... ``bar.close()``."""

    def __init__(self, label: str, total: int | None = None, stream=None, width: int = 30, unit: str = "q"):
        self.label, self.total, self.width, self.unit = label, total, width, unit
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.perf_counter()
        self._base = 0  # what the pass had done when it began (a resumed pass starts past 0)
        self._last_decile = -1
        self._last_done = 0
        self._drawn = False

    def __call__(self, done: int, total: int | None = None, note: str = "") -> None:
        total = total if total is not None else self.total
        if done < self._last_done:  # a new pass its caller did not announce (begin): the rate restarts here
            self.begin(done)
        self._last_done = done
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        rate = (done - self._base) / elapsed
        if total:
            frac = min(1.0, done / total)
            bar = "#" * int(frac * self.width) + "-" * (self.width - int(frac * self.width))
            text = f"{self.label} [{bar}] {100 * frac:5.1f}% {done:,}/{total:,} {rate:,.0f} {self.unit}/s"
            decile = int(frac * 10)
        else:  # no total: a "decile" per few seconds, so a log gets a line now and then
            text, decile = f"{self.label} {done:,} {rate:,.0f} {self.unit}/s", int(elapsed / UNKNOWN_TOTAL_SECONDS)
        if note:
            text += f" {note}"
        if self.tty:
            self.stream.write("\r" + text)
            self._drawn = True
        elif decile != self._last_decile:
            self.stream.write(text + "\n")
        self._last_decile = decile
        self.stream.flush()

    def begin(self, done: int = 0) -> None:
        """A new pass begins now, ``done`` already done (a resumed one): its rate counts from here."""
        self.start, self._base, self._last_done, self._last_decile = time.perf_counter(), done, done, -1

    def close(self) -> None:
        if self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
