"""Staged programs on the portable runtime: the copies the staging chooses, put into an
edge program's graph (:func:`cadence_memplan.staging.rewrite.stage_program`), compute
bit for bit what the unstaged program computes: the decoder over four steps with its KV
cache carried from call to call, the encoder, an inception net. On Cadence's lowering,
the copies are Cadence's idma ops, planned into memory 1; ``plan --stage``'s file."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import torch
from executorch.exir import to_edge
from staging_cases import MODEL_OPTIONS

from cadence_memplan.models import build_model, example_calls
from cadence_memplan.staging.cost_model import DEFAULT_COST_MODEL, CostModel
from cadence_memplan.staging.graph import problem_of
from cadence_memplan.staging.problem import Copy, StagingProblem
from cadence_memplan.staging.report import peak_live
from cadence_memplan.staging.rewrite import stage_program
from cadence_memplan.staging.simulate import simulate

runtime = pytest.importorskip("executorch.extension.pybindings.portable_lib")

pytestmark = [
    pytest.mark.executorch,
    pytest.mark.filterwarnings("ignore:Mutation on a buffer in the model is detected"),
]


def outputs(program: Any, calls: list[tuple[torch.Tensor, ...]]) -> list[bytes]:
    module = runtime._load_for_executorch_from_buffer(program.buffer)
    return [output.numpy().tobytes() for call in calls for output in module.forward(call)]


def clones(program: Any) -> int:
    graph = program.exported_program().graph_module.graph
    return sum("clone" in str(node.target) for node in graph.nodes)


@pytest.mark.parametrize("name", MODEL_OPTIONS)
def test_staged_program_runs_bitwise(name: str) -> None:
    model, inputs = build_model(name, **MODEL_OPTIONS[name])
    edge = to_edge(torch.export.export(model, inputs, strict=True))
    calls = example_calls(name, inputs)
    plain = copy.deepcopy(edge).to_executorch()
    exported = edge.exported_program()
    before = clones(edge)
    capacity = peak_live(problem_of(exported, DEFAULT_COST_MODEL).problem) // 4
    report, rewrite = stage_program(exported, DEFAULT_COST_MODEL, capacity)
    assert report.staged.cycles < report.static.cycles
    assert rewrite.inserted > 0
    assert clones(edge) == before + rewrite.inserted
    staged = edge.to_executorch()
    assert staged.buffer != plain.buffer
    assert len(calls) == (4 if name == "decoder" else 1)
    assert outputs(staged, calls) == outputs(plain, calls)


@pytest.mark.slow  # a Cadence lowering and a plan through the command line: about a minute
def test_plan_stage_writes_copies_another_tool_can_recompute(tmp_path: Path) -> None:
    """``plan --stage --stage-out``: the report's lines, and a file from which the figures
    follow by the simulator alone: the problem, the plan and the copies it lists."""
    from cli_support import run

    cost = tmp_path / "model.toml"
    cost.write_text("slow_bytes_per_cycle = 1\n")
    out = tmp_path / "staging.json"
    memories = "fast=22KiB:16,slow=1MiB:16"
    result = run(
        "plan", "decoder", "--memory", memories, "--algo", "best", "--stage",
        "--cost-model", cost, "--stage-out", out, "--explain", "--quiet", timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "staging at fast memory 22,528 bytes:" in result.stdout
    document = json.loads(out.read_text())
    model = CostModel(**document["cost_model"])
    assert model.slow_bytes_per_cycle == 1
    names = [tensor["name"] for tensor in document["tensors"]]
    index = {name: number for number, name in enumerate(names)}
    problem = StagingProblem(
        flops=tuple(op["flops"] for op in document["ops"]),
        sizes=tuple(tensor["bytes"] for tensor in document["tensors"]),
        producers=tuple(tensor["producer"] for tensor in document["tensors"]),
        reads=tuple(tuple(index[name] for name in op["reads"]) for op in document["ops"]),
        writes=tuple(tuple(index[name] for name in op["writes"]) for op in document["ops"]),
        outlives=tuple(tensor["outlives"] for tensor in document["tensors"]),
    )
    copies = [
        Copy(index[c["tensor"]], c["kind"], c["start_op"], c["end_op"], c["until_op"])
        for c in document["copies"]
    ]
    assert copies
    kept = {index[name] for name in document["kept"]}
    static = {index[name] for name in document["static_fast"]}
    capacity = document["fast_memory_bytes"]
    staged = simulate(problem, model, kept, copies, capacity)
    assert staged.cycles == document["cycles"]["staged"] < document["cycles"]["static"]
    assert simulate(problem, model, static).cycles == document["cycles"]["static"]
    assert [list(times) for times in staged.copy_times] == [
        [c["begin_cycle"], c["done_cycle"]] for c in document["copies"]
    ]
    assert document["dma"] == {"bytes": staged.dma_bytes, "transfers": len(copies)}
    fast = document["access_bytes"]["staged"]["fast"]
    assert f"({fast:,} fast," in result.stdout
    explained = f"explain staging: {len(copies)} copies model {staged.cycles:,} cycles"
    assert explained in result.stdout
    first = document["copies"][0]
    assert f"\n  {first['kind']} {first['tensor']} ({first['bytes']:,} bytes): " in result.stdout


def test_stage_options_refused_without_a_model_or_stage(tmp_path: Path) -> None:
    from cli_support import SMALL_CSV, error_line, run

    csv = tmp_path / "small.csv"
    csv.write_text(SMALL_CSV)
    assert "--stage: for models only" in error_line(run("plan", csv, "--stage"))
    assert "go with --stage" in error_line(run("plan", csv, "--cost-model", csv))
    cost = tmp_path / "model.toml"
    cost.write_text("bogus = 1\n")
    refused = error_line(run("plan", "decoder", "--stage", "--cost-model", cost))
    assert "--cost-model: cost model" in refused
    assert "unknown bogus" in refused
    refused = error_line(run("plan", "decoder", "--stage", "--compare"))
    assert "--compare checks placements against upstream's" in refused


@pytest.mark.slow  # Cadence's lowering and compiler: about 20 s
def test_cadence_idma_ops_pinned_to_memory_1_and_simplified() -> None:
    """On Cadence's lowering the copies are ``idma_load``/``idma_store`` and
    ``idma_wait``: Cadence's constraints pin each load's output (a store's source) to
    memory 1, our planner places them there, and ``SimplifyIdmaOpsPass`` makes them
    ``idma_copy``."""
    from executorch.backends.cadence.aot.pass_utils import CompileMode

    from cadence_memplan import CadenceMemoryPlanning
    from cadence_memplan.cadence.lowering import backend_config, lower_exported, memory_config
    from cadence_memplan.io.memories import parse_memory_spec

    model, inputs = build_model("decoder")
    edge = lower_exported(torch.export.export(model, inputs, strict=True), "cadence")
    exported = edge.exported_program()
    capacity = peak_live(problem_of(exported, DEFAULT_COST_MODEL).problem) // 4 // 16 * 16
    report, rewrite = stage_program(exported, DEFAULT_COST_MODEL, capacity, dialect="cadence")
    assert rewrite.inserted > 0
    memories = parse_memory_spec(f"fast={capacity}:16,slow=1MiB:16")
    planning = CadenceMemoryPlanning(memory_config(memories), CompileMode.DEFAULT, 2)
    program = edge.to_executorch(backend_config("cadence", planning))
    nodes = list(program.exported_program().graph_module.graph.nodes)
    copies = [node for node in nodes if str(node.target) == "cadence.idma_copy.out"]
    waits = [node for node in nodes if str(node.target) == "cadence.idma_wait.out"]
    assert len(copies) == len(waits) == rewrite.inserted
    loads = {copy.tensor for copy in report.choice.schedule if copy.kind == "load"}
    assert loads
    for node in copies:
        source = node.args[0]
        assert node.meta["spec"].mem_id == 1 or source.meta["spec"].mem_id == 1
