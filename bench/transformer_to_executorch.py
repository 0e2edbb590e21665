"""Planning time inside ``to_executorch`` for a transformer encoder, upstream vs ours.

    python bench/transformer_to_executorch.py [--layers 16] [--mem-algo 1]

Exports and lowers the encoder once with Cadence's compiler, then runs ``to_executorch``
on a deep copy with upstream's ``CadenceMemoryPlanning`` and on another with ours, and
prints for each: the placer's own time (every ``plan()`` call), the whole memory-planning
pass (constraint generation, exir's MemoryPlanningPass, SimplifyIdmaOpsPass) and the whole
``to_executorch``. It checks that the two programs are byte for byte the same.
"""

from __future__ import annotations

import argparse
import copy
import time

import torch
from executorch.backends.cadence.aot.memory_planning import (
    CadenceMemoryPlanning as UpstreamCadenceMemoryPlanning,
)
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import MemoryConfig

from cadence_memplan import CadenceMemoryPlanning
from cadence_memplan.cli.models import build_model
from cadence_memplan.executorch.compiler import cadence_backend_config, import_cadence_compiler
from cadence_memplan.executorch.lowering import TimedPlanning

__all__ = ["main"]

# A Cadence-like hierarchy: a small fast memory, then bigger, slower ones.
MEMORY_CONFIG = MemoryConfig([256 << 10, 4 << 20, 1 << 30], memory_alignments=[16, 64, 64])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--sequence", type=int, default=32)
    parser.add_argument("--mem-algo", type=int, default=1, choices=[0, 1])
    arguments = parser.parse_args()

    compiler = import_cadence_compiler()
    model, inputs = build_model(
        "encoder", layers=arguments.layers, width=arguments.width, tokens=arguments.sequence
    )
    start = time.perf_counter()
    exported = torch.export.export(model, inputs, strict=True)
    edge = compiler._lower_ep_to_cadence(exported)
    print(f"export + Cadence lowering: {time.perf_counter() - start:.1f} s (once, shared)")

    buffers = {}
    for label, planner in (
        ("upstream", UpstreamCadenceMemoryPlanning),
        ("ours", CadenceMemoryPlanning),
    ):
        planning = TimedPlanning(planner(MEMORY_CONFIG, CompileMode.DEFAULT, arguments.mem_algo))
        program_edge = copy.deepcopy(edge)
        start = time.perf_counter()
        program = program_edge.to_executorch(cadence_backend_config(planning))
        to_executorch_seconds = time.perf_counter() - start
        buffers[label] = program.buffer
        nodes = len(program.exported_program().graph_module.graph.nodes)
        print(
            f"{label:>8}: placer (plan) {planning.placer_seconds:8.3f} s | memory-planning pass"
            f" {planning.pass_seconds:8.3f} s | whole to_executorch {to_executorch_seconds:8.3f} s"
            f" | {nodes} nodes"
        )
    print("programs identical:", buffers["upstream"] == buffers["ours"])


if __name__ == "__main__":
    main()
