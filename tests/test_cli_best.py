"""What ``--algo best`` reports on the command line: the strategy whose plan it kept and the
work it spent, its per-memory trade against upstream's position placer (held against the
plans themselves, on a CSV and on a model), an upstream plan named as such, ``--work`` and
``--budget``, and a plan where upstream's placers find none.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from cli_support import MODEL_TIMEOUT, expected_plan, run

import cadence_memplan
from cadence_memplan.io import DEFAULT_MEMORY_SPEC, read_minimalloc_csv

TRADE_MEMORIES = "3304:16,1MiB:64"  # best keeps 500 B more in mem1 and raises its peak


def best_table(stdout: str) -> dict[str, list[str]]:
    lines = stdout.splitlines()
    start = lines.index("best against upstream's position placer (mem_algo=0), per memory:") + 3
    rows = {}
    for line in lines[start:]:
        if not line.startswith("    "):
            break
        rows[line.split()[0]] = line.split()[1:]
    return rows


def test_best_names_its_strategy_and_shows_the_trade_against_position(small_csv: Path) -> None:
    result = run(small_csv, "--memory", TRADE_MEMORIES, "--algo", "best", "--quiet")
    assert result.returncode == 0, result.stderr
    best = expected_plan(small_csv, TRADE_MEMORIES, "best")
    position = expected_plan(small_csv, TRADE_MEMORIES, "position")
    assert best.strategy
    work = f"({best.work:,} of {cadence_memplan.DEFAULT_WORK_BUDGET:,} units of work)"
    assert re.search(
        rf"^best: kept the plan of the {re.escape(best.strategy)}, found in [0-9.]+ [µm]?s"
        rf" {re.escape(work)}$", result.stdout, re.MULTILINE,
    )  # fmt: skip
    assert "the same plan as" not in result.stdout
    sizes = read_minimalloc_csv(small_csv).sizes
    rows = best_table(result.stdout)
    assert list(rows) == ["mem1", "mem2"]
    raised = []
    for mem_id, name in enumerate(rows, start=1):
        usage = [int((plan.offsets + sizes)[plan.mem_ids == mem_id].max(initial=0))
                 for plan in (position, best)]  # fmt: skip
        sums = [int(sizes[plan.mem_ids == mem_id].sum()) for plan in (position, best)]
        change = [f"{new - old:+,}" if new != old else "0" for old, new in (usage, sums)]
        assert rows[name] == [f"{usage[0]:,}", f"{usage[1]:,}", change[0],
                              f"{sums[0]:,}", f"{sums[1]:,}", change[1]]  # fmt: skip
        if usage[1] > usage[0]:
            raised.append(f"{name} by {usage[1] - usage[0]} B")
    assert raised, "this hierarchy is chosen so that best raises a peak"
    kept = int(sizes[position.mem_ids == 2].sum() - sizes[best.mem_ids == 2].sum())
    assert kept > 0
    assert (
        f"best: {kept} B less outside mem1 than position (sum of sizes over the run); it raises"
        f" the peak usage of {', '.join(raised)}"
    ) in result.stdout


def test_best_says_when_it_returns_an_upstream_plan(tmp_path: Path) -> None:
    chain = tmp_path / "chain.csv"  # no plan does better than first fit here
    chain.write_text("id,lower,upper,size\na,0,3,1000\nb,1,4,3000\nc,2,6,500\n")
    result = run(chain, "--algo", "best", "--quiet")
    assert result.returncode == 0, result.stderr
    best = expected_plan(chain, DEFAULT_MEMORY_SPEC, "best")
    for algorithm in ("position", "heuristic"):
        upstream = expected_plan(chain, DEFAULT_MEMORY_SPEC, algorithm)
        assert np.array_equal(best.mem_ids, upstream.mem_ids)
        assert np.array_equal(best.offsets, upstream.offsets)
    assert (
        "best: the same plan as upstream's position and heuristic placers: no smaller plan found"
    ) in result.stdout
    assert "best against upstream's position placer" not in result.stdout


def test_best_budget(small_csv: Path) -> None:
    """--work 0 stops the search after its first candidates and --budget 0 (the wall-clock
    cap) too, and the report says which, and that the second plan depends on the
    machine."""
    best = ("--memory", TRADE_MEMORIES, "--algo", "best", "-q")
    result = run(small_csv, *best, "--work", "0")
    assert result.returncode == 0, result.stderr
    assert re.search(
        r"^best: searched for [0-9.]+ [µm]?s, its whole budget \(0 units of work; more with"
        r" --work N might find a smaller plan\), and kept the plan of the ", result.stdout,
        re.MULTILINE,
    )  # fmt: skip
    assert "depends on the machine" not in result.stdout
    capped = run(small_csv, *best, "--budget", "0")
    assert capped.returncode == 0, capped.stderr
    assert re.search(
        r"^best: stopped by the --budget cap after [0-9.]+ [µm]?s, and kept the plan of the .*;"
        r" this plan depends on the machine's speed and load$", capped.stdout, re.MULTILINE,
    )  # fmt: skip
    swept = run("sweep", small_csv, "--memory", TRADE_MEMORIES, "--vary", "1", "--sizes",
                "3KiB:4KiB:3", "--algo", "best", "--work", "5000", "-q")  # fmt: skip
    assert swept.returncode == 0, swept.stderr
    for arguments in (
        ["--budget", "10"], ["--work", "10"], ["--algo", "best", "--budget", "-1"],
        ["--algo", "best", "--work", "-1"], ["--algo", "best", "--work", "lots"],
    ):  # fmt: skip
        refused = run(small_csv, *arguments)
        assert refused.returncode == 2
        assert len(refused.stderr.splitlines()) == 1
    assert "--budget applies to --algo best only" in run(small_csv, "--budget", "10").stderr
    assert "--work applies to --algo best only" in run(small_csv, "--work", "10").stderr


def test_best_where_upstream_placers_do_not_fit(small_csv: Path) -> None:
    """6,800 B hold best's plan; upstream's placers need 7,312 B."""
    result = run(small_csv, "--memory", "6800:16", "--algo", "best", "--quiet")
    assert result.returncode == 0, result.stderr
    for name in ("position", "heuristic"):
        with pytest.raises(cadence_memplan.PlanningError):
            expected_plan(small_csv, "6800:16", name)
        assert (
            f"best: upstream's {name} placer finds no plan that fits these memories"
            in result.stdout
        )
    assert "best against upstream's position placer" not in result.stdout
    assert "plan check: valid" in result.stdout


@pytest.mark.executorch
def test_model_best_against_position(tmp_path: Path) -> None:
    """A model's best plan against a whole lowering with position: the figures of the
    report's per-memory table are those of the two plan files."""
    memories = "fast=100KiB:16,near=300KiB:64,far=1GiB:64"
    best_file, position_file = tmp_path / "best.json", tmp_path / "position.json"
    best = run("encoder", "--memory", memories, "--algo", "best", "--out", best_file, "-q",
               timeout=MODEL_TIMEOUT)  # fmt: skip
    assert best.returncode == 0, best.stderr
    position = run("encoder", "--memory", memories, "--out", position_file, "-q",
                   timeout=MODEL_TIMEOUT)  # fmt: skip
    assert position.returncode == 0, position.stderr
    plans = [json.loads(path.read_text()) for path in (position_file, best_file)]
    rows = best_table(best.stdout)
    for memory in plans[0]["memories"]:
        usage = [plan["memories"][memory["mem_id"] - 1]["peak_usage"] for plan in plans]
        sums = [
            sum(t["size"] for t in plan["tensors"]
                if t["mem_id"] == memory["mem_id"] and not t["shares_storage"])
            for plan in plans
        ]  # fmt: skip
        assert rows[memory["name"]][:2] == [f"{usage[0]:,}", f"{usage[1]:,}"]
        assert rows[memory["name"]][3:5] == [f"{sums[0]:,}", f"{sums[1]:,}"]
    assert "best: kept the plan of the " in best.stdout
