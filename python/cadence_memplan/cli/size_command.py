"""``cadence-memplan size``: how much of the fastest memory INPUT needs, and what it keeps
below that (:func:`cadence_memplan.sizing.size_input`), printed, written as JSON, drawn."""

from __future__ import annotations

import argparse
from typing import Any

from .._types import OBJECTIVES
from ..cadence import LOWERING_DESCRIPTIONS
from ..models import DEFAULT_INPUT
from ..planning import load_input, resolve_input
from ..sizing import DEFAULT_POINTS, MemorySizing, Sizing, size_input
from ..stats import format_bytes
from .common import (
    CliError,
    Progress,
    add_planning_options,
    budget_from_arguments,
    check_matplotlib,
    checked_outputs,
    library_errors,
    memories_from_arguments,
    model_options,
    model_stack_installed,
    quiet_libraries,
    warn,
    whole_number,
    writing_outputs,
)
from .plot_axes import PLOT_SUFFIXES
from .pools import add_pool_options, is_pte, print_program_memory, program_memory_of, write_pools
from .printing import format_seconds, kept_terms, percent_used, print_table

__all__ = ["add_parser", "print_sizing", "run"]


def add_parser(commands: Any) -> None:
    sizer = commands.add_parser(
        "size",
        help="how much fast memory INPUT needs: the size that keeps every tensor there, and"
        " the most it keeps below that",
        description="Size the first (fastest) memory for INPUT with best: the smallest size"
        " at which every tensor fits there (proved, or with a lower bound), then, below it,"
        " the most it keeps at each size where that changes, with a proved bound. The other"
        " memories are planned as given: what spills goes there. A model is lowered once;"
        " each size re-runs only the memory planning. The work is counted, not timed: the"
        " same command gives the same answer on every run.",
    )
    sizer.add_argument(
        "input", nargs="?", metavar="INPUT", help=f"as for plan (default: {DEFAULT_INPUT})"
    )
    add_planning_options(sizer, placer=False)
    sizer.add_argument(
        "--points",
        metavar="N",
        type=whole_number("points"),
        default=DEFAULT_POINTS,
        help="plan at most N sizes below the one that keeps every tensor, each where the last"
        " plan's use of the memory ends, so each point is where the answer changes"
        " (default: %(default)s)",
    )
    sizer.add_argument(
        "--objective",
        choices=OBJECTIVES,
        help="on a model: what the curve keeps, the most bytes or the most traffic (each"
        " tensor's size times 1 + the nodes that read it) (default: bytes)",
    )
    sizer.add_argument("--json", metavar="FILE", help="write the answer as JSON (.json)")
    add_pool_options(sizer)
    sizer.add_argument(
        "--plot", metavar="FILE", help="draw the curve and its bound (.png, .svg, .pdf)"
    )
    sizer.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    sizer.add_argument("--debug", action="store_true", help="show tracebacks and library warnings")


def run(arguments: argparse.Namespace) -> int:
    if is_pte(arguments.input):  # planned already: its pools only (cli/pools.py)
        from .pools import run_pte

        return run_pte(arguments)
    progress = Progress(arguments.quiet)
    with library_errors():
        what = resolve_input(DEFAULT_INPUT if arguments.input is None else arguments.input)
    memories = memories_from_arguments(arguments)
    outputs = checked_outputs(
        [
            (arguments.json, "--json", (".json",)),
            (arguments.plot, "--plot", PLOT_SUFFIXES),
            (arguments.header, "--header", (".h",)),
        ],
        inputs=[what.path, arguments.memory_config],
    )
    check_matplotlib(arguments.plot)
    budget = budget_from_arguments(arguments)
    if arguments.input is None and not model_stack_installed():
        progress("torch/executorch not installed: sizing for the synthetic graph instead")
        what = resolve_input("synthetic")
    model_options(arguments, what.is_model)
    if arguments.header is not None and not what.is_model:
        raise CliError(
            "--header: for a model or a .pte only (a CSV or synthetic input has no program)"
        )
    if arguments.objective is not None and not what.is_model:
        raise CliError("--objective: for models only (a CSV or synthetic input has no graph)")
    with quiet_libraries(arguments.debug or not what.is_model), library_errors(memories, "best"):
        loaded = load_input(what, lowering=arguments.lowering, progress=progress)
        if what.kind == "csv" and not loaded.labels:
            warn(f"{what.path} has a header and no buffers: there is nothing to size")
        sizing = size_input(
            loaded, memories, lowering=arguments.lowering, points=arguments.points,
            budget=budget, objective=arguments.objective or "bytes",
            alloc_inputs=arguments.alloc_inputs, alloc_outputs=arguments.alloc_outputs,
            progress=progress,
        )  # fmt: skip
    print_sizing(sizing, arguments.points)
    pools = (
        None
        if sizing.program is None
        else program_memory_of(sizing.program.buffer, arguments.target)
    )
    if pools is not None:
        print_program_memory(pools)
    written: list[str] = []  # printed once every output is in place
    with writing_outputs(outputs) as partial:
        if arguments.json:
            from ..io.sizes import write_size

            write_size(partial(arguments.json), sizing, pools)
            written.append(f"wrote sizing: {arguments.json}")
        if arguments.plot:
            from .size_plot import plot_sizing

            progress(f"drawing {arguments.plot}")
            plot_sizing(partial(arguments.plot), sizing)
            written.append(f"wrote sizing plot: {arguments.plot}")
        if pools is not None:
            written += write_pools(partial, arguments, pools, sizing.input.label, json_too=False)
    for line in written:
        print(line)
    progress("done")
    return 0


def print_sizing(sizing: Sizing, points: int) -> None:
    """The report: what was sized and how, the size that keeps every tensor, the curve."""
    others = ", ".join(f"{memory.name} ({format_bytes(memory.size)})" for memory in
                       sizing.memories[len(sizing.sized):])  # fmt: skip
    given = f", with {others} as given" if others else ", the only memory"
    memory = sizing.sized[0].memory
    print(f"{sizing.input.label}: {memory.name} (alignment {memory.alignment}) sized with"
          f" 'best'{given}")  # fmt: skip
    if sizing.lowering is not None:
        print(f"lowering: {sizing.lowering} ({LOWERING_DESCRIPTIONS[sizing.lowering]})")
    for sized in sizing.sized:
        _print_memory(sized, sizing.objective, points)
    work = sizing.budget.work or 0
    print(
        f"work: {sizing.work:,} units of {work:,} in {format_seconds(sizing.seconds)}"
        + (
            "; counted, not timed: the same answer on every run"
            if sizing.budget.ms is None
            else f"; with --budget {sizing.budget.ms:g} ms the answer depends on the machine's"
            " speed and load" + (" (the cap ended a search)" if sizing.cut_short else "")
        )
    )


def _print_memory(sized: MemorySizing, objective: str, points: int) -> None:
    name = sized.memory.name
    fits = sized.all_fit_from
    if sized.proved:
        verdict = "(proved optimal)"
    else:
        verdict = (
            f"(not proved: no size below {sized.lower_bound:,} B holds them all, so the least"
            f" lies between the two)"
        )
    print(f"{name}: every tensor fits from {fits:,} B ({format_bytes(fits)}) {verdict}")
    unit, terms = kept_terms(objective)
    curve = list(sized.curve)
    if curve and curve[-1].kept == curve[-1].kept_bound == 0:
        curve.pop()  # nothing can be kept below the row before: said after the table
    lowest = curve[-1].capacity if curve else fits
    if curve:
        print(
            f"below it, what {name} keeps ({terms}) from each size up to the row above, and"
            " the most any plan keeps there:"
        )
        rows = [[f"{fits:,}", f"{sized.total:,}", f"{sized.total:,}", "every tensor"]]
        for point in curve:
            bound = point.kept_bound
            share = "" if not bound else percent_used(point.kept, bound)
            rows.append(
                [
                    f"{point.capacity:,}",
                    f"{point.kept:,}",
                    "-" if bound is None else f"{bound:,}",
                    "proved" if point.proved else share,
                ]
            )
        headers = [f"{name} (B)", f"keeps ({unit})", f"at most ({unit})", "kept / at most"]
        print_table(headers, rows, names=0)
    ends = sized.curve_ends
    if ends == "complete":
        if curve and curve[-1].kept == 0:  # what might be kept there was not found
            print(f"the curve is complete: down to {lowest:,} B")
        else:
            print(f"the curve is complete: below {lowest:,} B, {name} keeps nothing")
    elif ends == "points":
        more = "; more points go further" if points else ""
        print(f"below {lowest:,} B: not planned (--points {points}{more})")
    elif ends == "no plan":
        print(
            f"below {lowest:,} B: not planned (at {sized.lowest_tried:,} B best found no plan"
            " that places every tensor in these memories)"
        )
    else:
        print(f"below {fits:,} B: no plan (a single memory: nothing can spill)")
