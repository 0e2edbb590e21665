"""A reader that goes away (``| head``) stops only the printing: ``--out``, ``--trace`` and
the other outputs are still written whole, and are the new run's (cli/main.py's
``_ReaderMayLeave``).

The child's stdout is a pipe whose read end is closed before the child starts, so its
first write fails, every time: no race with the child's progress. The report is printed
before the outputs are written, so this fails on a command that a closed stdout ends. An
unbuffered child (``PYTHONUNBUFFERED``, or a terminal's line buffering) meets the closed
pipe at the report's first line; a buffered one only at its final flush.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest
from cli_support import CLI, run

from cadence_memplan.cli import main

STALE = '{"stale": "a previous run\'s output"}\n'
BUFFERING = {"unbuffered": {"PYTHONUNBUFFERED": "1"}, "buffered": {}}


def run_with_closed_stdout(
    *arguments: str | Path, buffering: str, stderr_too: bool = False
) -> subprocess.CompletedProcess[str]:
    """``cadence-memplan ARGUMENTS | head -0``, deterministically: stdout (and stderr too,
    as ``2>&1 | head``, if ``stderr_too``) is a pipe nobody reads. stderr is captured
    otherwise."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    environment.update(BUFFERING[buffering])
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the child writes anything
    try:
        return subprocess.run(
            [*CLI, *map(str, arguments)], stdout=write_end,
            stderr=write_end if stderr_too else subprocess.PIPE, text=True, env=environment,
            timeout=60, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)


def plan_without_timings(path: Path) -> dict[str, object]:
    """A plan file's content but its timings, which differ from run to run."""
    plan = json.loads(path.read_text())
    del plan["timings_seconds"]
    return dict(plan)


def temporary_files(folder: Path) -> list[str]:
    return [path.name for path in folder.iterdir() if ".partial-" in path.name]


@pytest.mark.parametrize("buffering", BUFFERING)
def test_plan_writes_its_outputs_when_stdout_is_closed(
    small_csv: Path, tmp_path: Path, buffering: str
) -> None:
    options = [small_csv, "--memory", "4KiB:16,1MiB:64", "--out-minimalloc",
               tmp_path / "solution.csv"]  # fmt: skip
    reference = run(*options, "--out", tmp_path / "ref.json", "--trace",
                    tmp_path / "ref-trace.json", "-q")  # fmt: skip
    assert reference.returncode == 0, reference.stderr
    for stale in ("plan.json", "trace.json"):
        (tmp_path / stale).write_text(STALE)
    for solution in ("solution-mem1.csv", "solution-mem2.csv"):
        (tmp_path / solution).unlink()  # written again below, or missing

    result = run_with_closed_stdout(
        *options, "--out", tmp_path / "plan.json", "--trace", tmp_path / "trace.json",
        "--quiet", buffering=buffering,
    )  # fmt: skip

    assert (result.returncode, result.stderr) == (141, "")
    assert STALE not in (tmp_path / "plan.json").read_text() + (tmp_path / "trace.json").read_text()
    assert plan_without_timings(tmp_path / "plan.json") == plan_without_timings(
        tmp_path / "ref.json"
    )
    assert (tmp_path / "trace.json").read_bytes() == (tmp_path / "ref-trace.json").read_bytes()
    for solution in ("solution-mem1.csv", "solution-mem2.csv"):
        assert (tmp_path / solution).read_text().startswith("id,lower,upper,size,offset\n")
    assert temporary_files(tmp_path) == []


@pytest.mark.parametrize("buffering", BUFFERING)
def test_sweep_writes_its_outputs_when_stdout_is_closed(
    small_csv: Path, tmp_path: Path, buffering: str
) -> None:
    options = ["sweep", small_csv, "--memory", "fast=1KiB:16,far=1MiB:64", "--vary", "fast",
               "--sizes", "1KiB:16KiB:16"]  # fmt: skip
    reference = run(*options, "--out", tmp_path / "ref.csv", "-q")
    assert reference.returncode == 0, reference.stderr
    (tmp_path / "sweep.csv").write_text(STALE)

    result = run_with_closed_stdout(
        *options, "--out", tmp_path / "sweep.csv", "--quiet", buffering=buffering
    )

    assert (result.returncode, result.stderr) == (141, "")
    assert (tmp_path / "sweep.csv").read_text() == (tmp_path / "ref.csv").read_text()
    assert len((tmp_path / "sweep.csv").read_text().splitlines()) == 1 + 16
    assert temporary_files(tmp_path) == []


def test_outputs_are_written_when_stderr_is_closed_too(small_csv: Path, tmp_path: Path) -> None:
    """``2>&1 | head``: the progress lines meet the closed pipe first, before the plan."""
    (tmp_path / "plan.json").write_text(STALE)
    result = run_with_closed_stdout(
        small_csv, "--out", tmp_path / "plan.json", buffering="unbuffered", stderr_too=True
    )
    assert result.returncode == 141
    assert (tmp_path / "plan.json").read_text() != STALE
    assert len(json.loads((tmp_path / "plan.json").read_text())["tensors"]) == 12


class ClosedPipe(io.StringIO):
    """A stdout whose reader has gone: every write fails as a closed pipe does."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_an_output_that_cannot_be_written_is_an_error_also_when_stdout_is_closed(
    small_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """The error says so on stderr with exit 1, not the quiet 141 of a closed stdout, and
    neither output is put in place."""
    from cadence_memplan.cli import plan_command

    def disk_full(path: Path, *arguments: object, **options: object) -> None:
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(plan_command, "write_trace", disk_full)
    monkeypatch.setattr("sys.stdout", ClosedPipe())
    plan, trace = tmp_path / "plan.json", tmp_path / "trace.json"
    status = main([str(small_csv), "--quiet", "--out", str(plan), "--trace", str(trace)])
    assert status == 1
    assert capsys.readouterr().err == (
        f"cadence-memplan: error: cannot write {trace}: No space left on device\n"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["small.csv"]


def test_help_into_a_closed_pipe_is_quiet() -> None:
    result = run_with_closed_stdout("plan", "--help", buffering="unbuffered")
    assert (result.returncode, result.stderr) == (141, "")
