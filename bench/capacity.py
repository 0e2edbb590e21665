"""Tight memory: does ``best`` fit the memory a user has, and how much does it keep in it?

    python bench/capacity.py                     # every table, default work budgets
    python bench/capacity.py --tables exact      # one of: exact, overflow, quarter

Three tables, each on MiniMalloc's challenging instances A-K (and, for ``quarter``, the real
instances G_1 and resnet50), read from ../shared/data/planning-instances:

* ``exact``: one memory of exactly 1,048,576 B, alignment 1, ``work_budget=900_000`` (twice
  the default, what 10 s spent before work budgets). MiniMalloc
  fits each of A-K in it. A row says whether ``best`` returned a valid plan, its bufsize and
  the time; on failure, the error's first words.
* ``overflow``: memory 1 of 1,048,576 B plus an unbounded overflow memory, ``work_budget``
  1,800,000: the bytes ``best`` leaves outside memory 1 (0 is the target on all eleven).
* ``quarter``: memory 1 at a quarter of the instance's peak-live bound (alignment 16) plus an
  unbounded memory 2 (alignment 64), the default work budget: the bytes ``best`` keeps in memory
  1, the proved bound on what any plan keeps there (``PlanResult.kept_bound``), their ratio,
  and whether the plan is proved optimal. The geometric mean of the ratios closes the table.

Every plan is checked by the independent validator before it is counted.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import cadence_memplan
from cadence_memplan import DEFAULT_WORK_BUDGET
from cadence_memplan.io.minimalloc import read_minimalloc_csv
from cadence_memplan.stats import peak_live_bytes

INSTANCES = Path(__file__).resolve().parents[2] / "shared" / "data" / "planning-instances"
CHALLENGING = [INSTANCES / "challenging" / f"{name}.1048576.csv" for name in "ABCDEFGHIJK"]
REAL = [INSTANCES / "real" / f"{name}.csv" for name in ("G_1", "resnet50")]
MIB = 1 << 20
UNBOUNDED = 1 << 62


def arrays(path: Path) -> tuple[Any, Any, Any]:
    instance = read_minimalloc_csv(path)
    return instance.starts, instance.ends, instance.sizes


def timed(
    tensors: tuple[Any, Any, Any], sizes: list[int], alignments: list[int], work: int
) -> tuple[cadence_memplan.PlanResult | str, float]:
    began = time.perf_counter()
    try:
        result = cadence_memplan.plan(
            *tensors, sizes, alignments, algorithm="best", work_budget=work
        )
    except cadence_memplan.PlanningError as error:
        return str(error)[:70], time.perf_counter() - began
    seconds = time.perf_counter() - began
    problem = cadence_memplan.validate(*tensors, result.mem_ids, result.offsets, sizes, alignments)
    if problem is not None:
        raise AssertionError(f"invalid plan: {problem}")
    return result, seconds


def exact_table(work: int) -> None:
    print(f"## One memory of exactly 1 MiB, alignment 1, work budget {work:,}\n")
    print("| instance | plan | bufsize (B) | proved optimal | time (s) |")
    print("| --- | --- | ---: | --- | ---: |")
    planned = 0
    for path in CHALLENGING:
        result, seconds = timed(arrays(path), [MIB], [1], work)
        name = path.name.split(".")[0]
        if isinstance(result, str):
            print(f"| {name} | failed: {result} | - | - | {seconds:.2f} |")
            continue
        planned += 1
        print(
            f"| {name} | valid | {int(result.bufsizes[1]):,} | {result.proved_optimal}"
            f" | {seconds:.2f} |"
        )
    print(f"\n{planned} of {len(CHALLENGING)} planned.\n")


def overflow_table(work: int) -> None:
    print(f"## Memory 1 of 1 MiB plus an overflow memory, work budget {work:,}\n")
    print("| instance | bytes outside memory 1 | time (s) |")
    print("| --- | ---: | ---: |")
    inside = 0
    for path in CHALLENGING:
        tensors = arrays(path)
        result, seconds = timed(tensors, [MIB, UNBOUNDED], [1, 1], work)
        name = path.name.split(".")[0]
        if isinstance(result, str):
            print(f"| {name} | failed: {result} | {seconds:.2f} |")
            continue
        outside = int(np.asarray(tensors[2])[result.mem_ids != 1].sum())
        inside += outside == 0
        print(f"| {name} | {outside:,} | {seconds:.2f} |")
    print(f"\n{inside} of {len(CHALLENGING)} with nothing outside memory 1.\n")


def quarter_table(work: int) -> None:
    print(
        "## Memory 1 at a quarter of the peak-live bound (alignment 16), memory 2 unbounded"
        f" (alignment 64), work budget {work:,}\n"
    )
    print(
        "| instance | kept in memory 1 (B) | proved bound (B) | kept / bound | optimal | time (s) |"
    )
    print("| --- | ---: | ---: | ---: | --- | ---: |")
    ratios = []
    for path in CHALLENGING + REAL:
        if not path.exists():
            continue
        tensors = arrays(path)
        fast = peak_live_bytes(*tensors) // 4
        result, seconds = timed(tensors, [fast, UNBOUNDED], [16, 64], work)
        name = path.name.split(".")[0]
        if isinstance(result, str):
            print(f"| {name} | failed: {result} | - | - | - | {seconds:.2f} |")
            continue
        kept = int(np.asarray(tensors[2])[result.mem_ids == 1].sum())
        bound = getattr(result, "kept_bound", None)
        ratio = "-" if not bound else f"{kept / bound:.1%}"
        if bound:
            ratios.append(kept / bound)
        print(
            f"| {name} | {kept:,} | {'-' if bound is None else f'{bound:,}'} | {ratio}"
            f" | {result.proved_optimal} | {seconds:.2f} |"
        )
    if ratios:
        mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"\nGeometric mean of kept / bound: {mean:.1%} over {len(ratios)} instances.\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--tables", default="exact,overflow,quarter", help="comma-separated: exact,overflow,quarter"
    )
    parser.add_argument("--work", type=int, default=None, help="override every work budget")
    options = parser.parse_args(argv)
    if not INSTANCES.exists():
        print(f"no instances at {INSTANCES}", file=sys.stderr)
        return 1
    tables = options.tables.split(",")
    if "exact" in tables:
        exact_table(options.work or 900_000)
    if "overflow" in tables:
        overflow_table(options.work or 1_800_000)
    if "quarter" in tables:
        quarter_table(options.work or DEFAULT_WORK_BUDGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
