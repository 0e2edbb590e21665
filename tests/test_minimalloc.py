"""cadence_memplan.io.minimalloc: reading MiniMalloc CSV instances, planning the real ones,
and writing solutions (``--out-minimalloc``, one file per memory) that read back into the
plan's own placements."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cases import PLANNING_INSTANCES
from cli_support import run

import cadence_memplan
from cadence_memplan.io import read_plan, write_minimalloc_solution
from cadence_memplan.io.minimalloc import capacity_from_filename, read_minimalloc_csv

# Planning the largest real instance takes tens of seconds; the benchmarks cover it.
SLOW_INSTANCES = {"Y_1.csv"}


def write(tmp_path: Path, text: str, name: str = "instance.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_reads_half_open_lifetimes_as_inclusive(tmp_path: Path) -> None:
    path = write(tmp_path, "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\n\n7, 9 ,21,0\n")
    instance = read_minimalloc_csv(path)
    assert instance.ids.tolist() == ["b1", "b2", "7"]
    assert instance.starts.tolist() == [0, 3, 9]
    assert instance.ends.tolist() == [2, 8, 20]
    assert instance.sizes.tolist() == [4, 4, 0]
    for column in instance[1:]:
        assert column.dtype == np.int64


def test_half_open_neighbours_do_not_overlap(tmp_path: Path) -> None:
    # b1 ends where b2 starts: in MiniMalloc they may share storage, and so here.
    path = write(tmp_path, "id,lower,upper,size\nb1,0,3,16\nb2,3,9,16\n")
    instance = read_minimalloc_csv(path)
    for algorithm in cadence_memplan.ALGORITHMS:
        result = cadence_memplan.plan(*instance[1:], [16], [16], algorithm=algorithm)
        assert result.offsets.tolist() == [0, 0]


def test_columns_in_any_order_and_extra_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "size,upper,offset,id,lower\n8,5,0,x,1\n")
    instance = read_minimalloc_csv(path)
    assert (instance.ids.tolist(), instance.starts.tolist(), instance.ends.tolist()) == (
        ["x"],
        [1],
        [4],
    )
    assert instance.sizes.tolist() == [8]


def test_header_only_is_an_empty_instance(tmp_path: Path) -> None:
    instance = read_minimalloc_csv(write(tmp_path, "id,lower,upper,size\n"))
    assert all(len(column) == 0 for column in instance)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "empty file"),
        ("id,lower,size\nb,0,4\n", "lacks the column(s) ['upper']"),
        ("id,lower,upper,size,size\nb,0,1,4,4\n", "column 'size' appears twice"),
        ("id,lower,upper,size\nb,0,1\n", ":2: 3 fields, the header has 4"),
        ("id,lower,upper,size\nb,0,1,4.0\n", ":2: size is '4.0', not an integer"),
        ("id,lower,upper,size\nb,0,x,4\n", "upper is 'x', not an integer"),
        ("id,lower,upper,size\nb,0,1,1_000\n", "not an integer"),
        ("id,lower,upper,size\nb,0,1,99999999999999999999\n", "does not fit in int64"),
        ("id,lower,upper,size\nb,0,1,-4\n", "negative size -4"),
        ("id,lower,upper,size\nb,-1,1,4\n", "negative lower -1"),
        ("id,lower,upper,size\nb,3,3,4\n", "upper 3 <= lower 3"),
        ("id,lower,upper,size\nb,3,2,4\n", "upper 2 <= lower 3"),
        ("id,lower,upper,size\nb,0,1,4\nb,1,2,4\n", ":3: id 'b' appears twice"),
        ("id,lower,upper,size\n ,0,1,4\n", "empty id"),
    ],
)
def test_malformed_files_raise_naming_the_problem(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(ValueError, match=r"instance\.csv") as raised:
        read_minimalloc_csv(write(tmp_path, text))
    assert words in str(raised.value)


def test_capacity_from_filename() -> None:
    assert capacity_from_filename("challenging/A.1048576.csv") == 1048576
    assert capacity_from_filename(Path("input.12.csv")) == 12
    assert capacity_from_filename("resnet50.csv") is None
    assert capacity_from_filename("pangu_2.6B.csv") is None


def instance_files() -> list[object]:
    """Each public instance; the largest are marked slow (bench/test_instances.py times them)."""
    paths = sorted(PLANNING_INSTANCES.glob("*/*.csv")) if PLANNING_INSTANCES.is_dir() else []
    return [
        pytest.param(path, marks=pytest.mark.slow) if path.name in SLOW_INSTANCES else path
        for path in paths
    ]


@pytest.mark.skipif(not PLANNING_INSTANCES.is_dir(), reason=f"{PLANNING_INSTANCES} is not present")
@pytest.mark.parametrize("path", instance_files(), ids=lambda path: Path(path).name)
@pytest.mark.parametrize("algorithm", cadence_memplan.ALGORITHMS)
def test_public_instances_plan_validly(path: Path, algorithm: str) -> None:
    instance = read_minimalloc_csv(path)
    assert len(instance.ids) > 0
    # The file's capacity, then an overflow memory that always has room; without a capacity
    # in the name, one memory that holds every buffer side by side.
    capacity = capacity_from_filename(path)
    total = int(instance.sizes.sum())
    memory_sizes = [total] if capacity is None else [capacity, total]
    alignments = [1] * len(memory_sizes)
    result = cadence_memplan.plan(*instance[1:], memory_sizes, alignments, algorithm=algorithm)
    problem = cadence_memplan.validate(
        *instance[1:], result.mem_ids, result.offsets, memory_sizes, alignments
    )
    assert problem is None, problem


# --------------------------------------------------------------------------- MiniMalloc solutions


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
