"""``cadence-memplan sweep``: plan INPUT again at many sizes of one memory (a model is
lowered once) and print, write and draw what each memory holds at each size."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from ..analysis.sweep import (
    SweepRow,
    find_memory,
    moves_against_growth,
    parse_sweep_sizes,
    proved_not_to_keep_all,
    smallest_size_keeping_all,
    sweep_table,
    write_sweep_csv,
)
from ..cadence import LOWERING_DESCRIPTIONS
from ..io.memories import Memory
from ..models import DEFAULT_INPUT
from ..stats import format_bytes, plural
from ..workflow.plan import sweep_input
from .common import CliError, checked_outputs, writing_outputs
from .planning_request import CommandRequest, add_planning_options
from .plot_axes import PLOT_SUFFIXES
from .printing import SUM_OF_SIZES_NOTE, format_seconds, print_table


def add_parser(commands: Any) -> None:
    sweeper = commands.add_parser(
        "sweep",
        help="plan again at many sizes of one memory: what each memory holds, what spills",
        description="Plan INPUT with memory M's size stepped from LO to HI and print one row"
        " per size: each memory's tensor bytes and count, the bytes outside memory 1, whether"
        " the plan fits, and sizes where a bigger M holds fewer bytes (the greedy placers can"
        " do that). A model is lowered once; each size re-runs only the memory planning.",
    )
    sweeper.add_argument(
        "input",
        nargs="?",
        metavar="INPUT",
        help=f"as for plan (default: {DEFAULT_INPUT})",
    )
    add_planning_options(sweeper)
    sweeper.add_argument(
        "--vary",
        metavar="M",
        required=True,
        help="the memory whose size is stepped: its name or id (1 = fastest)",
    )
    sweeper.add_argument(
        "--sizes",
        metavar="LO:HI:STEPS",
        required=True,
        help="STEPS sizes from LO to HI, evenly spaced (units as in --memory, e.g. 64KiB:1MiB:100)",
    )
    sweeper.add_argument("--out", metavar="FILE", help="write one line per size (.csv)")
    sweeper.add_argument(
        "--plot", metavar="FILE", help="draw bytes per memory against the size (.png, .svg, .pdf)"
    )
    sweeper.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    sweeper.add_argument(
        "--debug", action="store_true", help="show tracebacks and library warnings"
    )


def run(arguments: argparse.Namespace) -> int:
    request = CommandRequest.read(arguments)
    request.refuse_methods([("sweep", True)], "plan and size take it (docs/stateful.md)")
    memories, progress = request.memories, request.progress
    try:
        varied = find_memory(memories, arguments.vary)
        sizes = parse_sweep_sizes(arguments.sizes)
    except ValueError as error:
        raise CliError(str(error)) from error
    outputs = checked_outputs(
        [(arguments.out, "--out", (".csv",)), (arguments.plot, "--plot", PLOT_SUFFIXES)],
        inputs=request.inputs,
    )
    options = request.planned("sweeping")
    what = request.what
    name = memories[varied].name
    every = max(1, len(sizes) // 10)

    def step_done(step: int, size: int) -> None:
        if step == 0:
            progress(
                f"planning at {plural(len(sizes), 'size')} of {name}, {format_bytes(sizes[0])} to"
                f" {format_bytes(sizes[-1])}"
            )
        elif step % every == 0:
            progress(f"planning at {format_bytes(size)} ({step + 1} of {len(sizes)})")

    with request.loaded("plan") as loaded:
        began = time.perf_counter()
        rows = sweep_input(
            loaded, memories, varied, sizes, options, progress=progress, step_done=step_done
        )
        seconds = time.perf_counter() - began

    label = what.label
    print(f"{label}: {name} from {format_bytes(sizes[0])} to {format_bytes(sizes[-1])} in"
          f" {plural(len(sizes), 'size')}, planned with {arguments.algo!r}")  # fmt: skip
    if what.is_model:
        print(f"lowering: {arguments.lowering} ({LOWERING_DESCRIPTIONS[arguments.lowering]})")
    print_table(*sweep_table(rows, memories, varied))
    print(SUM_OF_SIZES_NOTE)
    _print_sweep_summary(rows, memories, varied)
    print(f"planning time: {plural(len(rows), 'plan')} in {format_seconds(seconds)}")
    written: list[str] = []  # printed once every output is in place
    with writing_outputs(outputs) as partial:
        if arguments.out:
            progress(f"writing {arguments.out}")
            write_sweep_csv(partial(arguments.out), rows, memories, varied)
            written.append(f"wrote sweep: {arguments.out}")
        if arguments.plot:
            from .sweep_plot import plot_sweep

            progress(f"drawing {arguments.plot}")
            plot_sweep(
                partial(arguments.plot), rows, memories, varied, f"{label} ({arguments.algo})"
            )
            written.append(f"wrote sweep plot: {arguments.plot}")
    for line in written:
        print(line)
    progress.done()
    return 0


def _print_sweep_summary(rows: Sequence[SweepRow], memories: Sequence[Memory], varied: int) -> None:
    name = memories[varied].name
    fast = "+".join(memory.name for memory in memories[: varied + 1])
    kept = smallest_size_keeping_all(rows, varied)
    what = "it fits" if varied == len(memories) - 1 else f"every tensor in {fast}"
    if kept is not None:
        print(
            f"{what}: from {name} = {format_bytes(kept.size)} ({kept.size:,} bytes) among the"
            " sizes swept"
        )
        below = [row for row in rows if row.size < kept.size]
        if varied == 0 and below and all(row.kept_bound is not None for row in below):
            proved = sum(proved_not_to_keep_all(row) for row in below)
            print(
                f"  below it: proved not to keep every tensor at {proved} of"
                f" {plural(len(below), 'size')}"
                + (
                    f"; at the other {len(below) - proved}, no plan that does was found"
                    " within the budget"
                    if proved < len(below)
                    else ""
                )
            )
    else:
        fitting = [row for row in rows if row.fits]
        spill = ""
        if fitting:
            largest = fitting[-1]
            outside = sum(largest.tensor_bytes) - largest.bytes_up_to(varied)
            spill = f" (at {format_bytes(largest.size)}, {format_bytes(outside)} outside it)"
        print(f"{what}: at none of the sizes swept{spill}")
    notes = moves_against_growth(rows, memories, varied)
    against = [row.size for row, note in zip(rows, notes, strict=True) if note]
    if against:
        listed = ", ".join(format_bytes(size) for size in against[:8])
        more = f" and {len(against) - 8} more" if len(against) > 8 else ""
        print(
            f"moved against growth at {plural(len(against), 'size')} ({listed}{more}; marked <<):"
            f" a bigger {name} held fewer bytes in {fast} than the size before"
        )
    else:
        print(f"moved against growth: never (a bigger {name} never held fewer bytes in {fast})")
    failed = sum(not row.fits for row in rows)
    if failed:
        print(f"does not fit at {failed} of {plural(len(rows), 'size')}")
