"""Print the performance table of exir's default planners: exir's ``greedy`` and
``BankedGreedy`` (Python) against ``cadence_memplan.exir``'s, and against the naive C++
scan; one real export's ``to_executorch``; and ``Verifier.verify_storage_reuse``.

    python bench/exir_table.py --markdown EXIR.md          # about 10 minutes
    python bench/exir_table.py --counts 1000,10000 --budget 10 --export-layers 4   # quickly

Planner rows: synthetic graphs (``cadence_memplan.synthetic``, about 32 tensors alive at
once) at each ``--counts``, then the real instances of the MiniMalloc data folder (many
tensors alive at once; skipped when the folder is absent); one uint8 TensorSpec per
tensor, alignment 1 before planning, planned at exir's alignment 16. ``banked_greedy`` plans over two banks: a fast one of
a quarter of the graph's peak-live bytes and a slow one of 1 TiB, so the fast bank fills
up and tensors spill. Columns: exir's Python; ours with ``occupancy="scan"`` (exir's loops
over shared objects and their allocations, in C++: the simplest correct port); ours (the
default, ``occupancy="auto"``); then
the C++ packing alone on the graph's arrays (``cadence_memplan.exir.records.pack_shared_objects``),
scan and ours: what is left of a TensorSpec call is reading the specs and building exir's
``MemoryAlgoResult``.
Each cell runs in a forked child (bench/table.py's ``run_cell``); exir and the naive scan
get ``--budget`` seconds per cell, and once a cell is over budget the larger graphs of the
same kind (synthetic, real) are not run for it. Every timed plan is checked with ``cadence_memplan.validate``.

The export row lowers a transformer encoder (``--export-layers``) with ``to_edge`` and
times ``to_executorch`` with exir's default memory planning and with
``cadence_memplan.exir.memory_planning_pass()`` (each on its own deep copy, rounds
alternating), the planner's own share of it, and checks the ``.pte`` bytes are equal.

The verifier rows time exir's ``Verifier.verify_storage_reuse`` and
``cadence_memplan.exir.verify_storage_reuse`` (and its all-pairs scan) on a synthetic
graph planned by greedy, at ``--verify-counts``.
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from executorch.exir import ExecutorchBackendConfig, to_edge
from executorch.exir.banked_memory_planning import Bank, BankedGreedy, TargetMemoryMap
from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, Verifier, greedy
from executorch.exir.passes import MemoryPlanningPass
from table import Cell, format_cell, format_ratio, format_seconds, run_cell
from torch.fx import Graph, GraphModule
from workloads import Workload, instance_workloads, synthetic_workloads

import cadence_memplan
import cadence_memplan.exir
from cadence_memplan.exir import records
from cadence_memplan.io.outputs import write_whole
from cadence_memplan.models import build_model
from cadence_memplan.stats import peak_live_bytes

__all__ = ["main"]

ALIGNMENT = 16
IMPLEMENTATIONS = ("exir", "naive", "ours")
# The core's packing alone, on arrays: where the time of a TensorSpec call goes.
CORE_IMPLEMENTATIONS = ("naive core", "ours core")
BUDGETED = ("exir", "naive", "naive core")
OUR_CELL_LIMIT_SECONDS = 300.0


def _empty_graph_module() -> GraphModule:
    return GraphModule(torch.nn.Module(), Graph())


def _target(workload: Workload) -> TargetMemoryMap:
    starts, ends, sizes = workload.arrays
    aligned = -(-sizes // ALIGNMENT) * ALIGNMENT
    fast = max(ALIGNMENT, peak_live_bytes(starts, ends, aligned) // 4)
    return TargetMemoryMap([Bank("fast", fast, mem_id=1), Bank("slow", 1 << 40, mem_id=2)])


def _planner(implementation: str, algorithm: str, workload: Workload) -> Callable[..., Any]:
    occupancy = "scan" if implementation == "naive" else "auto"
    if algorithm == "greedy":
        if implementation == "exir":
            return greedy
        return lambda *arguments: cadence_memplan.exir.greedy(*arguments, occupancy=occupancy)
    target = _target(workload)
    if implementation == "exir":
        return BankedGreedy(target)
    return cadence_memplan.exir.BankedGreedy(target, occupancy=occupancy)


def _check_plan(workload: Workload, result: Any) -> None:
    specs = workload.specs
    placements = [result.spec_dict[spec] for spec in specs]
    memory_sizes = [max(1, size) for size in result.bufsizes[1:]]
    problem = cadence_memplan.validate(
        *workload.arrays[:2],
        [spec.allocated_memory for spec in specs],
        [alloc.mem_id for alloc in placements],
        [alloc.mem_offset for alloc in placements],
        memory_sizes,
        [ALIGNMENT] * len(memory_sizes),
    )
    assert problem is None, f"{workload.name}: invalid plan: {problem}"


def _core_on_arrays(
    implementation: str, algorithm: str, workload: Workload
) -> tuple[Callable, ...]:
    """The C++ packing alone, on the workload's arrays (what ``cadence_memplan.exir``
    calls once it has read the specs): the rest of a TensorSpec call is marshalling."""
    starts, ends, sizes = workload.arrays
    tensors = records.exir_tensor_records(starts, ends, sizes, sizes)
    banks = None
    if algorithm == "banked_greedy":
        target_banks = _target(workload).banks
        banks = np.zeros(len(target_banks), dtype=records.BANK_DTYPE)
        for field in ("mem_id", "size", "alignment"):
            banks[field] = [getattr(bank, field) or 0 for bank in target_banks]

    def run() -> Any:
        return records.pack_shared_objects(
            tensors, alignment=ALIGNMENT, allow_overlapping_allocations=True, extra_padding=0,
            input_sizes=np.zeros(0, dtype=np.int64), banks=banks,
            occupancy="scan" if implementation == "naive core" else "auto",
        )  # fmt: skip

    def check(packing: Any) -> None:
        assert packing.error == "", packing.error
        aligned = -(-sizes // ALIGNMENT) * ALIGNMENT
        memory_sizes = [max(1, size) for size in packing.bufsizes.tolist()[1:]]
        problem = cadence_memplan.validate(
            starts, ends, aligned, packing.mem_ids, packing.offsets, memory_sizes,
            [ALIGNMENT] * len(memory_sizes),
        )  # fmt: skip
        assert problem is None, f"{workload.name}: invalid plan: {problem}"

    return (lambda: None), run, check


def prepare_planner(
    implementation: str, algorithm: str, workload: Workload
) -> tuple[Callable, ...]:
    """(setup, run, check) for bench/table.py's ``run_cell``: one call of the planner on
    the workload's specs, every round from their unplanned alignment (greedy realigns)."""
    if implementation.endswith("core"):
        return _core_on_arrays(implementation, algorithm, workload)
    planner = _planner(implementation, algorithm, workload)
    specs = workload.specs
    graph_module = _empty_graph_module()

    def setup() -> None:
        for spec in specs:
            spec.alignment = 1

    def run() -> Any:
        return planner(ALIGNMENT, specs, graph_module, None, 0)

    return setup, run, lambda result: _check_plan(workload, result)


def planner_rows(args: argparse.Namespace) -> list[str]:
    counts = tuple(int(n) for n in args.counts.split(","))
    lines = [
        (
            "| planner | graph | specs | exir (Python) | naive C++ scan | ours | ours vs exir |"
            " ours vs naive | naive core (arrays) | ours core (arrays) | core vs naive core |"
        ),
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    print(*lines, sep="\n", flush=True)
    over_budget: set[tuple[str, str, str]] = set()
    workloads = [*synthetic_workloads(counts), *instance_workloads(("real",))]
    for algorithm in ("greedy", "banked_greedy"):
        for workload in workloads:
            workload.specs  # noqa: B018 - built once in the parent; forked cells share it
            cells: dict[str, Cell] = {}
            for implementation in IMPLEMENTATIONS + CORE_IMPLEMENTATIONS:
                if (implementation, algorithm, workload.kind) in over_budget:
                    cells[implementation] = Cell(not_run=True)
                    continue
                budgeted = implementation in BUDGETED
                cell = run_cell(
                    implementation, algorithm, workload, args.repeats, args.budget,
                    args.budget if budgeted else OUR_CELL_LIMIT_SECONDS, prepare_planner,
                )  # fmt: skip
                cells[implementation] = cell
                if cell.over_budget and budgeted:
                    over_budget.add((implementation, algorithm, workload.kind))
            row = [
                algorithm, workload.name, f"{workload.tensor_count:,}",
                *(format_cell(cells[i]) for i in IMPLEMENTATIONS),
                format_ratio(cells["exir"], cells["ours"], args.budget),
                format_ratio(cells["naive"], cells["ours"], args.budget),
                *(format_cell(cells[i]) for i in CORE_IMPLEMENTATIONS),
                format_ratio(cells["naive core"], cells["ours core"], args.budget),
            ]  # fmt: skip
            lines.append("| " + " | ".join(row) + " |")
            print(lines[-1], flush=True)
    return lines


# --------------------------------------------------------------------------- export


class TimedAlgorithm:
    """An algorithm of the suite, timed (all its calls); the suite reads its ``__name__``.
    ``specs``: what the last call planned."""

    def __init__(self, algorithm: Callable[..., Any], name: str | None = None) -> None:
        self.algorithm = algorithm
        self.__name__ = name or getattr(algorithm, "__name__", "algorithm")
        self.seconds = 0.0
        self.spec_count = 0
        self.specs: list[Any] = []

    def __call__(self, *arguments: Any) -> Any:
        began = time.perf_counter()
        result = self.algorithm(*arguments)
        self.seconds += time.perf_counter() - began
        self.spec_count = len(result.spec_dict)
        self.specs = list(result.spec_dict)
        return result


def export_rows(args: argparse.Namespace) -> list[str]:
    """``to_executorch`` of one encoder with exir's default planning and with ours."""
    model, inputs = build_model(
        "encoder", layers=args.export_layers, width=args.export_width, tokens=32
    )
    edge = to_edge(torch.export.export(model, inputs, strict=True))
    planners = {"exir": greedy, "ours": cadence_memplan.exir.greedy}
    totals: dict[str, list[float]] = {name: [] for name in planners}
    planning: dict[str, list[float]] = {name: [] for name in planners}
    buffers: dict[str, bytes] = {}
    spec_count = 0
    for _ in range(args.export_repeats):
        for name, algorithm in planners.items():
            timed = TimedAlgorithm(algorithm)
            # exir's default pass is this suite of [greedy]; the helper builds the same
            # suite of ours (cadence_memplan.exir.memory_planning_pass()).
            memory_planning = MemoryPlanningPass(
                memory_planning_algo=MemoryPlanningAlgorithmSuite(algo_list=[timed])
            )
            program_edge = copy.deepcopy(edge)
            began = time.perf_counter()
            program = program_edge.to_executorch(
                ExecutorchBackendConfig(memory_planning_pass=memory_planning)
            )
            totals[name].append(time.perf_counter() - began)
            planning[name].append(timed.seconds)
            buffers[name] = bytes(program.buffer)
            spec_count = timed.spec_count
    assert buffers["exir"] == buffers["ours"], "the two programs differ"
    exir_total, ours_total = (statistics.median(totals[n]) for n in planners)
    exir_plan, ours_plan = (statistics.median(planning[n]) for n in planners)
    lines = [
        (
            "| export | planned specs | to_executorch, exir's greedy | to_executorch, ours |"
            " planner: exir | planner: ours | planner: exir / ours | .pte |"
        ),
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        (
            f"| encoder, {args.export_layers} layers, width {args.export_width}, 32 tokens"
            f" | {spec_count:,} | {format_seconds(exir_total)} | {format_seconds(ours_total)}"
            f" | {format_seconds(exir_plan)} | {format_seconds(ours_plan)}"
            f" | {format_ratio(Cell(planning['exir']), Cell(planning['ours']), 0)} | identical |"
        ),
    ]
    print(*lines, sep="\n", flush=True)
    return lines


# --------------------------------------------------------------------------- verifier


def _verifier(workload: Workload) -> Verifier:
    """A verifier over the workload's specs, planned by greedy (as MemoryPlanningPass's
    suite writes them), one placeholder per spec."""
    specs = workload.specs
    for spec in specs:
        spec.alignment = 1
    MemoryPlanningAlgorithmSuite(algo_list=[cadence_memplan.exir.greedy])(
        ALIGNMENT, specs, _empty_graph_module(), None, 0
    )
    graph = Graph()
    for index, spec in enumerate(specs):
        graph.placeholder(f"t{index}").meta["spec"] = spec
    graph.output(())
    return Verifier(GraphModule(torch.nn.Module(), graph), True, True, True)


def prepare_verifier(
    implementation: str, algorithm: str, workload: Workload
) -> tuple[Callable, ...]:
    verifier = _verifier(workload)
    expected = cadence_memplan.exir.verify_storage_reuse(verifier)
    if implementation == "exir":
        run: Callable[[], int] = verifier.verify_storage_reuse
    else:
        occupancy = "scan" if implementation == "naive" else "interval"

        def run() -> int:
            return cadence_memplan.exir.verify_storage_reuse(verifier, occupancy=occupancy)

    def check(pairs: int) -> None:
        assert pairs == expected, f"{implementation}: {pairs} pairs, ours {expected}"

    return (lambda: None), run, check


def verifier_rows(args: argparse.Namespace) -> list[str]:
    counts = tuple(int(n) for n in args.verify_counts.split(","))
    lines = [
        (
            "| verify_storage_reuse | specs | exir (Python) | naive C++ (all pairs) | ours |"
            " ours vs exir | ours vs naive |"
        ),
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    print(*lines, sep="\n", flush=True)
    over_budget: set[str] = set()
    for workload in synthetic_workloads(counts):
        workload.specs  # noqa: B018
        cells: dict[str, Cell] = {}
        for implementation in IMPLEMENTATIONS:
            if implementation in over_budget:
                cells[implementation] = Cell(not_run=True)
                continue
            budgeted = implementation in BUDGETED
            cell = run_cell(
                implementation, "verify", workload, args.repeats, args.budget,
                args.budget if budgeted else OUR_CELL_LIMIT_SECONDS, prepare_verifier,
            )  # fmt: skip
            cells[implementation] = cell
            if cell.over_budget and budgeted:
                over_budget.add(implementation)
        row = [
            "valid plan", f"{workload.tensor_count:,}",
            *(format_cell(cells[i]) for i in IMPLEMENTATIONS),
            format_ratio(cells["exir"], cells["ours"], args.budget),
            format_ratio(cells["naive"], cells["ours"], args.budget),
        ]  # fmt: skip
        lines.append("| " + " | ".join(row) + " |")
        print(lines[-1], flush=True)
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="1000,10000,16000,100000", help="specs per graph")
    parser.add_argument("--verify-counts", default="1000,2000,4000")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per exir cell")
    parser.add_argument("--repeats", type=int, default=5, help="rounds per cell, at least")
    parser.add_argument("--export-layers", type=int, default=32)
    parser.add_argument("--export-width", type=int, default=64)
    parser.add_argument("--export-repeats", type=int, default=3)
    parser.add_argument("--markdown", help="also write the tables, with the command, to this file")
    args = parser.parse_args(argv)

    tables = [planner_rows(args), export_rows(args), verifier_rows(args)]
    if args.markdown:
        command = " ".join(
            ["python", "bench/exir_table.py", *(argv if argv is not None else sys.argv[1:])]
        )
        note = (
            f"Measured with `{command}` on {platform.machine()} Linux, Python"
            f" {platform.python_version()}, executorch 1.5.1, {os.cpu_count()} cores (shared"
            " with other work: timings are noisy). Median of the rounds run (at least"
            f" {args.repeats} where they fit the budget); exir's and the naive scan's cells get"
            f" {args.budget:g} s (`> budget`: the first round did not finish; `not run`: over"
            " budget at a smaller count). Ratios are median over median, the other column's"
            " time over ours (> 1: ours is faster); `> N×` is a lower bound from the budget."  # noqa: RUF001
            " Every plan timed was checked with"
            " `cadence_memplan.validate`; the export's two programs are byte for byte equal."
        )
        text = "\n\n".join("\n".join(table) for table in tables) + "\n\n" + note + "\n"
        with write_whole(args.markdown) as temporary:
            temporary.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
