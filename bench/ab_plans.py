"""Dump plans, best's counted work and its proofs to a JSON file, to compare two builds.

    python bench/ab_plans.py OUT.json [--instances DIR] [--csv-dir DIR] [--no-models]

Run it with one build (say main's venv), then with another, and compare the two files
(``cmp``, or ``python bench/ab_plans.py --diff A.json B.json``): a refactoring of the core
or of the binding must leave every entry identical. Every plan uses a fixed work budget,
never a wall-clock cap, and one thread, so the dump is a function of the build alone. It
plans:

* MiniMalloc's challenging instances A-K (``../shared/data/planning-instances``): in their
  capacity alone and in one memory with room for any plan (``best``: fit first, and the
  exact search's descent from the placers' plan), and with an overflow memory (all three
  placers);
* the real instances with a fast memory of a quarter of their peak-live bound;
* cut rectangles (``tests/cases.py``'s ``cut_rectangle``, fixed seeds) and, with
  ``--csv-dir``, the core's own (``exact_search_driver --write-csv DIR``);
* random cases with preplaced tensors, blocklists, allowed masks and incoming offsets
  (``tests/cases.py``'s ``generate_case``), through all three placers;
* a couple of small models through the command line (``plan MODEL --algo best --out``).

Each entry holds a digest of the placement (mem_ids, offsets, memory orders) beside the
bufsizes, what ``best`` proved (lower bound, kept bound, proved optimal), its strategy,
the work it spent and the bufsizes of its progress (the times are left out). Takes about
three minutes on two busy cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from cases import (
    PLANNING_INSTANCES,
    RandomChooser,
    cut_rectangle,
    generate_case,
    plan_with_array_api,
)

import cadence_memplan
from cadence_memplan.io.minimalloc import capacity_from_filename, read_minimalloc_csv
from cadence_memplan.stats import peak_live_bytes

# best's work in every plan: enough for the exact search to prove or improve on most
# instances, small enough for the whole dump to take minutes.
WORK = 40_000
ALGORITHMS = ("position", "heuristic", "best")
MODELS = ("mlp", "cnn")
RANDOM_CASES = 150


def digest(*arrays: Any) -> str:
    hashed = hashlib.sha256()
    for array in arrays:
        hashed.update(np.ascontiguousarray(array, dtype=np.int64).tobytes())
        hashed.update(b"|")
    return hashed.hexdigest()[:24]


def summary(result: cadence_memplan.PlanResult) -> dict[str, Any]:
    """What must not change between two builds; the progress without its times."""
    return {
        "placement": digest(result.mem_ids, result.offsets, *result.memory_order),
        "bufsizes": result.bufsizes.tolist(),
        "call_bufsizes": result.call_bufsizes.tolist(),
        "occupancy": result.occupancy,
        "strategy": result.strategy,
        "proved_optimal": result.proved_optimal,
        "lower_bound": result.lower_bound,
        "kept_bound": result.kept_bound,
        "work": result.work,
        "budget_exhausted": result.budget_exhausted,
        "cut_short": result.cut_short,
        "progress": None if result.progress is None else [b for _, b in result.progress],
    }


def plan_entry(
    arrays: tuple[Any, ...], memories: tuple[list[int], list[int]], algorithm: str
) -> dict[str, Any]:
    try:
        result = cadence_memplan.plan(
            *arrays, *memories, algorithm=algorithm, work_budget=WORK, threads=1
        )
    except cadence_memplan.PlanningError as error:
        return {"error": str(error), "tensor": error.tensor_index}
    return summary(result)


def instance_entries(instances: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    if not (instances / "challenging").is_dir():
        sys.exit(f"error: {instances} holds no challenging/ instances (--instances DIR)")
    for path in sorted((instances / "challenging").glob("*.csv")):
        instance = read_minimalloc_csv(path)
        arrays = (instance.starts, instance.ends, instance.sizes)
        capacity = capacity_from_filename(path)
        yield f"challenging/{path.stem}/one", plan_entry(arrays, ([capacity], [1]), "best")
        # Room for any plan: the exact search descends from the placers' toward the bound.
        room = ([int(instance.sizes.sum())], [1])
        yield f"challenging/{path.stem}/room", plan_entry(arrays, room, "best")
        overflow = ([capacity, int(instance.sizes.sum())], [1, 1])
        for algorithm in ALGORITHMS:
            yield f"challenging/{path.stem}/{algorithm}", plan_entry(arrays, overflow, algorithm)
    for path in sorted((instances / "real").glob("*.csv")):
        instance = read_minimalloc_csv(path)
        arrays = (instance.starts, instance.ends, instance.sizes)
        fast = max(1, peak_live_bytes(*arrays) // 4)
        for algorithm in ALGORITHMS:
            yield (
                f"real/{path.stem}/{algorithm}",
                plan_entry(arrays, ([fast, 1 << 50], [16, 64]), algorithm),
            )


def rectangle_entries(csv_dir: Path | None) -> Iterator[tuple[str, dict[str, Any]]]:
    for seed, pieces in enumerate((20, 40, 60, 90, 120, 160)):
        rng = random.Random(seed)
        arrays = tuple(np.array(c, dtype=np.int64) for c in cut_rectangle(rng, 24, 40, pieces, 16))
        for capacity in (24 * 16, 1 << 30):
            name = f"rectangle/{pieces}/{'tight' if capacity < 1 << 30 else 'loose'}"
            yield name, plan_entry(arrays, ([capacity], [16]), "best")
    if csv_dir is not None:
        for path in sorted(csv_dir.glob("*.csv")):
            instance = read_minimalloc_csv(path)
            arrays = (instance.starts, instance.ends, instance.sizes)
            capacity = capacity_from_filename(path)
            yield f"core-rectangle/{path.stem}", plan_entry(arrays, ([capacity], [1]), "best")


def random_case_entries() -> Iterator[tuple[str, dict[str, Any]]]:
    for seed in range(RANDOM_CASES):
        case = generate_case(RandomChooser(random.Random(seed)))
        for algorithm in ALGORITHMS:
            try:
                result = plan_with_array_api(case, algorithm, work_budget=WORK, threads=1)
                entry = summary(result)
            except cadence_memplan.PlanningError as error:
                entry = {"error": str(error), "tensor": error.tensor_index}
            yield f"case/{seed}/{algorithm}", entry


def model_entries() -> Iterator[tuple[str, dict[str, Any]]]:
    with tempfile.TemporaryDirectory() as folder:
        for model in MODELS:
            out = Path(folder) / f"{model}.json"
            command = [sys.executable, "-m", "cadence_memplan", "plan", model, "--algo", "best"]
            command += ["--work", str(WORK), "--out", str(out)]
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            plan = json.loads(out.read_text())
            del plan["timings_seconds"]  # the one thing a run may change
            yield f"model/{model}", {"plan": digest_json(plan), "tensors": len(plan["tensors"])}


def digest_json(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:24]


def diff(before: Path, after: Path) -> int:
    old, new = json.loads(before.read_text()), json.loads(after.read_text())
    changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    for key in changed:
        print(f"{key}:\n  before {old.get(key)}\n  after  {new.get(key)}")
    print(f"{len(old)} entries before, {len(new)} after, {len(changed)} differ")
    return 1 if changed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--instances", type=Path, default=PLANNING_INSTANCES)
    parser.add_argument("--csv-dir", type=Path, help="more rectangles, as MiniMalloc CSVs")
    parser.add_argument("--no-models", action="store_true", help="skip the models")
    parser.add_argument("--diff", type=Path, nargs=2, metavar=("BEFORE", "AFTER"))
    options = parser.parse_args()
    if options.diff:
        return diff(*options.diff)
    if options.out is None:
        parser.error("OUT.json is needed (or --diff BEFORE AFTER)")
    entries: dict[str, Any] = {}
    for part in (
        instance_entries(options.instances),
        rectangle_entries(options.csv_dir),
        random_case_entries(),
    ):
        entries.update(part)
    if not options.no_models:
        entries.update(model_entries())
    options.out.write_text(json.dumps(entries, indent=1, sort_keys=True) + "\n")
    print(f"{len(entries)} entries written to {options.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
