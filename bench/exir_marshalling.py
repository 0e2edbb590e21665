"""What a TensorSpec call of ``cadence_memplan.exir.greedy`` adds to the C++ packing:
reading the specs and building exir's ``MemoryAlgoResult``, per spec.

Each round times, in one process and interleaved, ``cadence_memplan.exir.greedy`` on a
synthetic graph's TensorSpecs and ``cadence_memplan.exir.records.pack_shared_objects`` on the graph's arrays (the
records greedy reads from those specs: the packing alone). Every call starts from
unplanned specs after a full collection, so none pays for the garbage of another. The
difference of the two medians, per spec, is what the TensorSpec call adds::

    python bench/exir_marshalling.py --counts 16000,100000 --repeats 21
"""

from __future__ import annotations

import argparse
import gc
import statistics
from collections.abc import Callable
from typing import Any

from exir_table import prepare_planner
from workloads import synthetic_workloads, time_once

__all__ = ["main"]


def _timed(cell: tuple[Callable, ...]) -> tuple[float, Any]:
    """One timed run of a (setup, run, check) cell, after a full collection, so that no
    call pays for the garbage of another."""
    setup, run, _ = cell

    def collected_setup() -> None:
        setup()
        gc.collect()

    return time_once(collected_setup, run)


def measure(count: int, repeats: int) -> tuple[float, float]:
    """Median seconds of greedy on TensorSpecs and of the packing alone, at ``count``."""
    workload = next(synthetic_workloads((count,)))
    call = prepare_planner("ours", "greedy", workload)
    pack = prepare_planner("ours core", "greedy", workload)
    planned = _timed(call)[1]
    packing = _timed(pack)[1]
    call[2](planned)
    pack[2](packing)
    offsets = [planned.spec_dict[spec].mem_offset for spec in workload.specs]
    assert offsets == packing.offsets.tolist(), "greedy and the packing disagree"
    calls: list[float] = []
    packs: list[float] = []
    for _ in range(repeats):  # Interleaved.
        calls.append(_timed(call)[0])
        packs.append(_timed(pack)[0])
    return statistics.median(calls), statistics.median(packs)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="16000,100000", help="specs per graph")
    parser.add_argument("--repeats", type=int, default=21, help="interleaved rounds")
    args = parser.parse_args(argv)
    print("| specs | greedy on TensorSpecs | packing alone | added | added per spec |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for count in (int(n) for n in args.counts.split(",")):
        call, pack = measure(count, args.repeats)
        added = call - pack
        print(
            f"| {count:,} | {call * 1e3:.1f} ms | {pack * 1e3:.1f} ms | {added * 1e3:.1f} ms "
            f"| {added / count * 1e6:.2f} µs |"
        )


if __name__ == "__main__":
    main()
