"""The command line's progress lines: ``cadence-memplan: [  8.1 s] lowering ...`` on
stderr, and ``still ...`` while a step lasts, so that no work goes 2 s without a line."""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time
from collections.abc import Callable

from .common import PROG

__all__ = ["PROGRESS_SECONDS", "PROGRESS_SECONDS_ENV", "Progress"]
PROGRESS_SECONDS_ENV = "CADENCE_MEMPLAN_PROGRESS_SECONDS"
PROGRESS_SECONDS = 1.5  # silence before "still ...": under the 2 s promised, on a busy machine


class Progress:
    """``cadence-memplan: [  8.1 s] lowering ...`` on stderr, unless quiet, and while a
    step lasts, ``still lowering ...`` after every ``interval`` seconds of silence
    (``CADENCE_MEMPLAN_PROGRESS_SECONDS``, default 1.5), from a daemon thread that only
    prints: it runs while the main thread imports torch, writes a file or waits on the
    core's search (which releases the GIL), and never touches a plan. :meth:`done`
    marks every output written; :meth:`close` stops the thread."""

    def __init__(
        self,
        quiet: bool,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.quiet = quiet
        self.clock = clock
        self.began = clock()
        self.stream = sys.stderr  # kept: library chatter is discarded while models lower
        self.interval = _progress_seconds() if interval is None else interval
        self.finished = False  # every output written ("done")
        self.step: str | None = None  # the step under way, repeated while it lasts
        self.last_line = self.began
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def __call__(self, message: str) -> None:
        if self.quiet:
            return
        with self._lock:
            self.step = message
            self._print(message)
        if self._thread is None and not self._stopped.is_set():
            self._thread = threading.Thread(target=self._repeat, name="progress", daemon=True)
            self._thread.start()

    def _print(self, message: str) -> None:
        now = self.clock()
        self.last_line = now
        with contextlib.suppress(OSError, ValueError):  # a closed stderr stops no work
            print(f"{PROG}: [{now - self.began:5.1f} s] {message}", file=self.stream, flush=True)

    def beat(self) -> float:
        """Print ``still STEP`` if the last line is ``interval`` old; the seconds until
        the next line is due."""
        with self._lock:
            due = self.last_line + self.interval - self.clock()
            if self.step is None or self._stopped.is_set() or due > 0:
                return max(due, 0.0) if self.step is not None else self.interval
            self._print(f"still {self.step}")
            return self.interval

    def _repeat(self) -> None:
        wait = self.interval
        while not self._stopped.wait(wait):
            wait = self.beat()

    def done(self) -> None:
        """Every output is written: say so, and repeat nothing after."""
        self.finished = True
        self("done")
        self.close()

    def close(self) -> None:
        self._stopped.set()


def _progress_seconds() -> float:
    text = os.environ.get(PROGRESS_SECONDS_ENV, "").strip()
    try:
        seconds = float(text) if text else PROGRESS_SECONDS
    except ValueError:
        seconds = PROGRESS_SECONDS
    return seconds if math.isfinite(seconds) and seconds > 0 else PROGRESS_SECONDS
