"""analysis/diff.py, two plans compared, on numpy alone: moved and changed tensors,
matching by name and occurrence, memories that differ; ``cadence-memplan diff`` against
``diff_plans`` on the plans two runs wrote.
"""

from __future__ import annotations

import re
from pathlib import Path

from cli_support import report_rows, run
from plan_tables import TWO, small_table

from cadence_memplan.analysis.diff import MemoryMoves, diff_plans
from cadence_memplan.io import parse_memory_spec, read_plan
from cadence_memplan.stats import TensorTable


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


# --------------------------------------------------------------------------- command line


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
    moved_bytes = sum(change.after[2] for change in expected.moved)
    noun = "tensor" if len(expected.moved) == 1 else "tensors"
    assert (
        f"moved: {len(expected.moved)} {noun} changed memory or offset, {moved_bytes:,} B"
        in different.stdout
    )
    # By default the moves are summed per pair of memories; --all lists each tensor.
    for moves in expected.moves_by_memory():
        assert re.search(
            rf"^    mem{moves.before} +mem{moves.after}.* {moves.tensors} +{moves.size:,}$",
            different.stdout,
            re.MULTILINE,
        ), different.stdout
    for change in expected.moved:
        assert not re.search(rf"^    {change.name} ", different.stdout, re.MULTILINE)
    every = run("diff", "--all", first, other)
    assert every.returncode == 1, every.stderr
    for change in expected.moved:
        assert re.search(rf"^    {change.name} ", every.stdout, re.MULTILINE)
    assert (
        "memory 1 differs: --- mem1: 1,024 B, alignment 16; +++ mem1: 2,048 B" in different.stdout
    )
    usage = report_rows(run(small_csv, "--memory", larger, "-q").stdout)["mem1"][3]
    assert re.search(rf"^mem1 +[0-9,]+ +{usage} ", different.stdout, re.MULTILINE)


def test_moves_are_summed_per_pair_of_memories() -> None:
    before = small_table([0, 16, 32, 48], [1, 1, 1, 1])
    after = small_table([0, 0, 16, 32], [1, 2, 2, 1])  # t3 moves down in memory 1
    offset_only, down = diff_plans(before, TWO, after, TWO).moves_by_memory()
    size = int(after.sizes[0])
    assert offset_only == MemoryMoves(before=1, after=1, tensors=1, size=size)
    assert down == MemoryMoves(before=1, after=2, tensors=2, size=2 * size)


def test_cli_diff_brief_and_plan_csvs(small_csv: Path, tmp_path: Path) -> None:
    """-q prints one line when the plans differ and nothing when not, as diff -q does; a
    plan CSV (which lists no memories) compares by its tensors, its memories taken from
    the other plan."""
    plan_json, plan_csv, other = tmp_path / "a.json", tmp_path / "a.csv", tmp_path / "b.json"
    for path, memory in ((plan_json, "1KiB:16,1MiB:64"), (plan_csv, "1KiB:16,1MiB:64"),
                         (other, "2KiB:16,1MiB:64")):  # fmt: skip
        assert run(small_csv, "--memory", memory, "--out", path).returncode == 0
    same = run("diff", "-q", plan_json, plan_csv)
    assert (same.returncode, same.stdout) == (0, "")
    assert "plans identical (12 tensors)" in run("diff", plan_csv, plan_json).stdout
    brief = run("diff", "--quiet", plan_csv, other)
    assert brief.returncode == 1
    assert brief.stdout == f"plans {plan_csv} and {other} differ\n"
    refused = run("diff", plan_json, small_csv.with_suffix(".txt"))
    assert refused.returncode == 2
    assert "diff compares plan files, .json or .csv" in refused.stderr
