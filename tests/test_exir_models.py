"""Real models through exir's portable flow (``to_edge(...).to_executorch(...)``, no
delegate), planned by exir's ``greedy`` and by ``cadence_memplan.exir``'s: the ``.pte``
bytes must be identical. Also exir's ``banked_memory_planning_pass`` against the same pass
with our ``BankedGreedy``, and one program run on the portable runtime.

Each model is exported and taken to edge once per module; every ``to_executorch`` runs on
a deep copy of it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import torch
from executorch.exir import EdgeProgramManager, ExecutorchBackendConfig, to_edge
from executorch.exir.banked_memory_planning import (
    Bank,
    TargetMemoryMap,
    banked_memory_planning_pass,
    planned_mem_ids,
)
from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite
from executorch.exir.passes import MemoryPlanningPass

import cadence_memplan.exir
from cadence_memplan.models import build_model

pytestmark = pytest.mark.executorch

# Test name -> (zoo name, options): small, so that the whole module takes seconds.
MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "mlp": ("mlp", {}),
    "cat_slice_cnn": ("cnn", {"image": 8}),
    "depthwise_transposed_cnn": ("depthwise-cnn", {}),
    "transformer_encoder": ("encoder", {"layers": 2, "width": 32, "tokens": 8}),
}

# A model's edge program (a deep copy of its own for each call), its inputs and the model.
EdgePrograms = Callable[[str], tuple[EdgeProgramManager, tuple[torch.Tensor, ...], Any]]


@pytest.fixture(scope="module")
def edge_program() -> EdgePrograms:
    """Each model exported and taken to edge once per module (the slow part); every call
    returns a deep copy of its edge program, because ``to_executorch`` writes into it."""
    programs: dict[str, tuple[EdgeProgramManager, tuple[torch.Tensor, ...], Any]] = {}

    def copy_of(name: str) -> tuple[EdgeProgramManager, tuple[torch.Tensor, ...], Any]:
        if name not in programs:
            zoo_name, options = MODELS[name]
            model, inputs = build_model(zoo_name, **options)
            exported = torch.export.export(model, inputs, strict=True)
            programs[name] = (to_edge(exported), inputs, model)
        edge, inputs, model = programs[name]
        return copy.deepcopy(edge), inputs, model

    return copy_of


def pte(edge_program: EdgePrograms, name: str, config: ExecutorchBackendConfig) -> bytes:
    edge, _, _ = edge_program(name)
    return bytes(edge.to_executorch(config).buffer)


def suite_pass(algorithm: Any, **options: Any) -> MemoryPlanningPass:
    return MemoryPlanningPass(
        memory_planning_algo=MemoryPlanningAlgorithmSuite(algo_list=[algorithm]), **options
    )


# exir's own pass (its default algorithm suite, [greedy]) -> the pass with ours.
PASS_PAIRS: dict[str, tuple[Any, Any]] = {
    "default config vs the helper": (
        lambda: None,
        lambda: cadence_memplan.exir.memory_planning_pass(),
    ),
    "suite of exir greedy vs suite of ours": (
        lambda: suite_pass(_exir_greedy()),
        lambda: suite_pass(cadence_memplan.exir.greedy),
    ),
    "graph inputs and outputs not planned": (
        lambda: MemoryPlanningPass(alloc_graph_input=False, alloc_graph_output=False),
        lambda: cadence_memplan.exir.memory_planning_pass(
            alloc_graph_input=False, alloc_graph_output=False
        ),
    ),
    "exir's verifying pass vs the helper's C++ check": (
        lambda: MemoryPlanningPass(memory_planning_algo=_verified_exir_greedy),
        lambda: cadence_memplan.exir.memory_planning_pass(verify_storage_reuse=True),
    ),
    "alignment 64, the naive scan": (
        lambda: MemoryPlanningPass(alignment=64),
        lambda: cadence_memplan.exir.memory_planning_pass(alignment=64, occupancy="scan"),
    ),
}


def _exir_greedy() -> Any:
    from executorch.exir.memory_planning import greedy

    return greedy


def greedy(*arguments: Any) -> list[int]:
    """exir's suite under the name ``greedy``: exir's MemoryPlanningPass then runs its own
    Verifier.verify_storage_reuse after planning (it checks the callable's name)."""
    return MemoryPlanningAlgorithmSuite(algo_list=[_exir_greedy()])(*arguments)


_verified_exir_greedy = greedy


def config(memory_planning_pass: MemoryPlanningPass | None) -> ExecutorchBackendConfig:
    if memory_planning_pass is None:
        return ExecutorchBackendConfig()
    return ExecutorchBackendConfig(memory_planning_pass=memory_planning_pass)


@pytest.mark.parametrize("pair", PASS_PAIRS)
@pytest.mark.parametrize("model", MODELS)
def test_same_pte_as_exir(model: str, pair: str, edge_program: EdgePrograms) -> None:
    exir_pass, our_pass = PASS_PAIRS[pair]
    exir_bytes = pte(edge_program, model, config(exir_pass()))
    our_bytes = pte(edge_program, model, config(our_pass()))
    assert len(exir_bytes) > 0
    assert our_bytes == exir_bytes


def two_banks(fast: int) -> TargetMemoryMap:
    return TargetMemoryMap(
        [Bank("fast", fast, mem_id=1, alignment=32), Bank("slow", 1 << 24, mem_id=2)]
    )


@pytest.mark.parametrize("model", MODELS)
def test_same_pte_as_exir_banked(model: str, edge_program: EdgePrograms) -> None:
    """exir's banked_memory_planning_pass and the same pass with our BankedGreedy, on a fast
    bank too small for everything (so buffers spill to the slow one)."""
    target = two_banks(4 << 10)
    edge, _, _ = edge_program(model)
    exir_program = edge.to_executorch(config(banked_memory_planning_pass(target)))
    ours = suite_pass(cadence_memplan.exir.BankedGreedy(target))
    our_bytes = pte(edge_program, model, config(ours))
    assert our_bytes == bytes(exir_program.buffer)
    mem_ids = planned_mem_ids(exir_program.exported_program().graph_module)
    assert {1, 2} <= set(mem_ids), f"the target does not make {model} spill: {set(mem_ids)}"


def test_our_program_runs_on_the_portable_runtime(edge_program: EdgePrograms) -> None:
    """The program planned by ours loads and computes what the eager model computes."""
    runtime = pytest.importorskip("executorch.extension.pybindings.portable_lib")
    edge, inputs, model = edge_program("transformer_encoder")
    program = edge.to_executorch(config(cadence_memplan.exir.memory_planning_pass()))
    module = runtime._load_for_executorch_from_buffer(program.buffer)
    (output,) = module.forward(inputs)
    with torch.no_grad():
        expected = model(*inputs)
    torch.testing.assert_close(output, expected, rtol=1e-4, atol=1e-4)


class ElementwiseChain(torch.nn.Module):
    """Element-wise ops that exir's reinplace pass turns in-place: the in-place node's
    result shares its input's spec, so the planner sees one spec where there were two."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        c = a + b
        d = c * b
        e = d * b
        f = torch.relu(e) + c
        return f * a


def inplace_planned_fields(algorithm: Any) -> list[tuple[Any, ...]]:
    """The in-place pipeline of exir's own tests (reinplace, spec propagation, out
    variants, MemoryPlanningPass with ``algorithm`` at alignment 1); every planned spec's
    fields in node order, and whether the node is in-place."""
    from executorch.exir.dialects._ops import ops as exir_ops
    from executorch.exir.pass_manager import PassManager
    from executorch.exir.passes import SpecPropPass, ToOutVarPass
    from executorch.exir.passes.reinplace import reinplace_pass

    inputs = (torch.randn(64), torch.randn(64))
    program = to_edge(torch.export.export(ElementwiseChain(), inputs, strict=True))
    exported = program.exported_program()
    reinplace_pass(exported, ops_to_inplace={exir_ops.edge.aten.mul.Tensor})
    graph_module = PassManager(passes=[SpecPropPass(), ToOutVarPass()])(
        exported.graph_module
    ).graph_module
    suite_pass(algorithm, alignment=1).run(graph_module, exported.graph_signature)
    fields = []
    for node in graph_module.graph.nodes:
        spec = node.meta.get("spec")
        if hasattr(spec, "mem_offset"):
            fields.append(
                (
                    node.name,
                    spec.mem_id,
                    spec.mem_offset,
                    spec.mem_obj_id,
                    node.name.startswith("aten_mul__"),
                )
            )
    return fields


def test_inplace_pipeline_as_exir() -> None:
    exir = inplace_planned_fields(_exir_greedy())
    ours = inplace_planned_fields(cadence_memplan.exir.greedy)
    assert ours == exir
    assert sum(inplace for *_, inplace in exir) >= 2, f"no in-place node: {exir}"
