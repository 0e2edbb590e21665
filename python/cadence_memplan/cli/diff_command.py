"""``cadence-memplan diff``: compare two plan files (JSON or CSV); exit as diff(1) does."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..analysis.diff import MemoryChange, PlanDiff
from ..io.memories import Memory
from ..io.plans import read_plan_file
from ..stats import plural
from .common import EXIT_PLANS_DIFFER, CliError, one_line
from .explaining import EXPLAIN_ROWS
from .printing import print_indented, print_table


def add_parser(commands: Any) -> None:
    differ = commands.add_parser(
        "diff",
        help="compare two plan files (plan --out): peaks per memory, what moved",
        description="Compare two plan files written by `plan --out` (JSON or CSV), their"
        " tensors matched by name: each memory's peak usage and the peak live of its tensors"
        " in both,"
        " then the tensors that moved (memory or offset), summed per pair of memories"
        " (--all: each one). A plan CSV lists no memories: they are named by their ids."
        " Exit status as diff(1): 0 identical, 1 different, 2 error.",
    )
    differ.add_argument("before", metavar="A", help="the first plan, .json or .csv (---)")
    differ.add_argument("after", metavar="B", help="the second plan, .json or .csv (+++)")
    differ.add_argument(
        "--all", action="store_true", help="list every moved or resized tensor, not the sums"
    )
    differ.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print only whether the plans differ, as diff -q does (the exit status says it too)",
    )
    differ.add_argument("--debug", action="store_true", help="show tracebacks")


def run(arguments: argparse.Namespace) -> int:
    from ..analysis.diff import diff_plans

    plans = []
    for path in (arguments.before, arguments.after):
        if Path(path).suffix.lower() not in (".json", ".csv"):
            raise CliError(
                f"{path}: diff compares plan files, .json or .csv (written by plan --out)"
            )
        try:
            plan_file = read_plan_file(path)
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or error
            raise CliError(f"cannot read {path}: {reason}") from error
        except ValueError as error:
            raise CliError(one_line(str(error))) from error
        plans.append((plan_file.table, plan_file.memories))
    difference = diff_plans(*plans[0], *plans[1])
    if arguments.quiet:
        if not difference.identical:
            print(f"plans {arguments.before} and {arguments.after} differ")
    else:
        print_diff(difference, arguments.before, arguments.after, every_tensor=arguments.all)
    return 0 if difference.identical else EXIT_PLANS_DIFFER


def print_diff(
    difference: PlanDiff, before_name: str, after_name: str, every_tensor: bool = False
) -> None:
    """``cadence-memplan diff``: each memory's peak usage and bound in both plans, then
    the moved tensors summed per pair of memories (``every_tensor``: each one listed, and
    every tensor with another size or lifetime), and those only one plan has."""
    print(f"--- {before_name}: {plural(difference.tensor_counts[0], 'tensor')}")
    print(f"+++ {after_name}: {plural(difference.tensor_counts[1], 'tensor')}")
    _print_memories(difference)
    if difference.identical:
        print(f"plans identical ({plural(difference.tensor_counts[0], 'tensor')})")
        return
    moved = difference.moved
    resized = [change for change in difference.changed if change.before[2:] != change.after[2:]]
    moved_bytes = sum(change.after[2] for change in moved)
    print(
        f"moved: {plural(len(moved), 'tensor')} changed memory or offset"
        + (f", {moved_bytes:,} B" if moved else "")
    )
    if moved:
        _print_moved(difference, every_tensor)
    if resized:
        print(f"resized: {plural(len(resized), 'tensor')} with another size or lifetime")
    if resized and every_tensor:
        print_indented(
            ["tensor", "size ---", "size +++", "lifetime ---", "lifetime +++"],
            [
                [
                    change.name,
                    f"{change.before[2]:,}",
                    f"{change.after[2]:,}",
                    f"[{change.before[3]}, {change.before[4]}]",
                    f"[{change.after[3]}, {change.after[4]}]",
                ]
                for change in resized
            ],
        )
    for sign, only in (("---", difference.only_before), ("+++", difference.only_after)):
        if only:
            shown = ", ".join(only[:EXPLAIN_ROWS]) + (" ..." if len(only) > EXPLAIN_ROWS else "")
            print(f"only in {sign}: {plural(len(only), 'tensor')}: {shown}")
    if not every_tensor and (moved or resized):
        print("every tensor: diff --all")


def _delta(pair: tuple[int, int]) -> str:
    change = pair[1] - pair[0]
    return f"{change:+,}" if change else "0"


def _memory_name(memory: MemoryChange) -> str:
    """``fast``, or ``fast/1`` when the plans name memory ``mem_id`` differently."""
    names = [m.name for m in (memory.before, memory.after) if m is not None]
    if not names:  # plan CSVs list no memories
        return str(memory.mem_id)
    return names[0] if len(set(names)) == 1 else "/".join(names)


def _side_name(memory: Memory | None, mem_id: int) -> str:
    return memory.name if memory is not None else f"memory {mem_id}"


def _memory_text(memory: Memory | None) -> str:
    if memory is None:
        return "no such memory"
    base = "" if memory.base_address is None else f", base {hex(memory.base_address)}"
    return f"{memory.name}: {memory.size:,} B, alignment {memory.alignment}{base}"


def _print_memories(difference: PlanDiff) -> None:
    """Each memory's peak usage, peak live bytes and tensors in both plans, and the
    memories the two plans describe differently."""
    rows = [
        [
            _memory_name(memory),
            f"{memory.peak_usage[0]:,}",
            f"{memory.peak_usage[1]:,}",
            _delta(memory.peak_usage),
            f"{memory.peak_live_bytes[0]:,}",
            f"{memory.peak_live_bytes[1]:,}",
            _delta(memory.peak_live_bytes),
            f"{memory.tensor_count[0]:,}",
            f"{memory.tensor_count[1]:,}",
        ]
        for memory in difference.memories
    ]
    print_table(
        [
            "memory",
            "peak usage ---",
            "+++",
            "change (B)",
            "peak live ---",
            "+++",
            "change (B)",
            "tensors ---",
            "+++",
        ],
        rows,
    )
    for memory in difference.memories:
        if memory.before != memory.after:
            print(
                f"memory {memory.mem_id} differs: --- {_memory_text(memory.before)};"
                f" +++ {_memory_text(memory.after)}"
            )


def _print_moved(difference: PlanDiff, every_tensor: bool) -> None:
    """The moved tensors summed per pair of memories, or (``every_tensor``) each one."""
    before_names = {m.mem_id: _side_name(m.before, m.mem_id) for m in difference.memories}
    after_names = {m.mem_id: _side_name(m.after, m.mem_id) for m in difference.memories}
    if not every_tensor:
        print_indented(
            ["from", "to", "tensors", "bytes"],
            [
                [
                    before_names[moves.before],
                    after_names[moves.after]
                    + (" (offset only)" if moves.before == moves.after else ""),
                    f"{moves.tensors:,}",
                    f"{moves.size:,}",
                ]
                for moves in difference.moves_by_memory()
            ],
            names=2,
        )
        return
    print_indented(
        ["tensor", "size (B)", "memory ---", "offset ---", "memory +++", "offset +++"],
        [
            [
                change.name,
                f"{change.after[2]:,}",
                before_names[change.before[0]],
                f"{change.before[1]:,}",
                after_names[change.after[0]],
                f"{change.after[1]:,}",
            ]
            for change in difference.moved
        ],
    )
