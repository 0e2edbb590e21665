"""The text report the command line prints: a table per memory, the overall peak, timings,
and the ``--compare`` lines."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .._types import Budget, SearchSpent
from ..api import DEFAULT_WORK_BUDGET
from ..io.memories import Memory
from ..stats import (
    IntArray,
    MemoryStats,
    TensorTable,
    format_bytes,
    memory_stats,
    overall_peak,
    plural,
    summed_sizes_per_memory,
)

if TYPE_CHECKING:
    from ..scheduling import Reorder

__all__ = [
    "Optimality",
    "format_seconds",
    "kept_terms",
    "percent_used",
    "print_best_summary",
    "print_comparison",
    "print_indented",
    "print_kept_traffic",
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
    "peak live of its tensors (B)",
    "usage / peak live",
    "tensors",
)


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
    in_submodule = table.in_submodule
    shared = int((table.shares_storage & ~in_submodule).sum())
    inside = ""
    if shared:
        verb = "adds no bytes of its own" if shared == 1 else "add no bytes of their own"
        inside = f"; {plural(shared, 'tensor')} inside another's storage {verb}"
    if in_submodule.any():  # they hold bytes, in their op's, where only one branch runs
        inside += (
            f"; {plural(int(in_submodule.sum()), 'tensor')} control-flow submodules write, not"
            " counted here, lie in the bytes kept for their ops"
        )
    if len(table) == 0:  # no node 0 to name, no bytes ever alive
        print("overall peak: none, there are no tensors")
    else:
        print(
            f"overall peak: {peak_bytes:,} bytes ({format_bytes(peak_bytes)}) alive at {node},"
            f" all memories together{inside}"
        )
    if timings:  # a method of a program has the whole program's, said once
        print(
            "planning time: "
            + ", ".join(f"{what} {format_seconds(s)}" for what, s in timings.items())
        )
    if optimality is not None:
        if optimality.lower_bound is None and optimality.kept is not None:
            print(_kept_line(memories[0].name, optimality))
        print(_optimality_line(optimality, memories, stats))


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


# What the traffic objective counts, said where its figures are printed.
TRAFFIC_TERMS = "each tensor's size x (1 + its readers), the bytes written and read"


def kept_terms(objective: str) -> tuple[str, str]:
    """How a figure of what memory 1 keeps reads: (after the number, in parentheses)."""
    if objective == "bytes":
        return "B", "sum of sizes over the run"
    return "B of traffic", f"{TRAFFIC_TERMS}, summed over the run"


def _kept_line(name: str, optimality: Optimality) -> str:
    """``fast: keeps X B (sum of sizes over the run); at most Y B can be kept there by any
    plan (98.9%)``: what memory 1 keeps against capacity-first's proved bound."""
    kept, bound = optimality.kept or 0, optimality.kept_bound or 0
    share = f" ({percent_used(kept, bound)})" if bound else ""
    unit, terms = kept_terms(optimality.objective)
    return (
        f"{name}: keeps {kept:,} {unit} ({terms}); at most {bound:,} {unit} can be kept there"
        f" by any plan{share}"
    )


def _and_list(names: Sequence[str]) -> str:
    """``near``, ``near and far``, ``a, b and c``."""
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def _optimality_line(
    optimality: Optimality, memories: Sequence[Memory], stats: Sequence[MemoryStats]
) -> str:
    """What ``best`` proved, in words that hold for every plan of the input: with one
    memory the bound is on its bufsize; in a hierarchy, on what memory 1 keeps, and with
    every tensor kept there, on the bufsize of the plans that keep them all there."""
    fast = memories[0].name
    lower_bound = optimality.lower_bound
    # A memory that holds no tensor has nothing to prove.
    others = list(zip(memories[1:], stats[1:], strict=True))
    held = [memory.name for memory, stat in others if stat.tensor_count]
    empty = [memory.name for memory, stat in others if not stat.tensor_count]
    none = ""
    if empty:
        none = f"; {_and_list(empty)} {'holds' if len(empty) == 1 else 'hold'} no tensor"
    if lower_bound is None:
        if optimality.kept_bound is None:
            return "optimality: not proved (tensors outside memory 1; no lower bound computed)"
        if not optimality.proved_optimal:
            return f"optimality: not proved ({fast} may keep more; see the bound above)"
        if held:
            return (
                f"optimality: {fast} proved as full as it can be (no plan keeps more there);"
                f" {_and_list(held)} not proved the smallest{none}"
            )
        if stats[0].peak_usage == stats[0].peak_live_bytes:
            return (
                f"optimality: proved optimal: every tensor in {fast}, whose peak usage is the"
                f" peak live of them all (no plan can use less){none}"
            )
        return (
            f"optimality: every tensor in {fast}, as full as it can be; its peak usage is not"
            f" proved the smallest{none}"
        )
    bound = f"{lower_bound:,} bytes ({format_bytes(lower_bound)})"
    if len(memories) == 1:
        if optimality.proved_optimal:
            return f"optimality: proved optimal, bufsize = lower bound {bound}"
        return f"optimality: not proved; proved lower bound on the bufsize {bound}"
    # Nothing lies outside memory 1 (the core sets lower_bound only then): no plan keeps
    # more there, and the bound holds for the plans that keep every tensor there.
    every = f"every tensor in {fast} (no plan keeps more there)"
    if optimality.proved_optimal:
        return (
            f"optimality: proved optimal: {every}, in {bound}, the least any plan that keeps"
            f" them all there needs{none}"
        )
    return (
        f"optimality: not proved: {every}; a plan that keeps them all there needs at least"
        f" {bound}{none}"
    )


def percent_used(usage: int, size: int) -> str:
    """``usage`` of ``size`` in percent, one decimal, rounded down: ``100.0%`` only when
    the memory is full to its last byte."""
    tenths = usage * 1000 // size
    return f"{tenths // 10}.{tenths % 10}%"


def _ratio(usage: int, bound: int) -> str:
    """How far a memory's peak usage is from the peak live of its tensors: ``1.000x`` only
    when they are equal (no gap: no placement of those tensors there uses less). A ratio
    that three decimals would round to 1.000 gets the digits that tell it apart
    (``1.00006x``), or ``>1.000000x`` beyond six."""
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
    plans: Sequence[tuple[str, TensorTable, float]],
    memories: Sequence[Memory],
    kept_bound: int | None = None,
    weights: IntArray | None = None,
) -> None:
    """For ``--algo best --compare``, best's plan first: on a hierarchy, what each plan
    keeps in memory 1 (the sum of its tensors' sizes over the run, what best keeps the
    most of first; with ``weights``, the traffic objective's weight per row of every
    plan's table, their traffic first), how much more best keeps, each memory's peak usage
    and the time, then best's gain in a sentence, against ``kept_bound`` (the most any
    plan keeps there) when known. With one memory, the peak usage against the peak live,
    which bounds every plan there, and the time."""
    count, fast = len(memories), memories[0].name
    if count == 1:
        rows = []
        for name, table, seconds in plans:
            stat = memory_stats(table, 1)[0]
            usage = _ratio(stat.peak_usage, stat.peak_live_bytes)
            rows.append([name, f"{stat.peak_usage:,}", usage, format_seconds(seconds)])
        print_table(["placer", f"{fast}: peak usage (B)", "usage / peak live", "time"], rows)
        return
    kept = [int(summed_sizes_per_memory(table, count)[1]) for _, table, _ in plans]
    columns = [("kept", kept)]
    if weights is not None:
        traffic = [int(summed_sizes_per_memory(table, count, weights)[1]) for _, table, _ in plans]
        columns.insert(0, ("kept traffic", traffic))
    headers = ["placer"]
    for what, _ in columns:
        headers += [f"{fast}: {what} (B)", f"best {what.replace('kept', 'keeps more')} (B)"]
    headers += [f"{memory.name}: peak usage (B)" for memory in memories] + ["time"]
    rows = []
    for index, (name, table, seconds) in enumerate(plans):
        row = [name]
        for _, values in columns:
            row += [f"{values[index]:,}", _change((values[index], values[0])) if index else "-"]
        row += [f"{stat.peak_usage:,}" for stat in memory_stats(table, count)]
        rows.append([*row, format_seconds(seconds)])
    print_table(headers, rows)
    sizes = (
        f"kept: the sizes of the tensors in {fast} added up over the run (not bytes alive at"
        " once, which is the peak usage)"
    )
    first = "what best keeps the most of first"
    if weights is None:
        print(f"{sizes}: {first}")
    else:
        print(f"{sizes}; kept traffic: the same sum of {TRAFFIC_TERMS}: {first}")
    names = [name for name, _, _ in plans]
    objective = "bytes" if weights is None else "traffic"
    print("best " + _kept_gains(fast, names, columns[0][1], objective, kept_bound))


def print_kept_traffic(
    table: TensorTable,
    upstream: Sequence[tuple[str, TensorTable | None]],
    memories: Sequence[Memory],
    weights: IntArray,
) -> None:
    """``--objective traffic``: the traffic best keeps in memory 1 against each of
    upstream's plans that fits (``weights``: each row's, the same rows in every plan)."""
    plans = [("best", table), *((name, plan) for name, plan in upstream if plan is not None)]
    if len(memories) == 1 or len(plans) == 1:
        return
    traffic = [int(summed_sizes_per_memory(plan, len(memories), weights)[1]) for _, plan in plans]
    names = [name for name, _ in plans]
    print("best: " + _kept_gains(memories[0].name, names, traffic, "traffic"))


def _kept_gains(
    fast: str,
    names: Sequence[str],
    kept: Sequence[int],
    objective: str,
    kept_bound: int | None = None,
) -> str:
    """``keeps 303,104 B more in fast than position and 317,440 B more than heuristic (sum
    of sizes over the run); at most ... can be kept there by any plan``: what the first
    plan keeps in memory 1 against each other plan, in ``objective``'s terms."""
    unit, terms = kept_terms(objective)
    gains: list[str] = []
    for name, value in zip(names[1:], kept[1:], strict=True):
        more = kept[0] - value
        than = f"than {name}" if gains else f"in {fast} than {name}"
        if more:
            amount = f"{abs(more):,} {unit if not gains else 'B'}"
            gains.append(f"{amount} {'more' if more > 0 else 'less'} {than}")
        else:
            gains.append(f"as much {than.replace('than', 'as')}")
    bound = ""
    if kept_bound is not None:
        bound = f"; at most {kept_bound:,} {unit} can be kept there by any plan"
    return f"keeps {_and_list(gains)} ({terms}){bound}"


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
    spent: SearchSpent,
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
    if spent.cut_short:
        print(
            f"best: stopped by the --budget cap after {format_seconds(seconds)}, and kept the"
            f" plan of {winner}; this plan depends on the machine's speed and load"
        )
    elif spent.budget_exhausted:
        print(
            f"best: searched for {format_seconds(seconds)}, its whole budget ({allowed:,} units"
            f" of work; more with --work N might find a smaller plan), and kept the plan of"
            f" {winner}"
        )
    else:
        print(
            f"best: kept the plan of {winner}, found in {format_seconds(seconds)} ({spent.work:,}"
            f" of {allowed:,} units of work)"
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
    print_indented(
        ["memory", "peak usage: position", "best", "change (B)", "sum of sizes: position",
         "best", "change (B)"],
        rows,
    )  # fmt: skip
    if count == 1:  # nothing lies outside the one memory: the table says it all
        return
    kept = outside[0] - outside[1]
    summary = (
        f"{format_bytes(kept)} less outside {memories[0].name}"
        if kept > 0
        else "no less outside " + memories[0].name
    )
    trade = f"; it raises the peak usage of {', '.join(raised)}" if raised else ""
    print(f"best: {summary} than position (sum of sizes over the run){trade}")


def first_difference(ours: TensorTable, theirs: TensorTable) -> str | None:
    if list(ours.labels) != list(theirs.labels):
        return f"different tensors: {len(ours)} ours, {len(theirs)} theirs"
    different = np.flatnonzero((ours.mem_ids != theirs.mem_ids) | (ours.offsets != theirs.offsets))
    if not different.size:
        return None
    i = int(different[0])
    return (
        f"{plural(different.size, 'placement')} {'differs' if different.size == 1 else 'differ'},"
        f" first {ours.labels[i]!r}: ours mem_id"
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
        print(f"compare: placements identical ({plural(len(ours), 'tensor')})")
        return True
    print(f"compare: placements DIFFER: {difference}")
    return False


def print_indented(headers: Sequence[str], rows: Sequence[Sequence[str]], names: int = 1) -> None:
    """A table under a heading, indented by four spaces."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        print_table(headers, rows, names)
    for line in buffer.getvalue().splitlines():
        print("    " + line)
