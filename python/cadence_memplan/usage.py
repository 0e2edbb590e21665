"""Memory-use figures of a finished plan, on numpy arrays (no torch, no executorch).

Shared by :mod:`cadence_memplan.reports` (upstream's report functions on TensorSpecs) and
the command line (which must also work on MiniMalloc instances with numpy alone).
Lifetimes are inclusive ``[start, end]``; one with start > end is never alive.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["peak_live_bytes_per_memory", "peak_usage_over_time", "peak_usage_per_memory"]

IntArray = npt.NDArray[np.int64]


def peak_usage_per_memory(
    mem_ids: IntArray, offsets: IntArray, sizes: IntArray, memory_count: int
) -> IntArray:
    """Index m = 1..memory_count: the end of the last byte used in memory m (index 0 unused)."""
    usage = np.zeros(memory_count + 1, dtype=np.int64)
    np.maximum.at(usage, mem_ids, offsets + sizes)
    return usage


def peak_live_bytes_per_memory(
    mem_ids: IntArray, sizes: IntArray, starts: IntArray, ends: IntArray, memory_count: int
) -> IntArray:
    """Index m = 1..memory_count: the most bytes alive at one node among memory m's tensors.

    No placement of those tensors in that memory can use fewer bytes: a lower bound to hold
    the memory's peak usage against.
    """
    alive = starts <= ends
    ids, alive_sizes = mem_ids[alive], sizes[alive]
    # A tensor adds its size when it starts and takes it away one node after it ends.
    # Sorted by memory, then time, removals first at equal times, every prefix sum is a real
    # moment's live bytes; each memory's events sum to zero, so one running sum serves all.
    event_ids = np.concatenate([ids, ids])
    event_times = np.concatenate([starts[alive], ends[alive] + 1])
    event_bytes = np.concatenate([alive_sizes, -alive_sizes])
    order = np.lexsort((event_bytes, event_times, event_ids))
    peaks = np.zeros(memory_count + 1, dtype=np.int64)
    np.maximum.at(peaks, event_ids[order], np.cumsum(event_bytes[order]))
    return peaks


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
