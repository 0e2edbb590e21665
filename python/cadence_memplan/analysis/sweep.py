"""A capacity sweep: plan again and again with one memory's size stepped from LO to HI,
and tabulate what each memory holds at each size (``cadence-memplan sweep``).

It answers "how much fast memory keeps everything fast, and what spills at each size?".
Planning is the caller's: ``plan_at(memories)`` returns the plan as a
:class:`~cadence_memplan.stats.TensorTable`, or a short reason when it does not fit
(:func:`arrays_planner` for arrays; ``cadence_memplan.cadence.sweep.Replanner`` for a
model lowered once).

A memory's "sum of sizes" is its tensors' sizes added up over the whole graph (so it can
exceed the memory's size: tensors that are never alive together share bytes), and a
tensor placed inside another's storage on purpose (Cadence's cat/slice nops) counts as a
tensor, not again as bytes; its "peak usage" is its high-water mark. The sum of sizes
outside memory 1 is what ``best`` minimises first.

Cadence's placers are greedy, so a bigger memory need not keep more bytes in it: a big
tensor that now fits can take the place several others had and push them to a slower
memory. :func:`moves_against_growth` finds those sizes and says what moved; the table,
the CSV and the plot all show them.
"""

from __future__ import annotations

import csv
import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .._types import PlanningError
from ..api import plan
from ..io.memories import Memory, parse_size
from ..io.outputs import write_whole
from ..request import Hierarchy, PlanningOptions
from ..stats import TensorTable, format_bytes, peak_usage_per_memory, summed_sizes_per_memory

__all__ = [
    "MAX_SWEEP_STEPS",
    "Planned",
    "SweepRow",
    "arrays_planner",
    "bytes_rounded_down",
    "find_memory",
    "moves_against_growth",
    "parse_sweep_sizes",
    "proved_not_to_keep_all",
    "smallest_size_keeping_all",
    "sweep",
    "sweep_table",
    "write_sweep_csv",
]

MAX_SWEEP_STEPS = 1000  # sizes one sweep plans at most (a model's re-plan takes ~0.1-1 s)


@dataclass(frozen=True)
class Planned:
    """A plan at one size: its table, and ``kept_bound`` when the placer proved one
    (``algorithm="best"`` on arrays with two or more memories: the most bytes any plan keeps
    in memory 1, :attr:`cadence_memplan.PlanResult.kept_bound`)."""

    table: TensorTable
    kept_bound: int | None = None


# What a sweep asks at each size: the plan, or why nothing fits.
PlanAt = Callable[[Sequence[Memory]], "Planned | str"]


@dataclass(frozen=True)
class SweepRow:
    """The plan at one size of the varied memory; per-memory tuples are indexed by
    memory id - 1. A plan that does not fit has zeros and the reason in ``failure``."""

    size: int
    fits: bool
    tensor_bytes: tuple[int, ...]  # the sum of the sizes of the memory's tensors
    tensor_counts: tuple[int, ...]
    peak_usage: tuple[int, ...]
    failure: str = ""
    kept_bound: int | None = None  # Planned.kept_bound

    @property
    def bytes_outside_memory_1(self) -> int:
        return sum(self.tensor_bytes[1:])

    def bytes_up_to(self, memory_index: int) -> int:
        """Bytes in memories 1 .. memory_index + 1 (the varied memory and faster ones)."""
        return sum(self.tensor_bytes[: memory_index + 1])


def parse_sweep_sizes(text: str) -> list[int]:
    """``"64KiB:1MiB:16"`` -> 16 sizes from 64 KiB to 1 MiB, evenly spaced (whole bytes,
    each once); one step gives LO alone. Raises ValueError naming ``--sizes``."""
    parts = text.split(":")
    if len(parts) != 3:
        raise ValueError(f"--sizes: {text!r} is not LO:HI:STEPS (e.g. 64KiB:1MiB:16)")
    low = parse_size(parts[0], "--sizes: LO")
    high = parse_size(parts[1], "--sizes: HI")
    try:
        steps = int(parts[2])
    except ValueError:
        raise ValueError(f"--sizes: STEPS {parts[2]!r} is not an integer") from None
    if low > high:
        raise ValueError(f"--sizes: LO {parts[0]} is larger than HI {parts[1]}")
    if steps < 1:
        raise ValueError(f"--sizes: STEPS must be at least 1, got {steps}")
    if steps > MAX_SWEEP_STEPS:
        raise ValueError(
            f"--sizes: STEPS {steps:,} is more than {MAX_SWEEP_STEPS:,}, the most a sweep plans"
            f" (each size is a plan), e.g. --sizes {parts[0]}:{parts[1]}:{MAX_SWEEP_STEPS}"
        )
    if steps == 1:
        return [low]
    # Exact integer spacing (no float rounding near 2^62); duplicates when STEPS > HI-LO+1.
    return sorted({low + (high - low) * step // (steps - 1) for step in range(steps)})


def find_memory(memories: Sequence[Memory], text: str) -> int:
    """The index (0 = memory 1) of the memory named ``text``, or numbered ``text`` (1..n)."""
    for index, memory in enumerate(memories):
        if memory.name == text:
            return index
    if text.isdigit() and 1 <= int(text) <= len(memories):
        return int(text) - 1
    names = ", ".join(memory.name for memory in memories)
    raise ValueError(
        f"--vary: no memory {text!r}; the memories are {names} (or ids 1..{len(memories)})"
    )


def _row(size: int, planned: Planned, memory_count: int) -> SweepRow:
    table = planned.table
    tensor_bytes = summed_sizes_per_memory(table, memory_count)
    counts = np.bincount(table.mem_ids, minlength=memory_count + 1)
    usage = peak_usage_per_memory(table.mem_ids, table.offsets, table.sizes, memory_count)
    return SweepRow(
        size=size,
        fits=True,
        tensor_bytes=tuple(int(value) for value in tensor_bytes[1:]),
        tensor_counts=tuple(int(value) for value in counts[1:]),
        peak_usage=tuple(int(value) for value in usage[1:]),
        kept_bound=planned.kept_bound,
    )


def sweep(
    plan_at: PlanAt,
    memories: Sequence[Memory],
    varied: int,
    sizes: Sequence[int],
    progress: Callable[[int, int], None] | None = None,
) -> list[SweepRow]:
    """One :class:`SweepRow` per size, memory ``varied`` (an index) set to that size."""
    rows = []
    zeros = (0,) * len(memories)
    for step, size in enumerate(sizes):
        if progress is not None:
            progress(step, size)
        config = list(memories)
        config[varied] = dataclasses.replace(memories[varied], size=size)
        outcome = plan_at(config)
        if isinstance(outcome, str):
            rows.append(SweepRow(size, False, zeros, zeros, zeros, outcome))
        else:
            rows.append(_row(size, outcome, len(memories)))
    return rows


def arrays_planner(
    starts: npt.ArrayLike,
    ends: npt.ArrayLike,
    sizes: npt.ArrayLike,
    options: PlanningOptions,
    names: Sequence[str] | None = None,
) -> PlanAt:
    """``plan_at`` for arrays (CSV instances, synthetic graphs): the array API's plan, as
    ``options`` say (the placer, ``best``'s budget at each size). ``names`` name the
    tensors in the reason a plan does not fit (default "tensor i")."""
    sizes_array = np.asarray(sizes, dtype=np.int64)
    starts_array = np.asarray(starts, dtype=np.int64)
    ends_array = np.asarray(ends, dtype=np.int64)
    labels = list(range(len(sizes_array)))

    def plan_at(memories: Sequence[Memory]) -> Planned | str:
        hierarchy = Hierarchy(memories)
        try:
            result = plan(
                starts_array,
                ends_array,
                sizes_array,
                hierarchy.sizes,
                hierarchy.alignments,
                algorithm=options.algorithm,
                **options.budget_arguments(),
            )
        except PlanningError as error:
            index = error.tensor_index
            name = f"tensor {index}" if names is None else names[index]
            return f"{name} ({format_bytes(int(sizes_array[index]))}) fits nowhere"
        table = TensorTable(
            labels, result.mem_ids, result.offsets, sizes_array, starts_array, ends_array
        )
        return Planned(table, result.kept_bound)

    return plan_at


def moves_against_growth(
    rows: Sequence[SweepRow], memories: Sequence[Memory], varied: int
) -> list[str]:
    """Per row, ``""`` or what moved against the memory's growth: the bytes in the varied
    memory and the faster ones fell compared with the previous size that fits. The text
    lists each memory's change in bytes, e.g. ``"fast -96.0 KiB, near +96.0 KiB"``."""
    notes = []
    previous: SweepRow | None = None
    for row in rows:
        note = ""
        if (
            row.fits
            and previous is not None
            and row.bytes_up_to(varied) < previous.bytes_up_to(varied)
        ):
            changes = [
                f"{memory.name} {'+' if now > before else ''}{format_bytes(now - before)}"
                for memory, now, before in zip(
                    memories, row.tensor_bytes, previous.tensor_bytes, strict=True
                )
                if now != before
            ]
            note = ", ".join(changes)
        notes.append(note)
        if row.fits:
            previous = row
    return notes


def smallest_size_keeping_all(rows: Sequence[SweepRow], varied: int) -> SweepRow | None:
    """The first row (smallest size) that fits with every byte in memories 1..varied+1."""
    for row in rows:
        if row.fits and row.bytes_up_to(varied) == sum(row.tensor_bytes):
            return row
    return None


def proved_not_to_keep_all(row: SweepRow) -> bool:
    """Whether the row's plan proved that no plan keeps every tensor in memory 1: its
    ``kept_bound`` is below the bytes of all tensors (arrays, where each may go there)."""
    return row.kept_bound is not None and row.kept_bound < sum(row.tensor_bytes)


_BINARY_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def _exact_decimals(sizes: Sequence[int], most: int = 3) -> int:
    """The fewest decimals (1..``most``) with which every size prints exactly in its unit
    (1.75 MiB needs 2), or ``most`` when some size needs more."""
    for decimals in range(1, most + 1):
        if all(_scaled(size, decimals)[1] == 0 for size in sizes):
            return decimals
    return most


def _scaled(count: int, decimals: int) -> tuple[int, int]:
    """(``count`` in its unit times 10**decimals, rounded down; the remainder)."""
    scale = next((scale for _, scale in _BINARY_UNITS if abs(count) >= scale), 1)
    quotient, remainder = divmod(count * int(10**decimals), scale)
    return quotient, remainder


def bytes_rounded_down(count: int, decimals: int) -> str:
    """``count`` bytes in binary units with ``decimals`` decimals, rounded down (so a
    peak below a memory's size never prints as the size, nor above it): 1,835,007 ->
    ``1.74 MiB`` with 2, where :func:`~cadence_memplan.stats.format_bytes` says
    ``1.8 MiB``; below 1 KiB in bytes."""
    unit = next((unit for unit, scale in _BINARY_UNITS if abs(count) >= scale), None)
    if unit is None:
        return f"{count} B"
    scaled, _ = _scaled(count, decimals)
    whole, fraction = divmod(scaled, 10**decimals)
    return f"{whole}.{fraction:0{decimals}d} {unit}"


def sweep_table(
    rows: Sequence[SweepRow], memories: Sequence[Memory], varied: int
) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of strings for the command line's table: the size, each memory's
    peak usage and sum of sizes (tensors), the sum of sizes outside memory 1, whether it
    fits, and what moved the wrong way (``<<``) or why it does not fit."""
    headers = [f"{memories[varied].name} size"]
    for memory in memories:
        headers += [f"{memory.name}: peak usage", f"{memory.name}: sum of sizes (tensors)"]
    headers += [f"outside {memories[0].name}: sum of sizes", "fits", "note"]
    notes = moves_against_growth(rows, memories, varied)
    decimals = _exact_decimals([row.size for row in rows])
    table = []
    for row, note in zip(rows, notes, strict=True):
        line = [bytes_rounded_down(row.size, decimals)]
        if row.fits:
            for usage, count, tensors in zip(
                row.peak_usage, row.tensor_bytes, row.tensor_counts, strict=True
            ):
                line += [
                    bytes_rounded_down(usage, decimals),
                    f"{bytes_rounded_down(count, decimals)} ({tensors:,})",
                ]
            line += [bytes_rounded_down(row.bytes_outside_memory_1, decimals), "yes"]
            line.append(f"<< moved against growth: {note}" if note else "")
        else:
            line += ["-"] * (2 * len(memories)) + ["-", "no", row.failure]
        table.append(line)
    return headers, table


def write_sweep_csv(
    path: str | os.PathLike[str],
    rows: Sequence[SweepRow],
    memories: Sequence[Memory],
    varied: int,
) -> None:
    """One line per size: ``size``, per memory ``<name>_sum_of_sizes`` (its tensors' sizes
    added up), ``<name>_tensors`` and ``<name>_peak_usage``,
    ``sum_of_sizes_outside_memory_1``, ``fits`` (1/0), ``moved_against_growth`` (what
    moved, or empty) and ``failure`` (why it does not fit). Sizes are bytes."""
    notes = moves_against_growth(rows, memories, varied)
    header = ["size"]
    for memory in memories:
        header += [
            f"{memory.name}_sum_of_sizes",
            f"{memory.name}_tensors",
            f"{memory.name}_peak_usage",
        ]
    header += ["sum_of_sizes_outside_memory_1", "fits", "moved_against_growth", "failure"]
    with write_whole(path) as partial, partial.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(header)
        for row, note in zip(rows, notes, strict=True):
            cells: list[object] = [row.size]
            if row.fits:
                for count, tensors, usage in zip(
                    row.tensor_bytes, row.tensor_counts, row.peak_usage, strict=True
                ):
                    cells += [count, tensors, usage]
                cells.append(row.bytes_outside_memory_1)
            else:  # no plan: nothing to count
                cells += [""] * (3 * len(memories) + 1)
            cells += [int(row.fits), note, row.failure]
            writer.writerow(cells)
