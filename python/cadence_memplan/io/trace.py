"""A plan as a Chrome trace-event JSON file, for the Perfetto UI and chrome://tracing.

Time is the node index (one node = one microsecond on the viewer's axis). Each memory is a
process named after it, sorted fastest first, holding:

* one complete event (``"ph": "X"``) per tensor: ``ts`` = its first node, ``dur`` = the
  nodes of its inclusive lifetime ``[start, end]`` (``end - start + 1``; 0 for a tensor
  that is never alive), with its name, size, offset, memory and absolute address (the
  memory's base address + offset, when the memory has one) in ``args``, and for models
  the node that writes it and that node's op;
* a counter track ``live`` (``"ph": "C"``, one value ``bytes``) of the bytes of live
  tensors, sampled only where it changes. Tensors that lie inside another's storage on
  purpose (``TensorTable.shares_storage``) are left out of it, as from the peak live, so
  its maximum is the report's "peak live of its tensors".

Viewers draw the complete events of one thread as a stack and expect them to nest, so
tensors whose lifetimes overlap go on different threads (lanes): each tensor takes the
lowest-numbered lane free at its start, as many lanes as tensors are alive at once.
Events are O(n): one per tensor, at most two counter samples per tensor, a few metadata
events per memory and lane. (ExecuTorch's ``activation_memory_profiler.py`` writes one
event per tensor per node instead.)
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..stats import IntArray, TensorTable, live_bytes_changes
from .memories import Memory
from .outputs import write_whole

__all__ = ["COUNTER_NAME", "assign_lanes", "trace_events", "write_trace"]

COUNTER_NAME = "live"  # Perfetto names the track "live bytes" (name, then the value's key)
COUNTER_KEY = "bytes"


def assign_lanes(starts: IntArray, ends: IntArray) -> IntArray:
    """A lane (0, 1, ...) per tensor such that no two tensors of a lane overlap in time
    (inclusive lifetimes). Taken in order of start, each tensor gets the lowest lane free
    at its start, so the lanes are as many as tensors alive at once (a tensor that is
    never alive may add one)."""
    lanes = np.zeros(len(starts), dtype=np.int64)
    free: list[int] = []  # lanes that are free again, lowest first
    busy: list[tuple[int, int]] = []  # (first node free again, lane)
    lane_count = 0
    for index in np.lexsort((ends, starts)).tolist():
        start, end = int(starts[index]), int(ends[index])
        while busy and busy[0][0] <= start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            lane, lane_count = lane_count, lane_count + 1
        lanes[index] = lane
        heapq.heappush(busy, (max(end + 1, start), lane))
    return lanes


def _metadata(kind: str, pid: int, tid: int, value: object) -> dict[str, Any]:
    key = "sort_index" if kind.endswith("sort_index") else "name"
    return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "args": {key: value}}


def trace_events(
    table: TensorTable,
    memories: Sequence[Memory],
    label: str = "",
    algorithm: str = "",
    writers: Sequence[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """The trace as a JSON-ready dict (``{"traceEvents": [...], ...}``). ``writers``, per
    row, the node that writes the tensor and its op (models), go into the events' args."""
    events: list[dict[str, Any]] = []
    counter_ids, counter_times, counter_bytes = live_bytes_changes(
        *(
            column[~table.shares_storage]
            for column in (table.mem_ids, table.sizes, table.starts, table.ends)
        )
    )
    names = [str(name) for name in table.labels]
    for mem_id, memory in enumerate(memories, start=1):
        pid = mem_id
        events.append(_metadata("process_name", pid, 0, memory.name))
        events.append(_metadata("process_sort_index", pid, 0, mem_id))
        rows = np.flatnonzero(table.mem_ids == mem_id)
        lanes = assign_lanes(table.starts[rows], table.ends[rows])
        for lane in range(int(lanes.max()) + 1 if len(lanes) else 0):
            events.append(_metadata("thread_name", pid, lane + 1, f"lane {lane + 1}"))
            events.append(_metadata("thread_sort_index", pid, lane + 1, lane))
        by_start = np.argsort(table.starts[rows], kind="stable")
        for row, lane in zip(rows[by_start].tolist(), lanes[by_start].tolist(), strict=True):
            start, end = int(table.starts[row]), int(table.ends[row])
            offset, size = int(table.offsets[row]), int(table.sizes[row])
            args: dict[str, Any] = {
                "size": size,
                "offset": offset,
                "memory": memory.name,
                "mem_id": mem_id,
                "lifetime": [start, end],
            }
            if memory.base_address is not None:
                args["address"] = hex(memory.base_address + offset)
            if writers is not None:
                args["written by"], args["op"] = writers[row]
            if table.shares_storage[row]:
                args["shares_storage"] = True
            events.append(
                {
                    "ph": "X",
                    "name": names[row],
                    "cat": "tensor",
                    "pid": pid,
                    "tid": lane + 1,
                    "ts": start,
                    "dur": max(end - start + 1, 0),
                    "args": args,
                }
            )
        mine = counter_ids == mem_id
        for time, live in zip(
            counter_times[mine].tolist(), counter_bytes[mine].tolist(), strict=True
        ):
            events.append(
                {
                    "ph": "C",
                    "name": COUNTER_NAME,
                    "pid": pid,
                    "tid": 0,
                    "ts": time,
                    "args": {COUNTER_KEY: live},
                }
            )
    return {
        "traceEvents": events,
        "otherData": {
            "input": label,
            "algorithm": algorithm,
            "time unit": "node index",
            "lifetimes": "inclusive [start, end] node indices: an event covers nodes ts to"
            " ts + dur - 1 (args.lifetime: [start, end])",
        },
    }


def write_trace(
    path: str | os.PathLike[str],
    table: TensorTable,
    memories: Sequence[Memory],
    label: str = "",
    algorithm: str = "",
    writers: Sequence[tuple[str, str]] | None = None,
) -> None:
    """Write :func:`trace_events` as compact JSON (large plans make large files)."""
    document = trace_events(table, memories, label, algorithm, writers)
    with write_whole(path) as partial:
        partial.write_text(json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8")
