"""A smoke differential test per function of cadence_memplan.exir against exir's own: random
specs through ``greedy`` and ``BankedGreedy`` (both searches), and a real export's plan
through ``verify_storage_reuse``. The full differential suite is tests/test_exir_*.py."""

from __future__ import annotations

import copy
import random
from typing import Any

import numpy as np
import pytest

pytest.importorskip(
    "executorch", reason="needs executorch (pip install 'cadence-memplan[executorch]')"
)

import torch
from executorch.exir import ExecutorchBackendConfig, to_edge
from executorch.exir import banked_memory_planning as exir_banked
from executorch.exir import memory_planning as exir_planning
from executorch.exir.error import InternalError
from executorch.exir.memory_planning import Verifier
from executorch.exir.passes.memory_planning_pass import MemoryPlanningPass
from executorch.exir.tensor import TensorSpec

import cadence_memplan
import cadence_memplan.exir as ours
from cadence_memplan.exir import records

pytestmark = pytest.mark.executorch


class _GraphModule:
    """What the planners read from a graph module: input_mem_buffer_sizes, if set."""


def _specs(seed: int) -> list[TensorSpec]:
    rng = random.Random(seed)
    specs = []
    for _ in range(rng.randrange(0, 50)):
        spec = TensorSpec(torch.float32, torch.Size([rng.choice([0, 1, 3, 4, 16, 100])]))
        start = rng.randrange(30)
        spec.lifetime = [start, start + rng.randrange(-1, 10)]
        if rng.random() < 0.05:
            spec.alignment = 64  # sorted by its old size: exir may then assert
        if seed % 3 == 0 and rng.random() < 0.3:
            spec.mem_id = rng.choice([1, 2, 3])
        specs.append(spec)
    for spec in specs:
        if seed % 4 == 0 and rng.random() < 0.2:
            base = rng.choice(specs)
            if base is not spec:
                spec.storage_base = base
                spec.storage_base_offset = rng.choice([0, 0, 16, 3, -16])
    return specs


def _outcome(planner: Any, specs: list[TensorSpec], extra_padding: int, **kwargs: Any) -> Any:
    """Everything a caller sees: the result field by field, its order, the specs' alignment."""
    graph_module = _GraphModule()
    if extra_padding:
        graph_module.input_mem_buffer_sizes = [0, 48]  # type: ignore[attr-defined]
    try:
        result = planner(16, specs, graph_module, None, extra_padding, **kwargs)
    except Exception as error:  # noqa: BLE001 - the exception is part of the outcome
        return type(error), str(error), [spec.alignment for spec in specs]
    index = {id(spec): position for position, spec in enumerate(specs)}
    placements = [
        (index[id(spec)], found.mem_id, found.mem_obj_id, found.mem_offset)
        for spec, found in result.spec_dict.items()
    ]
    return placements, result.bufsizes, [spec.alignment for spec in specs]


@pytest.mark.parametrize("occupancy", cadence_memplan.OCCUPANCIES)
def test_greedy_matches_exir(occupancy: str) -> None:
    outcomes = set()
    for seed in range(150):
        specs = _specs(seed)
        allow = seed % 2 == 0
        padding = 8 * (seed % 5 == 0)
        expected = _outcome(
            exir_planning.greedy, copy.deepcopy(specs), padding, allow_overlapping_allocations=allow
        )
        got = _outcome(
            ours.greedy,
            copy.deepcopy(specs),
            padding,
            allow_overlapping_allocations=allow,
            occupancy=occupancy,
        )
        assert got == expected, f"seed {seed}"
        outcomes.add(expected[0] if isinstance(expected[0], type) else "ok")
    assert {"ok", AssertionError} <= outcomes  # plans and exir's failures both compared


@pytest.mark.parametrize("occupancy", cadence_memplan.OCCUPANCIES)
def test_banked_greedy_matches_exir(occupancy: str) -> None:
    outcomes = set()
    for seed in range(150):
        rng = random.Random(seed)
        banks = [
            exir_banked.Bank(
                f"bank{i}", rng.choice([300, 2000, 100000]), i + 1, rng.choice([None, 32])
            )
            for i in range(rng.randrange(1, 4))
        ]
        target = exir_banked.TargetMemoryMap(banks)
        specs = _specs(seed)
        padding = 8 * (seed % 5 == 0)
        expected = _outcome(exir_banked.BankedGreedy(target), copy.deepcopy(specs), padding)
        planner = ours.BankedGreedy(target, occupancy=occupancy)
        assert isinstance(planner, exir_banked.BankedGreedy)
        assert _outcome(planner, copy.deepcopy(specs), padding) == expected, f"seed {seed}"
        outcomes.add(expected[0] if isinstance(expected[0], type) else "ok")
    assert {"ok", exir_banked.BankPlacementError} <= outcomes


class _Model(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x @ x.T)
        for _ in range(6):
            y = torch.sigmoid(y @ y) + y
        return y.sum(dim=0)


def _planned_graph_module(memory_planning_pass: MemoryPlanningPass) -> Any:
    edge = to_edge(torch.export.export(_Model(), (torch.randn(8, 8),)))
    program = edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=memory_planning_pass))
    return program, program.exported_program().graph_module


@pytest.mark.parametrize("occupancy", cadence_memplan.OCCUPANCIES)
def test_verify_storage_reuse_matches_exir(occupancy: str) -> None:
    program, graph_module = _planned_graph_module(ours.memory_planning_pass())
    verifier = Verifier(graph_module, True, True, True, program.exported_program().graph_signature)
    expected = verifier.verify_storage_reuse()
    assert expected > 0  # the plan reuses storage, so the count means something
    assert ours.verify_storage_reuse(verifier, occupancy=occupancy) == expected
    # A broken plan: exir's error, with its message.
    specs = [
        spec
        for spec in exir_planning.collect_specs_from_nodes(
            graph_module.graph.nodes, ignore_const=True, dedup=True
        )
        if spec.mem_offset is not None
    ]
    for spec in specs:
        spec.mem_offset = 0
        spec.mem_obj_id = 0
    with pytest.raises(InternalError) as exir_error:
        verifier.verify_storage_reuse()
    with pytest.raises(InternalError) as our_error:
        ours.verify_storage_reuse(verifier, occupancy=occupancy)
    assert str(our_error.value) == str(exir_error.value)
    assert "Unexpected storage overlap" in str(our_error.value)


def test_values_beyond_the_core_go_to_exir() -> None:
    """A bank of 2^62 bytes and a spec of 2^53 bytes: exir's own code plans them."""
    target = exir_banked.TargetMemoryMap([exir_banked.Bank("huge", 1 << 62, 1)])
    big = TensorSpec(torch.uint8, torch.Size([1 << 53]))
    big.lifetime = [0, 3]
    specs = [*_specs(1), big]
    for exirs, planner in [
        (exir_banked.BankedGreedy(target), ours.BankedGreedy(target)),
        (exir_planning.greedy, ours.greedy),
    ]:
        expected = _outcome(exirs, copy.deepcopy(specs), 0)
        assert expected[1][1] >= 1 << 53  # planned, not failed
        assert _outcome(planner, copy.deepcopy(specs), 0) == expected


def test_pass_plans_like_exirs_default() -> None:
    exir_program, _ = _planned_graph_module(MemoryPlanningPass())
    our_program, _ = _planned_graph_module(ours.memory_planning_pass(verify_storage_reuse=True))
    assert our_program.buffer == exir_program.buffer


def test_unknown_occupancy_is_refused_before_any_spec_changes() -> None:
    specs = _specs(1)
    before = [(spec.alignment, spec.mem_id, spec.mem_offset) for spec in specs]
    message = "occupancy must be one of"
    with pytest.raises(ValueError, match=message):
        ours.greedy(16, specs, _GraphModule(), None, occupancy="fast")  # type: ignore[arg-type]
    target = exir_banked.TargetMemoryMap([exir_banked.Bank("fast", 1 << 20, mem_id=1)])
    with pytest.raises(ValueError, match=message):
        ours.BankedGreedy(target, occupancy="fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        ours.verify_storage_reuse(None, occupancy="fast")  # type: ignore[arg-type]
    assert [(spec.alignment, spec.mem_id, spec.mem_offset) for spec in specs] == before


def test_exir_records_of_another_layout_are_refused_not_cast():
    foreign = np.zeros(1, dtype=[("start", "<i8"), ("end", "<i8"), ("size", "<i8")])
    with pytest.raises(TypeError):
        records.pack_shared_objects(
            foreign,
            alignment=16,
            allow_overlapping_allocations=True,
            extra_padding=0,
            input_sizes=np.zeros(0, dtype=np.int64),
            banks=None,
            occupancy="auto",
        )
    tensors = records.exir_tensors(1)
    tensors["lifetime"]["end"] = 3
    tensors["sort_size"] = tensors["nbytes"] = 40
    packing = records.pack_shared_objects(
        tensors,
        alignment=16,
        allow_overlapping_allocations=True,
        extra_padding=0,
        input_sizes=np.zeros(0, dtype=np.int64),
        banks=None,
        occupancy="auto",
    )
    assert (packing.error, packing.offsets.tolist(), packing.bufsizes.tolist()) == (
        "",
        [0],
        [0, 48],
    )
