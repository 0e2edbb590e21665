"""``cadence_memplan.exir.best`` against exir's own ``greedy`` (executorch 1.5.x) on the
inputs of tests/exir_cases.py: where exir plans, ``best`` plans every spec in the memory
exir gives it, realigns the specs as exir does, and its bufsizes are never larger, memory
by memory (on a tie the memory's plan is exir's, ``mem_obj_id`` included); every plan is
accepted by exir's own ``Verifier.verify_storage_reuse``, by
``cadence_memplan.exir.verify_storage_reuse`` and by the independent validator. Where exir
raises, ``best`` raises exir's error and leaves every spec as it found it.

Also: bad arguments, the fallback to exir's function, the suite ``[greedy, best]`` and
``memory_planning_pass(smallest=True)``, with exir's Python verifier inside
``to_executorch``.
"""

from __future__ import annotations

import contextlib
import copy
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import torch
from cases import HypothesisChooser, RandomChooser
from executorch.exir import ExecutorchBackendConfig, to_edge
from executorch.exir.error import InternalError
from executorch.exir.memory_planning import (
    MemoryPlanningAlgorithmSuite,
    _extend_storage_base_lifetimes,
)
from executorch.exir.memory_planning import greedy as exir_greedy
from executorch.exir.passes import MemoryPlanningPass
from executorch.exir.tensor import TensorSpec
from exir_cases import (
    NAMED_GREEDY_CASES,
    GreedyCase,
    build_specs,
    generate_greedy_case,
    graph_module_with,
    spec,
)
from exir_runs import Planned, Raised, capture, run_greedy, spec_fields, verifier_over
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cadence_memplan
import cadence_memplan.exir
from cadence_memplan.models import build_model
from cadence_memplan.stats import peak_live_bytes

pytestmark = [
    pytest.mark.executorch,
    # The zoo's decoder keeps its KV cache in mutable buffers, whose initial contents it
    # never reads; exir warns that it will not serialize them.
    pytest.mark.filterwarnings("ignore:Mutation on a buffer in the model is detected"),
]

SWEEP_SEEDS = range(300)
NOT_SORTED = ("AssertionError", "Allocation specs are not sorted")


def run_best(case: GreedyCase, specs: list[TensorSpec], **options: Any) -> Planned | Raised:
    """``best`` on a deep copy of ``specs``, in the case's order."""
    copies = copy.deepcopy(specs)
    ordered = [copies[i] for i in case.visit_order()]

    def call(_: list[TensorSpec], graph_module: Any) -> Any:
        return cadence_memplan.exir.best(
            case.alignment, ordered, graph_module, None, case.extra_padding, **options
        )

    return capture(call, copies, graph_module_with(case.input_mem_buffer_sizes))


def with_storage_lifetimes(specs: list[TensorSpec]) -> list[TensorSpec]:
    """The specs with their storage bases' lifetimes widened, as exir's apply_algo does
    before it plans (skipped where exir refuses the chains: it raises for a cycle)."""
    with contextlib.suppress(InternalError):
        _extend_storage_base_lifetimes(set(specs))
    return specs


def arena_starts(case: GreedyCase, mem_ids: Sequence[int]) -> list[int]:
    """Where each memory's arena starts: after its submodules' buffers, as in greedy."""
    sizes = case.input_mem_buffer_sizes or ()
    return [sizes[m] if m < len(sizes) else 0 for m in mem_ids]


def written(case: GreedyCase, specs: list[TensorSpec], outcome: Planned) -> list[TensorSpec]:
    """Copies of the specs with the plan written into them, as exir's suite writes it."""
    planned = copy.deepcopy(specs)
    for index, (mem_id, offset, obj_id) in outcome.placements.items():
        planned[index].mem_id, planned[index].mem_offset, planned[index].mem_obj_id = (
            mem_id,
            offset,
            obj_id,
        )
        planned[index].alignment = case.alignment
    return planned


def verified(planned: list[TensorSpec]) -> str:
    """exir's Verifier.verify_storage_reuse on the planned specs, and ours: the same
    outcome, "count N" or the error's first words."""
    verifier = verifier_over(planned)
    try:
        outcome = f"count {verifier.verify_storage_reuse()}"
    except InternalError as error:
        outcome = str(error).split(":")[0]
    try:
        ours = f"count {cadence_memplan.exir.verify_storage_reuse(verifier)}"
    except InternalError as error:
        ours = str(error).split(":")[0]
    assert ours == outcome
    return outcome


def assert_valid_plan(
    case: GreedyCase, specs: list[TensorSpec], outcome: Planned, exir: Planned | None = None
) -> None:
    """The plan passes exir's Verifier and ours (unless exir's own plan fails them too:
    specs backed by the same storage that overlap in time and bytes, where the offsets
    inside the base are the input's), and the independent validator on the specs that own
    storage; each spec lies in its memory's arena."""
    assert sorted(outcome.placements) == list(range(len(specs)))
    planned = written(case, specs, outcome)
    if exir is None or verified(written(case, specs, exir)).startswith("count"):
        assert verified(planned).startswith("count"), f"{verified(planned)}\ncase={case}"
    if not planned:
        return
    mem_ids = [s.mem_id for s in planned]
    starts = arena_starts(case, mem_ids)
    for s, start in zip(planned, starts, strict=True):
        assert (s.mem_offset - start) % case.alignment == 0, (s, case)
        assert start <= s.mem_offset
        assert s.mem_offset + s.allocated_memory <= outcome.bufsizes[s.mem_id] - case.extra_padding
    owners = [i for i, s in enumerate(planned) if s.storage_base is None]
    if not owners:
        return
    memories = sorted({mem_ids[i] for i in owners})
    rank = {m: r + 1 for r, m in enumerate(memories)}
    shift = min(0, *(time for i in owners for time in planned[i].lifetime))
    problem = cadence_memplan.validate(
        [planned[i].lifetime[0] - shift for i in owners],
        [planned[i].lifetime[1] - shift for i in owners],
        [planned[i].allocated_memory for i in owners],
        [rank[mem_ids[i]] for i in owners],
        [planned[i].mem_offset for i in owners],
        [max(1, outcome.bufsizes[m]) for m in memories],
        [1] * len(memories),
    )
    assert problem is None, f"{problem}\ncase={case}"


def check_best(case: GreedyCase) -> str:
    """The check of one case; returns what happened: "smaller", "tie", "planned" (where
    exir's greedy asserts its sort), or exir's error."""
    case = replace(case, allow_overlapping_allocations=True)  # best's greedy candidate
    specs = build_specs(case.specs)
    if any(d.storage_base is not None for d in case.specs):
        specs = with_storage_lifetimes(specs)
    exir = run_greedy(exir_greedy, case, specs)
    ours = run_best(case, specs)
    if isinstance(ours, Raised):
        assert ours.fields_after == ours.fields_before, f"{ours.summary} changed the specs"
    if isinstance(exir, Raised) and exir.summary != NOT_SORTED:
        assert isinstance(ours, Raised), f"exir raised {exir.summary}, best planned\n{case}"
        assert ours.summary == exir.summary, f"{case}"
        return exir.summary[0]
    if isinstance(exir, Raised):  # greedy's quirk: best plans, or finds the storage error
        if isinstance(ours, Raised):
            assert ours.summary[0] == "InternalError", ours.summary
            return "InternalError"
        assert_valid_plan(case, specs, ours)
        return "planned"
    assert isinstance(ours, Planned), f"best raised {ours.summary}, exir planned\n{case}"
    assert ours.fields_after == exir.fields_after  # realigned as exir realigns
    assert len(ours.bufsizes) == len(exir.bufsizes)
    for index, (mem_id, _, _) in exir.placements.items():
        assert ours.placements[index][0] == mem_id
    for mem_id, (size, exir_size) in enumerate(zip(ours.bufsizes, exir.bufsizes, strict=True)):
        assert size <= exir_size, f"memory {mem_id}: {size} > exir's {exir_size}\n{case}"
        if size == exir_size:
            for index, placement in exir.placements.items():
                if placement[0] == mem_id:
                    assert ours.placements[index] == placement, "a tie is not greedy's plan"
    assert_valid_plan(case, specs, ours, exir)
    return "smaller" if sum(ours.bufsizes) < sum(exir.bufsizes) else "tie"


BEST_NAMED_CASES = {
    name: case
    for name, case in NAMED_GREEDY_CASES.items()
    # The validator holds int64 sizes, not the 2^64 bytes of the case named for them.
    if name
    not in (
        "alignment 0",
        "input_mem_buffer_sizes not a list",
        "bytes past 2^64: exir's Python ints",
    )
}


@pytest.mark.parametrize("name", BEST_NAMED_CASES)
def test_named_case(name: str) -> None:
    check_best(BEST_NAMED_CASES[name])


@pytest.mark.parametrize("seed", SWEEP_SEEDS)
def test_random_case(seed: int) -> None:
    check_best(generate_greedy_case(RandomChooser(random.Random(seed)), max_specs=60))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_hypothesis_case(data: st.DataObject) -> None:
    check_best(generate_greedy_case(HypothesisChooser(data.draw)))


def test_random_cases_reach_every_path() -> None:
    """The seeded sweep holds best to greedy where it is smaller, where it ties, where
    greedy's sort assertion leaves it the only plan, and on exir's storage errors (the
    named cases reach the others)."""
    seen = Counter(
        check_best(generate_greedy_case(RandomChooser(random.Random(seed)), max_specs=60))
        for seed in SWEEP_SEEDS
    )
    for kind in ("smaller", "tie", "planned", "InternalError"):
        assert seen[kind] >= 3, f"the sweep reaches {kind!r} only {seen[kind]} times: {seen}"


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10))
def test_large_random_case(seed: int) -> None:
    """Up to 1,500 specs (exir's greedy and verifier are quadratic: seconds each)."""
    check_best(generate_greedy_case(RandomChooser(random.Random(20_000 + seed)), max_specs=1_500))


def stacked_case() -> GreedyCase:
    """Greedy stacks the 64-byte spec above both 96-byte ones inside the 256-byte object
    (the highest overlapping allocation), and the 128-byte spec no longer fits beside it:
    a new object. Below the bound: 256 bytes hold everything alive at once."""
    return GreedyCase(
        (
            spec(256, (0, 1)),
            spec(128, (2, 3)),
            spec(96, (4, 5)),
            spec(96, (2, 9)),
            spec(64, (6, 7)),
            spec(32, (8, 9)),
        )
    )


def test_smaller_than_greedy_and_at_the_bound() -> None:
    case = stacked_case()
    specs = build_specs(case.specs)
    exir = run_greedy(exir_greedy, case, specs)
    ours = run_best(case, specs)
    assert isinstance(exir, Planned)
    assert isinstance(ours, Planned)
    bound = peak_live_bytes(
        np.array([d.lifetime[0] for d in case.specs]),
        np.array([d.lifetime[1] for d in case.specs]),
        np.array([d.nbytes for d in case.specs]),
    )
    assert ours.bufsizes[1] == bound < exir.bufsizes[1]
    assert check_best(case) == "smaller"


def test_storage_chain_keeps_its_offsets() -> None:
    """A chain of storage-backed specs sits at its storage_base_offsets inside its root,
    and the root is planned over the chain's lifetimes."""
    case = GreedyCase(
        (
            spec(256, (0, 1)),
            spec(128, (0, 3)),
            spec(64, (2, 3), storage_base=1, storage_base_offset=32),
            spec(16, (4, 6), storage_base=2, storage_base_offset=16),
            spec(128, (5, 6)),
        )
    )
    specs = build_specs(case.specs)
    ours = run_best(case, specs)
    assert isinstance(ours, Planned)
    offsets = {index: offset for index, (_, offset, _) in ours.placements.items()}
    assert offsets[2] == offsets[1] + 32
    assert offsets[3] == offsets[2] + 16
    objects = {index: obj for index, (_, _, obj) in ours.placements.items()}
    assert objects[1] == objects[2] == objects[3]
    # The root holds its storage until node 6, so spec 4 must not take its bytes.
    assert not offsets[1] <= offsets[4] < offsets[1] + 128
    assert not offsets[4] <= offsets[1] < offsets[4] + 128
    assert check_best(case) in ("smaller", "tie")


def test_negative_node_indices() -> None:
    """exir's greedy takes any int lifetimes; the core's node indices start at 0, so best
    shifts them."""
    case = GreedyCase(tuple(replace(s, lifetime=(s.lifetime[0] - 5, s.lifetime[1] - 5))
                            for s in stacked_case().specs))  # fmt: skip
    assert check_best(case) == "smaller"


def test_suite_keeps_greedy_on_a_tie_and_best_when_smaller() -> None:
    tie = GreedyCase(tuple(spec(64, (i, i + 1)) for i in range(6)))
    for case, expected in ((tie, "tie"), (stacked_case(), "smaller")):
        specs = build_specs(case.specs)
        outcomes = []
        for algorithms in ([exir_greedy], [cadence_memplan.exir.greedy, cadence_memplan.exir.best]):
            copies = copy.deepcopy(specs)
            bufsizes = MemoryPlanningAlgorithmSuite(algo_list=algorithms)(
                case.alignment, copies, graph_module_with(None), None, 0
            )
            outcomes.append((sum(bufsizes), spec_fields(copies)))
        if expected == "tie":
            assert outcomes[1] == outcomes[0]
        else:
            assert outcomes[1][0] < outcomes[0][0]


class _Subclass(TensorSpec):
    pass


def test_specs_the_arrays_cannot_carry_are_planned_by_exir() -> None:
    """A TensorSpec subclass may size itself differently: exir's greedy plans it."""
    case = stacked_case()
    specs = build_specs(case.specs)
    special = _Subclass(torch.uint8, torch.Size([48]))
    special.lifetime = [0, 9]
    specs.append(special)
    case = replace(case, specs=(*case.specs, spec(48, (0, 9))))
    exir = run_greedy(exir_greedy, case, specs)
    ours = run_best(case, specs)
    assert isinstance(exir, Planned)
    assert ours == exir


def test_exir_error_in_the_fallback_leaves_the_specs() -> None:
    """exir's greedy realigns specs before it fails on input_mem_buffer_sizes that are not
    a list; best puts the alignments back."""
    specs = build_specs([spec(64, (0, 1), alignment=1), spec(16, (1, 2), alignment=1)])
    graph_module = graph_module_with(None)
    graph_module.input_mem_buffer_sizes = (1, 2)
    before = spec_fields(specs)
    with pytest.raises(AssertionError):
        cadence_memplan.exir.best(16, specs, graph_module, None, 0)
    assert spec_fields(specs) == before


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"alignment": 0}, ValueError, "alignment"),
        ({"alignment": 16.0}, TypeError, "alignment"),
        ({"alignment": True}, TypeError, "alignment"),
        ({"extra_padding": -1}, ValueError, "extra_padding"),
        ({"budget_ms": -1}, ValueError, "budget_ms"),
        ({"budget_ms": float("nan")}, ValueError, "budget_ms"),
        ({"budget_ms": "soon"}, ValueError, "budget_ms"),
        ({"work_budget": -1}, ValueError, "work_budget"),
        ({"work_budget": 1.5}, TypeError, "work_budget"),
    ],
)
def test_bad_arguments_raise_and_change_nothing(
    arguments: dict[str, Any], error: type[Exception], match: str
) -> None:
    specs = build_specs(stacked_case().specs)
    for tensor_spec in specs:
        tensor_spec.alignment = 1
    before = spec_fields(specs)
    call = {"alignment": 16, "extra_padding": 0, **arguments}
    budget = {key: call.pop(key) for key in ("budget_ms", "work_budget") if key in call}
    with pytest.raises(error, match=match):
        cadence_memplan.exir.best(
            call["alignment"], specs, graph_module_with(None), None, call["extra_padding"],
            **budget,
        )  # fmt: skip
    assert spec_fields(specs) == before


def test_storage_error_changes_nothing() -> None:
    case = NAMED_GREEDY_CASES["storage offset misaligned"]
    specs = build_specs(case.specs)
    for tensor_spec in specs:
        tensor_spec.alignment = 1
    before = spec_fields(specs)
    with pytest.raises(InternalError, match="must respect alignment"):
        cadence_memplan.exir.best(16, specs, graph_module_with(None), None, 0)
    assert spec_fields(specs) == before


@pytest.mark.parametrize("budget", [{"work_budget": 0}, {"budget_ms": 0}])
def test_a_zero_budget_still_plans(budget: dict[str, float]) -> None:
    case = stacked_case()
    ours = run_best(case, build_specs(case.specs), **budget)
    assert isinstance(ours, Planned)
    assert_valid_plan(case, build_specs(case.specs), ours)


def test_numpy_integer_arguments() -> None:
    """alignment and extra_padding may be numpy integers, as exir's greedy allows."""
    case = stacked_case()
    specs = build_specs(case.specs)
    exir = exir_greedy(16, copy.deepcopy(specs), graph_module_with(None), None, 8)
    ours = cadence_memplan.exir.best(np.int64(16), specs, graph_module_with(None), None, np.int8(8))
    assert ours.bufsizes[1] < exir.bufsizes[1]
    assert all(type(size) is int for size in ours.bufsizes)
    assert all(s.alignment == 16 and type(s.alignment) is int for s in specs)


# --------------------------------------------------------------------------- the pass


def test_smallest_refuses_non_overlapping_allocations() -> None:
    with pytest.raises(ValueError, match="allow_overlapping_allocations"):
        cadence_memplan.exir.memory_planning_pass(
            smallest=True, allow_overlapping_allocations=False
        )


def test_smallest_runs_greedy_then_best() -> None:
    suite = cadence_memplan.exir.memory_planning_pass(smallest=True).memory_planning_algo
    assert suite.algo_list == [cadence_memplan.exir.greedy, cadence_memplan.exir.best]


def greedy(*arguments: Any) -> list[int]:
    """The suite [greedy, best] under the name ``greedy``: exir's MemoryPlanningPass then
    runs its own Python ``Verifier.verify_storage_reuse`` on the plan (it checks the
    callable's name)."""
    suite = MemoryPlanningAlgorithmSuite(
        algo_list=[cadence_memplan.exir.greedy, cadence_memplan.exir.best]
    )
    return suite(*arguments)


@pytest.mark.parametrize(
    ("model", "options"),
    [
        ("encoder", {"layers": 2, "width": 32, "tokens": 8}),
        ("decoder", {}),
        ("cnn", {"image": 8}),
    ],
)
def test_exir_verifier_accepts_the_plan_in_to_executorch(
    model: str, options: dict[str, Any]
) -> None:
    """exir's own verify_storage_reuse and verify_graph_input_output, inside exir's pass,
    on the program [greedy, best] plans; and the plan is no larger than exir's default."""
    built, inputs = build_model(model, **options)
    edge = to_edge(torch.export.export(built, inputs, strict=True))
    default = copy.deepcopy(edge).to_executorch()
    ours = edge.to_executorch(
        ExecutorchBackendConfig(
            memory_planning_pass=MemoryPlanningPass(memory_planning_algo=greedy)
        )
    )
    sizes = ours.exported_program().graph_module.meta["non_const_buffer_sizes"]
    default_sizes = default.exported_program().graph_module.meta["non_const_buffer_sizes"]
    assert len(sizes) == len(default_sizes)
    assert sum(sizes) <= sum(default_sizes)


def test_best_alone_in_a_pass_with_submodule_buffers() -> None:
    """exir's cond: each branch is planned first, and the parent's arena starts after the
    branches' buffers (input_mem_buffer_sizes); best's program computes what exir's
    default program computes, down to the bit, on both branches."""
    runtime = pytest.importorskip("executorch.extension.pybindings.portable_lib")

    class Branching(torch.nn.Module):
        def forward(self, pred: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            def big(y: torch.Tensor) -> torch.Tensor:
                y = y + y
                return torch.mm(torch.mm(y, y).relu(), y)

            def small(y: torch.Tensor) -> torch.Tensor:
                return torch.mm(y, y)

            z = torch.cond(pred, big, small, [x])
            return torch.mm(torch.mm(z, x).softmax(-1), z)

    x = torch.randn(16, 16)
    edge = to_edge(torch.export.export(Branching(), (torch.tensor(True), x), strict=True))
    default = copy.deepcopy(edge).to_executorch()
    ours = edge.to_executorch(
        ExecutorchBackendConfig(
            memory_planning_pass=MemoryPlanningPass(
                memory_planning_algo=MemoryPlanningAlgorithmSuite(
                    algo_list=[cadence_memplan.exir.best]
                )
            )
        )
    )
    sizes = ours.exported_program().graph_module.meta["non_const_buffer_sizes"]
    default_sizes = default.exported_program().graph_module.meta["non_const_buffer_sizes"]
    assert sizes[1] <= default_sizes[1]
    for pred in (True, False):
        inputs = (torch.tensor(pred), x)
        expected = runtime._load_for_executorch_from_buffer(default.buffer).forward(inputs)
        got = runtime._load_for_executorch_from_buffer(ours.buffer).forward(inputs)
        assert [t.numpy().tobytes() for t in got] == [t.numpy().tobytes() for t in expected]


def test_the_encoder_plan_is_smaller_than_greedy() -> None:
    built, inputs = build_model("encoder", layers=2, width=32, tokens=8)
    edge = to_edge(torch.export.export(built, inputs, strict=True))
    default = copy.deepcopy(edge).to_executorch()
    smallest = edge.to_executorch(
        ExecutorchBackendConfig(
            memory_planning_pass=cadence_memplan.exir.memory_planning_pass(smallest=True)
        )
    )
    sizes = smallest.exported_program().graph_module.meta["non_const_buffer_sizes"]
    default_sizes = default.exported_program().graph_module.meta["non_const_buffer_sizes"]
    assert sizes[1] < default_sizes[1]
