"""Upstream's quirks, against cadence_memplan's placers: reproduced where a program depends
on them (an unsorted list of placed tensors, incoming offsets the heuristic keeps, even
unaligned, or loses across a skipped memory; bufsizes that count only the tensors placed
in this call), and refused with a ValueError that changes nothing where they are
deliberate differences (the README's: negative lifetimes, placed tensors outside their
memory, blocklists of memories that do not exist, a spec listed twice, a memory of size
0).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

from cases import Case, PreplacedTensor, validate_slots
from executorch.backends.cadence.aot.memory_constraints import MemConstraints
from executorch.backends.cadence.aot.memory_planning_algo import MemoryPlanningState
from executorch.backends.cadence.aot.utils import MemoryPlanningAlgoFailure
from upstream_runs import (
    ALGORITHM_CLASSES,
    ALGORITHMS,
    ONE_MEMORY,
    Planned,
    Raised,
    assert_array_api_agrees,
    assert_same_outcome,
    assert_unchanged,
    build_problem,
    capture_outcome,
    check_matches_upstream,
    is_place_spec_assertion,
    make_memory_config,
    make_spec,
    run_algorithm,
)

import cadence_memplan

pytestmark = pytest.mark.executorch


def test_heuristic_unsorted_preplaced_list_conflicts_like_upstream() -> None:
    # Upstream scans allocated_buffers in list order; before its first placement in a
    # memory the list is not sorted by offset, the best gap it finds (offset 0) is taken
    # by a tensor listed later, and place_spec's assertion fires.
    case = Case(
        **ONE_MEMORY,
        lifetimes=((0, 10),),
        sizes=(20,),
        preplaced=(
            PreplacedTensor(lifetime=(0, 10), size=50, mem_id=1, offset=50),
            PreplacedTensor(lifetime=(0, 10), size=20, mem_id=1, offset=0),
        ),
    )
    upstream = run_algorithm(ALGORITHM_CLASSES["heuristic"][0], case)
    assert isinstance(upstream, Raised)
    assert is_place_spec_assertion(upstream.error)
    ours = run_algorithm(ALGORITHM_CLASSES["heuristic"][1], case)
    assert isinstance(ours, Raised)
    assert isinstance(ours.error, MemoryPlanningAlgoFailure)
    assert_unchanged(ours)
    check_matches_upstream(case, "heuristic")
    # Listed in offset order, the same problem plans fine.
    check_matches_upstream(replace(case, preplaced=case.preplaced[::-1]), "heuristic")


def test_heuristic_kept_incoming_offset_conflict_fails_like_upstream() -> None:
    case = Case(
        **ONE_MEMORY,
        lifetimes=((0, 10),),
        sizes=(60,),
        preplaced=(PreplacedTensor(lifetime=(0, 10), size=50, mem_id=1, offset=0),),
        incoming_offsets=(10,),
    )
    upstream = run_algorithm(ALGORITHM_CLASSES["heuristic"][0], case)
    assert isinstance(upstream, Raised)
    assert is_place_spec_assertion(upstream.error)
    ours = run_algorithm(ALGORITHM_CLASSES["heuristic"][1], case)
    assert isinstance(ours, Raised)
    assert "would overlap" in str(ours.error)
    assert_unchanged(ours)
    check_matches_upstream(case, "heuristic")
    # The position algorithm ignores incoming offsets.
    check_matches_upstream(case, "position")


def test_position_never_reads_incoming_offsets() -> None:
    # Upstream's first fit sets mem_offset to 0 before it reads it, so an incoming offset
    # that no int64 holds changes nothing; best fit, which may keep it, refuses it.
    case = Case(
        **ONE_MEMORY, lifetimes=((0, 4), (2, 6)), sizes=(16, 32), incoming_offsets=(2**70, None)
    )
    upstream = run_algorithm(ALGORITHM_CLASSES["position"][0], case)
    assert isinstance(upstream, Planned)
    for occupancy in cadence_memplan.OCCUPANCIES:
        ours = run_algorithm(ALGORITHM_CLASSES["position"][1], case, occupancy=occupancy)
        assert_same_outcome(upstream, ours, case)
    heuristic = run_algorithm(ALGORITHM_CLASSES["heuristic"][1], case)
    assert isinstance(heuristic, Raised)
    assert "spec incoming offsets" in str(heuristic.error)
    assert_unchanged(heuristic)


def test_heuristic_kept_unaligned_incoming_offset_is_reproduced_and_flagged() -> None:
    case = Case(
        memory_sizes=(256,),
        memory_alignments=(16,),
        lifetimes=((0, 3), (5, 8)),
        sizes=(32, 16),
        incoming_offsets=(None, 5),
    )
    upstream = run_algorithm(ALGORITHM_CLASSES["heuristic"][0], case)
    ours = run_algorithm(ALGORITHM_CLASSES["heuristic"][1], case)
    assert isinstance(upstream, Planned)
    assert isinstance(ours, Planned)
    assert ours.after.placements == upstream.after.placements == ((1, 0), (1, 5))
    assert ours.after.bufsizes == upstream.after.bufsizes == (0, 32)
    problem = validate_slots(case, ours.after.placements)
    assert problem is not None
    assert "align" in problem
    assert_array_api_agrees(case, "heuristic", upstream)
    # With the quirk turned off (array API only) the tensor goes to an aligned offset.
    quirk_off = cadence_memplan.plan(
        [0, 5],
        [3, 8],
        [32, 16],
        [256],
        [16],
        algorithm="heuristic",
        incoming_offsets=[-1, 5],
        keep_incoming_offset=False,
    )
    assert quirk_off.offsets.tolist() == [0, 0]


@pytest.mark.parametrize(
    ("allowed", "expected"),
    [
        # Memory 1 blocklisted: upstream `continue`s before touching mem_offset, so the
        # incoming offset is still there in memory 2 and kept.
        ((True, True), (2, 128)),
        # Memory 1 not allowed: upstream resets mem_offset to None after trying it.
        ((False, True), (2, 0)),
    ],
)
def test_heuristic_incoming_offset_across_skipped_memory(
    allowed: tuple[bool, bool], expected: tuple[int, int]
) -> None:
    case = Case(
        memory_sizes=(1000, 1000),
        memory_alignments=(1, 64),
        lifetimes=((0, 2),),
        sizes=(10,),
        blocked=(frozenset({1}) if allowed[0] else frozenset(),),
        allowed=allowed,
        incoming_offsets=(128,),
    )
    check_matches_upstream(case, "heuristic")
    ours = run_algorithm(ALGORITHM_CLASSES["heuristic"][1], case)
    assert isinstance(ours, Planned)
    assert ours.after.placements == (expected,)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_bufsizes_count_only_the_tensors_placed_in_this_call(algorithm: str) -> None:
    """Upstream raises ``state.bufsizes`` in ``place_spec`` only. A tensor listed in
    ``state.allocated_buffers`` some other way is avoided but does not count, and ours
    must leave the same bufsizes."""
    outcomes: dict[str, Any] = {}
    for label, algo_class in zip(("upstream", "ours"), ALGORITHM_CLASSES[algorithm], strict=True):
        config = make_memory_config((256, 1024), (16, 16))
        state = MemoryPlanningState(config)
        listed = []
        for mem_id, offset, size in ((1, 200, 50), (2, 300, 500)):
            spec = make_spec(size, (0, 9))
            spec.mem_id, spec.mem_offset = mem_id, offset
            state.allocated_buffers[mem_id].append(spec)  # not through place_spec
            listed.append(spec)
        specs = [make_spec(16, (0, 3)), make_spec(40, (2, 5)), make_spec(300, (0, 3))]
        algo_class(config).plan(specs, None, None, state, MemConstraints())
        outcomes[label] = (
            list(state.bufsizes),
            [(spec.mem_id, spec.mem_offset) for spec in specs],
            [[id(spec) for spec in buffers] for buffers in state.allocated_buffers],
        )
    upstream_bufsizes, upstream_placements, _ = outcomes["upstream"]
    ours_bufsizes, ours_placements, _ = outcomes["ours"]
    assert ours_placements == upstream_placements
    assert ours_bufsizes == upstream_bufsizes
    # The case tells the two rules apart: counting the listed tensors would give their ends.
    assert upstream_bufsizes[1] < 256
    assert upstream_bufsizes[2] < 800


TWO_MEMORIES = {"memory_sizes": (100, 100), "memory_alignments": (1, 16)}


DOCUMENTED_REFUSALS = {
    # Upstream would treat [0, -1] as an empty lifetime.
    "negative lifetime value": (Case(**TWO_MEMORIES, lifetimes=((0, -1),), sizes=(8,)), "list"),
    # Upstream accepts a state whose tensor ends past its memory.
    "already-placed tensor outside its memory": (
        Case(
            **TWO_MEMORIES,
            lifetimes=((0, 1),),
            sizes=(8,),
            preplaced=(PreplacedTensor(lifetime=(0, 1), size=30, mem_id=2, offset=80),),
        ),
        "list",
    ),
    # Upstream ignores a blocklist entry for a memory that does not exist.
    "blocklist names memory 3 of 2": (
        Case(**TWO_MEMORIES, lifetimes=((0, 1),), sizes=(8,), blocked=(frozenset({1, 3}),)),
        "list",
    ),
    # Upstream's position placer places the spec twice; its heuristic trips its assert.
    "duplicate spec": (Case(**TWO_MEMORIES, lifetimes=((0, 1),), sizes=(8,)), "duplicated"),
    # Upstream accepts a memory of size 0 (only zero-size tensors fit there); ours refuses
    # the memory config when the algorithm is built.
    "memory of size 0": (
        Case(memory_sizes=(0, 100), memory_alignments=(1, 1), lifetimes=((0, 1),), sizes=(0,)),
        "config",
    ),
}


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("difference", DOCUMENTED_REFUSALS)
def test_documented_refusals_raise_value_error_and_change_nothing(
    algorithm: str, difference: str
) -> None:
    """The README's deliberate differences: upstream plans, ours refuses the input."""
    case, how = DOCUMENTED_REFUSALS[difference]
    upstream_class, our_class = ALGORITHM_CLASSES[algorithm]
    for algo_class in (upstream_class, our_class):
        if how == "config" and algo_class is our_class:
            with pytest.raises(
                ValueError, match=r"memory 1: memory_sizes\[0\] 0 is not an integer in"
            ):
                build_problem(algo_class, case)
            continue
        problem = build_problem(algo_class, case)
        specs = problem.specs + problem.specs[:1] if how == "duplicated" else problem.specs
        outcome = capture_outcome(
            problem,
            lambda problem=problem, specs=specs: problem.algo.plan(
                specs, None, None, problem.state, problem.constraints
            ),
        )
        if algo_class is upstream_class:
            if how != "duplicated":
                assert isinstance(outcome, Planned), f"upstream raised {outcome.error!r}"
        else:
            assert isinstance(outcome, Raised)
            assert type(outcome.error) is ValueError, repr(outcome.error)
            assert_unchanged(outcome)
