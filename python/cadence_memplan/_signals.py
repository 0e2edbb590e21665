"""Ctrl-C held back while a step must not be cut in half.

Python raises KeyboardInterrupt wherever the main thread happens to be when SIGINT
arrives. Two steps of the package cannot take that: HiGHS's solve, whose callbacks run
Python code inside its C++ (an exception raised there would unwind through HiGHS), and
the drop-ins' write-back of placements to TensorSpecs, which is all or nothing (a planner
that raises leaves every spec as it found them). Inside :func:`sigint_deferred` a SIGINT
only sets a flag that the step polls to stop early; when the block ends the signal is
raised again, so the handler that was in place (KeyboardInterrupt by default) runs then.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

__all__ = ["sigint_deferred"]


@contextlib.contextmanager
def sigint_deferred() -> Iterator[Callable[[], bool]]:
    """Hold SIGINT back for the block; yields a function that says whether one arrived.

    Off the main thread (where Python never delivers signals) and where SIGINT's handler
    is not Python's to replace, the block runs as it is and the function says False."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is None or previous in (signal.SIG_IGN, signal.SIG_DFL):
        # Ignored, the default (fatal) action, or a handler set outside Python: not ours.
        yield lambda: False
        return
    arrived = threading.Event()

    def hold(signum: int, frame: FrameType | None) -> None:
        arrived.set()

    signal.signal(signal.SIGINT, hold)
    try:
        yield arrived.is_set
    finally:
        signal.signal(signal.SIGINT, previous)
        if arrived.is_set():
            signal.raise_signal(signal.SIGINT)
