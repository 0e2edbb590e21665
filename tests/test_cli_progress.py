"""Progress lines: while a step lasts, ``still STEP`` after every interval of silence
(a fake clock drives :meth:`Progress.beat`; the command line is run with
``CADENCE_MEMPLAN_PROGRESS_SECONDS`` shortened, never timed), nothing with ``--quiet``, the
same plan with and without them, and Ctrl-C after ``done`` (every output written) exits 0.
"""

from __future__ import annotations

import io
import os
import random
import re
import subprocess
from pathlib import Path

import pytest
from cli_support import CLI, MODEL_TIMEOUT, PROGRESS_LINE

from cadence_memplan.cli import main
from cadence_memplan.cli.progress import PROGRESS_SECONDS_ENV, Progress
from cadence_memplan.io import read_plan


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def fake_progress(quiet: bool = False) -> tuple[Progress, FakeClock, io.StringIO]:
    clock = FakeClock()
    # The thread waits an hour of real time: only the test's beat() calls print.
    progress = Progress(quiet, interval=3600.0, clock=clock)
    progress.stream = io.StringIO()
    return progress, clock, progress.stream


def test_a_step_is_repeated_after_each_interval_of_silence() -> None:
    progress, clock, stream = fake_progress()
    try:
        assert progress.beat() == 3600.0  # no step yet: nothing to repeat
        progress("planning 5 tensors")
        clock.now += 3599.0
        assert progress.beat() == pytest.approx(1.0)
        assert stream.getvalue().count("\n") == 1
        clock.now += 1.0
        progress.beat()
        clock.now += 3600.0
        progress.beat()
        progress("writing plan.json")
        clock.now += 3600.0
        progress.beat()
        progress.done()
        clock.now += 7200.0
        progress.beat()  # after done: nothing more
    finally:
        progress.close()
    assert stream.getvalue().splitlines() == [
        "cadence-memplan: [  0.0 s] planning 5 tensors",
        "cadence-memplan: [3600.0 s] still planning 5 tensors",
        "cadence-memplan: [7200.0 s] still planning 5 tensors",
        "cadence-memplan: [7200.0 s] writing plan.json",
        "cadence-memplan: [10800.0 s] still writing plan.json",
        "cadence-memplan: [10800.0 s] done",
    ]
    assert progress.finished


def test_quiet_prints_nothing_and_starts_no_thread() -> None:
    progress, clock, stream = fake_progress(quiet=True)
    progress("planning 5 tensors")
    clock.now += 7200.0
    progress.beat()
    progress.done()
    assert stream.getvalue() == ""
    assert progress._thread is None


def slow_csv(path: Path) -> Path:
    """A few hundred buffers, enough for best's search to take a while."""
    generator = random.Random(52)
    rows = ["id,lower,upper,size"]
    for index in range(300):
        lower = generator.randrange(200)
        rows.append(
            f"b{index},{lower},{lower + generator.randrange(1, 40)},{generator.randrange(1, 9000)}"
        )
    path.write_text("\n".join(rows) + "\n")
    return path


def run_with_interval(
    *arguments: str | Path, seconds: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, PROGRESS_SECONDS_ENV: seconds}
    return subprocess.run(
        [*CLI, *map(str, arguments)],
        capture_output=True, text=True, timeout=timeout, check=False, env=env,
    )  # fmt: skip


def test_best_search_repeats_its_step_and_plans_the_same(tmp_path: Path) -> None:
    csv = slow_csv(tmp_path / "slow.csv")
    options = ("--algo", "best", "--memory", "64KiB:16,1MiB:64", "--work", "100000")
    chatty = run_with_interval(csv, *options, "--out", tmp_path / "a.json", seconds="0.001")
    assert chatty.returncode == 0, chatty.stderr
    lines = chatty.stderr.splitlines()
    assert all(PROGRESS_LINE.match(line) for line in lines), lines
    assert any(line.endswith("] still planning 300 tensors") for line in lines)
    assert lines[-1].endswith("] done")
    quiet = run_with_interval(csv, *options, "--out", tmp_path / "b.json", "-q", seconds="0.001")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    assert read_plan(tmp_path / "a.json").same_plan(read_plan(tmp_path / "b.json"))


@pytest.mark.executorch
def test_importing_torch_is_not_silent() -> None:
    pytest.importorskip("executorch")
    result = run_with_interval("mlp", seconds="0.2", timeout=MODEL_TIMEOUT)
    assert result.returncode == 0, result.stderr
    assert re.search(r"\] still importing torch and executorch$", result.stderr, re.MULTILINE)


def test_ctrl_c_after_done_exits_0(
    small_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every output is written once "done" is said: Ctrl-C then is no interruption."""
    done = Progress.done

    def interrupted(self: Progress) -> None:
        done(self)
        raise KeyboardInterrupt

    monkeypatch.setattr(Progress, "done", interrupted)
    plan = tmp_path / "plan.json"
    for command in (
        ["plan", small_csv],
        ["size", small_csv],
        ["sweep", small_csv, "--vary", "1", "--sizes", "1KiB:4KiB:2"],
    ):
        assert main([*map(str, command), "--quiet"]) == 0, command
    assert main([str(small_csv), "--quiet", "--out", str(plan)]) == 0
    assert len(read_plan(plan)) == 12
