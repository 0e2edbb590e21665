"""``python -m cadence_memplan``: plan a built-in synthetic graph and summarise each memory.

A stand-in main job until the command-line interface lands: it shows what the planners
do, on a Cadence-like three-level hierarchy, in well under a second.
"""

from __future__ import annotations

import time

import numpy as np

from . import ALGORITHMS, plan, validate
from .synthetic import synthetic_graph

TENSOR_COUNT = 10_000
# (name, bytes, alignment), fastest first.
MEMORIES = (("fast", 256 << 10, 16), ("near", 4 << 20, 64), ("far", 1 << 30, 64))


def main() -> None:
    graph = synthetic_graph(TENSOR_COUNT)
    sizes = [size for _, size, _ in MEMORIES]
    alignments = [alignment for _, _, alignment in MEMORIES]
    print(
        f"{TENSOR_COUNT} synthetic tensors (about 32 alive at a time, 64 B to 1 MiB each)"
        f" on a {len(MEMORIES)}-level memory hierarchy"
    )
    for algorithm in ALGORITHMS:
        began = time.perf_counter()
        result = plan(*graph, sizes, alignments, algorithm=algorithm)
        elapsed = time.perf_counter() - began
        problem = validate(*graph, result.mem_ids, result.offsets, sizes, alignments)
        print(f"\n{algorithm}: planned in {elapsed * 1e3:.1f} ms, plan {problem or 'valid'}")
        print(f"  {'memory':<8}{'size':>14}{'align':>7}{'tensors':>9}{'bufsize':>14}{'used':>8}")
        for mem_id, (name, size, alignment) in enumerate(MEMORIES, start=1):
            placed = int(np.count_nonzero(result.mem_ids == mem_id))
            bufsize = int(result.bufsizes[mem_id])
            print(
                f"  {name:<8}{size:>14,}{alignment:>7}{placed:>9}{bufsize:>14,}"
                f"{bufsize / size:>8.1%}"
            )


if __name__ == "__main__":
    main()
