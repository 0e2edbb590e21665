"""Print the table of issue 51: stateful multi-method programs (a KV cache: ``prefill``,
``decode``; a stream: ``init``, ``step``; tests/stateful_programs.py) planned by each
planner on one, two and three memories, run on the portable runtime over several calls
with the state carried, against eager.

    python bench/stateful.py                     # every planner, about 3 minutes
    python bench/stateful.py --planners exir-share,cadence-share-2

Columns: right (bit for bit against eager) or wrong (the largest difference) or the error;
the arena (each memory sized for the largest method, summed over the memories); the
state's bytes in memory 1 (the fastest) in every method.
"""

from __future__ import annotations

import argparse
import copy
import functools
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import MemoryConfig
from executorch.exir.passes import MemoryPlanningPass
from stateful_programs import (
    PROGRAMS,
    StatefulProgram,
    backend_config,
    edge_program,
    run_on_runtime,
)

import cadence_memplan.exir
from cadence_memplan import CadenceMemoryPlanning
from cadence_memplan.cadence.compiler import cadence_backend_config

__all__ = ["main"]

# Memory hierarchies: memory 1 small and fast, the last large.
MEMORIES: dict[str, list[int]] = {
    "1 memory": [1 << 20],
    "2 memories": [768, 1 << 20],
    "2 memories, 6 KiB fast": [6144, 1 << 20],
    "3 memories": [1024, 4096, 1 << 20],
}


def _cadence(mem_algo: int, **options: Any) -> Callable[[list[int]], Any]:
    def make(sizes: list[int]) -> Any:
        config = MemoryConfig(sizes, memory_alignments=[16] * len(sizes))
        return CadenceMemoryPlanning(config, CompileMode.DEFAULT, mem_algo, **options)

    return make


# name: (lowering, pass builder taking the memory sizes, or None for one memory only)
PLANNERS: dict[str, tuple[str, Callable[[list[int]], Any], bool]] = {
    "exir": ("exir", lambda sizes: MemoryPlanningPass(), False),
    "exir-share": ("exir", lambda sizes: MemoryPlanningPass(share_mutable_buffers=True), False),
    "ours-share": (
        "exir",
        lambda sizes: cadence_memplan.exir.memory_planning_pass(share_mutable_buffers=True),
        False,
    ),
    "ours-share-smallest-reorder": (
        "exir",
        lambda sizes: cadence_memplan.exir.memory_planning_pass(
            share_mutable_buffers=True, smallest=True, reorder=True
        ),
        False,
    ),
    **{f"cadence-{algo}": ("cadence", _cadence(algo), True) for algo in (0, 1, 2)},
    **{
        f"cadence-share-{algo}": ("cadence", _cadence(algo, share_mutable_buffers=True), True)
        for algo in (0, 1, 2)
    },
}


def _state_in_memory_1(program: Any, stateful: StatefulProgram) -> str:
    per_method = []
    for method in stateful.methods:
        signature = program.exported_program(method).graph_signature
        graph = program.exported_program(method).graph_module.graph
        buffers = {
            spec.arg.name for spec in signature.input_specs if spec.target in stateful.buffers
        }
        total = 0
        for node in graph.nodes:
            spec = node.meta.get("spec")
            if node.op == "placeholder" and node.name in buffers and spec.mem_id == 1:
                total += spec.allocated_memory
        per_method.append(total)
    return "/".join(f"{total:,}" for total in per_method)


def _arena(program: Any, stateful: StatefulProgram) -> int:
    sizes = [
        list(program.exported_program(method).graph_module.meta["non_const_buffer_sizes"])
        for method in stateful.methods
    ]
    width = max(map(len, sizes))
    padded = [row + [0] * (width - len(row)) for row in sizes]
    return sum(max(column) for column in zip(*padded, strict=True))


def cell(stateful: StatefulProgram, edge: Any, lowering: str, make: Callable[[], Any]) -> str:
    try:
        planning = make()
        config = cadence_backend_config(planning) if lowering == "cadence" else None
        program = copy.deepcopy(edge).to_executorch(backend_config(planning, config))
        run = run_on_runtime(stateful, program.buffer)
    except Exception as error:  # noqa: BLE001  (the table reports it)
        return f"{type(error).__name__}: {str(error).splitlines()[0][:90]}"
    verdict = "right" if run.equal else f"WRONG (by {run.largest_difference:.3g})"
    state = _state_in_memory_1(program, stateful)
    return f"{verdict}; {_arena(program, stateful):,} B; state in memory 1: {state} B"


def main(argv: list[str] | None = None) -> None:
    warnings.simplefilter("ignore")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--planners", default=",".join(PLANNERS), help="comma-separated")
    parser.add_argument("--programs", default=",".join(PROGRAMS), help="comma-separated")
    args = parser.parse_args(argv)
    print("| program | planner | memories | result; arena; state in memory 1 per method |")
    print("| --- | --- | --- | --- |")
    for program_name in args.programs.split(","):
        stateful = PROGRAMS[program_name]
        edges = {lowering: edge_program(stateful, lowering) for lowering in ("exir", "cadence")}
        for name in args.planners.split(","):
            lowering, make, hierarchy = PLANNERS[name]
            for memories, sizes in MEMORIES.items():
                if not hierarchy and memories != "1 memory":
                    continue
                text = cell(stateful, edges[lowering], lowering, functools.partial(make, sizes))
                print(f"| {program_name} | {name} | {memories} | {text} |", flush=True)


if __name__ == "__main__":
    main()
