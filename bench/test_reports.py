"""print_memory_planning_info, ours against upstream's, on planned synthetic graphs:

    python -m pytest bench/test_reports.py --benchmark-group-by=param:tensor_count

Upstream walks every spec once per report in Python; ours reads them once into arrays.
tests/test_reports.py holds the two to the same numbers; this only times them (upstream's
rounds are few: a round at 10^5 tensors takes seconds).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
import torch
from conftest import MEMORY_ALIGNMENTS, MEMORY_SIZES, memory_config, tensor_specs
from executorch.backends.cadence.aot import memory_planning as upstream
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.exir import memory

import cadence_memplan
from cadence_memplan.cadence import reports
from cadence_memplan.synthetic import synthetic_graph

IMPLEMENTATIONS = {
    "ours": reports.print_memory_planning_info,
    "upstream": upstream.print_memory_planning_info,
}
UPSTREAM_ROUNDS = 3


class _Program:
    """What print_memory_planning_info reads of an ExecutorchProgramManager: the graph
    alone (a GraphModule would compile a Python function of every node first)."""

    graph_signature = None

    def __init__(self, graph: torch.fx.Graph) -> None:
        self.graph_module = self
        self.graph = graph

    def exported_program(self) -> _Program:
        return self


def _planned_program(tensor_count: int) -> _Program:
    """memory.alloc nodes carrying the specs of a synthetic graph, planned by the core."""
    graph = synthetic_graph(tensor_count)
    plan = cadence_memplan.plan(*graph, MEMORY_SIZES, MEMORY_ALIGNMENTS, algorithm="heuristic")
    fx_graph = torch.fx.Graph()
    specs = tensor_specs(graph)
    for index, spec in enumerate(specs):
        spec.mem_id, spec.mem_offset = int(plan.mem_ids[index]), int(plan.offsets[index])
        node = fx_graph.create_node("call_function", memory.alloc, (), {}, name=f"alloc_{index}")
        node.meta["spec"] = spec
    fx_graph.output(None)
    return _Program(fx_graph)


@pytest.mark.parametrize("tensor_count", [10_000, 100_000])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_print_memory_planning_info(benchmark: Any, implementation: str, tensor_count: int) -> None:
    program = _planned_program(tensor_count)
    print_info = IMPLEMENTATIONS[implementation]
    logging.disable(logging.INFO)  # not printed; the tables are still built and timed
    try:
        benchmark.pedantic(
            print_info,
            args=(program, memory_config(), CompileMode.DEFAULT, True, True),
            rounds=UPSTREAM_ROUNDS if implementation == "upstream" else 10,
        )
    finally:
        logging.disable(logging.NOTSET)
