"""``reorder=True`` on real exports: exir's pass (with and without ``smallest=True``) and
Cadence's drop-in. Every reordered program runs on the portable runtime bitwise as the
unreordered one, over several calls with the KV cache carried between them; no arena is
larger than without the reorder; a graph whose order is kept gets the very program the
pass makes without it; the unit model the scheduler searches counts what exir's
lifetimes count, so its bound holds.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import numpy as np
import torch
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.exir import ExecutorchBackendConfig, to_edge
from executorch.exir.memory_planning import (
    MemoryPlanningAlgorithmSuite,
    Verifier,
    update_all_tensors_lifetime,
)
from executorch.exir.passes import MemoryPlanningPass
from schedule_graphs import adversarial_order

import cadence_memplan.exir
from cadence_memplan import CadenceMemoryPlanning, api
from cadence_memplan._boundary.tensorspecs import clear_lifetimes
from cadence_memplan._boundary.upstream import spec_holder
from cadence_memplan.cadence.lowering import backend_config, lower_exported, memory_config
from cadence_memplan.io.memories import parse_memory_spec
from cadence_memplan.models import build_model, example_calls
from cadence_memplan.scheduling import Reordering
from cadence_memplan.scheduling.problem import apply_node_order, schedule_problem, structural_order
from cadence_memplan.scheduling.rules import node_specs, unit_graph

runtime = pytest.importorskip("executorch.extension.pybindings.portable_lib")

pytestmark = [
    pytest.mark.executorch,
    pytest.mark.filterwarnings("ignore:Mutation on a buffer in the model is detected"),
]

# name -> builder options (small, to keep the default run short) and what the reorder keeps.
MODELS: dict[str, tuple[dict[str, Any], str]] = {
    "llama": ({"layers": 2, "dim": 32}, "structural"),
    "decoder": ({"layers": 2}, "structural"),
    "inception": ({"blocks": 2, "width": 8, "image": 16}, "scheduled"),
    "chain-cnn": ({"layers": 4, "image": 16}, "given"),
    "encoder": ({"layers": 1, "width": 32, "tokens": 8}, "given"),
}


def arena(program: Any) -> int:
    return int(sum(program.exported_program().graph_module.meta["non_const_buffer_sizes"][1:]))


def outputs(program: Any, calls: list[tuple[torch.Tensor, ...]]) -> list[bytes]:
    module = runtime._load_for_executorch_from_buffer(program.buffer)
    return [output.numpy().tobytes() for call in calls for output in module.forward(call)]


def edge_of(name: str) -> tuple[Any, list[tuple[torch.Tensor, ...]]]:
    options, _ = MODELS[name]
    model, inputs = build_model(name, **options)
    return to_edge(torch.export.export(model, inputs, strict=True)), example_calls(name, inputs)


@pytest.mark.parametrize("smallest", [False, True], ids=["greedy", "smallest"])
@pytest.mark.parametrize("name", MODELS)
def test_reordered_program_runs_bitwise_and_never_larger(name: str, smallest: bool) -> None:
    edge, calls = edge_of(name)
    plain = copy.deepcopy(edge).to_executorch(
        ExecutorchBackendConfig(
            memory_planning_pass=cadence_memplan.exir.memory_planning_pass(smallest=smallest)
        )
    )
    planning = cadence_memplan.exir.memory_planning_pass(smallest=smallest, reorder=True)
    reordered = edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=planning))
    result = planning.last_reorder
    assert result is not None
    assert arena(reordered) == result.arena <= arena(plain) == result.given_arena
    assert result.kept == MODELS[name][1]
    assert result.lower_bound <= result.peak_live <= result.given_peak_live
    if result.kept == "given":  # the order kept, the program is the one without reorder
        assert reordered.buffer == plain.buffer
    else:
        assert result.arena < result.given_arena
        assert result.moves.any
    exported = reordered.exported_program()
    verifier = Verifier(exported.graph_module, True, True, True, exported.graph_signature)
    cadence_memplan.exir.verify_storage_reuse(verifier)
    assert len(calls) == (4 if name in ("llama", "decoder") else 1)
    assert outputs(reordered, calls) == outputs(plain, calls)


def test_write_backs_moved_up_reach_the_decoders_bound() -> None:
    edge, _ = edge_of("decoder")
    planning = cadence_memplan.exir.memory_planning_pass(smallest=True, reorder=True)
    edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=planning))
    result = planning.last_reorder
    assert result is not None
    assert result.moves.write_backs == 4  # two layers, keys and values
    assert result.moves.describe().startswith("4 write-backs moved up")
    assert result.proved_optimal
    assert result.peak_live == result.lower_bound == result.arena


@pytest.mark.parametrize("name", ["llama", "inception"])
def test_the_unit_model_counts_what_exir_lifetimes_count(name: str) -> None:
    """Under the given, structural, adversarial and scheduled orders, the scheduler's
    peak (or what is alive at the output node, which no order changes) is the peak of
    exir's lifetimes: so its lower bound bounds exir's peak-live."""
    checked: list[int] = []

    def algorithm(
        alignment: int, specs: Any, graph_module: Any, signature: Any, padding: int = 0
    ) -> list[int]:
        specs = list(specs)
        graph = unit_graph(graph_module)
        problem = schedule_problem(graph, specs, signature, alignment)
        structural = structural_order(graph, problem)
        scheduled = api.schedule(**problem.arguments(structural))
        orders = [
            list(range(problem.num_units)),
            structural,
            adversarial_order(graph),
            [structural[unit] for unit in scheduled.order.tolist()],
        ]
        for order in orders:
            apply_node_order(graph_module, graph.node_order(order))
            clear_lifetimes(
                list(
                    {
                        id(s): s
                        for s in (
                            spec_holder(x) for n in graph_module.graph.nodes for x in node_specs(n)
                        )
                    }.values()
                )
            )
            update_all_tensors_lifetime(graph_module, signature)
            exir_peak = Reordering._peak_live(specs, alignment, {})
            assert exir_peak == max(problem.peak_live(order), problem.end_bytes)
            checked.append(exir_peak)
        assert scheduled.lower_bound <= problem.peak_live(orders[-1])
        suite = MemoryPlanningAlgorithmSuite([cadence_memplan.exir.greedy])
        result: list[int] = suite(alignment, specs, graph_module, signature, padding)
        return result

    edge, calls = edge_of(name)
    plain = copy.deepcopy(edge).to_executorch()
    program = edge.to_executorch(
        ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass(algorithm))
    )
    assert len(checked) == 4
    assert outputs(program, calls) == outputs(plain, calls)  # the last order runs right


def test_cadence_reorder_keeps_memory1_and_never_grows() -> None:
    model, inputs = build_model("decoder")
    edge = lower_exported(torch.export.export(model, inputs, strict=True), "cadence")
    memories = parse_memory_spec("fast=48KiB:16,slow=1MiB:16")

    def plan(reorder: bool) -> tuple[Any, CadenceMemoryPlanning]:
        planning = CadenceMemoryPlanning(
            memory_config(memories), CompileMode.DEFAULT, 2, reorder=reorder
        )
        program = copy.deepcopy(edge).to_executorch(backend_config("cadence", planning))
        return program, planning

    plain, _ = plan(False)
    first, planning = plan(True)
    again, _ = plan(True)
    assert first.buffer == again.buffer  # deterministic
    result = planning.last_reorder
    assert result is not None
    assert result.kept != "given"
    sizes = plain.exported_program().graph_module.meta["non_const_buffer_sizes"]
    assert result.given_arena == sum(sizes[1:])
    assert result.arena <= result.given_arena
    assert result.kept_in_memory1 >= result.given_kept_in_memory1
    assert (
        result.arena < result.given_arena or result.kept_in_memory1 > result.given_kept_in_memory1
    )
    kept = np.array(result.bufsizes)
    assert kept[1] <= memories[0].size


def test_plan_reorder_reports_and_explains() -> None:
    from cli_support import run

    result = run("plan", "decoder", "--reorder", "--explain", "--quiet", timeout=600)
    assert result.returncode == 0, result.stderr
    lines = [
        line
        for line in result.stdout.splitlines()
        if line.startswith(("reorder", "explain reorder"))
    ]
    assert lines[0].startswith("reorder: kept the structural order (write-backs moved up);")
    assert "4 write-backs moved up" in lines[0]
    assert lines[1].startswith("reorder: peak live ")
    assert " -> " in lines[1]
    assert "proved best" in lines[2]
    assert "explain reorder: 4 write-backs moved up" in lines


def test_plan_reorder_is_for_models(small_csv: Any) -> None:
    from cli_support import error_line, run

    result = run("plan", small_csv, "--reorder")
    assert result.returncode == 2
    assert "--reorder: for models only" in error_line(result)
