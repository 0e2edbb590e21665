"""analysis/explain.py, where each memory's peak comes from, on numpy alone: the holes
against a byte map, each peak's live tensors and holes against a brute-force count, a
fragmented memory worked by hand; what ``--explain`` prints against ``explain_peaks`` on
the plan the run wrote, and on a model (needs executorch) the tensors named by node and
op, the trace's counters at the report's bounds and the plan file against its schema.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from cli_support import MODEL_TIMEOUT, TWO_MEMORIES, number, report_rows, run
from hypothesis import given, settings
from hypothesis import strategies as st
from plan_tables import NODES, live_bytes_by_node, planned_tables

from cadence_memplan.analysis.explain import explain_peaks, holes_below
from cadence_memplan.cli.explaining import TensorNames, print_explanation
from cadence_memplan.io import Memory, plan_schema, read_plan_file
from cadence_memplan.stats import TensorTable, format_bytes


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 400),
    st.lists(st.tuples(st.integers(0, 400), st.integers(0, 100)), max_size=12),
)
def test_holes_below_match_a_byte_map(limit: int, ranges: list[tuple[int, int]]) -> None:
    offsets = np.array([offset for offset, _ in ranges], dtype=np.int64)
    sizes = np.array([size for _, size in ranges], dtype=np.int64)
    used = np.zeros(limit, dtype=bool)
    for offset, size in ranges:
        used[offset : offset + size] = True
    hole_offsets, hole_sizes = holes_below(limit, offsets, sizes)
    free = np.zeros(limit, dtype=bool)
    for offset, size in zip(hole_offsets, hole_sizes, strict=True):
        assert size > 0
        free[offset : offset + size] = True
    np.testing.assert_array_equal(free, ~used)
    assert (np.diff(hole_offsets) > 0).all()
    # Holes are maximal: two never touch.
    assert (hole_offsets[1:] > hole_offsets[:-1] + hole_sizes[:-1]).all()


@settings(max_examples=150, deadline=None)
@given(planned_tables())
def test_explain_peaks(plan: tuple[TensorTable, list[Memory]]) -> None:
    table, memories = plan
    for peak in explain_peaks(table, len(memories)):
        expected = live_bytes_by_node(table, peak.mem_id, NODES)
        in_memory = table.mem_ids == peak.mem_id
        assert peak.peak_usage == int((table.offsets + table.sizes)[in_memory].max(initial=0))
        assert peak.peak_live_bytes == expected.max()
        if expected.max() == 0:
            assert peak.peak_node == -1
            continue
        node = peak.peak_node
        assert node == int(np.argmax(expected))
        alive = in_memory & ~table.shares_storage & (table.starts <= node) & (node <= table.ends)
        assert sorted(peak.live_rows.tolist()) == np.flatnonzero(alive).tolist()
        assert (np.diff(table.sizes[peak.live_rows]) <= 0).all()  # largest first
        assert int(table.sizes[peak.live_rows].sum()) == peak.peak_live_bytes
        # A valid plan's live tensors never overlap, so the holes are the gap exactly.
        assert peak.hole_bytes == peak.gap
        assert (peak.hole_offsets + peak.hole_sizes <= peak.peak_usage).all()
        assert all(
            table.offsets[row] + table.sizes[row] == peak.peak_usage for row in peak.top_rows
        )


def test_explain_a_fragmented_memory() -> None:
    """a and b fill [0, 200) at node 0; c takes [200, 300) at node 1 while a sits at
    [0, 100): at node 1 the bound is 200 B, usage 300 B, one hole [100, 200) of 100 B."""
    table = TensorTable(
        ["a", "b", "c"],
        mem_ids=np.array([1, 1, 1]),
        offsets=np.array([0, 100, 200]),
        sizes=np.array([100, 100, 100]),
        starts=np.array([0, 0, 1]),
        ends=np.array([1, 0, 1]),
    )
    (peak,) = explain_peaks(table, 1)
    assert (peak.peak_usage, peak.peak_live_bytes, peak.gap) == (300, 200, 100)
    assert peak.peak_node == 0
    assert peak.live_rows.tolist() == [0, 1]
    assert peak.hole_sizes.tolist() == [100]
    assert peak.hole_offsets.tolist() == [200]
    assert peak.top_rows.tolist() == [2]


def test_explain_counts_the_bytes_control_flow_submodules_write() -> None:
    """A cond's two branches (rows named op/submodule/node) write [0, 100) while ``x``
    sits at [100, 200) and ``out`` at [200, 300): they are not in the peak live (only one
    branch runs), but their bytes are no holes; the rest of the gap is. The branches share
    [0, 50), counted once."""
    table = TensorTable(
        ["x", "out", "cond/submodule_0/a", "cond/submodule_1/b", "late"],
        mem_ids=np.array([1, 1, 1, 1, 1]),
        offsets=np.array([100, 200, 0, 0, 300]),
        sizes=np.array([100, 100, 50, 80, 20]),
        starts=np.array([0, 1, 1, 1, 2]),
        ends=np.array([1, 2, 1, 1, 2]),
        shares_storage=np.array([0, 0, 1, 1, 0], bool),
    )
    assert table.in_submodule.tolist() == [False, False, True, True, False]
    (peak,) = explain_peaks(table, 1)
    assert (peak.peak_usage, peak.peak_live_bytes, peak.peak_node) == (320, 200, 1)
    assert peak.live_rows.tolist() == [0, 1]
    assert peak.submodule_rows.tolist() == [3, 2]  # largest first
    assert peak.submodule_bytes == 80
    # Free at node 1: [80, 100) between the branches and x, [300, 320) above out.
    assert peak.hole_offsets.tolist() == [80, 300]
    assert peak.hole_sizes.tolist() == [20, 20]
    assert peak.hole_bytes == peak.gap - peak.submodule_bytes


def test_a_memory_only_submodules_write_to_is_not_called_empty(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A memory that holds only tensors a control-flow submodule writes has no peak live
    (no node of its own), but its tensors are alive: the explanation does not say none is."""
    table = TensorTable(
        ["x", "cond/submodule_0/a"],
        mem_ids=np.array([1, 2]),
        offsets=np.array([0, 0]),
        sizes=np.array([16, 32]),
        starts=np.array([0, 1]),
        ends=np.array([2, 1]),
        shares_storage=np.array([0, 1], bool),
    )
    memories = [Memory("fast", 64, 16), Memory("slow", 1024, 16)]
    print_explanation(explain_peaks(table, 2), memories, TensorNames(table))
    slow = capsys.readouterr().out.split("explain slow (memory 2): ")[1]
    assert "no tensor of this memory but those control-flow submodules write is ever alive" in slow


# --------------------------------------------------------------------------- command line


def test_cli_explain_csv(small_csv: Path, tmp_path: Path) -> None:
    """What --explain prints is what explain_peaks finds in the plan the run wrote."""
    plan = tmp_path / "plan.json"
    result = run(small_csv, "--memory", TWO_MEMORIES, "--explain", "--quiet", "--out", plan)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    plan_file = read_plan_file(plan)
    assert plan_file.memories is not None
    explained = explain_peaks(plan_file.table, len(plan_file.memories))
    assert any(peak.hole_sizes.size for peak in explained), "the small plan should have holes"
    labels = plan_file.table.labels
    for peak in explained:
        section = text.split(f"explain mem{peak.mem_id} (memory {peak.mem_id}): ")[1]
        section = section.split("\nexplain ")[0]
        gap = "no gap" if peak.gap == 0 else f"gap {peak.gap:,} B"
        assert section.startswith(
            f"peak usage {peak.peak_usage:,} B ({format_bytes(peak.peak_usage)}); peak live of"
            f" this plan's tensors in mem{peak.mem_id} {peak.peak_live_bytes:,} B"
        )
        assert gap in section.splitlines()[0]
        assert f"live bytes peak first at node {peak.peak_node}:" in section
        # CSV buffers are named by id, with the file's half-open lifetimes, largest first.
        listed = re.findall(r"^    (\w) +[0-9,]+ +[0-9,]+ +\[\d+, \d+\)$", section, re.MULTILINE)
        assert listed == [labels[row] for row in peak.live_rows]
        assert "id  size (B)  offset  lifetime [lower, upper)" in section
        if peak.hole_sizes.size:
            count = len(peak.hole_sizes)
            holes = (
                f"{count} hole{'s' if count > 1 else ''} below the peak usage there, {peak.gap} B"
            )
            assert f"{holes}: all of the gap:" in section
            for offset, size in zip(peak.hole_offsets, peak.hole_sizes, strict=True):
                assert re.search(rf"^    {offset:,} +{size:,}$", section, re.MULTILINE)
        else:
            assert "no holes below the peak usage there" in section
        for row in peak.top_rows:
            assert f"peak usage reached by id {labels[row]} at bytes" in section


@pytest.mark.executorch
def test_cli_model_explain_trace_and_plan(tmp_path: Path) -> None:
    """A model: tensors named by node and op, the trace's counters at the report's bounds,
    the plan file valid against its schema."""
    jsonschema = pytest.importorskip("jsonschema")
    trace, plan = tmp_path / "trace.json", tmp_path / "plan.json"
    result = run("mlp", "--explain", "--trace", trace, "--out", plan, "--quiet",
                 timeout=MODEL_TIMEOUT)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert re.search(r"^    tensor +written by +op +size \(B\)", result.stdout, re.MULTILINE)
    # An alloc node is named with the out-variant op that writes it.
    assert re.search(r"^    alloc\S* +aten_\w+ +aten\.\w+\.out ", result.stdout, re.MULTILINE)
    assert "lifetime [start, end]" in result.stdout
    document = json.loads(plan.read_text())
    jsonschema.validate(document, plan_schema())
    assert document["input"] == "mlp"
    assert "placer (C++ core)" in document["timings_seconds"]
    rows = report_rows(result.stdout)
    events = json.loads(trace.read_text())["traceEvents"]
    complete = [event for event in events if event["ph"] == "X"]
    assert len(complete) == len(document["tensors"])
    ops = {event["args"]["op"] for event in complete}
    # The mlp's linear layers, as the out-variant op; Cadence's lowering keeps linear whole.
    assert "aten.linear.out" in ops
    assert "placeholder" in ops  # its input
    for memory in document["memories"]:
        samples = [
            event["args"]["bytes"]
            for event in events
            if event["ph"] == "C" and event["pid"] == memory["mem_id"]
        ]
        assert max(samples, default=0) == memory["peak_live_bytes"]
        assert memory["peak_live_bytes"] == number(rows[memory["name"]][5])
