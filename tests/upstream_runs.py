"""Run a :class:`~cases.Case` through upstream's Python placers and through ours, on
identical fresh objects, and compare what each did (needs torch and executorch).

:func:`run_algorithm` builds fresh TensorSpecs, a fresh ``MemoryPlanningState`` and fresh
``MemConstraints`` from a case, so the upstream run and our run start from identical,
independent objects. Slots are numbered as in tests/cases.py. :func:`check_matches_upstream`
is the whole differential check of one case, which the tests/test_differential_*.py files
run on generated and hand-made cases.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
from cases import Case, assert_valid_plan, plan_with_array_api
from executorch.backends.cadence.aot.memory_constraints import MemConstraints
from executorch.backends.cadence.aot.memory_planning import (
    GreedyWithHeuristic as UpstreamGreedyWithHeuristic,
)
from executorch.backends.cadence.aot.memory_planning import (
    PositionBasedGreedyWithHierarchy as UpstreamPositionBasedGreedyWithHierarchy,
)
from executorch.backends.cadence.aot.memory_planning_algo import (
    MemoryPlanningAlgo,
    MemoryPlanningState,
)
from executorch.backends.cadence.aot.utils import MemoryConfig, MemoryPlanningAlgoFailure
from executorch.exir.tensor import TensorSpec

import cadence_memplan

# algorithm name (as the array API spells it) -> (upstream class, our class)
ALGORITHM_CLASSES: dict[str, tuple[type[MemoryPlanningAlgo], type[MemoryPlanningAlgo]]] = {
    "position": (
        UpstreamPositionBasedGreedyWithHierarchy,
        cadence_memplan.PositionBasedGreedyWithHierarchy,
    ),
    "heuristic": (UpstreamGreedyWithHeuristic, cadence_memplan.GreedyWithHeuristic),
}
ALGORITHMS = ("position", "heuristic")
# One memory of 1,000 bytes, alignment 1: the hierarchy of most hand-made cases.
ONE_MEMORY = {"memory_sizes": (1000,), "memory_alignments": (1,)}


# --------------------------------------------------------------------------- specs


def make_spec(size: int, lifetime: Sequence[int]) -> TensorSpec:
    """A TensorSpec whose ``allocated_memory`` is exactly ``size`` bytes (0 allowed)."""
    spec = TensorSpec(torch.uint8, torch.Size([size]))
    spec.alignment = 1
    spec.lifetime = list(lifetime)
    assert spec.allocated_memory == size
    return spec


def make_memory_config(
    memory_sizes: Sequence[int], memory_alignments: Sequence[int]
) -> MemoryConfig:
    return MemoryConfig(list(memory_sizes), memory_alignments=list(memory_alignments))


# --------------------------------------------------------------------------- running


@dataclass(frozen=True)
class Snapshot:
    """Everything planning may mutate: every spec's placement, the state, the allow-mask."""

    placements: tuple[tuple[int | None, int | None], ...]  # per slot (mem_id, mem_offset)
    bufsizes: tuple[int, ...]
    allocated_buffers: tuple[tuple[int, ...], ...]  # per memory id 0..N, slots in list order
    memory_id_is_valid: tuple[bool, ...]


@dataclass(frozen=True)
class Planned:
    """A successful run: the snapshot after ``plan()`` returned."""

    after: Snapshot


@dataclass(frozen=True)
class Raised:
    """A run whose ``plan()`` raised; ``failing_slot`` is the first tensor, in upstream's
    visiting order (size descending, stable), that did not end up in the state."""

    error: BaseException
    before: Snapshot
    after: Snapshot
    failing_slot: int


Outcome = Planned | Raised


@dataclass
class BuiltProblem:
    """Fresh upstream objects for one Case, ready to plan."""

    algo: MemoryPlanningAlgo
    state: MemoryPlanningState
    constraints: MemConstraints
    preplaced_specs: list[TensorSpec]
    specs: list[TensorSpec]
    all_specs: list[TensorSpec] = field(init=False)  # indexed by slot

    def __post_init__(self) -> None:
        self.all_specs = self.preplaced_specs + self.specs

    def snapshot(self) -> Snapshot:
        slot_of = {id(spec): slot for slot, spec in enumerate(self.all_specs)}
        return Snapshot(
            placements=tuple((s.mem_id, s.mem_offset) for s in self.all_specs),
            bufsizes=tuple(self.state.bufsizes),
            allocated_buffers=tuple(
                tuple(slot_of[id(s)] for s in buffers) for buffers in self.state.allocated_buffers
            ),
            memory_id_is_valid=tuple(self.algo.memory_id_is_valid),
        )

    def upstream_visiting_order(self) -> list[int]:
        """Slots of the tensors to plan in the order upstream's plan() visits them."""
        indices = sorted(
            range(len(self.specs)), key=lambda i: self.specs[i].allocated_memory, reverse=True
        )
        return [len(self.preplaced_specs) + i for i in indices]

    def first_unplaced_slot(self) -> int:
        for slot in self.upstream_visiting_order():
            if not self.state.is_placed(self.all_specs[slot]):
                return slot
        return -1


def build_problem(
    algo_class: type[MemoryPlanningAlgo], case: Case, **algo_options: Any
) -> BuiltProblem:
    """Fresh specs, state, constraints and algorithm instance for ``case``; ``algo_options``
    go to the algorithm's constructor (ours take ``occupancy``)."""
    memory_config = make_memory_config(case.memory_sizes, case.memory_alignments)
    algo = algo_class(memory_config, **algo_options)
    for mem_id in range(1, case.memory_count + 1):
        algo.memory_id_is_valid[mem_id] = case.allowed_for(mem_id)
    state = MemoryPlanningState(memory_config)
    preplaced_specs = []
    for placed in case.preplaced:
        spec = make_spec(placed.size, placed.lifetime)
        spec.mem_id = placed.mem_id
        spec.mem_offset = placed.offset
        state.place_spec(spec)  # upstream's own bookkeeping keeps bufsizes consistent
        preplaced_specs.append(spec)
    constraints = MemConstraints()
    specs = []
    for index, (size, lifetime) in enumerate(zip(case.sizes, case.lifetimes, strict=True)):
        spec = make_spec(size, lifetime)
        spec.mem_offset = case.incoming_offset_for(index)
        for mem_id in sorted(case.blocked_for(index)):
            constraints.add_mem_id_to_blocklist(spec, mem_id)
        specs.append(spec)
    return BuiltProblem(algo, state, constraints, preplaced_specs, specs)


def capture_outcome(problem: BuiltProblem, planning: Callable[[], None]) -> Outcome:
    """Run ``planning`` on ``problem`` and capture its effect or its exception."""
    before = problem.snapshot()
    try:
        planning()
    except Exception as error:  # noqa: BLE001 - the caller compares the exception
        return Raised(error, before, problem.snapshot(), problem.first_unplaced_slot())
    return Planned(problem.snapshot())


SPEC_CONTAINERS = ("list", "dict", "iterator")


def wrap_specs(specs: list[TensorSpec], container: str) -> Any:
    """``specs`` as plan() may receive them: a list, a dict keyed by spec (as
    plan_with_constraints passes them), or a one-shot iterator."""
    if container == "list":
        return list(specs)
    if container == "dict":
        return dict.fromkeys(specs)
    assert container == "iterator", container
    return iter(specs)


def run_algorithm(
    algo_class: type[MemoryPlanningAlgo], case: Case, container: str = "list", **algo_options: Any
) -> Outcome:
    """Run ``algo_class.plan`` on freshly built objects for ``case``."""
    problem = build_problem(algo_class, case, **algo_options)
    return capture_outcome(
        problem,
        lambda: problem.algo.plan(
            wrap_specs(problem.specs, container), None, None, problem.state, problem.constraints
        ),
    )


# --------------------------------------------------------------------------- comparing


def is_place_spec_assertion(error: BaseException) -> bool:
    """True for the AssertionError of upstream's ``MemoryPlanningState.place_spec``."""
    frames = traceback.extract_tb(error.__traceback__)
    return isinstance(error, AssertionError) and bool(frames) and frames[-1].name == "place_spec"


def our_failing_slot(error: BaseException, case: Case) -> int:
    """The slot of the tensor our plan() names as failing (from the core's PlanningError)."""
    cause = error.__cause__
    assert isinstance(cause, cadence_memplan.PlanningError), f"no PlanningError behind {error!r}"
    return len(case.preplaced) + cause.tensor_index


def assert_same_outcome(upstream: Outcome, ours: Outcome, case: Case) -> None:
    """Ours must place every tensor like upstream, or fail where upstream fails."""
    if isinstance(upstream, Planned):
        if isinstance(ours, Raised):
            pytest.fail(f"upstream planned but ours raised {ours.error!r}\ncase={case}")
        assert ours.after.placements == upstream.after.placements, f"placements differ\ncase={case}"
        assert ours.after.bufsizes == upstream.after.bufsizes, f"bufsizes differ\ncase={case}"
        assert ours.after.allocated_buffers == upstream.after.allocated_buffers, (
            f"allocated_buffers order differs\ncase={case}"
        )
        assert ours.after.memory_id_is_valid == upstream.after.memory_id_is_valid
        return

    upstream_error = upstream.error
    if not (
        isinstance(upstream_error, MemoryPlanningAlgoFailure)
        or is_place_spec_assertion(upstream_error)
    ):
        raise AssertionError(
            f"upstream raised an unexpected error\ncase={case}"
        ) from upstream_error
    if isinstance(ours, Planned):
        pytest.fail(f"upstream raised {upstream_error!r} but ours planned\ncase={case}")
    assert isinstance(ours.error, MemoryPlanningAlgoFailure), (
        f"ours raised {ours.error!r}, expected MemoryPlanningAlgoFailure\ncase={case}"
    )
    # Same failing tensor, and the same kind of failure.
    assert our_failing_slot(ours.error, case) == upstream.failing_slot, f"case={case}"
    is_conflict = "would overlap" in str(ours.error)
    assert is_conflict == isinstance(upstream_error, AssertionError), (
        f"ours: {ours.error}\nupstream: {upstream_error!r}\ncase={case}"
    )
    assert_unchanged(ours)


def assert_unchanged(raised: Raised) -> None:
    """Our plan() must leave every spec and the state as they were when it raises."""
    assert raised.after == raised.before, (
        f"ours raised {raised.error!r} but changed specs or state:\n"
        f"before={raised.before}\nafter={raised.after}"
    )


# --------------------------------------------------------------------------- array API


def assert_array_api_agrees(
    case: Case, algorithm: str, upstream: Outcome, occupancy: str = "auto"
) -> None:
    """``cadence_memplan.plan`` must give upstream's plan, or fail on the same tensor."""
    if isinstance(upstream, Raised):
        with pytest.raises(cadence_memplan.PlanningError) as raised:
            plan_with_array_api(case, algorithm, occupancy=occupancy)
        assert len(case.preplaced) + raised.value.tensor_index == upstream.failing_slot
        return
    result = plan_with_array_api(case, algorithm, occupancy=occupancy)
    if occupancy != "auto":
        assert result.occupancy == occupancy
    planned = upstream.after.placements[len(case.preplaced) :]
    assert result.mem_ids.tolist() == [mem_id for mem_id, _ in planned], f"case={case}"
    assert result.offsets.tolist() == [offset for _, offset in planned], f"case={case}"
    assert tuple(result.bufsizes.tolist()) == upstream.after.bufsizes, f"case={case}"
    assert tuple(tuple(order.tolist()) for order in result.memory_order) == (
        upstream.after.allocated_buffers
    ), f"case={case}"


# --------------------------------------------------------------------------- the whole check


def check_matches_upstream(case: Case, algorithm: str, container: str = "list") -> Outcome:
    """The whole differential check for one case, under every occupancy (the core's four
    ways to find overlapping tensors, which must all give the same plan): upstream's class
    and ours run on fresh objects and must give the same (mem_id, mem_offset) for every
    tensor, the same bufsizes and the same ``state.allocated_buffers`` order; or, where
    upstream raises, ours raises MemoryPlanningAlgoFailure on the same tensor and changes
    nothing. A plan must pass ``cadence_memplan.validate`` and the array API must agree.
    Returns upstream's outcome."""
    upstream_class, our_class = ALGORITHM_CLASSES[algorithm]
    upstream = run_algorithm(upstream_class, case)
    for occupancy in cadence_memplan.OCCUPANCIES:
        ours = run_algorithm(our_class, case, container, occupancy=occupancy)
        assert_same_outcome(upstream, ours, case)
        if isinstance(ours, Planned):
            assert_valid_plan(case, ours.after.placements)
        assert_array_api_agrees(case, algorithm, upstream, occupancy)
    return upstream
