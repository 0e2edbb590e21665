"""io/plans.py, plan files, on numpy alone: the JSON against its JSON Schema and read
back into the same plan, the schema refusing what the reader cannot use, the CSV's
lifetimes comment, the unreleased versions 1 and 2 and malformed files refused with the
reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from plan_tables import TWO, planned_tables, small_table

from cadence_memplan.io import (
    Memory,
    plan_schema,
    read_plan,
    read_plan_file,
    trace_events,
    write_plan,
)
from cadence_memplan.stats import TensorTable, memory_stats


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


@pytest.mark.parametrize("version", [1, 2])
def test_refuses_the_unreleased_versions_1_and_2(tmp_path: Path, version: int) -> None:
    path = tmp_path / f"v{version}.json"
    path.write_text(
        json.dumps(
            {
                "format": "cadence-memplan plan",
                "version": version,
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
    with pytest.raises(ValueError, match=f"plan file version {version}, expected 3"):
        read_plan_file(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ("[]", "not a plan file"),
        ('{"format": "cadence-memplan plan", "version": 7}', "version 7, expected 3"),
        (
            '{"format": "cadence-memplan plan", "version": 3, "lifetimes": "half-open"}',
            "'half-open'; this reader knows only \"inclusive\"",
        ),
        (
            (
                '{"format": "cadence-memplan plan", "version": 3, "lifetimes": "inclusive",'
                ' "memories": []}'
            ),
            "malformed",
        ),
        (
            (
                '{"format": "cadence-memplan plan", "version": 3, "lifetimes": "inclusive",'
                ' "memories": [], "tensors":'
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
