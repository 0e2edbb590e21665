"""``plan`` on a ``.pte``, a program already planned: the plan it carries, read with
exir's deserializer (:mod:`cadence_memplan.device`), each method's report as ``plan``
prints one program's, checked by the validator against the method's own arenas with
lifetimes inferred from its instructions (:mod:`cadence_memplan.device.planned`), then
the program as a whole. Nothing is planned, so every option that plans or writes a plan
is refused, each in one line, before any work."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..stats import TensorTable, format_bytes, peak_usage_per_memory, plural
from ..workflow.plan import check_plan
from .common import (
    DEFAULT_ALGORITHM,
    EXIT_PLANNING_FAILED,
    CliError,
    library_errors,
    quiet_libraries,
)
from .explaining import TensorNames, print_explanation
from .printing import percent_used, print_report, print_table
from .progress import Progress

__all__ = ["PTE_REFUSED", "refused_for_pte", "run_pte_plan"]

# plan's options that plan, or write or compare a plan: a .pte's plan is already made.
PTE_REFUSED = (
    "memory", "memory_config", "work", "budget", "lowering", "alloc_inputs", "alloc_outputs",
    "share_mutable_buffers", "strict_sharing", "objective", "reorder", "stage", "cost_model",
    "stage_out", "plot", "out", "out_minimalloc", "trace", "pte", "compare",
)  # fmt: skip


def refused_for_pte(arguments: argparse.Namespace) -> list[str]:
    """The options given that a ``.pte`` cannot take, as the command line spells them."""
    given = [
        f"--{name.replace('_', '-')}"
        for name in PTE_REFUSED
        if getattr(arguments, name, None) not in (None, False)
    ]
    if getattr(arguments, "algo", DEFAULT_ALGORITHM) != DEFAULT_ALGORITHM:
        given.insert(0, "--algo")
    return given


def run_pte_plan(arguments: argparse.Namespace) -> int:
    """``plan x.pte``: each method's plan as the program has it, checked, then the
    program's arenas."""
    progress: Progress = arguments.progress  # main's: it closes it
    path = Path(arguments.input)
    refused = refused_for_pte(arguments)
    if refused:
        raise CliError(
            f"{', '.join(refused)}: {path.name} is a .pte, already planned: plan reads and"
            " checks the plan it carries (plan the .pt2 it came from to plan anew)"
        )
    if not path.is_file():
        raise CliError(f"input {path}: no such file")
    with quiet_libraries(arguments.debug), library_errors():
        progress(f"reading {path} with exir's deserializer")
        layout = _read(path)
    from ..device.planned import method_memories, method_plan

    first_problem = None
    tables = [method_plan(method) for method in layout.methods]
    for method, table in zip(layout.methods, tables, strict=True):
        memories = method_memories(method)
        print_report(
            f"{path.name} method {method.name}", table, memories, "the .pte's own plan", {},
            _instruction_names(method),
        )  # fmt: skip
        problem = check_plan(table, memories)
        print(f"plan check: {problem or 'valid'}")
        if problem is not None and first_problem is None:
            first_problem = f"method {method.name}: {problem}"
        if arguments.explain:
            from ..analysis.explain import explain_peaks

            names = TensorNames(table, None)
            print_explanation(explain_peaks(table, len(memories)), memories, names)
        print()
    _print_whole(path.name, layout, tables)
    progress.done()
    if first_problem is not None:
        raise CliError(f"the plan is invalid: {first_problem}", EXIT_PLANNING_FAILED)
    return 0


def _read(path: Path) -> Any:
    from ..device.pte import read_program_layout

    try:
        return read_program_layout(path)
    except (ValueError, OSError) as error:
        raise CliError(f"input {path}: {error}") from error


def _instruction_names(method: Any) -> list[str]:
    """Each instruction, in execution order, by what it runs (the report's peak node)."""
    return [
        instruction.operator or instruction.kind for chain in method.chains for instruction in chain
    ]


def _print_whole(label: str, layout: Any, tables: list[TensorTable]) -> None:
    """The program: per memory id, each method's arena and the largest (a runtime that
    gives every method one buffer per memory id needs the largest); ``tables``, each
    method's plan, give the peak usage."""
    methods = layout.methods
    count = max((len(method.arenas) for method in methods), default=0)
    print(
        f"{label}, the program: {plural(len(methods), 'method')}"
        f" ({', '.join(method.name for method in methods)}), planned already"
    )

    def arena(method: Any, index: int) -> int:
        return method.arenas[index] if index < len(method.arenas) else 0

    usage = [
        peak_usage_per_memory(table.mem_ids, table.offsets, table.sizes, count) for table in tables
    ]
    rows = []
    for index in range(count):
        largest = max(arena(method, index) for method in methods)
        used = max(int(peaks[index + 1]) for peaks in usage)
        rows.append(
            [str(index + 1), f"{largest:,}", f"{used:,}", percent_used(used, largest),
             *(f"{arena(method, index):,}" for method in methods)]
        )  # fmt: skip
    headers = ["memory", "arena (B)", "peak usage (B)", "used"]
    print_table([*headers, *(f"{method.name} (B)" for method in methods)], rows)
    total = sum(max(arena(method, index) for method in methods) for index in range(count))
    print(
        f"arena: {total:,} bytes ({format_bytes(total)}) in all, each memory id sized for the"
        " largest method's (the .pte's non-const buffer sizes)"
    )
    print("lifetimes: inferred from each method's instructions, inclusive [first, last]")
