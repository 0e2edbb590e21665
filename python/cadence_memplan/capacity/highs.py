"""HiGHS as the selection runs it (``capacity/selection.py``): one thread, its fixed random seed,
and stopped by counted work, never by its clock.

Work. A solve is limited in units of work (those of ``best``'s ``work_budget``:
docs/best.md, "Budget, threads, determinism"), counted from what HiGHS reports: building a
model costs one unit per :data:`NONZEROS_PER_WORK` nonzeros, and each of HiGHS's interrupt
callbacks :data:`WORK_PER_REPORT` plus :data:`WORK_PER_NODE` per branch and bound node
since the last (measured, in CPU time: 3 to 25 ms between two reports at its root and 0.1
to 3 ms a node, on models of 1,600 to 50,000 nonzeros, with no trend in their size).
HiGHS's reports come at the same points of the same search on every run, so a solve
stopped by work is the same whatever the machine's load; a wall-clock cap, when one is
given, is the exception. One thread: HiGHS's search depends on its thread count (a solve
stopped at its 150th report chooses differently on 1, 2 and 4 threads), and its default
is half the machine's cores.

Ctrl-C. The callbacks run Python inside HiGHS's C++, where an exception must not land:
``capacity/selection.py`` holds a SIGINT back while HiGHS runs (``_signals.sigint_deferred``), the
next report stops the solve, and the signal is raised when it returns.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .selection_program import IntArray, Rows

if TYPE_CHECKING:
    import highspy

__all__ = [
    "MIP_ABS_GAP",
    "NONZEROS_PER_WORK",
    "WORK_PER_NODE",
    "WORK_PER_REPORT",
    "HighsModel",
    "apply_cuts",
    "build_model",
    "check_status",
    "new_highs",
    "run",
    "set_option",
]

#: Work (``best``'s units, about 15 µs each): the nonzeros of a model built per unit, and
#: the units per interrupt callback and per branch and bound node of HiGHS (the module's
#: docstring).
NONZEROS_PER_WORK = 16
WORK_PER_REPORT = 500
WORK_PER_NODE = 50
#: HiGHS stops when its dual bound is within this of the best choice, in units of the scaled
#: (integer) objective: below 1, so floor(dual bound + tau) is then the choice's value.
MIP_ABS_GAP = 0.99
# Up to this many nonzeros, HiGHS keeps its presolve and feasibility jump (build_model).
SMALL_MODEL_NONZEROS = 20_000

_banner_lock = threading.Lock()
_banner_silenced = False


@dataclass
class HighsModel:
    """A HiGHS model at one capacity, how many of the cuts it holds, and the limits and the
    work of the solve under way (the module's docstring)."""

    highs: highspy.Highs
    cuts_applied: int
    work_limit: int = 0
    deadline: float = math.inf  # time.perf_counter(); inf: no cap.
    interrupted: Callable[[], bool] = lambda: False
    reports: int = 0
    nodes: int = 0
    cut_short: bool = False

    def start(self, work_limit: int, deadline: float, interrupted: Callable[[], bool]) -> None:
        self.work_limit, self.deadline, self.interrupted = work_limit, deadline, interrupted
        self.reports = self.nodes = 0
        self.cut_short = False

    @property
    def work(self) -> int:
        return self.reports * WORK_PER_REPORT + self.nodes * WORK_PER_NODE

    def on_report(self, event: highspy.highs.HighsCallbackEvent) -> None:
        """HiGHS's interrupt callbacks (simplex, IPM, MIP): count the work, and stop once it
        reaches the limit, the cap passed or a SIGINT arrived. HiGHS's own ``time_limit``
        is checked too seldom on large models (its root cut loop ran 24 s past a 20 s limit
        on pangu_2.6B at 256 KiB); these callbacks are not."""
        self.reports += 1
        self.nodes = max(self.nodes, int(event.data_out.mip_node_count))
        if self.work >= self.work_limit or self.interrupted():
            event.interrupt()
        elif self.deadline != math.inf and time.perf_counter() > self.deadline:
            self.cut_short = True
            event.interrupt()


def build_model(rows: Rows, scaled: npt.NDArray[np.float64]) -> HighsModel:
    """The HiGHS model of the capacity ``rows`` at one capacity, one integer column per
    model column, maximising ``scaled`` (the weights as the exact costs ``capacity/selection.py``
    makes of them), with no cut yet."""
    import highspy as hs

    count = len(rows.first)
    fits = rows.units > 0
    per_column = rows.stop - rows.first
    col_starts = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(per_column, out=col_starts[1:])
    # Column j's entries are the rows first[j], first[j] + 1, ..., stop[j] - 1.
    row_index = np.repeat(rows.first - col_starts[:-1], per_column) + np.arange(
        int(col_starts[-1]), dtype=np.int64
    )
    lp = hs.HighsLp()
    lp.num_col_ = count
    lp.num_row_ = rows.count
    lp.sense_ = hs.ObjSense.kMaximize
    lp.col_cost_ = scaled
    lp.col_lower_ = np.zeros(count)
    lp.col_upper_ = fits.astype(np.float64)
    lp.row_lower_ = np.full(rows.count, -hs.kHighsInf)
    lp.row_upper_ = rows.rhs.astype(np.float64)
    lp.a_matrix_.format_ = hs.MatrixFormat.kColwise
    lp.a_matrix_.num_col_ = count
    lp.a_matrix_.num_row_ = rows.count
    lp.a_matrix_.start_ = col_starts.astype(np.int32)
    lp.a_matrix_.index_ = row_index.astype(np.int32)
    lp.a_matrix_.value_ = np.repeat(rows.units, per_column).astype(np.float64)
    lp.integrality_ = [hs.HighsVarType.kInteger] * count
    highs = new_highs()
    set_option(highs, "output_flag", False)
    # One thread: HiGHS's search depends on its thread count (measured: a solve stopped
    # at its 150th report differs between 1, 2 and 4 threads), and its default is half
    # the machine's cores. Its random seed stays the fixed default.
    set_option(highs, "threads", 1)
    set_option(highs, "mip_abs_gap", MIP_ABS_GAP)
    # Measured on the challenging instances and the real graphs (docs/best.md, "Why HiGHS"): presolve
    # and the feasibility-jump heuristic cost seconds on large models (19 s and 15 s on
    # pangu_2.6B at 256 KiB, before the root LP, ignoring the time limit) for little gain;
    # on small ones they find good choices early (F at a quarter of its bound: 87% of
    # the bound in 1.5 s without them), so they stay on there.
    if len(row_index) > SMALL_MODEL_NONZEROS:
        set_option(highs, "presolve", "off")
        # HiGHS >= 1.10 only (older releases have no feasibility jump: nothing to turn off).
        highs.setOptionValue("mip_heuristic_run_feasibility_jump", False)
    check_status(highs.passModel(lp), "passModel")
    model = HighsModel(highs=highs, cuts_applied=0)
    # highspy's callback events (1.8 and later: the dependency's floor).
    highs.cbSimplexInterrupt.subscribe(model.on_report)
    highs.cbIpmInterrupt.subscribe(model.on_report)
    highs.cbMipInterrupt.subscribe(model.on_report)
    return model


def apply_cuts(model: HighsModel, cuts: list[IntArray]) -> None:
    """Add to ``model`` the no-good cuts it does not hold yet: at most ``len(cut) - 1`` of
    each cut's columns chosen."""
    for cut in cuts[model.cuts_applied :]:
        check_status(
            model.highs.addRow(
                -math.inf,
                float(len(cut) - 1),
                len(cut),
                cut.astype(np.int32),
                np.ones(len(cut)),
            ),
            "addRow",
        )
    model.cuts_applied = len(cuts)


def run(highs: highspy.Highs) -> None:
    """``highs.run()``. HiGHS refuses to run on one thread when another user of highspy in
    the process made its process-wide scheduler with more: the scheduler is then made
    anew, once, and the run tried again."""
    import highspy as hs

    status = highs.run()
    if status == hs.HighsStatus.kError and highs.getModelStatus() == hs.HighsModelStatus.kNotset:
        hs.Highs.resetGlobalScheduler(True)
        status = highs.run()
    check_status(status, "run")


def set_option(highs: highspy.Highs, name: str, value: bool | float | str) -> None:
    check_status(highs.setOptionValue(name, value), f"setOptionValue({name!r})")


def check_status(status: object, what: str) -> None:
    import highspy as hs

    if status == hs.HighsStatus.kError:
        raise RuntimeError(f"HiGHS {what} failed")


def new_highs() -> highspy.Highs:
    """A new ``highspy.Highs``. HiGHS prints its banner on the process's first one, before
    any option can turn output off; that first construction runs with the process's stdout
    pointed at /dev/null (POSIX only; elsewhere the banner shows once)."""
    global _banner_silenced
    import highspy as hs

    with _banner_lock:
        if _banner_silenced:
            return hs.Highs()  # type: ignore[no-untyped-call]  # highspy's __init__
        _banner_silenced = True
        with stdout_silenced():
            return hs.Highs()  # type: ignore[no-untyped-call]  # highspy's __init__


@contextlib.contextmanager
def stdout_silenced() -> Iterator[None]:
    if os.name != "posix":
        yield
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None)
    except OSError:
        yield
        return
    fd = 1  # where HiGHS's C++ writes, whatever sys.stdout is
    if sys.stdout is not None:
        sys.stdout.flush()
    libc.fflush(None)
    saved = os.dup(fd)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), fd)
            try:
                yield
            finally:
                libc.fflush(None)
                os.dup2(saved, fd)
    finally:
        os.close(saved)
