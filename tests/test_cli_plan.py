"""``cadence-memplan plan`` on CSV and synthetic inputs, run as ``python -m cadence_memplan``
in a subprocess: the report and its numbers, plan files read back, ``--compare``, progress
on stderr and ``--quiet``, a reader that goes away early, ``--help``'s defaults,
``--list-models``, CSV files as spreadsheets save them, and one of a thing in the singular.

Numpy only. The command line's other concerns have files of their own: memories
(test_cli_memories.py), errors (test_cli_errors.py), outputs (test_cli_outputs.py),
``best`` (test_cli_best.py) and model runs (test_cli_models.py).
"""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cases import PLANNING_INSTANCES
from cli_support import CLI, PROGRESS_LINE, SMALL_CSV, TWO_MEMORIES, expected_plan, run

import cadence_memplan
from cadence_memplan import reference
from cadence_memplan.cli.main import DEFAULT_ALGORITHM
from cadence_memplan.io import DEFAULT_MEMORY_SPEC, read_minimalloc_csv, read_plan


@pytest.mark.parametrize("algorithm", ["position", "heuristic"])
def test_csv_table_and_round_trips(small_csv: Path, tmp_path: Path, algorithm: str) -> None:
    plans = {}
    for suffix in ("json", "csv"):
        out = tmp_path / f"plan.{suffix}"
        result = run(small_csv, "--memory", TWO_MEMORIES, "--algo", algorithm, "--out", out)
        assert result.returncode == 0, result.stderr
        assert "peak usage" in result.stdout
        assert "peak live of its tensors" in result.stdout
        assert f"12 tensors planned with {algorithm!r}" in result.stdout
        assert "overall peak:" in result.stdout
        assert "planning time: placer" in result.stdout
        assert "plan check: valid" in result.stdout
        plans[suffix] = read_plan(out)

    assert plans["json"].same_plan(plans["csv"])
    expected = expected_plan(small_csv, TWO_MEMORIES, algorithm)
    instance = read_minimalloc_csv(small_csv)
    loaded = plans["json"]
    assert list(loaded.labels) == instance.ids.tolist()
    np.testing.assert_array_equal(loaded.mem_ids, expected.mem_ids)
    np.testing.assert_array_equal(loaded.offsets, expected.offsets)
    np.testing.assert_array_equal(loaded.sizes, instance.sizes)
    np.testing.assert_array_equal(loaded.starts, instance.starts)
    np.testing.assert_array_equal(loaded.ends, instance.ends)
    document = json.loads((tmp_path / "plan.json").read_text())
    assert document["algorithm"] == algorithm
    assert [m["size"] for m in document["memories"]] == [4096, 1 << 20]


def test_csv_table_numbers(small_csv: Path) -> None:
    """Peak usage, tensors placed and utilisation per memory, from the plan itself."""
    result = run(small_csv, "--memory", TWO_MEMORIES)
    assert result.returncode == 0, result.stderr
    expected = expected_plan(small_csv, TWO_MEMORIES, DEFAULT_ALGORITHM)
    sizes = read_minimalloc_csv(small_csv).sizes
    rows = [
        line.split() for line in result.stdout.splitlines() if line.startswith(("mem1 ", "mem2 "))
    ]
    assert len(rows) == 2
    for mem_id, row in enumerate(rows, start=1):
        chosen = expected.mem_ids == mem_id
        peak = int((expected.offsets[chosen] + sizes[chosen]).max(initial=0))
        assert row[3] == f"{peak:,}"
        assert row[-1] == str(int(chosen.sum()))


def test_csv_compare_with_reference(small_csv: Path) -> None:
    result = run(small_csv, "--memory", TWO_MEMORIES, "--compare")
    assert result.returncode == 0, result.stderr
    assert "cadence_memplan.reference placer" in result.stdout
    assert re.search(
        r"ours [0-9.]+ [µm]?s: [0-9.,]+x (faster|slower)$", result.stdout, re.MULTILINE
    )
    assert "placements identical (12 tensors)" in result.stdout


def test_reference_and_core_agree_on_the_small_csv(small_csv: Path) -> None:
    """What --compare checks, in process: the core and the reference place alike."""
    instance = read_minimalloc_csv(small_csv)
    arguments = (instance.starts, instance.ends, instance.sizes, [4096, 1 << 20], [16, 64])
    ours = cadence_memplan.plan(*arguments, algorithm="heuristic")
    theirs = reference.plan(*arguments, algorithm="heuristic")
    assert np.array_equal(ours.mem_ids, theirs.mem_ids)
    assert np.array_equal(ours.offsets, theirs.offsets)


def test_list_models() -> None:
    result = run("--list-models")
    assert result.returncode == 0, result.stderr
    names = [line.split()[0] for line in result.stdout.splitlines()]
    assert {"encoder", "cnn", "mlp", "synthetic"} <= set(names)


@pytest.mark.skipif(not PLANNING_INSTANCES.is_dir(), reason="no shared planning instances")
def test_real_instance(tmp_path: Path) -> None:
    instance = PLANNING_INSTANCES / "challenging" / "A.1048576.csv"
    out = tmp_path / "plan.csv"
    result = run(instance, "--memory", "1MiB:1,1GiB:64", "--out", out)
    assert result.returncode == 0, result.stderr
    loaded = read_plan(out)
    assert len(loaded) == len(read_minimalloc_csv(instance).ids)


def test_progress_on_stderr_with_elapsed_time_and_quiet(small_csv: Path) -> None:
    result = run(small_csv, "--memory", TWO_MEMORIES)
    assert result.returncode == 0, result.stderr
    assert re.search(
        r"^cadence-memplan: \[\s*\d+\.\d s\] planning 12 tensors$", result.stderr, re.MULTILINE
    )
    assert re.search(r"\] done$", result.stderr, re.MULTILINE)
    assert not PROGRESS_LINE.search(result.stdout)  # the report stays clean for pipes
    quiet = run(small_csv, "--memory", TWO_MEMORIES, "--quiet")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    assert quiet.stdout.splitlines()[:4] == result.stdout.splitlines()[:4]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes and sh")
def test_stdout_closed_early_is_quiet(small_csv: Path) -> None:
    """`cadence-memplan plan X | head -1`: the reader goes away before the report."""
    child = subprocess.Popen(
        [*CLI, str(small_csv), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    child.stdout.close()  # before the child has printed anything
    _, stderr = child.communicate(timeout=60)
    assert stderr == ""
    assert child.returncode == 141


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes and sh")
def test_piped_into_head(small_csv: Path) -> None:
    command = f'"{sys.executable}" -m cadence_memplan "{small_csv}" | head -1'
    result = subprocess.run(
        ["sh", "-c", command], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.stdout == "small.csv: 12 tensors planned with 'position'\n"
    assert "Error" not in result.stderr
    assert "Traceback" not in result.stderr


def test_help_shows_every_default() -> None:
    result = run("plan", "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())  # argparse wraps lines
    assert f"(default: {DEFAULT_ALGORITHM})" in text
    assert f"(default: {DEFAULT_MEMORY_SPEC})" in text
    assert "(default: encoder)" in text
    assert text.count("(default: yes)") == 2  # --alloc-inputs, --alloc-outputs


def test_command_line_and_array_api_default_to_the_same_placer() -> None:
    default = inspect.signature(cadence_memplan.plan).parameters["algorithm"].default
    assert default == DEFAULT_ALGORITHM == "position"


def test_csv_with_a_byte_order_mark_and_comments(small_csv: Path, tmp_path: Path) -> None:
    """As Excel saves a CSV file (UTF-8 with a BOM), with a comment line too."""
    path = tmp_path / "excel.csv"
    path.write_bytes(
        b"\xef\xbb\xbf# from a spreadsheet\r\n" + SMALL_CSV.replace("\n", "\r\n").encode()
    )
    assert read_minimalloc_csv(path).ids.tolist() == read_minimalloc_csv(small_csv).ids.tolist()
    result = run(path, "--quiet")
    assert result.returncode == 0, result.stderr
    assert "12 tensors planned" in result.stdout


def test_an_empty_instance_is_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("id,lower,upper,size\n")
    result = run(path, "--quiet")
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        f"cadence-memplan: warning: {path} has a header and no buffers: there is nothing to plan\n"
    )
    # No node 0 where 0 bytes are alive: there is no node and no tensor.
    assert "overall peak: none, there are no tensors\n" in result.stdout
    assert "alive at node" not in result.stdout
    sized = run("size", path, "--quiet")
    assert sized.returncode == 0, sized.stderr
    assert "fast: no tensor has any bytes, so any size holds them all\n" in sized.stdout
    assert "0 B (0 B)" not in sized.stdout
    assert "below 0 B" not in sized.stdout


def test_minimalloc_instance_counts_its_buffers(small_csv: Path) -> None:
    """``buffer_count`` is the number of buffers (``count`` is the tuple's method)."""
    instance = read_minimalloc_csv(small_csv)
    assert instance.buffer_count == len(instance.ids) == 12


def test_report_never_rounds_to_optimal_or_full(capsys: pytest.CaptureFixture[str]) -> None:
    """usage / peak live prints 1.000x only when usage equals the peak live (the README
    calls 1.000x no gap), and "used" 100.0% only for a memory full to its last byte."""
    from cadence_memplan.cli.printing import print_report
    from cadence_memplan.io import parse_memory_spec
    from cadence_memplan.stats import TensorTable

    def report_row(offsets: list[int], memory: str) -> list[str]:
        sizes = np.array([1_000_000, 1_000_000])
        table = TensorTable(
            ["a", "b"], np.array([1, 1]), np.array(offsets), sizes, np.array([0, 1]),
            np.array([0, 1]),
        )  # fmt: skip
        print_report("t", table, parse_memory_spec(memory), "position", {})
        return capsys.readouterr().out.splitlines()[3].split()

    above = report_row([0, 16], "1000020:16")  # 16 B above the bound of 1,000,000
    assert above[4] == "99.9%"
    assert above[6] == "1.00002x"
    exact = report_row([0, 0], "1000000:16")
    assert exact[4] == "100.0%"
    assert exact[6] == "1.000x"


def test_one_of_a_thing_is_singular(tmp_path: Path) -> None:
    """ "1 tensor planned", "in 1 size", "1 plan" (not "1 tensors", "1 sizes")."""
    one = tmp_path / "one.csv"
    one.write_text("id,lower,upper,size\nonly,0,2,64\n")
    planned = run(one, "--memory", "1KiB:16", "-q")
    assert planned.returncode == 0, planned.stderr
    assert "one.csv: 1 tensor planned with 'position'" in planned.stdout
    swept = run("sweep", one, "--memory", "1KiB:16", "--vary", "1", "--sizes", "1KiB:1KiB:1", "-q")
    assert swept.returncode == 0, swept.stderr
    assert "from 1.0 KiB to 1.0 KiB in 1 size, planned" in swept.stdout
    assert "planning time: 1 plan in " in swept.stdout
