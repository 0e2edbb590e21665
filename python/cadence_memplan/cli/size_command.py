"""``cadence-memplan size``: how much of the fastest memory INPUT needs, and what it keeps
below that (:func:`cadence_memplan.workflow.size.size_input`), printed, written as JSON, drawn."""

from __future__ import annotations

import argparse
from typing import Any

from .._types import OBJECTIVES
from ..cadence import LOWERING_DESCRIPTIONS
from ..models import DEFAULT_INPUT
from ..stats import format_bytes, plural
from ..workflow.size import DEFAULT_POINTS, MemorySizing, Sizing, size_input, size_methods
from ..workflow.size_shared import SharedSizing, size_shared
from .common import (
    CliError,
    checked_outputs,
    library_errors,
    warn,
    whole_number,
    writing_outputs,
)
from .planning_request import CommandRequest, add_planning_options
from .plot_axes import PLOT_SUFFIXES
from .pools import add_pool_options, is_pte, print_program_memory, program_memory_of, write_pools
from .printing import format_seconds, kept_terms, percent_used, print_table
from .program_methods import state_lines, unshared_in_cli_words, unshared_warning

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
    sizer.add_argument(
        "--reorder",
        action="store_true",
        help="models only: size the graph in the node order plan --reorder keeps (without"
        " it, a note says when that order needs less)",
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
    request = CommandRequest.read(arguments)
    request.refuse_methods(
        [("--json", bool(arguments.json)), ("--plot", bool(arguments.plot)),
         ("--header", arguments.header is not None)],
        "size prints each method and the program",
    )  # fmt: skip
    outputs = checked_outputs(
        [
            (arguments.json, "--json", (".json",)),
            (arguments.plot, "--plot", PLOT_SUFFIXES),
            (arguments.header, "--header", (".h",)),
        ],
        inputs=request.inputs,
    )
    options = request.planned("sizing for")
    if arguments.header is not None and not request.what.is_model:
        raise CliError(
            "--header: for a model or a .pte only (a CSV or synthetic input has no program)"
        )
    progress = request.progress
    if request.what.methods:
        return _run_methods(request, arguments.points)
    with request.loaded("size") as loaded:
        sizing = size_input(
            loaded, request.memories, options, points=arguments.points, progress=progress
        )
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

            progress(f"writing {arguments.json}")
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
    progress.done()
    return 0


def _run_methods(request: CommandRequest, points: int) -> int:
    """``size`` of a program of several methods: each method sized alone, then the
    program (the largest method's figures; with ``--share-mutable-buffers``, the program
    planned whole with its state at one place in every method)."""
    options = request.options
    assert options is not None
    shared = options.share_mutable_buffers
    if shared and options.reorder:
        raise CliError(
            "--reorder with --share-mutable-buffers: not sized (the node order plan keeps may"
            " change with the size, and no lower bound covers every order)"
        )
    with (
        request.loaded("size") as loaded,
        library_errors(request.memories, "best"),
        unshared_in_cli_words(),
    ):
        try:
            sizings, found = size_methods(
                loaded, request.memories, options, points=points, progress=request.progress
            )
            program = (
                size_shared(loaded, request.memories, options, sizings, progress=request.progress)
                if shared
                else None
            )
        except ValueError as error:
            raise CliError(str(error)) from error
    for message in found:  # never silent: --quiet keeps warnings
        warn(unshared_warning(message))
    for sizing in sizings.values():
        print_sizing(sizing, points)
        print()
    if program is None:
        print_program_sizing(request.what.label, sizings)
    else:
        print_shared_sizing(request.what.label, sizings, program)
    request.progress.done()
    return 0


def print_program_sizing(label: str, sizings: dict[str, Sizing]) -> None:
    """The program of several methods as a whole: memory 1 holds every method's tensors
    from the largest method's ``all_fit_from``, and no size below the largest lower
    bound does."""
    names = list(sizings)
    first = next(iter(sizings.values()))
    memory = first.sized[0].memory
    largest = max(names, key=lambda name: sizings[name].sized[0].all_fit_from)
    fits = sizings[largest].sized[0].all_fit_from
    bound = max(sizing.sized[0].lower_bound for sizing in sizings.values())
    verdict = (
        "(proved optimal)"
        if bound >= fits
        else f"(not proved: no size below {bound:,} B holds them all)"
    )
    print(
        f"{label}, the program: {len(names)} methods ({', '.join(names)}), each sized alone"
        " with its own copy of the state"
    )
    print(
        f"{memory.name}: every tensor of every method fits from {fits:,} B"
        f" ({format_bytes(fits)}), the largest method's ({largest}) {verdict}"
    )
    print(
        f"work: {sum(s.work for s in sizings.values()):,} units in"
        f" {format_seconds(sum(s.seconds for s in sizings.values()))}"
    )


def print_shared_sizing(label: str, sizings: dict[str, Sizing], program: SharedSizing) -> None:
    """The program of several methods planned whole, its state at one place in every
    method: the least size of memory 1 found to hold every method's tensors there, proved
    or with the lower bound and the gap."""
    names = list(sizings)
    name = program.memory.name
    fits, bound = program.fits_from, program.lower_bound
    print(
        f"{label}, the program: {len(names)} methods ({', '.join(names)}) planned together,"
        " their mutable state at one place in every method"
    )
    if program.proved:
        verdict = f"(proved optimal: method {program.bound_by}'s tensors alone need as much)"
    else:
        verdict = (
            f"(not proved: no size below {bound:,} B holds them all, so the least lies"
            f" between the two, {fits - bound:,} B apart)"
        )
    print(
        f"{name}: every tensor of every method fits from {fits:,} B ({format_bytes(fits)}) {verdict}"
    )
    for line in state_lines(program.state, sizings[names[0]].memories, True):
        print(line)
    tried = ", ".join(f"{size:,}" + ("" if ok else " (does not fit)") for size, ok in program.tried)
    print(f"{name} sizes planned, in order (B): {tried}")
    print(
        "each plan is plan --algo best --share-mutable-buffers at that size, with the whole"
        f" budget; {plural(len(program.tried), 'plan')} in {format_seconds(program.seconds)}"
    )


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
    if sizing.reorder:
        print("order: the one plan --reorder keeps (first fit, with the memories as given)")
    for sized in sizing.sized:
        _print_memory(sized, sizing.objective, points)
    if sizing.reordered_fits_from is not None:
        print(
            f"note: in the node order plan --reorder keeps, every tensor fits from"
            f" {sizing.reordered_fits_from:,} B ({format_bytes(sizing.reordered_fits_from)});"
            " size --reorder sizes that order"
        )
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
    if fits == 0:  # no tensor, or none with any bytes
        print(f"{name}: no tensor has any bytes, so any size holds them all")
    else:
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
    if ends == "complete" and fits == 0:
        pass  # nothing to keep at any size: said above
    elif ends == "complete":
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
