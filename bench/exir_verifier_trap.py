"""What exir's storage-reuse check costs, and ours: the trap of README's "exir's default
planner" section.

    python bench/exir_verifier_trap.py [--ops 1500]

Exports a chain of ``--ops`` elementwise ops (two planned tensors each), plans it with
``cadence_memplan.exir.memory_planning_pass()``, then times exir's
``Verifier.verify_storage_reuse`` (the Python pair loop ``MemoryPlanningPass`` runs for an
algorithm named ``greedy`` or at DEBUG logging) against ours, with the index and with the
naive pair loop in C++, and checks that the three counts agree. It also reports how many
times exir's pass itself ran the check during ``to_executorch`` (0: the suite has no name).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import torch
from executorch.exir import ExecutorchBackendConfig, to_edge
from executorch.exir.memory_planning import Verifier, collect_specs_from_nodes

import cadence_memplan.exir

__all__ = ["main"]


class _Chain(torch.nn.Module):
    def __init__(self, ops: int) -> None:
        super().__init__()
        self.ops = ops

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.ops):
            x = torch.sin(x) + 1.0
        return x


def _timed(call: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    value = call()
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1500, help="ops in the chain (default 1500)")
    ops = parser.parse_args().ops

    checks = []
    exir_check = Verifier.verify_storage_reuse

    def counting_check(self: Verifier, *args: Any, **kwargs: Any) -> int:
        checks.append(1)
        return int(exir_check(self, *args, **kwargs))

    Verifier.verify_storage_reuse = counting_check  # type: ignore[method-assign]
    edge = to_edge(torch.export.export(_Chain(ops), (torch.randn(4, 4),)))
    program = edge.to_executorch(
        ExecutorchBackendConfig(memory_planning_pass=cadence_memplan.exir.memory_planning_pass())
    )
    Verifier.verify_storage_reuse = exir_check  # type: ignore[method-assign]
    graph_module = program.exported_program().graph_module
    verifier = Verifier(graph_module, True, True, True, program.exported_program().graph_signature)
    specs = len(
        list(
            collect_specs_from_nodes(
                graph_module.graph.nodes,
                verifier.graph_signature,
                ignore_const=True,
                ignore_graph_input=False,
                ignore_graph_output=False,
                do_assertion=False,
                ignore_out_var_node=False,
                dedup=True,
            )
        )
    )
    print(f"{specs} planned specs; exir's pass ran its check {len(checks)} times")

    exir_pairs, exir_time = _timed(verifier.verify_storage_reuse)
    ours, ours_time = _timed(lambda: cadence_memplan.exir.verify_storage_reuse(verifier))
    scan, scan_time = _timed(
        lambda: cadence_memplan.exir.verify_storage_reuse(verifier, occupancy="scan")
    )
    if not exir_pairs == ours == scan:
        raise SystemExit(f"counts differ: exir {exir_pairs}, ours {ours}, scan {scan}")
    print(f"{exir_pairs} reuse pairs")
    print(f"exir verify_storage_reuse   {exir_time:9.3f} s")
    print(f"ours (index)                {ours_time:9.3f} s  {exir_time / ours_time:8.0f}x")
    print(f"ours (scan, naive C++)      {scan_time:9.3f} s  {exir_time / scan_time:8.0f}x")


if __name__ == "__main__":
    main()
