"""Print the plan-quality table: how close upstream's two placers, ``algorithm="best"`` and
omnimalloc's SuperMalloc come to the peak-live lower bound, in one run.

    python bench/quality.py                 # --markdown docs/quality-table.md to keep it

One memory (MiniMalloc's instances, alignment 1, a memory as large as all buffers): each
placer's bufsize over the peak-live bound, the most bytes alive at once, which no plan can
go below; whether ``best`` proved its plan optimal (``PlanResult.proved_optimal``), the
time it took, and when it first held a plan within 1% of the bound
(``PlanResult.progress``). ``best`` and SuperMalloc get the same time on the challenging,
tiling and pinwheel sets: ``--budget-ms`` (default 1000), ``best``'s optional wall-clock
cap (``budget_ms``, with no limit on its work) and SuperMalloc's timeout. That is the one
place the table uses ``best``'s cap, for a comparison at equal time; the plans of those
rows may then vary from run to run. On the real instances ``best`` runs at its default,
deterministic work budget, and SuperMalloc gets 5 s.
SuperMalloc (``pip install omnimalloc==1.0.0``, the ``bench`` extra) runs with its
default threads; without it, its columns say "not installed". It is not run above
``--supermalloc-max-tensors`` (its overlap lists take gigabytes there).

Cut rectangles (``--sets tiling pinwheel``): omnimalloc's own generators cut a 1 MiB x
1,048,576-step rectangle into buffers, ``TilingSource`` by guillotine cuts and
``PinwheelSource`` by pinwheels (five pieces no straight cut crosses), default arguments,
53 to 745 buffers. The pieces tile the rectangle, so its 1,048,576 B is the optimum, known
by construction, and equal to the peak-live bound (checked); their buffers are shuffled
(``cut_rectangle_instances`` says why). Same columns and budget as the challenging set;
skipped with a note when omnimalloc is not installed. Not in the default run: ``best``
spends its whole budget on the 15 of the 24 it does not prove and SuperMalloc on all but
two, so they would add about 40 s to a default run of about 100 s (140 s with them).

Hierarchies (the real instances with a fast memory of a quarter of their bound, exported
encoders on Cadence's 256 KiB/16, 4 MiB/64, 1 GiB/64): the tensor bytes each placer leaves
outside memory 1, which ``best`` minimises first, with ``best``'s default budget of work.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import platform
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from workloads import INSTANCES, instance_workloads, model_workloads

import cadence_memplan
from cadence_memplan import Algorithm
from cadence_memplan.api import DEFAULT_WORK_BUDGET
from cadence_memplan.io.minimalloc import read_minimalloc_csv
from cadence_memplan.io.outputs import write_whole
from cadence_memplan.stats import peak_live_bytes

if TYPE_CHECKING:
    from omnimalloc import Allocation

__all__ = ["main"]

PLACERS: tuple[Algorithm, ...] = ("position", "heuristic", "best")
# omnimalloc gives the SuperMalloc column and generates the cut-rectangle sets.
HAVE_OMNIMALLOC = importlib.util.find_spec("omnimalloc") is not None

# Starts, inclusive ends and sizes, the first arguments of plan and validate.
Arrays = tuple[npt.NDArray[np.int64], ...]
# MiniMalloc's instance folders under INSTANCES, and the sets omnimalloc cuts out of a
# rectangle with the buffer counts of each: a pinwheel turns one piece into five, so a
# pinwheel set has 1 + 4m pieces, the nearest to the tiling counts.
MINIMALLOC_SETS = ("challenging", "real")
CUT_SET_COUNTS = {
    "tiling": (56, 80, 110, 150, 190, 240, 300, 370, 450, 540, 640, 745),
    "pinwheel": (53, 77, 109, 149, 189, 237, 297, 369, 449, 537, 637, 745),
}


# best's work budget under a wall-clock cap: no limit of its own.
UNLIMITED_WORK = 1 << 62


def timed_plan(
    arrays: Arrays,
    memory: tuple[list[int], list[int]],
    algorithm: Algorithm,
    cap_ms: float | None = None,
) -> tuple[cadence_memplan.PlanResult, float]:
    """The plan and its seconds: ``best`` at its default work budget, or with no limit on
    its work but ``cap_ms`` of wall-clock time."""
    starts, ends, sizes = arrays
    capped = algorithm == "best" and cap_ms is not None
    began = time.perf_counter()
    result = cadence_memplan.plan(
        starts,
        ends,
        sizes,
        *memory,
        algorithm=algorithm,
        work_budget=UNLIMITED_WORK if capped else None,
        budget_ms=cap_ms if capped else None,
    )
    seconds = time.perf_counter() - began
    placement = (result.mem_ids, result.offsets)
    assert cadence_memplan.validate(starts, ends, sizes, *placement, *memory) is None
    return result, seconds


def supermalloc_bufsize(arrays: Arrays, timeout_ms: float) -> tuple[int, float]:
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
        pool, allocator=SupermallocAllocator(timeout=timeout_ms / 1e3), validate=True
    )
    seconds = time.perf_counter() - began
    return placed.size, seconds


def minimalloc_instances(folder: str) -> Iterator[tuple[str, Arrays]]:
    """The CSV files of one folder of MiniMalloc's instances, named like challenging/A.1048576."""
    for path in sorted((INSTANCES / folder).glob("*.csv")):
        instance = read_minimalloc_csv(path)
        yield f"{folder}/{path.stem}", (instance.starts, instance.ends, instance.sizes)


def inclusive_arrays(allocations: Sequence[Allocation]) -> Arrays:
    """omnimalloc's allocations as starts, inclusive ends and sizes; theirs end half-open."""
    starts, ends, sizes = (
        np.array(column, dtype=np.int64)
        for column in zip(*((a.start, a.end, a.size) for a in allocations), strict=True)
    )
    return starts, ends - 1, sizes


def cut_rectangle_instances(set_name: str) -> Iterator[tuple[str, Arrays]]:
    """omnimalloc's rectangles cut into CUT_SET_COUNTS[set_name] buffers, named like
    tiling/300, each checked to have its known optimum at the peak-live bound, which the
    table's ratios divide by.

    The buffers are shuffled (a fixed seed per count): the generator lists the pieces in
    the order it cut them, and a greedy pass in that order rebuilds the rectangle, so a
    solver that tries the input order (SuperMalloc's portfolio does) would read the
    optimum off the order instead of finding it."""
    from omnimalloc.benchmark.sources import PinwheelSource, TilingSource

    source = TilingSource() if set_name == "tiling" else PinwheelSource()
    for count in CUT_SET_COUNTS[set_name]:
        order = np.random.default_rng(count).permutation(count)
        arrays = tuple(column[order] for column in inclusive_arrays(source.get_allocations(count)))
        optimum, bound = source.get_known_optimum(count), peak_live_bytes(*arrays)
        assert optimum == bound, f"{set_name}/{count}: optimum {optimum}, peak-live bound {bound}"
        yield f"{set_name}/{count}", arrays


def first_within(result: cadence_memplan.PlanResult, bound: int, slack: float) -> str:
    """When best first held a plan within `slack` of the bound, from its progress."""
    for elapsed_ms, bufsize in result.progress or ():
        if bufsize <= bound * (1 + slack):
            return f"{elapsed_ms:,.0f} ms"
    return "never"


def one_memory_rows(
    set_name: str,
    instances: Iterable[tuple[str, Arrays]],
    cap_ms: float | None,
    timeout_ms: float,
    supermalloc_max_tensors: int,
) -> tuple[list[list[str]], dict[str, list[float]]]:
    """A row per named instance, planned in one memory as large as all its buffers, then
    the set's geometric means."""
    rows = []
    ratios: dict[str, list[float]] = {name: [] for name in (*PLACERS, "supermalloc")}
    for name, arrays in instances:
        buffer_count = len(arrays[0])
        bound = peak_live_bytes(*arrays)
        memory = ([int(arrays[2].sum())], [1])
        cells = []
        plans = {placer: timed_plan(arrays, memory, placer, cap_ms) for placer in PLACERS}
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
        if not HAVE_OMNIMALLOC:
            cells += ["not installed", ""]
        elif buffer_count > supermalloc_max_tensors:
            cells += ["not run", ""]
        else:
            peak, their_seconds = supermalloc_bufsize(arrays, timeout_ms)
            ratios["supermalloc"].append(peak / bound)
            cells += [f"{peak / bound:.4f}", f"{their_seconds * 1e3:,.0f} ms"]
        rows.append([name, f"{buffer_count:,}", f"{bound:,}", *cells])
        print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    if rows:

        def mean(values: list[float]) -> str:
            return f"{math.exp(float(np.mean(np.log(values)))):.4f}" if values else ""

        means = [mean(ratios[p]) for p in PLACERS]
        proved = sum(row[6] == "yes" for row in rows)
        rows.append(
            [
                f"{set_name}: geometric mean",
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
        choices=(*MINIMALLOC_SETS, *CUT_SET_COUNTS),
        default=list(MINIMALLOC_SETS),
        help="the one-memory sets to run (default challenging and real)",
    )
    parser.add_argument(
        "--budget-ms",
        type=float,
        default=1000.0,
        help="best's wall-clock cap and SuperMalloc's timeout on the challenging, tiling and"
        " pinwheel sets (default 1000)",
    )
    parser.add_argument(
        "--supermalloc-max-tensors",
        type=int,
        default=20_000,
        help="run SuperMalloc only on instances of at most this many buffers",
    )
    parser.add_argument("--markdown", help="also write the tables, with the command, to this file")
    args = parser.parse_args(argv)
    # The hierarchy table plans the real instances too; the cut rectangles need no files.
    needs_instances = not args.no_hierarchy or any(s in MINIMALLOC_SETS for s in args.sets)
    if needs_instances and not INSTANCES.is_dir():
        sys.exit(f"error: {INSTANCES} is not present")

    rows: list[list[str]] = []
    for set_name in args.sets:
        if set_name in MINIMALLOC_SETS:
            instances = minimalloc_instances(set_name)
        elif HAVE_OMNIMALLOC:
            instances = cut_rectangle_instances(set_name)
        else:
            print(f"{set_name}: skipped, omnimalloc is not installed", file=sys.stderr)
            continue
        real = set_name == "real"
        cap = None if real else args.budget_ms
        timeout = 5000.0 if real else args.budget_ms
        rows += one_memory_rows(set_name, instances, cap, timeout, args.supermalloc_max_tensors)[0]
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
        budgets = [
            f"best's default work ({DEFAULT_WORK_BUDGET:,} units) on {name}"
            if name == "real"
            else f"{args.budget_ms:g} ms on {name}"
            for name in args.sets
        ]
        if not args.no_hierarchy:
            budgets.append("the default work on the hierarchies")
        note = (
            f"Measured with `{command}` on {platform.machine()} Linux, Python"
            f" {platform.python_version()}, {os.cpu_count()} cores, budget {', '.join(budgets)}"
            f"{'' if HAVE_OMNIMALLOC else '; omnimalloc not installed'}."
        )
        with write_whole(args.markdown) as temporary:
            temporary.write_text("\n".join([*one, "", *hierarchy, "", note, ""]), encoding="utf-8")


if __name__ == "__main__":
    main()
