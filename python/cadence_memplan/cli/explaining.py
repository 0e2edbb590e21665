"""``plan --explain``'s text: per memory, the live tensors and the holes at its live-bytes
peak, and the gap between its peak usage and the peak live of its tensors; and how the
explanation names tensors (:class:`TensorNames`, which the trace uses too)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..analysis.explain import MemoryPeak
from ..io.memories import Memory
from ..stats import TensorTable, format_bytes, plural
from .printing import print_indented

__all__ = ["EXPLAIN_ROWS", "TensorNames", "print_explanation"]

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
        # "split[1]": the node's second output; "cond/submodule_0/alloc": written inside
        # the submodule of node cond, which runs it.
        node = self.name(row).split("/")[0].split("[")[0]
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
    the gap between its peak usage and the peak live of its tensors. With one memory that
    peak live bounds every plan; in a hierarchy only this plan's tensors in that memory
    (another plan may put fewer there), and the lines say which."""
    table = names.table
    alone = len(memories) == 1
    for peak, memory in zip(explained, memories, strict=True):
        print()
        title = f"explain {memory.name} (memory {peak.mem_id})"
        if not (table.mem_ids == peak.mem_id).any():
            print(f"{title}: no tensors")
            continue
        if alone:
            whose, floor = "peak live", "no plan can use less"
        else:
            whose = f"peak live of this plan's tensors in {memory.name}"
            floor = f"these tensors fit in no less of {memory.name}"
        gap = f"no gap, {floor}"
        if peak.gap:
            gap = f"gap {_bytes(peak.gap, f'{peak.gap / peak.peak_usage:.1%} of the peak usage')}"
        print(
            f"{title}: peak usage {_bytes(peak.peak_usage)}; {whose}"
            f" {_bytes(peak.peak_live_bytes)}: {gap}"
        )
        if peak.peak_node < 0:
            in_memory = table.mem_ids == peak.mem_id
            if (in_memory & table.in_submodule).any():  # not in the peak live, but alive
                print(
                    "  no tensor of this memory but those control-flow submodules write is ever alive"
                )
            else:
                print("  no tensor of this memory is ever alive")
            continue
        live = peak.live_rows
        print(
            f"  live bytes peak first at {_node(peak.peak_node, names.node_names)}:"
            f" {plural(len(live), 'live tensor')}, {_bytes(int(table.sizes[live].sum()))}, largest"
            " first:"
        )
        _print_tensors(live, names)
        _print_submodule_tensors(peak, names)
        # The gap less what the submodules' tensors hold there: the bytes holes must fill.
        free = peak.gap - peak.submodule_bytes
        rest_of = "the rest of the gap" if peak.submodule_bytes else "the gap"
        if not len(peak.hole_sizes):
            print("  no holes below the peak usage there")
        else:
            holes = f"{plural(len(peak.hole_sizes), 'hole')} below the peak usage there"
            holes += f", {_bytes(peak.hole_bytes)}"
            if peak.hole_bytes == free:
                holes += f": all of {rest_of}"
            else:  # only when tensors overlap, i.e. the plan is invalid
                holes += f", not {rest_of} of {_bytes(free)}: tensors overlap"
            print("  " + holes + ":")
        if len(peak.hole_sizes):
            largest = np.argsort(-peak.hole_sizes, kind="stable")[:EXPLAIN_ROWS]
            largest = np.sort(largest)  # listed by offset
            print_indented(
                ["offset", "size (B)"],
                [
                    [f"{peak.hole_offsets[i]:,}", f"{peak.hole_sizes[i]:,}"]
                    for i in largest.tolist()
                ],
            )
            if len(peak.hole_sizes) > EXPLAIN_ROWS:
                smaller = len(peak.hole_sizes) - EXPLAIN_ROWS
                print(f"    ... and {plural(smaller, 'smaller hole')}")
        for row in peak.top_rows[:3].tolist():
            print(f"  peak usage reached by {names.describe(row)}")
        if len(peak.top_rows) > 3:
            print(f"  ... and {plural(len(peak.top_rows) - 3, 'more tensor')} ending there")


def _print_tensors(rows: np.ndarray, names: TensorNames) -> None:
    """The first :data:`EXPLAIN_ROWS` of ``rows`` as a table, the rest summed up."""
    table = names.table
    headers = [*names.headers, "size (B)", "offset", names.lifetime_header]
    cells = [
        [*names.cells(row), f"{table.sizes[row]:,}", f"{table.offsets[row]:,}", names.lifetime(row)]
        for row in rows[:EXPLAIN_ROWS].tolist()
    ]
    print_indented(headers, cells, names=len(names.headers))
    rest = rows[EXPLAIN_ROWS:]
    if rest.size:
        print(f"    ... and {rest.size:,} more: {_bytes(int(table.sizes[rest].sum()))}")


def _print_submodule_tensors(peak: MemoryPeak, names: TensorNames) -> None:
    """The tensors control-flow submodules write that are alive at the peak node: not in
    the peak live, but in the bytes they write, which are no holes."""
    rows = peak.submodule_rows
    if not rows.size:
        return
    print(
        f"  and {plural(len(rows), 'tensor')} control-flow submodules write, alive there in the"
        f" bytes kept for their ops, {_bytes(peak.submodule_bytes)} of the gap (not in the peak"
        " live: in their op's time they share bytes, in turn inside a submodule and between"
        " a cond's branches, of which one runs):"
    )
    _print_tensors(rows, names)
