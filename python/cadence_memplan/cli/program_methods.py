"""``plan`` of a program of several methods (a ``.pt2`` of several programs, torch's
``package_pt2``): every method planned together, each method's report as ``plan`` prints
one program's, then the program as a whole: each memory's arena (the largest method's:
a runtime gives every method the same buffer per memory id) and where the mutable state
sits. What a program of several methods cannot take (``--out``, ``--trace``, ...) is
refused by ``plan_command`` before any work; ``--pte`` writes the whole program."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator, Sequence

from ..cadence import LOWERING_DESCRIPTIONS
from ..io.memories import Memory
from ..io.outputs import OutputFiles
from ..request.inputs import LoweringError, ProgramPlan, StateBuffer
from ..stats import format_bytes, memory_stats, plural
from ..workflow.plan import check_control_flow, check_plan, plan_program
from .common import EXIT_PLANNING_FAILED, CliError, warn, writing_outputs
from .explaining import TensorNames, print_explanation
from .planning_request import CommandRequest
from .printing import format_seconds, percent_used, print_report, print_table

__all__ = [
    "METHOD_REFUSALS",
    "print_program",
    "run_methods",
    "unshared_in_cli_words",
    "unshared_warning",
]

# What plan says instead of an output a program of several methods cannot take.
METHOD_REFUSALS = "plan prints each method and the program, and --pte writes the whole program"


def unshared_warning(message: str) -> str:
    """The planner's unshared-state warning in the command line's words."""
    return message.replace("share_mutable_buffers=True", "--share-mutable-buffers")


@contextlib.contextmanager
def unshared_in_cli_words() -> Iterator[None]:
    """``--strict-sharing``'s error (a :class:`LoweringError`) in the command line's words."""
    try:
        yield
    except LoweringError as error:
        raise LoweringError(unshared_warning(str(error))) from error


def run_methods(
    request: CommandRequest, arguments: argparse.Namespace, outputs: OutputFiles
) -> int:
    """``plan`` of a program of several methods (``request.what.methods``)."""
    options, progress = request.options, request.progress
    assert options is not None, "planned() first"
    with request.loaded("plan") as loaded, unshared_in_cli_words():
        planned = plan_program(loaded, request.memories, options, progress=progress)
    for message in planned.warnings:  # never silent: --quiet keeps warnings
        warn(unshared_warning(message))
    problem = print_program(planned, arguments.explain)
    written: list[str] = []
    with writing_outputs(outputs) as partial:
        if arguments.pte:
            progress(f"writing {arguments.pte}")
            partial(arguments.pte).write_bytes(planned.program.buffer)
            written.append(
                f"wrote program: {arguments.pte} ({len(planned.program.buffer):,} bytes,"
                f" {plural(len(planned.methods), 'method')})"
            )
    for line in written:
        print(line)
    progress.done()
    if problem is not None:
        raise CliError(f"the plan is invalid: {problem}", EXIT_PLANNING_FAILED)
    return 0


def print_program(planned: ProgramPlan, explain: bool = False) -> str | None:
    """Each method's report, then the program's; returns the validator's first problem
    (``method NAME: ...``), None when every method's plan is valid."""
    memories, label = planned.memories, planned.input.label
    first_problem = None
    for name, plan in planned.methods.items():
        print_report(
            f"{label} method {name}", plan.table, memories, plan.algorithm, {}, plan.node_names
        )
        problem = check_plan(plan.table, memories) or check_control_flow(planned.program, name)
        print(f"plan check: {problem or 'valid'}")
        if problem is not None and first_problem is None:
            first_problem = f"method {name}: {problem}"
        if explain:
            from ..analysis.explain import explain_peaks
            from ..cadence.lowering import node_writers

            names = TensorNames(plan.table, plan.node_names, node_writers(planned.program, name))
            print_explanation(explain_peaks(plan.table, len(memories)), memories, names)
        print()
    _print_whole(planned)
    return first_problem


def _print_whole(planned: ProgramPlan) -> None:
    memories, methods = planned.memories, list(planned.methods)
    how = "their mutable state shared" if planned.share_mutable_buffers else "each on its own"
    print(
        f"{planned.input.label}, the program: {plural(len(methods), 'method')}"
        f" ({', '.join(methods)}) planned together with {planned.algorithm!r}, {how}"
    )
    per_method = {
        name: memory_stats(plan.table, len(memories)) for name, plan in planned.methods.items()
    }
    arenas = planned.arenas()
    rows = [
        [
            memory.name,
            f"{memory.size:,}",
            f"{arena:,}",
            percent_used(arena, memory.size),
            *(f"{per_method[name][m].peak_usage:,}" for name in methods),
        ]
        for m, (memory, arena) in enumerate(zip(memories, arenas, strict=True))
    ]
    print_table(["memory", "size (B)", "arena (B)", "used", *(f"{n} (B)" for n in methods)], rows)
    total = sum(arenas)
    print(
        f"arena: each memory sized for the largest method, {total:,} bytes"
        f" ({format_bytes(total)}) in all; a runtime gives every method the same buffer per"
        " memory"
    )
    for line in state_lines(planned.state, memories, planned.share_mutable_buffers):
        print(line)
    print(f"lowering: {planned.lowering} ({LOWERING_DESCRIPTIONS[planned.lowering]})")
    print(
        "planning time: "
        + ", ".join(f"{what} {format_seconds(s)}" for what, s in planned.timings.items())
    )


def state_lines(
    state: Sequence[StateBuffer], memories: Sequence[Memory], shared: bool
) -> list[str]:
    """Where the program's mutable state sits: its bytes, those in the first memory, and
    each buffer's place (one for all methods, or each method's)."""
    if not state:
        return ["state: none (no method mutates a buffer)"]

    def place(where: tuple[int, int]) -> str:
        mem_id, offset = where
        if mem_id < 1 or mem_id > len(memories):
            return "not planned"
        return f"{memories[mem_id - 1].name}+{offset:,}"

    total = sum(buffer.size for buffer in state)
    if shared:
        fast = sum(buffer.size for buffer in state if next(iter(buffer.places.values()))[0] == 1)
        verdict = f"at one place in every method; {fast:,} B of it in {memories[0].name}"
    else:
        verdict = "NOT shared: each method its own copy (--share-mutable-buffers places it once)"
    lines = [f"state: {total:,} bytes in {plural(len(state), 'mutable buffer')}, {verdict}"]
    for buffer in state:
        if shared and buffer.shared:
            where = place(next(iter(buffer.places.values())))
            users = ", ".join(buffer.places)
            lines.append(f"  {buffer.name} ({buffer.size:,} B): {where} in {users}")
        else:
            each = ", ".join(f"{place(at)} in {name}" for name, at in buffer.places.items())
            lines.append(f"  {buffer.name} ({buffer.size:,} B): {each}")
    return lines
