"""``--lowering exir`` plans exir's program: no Cadence nop in it, and every built-in
model's program (the bytes ``plan --pte`` writes) loads on ExecuTorch's portable runtime
and computes what the eager model computes, over every call of
:func:`~cadence_memplan.models.example_calls` (the decoders' KV caches carry over).
Small models run in the default run, the others are ``slow``.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import torch
from cli_support import MODEL_TIMEOUT, run
from executorch.exir._warnings import ExperimentalWarning

from cadence_memplan.io.memories import DEFAULT_MEMORY_SPEC, parse_memory_spec
from cadence_memplan.models import MODELS, SCHEDULING_MODELS, build_model, example_calls
from cadence_memplan.stats import peak_usage_per_memory
from cadence_memplan.workflow.plan import PlanningOptions, plan_input

with warnings.catch_warnings():
    warnings.simplefilter("ignore", ExperimentalWarning)  # on import: "This API is experimental"
    from executorch.runtime import Runtime

pytestmark = [
    pytest.mark.executorch,
    pytest.mark.filterwarnings("ignore:Mutation on a buffer in the model is detected"),
]

SMALL = ("mlp", "cnn", "depthwise-cnn", "chain-cnn")
LARGE = tuple(name for name in [*MODELS, *SCHEDULING_MODELS] if name not in SMALL)


def flat(values: Any) -> list[torch.Tensor]:
    if isinstance(values, torch.Tensor):
        return [values]
    return [tensor for value in values for tensor in flat(value)]


def check_runs_as_eager(name: str, pte: Path) -> None:
    """Every output of every call of ``pte`` on the portable runtime is eager's."""
    program = Runtime.get().load_program(pte)
    method = program.load_method("forward")  # raises for an op the runtime lacks (0x14)
    model, inputs = build_model(name)  # a fresh model: its KV cache starts empty, as the pte's
    calls = example_calls(name, inputs)
    with torch.no_grad():
        for index, call in enumerate(calls):
            got = flat(method.execute(list(call)))
            expected = flat(model(*call))
            assert len(got) == len(expected), (name, index)
            for ours, eager in zip(got, expected, strict=True):
                torch.testing.assert_close(ours, eager, rtol=1e-4, atol=1e-5)


def exir_program(name: str, tmp_path: Path) -> Path:
    memories = parse_memory_spec(DEFAULT_MEMORY_SPEC)
    planned = plan_input(name, memories, PlanningOptions("position", lowering="exir"))
    ops = {
        str(operator.name)
        for plan in planned.program.executorch_program.execution_plan
        for operator in plan.operators
    }
    assert not [op for op in ops if op.endswith("_nop") or op.startswith("cadence::")], ops
    # The report's figures are this program's: each memory's peak usage is the buffer the
    # program reserves for it, up to that memory's alignment.
    table = planned.table
    usage = peak_usage_per_memory(table.mem_ids, table.offsets, table.sizes, len(memories))
    reserved = planned.program.exported_program().graph_module.meta["non_const_buffer_sizes"]
    for mem_id, memory in enumerate(memories, start=1):
        buffer = reserved[mem_id] if mem_id < len(reserved) else 0
        assert usage[mem_id] <= buffer < usage[mem_id] + memory.alignment, (mem_id, reserved)
    pte = tmp_path / f"{name}.pte"
    pte.write_bytes(planned.program.buffer)
    return pte


@pytest.mark.parametrize("name", SMALL)
def test_small_models_exir_program_runs_as_eager(name: str, tmp_path: Path) -> None:
    check_runs_as_eager(name, exir_program(name, tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize("name", LARGE)
def test_larger_models_exir_program_runs_as_eager(name: str, tmp_path: Path) -> None:
    check_runs_as_eager(name, exir_program(name, tmp_path))


def test_cli_exir_pte_runs_on_the_portable_runtime(tmp_path: Path) -> None:
    """The command line's ``--pte``, for a model whose cat and slices Cadence's lowering
    would make nops, and what it says about where the program runs."""
    pte = tmp_path / "cnn.pte"
    result = run("cnn", "--lowering", "exir", "--pte", pte, "-q", timeout=MODEL_TIMEOUT)
    assert result.returncode == 0, result.stderr
    assert "it runs on the portable runtime" in result.stdout
    assert "inside another's storage" not in result.stdout  # no nop shares a tensor's bytes
    check_runs_as_eager("cnn", pte)
