"""Understanding plans, on numpy alone: the live-bytes steps behind every peak
(``stats``), the Chrome trace (``io/trace.py``), the peak explained
(``analysis/explain.py``), the plan diff (``analysis/diff.py``), plan files against their
JSON Schema, and MiniMalloc solutions. Every figure is checked against a brute-force
count over every node; the command line's use of them is in tests/test_cli.py.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
from cli_support import MODEL_TIMEOUT, TWO_MEMORIES, error_line, number, report_rows, run
from hypothesis import given, settings
from hypothesis import strategies as st

import cadence_memplan
from cadence_memplan.analysis.diff import diff_plans
from cadence_memplan.analysis.explain import explain_peaks, holes_below
from cadence_memplan.io import (
    Memory,
    parse_memory_spec,
    plan_schema,
    read_minimalloc_csv,
    read_plan,
    read_plan_file,
    trace_events,
    write_minimalloc_solution,
    write_plan,
)
from cadence_memplan.io.trace import COUNTER_KEY, COUNTER_NAME, assign_lanes
from cadence_memplan.stats import (
    TensorTable,
    format_bytes,
    live_bytes_changes,
    memory_stats,
    overall_peak,
    peak_live_node_per_memory,
)

# --------------------------------------------------------------------------- plans


@st.composite
def planned_tables(draw: st.DrawFn) -> tuple[TensorTable, list[Memory]]:
    """A random graph planned by the core on 1-3 memories, some rows sharing storage."""
    count = draw(st.integers(0, 30))
    starts = np.array(draw(st.lists(st.integers(1, 20), min_size=count, max_size=count)))
    lengths = draw(st.lists(st.integers(-1, 8), min_size=count, max_size=count))
    ends = starts + np.array(lengths, dtype=np.int64)  # -1: never alive
    sizes = np.array(draw(st.lists(st.integers(0, 300), min_size=count, max_size=count)))
    memory_count = draw(st.integers(1, 3))
    memories = [
        Memory(f"m{index}", size, alignment, base)
        for index, (size, alignment, base) in enumerate(
            zip(
                [*draw(st.lists(st.integers(1, 600), min_size=memory_count - 1,
                                max_size=memory_count - 1)), 1 << 20],
                draw(st.lists(st.sampled_from([1, 4, 16]), min_size=memory_count,
                              max_size=memory_count)),
                draw(st.lists(st.sampled_from([None, 0x1000]), min_size=memory_count,
                              max_size=memory_count)),
                strict=True,
            )
        )
    ]  # fmt: skip
    result = cadence_memplan.plan(
        starts.astype(np.int64),
        ends.astype(np.int64),
        sizes.astype(np.int64),
        [memory.size for memory in memories],
        [memory.alignment for memory in memories],
        algorithm=draw(st.sampled_from(["position", "heuristic"])),
    )
    shares = np.array(draw(st.lists(st.booleans(), min_size=count, max_size=count)), dtype=bool)
    table = TensorTable(
        [f"t{index}" for index in range(count)],
        result.mem_ids,
        result.offsets,
        sizes,
        starts,
        ends,
        shares & (sizes > 0) & (np.arange(count) % 3 == 0),
    )
    return table, memories


def live_bytes_by_node(table: TensorTable, mem_id: int, nodes: int) -> np.ndarray:
    """Brute force: each node's bytes of live tensors in a memory (shared storage left out)."""
    live = np.zeros(nodes, dtype=np.int64)
    for row in range(len(table)):
        if table.mem_ids[row] == mem_id and not table.shares_storage[row]:
            live[table.starts[row] : table.ends[row] + 1] += table.sizes[row]
    return live


NODES = 40  # every lifetime above ends before this node


# --------------------------------------------------------------------------- stats


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


# --------------------------------------------------------------------------- the trace


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


# --------------------------------------------------------------------------- explain


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


# --------------------------------------------------------------------------- diff


def small_table(
    offsets: list[int], mem_ids: list[int], names: list[str] | None = None
) -> TensorTable:
    count = len(offsets)
    return TensorTable(
        names or [f"t{index}" for index in range(count)],
        np.array(mem_ids),
        np.array(offsets),
        np.full(count, 16),
        np.arange(count),
        np.arange(count) + 1,
    )


TWO = [Memory("fast", 64, 16), Memory("slow", 1024, 16)]


def test_diff_identical_and_moved() -> None:
    before = small_table([0, 16, 32], [1, 1, 1])
    assert diff_plans(before, TWO, before, TWO).identical
    after = small_table([0, 16, 0], [1, 1, 2])
    difference = diff_plans(before, TWO, after, TWO)
    assert not difference.identical
    assert [change.name for change in difference.moved] == ["t2"]
    assert difference.moved[0].before[:2] == (1, 32)
    assert difference.moved[0].after[:2] == (2, 0)
    fast, slow = difference.memories
    assert fast.peak_usage == (48, 32)
    assert slow.peak_usage == (0, 16)
    assert fast.tensor_count == (3, 2)


def test_diff_matches_by_name_and_occurrence() -> None:
    before = small_table([0, 16, 32], [1, 1, 1], ["x", "y", "x"])
    reordered = TensorTable(
        ["y", "x", "x"],
        before.mem_ids[[1, 0, 2]],
        before.offsets[[1, 0, 2]],
        before.sizes[[1, 0, 2]],
        before.starts[[1, 0, 2]],
        before.ends[[1, 0, 2]],
    )
    assert diff_plans(before, TWO, reordered, TWO).identical
    renamed = small_table([0, 16, 32], [1, 1, 1], ["x", "z", "x"])
    difference = diff_plans(before, TWO, renamed, TWO)
    assert (difference.only_before, difference.only_after) == (["y"], ["z"])


def test_diff_sees_memories_sizes_and_lifetimes() -> None:
    before = small_table([0, 16], [1, 1])
    assert not diff_plans(before, TWO, before, [TWO[0]]).identical
    longer = small_table([0, 16], [1, 1])
    longer.ends[0] += 5
    difference = diff_plans(before, TWO, longer, TWO)
    assert not difference.identical
    assert difference.moved == []
    assert [change.name for change in difference.changed] == ["t0"]


# --------------------------------------------------------------------------- plan files


@settings(max_examples=30, deadline=None)
@given(plan=planned_tables())
def test_plan_json_matches_its_schema_and_reads_back(
    plan: tuple[TensorTable, list[Memory]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    table, memories = plan
    path = tmp_path_factory.mktemp("plans") / "plan.json"
    write_plan(path, table, memories, "heuristic", "random", {"placer (C++ core)": 1e-4})
    document = json.loads(path.read_text())
    jsonschema.validate(document, plan_schema())
    assert document["version"] == 3
    assert document["lifetimes"] == "inclusive"
    assert document["input"] == "random"
    stats = memory_stats(table, len(memories))
    for record, stat in zip(document["memories"], stats, strict=True):
        assert record["peak_usage"] == stat.peak_usage
        assert record["peak_live_bytes"] == stat.peak_live_bytes
    for record in document["tensors"]:
        base = memories[record["mem_id"] - 1].base_address
        assert record["address"] == (None if base is None else base + record["offset"])
    loaded = read_plan_file(path)
    assert loaded.table.same_plan(table)
    np.testing.assert_array_equal(loaded.table.shares_storage, table.shares_storage)
    assert loaded.memories == memories
    assert (loaded.algorithm, loaded.input_name, loaded.version) == ("heuristic", "random", 3)


def test_schema_refuses_what_the_reader_cannot_use(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    path = tmp_path / "plan.json"
    write_plan(path, small_table([0, 16], [1, 1]), TWO, "position")
    document = json.loads(path.read_text())
    jsonschema.validate(document, plan_schema())
    del document["tensors"][0]["offset"]
    with pytest.raises(jsonschema.ValidationError, match="'offset' is a required property"):
        jsonschema.validate(document, plan_schema())


def test_every_plan_file_states_its_lifetimes_and_reads_back(tmp_path: Path) -> None:
    """The CSV's first line is a comment saying how to read start and end; the reader
    skips it, and still reads a CSV without it."""
    table = small_table([0, 16], [1, 1])
    path = tmp_path / "plan.csv"
    write_plan(path, table, TWO, "position")
    first, header = path.read_text().splitlines()[:2]
    assert first.startswith("# cadence-memplan plan: lifetimes are inclusive [start, end]")
    assert header == "name,mem_id,offset,size,start,end"
    assert read_plan(path).same_plan(table)
    path.write_text("\n".join(path.read_text().splitlines()[1:]) + "\n")
    assert read_plan(path).same_plan(table)
    trace = trace_events(table, TWO)
    assert trace["otherData"]["lifetimes"].startswith("inclusive [start, end] node indices")


def test_reads_version_1_plans(tmp_path: Path) -> None:
    path = tmp_path / "v1.json"
    path.write_text(
        json.dumps(
            {
                "format": "cadence-memplan plan",
                "version": 1,
                "algorithm": "position",
                "memories": [
                    {"mem_id": 1, "name": "fast", "size": 64, "alignment": 16, "base_address": None}
                ],
                "tensors": [
                    {"name": "a", "mem_id": 1, "offset": 16, "size": 8, "start": 0, "end": 2}
                ],
            }
        )
    )
    loaded = read_plan_file(path)
    assert loaded.version == 1
    assert loaded.table.offsets.tolist() == [16]
    assert loaded.memories == [Memory("fast", 64, 16)]
    assert read_plan(path).labels == ["a"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ("[]", "not a plan file"),
        ('{"format": "cadence-memplan plan", "version": 7}', "version 7, expected one of 1, 2, 3"),
        (
            '{"format": "cadence-memplan plan", "version": 3, "lifetimes": "half-open"}',
            "'half-open'; this reader knows only \"inclusive\"",
        ),
        ('{"format": "cadence-memplan plan", "version": 2, "memories": []}', "malformed"),
        (
            (
                '{"format": "cadence-memplan plan", "version": 2, "memories": [], "tensors":'
                ' [{"name": "a", "mem_id": 1, "offset": 0, "size": 1, "start": 0, "end": 0}]}'
            ),
            "has mem_id 1, but the file lists 0 memories",
        ),
    ],
)
def test_malformed_plan_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "plan.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_plan_file(path)


# --------------------------------------------------------------------------- MiniMalloc


def test_minimalloc_solution_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "solution.csv"
    ids = ["b1", "b2", "b3"]
    starts, ends = np.array([0, 3, 0]), np.array([2, 8, 20])
    sizes, offsets = np.array([4, 4, 4]), np.array([0, 0, 4])
    write_minimalloc_solution(path, ids, starts, ends, sizes, offsets)
    assert path.read_text().splitlines()[:2] == ["id,lower,upper,size,offset", "b1,0,3,4,0"]
    instance = read_minimalloc_csv(path)
    assert instance.ids.tolist() == ids
    np.testing.assert_array_equal(instance.starts, starts)
    np.testing.assert_array_equal(instance.ends, ends)
    np.testing.assert_array_equal(instance.sizes, sizes)
    with pytest.raises(ValueError, match="buffer 'x' is never alive"):
        write_minimalloc_solution(path, ["x"], np.array([3]), np.array([2]), sizes[:1], offsets[:1])


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
        # The counter peaks where the report's "peak live, lower bound" column says.
        assert max(samples, default=0) == number(rows[name][5])
    assert document["otherData"]["input"] == "small.csv"


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
            f"peak usage {peak.peak_usage:,} B ({format_bytes(peak.peak_usage)}), peak-live lower bound"
            f" {peak.peak_live_bytes:,} B"
        )
        assert gap in section.splitlines()[0]
        assert f"live bytes peak first at node {peak.peak_node}:" in section
        # CSV buffers are named by id, with the file's half-open lifetimes, largest first.
        listed = re.findall(r"^    (\w) +[0-9,]+ +[0-9,]+ +\[\d+, \d+\)$", section, re.MULTILINE)
        assert listed == [labels[row] for row in peak.live_rows]
        assert "id  size (B)  offset  lifetime [lower, upper)" in section
        if peak.hole_sizes.size:
            holes = f"{len(peak.hole_sizes)} hole(s) below the peak usage there, {peak.gap} B"
            assert f"{holes}: all of the gap:" in section
            for offset, size in zip(peak.hole_offsets, peak.hole_sizes, strict=True):
                assert re.search(rf"^    {offset:,} +{size:,}$", section, re.MULTILINE)
        else:
            assert "no holes below the peak usage there" in section
        for row in peak.top_rows:
            assert f"peak usage reached by id {labels[row]} at bytes" in section


def test_cli_out_minimalloc_round_trip(small_csv: Path, tmp_path: Path) -> None:
    """One file per memory of a hierarchy, each read back by io/minimalloc.py's reader
    into the plan's own placements."""
    out, plan = tmp_path / "solution.csv", tmp_path / "plan.json"
    result = run(small_csv, "--memory", "small=4KiB:16,big=1MiB:64", "--out-minimalloc", out,
                 "--out", plan)  # fmt: skip
    assert result.returncode == 0, result.stderr
    table = read_plan(plan)
    instance = read_minimalloc_csv(small_csv)
    seen = []
    for mem_id, name in enumerate(["small", "big"], start=1):
        path = tmp_path / f"solution-{name}.csv"
        assert f"wrote MiniMalloc solution: {path} (memory {name}" in result.stdout
        solution = read_minimalloc_csv(path)
        header = path.read_text().splitlines()[0]
        assert header == "id,lower,upper,size,offset"
        offsets = [int(line.split(",")[4]) for line in path.read_text().splitlines()[1:]]
        rows = [table.labels.index(buffer_id) for buffer_id in solution.ids.tolist()]
        assert (table.mem_ids[rows] == mem_id).all()
        np.testing.assert_array_equal(table.offsets[rows], offsets)
        original = [instance.ids.tolist().index(buffer_id) for buffer_id in solution.ids]
        np.testing.assert_array_equal(solution.starts, instance.starts[original])
        np.testing.assert_array_equal(solution.ends, instance.ends[original])
        np.testing.assert_array_equal(solution.sizes, instance.sizes[original])
        seen += solution.ids.tolist()
    assert sorted(seen) == sorted(instance.ids.tolist())
    # One memory: the file is written where asked, and reads back as the instance.
    single = tmp_path / "single.csv"
    result = run(small_csv, "--memory", "1MiB:1", "--out-minimalloc", single)
    assert result.returncode == 0, result.stderr
    assert read_minimalloc_csv(single).ids.tolist() == instance.ids.tolist()


def test_cli_diff(small_csv: Path, tmp_path: Path) -> None:
    first, again, other = (tmp_path / f"{name}.json" for name in ("first", "again", "other"))
    smaller, larger = "1KiB:16,1MiB:64", "2KiB:16,1MiB:64"
    for path, memory in ((first, smaller), (again, smaller), (other, larger)):
        result = run(small_csv, "--memory", memory, "--out", path)
        assert result.returncode == 0, result.stderr
    same = run("diff", first, again)
    assert same.returncode == 0, same.stderr
    assert "plans identical (12 tensors)" in same.stdout
    different = run("diff", first, other)
    assert different.returncode == 1, different.stderr
    expected = diff_plans(
        read_plan(first), parse_memory_spec(smaller), read_plan(other), parse_memory_spec(larger)
    )
    assert expected.moved, "a larger memory 1 should move tensors into it"
    assert f"moved: {len(expected.moved)} tensor(s) changed memory or offset" in different.stdout
    for change in expected.moved:
        assert re.search(rf"^    {change.name} ", different.stdout, re.MULTILINE)
    assert (
        "memory 1 differs: --- mem1: 1,024 B, alignment 16; +++ mem1: 2,048 B" in different.stdout
    )
    usage = report_rows(run(small_csv, "--memory", larger, "-q").stdout)["mem1"][3]
    assert re.search(rf"^mem1 +[0-9,]+ +{usage} ", different.stdout, re.MULTILINE)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["diff", "{plan}"], "the following arguments are required: B.json"),
        (["diff", "{plan}", "missing.json"], "cannot read missing.json: No such file"),
        (["diff", "{plan}", "{csv}"], "diff compares plan JSON files"),
        (["diff", "{plan}", "{not_a_plan}"], "not a plan file"),
        (["diff", "{plan}", "{broken}"], "not JSON"),
        (["{csv}", "--trace", "trace.txt"], "--trace trace.txt: expected a file ending in .json"),
        (["{csv}", "--trace", "no/such/folder/t.json"], "the folder no/such/folder does not"),
        (["{csv}", "--out-minimalloc", "x.json"], "expected a file ending in .csv"),
        (["{csv}", "--explain", "yes"], "unrecognized arguments: yes"),
    ],
)
def test_cli_bad_input(small_csv: Path, tmp_path: Path, arguments: list[str], message: str) -> None:
    plan = tmp_path / "plan.json"
    assert run(small_csv, "--out", plan).returncode == 0
    not_a_plan = tmp_path / "memories.json"
    not_a_plan.write_text('{"memories": []}')
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": ')
    names = {"plan": plan, "csv": small_csv, "not_a_plan": not_a_plan, "broken": broken}
    result = run(*(argument.format(**names) for argument in arguments))
    assert result.returncode == 2
    line = error_line(result)
    assert line.startswith("cadence-memplan: error: ")
    assert message in line
    assert len(result.stderr.strip().splitlines()) == 1  # argparse's errors too


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
    match = re.search(r"^overall peak: ([0-9,]+) bytes .*; (\d+) tensor\(s\) inside another's"
                      " storage add no bytes of their own$", result.stdout, re.MULTILINE)  # fmt: skip
    assert match is not None, result.stdout
    assert int(match.group(2)) > 0
    peak = number(match.group(1))
    assert peak <= usage
    assert peak == trace_total_peak(json.loads(trace.read_text())["traceEvents"])
    assert peak == max(number(row[5]) for row in rows.values())  # one memory holds them all
