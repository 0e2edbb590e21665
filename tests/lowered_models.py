"""Real models, lowered with Cadence's compiler once per test session, and planned through
``to_executorch`` with upstream's ``CadenceMemoryPlanning`` or ours (needs torch and
executorch). Shared by tests/test_end_to_end.py and tests/test_reports.py; the models come
from the package's model zoo (cadence_memplan.models), as the CLI's and bench's do.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from executorch.backends.cadence.aot.memory_constraints import MemConstraints
from executorch.backends.cadence.aot.memory_planning import (
    CadenceMemoryPlanning as UpstreamCadenceMemoryPlanning,
)
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import MemoryConfig, get_default_memory_config
from executorch.exir import EdgeProgramManager, ExecutorchProgramManager
from executorch.exir.memory_planning import collect_specs_from_nodes
from executorch.exir.tensor import TensorSpec

import cadence_memplan
from cadence_memplan.cadence.compiler import cadence_backend_config, import_cadence_compiler
from cadence_memplan.cadence.memory_planning import CadenceMemoryPlanning
from cadence_memplan.models import build_model

compiler = import_cadence_compiler()

# Test name -> (zoo name, options): small, because upstream's Python placer is quadratic.
MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "mlp": ("mlp", {}),
    "cat_slice_cnn": ("cnn", {"image": 8}),
    "transformer_encoder": ("encoder", {"layers": 1, "width": 32, "tokens": 8}),
    "depthwise_transposed_cnn": ("depthwise-cnn", {}),
}
MEMORY_CONFIG_KINDS = ("default", "three_level_tight")
PLANNERS = {"upstream": UpstreamCadenceMemoryPlanning, "ours": CadenceMemoryPlanning}


def lower_to_cadence(name: str) -> EdgeProgramManager:
    zoo_name, options = MODELS[name]
    model, inputs = build_model(zoo_name, **options)
    exported = torch.export.export(model, inputs, strict=True)
    return compiler._lower_ep_to_cadence(exported)


def edge_program(lowered: dict[str, EdgeProgramManager], name: str) -> EdgeProgramManager:
    """A copy of model ``name`` lowered once per session (``lowered`` is the cache)."""
    if name not in lowered:
        lowered[name] = lower_to_cadence(name)
    return copy.deepcopy(lowered[name])


def to_executorch(edge: EdgeProgramManager, memory_planning: Any) -> ExecutorchProgramManager:
    """``to_executorch`` with the config Cadence's compiler uses, memory planning swapped."""
    return edge.to_executorch(cadence_backend_config(memory_planning))


def node_specs(graph_module: torch.fx.GraphModule) -> Iterator[tuple[str, int, TensorSpec]]:
    """(node name, output index, spec) for every TensorSpec in the graph, in node order."""
    for node in graph_module.graph.nodes:
        specs = node.meta.get("spec")
        for index, spec in enumerate(specs if isinstance(specs, (list, tuple)) else [specs]):
            if isinstance(spec, TensorSpec):
                yield node.name, index, spec


def placements(graph_module: torch.fx.GraphModule) -> list[tuple[str, int, Any, Any]]:
    return [(name, i, s.mem_id, s.mem_offset) for name, i, s in node_specs(graph_module)]


def capture_constraints(planning: Any) -> list[MemConstraints]:
    """Record the MemConstraints the pass's algorithm builds (to know the specs placed
    relative to others, which share storage on purpose)."""
    captured: list[MemConstraints] = []
    populate = planning.algo.populate_constraints

    def populate_and_record(graph_module: torch.fx.GraphModule) -> Any:
        state, constraints = populate(graph_module)
        captured.append(constraints)
        return state, constraints

    planning.algo.populate_constraints = populate_and_record
    return captured


def assert_valid(
    program: ExecutorchProgramManager,
    memory_config: MemoryConfig,
    constraints: MemConstraints,
    alloc_graph_io: bool,
) -> list[TensorSpec]:
    """cadence_memplan.validate on every spec the placer placed; returns those specs."""
    exported = program.exported_program()
    specs = [
        spec
        for spec in collect_specs_from_nodes(
            exported.graph_module.graph.nodes,
            exported.graph_signature,
            ignore_graph_input=not alloc_graph_io,
            ignore_graph_output=not alloc_graph_io,
        )
        if not constraints.skipped_spec(spec)
    ]
    assert specs, "nothing was planned"
    problem = cadence_memplan.validate(
        [s.lifetime[0] for s in specs],
        [s.lifetime[1] for s in specs],
        [s.allocated_memory for s in specs],
        [s.mem_id for s in specs],
        [s.mem_offset for s in specs],
        memory_config.memory_sizes,
        memory_config.memory_alignments,
    )
    assert problem is None, problem
    return specs


def planned_sizes(
    lowered: dict[str, EdgeProgramManager], name: str, alloc_graph_io: bool = True
) -> list[int]:
    """Sizes of the tensors the placer itself places (one plan on the default config)."""
    memory_config = get_default_memory_config()
    run = plan_model(
        edge_program(lowered, name),
        CadenceMemoryPlanning,
        memory_config,
        CompileMode.DEFAULT,
        0,
        alloc_graph_io,
    )
    specs = assert_valid(run.program, memory_config, run.constraints, alloc_graph_io)
    return [spec.allocated_memory for spec in specs]


def memory_config_for(
    kind: str, lowered: dict[str, EdgeProgramManager], name: str, alloc_graph_io: bool = True
) -> MemoryConfig:
    if kind == "default":
        return get_default_memory_config()
    # Memory 1 holds only the smallest tensors and memory 2 just the largest one, placed
    # first; any larger tensor alive together with the largest must go to memory 3.
    sizes = planned_sizes(lowered, name, alloc_graph_io)
    smallest = min(size for size in sizes if size > 0)
    return MemoryConfig(
        [-(-smallest // 16) * 16, -(-max(sizes) // 32) * 32, 1 << 24],
        memory_alignments=[16, 32, 64],
    )


@dataclass
class Run:
    program: ExecutorchProgramManager
    constraints: MemConstraints


def plan_model(
    edge: EdgeProgramManager,
    planner: type,
    memory_config: MemoryConfig,
    mode: CompileMode,
    mem_algo: int,
    alloc_graph_io: bool,
) -> Run:
    planning = planner(
        memory_config,
        mode=mode,
        mem_algo=mem_algo,
        alloc_graph_input=alloc_graph_io,
        alloc_graph_output=alloc_graph_io,
    )
    captured = capture_constraints(planning)
    program = to_executorch(edge, planning)
    assert len(captured) == 1
    return Run(program, captured[0])
