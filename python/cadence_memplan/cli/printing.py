"""The text report the command line prints: a table per memory, the overall peak, timings,
and the ``--compare`` lines."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .._types import Budget
from ..analysis.diff import MemoryChange, PlanDiff
from ..analysis.explain import MemoryPeak
from ..api import DEFAULT_WORK_BUDGET
from ..io.memories import Memory
from ..stats import (
    TensorTable,
    format_bytes,
    memory_stats,
    overall_peak,
    summed_sizes_per_memory,
)

if TYPE_CHECKING:
    from ..scheduling import Reorder

__all__ = [
    "Optimality",
    "format_seconds",
    "percent_used",
    "plural",
    "print_best_summary",
    "print_comparison",
    "print_diff",
    "print_explanation",
    "print_placer_comparison",
    "print_reorder",
    "print_report",
    "print_table",
]

HEADERS = (
    "memory",
    "base address",
    "size (B)",
    "peak usage (B)",
    "used",
    "peak live, lower bound (B)",
    "usage / bound",
    "tensors",
)


def plural(count: int, noun: str) -> str:
    """``1 tensor``, ``2 tensors``, ``1,000 sizes``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def format_seconds(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} µs"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]], names: int = 1) -> None:
    """The first ``names`` columns left-aligned (names), the rest right-aligned (numbers)."""
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(width) if index < names else cell.rjust(width)
            for index, (cell, width) in enumerate(zip(cells, widths, strict=True))
        )

    print(line(headers))
    print("  ".join("-" * width for width in widths))
    for row in rows:
        print(line(row))


def print_report(
    label: str,
    table: TensorTable,
    memories: Sequence[Memory],
    algorithm: str,
    timings: dict[str, float],
    node_names: Sequence[str] | None = None,
    optimality: Optimality | None = None,
) -> None:
    """``optimality``: what ``algorithm="best"`` proved, printed as lines of their own."""
    stats = memory_stats(table, len(memories))
    print(f"{label}: {plural(len(table), 'tensor')} planned with {algorithm!r}")
    rows = [
        [
            memory.name,
            "-" if memory.base_address is None else hex(memory.base_address),
            f"{memory.size:,}",
            f"{stat.peak_usage:,}",
            percent_used(stat.peak_usage, memory.size),
            f"{stat.peak_live_bytes:,}",
            _ratio(stat.peak_usage, stat.peak_live_bytes),
            f"{stat.tensor_count:,}",
        ]
        for memory, stat in zip(memories, stats, strict=True)
    ]
    print_table(HEADERS, rows)
    peak_bytes, peak_node = overall_peak(table, len(node_names) if node_names else None)
    node = f"node {peak_node}"
    if node_names is not None and peak_node < len(node_names):
        node += f" ({node_names[peak_node]})"
    shared = int(table.shares_storage.sum())
    inside = (
        f"; {shared:,} tensor(s) inside another's storage add no bytes of their own"
        if shared
        else ""
    )
    print(
        f"overall peak: {peak_bytes:,} bytes ({format_bytes(peak_bytes)}) alive at {node},"
        f" all memories together{inside}"
    )
    print(
        "planning time: " + ", ".join(f"{what} {format_seconds(s)}" for what, s in timings.items())
    )
    if optimality is not None:
        if optimality.lower_bound is None and optimality.kept is not None:
            print(_kept_line(memories[0].name, optimality))
        print(_optimality_line(optimality, memories[0].name))


class Optimality(NamedTuple):
    """What ``algorithm="best"`` proved (PlanResult's fields of the same names)."""

    proved_optimal: bool
    lower_bound: int | None
    kept_bound: int | None
    kept: int | None = None  # What memory 1 keeps, in kept_bound's terms.
    objective: str = "bytes"


def print_reorder(reorder: Reorder) -> None:
    """``--reorder``'s lines: peak-live and the arena in the given order and in the order
    kept, the lower bound over every legal order and whether the order is proved best."""
    kept = {
        "given": "kept the given order (no order planned smaller)",
        "structural": "kept the structural order (write-backs moved up)",
        "scheduled": f"kept the scheduler's order ({reorder.strategy})",
    }[reorder.kept]
    print(f"reorder: {kept}; {reorder.moves.describe()} ({plural(reorder.units, 'unit')})")
    print(
        f"reorder: peak live {reorder.given_peak_live:,} -> {reorder.peak_live:,} B, arena"
        f" {reorder.given_arena:,} -> {reorder.arena:,} B"
        f" ({_ratio(reorder.arena, reorder.given_arena)} of the given order's)"
    )
    if reorder.proved_optimal:
        verdict = "the order is proved best: its peak live is at the bound"
    else:
        verdict = f"not proved best (its peak live is {_ratio(reorder.peak_live, reorder.lower_bound)} the bound)"
    print(f"reorder: lower bound over every legal order {reorder.lower_bound:,} B; {verdict}")


def _kept_line(name: str, optimality: Optimality) -> str:
    kept, bound = optimality.kept or 0, optimality.kept_bound or 0
    share = f" ({percent_used(kept, bound)})" if bound else ""
    if optimality.objective == "bytes":
        return f"{name}: keeps {kept:,} B; at most {bound:,} B can be kept{share}"
    return (
        f"{name}: keeps traffic {kept:,} (bytes x (1 + readers)); at most {bound:,} can be"
        f" kept{share}"
    )


def _optimality_line(optimality: Optimality, fast: str) -> str:
    lower_bound = optimality.lower_bound
    if lower_bound is None:
        if optimality.kept_bound is None:
            return "optimality: not proved (tensors outside memory 1; no lower bound computed)"
        if optimality.proved_optimal:
            return (
                f"optimality: {fast} proved as full as it can be (no plan keeps more there);"
                " the other memories are not proved"
            )
        return f"optimality: not proved ({fast} may keep more; see the bound above)"
    bound = f"{lower_bound:,} bytes ({format_bytes(lower_bound)}) in all memories"
    if optimality.proved_optimal:
        return f"optimality: proved optimal, total bufsize = lower bound {bound}"
    return f"optimality: not proved; proved lower bound on the total bufsize {bound}"


def percent_used(usage: int, size: int) -> str:
    """``usage`` of ``size`` in percent, one decimal, rounded down: ``100.0%`` only when
    the memory is full to its last byte."""
    tenths = usage * 1000 // size
    return f"{tenths // 10}.{tenths % 10}%"


def _ratio(usage: int, bound: int) -> str:
    """How far a memory's plan is from its peak-live lower bound: ``1.000x`` only when
    usage equals the bound (optimal). A ratio that three decimals would round to 1.000
    gets the digits that tell it apart (``1.00006x``), or ``>1.000000x`` beyond six."""
    if bound <= 0:
        return "-"
    if usage == bound:
        return "1.000x"
    ratio = usage / bound
    for digits in range(3, 7):
        text = f"{ratio:.{digits}f}"
        if text != f"{1:.{digits}f}":
            return f"{text}x"
    return f"{'>' if usage > bound else '<'}1.000000x"


SUM_OF_SIZES_NOTE = (
    "sum of sizes: the sizes of a memory's tensors added up over the whole graph (not bytes"
    " alive at once, which is the peak usage); what best minimises outside the first memory"
)


def print_placer_comparison(
    plans: Sequence[tuple[str, TensorTable, float]], memories: Sequence[Memory]
) -> None:
    """For ``--algo best --compare``: each placer's peak usage and sum of tensor sizes per
    memory, each memory's usage against its peak-live lower bound, the sum of sizes
    outside memory 1 (what best minimises first), and the time."""
    headers = ["placer"]
    for memory in memories:
        headers += [
            f"{memory.name}: peak usage (B)",
            f"{memory.name}: sum of sizes (B)",
            f"{memory.name}: usage / bound",
        ]
    headers += [f"outside {memories[0].name}: sum of sizes (B)", "time"]
    rows = []
    for name, table, seconds in plans:
        stats = memory_stats(table, len(memories))
        sums = summed_sizes_per_memory(table, len(memories))
        row = [name]
        for memory_id, stat in enumerate(stats, start=1):
            row += [
                f"{stat.peak_usage:,}",
                f"{int(sums[memory_id]):,}",
                _ratio(stat.peak_usage, stat.peak_live_bytes),
            ]
        row += [f"{int(sums[2:].sum()):,}", format_seconds(seconds)]
        rows.append(row)
    print_table(headers, rows)
    print(SUM_OF_SIZES_NOTE)


def _change(pair: tuple[int, int]) -> str:
    return f"{pair[1] - pair[0]:+,}" if pair[1] != pair[0] else "0"


def same_placements(first: TensorTable, second: TensorTable) -> bool:
    """Every tensor in the same memory at the same offset."""
    return first_difference(first, second) is None


def print_best_summary(
    table: TensorTable,
    memories: Sequence[Memory],
    strategy: str | None,
    seconds: float,
    work: int,
    cut_short: bool,
    budget: Budget,
    upstream: Sequence[tuple[str, TensorTable | None]],
) -> None:
    """What ``--algo best`` did: the winning strategy, the work spent against the budget
    (and the wall-clock cap, when it ended the search), whether the plan is one of
    upstream's placers' (``upstream``: name and plan, position first; None for a placer
    that does not fit), and each memory's peak usage and sum of sizes against position's
    plan whenever they differ (best may raise one memory's peak to keep bytes in a faster
    one)."""
    winner = f"the {strategy}" if strategy else "an unnamed strategy"
    allowed = DEFAULT_WORK_BUDGET if budget.work is None else budget.work
    if cut_short:
        print(
            f"best: stopped by the --budget cap after {format_seconds(seconds)}, and kept the"
            f" plan of {winner}; this plan depends on the machine's speed and load"
        )
    elif work >= allowed:
        print(
            f"best: searched for {format_seconds(seconds)}, its whole budget ({allowed:,} units"
            f" of work; more with --work N might find a smaller plan), and kept the plan of"
            f" {winner}"
        )
    else:
        print(
            f"best: kept the plan of {winner}, found in {format_seconds(seconds)} ({work:,} of"
            f" {allowed:,} units of work)"
        )
    for name, plan in upstream:
        if plan is None:
            print(f"best: upstream's {name} placer finds no plan that fits these memories")
    equal = [name for name, plan in upstream if plan is not None and same_placements(table, plan)]
    if equal:
        placers = " and ".join(equal) + (" placers" if len(equal) > 1 else " placer")
        print(f"best: the same plan as upstream's {placers}: no smaller plan found")
    position = next((plan for name, plan in upstream if name == "position"), None)
    if position is None or "position" in equal:
        return
    count = len(memories)
    ours, theirs = memory_stats(table, count), memory_stats(position, count)
    our_sums = summed_sizes_per_memory(table, count)
    their_sums = summed_sizes_per_memory(position, count)
    rows = []
    raised = []
    for mem_id, memory in enumerate(memories, start=1):
        usage = (theirs[mem_id - 1].peak_usage, ours[mem_id - 1].peak_usage)
        sums = (int(their_sums[mem_id]), int(our_sums[mem_id]))
        if usage[1] > usage[0]:
            raised.append(f"{memory.name} by {format_bytes(usage[1] - usage[0])}")
        rows.append(
            [memory.name, f"{usage[0]:,}", f"{usage[1]:,}", _change(usage),
             f"{sums[0]:,}", f"{sums[1]:,}", _change(sums)]
        )  # fmt: skip
    outside = (int(their_sums[2:].sum()), int(our_sums[2:].sum()))
    print("best against upstream's position placer (mem_algo=0), per memory:")
    _print_indented(
        ["memory", "peak usage: position", "best", "change (B)", "sum of sizes: position",
         "best", "change (B)"],
        rows,
    )  # fmt: skip
    kept = outside[0] - outside[1]
    summary = (
        f"{format_bytes(kept)} less outside {memories[0].name}"
        if kept > 0
        else "no less outside " + memories[0].name
    )
    trade = f"; it raises the peak usage of {', '.join(raised)}" if raised else ""
    print(f"best: {summary} than position (sum of sizes){trade}")


def first_difference(ours: TensorTable, theirs: TensorTable) -> str | None:
    if list(ours.labels) != list(theirs.labels):
        return f"different tensors: {len(ours)} ours, {len(theirs)} theirs"
    different = np.flatnonzero((ours.mem_ids != theirs.mem_ids) | (ours.offsets != theirs.offsets))
    if not different.size:
        return None
    i = int(different[0])
    return (
        f"{different.size} placement(s) differ, first {ours.labels[i]!r}: ours mem_id"
        f" {ours.mem_ids[i]} offset {ours.offsets[i]}, theirs mem_id {theirs.mem_ids[i]}"
        f" offset {theirs.offsets[i]}"
    )


def print_comparison(
    ours: TensorTable, theirs: TensorTable, our_seconds: float, their_seconds: float, who: str
) -> bool:
    """Print the two placers' times and whether they placed alike; return True if alike."""
    ratio = their_seconds / our_seconds if our_seconds > 0 else float("inf")
    # Tiny inputs cost the core more in call overhead than the Python placer in work.
    speed = f"{ratio:,.1f}x faster" if ratio >= 1 else f"{1 / ratio:,.1f}x slower"
    print(
        f"compare: {who} placer {format_seconds(their_seconds)}, ours"
        f" {format_seconds(our_seconds)}: {speed}"
    )
    difference = first_difference(ours, theirs)
    if difference is None:
        print(f"compare: placements identical ({len(ours):,} tensors)")
        return True
    print(f"compare: placements DIFFER: {difference}")
    return False


# --------------------------------------------------------------------------- --explain

EXPLAIN_ROWS = 10  # live tensors and holes listed per memory; the rest are summed up


def _bytes(count: int, note: str = "") -> str:
    """``245,760 B (240.0 KiB, note)``; below 1 KiB the bytes once."""
    notes = [format_bytes(count)] if abs(count) >= 1024 else []
    notes += [note] if note else []
    return f"{count:,} B" + (f" ({', '.join(notes)})" if notes else "")


def _node(node: int, node_names: Sequence[str] | None) -> str:
    if node_names is not None and 0 <= node < len(node_names):
        return f"node {node} ({node_names[node]})"
    return f"node {node}"


class TensorNames:
    """How the explanation names tensors and lifetimes: models by node, with the node that
    writes the tensor and its op, inclusive ``[start, end]``; CSV instances by id,
    half-open ``[lower, upper)`` as the file has."""

    def __init__(
        self,
        table: TensorTable,
        node_names: Sequence[str] | None = None,
        node_writers: Sequence[tuple[str, str]] | None = None,
        half_open: bool = False,
    ) -> None:
        self.table = table
        self.half_open = half_open
        self.node_names = node_names
        self.writers: dict[str, tuple[str, str]] | None = None
        if node_names is not None and node_writers is not None:
            self.writers = dict(zip(node_names, node_writers, strict=True))

    @property
    def headers(self) -> list[str]:
        if self.half_open:
            return ["id"]
        return ["tensor", "written by", "op"] if self.writers is not None else ["tensor"]

    @property
    def lifetime_header(self) -> str:
        return "lifetime [lower, upper)" if self.half_open else "lifetime [start, end]"

    def name(self, row: int) -> str:
        return str(self.table.labels[row])

    def cells(self, row: int) -> list[str]:
        """The cells under :attr:`headers`."""
        if self.writers is None:
            return [self.name(row)]
        node = self.name(row).split("[")[0]  # "split[1]": the node's second output
        return [self.name(row), *self.writers.get(node, ("?", "?"))]

    def writer_rows(self) -> list[tuple[str, str]] | None:
        """Per row, the node that writes the tensor and its op; None without a model."""
        if self.writers is None:
            return None
        return [(writer, op) for _, writer, op in map(self.cells, range(len(self.table)))]

    def lifetime(self, row: int) -> str:
        start, end = int(self.table.starts[row]), int(self.table.ends[row])
        return f"[{start}, {end + 1})" if self.half_open else f"[{start}, {end}]"

    def describe(self, row: int) -> str:
        """One tensor in a sentence: name (writer: op), bytes, lifetime."""
        name = f"{self.headers[0]} {self.name(row)}"
        if self.writers is not None:
            _, writer, op = self.cells(row)
            name += f" ({writer}: {op})"
        offset, size = int(self.table.offsets[row]), int(self.table.sizes[row])
        return f"{name} at bytes [{offset:,}, {offset + size:,}), alive {self.lifetime(row)}"


def print_explanation(
    explained: Sequence[MemoryPeak], memories: Sequence[Memory], names: TensorNames
) -> None:
    """``--explain``: per memory, the live tensors and holes at its live-bytes peak, and
    the gap between its peak usage and the peak-live lower bound."""
    table = names.table
    for peak, memory in zip(explained, memories, strict=True):
        print()
        title = f"explain {memory.name} (memory {peak.mem_id})"
        if not (table.mem_ids == peak.mem_id).any():
            print(f"{title}: no tensors")
            continue
        gap = "no gap, no plan can use less"
        if peak.gap:
            gap = f"gap {_bytes(peak.gap, f'{peak.gap / peak.peak_usage:.1%} of the peak usage')}"
        print(
            f"{title}: peak usage {_bytes(peak.peak_usage)}, peak-live lower bound"
            f" {_bytes(peak.peak_live_bytes)}: {gap}"
        )
        if peak.peak_node < 0:
            print("  no tensor of this memory is ever alive")
            continue
        live = peak.live_rows
        print(
            f"  live bytes peak first at {_node(peak.peak_node, names.node_names)}:"
            f" {len(live):,} live tensor(s), {_bytes(int(table.sizes[live].sum()))}, largest"
            " first:"
        )
        headers = [*names.headers, "size (B)", "offset", names.lifetime_header]
        rows = [
            [
                *names.cells(row),
                f"{table.sizes[row]:,}",
                f"{table.offsets[row]:,}",
                names.lifetime(row),
            ]
            for row in live[:EXPLAIN_ROWS].tolist()
        ]
        _print_indented(headers, rows, names=len(names.headers))
        rest = live[EXPLAIN_ROWS:]
        if rest.size:
            print(f"    ... and {rest.size:,} more: {_bytes(int(table.sizes[rest].sum()))}")
        if not len(peak.hole_sizes):
            print("  no holes below the peak usage there")
        else:
            holes = f"{len(peak.hole_sizes):,} hole(s) below the peak usage there"
            holes += f", {_bytes(peak.hole_bytes)}"
            if peak.hole_bytes == peak.gap:
                holes += ": all of the gap"
            else:  # only when tensors overlap, i.e. the plan is invalid
                holes += f", not the gap of {_bytes(peak.gap)}: tensors overlap"
            print("  " + holes + ":")
        if len(peak.hole_sizes):
            largest = np.argsort(-peak.hole_sizes, kind="stable")[:EXPLAIN_ROWS]
            largest = np.sort(largest)  # listed by offset
            _print_indented(
                ["offset", "size (B)"],
                [
                    [f"{peak.hole_offsets[i]:,}", f"{peak.hole_sizes[i]:,}"]
                    for i in largest.tolist()
                ],
            )
            if len(peak.hole_sizes) > EXPLAIN_ROWS:
                smaller = len(peak.hole_sizes) - EXPLAIN_ROWS
                print(f"    ... and {smaller:,} smaller hole(s)")
        for row in peak.top_rows[:3].tolist():
            print(f"  peak usage reached by {names.describe(row)}")
        if len(peak.top_rows) > 3:
            print(f"  ... and {len(peak.top_rows) - 3:,} more tensor(s) ending there")


def _print_indented(headers: Sequence[str], rows: Sequence[Sequence[str]], names: int = 1) -> None:
    """A table under a heading, indented by four spaces."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        print_table(headers, rows, names)
    for line in buffer.getvalue().splitlines():
        print("    " + line)


# --------------------------------------------------------------------------- diff


def print_diff(
    difference: PlanDiff, before_name: str, after_name: str, every_tensor: bool = False
) -> None:
    """``cadence-memplan diff``: each memory's peak usage and bound in both plans, then
    the moved tensors summed per pair of memories (``every_tensor``: each one listed, and
    every tensor with another size or lifetime), and those only one plan has."""

    def delta(pair: tuple[int, int]) -> str:
        change = pair[1] - pair[0]
        return f"{change:+,}" if change else "0"

    def memory_name(memory: MemoryChange) -> str:
        """``fast``, or ``fast/1`` when the plans name memory ``mem_id`` differently."""
        names = [m.name for m in (memory.before, memory.after) if m is not None]
        if not names:  # plan CSVs list no memories
            return str(memory.mem_id)
        return names[0] if len(set(names)) == 1 else "/".join(names)

    def side_name(memory: Memory | None, mem_id: int) -> str:
        return memory.name if memory is not None else f"memory {mem_id}"

    def memory_text(memory: Memory | None) -> str:
        if memory is None:
            return "no such memory"
        base = "" if memory.base_address is None else f", base {hex(memory.base_address)}"
        return f"{memory.name}: {memory.size:,} B, alignment {memory.alignment}{base}"

    print(f"--- {before_name}: {_count(difference.tensor_counts[0], 'tensor')}")
    print(f"+++ {after_name}: {_count(difference.tensor_counts[1], 'tensor')}")
    rows = []
    for memory in difference.memories:
        rows.append(
            [
                memory_name(memory),
                f"{memory.peak_usage[0]:,}",
                f"{memory.peak_usage[1]:,}",
                delta(memory.peak_usage),
                f"{memory.peak_live_bytes[0]:,}",
                f"{memory.peak_live_bytes[1]:,}",
                delta(memory.peak_live_bytes),
                f"{memory.tensor_count[0]:,}",
                f"{memory.tensor_count[1]:,}",
            ]
        )
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
                f"memory {memory.mem_id} differs: --- {memory_text(memory.before)};"
                f" +++ {memory_text(memory.after)}"
            )
    if difference.identical:
        print(f"plans identical ({_count(difference.tensor_counts[0], 'tensor')})")
        return
    before_names = {m.mem_id: side_name(m.before, m.mem_id) for m in difference.memories}
    after_names = {m.mem_id: side_name(m.after, m.mem_id) for m in difference.memories}
    moved = difference.moved
    resized = [change for change in difference.changed if change.before[2:] != change.after[2:]]
    moved_bytes = sum(change.after[2] for change in moved)
    print(
        f"moved: {_count(len(moved), 'tensor')} changed memory or offset"
        + (f", {moved_bytes:,} B" if moved else "")
    )
    if moved and not every_tensor:
        _print_indented(
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
    if moved and every_tensor:
        _print_indented(
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
                for change in moved
            ],
        )
    if resized:
        print(f"resized: {_count(len(resized), 'tensor')} with another size or lifetime")
    if resized and every_tensor:
        _print_indented(
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
            print(f"only in {sign}: {_count(len(only), 'tensor')}: {shown}")
    if not every_tensor and (moved or resized):
        print("every tensor: diff --all")


def _count(number: int, noun: str) -> str:
    """``1 tensor``, ``2 tensors``, ``1,052 tensors``."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"
