"""What a capacity sweep of a model costs (``cadence-memplan sweep``), and where it goes.

    python bench/sweep.py [--model encoder] [--sizes 100] [--whole 10] [--profile]

Exports and lowers the model with ``to_edge`` once (as the command line does), then
times, with memory 1 stepped from 16 KiB to 1 MiB:

* ``Replanner``: ``to_executorch`` once, then each size re-runs only the planning step;
* the same with torch's ``recompile()`` left on during constraint generation (what the
  re-plan costs without that one change);
* whole lowerings: a deep copy of the edge program through ``to_executorch`` per size,
  with upstream's ``CadenceMemoryPlanning`` and with ours (``--whole`` sizes, scaled to
  ``--sizes``), which is what sweeping costs without re-planning;

checks that every re-plan equals the whole lowering at that size, and prints the ratios.
``--profile`` adds cProfile's top entries for the re-plans.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import cProfile
import dataclasses
import logging
import pstats
import time
import warnings
from collections.abc import Iterator

import executorch.backends.cadence.aot.ops_registrations  # noqa: F401  (cadence ops)
import torch
from executorch.backends.cadence.aot.memory_planning import (
    CadenceMemoryPlanning as UpstreamCadenceMemoryPlanning,
)
from executorch.exir import to_edge

import cadence_memplan.cadence.sweep as sweep_module
from cadence_memplan.analysis.sweep import parse_sweep_sizes
from cadence_memplan.cadence.lowering import lower_and_plan
from cadence_memplan.cadence.memory_planning import CadenceMemoryPlanning
from cadence_memplan.cadence.sweep import PLANNING_FAILURES, Replanner
from cadence_memplan.io import DEFAULT_MEMORY_SPEC, Memory, parse_memory_spec
from cadence_memplan.models import build_model
from cadence_memplan.request import PlanningOptions
from cadence_memplan.stats import TensorTable

__all__ = ["main"]


def configs(count: int) -> list[list[Memory]]:
    memories = parse_memory_spec(DEFAULT_MEMORY_SPEC)
    return [
        [dataclasses.replace(memories[0], size=size), *memories[1:]]
        for size in parse_sweep_sizes(f"16KiB:1MiB:{count}")
    ]


def replan_all(replanner: Replanner, memories: list[list[Memory]]) -> list[TensorTable | None]:
    tables: list[TensorTable | None] = []
    for config in memories:
        try:
            tables.append(replanner.plan(config))
        except PLANNING_FAILURES:
            tables.append(None)
    return tables


@contextlib.contextmanager
def recompiling() -> Iterator[None]:
    """The re-plan with torch's recompile() left on (the ablation)."""
    kept = sweep_module.deferred_recompile
    sweep_module.deferred_recompile = lambda graph_module: contextlib.nullcontext()  # type: ignore[assignment]
    try:
        yield
    finally:
        sweep_module.deferred_recompile = kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="encoder")
    parser.add_argument("--sizes", type=int, default=100)
    parser.add_argument("--whole", type=int, default=10, help="sizes lowered whole")
    parser.add_argument("--profile", action="store_true")
    arguments = parser.parse_args()
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)

    model, inputs = build_model(arguments.model)
    start = time.perf_counter()
    edge = to_edge(torch.export.export(model, inputs, strict=False))
    print(f"export + to_edge: {time.perf_counter() - start:.2f} s (once, shared)")
    memories = configs(arguments.sizes)

    start = time.perf_counter()
    options = PlanningOptions("position", lowering="exir")
    replanner = Replanner(copy.deepcopy(edge), memories[-1], options)
    print(f"Replanner: to_executorch once: {time.perf_counter() - start:.2f} s")
    start = time.perf_counter()
    tables = replan_all(replanner, memories)
    replan_seconds = time.perf_counter() - start
    print(f"Replanner: {len(memories)} re-plans: {replan_seconds:.3f} s")
    with recompiling():
        start = time.perf_counter()
        replan_all(replanner, memories)
        recompile_seconds = time.perf_counter() - start
    print(
        f"  with recompile() on: {recompile_seconds:.2f} s"
        f" ({recompile_seconds / replan_seconds:.0f}x the re-plans)"
    )

    step = max(1, len(memories) // arguments.whole)
    sample = list(range(0, len(memories), step))[: arguments.whole]
    for label, planner in (
        ("upstream's", UpstreamCadenceMemoryPlanning),
        ("our", CadenceMemoryPlanning),
    ):
        seconds = 0.0
        for index in sample:
            start = time.perf_counter()
            try:
                whole = lower_and_plan(copy.deepcopy(edge), planner, memories[index], options)
            except PLANNING_FAILURES:
                seconds += time.perf_counter() - start
                if tables[index] is not None:
                    raise SystemExit(f"size {index}: only the whole lowering fails") from None
                continue
            seconds += time.perf_counter() - start
            table = tables[index]
            if table is None or not table.same_plan(whole.table):
                raise SystemExit(f"size {index}: the re-plan differs from the whole lowering")
        scaled = seconds / len(sample) * len(memories)
        print(
            f"whole lowerings ({label} CadenceMemoryPlanning): {len(sample)} in {seconds:.2f} s,"
            f" {len(memories)} would take {scaled:.1f} s ({scaled / replan_seconds:.0f}x the"
            " re-plans); plans identical to the re-plans"
        )
    if arguments.profile:
        profile = cProfile.Profile()
        profile.runcall(replan_all, replanner, memories)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(15)


if __name__ == "__main__":
    main()
