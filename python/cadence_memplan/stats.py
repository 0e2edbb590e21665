"""Memory-use figures of a finished plan, on numpy arrays; and which tensors share storage.

Shared by the reports on TensorSpecs (:mod:`cadence_memplan.cadence.reports`), the
command line (which also works on MiniMalloc instances with numpy alone) and the array
API's failure message. Lifetimes are inclusive ``[start, end]``; one with start > end is
never alive. Nothing here imports torch or executorch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = [
    "MemoryStats",
    "TensorTable",
    "align_up",
    "aligned_sizes",
    "format_bytes",
    "live_bytes_changes",
    "memory_stats",
    "overall_peak",
    "peak_live_bytes",
    "peak_live_bytes_per_memory",
    "peak_live_node_per_memory",
    "peak_usage_over_time",
    "peak_usage_per_memory",
    "plural",
    "summed_sizes_per_memory",
]

IntArray = npt.NDArray[np.int64]


def format_bytes(count: int) -> str:
    """``9216`` -> ``"9.0 KiB"``: binary units, one decimal; below 1 KiB in bytes."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(count) >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


def align_up(count: int, alignment: int) -> int:
    """``count`` rounded up to a multiple of ``alignment``."""
    return -(-count // alignment) * alignment


def aligned_sizes(sizes: npt.ArrayLike, alignment: int) -> IntArray:
    """Each size rounded up to a multiple of ``alignment``, as int64."""
    return -(-np.asarray(sizes, dtype=np.int64) // alignment) * alignment


def plural(count: int, noun: str) -> str:
    """``1 tensor``, ``2 tensors``, ``1,000 sizes``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


# --------------------------------------------------------------------------- the table


@dataclass
class TensorTable:
    """One row per planned tensor: where it is, how big, when alive, what it is called.

    ``labels`` name the rows in messages and plan files (node names, CSV ids, or the
    TensorSpecs themselves). ``shares_storage`` marks rows that lie inside another row's
    storage on purpose (Cadence's, :func:`cadence_memplan._boundary.storage_sharing.storage_sharing_spec_ids`),
    and the rows control-flow submodules write (:attr:`in_submodule`): plotted and
    written, left out of the validator and the peak live. A lifetime that is not known is
    stored as the empty ``[0, -1]``, which is never alive.
    """

    labels: Sequence[object]
    mem_ids: IntArray
    offsets: IntArray
    sizes: IntArray
    starts: IntArray
    ends: IntArray
    shares_storage: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, bool))

    def __post_init__(self) -> None:
        for name in ("mem_ids", "offsets", "sizes", "starts", "ends"):
            setattr(self, name, np.asarray(getattr(self, name), dtype=np.int64))
        if len(self.shares_storage) != len(self.sizes):
            self.shares_storage = np.zeros(len(self.sizes), dtype=bool)

    def __len__(self) -> int:
        return len(self.sizes)

    @property
    def in_submodule(self) -> npt.NDArray[np.bool_]:
        """The rows a control-flow submodule writes (a cond's branch, a map's body), named
        ``op/submodule/node`` (a graph's own rows are named by node, never with a ``/``;
        CSV ids are numbers). They lie in the bytes the planner keeps for their op, not
        inside another tensor, and the branches of one cond may share bytes (only one of
        them runs), so they are marked ``shares_storage`` too."""
        named = [isinstance(label, str) and "/" in label for label in self.labels]
        return np.array(named, dtype=bool).reshape(len(self.labels))

    def subset(self, keep: npt.NDArray[np.bool_]) -> TensorTable:
        return TensorTable(
            labels=[label for label, kept in zip(self.labels, keep.tolist(), strict=True) if kept],
            mem_ids=self.mem_ids[keep],
            offsets=self.offsets[keep],
            sizes=self.sizes[keep],
            starts=self.starts[keep],
            ends=self.ends[keep],
            shares_storage=self.shares_storage[keep],
        )

    def same_plan(self, other: TensorTable) -> bool:
        return list(self.labels) == list(other.labels) and all(
            np.array_equal(getattr(self, column), getattr(other, column))
            for column in ("mem_ids", "offsets", "sizes", "starts", "ends")
        )


# --------------------------------------------------------------------------- arithmetic


def peak_usage_per_memory(
    mem_ids: IntArray, offsets: IntArray, sizes: IntArray, memory_count: int
) -> IntArray:
    """Index m = 1..memory_count: the end of the last byte used in memory m (index 0 unused)."""
    usage = np.zeros(memory_count + 1, dtype=np.int64)
    np.maximum.at(usage, mem_ids, offsets + sizes)
    return usage


def live_bytes_changes(
    mem_ids: IntArray, sizes: IntArray, starts: IntArray, ends: IntArray
) -> tuple[IntArray, IntArray, IntArray]:
    """Each memory's live bytes as a step function, only where it changes: ``(ids, times,
    live)``, sorted by memory then time, where memory ``ids[k]`` holds ``live[k]`` bytes of
    live tensors from node ``times[k]`` until its next entry (the last entry, 0 bytes, is
    one node after the memory's last tensor ends). O(n log n) and at most 2n entries,
    whatever the span of the node indices.
    """
    alive = starts <= ends
    ids, alive_sizes = mem_ids[alive], sizes[alive]
    # A tensor adds its size when it starts and takes it away one node after it ends.
    # Sorted by memory, then time, every prefix sum is a real moment's live bytes once all
    # of that moment's events are in; each memory's events sum to zero, so one running sum
    # serves all memories.
    event_ids = np.concatenate([ids, ids])
    event_times = np.concatenate([starts[alive], ends[alive] + 1])
    event_bytes = np.concatenate([alive_sizes, -alive_sizes])
    order = np.lexsort((event_bytes, event_times, event_ids))
    event_ids, event_times = event_ids[order], event_times[order]
    live = np.cumsum(event_bytes[order])
    # The value after a moment's last event is the moment's; keep it where it changes.
    last_of_moment = np.ones(len(live), dtype=bool)
    last_of_moment[:-1] = (event_ids[1:] != event_ids[:-1]) | (event_times[1:] != event_times[:-1])
    event_ids, event_times, live = (
        event_ids[last_of_moment],
        event_times[last_of_moment],
        live[last_of_moment],
    )
    # Each memory starts from 0 bytes, so an entry is a change if it differs from the one
    # before it in the same memory, or from 0 as its memory's first.
    before = np.zeros(len(live), dtype=np.int64)
    before[1:] = np.where(event_ids[1:] == event_ids[:-1], live[:-1], 0)
    changed = live != before
    return event_ids[changed], event_times[changed], live[changed]


def peak_live_bytes_per_memory(
    mem_ids: IntArray, sizes: IntArray, starts: IntArray, ends: IntArray, memory_count: int
) -> IntArray:
    """Index m = 1..memory_count: the most bytes alive at one node among memory m's tensors.

    No placement of those same tensors in that memory can use fewer bytes: a lower bound to
    hold the memory's peak usage against. It bounds this plan's tensors, not the memory:
    another plan that puts fewer or other tensors there may use less. Only with every
    tensor in one memory does it bound every plan (:func:`peak_live_bytes`).
    """
    ids, _, live = live_bytes_changes(mem_ids, sizes, starts, ends)
    peaks = np.zeros(memory_count + 1, dtype=np.int64)
    np.maximum.at(peaks, ids, live)
    return peaks


def peak_live_node_per_memory(
    mem_ids: IntArray, sizes: IntArray, starts: IntArray, ends: IntArray, memory_count: int
) -> IntArray:
    """Index m = 1..memory_count: the first node where memory m's live bytes reach their
    peak (:func:`peak_live_bytes_per_memory`); -1 for a memory with nothing alive."""
    ids, times, live = live_bytes_changes(mem_ids, sizes, starts, ends)
    peaks = np.zeros(memory_count + 1, dtype=np.int64)
    np.maximum.at(peaks, ids, live)
    at_peak = np.flatnonzero((live == peaks[ids]) & (live > 0))
    # Entries are sorted by memory then time: a memory's first entry at its peak is the
    # earliest node.
    memories, first = np.unique(ids[at_peak], return_index=True)
    nodes = np.full(memory_count + 1, -1, dtype=np.int64)
    nodes[memories] = times[at_peak[first]]
    return nodes


def peak_live_bytes(starts: IntArray, ends: IntArray, sizes: IntArray) -> int:
    """The most bytes alive at one node among all the tensors: no hierarchy whose memories
    hold fewer bytes in all can place them."""
    ids = np.ones(len(sizes), dtype=np.int64)
    return int(peak_live_bytes_per_memory(ids, sizes, starts, ends, 1)[1])


def peak_usage_over_time(
    sizes: IntArray, starts: IntArray, ends: IntArray, node_count: int
) -> tuple[int, int]:
    """The most bytes alive at one node across all memories, and the first such node.

    Node indices are ``0..node_count-1``; upstream's ``find_peak_memory_usage`` arithmetic.
    """
    alive = starts <= ends
    changes = np.zeros(node_count + 1, dtype=np.int64)
    np.add.at(changes, starts[alive], sizes[alive])
    np.subtract.at(changes, ends[alive] + 1, sizes[alive])
    usage = np.cumsum(changes)
    peak_node = int(np.argmax(usage))  # The first maximum, as upstream's list.index.
    return int(usage[peak_node]), peak_node


def summed_sizes_per_memory(
    table: TensorTable, memory_count: int, weights: IntArray | None = None
) -> IntArray:
    """Index m = 1..memory_count: the sizes of memory m's tensors added up over the whole
    run, each tensor once (not bytes alive at one moment: that is the peak usage and the
    peak live). What ``best`` keeps in memory 1 and minimises outside it. ``weights`` (one
    per row) are summed instead of the sizes: the traffic objective's, a tensor's size
    times (1 + its readers). Rows inside another's storage add nothing (their bytes are
    their host's)."""
    own = ~table.shares_storage
    values = table.sizes if weights is None else np.asarray(weights, dtype=np.int64)
    sums = np.zeros(memory_count + 1, dtype=np.int64)
    np.add.at(sums, table.mem_ids[own], values[own])
    return sums


@dataclass(frozen=True)
class MemoryStats:
    peak_usage: int  # end of the highest byte in use (upstream's "peak memory usage")
    # Most bytes of this plan's tensors in this memory alive at once: no placement of them
    # there uses less; it bounds every plan only when every tensor is in this memory.
    peak_live_bytes: int
    tensor_count: int


def memory_stats(table: TensorTable, memory_count: int) -> list[MemoryStats]:
    """Per memory id 1..memory_count: peak usage, peak live of its tensors (the bound on
    placing those tensors there), tensors placed.

    Rows that share storage on purpose leave the peak live alone.
    """
    usage = peak_usage_per_memory(table.mem_ids, table.offsets, table.sizes, memory_count)
    own = ~table.shares_storage
    live = peak_live_bytes_per_memory(
        table.mem_ids[own], table.sizes[own], table.starts[own], table.ends[own], memory_count
    )
    counts = np.bincount(table.mem_ids, minlength=memory_count + 1)
    return [
        MemoryStats(int(usage[m]), int(live[m]), int(counts[m])) for m in range(1, memory_count + 1)
    ]


def overall_peak(table: TensorTable, node_count: int | None = None) -> tuple[int, int]:
    """(most bytes alive at one node across all memories, first node where that happens).

    Alive as everywhere else in this module (the per-memory peak live, the trace's
    counter): a row that lies inside another's storage (``shares_storage``) adds no bytes,
    since its bytes are its host's. Upstream's ``find_peak_memory_usage`` counts every
    row, so storage shared by Cadence's in-place ops counts twice there
    (:mod:`cadence_memplan.cadence.reports` keeps upstream's figure).
    """
    own = ~table.shares_storage
    alive = own & (table.starts <= table.ends)
    if not alive.any():
        return 0, 0
    nodes = node_count or int(table.ends[alive].max()) + 1
    return peak_usage_over_time(table.sizes[own], table.starts[own], table.ends[own], nodes)
