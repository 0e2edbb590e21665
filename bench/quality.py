"""Print the plan-quality table: how close upstream's two placers and ``algorithm="best"``
come to the peak-live lower bound, in one run.

    python bench/quality.py                 # --markdown QUALITY.md to keep it

One memory (MiniMalloc's instances, alignment 1, a memory as large as all buffers): each
placer's bufsize over the peak-live bound, the most bytes alive at once, which no plan can
go below. Hierarchies (the real instances with a fast memory of a quarter of their bound,
exported encoders on Cadence's 256 KiB/16, 4 MiB/64, 1 GiB/64): the tensor bytes each
placer leaves outside memory 1, which ``best`` minimises first. ``best`` runs with its
default budget; its time is measured here.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from typing import Any

import numpy as np
from workloads import INSTANCES, instance_workloads, model_workloads

import cadence_memplan
from cadence_memplan.io.minimalloc import read_minimalloc_csv
from cadence_memplan.stats import peak_live_bytes

__all__ = ["main"]

PLACERS = ("position", "heuristic", "best")


def timed_plan(arrays: tuple[Any, ...], memory: tuple[list[int], list[int]], algorithm: str):
    began = time.perf_counter()
    result = cadence_memplan.plan(*arrays, *memory, algorithm=algorithm)
    seconds = time.perf_counter() - began
    assert cadence_memplan.validate(*arrays, result.mem_ids, result.offsets, *memory) is None
    return result, seconds


def one_memory_rows(folders: list[str]) -> list[list[str]]:
    rows = []
    ratios: dict[str, list[float]] = {placer: [] for placer in PLACERS}
    for folder in folders:
        for path in sorted((INSTANCES / folder).glob("*.csv")):
            instance = read_minimalloc_csv(path)
            arrays = tuple(instance[1:])
            bound = peak_live_bytes(*arrays)
            memory = ([int(instance.sizes.sum())], [1])
            cells = []
            for placer in PLACERS:
                result, seconds = timed_plan(arrays, memory, placer)
                ratio = int(result.bufsizes[1]) / bound
                ratios[placer].append(ratio)
                cells.append(f"{ratio:.3f}")
            rows.append(
                [
                    f"{folder}/{path.stem}",
                    f"{len(instance.sizes):,}",
                    f"{bound:,}",
                    *cells,
                    f"{seconds * 1e3:,.0f} ms",
                ]
            )
        if rows:
            means = [math.exp(float(np.mean(np.log(ratios[p])))) for p in PLACERS]
            rows.append([f"{folder}: geometric mean", "", "", *(f"{m:.3f}" for m in means), ""])
            ratios = {placer: [] for placer in PLACERS}
    return rows


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-models", action="store_true", help="skip the exported encoders")
    parser.add_argument("--markdown", help="also write the tables, with the command, to this file")
    args = parser.parse_args(argv)
    if not INSTANCES.is_dir():
        sys.exit(f"error: {INSTANCES} is not present")

    one = markdown(
        [
            "instance",
            "buffers",
            "peak-live bound (B)",
            "position",
            "heuristic",
            "best",
            "best's time",
        ],
        one_memory_rows(["challenging", "real"]),
    )
    print("\n".join(one), flush=True)
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
            f" {platform.python_version()}, {os.cpu_count()} cores."
        )
        with open(args.markdown, "w", encoding="utf-8") as out:
            out.write("\n".join([*one, "", *hierarchy, "", note, ""]))


if __name__ == "__main__":
    main()
