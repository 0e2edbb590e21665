"""Every model of the zoo through ``to_edge(...).to_executorch(...)`` planned by
``cadence_memplan.exir.memory_planning_pass(smallest=True)`` (exir's suite of
``[greedy, best]``): the program is no larger than exir's default one, it runs on
executorch's portable runtime, and every output of every call is bitwise the default
program's on the same inputs. The transformers' plans are smaller than exir's.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import torch
from executorch.exir import ExecutorchBackendConfig, to_edge
from executorch.exir.memory_planning import Verifier

import cadence_memplan.exir
from cadence_memplan.models import MODELS, build_model, example_calls

runtime = pytest.importorskip("executorch.extension.pybindings.portable_lib")

pytestmark = [
    pytest.mark.executorch,
    # The decoder's KV cache is a mutable buffer whose initial contents it never reads.
    pytest.mark.filterwarnings("ignore:Mutation on a buffer in the model is detected"),
]

# exir's greedy stacks tensors above holes in these; best reaches the peak-live bound.
SMALLER_THAN_GREEDY = {"encoder"}


def outputs(program: Any, calls: list[tuple[torch.Tensor, ...]]) -> list[bytes]:
    module = runtime._load_for_executorch_from_buffer(program.buffer)
    return [output.numpy().tobytes() for call in calls for output in module.forward(call)]


def arena(program: Any) -> list[int]:
    graph_module = program.exported_program().graph_module
    return list(graph_module.meta["non_const_buffer_sizes"])


@pytest.mark.parametrize("name", MODELS)
def test_program_runs_bitwise_as_exir_default(name: str) -> None:
    model, inputs = build_model(name)
    edge = to_edge(torch.export.export(model, inputs, strict=True))
    default = copy.deepcopy(edge).to_executorch()
    ours = edge.to_executorch(
        ExecutorchBackendConfig(
            memory_planning_pass=cadence_memplan.exir.memory_planning_pass(smallest=True)
        )
    )
    ours_sizes, default_sizes = arena(ours), arena(default)
    assert len(ours_sizes) == len(default_sizes)
    assert all(s <= d for s, d in zip(ours_sizes, default_sizes, strict=True))
    if name in SMALLER_THAN_GREEDY:
        assert sum(ours_sizes) < sum(default_sizes)
    exported = ours.exported_program()
    verifier = Verifier(exported.graph_module, True, True, True, exported.graph_signature)
    assert cadence_memplan.exir.verify_storage_reuse(verifier) > 0
    calls = example_calls(name, inputs)
    expected = outputs(default, calls)
    assert outputs(ours, calls) == expected
    assert len(expected) >= len(calls)
