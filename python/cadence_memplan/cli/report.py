"""The text report the command line prints: a table per memory, the overall peak, timings,
and the ``--compare`` lines."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..io.memories import Memory
from ..stats import TensorTable, format_bytes, memory_stats, overall_peak

__all__ = [
    "format_seconds",
    "print_comparison",
    "print_placer_comparison",
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


def format_seconds(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} µs"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """First column left-aligned (names), the rest right-aligned (numbers)."""
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        first, *rest = cells
        return "  ".join(
            [first.ljust(widths[0])]
            + [cell.rjust(width) for cell, width in zip(rest, widths[1:], strict=True)]
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
) -> None:
    stats = memory_stats(table, len(memories))
    print(f"{label}: {len(table):,} tensors planned with {algorithm!r}")
    rows = [
        [
            memory.name,
            "-" if memory.base_address is None else hex(memory.base_address),
            f"{memory.size:,}",
            f"{stat.peak_usage:,}",
            f"{stat.peak_usage / memory.size:.1%}",
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
    print(f"overall peak: {peak_bytes:,} bytes ({format_bytes(peak_bytes)}) alive at {node}")
    print(
        "planning time: " + ", ".join(f"{what} {format_seconds(s)}" for what, s in timings.items())
    )


def _ratio(usage: int, bound: int) -> str:
    """How far a memory's plan is from its peak-live lower bound (1.000x: optimal)."""
    return f"{usage / bound:.3f}x" if bound > 0 else "-"


def print_placer_comparison(
    plans: Sequence[tuple[str, TensorTable, float]], memories: Sequence[Memory]
) -> None:
    """For ``--algo best --compare``: each placer's bytes per memory, the bytes outside
    memory 1 (what best minimises first), each memory's usage against its peak-live lower
    bound, and the time."""
    headers = ["placer"]
    for memory in memories:
        headers += [f"{memory.name}: tensor bytes", f"{memory.name}: usage / bound"]
    headers += ["bytes outside memory 1", "time"]
    rows = []
    for name, table, seconds in plans:
        stats = memory_stats(table, len(memories))
        row = [name]
        for memory_id, stat in enumerate(stats, start=1):
            row += [
                f"{int(table.sizes[table.mem_ids == memory_id].sum()):,}",
                _ratio(stat.peak_usage, stat.peak_live_bytes),
            ]
        row += [f"{int(table.sizes[table.mem_ids > 1].sum()):,}", format_seconds(seconds)]
        rows.append(row)
    print_table(headers, rows)


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
