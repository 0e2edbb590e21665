"""Staged programs on the portable runtime: the copies the staging chooses, put into an
edge program's graph (:func:`cadence_memplan.staging.rewrite.stage_program`), compute
bit for bit what the unstaged program computes: the decoder over four steps with its KV
cache carried from call to call, the encoder, an inception net."""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import torch
from executorch.exir import to_edge

from cadence_memplan.models import build_model, example_calls
from cadence_memplan.staging.cost_model import DEFAULT_COST_MODEL
from cadence_memplan.staging.graph import problem_of
from cadence_memplan.staging.report import peak_live
from cadence_memplan.staging.rewrite import stage_program

runtime = pytest.importorskip("executorch.extension.pybindings.portable_lib")

pytestmark = [
    pytest.mark.executorch,
    pytest.mark.filterwarnings("ignore:Mutation on a buffer in the model is detected"),
]

# name -> builder options, small to keep the default run short.
MODELS: dict[str, dict[str, Any]] = {
    "decoder": {"layers": 2},
    "encoder": {"layers": 1, "width": 32, "tokens": 8},
    "inception": {"blocks": 2, "width": 8, "image": 16},
}


def outputs(program: Any, calls: list[tuple[torch.Tensor, ...]]) -> list[bytes]:
    module = runtime._load_for_executorch_from_buffer(program.buffer)
    return [output.numpy().tobytes() for call in calls for output in module.forward(call)]


def clones(program: Any) -> int:
    graph = program.exported_program().graph_module.graph
    return sum("clone" in str(node.target) for node in graph.nodes)


@pytest.mark.parametrize("name", MODELS)
def test_staged_program_runs_bitwise(name: str) -> None:
    model, inputs = build_model(name, **MODELS[name])
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
