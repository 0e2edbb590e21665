"""Print the plan-quality table: how close upstream's two placers, ``algorithm="best"`` and
omnimalloc's SuperMalloc come to the peak-live lower bound, in one run.

    python bench/quality.py                 # --markdown docs/quality-table.md to keep it

One memory (MiniMalloc's instances, alignment 1, a memory as large as all buffers): each
placer's bufsize over the peak-live bound, the most bytes alive at once, which no plan can
go below; whether ``best`` proved its plan optimal (``PlanResult.proved_optimal``), the
time it took, and when it first held a plan within 1% of the bound
(``PlanResult.progress``). ``best`` and SuperMalloc get the same budget: ``--budget-ms``
(default 1000) on the challenging set, ``best``'s default on the real instances.
SuperMalloc (``pip install omnimalloc==1.0.0``, the ``bench`` extra) runs with its
default threads; without it, its columns say "not installed". It is not run above
``--supermalloc-max-tensors`` (its overlap lists take gigabytes there).

Hierarchies (the real instances with a fast memory of a quarter of their bound, exported
encoders on Cadence's 256 KiB/16, 4 MiB/64, 1 GiB/64): the tensor bytes each placer leaves
outside memory 1, which ``best`` minimises first, with ``best``'s default budget.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import platform
import sys
import time
from typing import Any

import numpy as np
from workloads import INSTANCES, instance_workloads, model_workloads

import cadence_memplan
from cadence_memplan.api import DEFAULT_BUDGET_MS
from cadence_memplan.io.minimalloc import read_minimalloc_csv
from cadence_memplan.stats import peak_live_bytes

__all__ = ["main"]

PLACERS = ("position", "heuristic", "best")
HAVE_SUPERMALLOC = importlib.util.find_spec("omnimalloc") is not None


def timed_plan(
    arrays: tuple[Any, ...],
    memory: tuple[list[int], list[int]],
    algorithm: str,
    budget_ms: float = DEFAULT_BUDGET_MS,
) -> tuple[cadence_memplan.PlanResult, float]:
    began = time.perf_counter()
    result = cadence_memplan.plan(*arrays, *memory, algorithm=algorithm, budget_ms=budget_ms)  # type: ignore[arg-type]
    seconds = time.perf_counter() - began
    assert cadence_memplan.validate(*arrays, result.mem_ids, result.offsets, *memory) is None
    return result, seconds


def supermalloc_bufsize(arrays: tuple[Any, ...], budget_ms: float) -> tuple[int, float]:
    """SuperMalloc's peak for one memory and the seconds it took; lifetimes half-open."""
    import omnimalloc
    from omnimalloc.allocators.supermalloc import SupermallocAllocator

    starts, ends, sizes = (np.asarray(a).tolist() for a in arrays)
    allocations = tuple(
        omnimalloc.Allocation(id=i, size=size, start=start, end=end + 1)
        for i, (start, end, size) in enumerate(zip(starts, ends, sizes, strict=True))
    )
    pool = omnimalloc.Pool(id="pool", allocations=allocations)
    began = time.perf_counter()
    placed = omnimalloc.allocate(
        pool, allocator=SupermallocAllocator(timeout=budget_ms / 1e3), validate=True
    )
    seconds = time.perf_counter() - began
    return max(a.offset + a.size for a in placed.allocations), seconds


def first_within(result: cadence_memplan.PlanResult, bound: int, slack: float) -> str:
    """When best first held a plan within `slack` of the bound, from its progress."""
    for elapsed_ms, bufsize in result.progress or ():
        if bufsize <= bound * (1 + slack):
            return f"{elapsed_ms:,.0f} ms"
    return "never"


def one_memory_rows(
    folder: str, budget_ms: float, supermalloc_max_tensors: int
) -> tuple[list[list[str]], dict[str, list[float]]]:
    rows = []
    ratios: dict[str, list[float]] = {name: [] for name in (*PLACERS, "supermalloc")}
    for path in sorted((INSTANCES / folder).glob("*.csv")):
        instance = read_minimalloc_csv(path)
        arrays = tuple(instance[1:])
        bound = peak_live_bytes(*arrays)
        memory = ([int(instance.sizes.sum())], [1])
        cells = []
        plans = {placer: timed_plan(arrays, memory, placer, budget_ms) for placer in PLACERS}
        for placer, (result, _) in plans.items():
            ratio = int(result.bufsizes[1]) / bound
            ratios[placer].append(ratio)
            cells.append(f"{ratio:.4f}")
        best, seconds = plans["best"]
        cells += [
            "yes" if best.proved_optimal else "no",
            f"{seconds * 1e3:,.0f} ms",
            first_within(best, bound, 0.01),
        ]
        if not HAVE_SUPERMALLOC:
            cells += ["not installed", ""]
        elif len(instance.sizes) > supermalloc_max_tensors:
            cells += ["not run", ""]
        else:
            peak, their_seconds = supermalloc_bufsize(arrays, budget_ms)
            ratios["supermalloc"].append(peak / bound)
            cells += [f"{peak / bound:.4f}", f"{their_seconds * 1e3:,.0f} ms"]
        rows.append([f"{folder}/{path.stem}", f"{len(instance.sizes):,}", f"{bound:,}", *cells])
        print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    if rows:

        def mean(values: list[float]) -> str:
            return f"{math.exp(float(np.mean(np.log(values)))):.4f}" if values else ""

        means = [mean(ratios[p]) for p in PLACERS]
        proved = sum(row[6] == "yes" for row in rows)
        rows.append(
            [
                f"{folder}: geometric mean",
                "",
                "",
                *means,
                f"{proved} of {len(rows)}",
                "",
                "",
                mean(ratios["supermalloc"]) if len(ratios["supermalloc"]) == len(rows) else "",
                "",
            ]
        )
    return rows, ratios


def hierarchy_rows(with_models: bool) -> list[list[str]]:
    """The real instances on bench/workloads.py's hierarchy for them (a fast memory of a
    quarter of the peak-live bound, then a huge one), the encoders on Cadence's."""
    workloads = list(instance_workloads(("real",)))
    if with_models:
        workloads += list(model_workloads((4, 16)))
    rows = []
    for workload in workloads:
        memory = (workload.memory_sizes, workload.alignments)
        cells = []
        for placer in PLACERS:
            result, seconds = timed_plan(workload.arrays, memory, placer)
            outside = int(workload.arrays[2][result.mem_ids > 1].sum())
            cells.append(f"{outside:,}")
        rows.append(
            [workload.name, f"{workload.tensor_count:,}", *cells, f"{seconds * 1e3:,.0f} ms"]
        )
    return rows


def markdown(headers: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(headers) + " |",
        "| " + " | ".join(["---"] + ["---:"] * (len(headers) - 1)) + " |",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


ONE_MEMORY_HEADERS = [
    "instance",
    "buffers",
    "peak-live bound (B)",
    "position",
    "heuristic",
    "best",
    "best proved optimal",
    "best's time",
    "best within 1% at",
    "SuperMalloc",
    "SuperMalloc's time",
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-models", action="store_true", help="skip the exported encoders")
    parser.add_argument(
        "--no-hierarchy", action="store_true", help="skip the hierarchy table altogether"
    )
    parser.add_argument(
        "--sets",
        nargs="+",
        choices=("challenging", "real"),
        default=["challenging", "real"],
        help="the one-memory sets to run (default both)",
    )
    parser.add_argument(
        "--budget-ms",
        type=float,
        default=1000.0,
        help="best's and SuperMalloc's budget on the challenging set (default 1000)",
    )
    parser.add_argument(
        "--supermalloc-max-tensors",
        type=int,
        default=20_000,
        help="run SuperMalloc only on instances of at most this many buffers",
    )
    parser.add_argument("--markdown", help="also write the tables, with the command, to this file")
    args = parser.parse_args(argv)
    if not INSTANCES.is_dir():
        sys.exit(f"error: {INSTANCES} is not present")

    rows: list[list[str]] = []
    for folder in args.sets:
        budget = args.budget_ms if folder == "challenging" else DEFAULT_BUDGET_MS
        rows += one_memory_rows(folder, budget, args.supermalloc_max_tensors)[0]
    one = markdown(ONE_MEMORY_HEADERS, rows)
    print("\n".join(one), flush=True)
    hierarchy: list[str] = []
    if not args.no_hierarchy:
        print()
        hierarchy = markdown(
            [
                "graph",
                "tensors",
                "outside memory 1: position (B)",
                "heuristic (B)",
                "best (B)",
                "best's time",
            ],
            hierarchy_rows(with_models=not args.no_models),
        )
        print("\n".join(hierarchy))
    if args.markdown:
        command = " ".join(["python", "bench/quality.py", *(argv or sys.argv[1:])])
        note = (
            f"Measured with `{command}` on {platform.machine()} Linux, Python"
            f" {platform.python_version()}, {os.cpu_count()} cores, budget"
            f" {args.budget_ms:g} ms on the challenging set and {DEFAULT_BUDGET_MS:g} ms"
            f" elsewhere{'' if HAVE_SUPERMALLOC else '; omnimalloc not installed'}."
        )
        temporary = f"{args.markdown}.tmp"
        with open(temporary, "w", encoding="utf-8") as out:
            out.write("\n".join([*one, "", *hierarchy, "", note, ""]))
        os.replace(temporary, args.markdown)


if __name__ == "__main__":
    main()
