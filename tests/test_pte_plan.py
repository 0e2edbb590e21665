"""``plan`` on a ``.pte`` (issue 51): the plan a program carries, per method and for the
program, held against what the ``ExecutorchProgramManager`` planned (its TensorSpecs and
its execution plans' buffer sizes, before serialization), checked by the validator with
lifetimes inferred from the instructions; a corrupted plan reported invalid; the options
that plan anew refused. The lifetimes' rules on hand-made layouts need numpy only."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
from cli_support import MODEL_TIMEOUT, error_line, run

from cadence_memplan.device.layout import (
    Instruction,
    ListValue,
    MethodLayout,
    Placement,
    ScalarValue,
    TensorValue,
)
from cadence_memplan.device.planned import method_memories, method_plan, planned_lifetimes
from cadence_memplan.workflow.plan import check_plan

# exir's emitter on the stateful program's buffers (their initial bytes are not kept).
pytestmark = pytest.mark.filterwarnings(
    "ignore:Mutation on a buffer in the model is detected:UserWarning"
)


def _tensor(memory_id: int, offset: int, nbytes: int, state: bool = False) -> TensorValue:
    return TensorValue((nbytes // 4,), False, placement=Placement(memory_id, offset, nbytes),
                       initial_data=state)  # fmt: skip


def _layout() -> MethodLayout:
    """v0 input, v1 state, v2 and v3 in a tensor list (v4), v5 output, v6 a scalar."""
    values = (
        _tensor(1, 0, 16), _tensor(1, 16, 16, state=True), _tensor(1, 32, 16),
        _tensor(1, 48, 16), ListValue("tensor", 2, (2, 3)), _tensor(1, 0, 16), ScalarValue(1),
    )  # fmt: skip
    chain = (
        Instruction("kernel", (0, 6, 2), "aten::add.out"),
        Instruction("kernel", (2, 3), "aten::neg.out"),
        Instruction("kernel", (4, 5), "aten::cat.out"),
        Instruction("delegate", (5,)),
    )
    return MethodLayout("m", values, 1, (chain,), (), (64,), (16,), (0,), (5,))


def test_lifetimes_follow_the_instructions() -> None:
    lifetimes = planned_lifetimes(_layout())
    # Input from the start, state throughout, a list's items where the list is used, the
    # output to the end (and where a delegate names it).
    assert lifetimes == {0: (0, 0), 1: (0, 3), 2: (0, 2), 3: (1, 2), 5: (2, 3)}


def test_views_and_state_read_before_any_write() -> None:
    """v1 is written at 0; v2, at v1's placement, is read first at 2: a view, alive from
    0 and one storage with v1; v3, read at 1 and never written, is state: throughout."""
    values = (_tensor(1, 0, 16), _tensor(1, 16, 16), _tensor(1, 16, 16), _tensor(1, 32, 16))
    chain = (
        Instruction("kernel", (0, 1), "aten::neg.out"),
        Instruction("kernel", (3, 0), "aten::abs.out"),
        Instruction("kernel", (2, 0), "aten::relu.out"),
    )
    layout = MethodLayout("m", values, 0, (chain,), (), (48,), (16,))
    assert planned_lifetimes(layout) == {0: (0, 2), 1: (0, 0), 2: (0, 2), 3: (0, 2)}
    table = method_plan(layout)
    assert table.shares_storage.tolist() == [False, False, True, False]
    assert table.ends.tolist() == [2, 2, 2, 2]  # v1's storage lives as long as its view
    assert check_plan(table, method_memories(layout)) is None


def test_a_hand_made_plan_checks_and_an_overlap_is_refused() -> None:
    layout = _layout()
    table, memories = method_plan(layout), method_memories(layout)
    assert [memory.size for memory in memories] == [64]
    assert check_plan(table, memories) is None
    table.offsets[list(table.labels).index("v3")] = 40  # over v2, both alive at 1 and 2
    assert check_plan(table, memories) is not None


# --------------------------------------------------------------------------- programs


def _one_method() -> Any:
    import torch
    from executorch.exir import to_edge

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = (x + 1).reshape(4, 8)  # a view exir removes: its base's placement
            return torch.cat([y, y * 2]).relu().sum(0)

    return to_edge(torch.export.export(Model(), (torch.randn(32),))).to_executorch()


def _two_methods() -> Any:
    from executorch.exir.passes import MemoryPlanningPass

    programs = pytest.importorskip("stateful_programs", reason="needs torch and executorch")
    edge = programs.edge_program(programs.KV_CACHE)
    return edge.to_executorch(
        programs.backend_config(MemoryPlanningPass(share_mutable_buffers=True))
    )


@pytest.fixture(scope="module", params=["one", "two"])
def program(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("executorch", reason="needs torch and executorch")
    manager = _one_method() if request.param == "one" else _two_methods()
    path = tmp_path_factory.mktemp("pte") / f"{request.param}.pte"
    path.write_bytes(manager.buffer)
    return manager, path


def _spec_placements(manager: Any, method: str) -> set[tuple[int, int, int]]:
    """(memory id, offset, bytes) of every planned TensorSpec of the method's graph."""
    import torch

    found = set()
    for node in manager.exported_program(method).graph_module.graph.nodes:
        specs = node.meta.get("spec")
        for spec in specs if isinstance(specs, (list, tuple)) else [specs]:
            if isinstance(spec, torch.Tensor) or getattr(spec, "mem_id", None) is None:
                continue
            element = torch.empty((), dtype=spec.dtype).element_size()
            found.add((spec.mem_id, spec.mem_offset, math.prod(spec.shape) * element))
    return found


@pytest.mark.executorch
def test_each_method_holds_the_programs_plan(program: Any) -> None:
    from cadence_memplan.device.pte import read_program_layout

    manager, path = program
    layout = read_program_layout(path)
    plans = {plan.name: plan for plan in manager.executorch_program.execution_plan}
    assert [method.name for method in layout.methods] == list(plans)
    for method in layout.methods:
        assert list(method.arenas) == list(plans[method.name].non_const_buffer_sizes[1:])
        placed = {
            (v.placement.memory_id, v.placement.offset, v.placement.nbytes)
            for v in method.values
            if isinstance(v, TensorValue) and v.placement is not None
        }
        assert placed == _spec_placements(manager, method.name)
        table = method_plan(method)
        assert len(table) > 0
        assert check_plan(table, method_memories(method)) is None


@pytest.mark.executorch
def test_plan_and_explain_on_a_pte(program: Any) -> None:
    manager, path = program
    methods = [plan.name for plan in manager.executorch_program.execution_plan]
    for extra in ([], ["--explain"]):
        result = run("plan", path, *extra, timeout=MODEL_TIMEOUT)
        assert result.returncode == 0, result.stderr
        out = result.stdout
        for name in methods:
            assert f"{path.name} method {name}:" in out
        assert out.count("plan check: valid") == len(methods)
        assert f"the program: {len(methods)} method" in out
        total = sum(
            max(
                (list(plan.non_const_buffer_sizes[1:]) + [0] * 4)[index]
                for plan in manager.executorch_program.execution_plan
            )
            for index in range(4)
        )
        assert re.search(rf"arena: {total:,} bytes", out), out
        assert out.count("explain 1 (memory 1)") == (len(methods) if extra else 0)


@pytest.mark.executorch
def test_a_corrupted_plan_is_reported_invalid(
    program: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cadence_memplan.cli.main import main
    from cadence_memplan.device import planned

    _, path = program
    honest = planned.method_plan

    def corrupted(method: MethodLayout) -> Any:
        table = honest(method)
        own = np.flatnonzero(~table.shares_storage)
        for i in own:
            for j in own:
                overlap = table.starts[i] <= table.ends[j] and table.starts[j] <= table.ends[i]
                if i != j and table.mem_ids[i] == table.mem_ids[j] and overlap:
                    table.offsets[j] = table.offsets[i] + 1  # bytes both use at once
                    return table
        raise AssertionError("no two live tensors to overlap")

    monkeypatch.setattr(planned, "method_plan", corrupted)
    assert main(["plan", str(path), "--quiet"]) == 1
    captured = capsys.readouterr()
    assert "plan check: valid" not in captured.out
    assert "the plan is invalid: method" in captured.err


@pytest.mark.executorch
def test_planning_options_and_sweep_are_refused(program: Any) -> None:
    _, path = program
    refused = run("plan", path, "--memory", "1KiB:16", "--reorder", timeout=MODEL_TIMEOUT)
    assert refused.returncode == 2
    assert error_line(refused).endswith(
        f"--memory, --reorder: {path.name} is a .pte, already planned: plan reads and checks"
        " the plan it carries (plan the .pt2 it came from to plan anew)"
    )
    assert "reading" not in refused.stderr  # refused before any work
    swept = run("sweep", path, "--vary", "1", "--sizes", "1KiB", timeout=MODEL_TIMEOUT)
    assert swept.returncode == 2
    assert "planned already" in error_line(swept)
    assert "the .pt2 it came from" in error_line(swept)
