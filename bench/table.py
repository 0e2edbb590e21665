"""Print the performance table: every implementation on every workload, in one run.

    python bench/table.py                      # everything (about 15 minutes at --budget 20)
    python bench/table.py --max-n 10000 --budget 5 --workloads synthetic,challenging

Rows are (workload, n, placer); columns the median time of upstream executorch's classes,
``cadence_memplan.reference`` (clean pure Python), the naive C++ scan (our core with
``occupancy="scan"``: every memory's tensors scanned in offset order, the simplest correct
native planner), our C++ core on arrays (``cadence_memplan.plan``), our drop-in class's
``plan()`` on TensorSpecs, and the marshalling floor (read each spec's lifetime and
allocated_memory, write mem_id and mem_offset back); then the ratios and peak memory.

Each cell runs in a forked child process, so that it can be stopped and its memory
measured alone. The quadratic columns (upstream, reference, naive) get ``--budget`` seconds of planning
per cell: a cell repeats while the next round still fits, and a cell whose first round
has not finished by then is killed and printed ``> budget``. Once such a cell is over
budget, larger workloads of the same family are not run for it (``not run``). Times are never
extrapolated. Every timed plan is checked with ``cadence_memplan.validate``.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import multiprocessing
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from workloads import (
    IMPLEMENTATIONS,
    PYTHON_IMPLEMENTATIONS,
    Workload,
    instance_workloads,
    long_lived_workloads,
    model_workloads,
    prepare,
    synthetic_workloads,
    time_once,
)

from cadence_memplan.io.outputs import write_whole

__all__ = ["main"]

# The quadratic implementations (upstream's and the clean Python reference, and the naive
# C++ scan) get --budget seconds per cell; the core is not budgeted, but a cell must end
# somewhere.
BUDGETED_IMPLEMENTATIONS = (*PYTHON_IMPLEMENTATIONS, "naive")
OUR_CELL_LIMIT_SECONDS = 300.0
SETUP_LIMIT_SECONDS = 600.0
MIN_MEASURED_SECONDS = 0.2  # Fast cells repeat beyond --repeats until this much was timed.
MAX_ROUNDS = 50


def _proc_status_kib(field_name: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    return 0


def _cell_child(
    connection: Any,
    implementation: str,
    algorithm: str,
    workload: Workload,
    repeats: int,
    repeat_limit: float,
    preparer: Callable[[str, str, Workload], tuple[Callable, ...]] = prepare,
) -> None:
    """Runs in the forked child: time rounds, report each, then the peak memory growth."""
    try:
        setup, run, check = preparer(implementation, algorithm, workload)
        # Hand the heap's free pages back to the kernel first: otherwise the plan reuses
        # pages the parent freed, which are resident already, and its growth goes unseen.
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        try:  # Reset the peak-RSS mark (Linux >= 4.0) so the peak is this cell's own.
            with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
                clear_refs.write("5")
        except OSError:
            pass
        baseline_kib = _proc_status_kib("VmRSS")
        connection.send(("ready", None))
        spent, rounds = 0.0, 0
        while True:
            elapsed, result = time_once(setup, run)
            if rounds == 0:
                check(result)
            connection.send(("time", elapsed))
            spent, rounds = spent + elapsed, rounds + 1
            enough = rounds >= repeats and spent >= MIN_MEASURED_SECONDS
            if enough or rounds >= MAX_ROUNDS or spent + elapsed > repeat_limit:
                break
        connection.send(("done", (_proc_status_kib("VmHWM") - baseline_kib) * 1024))
    except BaseException as error:  # noqa: BLE001 - reported to the parent, which raises
        connection.send(("error", f"{type(error).__name__}: {error}"))
    finally:
        connection.close()


@dataclass
class Cell:
    times: list[float] = field(default_factory=list)
    over_budget: bool = False
    not_run: bool = False
    peak_growth_bytes: int | None = None

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None


def run_cell(
    implementation: str,
    algorithm: str,
    workload: Workload,
    repeats: int,
    budget: float,
    limit: float,
    preparer: Callable[[str, str, Workload], tuple[Callable, ...]] = prepare,
) -> Cell:
    """Time one cell in a forked child: rounds repeat while the next still fits in ``budget``
    seconds; the child is killed when its first round has not finished after ``limit``.
    ``preparer`` makes the cell's (setup, run, check), as ``workloads.prepare`` does."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(
        target=_cell_child,
        args=(sender, implementation, algorithm, workload, repeats, budget, preparer),
    )
    child.start()
    sender.close()
    cell = Cell()
    deadline = time.monotonic() + SETUP_LIMIT_SECONDS
    try:
        while True:
            if not receiver.poll(max(0.0, deadline - time.monotonic())):
                cell.over_budget = not cell.times
                break
            try:
                kind, value = receiver.recv()
            except EOFError:
                raise RuntimeError(f"{implementation} on {workload.name} died") from None
            if kind == "ready":
                deadline = time.monotonic() + limit
            elif kind == "time":
                cell.times.append(value)
                # Rounds after the first stop themselves when over the limit; allow for the
                # untimed validity check and setup in between.
                deadline = max(deadline, time.monotonic() + limit + 60)
            elif kind == "done":
                cell.peak_growth_bytes = value
                break
            else:
                raise RuntimeError(f"{implementation}/{algorithm} on {workload.name}: {value}")
    finally:
        if child.is_alive():
            child.kill()  # Only this cell's own child, by its process handle.
        child.join()
        receiver.close()
    return cell


def format_seconds(seconds: float | None) -> str:
    if seconds is None:
        return ""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale or unit == "µs":
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"
    raise AssertionError


def format_cell(cell: Cell | None) -> str:
    if cell is None or cell.not_run:
        return "not run"
    if cell.over_budget:
        return "> budget"
    return format_seconds(cell.median)


def format_ratio(numerator: Cell | None, denominator: Cell | None, budget: float) -> str:
    if denominator is None or denominator.median is None or numerator is None or numerator.not_run:
        return "—"
    if numerator.over_budget:
        return f"> {budget / denominator.median:,.0f}×"  # noqa: RUF001
    if numerator.median is None:
        return "—"
    ratio = numerator.median / denominator.median
    digits = ",.0f" if ratio >= 100 else ".1f" if ratio >= 10 else ".2f"
    return f"{ratio:{digits}}×"  # noqa: RUF001


def format_bytes(value: int | None) -> str:
    if value is None:
        return ""
    return f"{value / (1 << 20):,.1f} MiB"


def select_workloads(kinds: list[str], max_n: int, live_tensors: float) -> list[Workload]:
    chosen: list[Workload] = []
    if "synthetic" in kinds:
        counts = tuple(n for n in (100, 1_000, 2_000, 10_000, 100_000, 1_000_000) if n <= max_n)
        chosen += synthetic_workloads(counts, live_tensors)
    if "long-lived" in kinds:
        chosen += long_lived_workloads()
    folders = tuple(kind for kind in ("real", "challenging") if kind in kinds)
    chosen += instance_workloads(folders)
    if "model" in kinds:
        chosen += model_workloads()
    return [w for w in chosen if w.kind in ("synthetic", "long-lived") or w.tensor_count <= max_n]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=20.0, help="seconds per Python cell")
    parser.add_argument("--repeats", type=int, default=5, help="rounds per cell, at least")
    parser.add_argument("--max-n", type=int, default=1_000_000, help="largest tensor count")
    parser.add_argument(
        "--workloads",
        default="synthetic,long-lived,real,challenging,model",
        help="comma-separated: synthetic, long-lived, real, challenging, model",
    )
    parser.add_argument("--algorithms", default="position,heuristic")
    parser.add_argument("--implementations", default=",".join(IMPLEMENTATIONS))
    parser.add_argument("--live-tensors", type=float, default=32, help="synthetic live-set size")
    parser.add_argument("--markdown", help="also write the table, with the command, to this file")
    args = parser.parse_args(argv)

    implementations = [i for i in IMPLEMENTATIONS if i in args.implementations.split(",")]
    algorithms = args.algorithms.split(",")
    workloads = select_workloads(args.workloads.split(","), args.max_n, args.live_tensors)
    headers = [
        "workload", "n", "placer", *implementations,
        "core vs upstream", "core vs reference", "core vs naive", "drop-in / floor",
        "core peak +RSS", "core bytes/tensor", "peak RSS",
    ]  # fmt: skip
    lines = [
        "| " + " | ".join(headers) + " |",
        "| " + " | ".join(["---"] * 3 + ["---:"] * (len(headers) - 3)) + " |",
    ]
    print(lines[0], lines[1], sep="\n", flush=True)
    over_budget_families: set[tuple[str, str, str]] = set()
    for workload in workloads:
        workload.problem  # noqa: B018 - build once in the parent; forked cells share it
        if any(i in ("upstream", "drop-in", "floor") for i in implementations):
            workload.specs  # noqa: B018
        for algorithm in algorithms:
            cells: dict[str, Cell] = {}
            peak_rss = 0
            for implementation in implementations:
                family = (workload.kind, implementation, algorithm)
                if family in over_budget_families:
                    cells[implementation] = Cell(not_run=True)
                    continue
                budgeted = implementation in BUDGETED_IMPLEMENTATIONS
                limit = args.budget if budgeted else OUR_CELL_LIMIT_SECONDS
                cell = run_cell(
                    implementation, algorithm, workload, args.repeats, args.budget, limit
                )
                cells[implementation] = cell
                if cell.over_budget and budgeted:
                    over_budget_families.add(family)
                peak_rss = max(
                    peak_rss, _proc_status_kib("VmRSS") * 1024 + (cell.peak_growth_bytes or 0)
                )
            core_growth = cells["core"].peak_growth_bytes if "core" in cells else None
            row = [
                workload.name, f"{workload.tensor_count:,}", algorithm,
                *(format_cell(cells.get(i)) for i in implementations),
                format_ratio(cells.get("upstream"), cells.get("core"), args.budget),
                format_ratio(cells.get("reference"), cells.get("core"), args.budget),
                format_ratio(cells.get("naive"), cells.get("core"), args.budget),
                format_ratio(cells.get("drop-in"), cells.get("floor"), args.budget),
                format_bytes(core_growth),
                "" if core_growth is None else f"{core_growth / workload.tensor_count:,.0f}",
                format_bytes(peak_rss),
            ]  # fmt: skip
            lines.append("| " + " | ".join(row) + " |")
            print(lines[-1], flush=True)

    if args.markdown:
        command = " ".join(
            ["python", "bench/table.py", *(argv if argv is not None else sys.argv[1:])]
        )
        notes = [
            (
                f"Measured with `{command}` on {platform.machine()} Linux, Python"
                f" {platform.python_version()}, {os.cpu_count()} cores (shared with other work:"
                " timings are noisy). Median of the rounds run; a Python cell gets"
                f" {args.budget:g} s, and so does the naive C++ scan (`> budget`: its first round did"
                " not finish; `not run`: over"
                " budget at a smaller n of the same family). Ratios are median over median, the"
                " other implementation's time over ours (core vs naive > 1: the core is faster);"
                " `> N×` is a lower bound from the budget. `core peak +RSS`: what the core's call"  # noqa: RUF001
                " adds to the process's peak resident memory (`core bytes/tensor`: the same per"
                " tensor); `peak RSS`: the largest resident"
                " size of any cell of the row (the process includes torch and executorch)."
            ),
        ]
        with write_whole(args.markdown) as temporary:
            temporary.write_text("\n".join([*lines, "", *notes, ""]), encoding="utf-8")


if __name__ == "__main__":
    main()
