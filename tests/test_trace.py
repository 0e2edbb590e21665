"""io/trace.py, the Chrome trace of a plan, on numpy alone: every event against the
planned table (names, times, offsets, addresses, lanes that never overlap) and its
counters against a brute-force count of live bytes; through the command line, the
counters' peaks against the report's "peak live of its tensors" column.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
from cli_support import TWO_MEMORIES, number, report_rows, run
from hypothesis import given, settings
from plan_tables import NODES, live_bytes_by_node, planned_tables

from cadence_memplan.io import Memory, trace_events
from cadence_memplan.io.trace import COUNTER_KEY, COUNTER_NAME, assign_lanes
from cadence_memplan.stats import TensorTable, memory_stats


@settings(max_examples=100, deadline=None)
@given(planned_tables())
def test_trace_events(plan: tuple[TensorTable, list[Memory]]) -> None:
    table, memories = plan
    document = json.loads(json.dumps(trace_events(table, memories, "random", "position")))
    events = document["traceEvents"]
    complete = [event for event in events if event["ph"] == "X"]
    assert sorted(event["name"] for event in complete) == sorted(map(str, table.labels))
    stats = memory_stats(table, len(memories))
    for mem_id, memory in enumerate(memories, start=1):
        process_names = [
            event["args"]["name"]
            for event in events
            if event["ph"] == "M" and event["name"] == "process_name" and event["pid"] == mem_id
        ]
        assert process_names == [memory.name]
        mine = [event for event in complete if event["pid"] == mem_id]
        rows = np.flatnonzero(table.mem_ids == mem_id)
        assert len(mine) == len(rows)
        for event in mine:
            row = int(event["name"][1:])
            assert event["ts"] == table.starts[row]
            assert event["dur"] == max(table.ends[row] - table.starts[row] + 1, 0)
            assert event["args"]["offset"] == table.offsets[row]
            assert event["args"]["size"] == table.sizes[row]
            assert event["args"]["memory"] == memory.name
            if memory.base_address is None:
                assert "address" not in event["args"]
            else:
                assert int(event["args"]["address"], 16) == memory.base_address + table.offsets[row]
        # Viewers stack a thread's events: on one lane they must not overlap.
        for lane in {event["tid"] for event in mine}:
            spans = sorted((event["ts"], event["ts"] + event["dur"]) for event in mine
                           if event["tid"] == lane)  # fmt: skip
            assert all(end <= next_start for (_, end), (next_start, _) in itertools.pairwise(spans))
        counter = [event for event in events if event["ph"] == "C" and event["pid"] == mem_id]
        assert all(event["name"] == COUNTER_NAME for event in counter)
        stepped = np.zeros(NODES, dtype=np.int64)
        for event in counter:
            stepped[event["ts"] :] = event["args"][COUNTER_KEY]
        np.testing.assert_array_equal(stepped, live_bytes_by_node(table, mem_id, NODES))
        assert max((e["args"][COUNTER_KEY] for e in counter), default=0) == (
            stats[mem_id - 1].peak_live_bytes
        )
        assert len(counter) <= 2 * len(rows)


def test_lanes_are_as_few_as_tensors_alive_at_once() -> None:
    starts = np.array([0, 0, 1, 3, 3, 5, 2], dtype=np.int64)
    ends = np.array([2, 0, 4, 3, 6, 5, 1], dtype=np.int64)  # the last is never alive
    lanes = assign_lanes(starts, ends)
    # At node 3: tensors 2, 3 and 4 are alive; nothing needs a fourth lane.
    assert lanes.max() + 1 == 3
    alive = starts <= ends
    for lane in range(3):
        spans = sorted(
            zip(starts[alive & (lanes == lane)], ends[alive & (lanes == lane)], strict=True)
        )
        assert all(end < next_start for (_, end), (next_start, _) in itertools.pairwise(spans))
    # Each tensor takes the lowest lane free at its start.
    assert lanes.tolist() == [1, 0, 0, 1, 2, 0, 2]


# --------------------------------------------------------------------------- command line


def test_cli_trace(small_csv: Path, tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    result = run(small_csv, "--memory", TWO_MEMORIES, "--trace", trace)
    assert result.returncode == 0, result.stderr
    assert f"wrote trace: {trace}" in result.stdout
    document = json.loads(trace.read_text())
    events = document["traceEvents"]
    complete = [event for event in events if event["ph"] == "X"]
    assert sorted(event["name"] for event in complete) == list("abcdefghijkl")
    rows = report_rows(result.stdout)
    assert set(rows) == {"mem1", "mem2"}
    for pid, name in enumerate(["mem1", "mem2"], start=1):
        samples = [e["args"]["bytes"] for e in events if e["ph"] == "C" and e["pid"] == pid]
        # The counter peaks where the report's "peak live of its tensors" column says.
        assert max(samples, default=0) == number(rows[name][5])
    assert document["otherData"]["input"] == "small.csv"
