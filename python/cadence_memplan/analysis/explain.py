"""Where each memory's peak comes from.

A memory's peak usage (its bufsize: the end of the highest byte any tensor uses) is never
below the peak live of its tensors (the most bytes of the tensors the plan put there alive
at one node): no placement of those tensors there uses less, though another plan may put
fewer there. At the first node where the live bytes peak, the live tensors fill the peak
live exactly and the rest of ``[0, bufsize)`` is holes (fragmentation, alignment padding
included): in a valid plan the holes' bytes there are exactly the gap between the bufsize
and the peak live, so the holes are the bytes a better placement of these tensors could
save. The tensors whose storage reaches the bufsize say which placement set it.

Tensors that lie inside another's storage on purpose (``TensorTable.shares_storage``) are
left out, as from the peak live. The tensors control-flow submodules write
(``TensorTable.in_submodule``: a cond's branches, a map's body) are left out of the peak
live too (they lie in the bytes the planner keeps for their op, and a cond's branches may
share bytes: only one runs), but they occupy the bytes they write: those alive at the
peak node are listed apart, and their bytes are no holes. In a valid plan the holes there
are then exactly the gap less the bytes those tensors hold. numpy only; returns data,
prints nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..stats import IntArray, TensorTable, memory_stats, peak_live_node_per_memory

__all__ = ["MemoryPeak", "explain_peaks", "holes_below"]


@dataclass(frozen=True)
class MemoryPeak:
    """One memory's peak, explained. Rows index the plan's table."""

    mem_id: int
    peak_usage: int  # the bufsize: end of the highest byte used
    # The most bytes of its tensors alive at one node: no placement of them there uses less.
    peak_live_bytes: int
    peak_node: int  # the first node where the live bytes peak; -1 if nothing is alive
    live_rows: IntArray  # tensors alive at peak_node, largest first (then lowest offset)
    # Tensors control-flow submodules write, alive at peak_node, the same order.
    submodule_rows: IntArray
    submodule_bytes: int  # the bytes of [0, peak_usage) they hold there, each byte once
    hole_offsets: IntArray  # free byte ranges of [0, peak_usage) at peak_node, by offset
    hole_sizes: IntArray
    top_rows: IntArray  # tensors whose storage ends at peak_usage (they set the bufsize)

    @property
    def gap(self) -> int:
        """Bytes of bufsize above the peak live: what fragmentation costs this memory, and
        with control flow also the bytes its submodules' tensors hold."""
        return self.peak_usage - self.peak_live_bytes

    @property
    def hole_bytes(self) -> int:
        return int(self.hole_sizes.sum())


def holes_below(limit: int, offsets: IntArray, sizes: IntArray) -> tuple[IntArray, IntArray]:
    """The byte ranges of ``[0, limit)`` that no ``[offset, offset + size)`` covers, as
    (offsets, sizes) sorted by offset. Overlapping or touching ranges merge."""
    used = sizes > 0
    order = np.argsort(offsets[used], kind="stable")
    begins = offsets[used][order]
    ends = (offsets[used] + sizes[used])[order]
    # Hole i runs from the end of everything below range i (0 before the first) to range
    # i's begin; the last from the end of everything to the limit.
    hole_begins = np.concatenate([[0], np.maximum.accumulate(ends)]).astype(np.int64)
    hole_ends = np.minimum(np.concatenate([begins, [limit]]), limit).astype(np.int64)
    keep = hole_ends > hole_begins
    return hole_begins[keep], (hole_ends - hole_begins)[keep]


def explain_peaks(table: TensorTable, memory_count: int) -> list[MemoryPeak]:
    """Per memory id 1..memory_count, its peak explained (:class:`MemoryPeak`)."""
    stats = memory_stats(table, memory_count)
    own = ~table.shares_storage
    submodule = table.in_submodule
    peak_nodes = peak_live_node_per_memory(
        table.mem_ids[own], table.sizes[own], table.starts[own], table.ends[own], memory_count
    )
    explained = []
    for mem_id, stat in enumerate(stats, start=1):
        in_memory = table.mem_ids == mem_id
        node = int(peak_nodes[mem_id])
        alive = in_memory & (table.starts <= node) & (node <= table.ends)
        rows = _largest_first(table, np.flatnonzero(alive & own))
        in_submodules = _largest_first(table, np.flatnonzero(alive & submodule))
        occupied = np.concatenate([rows, in_submodules])
        hole_offsets, hole_sizes = holes_below(
            stat.peak_usage, table.offsets[occupied], table.sizes[occupied]
        )
        # The bytes the submodules' tensors hold: what the own tensors leave free, less
        # what stays free with the submodules' tensors too.
        _, free_of_own = holes_below(stat.peak_usage, table.offsets[rows], table.sizes[rows])
        reaches_top = in_memory & (table.offsets + table.sizes == stat.peak_usage)
        explained.append(
            MemoryPeak(
                mem_id=mem_id,
                peak_usage=stat.peak_usage,
                peak_live_bytes=stat.peak_live_bytes,
                peak_node=node,
                live_rows=rows,
                submodule_rows=in_submodules,
                submodule_bytes=int(free_of_own.sum() - hole_sizes.sum()),
                hole_offsets=hole_offsets,
                hole_sizes=hole_sizes,
                top_rows=np.flatnonzero(reaches_top & (table.sizes > 0)),
            )
        )
    return explained


def _largest_first(table: TensorTable, rows: IntArray) -> IntArray:
    """``rows`` largest first, then by lowest offset."""
    return rows[np.lexsort((table.offsets[rows], -table.sizes[rows]))]
