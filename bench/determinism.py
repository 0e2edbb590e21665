"""Same input, same plan: ``best``'s plans hashed on the five cases of issue 43, and the
wall time of default ``best`` calls on MiniMalloc's challenging instances A-K.

    python bench/determinism.py                    # the five cases, hashed
    python bench/determinism.py --threads 1        # the same with one thread
    python bench/determinism.py --times --repeat 3 # default best on A-K, median seconds

Run it on a quiet machine and again beside two busy processes (``sh -c 'while :; do :;
done' &`` twice): with the default options, the hashes must not change (docs/best.md,
"Budget, threads, determinism"). The cases: D and J on one memory as large as all their
buffers (alignment 1), and F, H and resnet50 with memory 1 at a quarter of their
peak-live bound (alignment 16) above an unbounded memory 2 (alignment 64), as
``bench/capacity.py``'s quarter table. ``--times`` plans A-K on one memory, as
``bench/quality.py`` does, and prints the median of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from workloads import INSTANCES

import cadence_memplan
from cadence_memplan.io.minimalloc import read_minimalloc_csv
from cadence_memplan.stats import peak_live_bytes

UNBOUNDED = 1 << 40
ONE_MEMORY_CASES = ("challenging/D.1048576", "challenging/J.1048576")
QUARTER_CASES = ("challenging/F.1048576", "challenging/H.1048576", "real/resnet50")


def _arrays(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    instance = read_minimalloc_csv(Path(INSTANCES) / f"{name}.csv")
    return instance.starts, instance.ends, instance.sizes


def _memories(arrays: tuple[np.ndarray, ...], quarter: bool) -> tuple[list[int], list[int]]:
    """One memory as large as all buffers, or memory 1 at a quarter of the bound."""
    starts, ends, sizes = arrays
    if not quarter:
        return [int(sizes.sum())], [1]
    return [peak_live_bytes(starts, ends, sizes) // 4, UNBOUNDED], [16, 64]


def _digest(result: cadence_memplan.PlanResult) -> str:
    digest = hashlib.sha256()
    for array in (result.mem_ids, result.offsets, result.bufsizes):
        digest.update(np.ascontiguousarray(array, dtype=np.int64).tobytes())
    return digest.hexdigest()[:16]


def hashes(threads: int) -> None:
    print(f"load average {os.getloadavg()[0]:.1f}, threads {threads or 'default'}")
    print("| case | hash | memory 1 | seconds | cut short |")
    print("| --- | --- | ---: | ---: | --- |")
    for name in ONE_MEMORY_CASES + QUARTER_CASES:
        arrays = _arrays(name)
        memories = _memories(arrays, quarter=name in QUARTER_CASES)
        began = time.perf_counter()
        result = cadence_memplan.plan(*arrays, *memories, algorithm="best", threads=threads)
        seconds = time.perf_counter() - began
        if len(memories[0]) == 1:
            memory1 = f"{int(result.bufsizes[1]):,} B"
        else:
            memory1 = f"keeps {int(arrays[2][result.mem_ids == 1].sum()):,} B"
        cut = getattr(result, "cut_short", "-")
        print(f"| {name} | {_digest(result)} | {memory1} | {seconds:.2f} | {cut} |", flush=True)


def times(repeat: int) -> None:
    print(f"load average {os.getloadavg()[0]:.1f}; median of {repeat} runs")
    print("| instance | seconds (median) | bufsize | proved |")
    print("| --- | ---: | ---: | --- |")
    for path in sorted((Path(INSTANCES) / "challenging").glob("*.csv")):
        name = f"challenging/{path.stem}"
        arrays = _arrays(name)
        memories = _memories(arrays, quarter=False)
        seconds = []
        for _ in range(repeat):
            began = time.perf_counter()
            result = cadence_memplan.plan(*arrays, *memories, algorithm="best")
            seconds.append(time.perf_counter() - began)
        print(
            f"| {path.stem} | {statistics.median(seconds):.2f} | {int(result.bufsizes[1]):,}"
            f" | {result.proved_optimal} |",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=0, help="threads for best (0: default)")
    parser.add_argument("--times", action="store_true", help="time default best on A-K")
    parser.add_argument("--repeat", type=int, default=1, help="runs per instance with --times")
    options = parser.parse_args(argv)
    if not (Path(INSTANCES) / "challenging").exists():
        print(f"{INSTANCES} is not present: nothing to measure", file=sys.stderr)
        return 1
    if options.times:
        times(options.repeat)
    else:
        hashes(options.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
