"""stats.py's live bytes, the one count behind every peak-live figure, on numpy alone:
``live_bytes_changes``, ``peak_live_node_per_memory``, ``memory_stats`` and
``overall_peak`` against a brute-force count over every node and against the trace's
counters, with a tensor inside another's storage counted once (also on the cnn through
the command line, which needs executorch).
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
from cli_support import MODEL_TIMEOUT, number, report_rows, run
from hypothesis import given, settings
from plan_tables import NODES, live_bytes_by_node, planned_tables

from cadence_memplan.io import Memory, trace_events
from cadence_memplan.stats import (
    TensorTable,
    live_bytes_changes,
    memory_stats,
    overall_peak,
    peak_live_node_per_memory,
)


@settings(max_examples=150, deadline=None)
@given(planned_tables())
def test_live_bytes_changes_match_every_node(plan: tuple[TensorTable, list[Memory]]) -> None:
    table, memories = plan
    own = ~table.shares_storage
    columns = (table.mem_ids[own], table.sizes[own], table.starts[own], table.ends[own])
    ids, times, live = live_bytes_changes(*columns)
    nodes = peak_live_node_per_memory(*columns, len(memories))
    for mem_id in range(1, len(memories) + 1):
        expected = live_bytes_by_node(table, mem_id, NODES)
        mine = ids == mem_id
        # Stepping through the changes gives every node's value ...
        stepped = np.zeros(NODES, dtype=np.int64)
        for time, value in zip(times[mine], live[mine], strict=True):
            stepped[time:] = value
        np.testing.assert_array_equal(stepped, expected)
        # ... and a change is recorded only where the value changes.
        values = live[mine]
        assert (np.diff(values) != 0).all()
        if values.size:
            assert values[0] != 0
            assert values[-1] == 0
        first_peak = int(np.argmax(expected)) if expected.max() > 0 else -1
        assert nodes[mem_id] == first_peak
        assert memory_stats(table, len(memories))[mem_id - 1].peak_live_bytes == expected.max()


# --------------------------------------------------------------------------- one "alive"


def trace_total_peak(events: list[dict[str, object]]) -> int:
    """The most bytes alive at one node, all memories together, from the trace's counters."""
    latest: dict[object, int] = {}
    peak = 0
    counters = sorted(
        (event["ts"], event["pid"], event["args"]["bytes"])  # type: ignore[index]
        for event in events
        if event["ph"] == "C"
    )
    for time, group in itertools.groupby(counters, key=lambda counter: counter[0]):
        del time
        for _, pid, value in group:
            latest[pid] = value  # type: ignore[assignment]
        peak = max(peak, sum(latest.values()))
    return peak


def test_overall_peak_counts_shared_storage_once() -> None:
    """A tensor inside another's storage adds no bytes: the overall peak is what the
    trace's counters add up to, and never above the memories' peak usages together."""
    table = TensorTable(
        ["host", "inside", "other", "later"],
        mem_ids=[1, 1, 2, 1],
        offsets=[0, 64, 0, 0],
        sizes=[100, 36, 10, 120],
        starts=[0, 1, 2, 5],
        ends=[4, 2, 3, 6],
        shares_storage=np.array([False, True, False, False]),
    )
    assert overall_peak(table) == (120, 5)  # "later" alone; host + other = 110 at node 2
    memories = [Memory("a", 1024, 1), Memory("b", 1024, 1)]
    assert trace_total_peak(trace_events(table, memories)["traceEvents"]) == 120
    counted_twice = TensorTable(*(getattr(table, name) for name in (
        "labels", "mem_ids", "offsets", "sizes", "starts", "ends")))  # fmt: skip
    assert overall_peak(counted_twice) == (146, 2)  # what counting "inside" again would say
    # Every per-memory figure leaves it out too.
    assert [stat.peak_live_bytes for stat in memory_stats(table, 2)] == [120, 10]


@given(planned_tables())
@settings(max_examples=60, deadline=None)
def test_overall_peak_is_the_trace_counters_sum(plan: tuple[TensorTable, list[Memory]]) -> None:
    table, memories = plan
    peak, _ = overall_peak(table)
    assert peak == trace_total_peak(trace_events(table, memories)["traceEvents"])


@pytest.mark.executorch
def test_cli_overall_peak_of_the_cnn_counts_cadence_in_place_ops_once(tmp_path: Path) -> None:
    """The built-in cnn: Cadence places its cat's inputs inside its output and its slices
    inside their input. All its tensors are in one memory, so no moment can have more
    bytes alive than that memory's peak usage (the bug this guards against: counting
    the shared storage twice, 176,128 B against a peak usage of 114,688 B)."""
    trace = tmp_path / "trace.json"
    result = run("cnn", "--trace", trace, "--quiet", timeout=MODEL_TIMEOUT)
    assert result.returncode == 0, result.stderr
    rows = report_rows(result.stdout)
    usage = sum(number(row[3]) for row in rows.values())
    match = re.search(r"^overall peak: ([0-9,]+) bytes .*; (\d+) tensors inside another's"
                      " storage add no bytes of their own$", result.stdout, re.MULTILINE)  # fmt: skip
    assert match is not None, result.stdout
    assert int(match.group(2)) > 0
    peak = number(match.group(1))
    assert peak <= usage
    assert peak == trace_total_peak(json.loads(trace.read_text())["traceEvents"])
    assert peak == max(number(row[5]) for row in rows.values())  # one memory holds them all


@pytest.mark.executorch
def test_cli_llama_cat_of_views_counts_the_viewed_tensors_as_shared() -> None:
    """executorch's llama concatenates views in its rotary embedding, and Cadence places
    the viewed tensors inside the cat's output too: they share storage on purpose. The
    plan check once called two of them live tensors sharing bytes, and the plan failed."""
    result = run("llama", "--quiet", timeout=MODEL_TIMEOUT)
    assert result.returncode == 0, result.stderr
    assert "plan check: valid" in result.stdout
    match = re.search(r"; (\d+) tensors inside another's storage", result.stdout)
    assert match is not None, result.stdout
    assert int(match.group(1)) == 16  # the 8 views and the 8 tensors they view
