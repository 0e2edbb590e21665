"""What a TensorSpec call of ``cadence_memplan.exir.greedy`` adds to the C++ packing:
reading the specs and building exir's ``MemoryAlgoResult``, per spec.

Each round times, in one process and interleaved, ``cadence_memplan.exir.greedy`` on a
synthetic graph's TensorSpecs and ``api.pack_shared_objects`` on the graph's arrays (the
records greedy reads from those specs: the packing alone). Every call starts from
unplanned specs after a full collection, so none pays for the garbage of another. The
difference of the two medians, per spec, is what the TensorSpec call adds::

    python bench/exir_marshalling.py --counts 16000,100000 --repeats 21
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from torch.fx import Graph, GraphModule
from torch.nn import Module
from workloads import synthetic_workloads

import cadence_memplan.exir
from cadence_memplan import api

__all__ = ["main"]

ALIGNMENT = 16


def _timed(setup: Callable[[], None], run: Callable[[], Any]) -> float:
    setup()
    gc.collect()
    start = time.perf_counter()
    result = run()
    elapsed = time.perf_counter() - start
    del result
    return elapsed


def measure(count: int, repeats: int) -> tuple[float, float]:
    """Median seconds of greedy on TensorSpecs and of the packing alone, at ``count``."""
    workload = next(synthetic_workloads((count,)))
    specs = workload.specs
    starts, ends, sizes = workload.arrays
    tensors = api.exir_tensors(len(sizes))
    tensors["lifetime"]["start"] = starts
    tensors["lifetime"]["end"] = ends
    # uint8 specs of alignment 1 before planning: exir's allocated_memory is the size.
    tensors["sort_size"] = tensors["nbytes"] = sizes
    graph_module = GraphModule(Module(), Graph())

    def unplanned() -> None:
        for spec in specs:
            spec.alignment = 1

    def call() -> Any:
        return cadence_memplan.exir.greedy(ALIGNMENT, specs, graph_module, None, 0)

    def pack() -> Any:
        return api.pack_shared_objects(
            tensors, alignment=ALIGNMENT, allow_overlapping_allocations=True, extra_padding=0,
            input_sizes=np.zeros(0, dtype=np.int64), banks=None, occupancy="auto",
        )  # fmt: skip

    expected = pack()
    planned = call()
    offsets = [planned.spec_dict[spec].mem_offset for spec in specs]
    assert offsets == expected.offsets.tolist(), "greedy and the packing disagree"
    calls, packs = [], []
    for _ in range(repeats):
        calls.append(_timed(unplanned, call))
        packs.append(_timed(lambda: None, pack))
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
