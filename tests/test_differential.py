"""Differential tests: cadence_memplan's placers against upstream ExecuTorch's Python ones.

Every case builds the same problem twice from scratch, runs upstream's class and ours,
and requires the same (mem_id, mem_offset) for every tensor, the same bufsizes and the
same ``state.allocated_buffers`` order; or, where upstream raises, that ours raises
MemoryPlanningAlgoFailure on the same tensor and changes nothing. Successful plans are
checked by ``cadence_memplan.validate`` and replayed through the array API.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from executorch.backends.cadence.aot.memory_constraints import MemConstraints
from executorch.backends.cadence.aot.utils import MemoryPlanningAlgoFailure
from helpers import (
    ALGORITHM_CLASSES,
    SPEC_CONTAINERS,
    Case,
    HypothesisChooser,
    Planned,
    PreplacedTensor,
    RandomChooser,
    Raised,
    assert_array_api_agrees,
    assert_same_outcome,
    assert_unchanged,
    assert_valid_plan,
    build_problem,
    capture_outcome,
    generate_case,
    is_place_spec_assertion,
    make_spec,
    plan_with_array_api,
    run_algorithm,
    validate_slots,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import cadence_memplan

ALGORITHMS = ("position", "heuristic")
SWEEP_SEEDS = range(250)


def check_matches_upstream(case: Case, algorithm: str, container: str = "list") -> None:
    """The whole differential check for one case (see the module docstring)."""
    upstream_class, our_class = ALGORITHM_CLASSES[algorithm]
    upstream = run_algorithm(upstream_class, case)
    ours = run_algorithm(our_class, case, container)
    assert_same_outcome(upstream, ours, case)
    if isinstance(ours, Planned):
        assert_valid_plan(case, ours.after.placements)
    assert_array_api_agrees(case, algorithm, upstream)


# --------------------------------------------------------------------------- generated


@st.composite
def planning_cases(draw: st.DrawFn) -> Case:
    return generate_case(HypothesisChooser(draw))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@settings(max_examples=300, deadline=None, derandomize=True)
@given(case=planning_cases(), container=st.sampled_from(SPEC_CONTAINERS))
def test_generated_cases_match_upstream(algorithm: str, case: Case, container: str) -> None:
    check_matches_upstream(case, algorithm, container)


@pytest.mark.parametrize("seed", SWEEP_SEEDS)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_seeded_sweep_matches_upstream(algorithm: str, seed: int) -> None:
    case = generate_case(RandomChooser(random.Random(seed)))
    check_matches_upstream(case, algorithm, SPEC_CONTAINERS[seed % len(SPEC_CONTAINERS)])


def test_seeded_sweep_exercises_every_outcome() -> None:
    """Guard against a sweep that silently stopped covering spills and failures."""
    seen: set[str] = set()
    for algorithm in ALGORITHMS:
        upstream_class = ALGORITHM_CLASSES[algorithm][0]
        for seed in SWEEP_SEEDS:
            case = generate_case(RandomChooser(random.Random(seed)))
            outcome = run_algorithm(upstream_class, case)
            if isinstance(outcome, Raised):
                kind = "conflict" if is_place_spec_assertion(outcome.error) else "no room"
                seen.add(f"{algorithm}: {kind}")
            elif any(mem_id != 1 for mem_id, _ in outcome.after.placements):
                seen.add(f"{algorithm}: spilled")
            else:
                seen.add(f"{algorithm}: fastest memory only")
    assert seen == {
        "position: no room",
        "position: spilled",
        "position: fastest memory only",
        "heuristic: no room",
        "heuristic: conflict",
        "heuristic: spilled",
        "heuristic: fastest memory only",
    }


# --------------------------------------------------------------------------- hand-made

ONE_MEMORY = {"memory_sizes": (1000,), "memory_alignments": (1,)}


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_equal_sizes_keep_input_order(algorithm: str) -> None:
    case = Case(**ONE_MEMORY, lifetimes=((0, 5),) * 4, sizes=(10, 10, 30, 10))
    check_matches_upstream(case, algorithm)
    ours = run_algorithm(ALGORITHM_CLASSES[algorithm][1], case)
    assert isinstance(ours, Planned)
    assert ours.after.placements == ((1, 30), (1, 40), (1, 0), (1, 50))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_zero_sizes_and_empty_lifetimes_share_offset_zero(algorithm: str) -> None:
    case = Case(
        **ONE_MEMORY,
        lifetimes=((0, 5), (0, 5), (4, 2), (4, 2), (1, 1)),
        sizes=(0, 0, 100, 100, 7),
    )
    check_matches_upstream(case, algorithm)
    ours = run_algorithm(ALGORITHM_CLASSES[algorithm][1], case)
    assert isinstance(ours, Planned)
    assert [offset for _, offset in ours.after.placements] == [0, 0, 0, 0, 0]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_touching_lifetimes_overlap_adjacent_ones_do_not(algorithm: str) -> None:
    case = Case(**ONE_MEMORY, lifetimes=((0, 3), (3, 6), (7, 9)), sizes=(50, 40, 30))
    check_matches_upstream(case, algorithm)
    ours = run_algorithm(ALGORITHM_CLASSES[algorithm][1], case)
    assert isinstance(ours, Planned)
    assert ours.after.placements == ((1, 0), (1, 50), (1, 0))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_spills_to_slower_memories_with_their_alignment(algorithm: str) -> None:
    case = Case(
        memory_sizes=(64, 200, 5000),
        memory_alignments=(16, 37, 64),
        lifetimes=((0, 9),) * 5,
        sizes=(60, 70, 80, 90, 5),
    )
    check_matches_upstream(case, algorithm)
    ours = run_algorithm(ALGORITHM_CLASSES[algorithm][1], case)
    assert isinstance(ours, Planned)
    # 90 -> m2@0, 80 -> m3@0 (m2 would end at 185 -> 222 > 200), 70 -> m3@128,
    # 60 -> m1@0, 5 -> m2@111 (end 116 -> aligned 148 <= 200).
    assert ours.after.placements == ((1, 0), (3, 128), (3, 0), (2, 0), (2, 111))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_nothing_fits_fails_alike_and_changes_nothing(algorithm: str) -> None:
    case = Case(
        memory_sizes=(100, 100), memory_alignments=(1, 16), lifetimes=((0, 1),) * 3,
        sizes=(90, 90, 90),
    )
    upstream = run_algorithm(ALGORITHM_CLASSES[algorithm][0], case)
    ours = run_algorithm(ALGORITHM_CLASSES[algorithm][1], case)
    assert isinstance(upstream, Raised)
    assert isinstance(upstream.error, MemoryPlanningAlgoFailure)
    assert upstream.after != upstream.before  # upstream mutates; ours must not
    assert isinstance(ours, Raised)
    assert upstream.failing_slot == 2
    assert_same_outcome(upstream, ours, case)
    assert_array_api_agrees(case, algorithm, upstream)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_blocklists_and_disallowed_memories(algorithm: str) -> None:
    case = Case(
        memory_sizes=(500, 500, 500),
        memory_alignments=(1, 16, 64),
        lifetimes=((0, 4),) * 4,
        sizes=(100, 100, 100, 100),
        blocked=(frozenset({1}), frozenset({1, 3}), frozenset(), frozenset({1, 2, 3})),
        allowed=(True, False, True),
    )
    upstream = run_algorithm(ALGORITHM_CLASSES[algorithm][0], case)
    assert isinstance(upstream, Raised)  # tensor 3 is blocked everywhere
    assert upstream.failing_slot == 3
    check_matches_upstream(case, algorithm)
    unblocked = Case(**{**case.__dict__, "blocked": case.blocked[:3] + (frozenset(),)})
    check_matches_upstream(unblocked, algorithm)
    ours = run_algorithm(ALGORITHM_CLASSES[algorithm][1], unblocked)
    assert isinstance(ours, Planned)
    # Memory 2 is not allowed; tensor 1 can only go to memory 1 or 3 and 1 is blocked.
    assert ours.after.placements == ((3, 0), (2, 0), (1, 0), (1, 100)) or (
        [mem_id for mem_id, _ in ours.after.placements] == [3, 3, 1, 1]
    )


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("order", ["sorted by offset", "reversed"])
def test_preplaced_tensors_are_avoided(algorithm: str, order: str) -> None:
    preplaced = (
        PreplacedTensor(lifetime=(0, 9), size=40, mem_id=1, offset=0),
        PreplacedTensor(lifetime=(0, 9), size=20, mem_id=1, offset=100),
        PreplacedTensor(lifetime=(5, 9), size=64, mem_id=2, offset=64),
    )
    case = Case(
        memory_sizes=(160, 400),
        memory_alignments=(16, 64),
        lifetimes=((0, 3), (2, 6), (8, 8), (0, 9)),
        sizes=(50, 30, 30, 10),
        preplaced=preplaced if order == "sorted by offset" else preplaced[::-1],
    )
    check_matches_upstream(case, algorithm)


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
    check_matches_upstream(Case(**{**case.__dict__, "preplaced": case.preplaced[::-1]}), "heuristic")


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
        [0, 5], [3, 8], [32, 16], [256], [16], algorithm="heuristic",
        incoming_offsets=[-1, 5], keep_incoming_offset=False,
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


def test_memory_of_size_zero_is_accepted_like_upstream() -> None:
    """MISMATCH (not in the documented differences): upstream accepts a memory of size 0
    (only size-0 tensors fit in it, the rest spill); ours raises ValueError
    ("memory 1: size 0 is outside [1, 2^62]")."""
    case = Case(
        memory_sizes=(0, 100), memory_alignments=(1, 1), lifetimes=((0, 1), (0, 1)), sizes=(0, 10)
    )
    for algorithm in ALGORITHMS:
        upstream = run_algorithm(ALGORITHM_CLASSES[algorithm][0], case)
        assert isinstance(upstream, Planned)
        assert upstream.after.placements == ((1, 0), (2, 0))
        check_matches_upstream(case, algorithm)


def test_assert_valid_plan_fails_on_an_overlap() -> None:
    case = Case(**ONE_MEMORY, lifetimes=((0, 2), (2, 4)), sizes=(10, 10))
    with pytest.raises(pytest.fail.Exception, match="invalid plan"):
        assert_valid_plan(case, [(1, 0), (1, 5)])
    assert_valid_plan(case, [(1, 0), (1, 10)])


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_array_api_without_options_matches_upstream(algorithm: str) -> None:
    rng = random.Random(7)
    for _ in range(20):
        case = generate_case(RandomChooser(rng))
        case = Case(case.memory_sizes, case.memory_alignments, case.lifetimes, case.sizes)
        upstream = run_algorithm(ALGORITHM_CLASSES[algorithm][0], case)
        if isinstance(upstream, Planned):
            bare = cadence_memplan.plan(
                [s for s, _ in case.lifetimes], [e for _, e in case.lifetimes], case.sizes,
                case.memory_sizes, case.memory_alignments, algorithm=algorithm,
            )
            full = plan_with_array_api(case, algorithm)
            assert bare.mem_ids.tolist() == full.mem_ids.tolist()
            assert bare.offsets.tolist() == full.offsets.tolist()
        assert_array_api_agrees(case, algorithm, upstream)


# --------------------------------------------------------------------------- constraints


def run_plan_with_constraints(algo_class: type, case: Case, pins: dict[int, tuple[int, int | None]]):
    """Upstream's plan_with_constraints with tensor i pinned to pins[i] = (mem_id, offset)."""
    problem = build_problem(algo_class, case)
    constraints = MemConstraints()
    graph = torch.fx.Graph()
    for index, (mem_id, offset) in pins.items():
        node = graph.placeholder(f"t{index}")
        node.meta["spec"] = problem.specs[index]
        constraints.add_absolute_placement_constraint(node, mem_id, offset)
    for index, spec in enumerate(problem.specs):
        for mem_id in case.blocked_for(index):
            constraints.add_mem_id_to_blocklist(spec, mem_id)
    return capture_outcome(
        problem,
        lambda: problem.algo.plan_with_constraints(
            problem.specs, None, None, problem.state, constraints
        ),
    )


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_plan_with_constraints_with_pinned_specs_matches_upstream(algorithm: str, seed: int) -> None:
    rng = random.Random(1000 + seed)
    case = generate_case(RandomChooser(rng), max_tensors=25)
    case = Case(**{**case.__dict__, "incoming_offsets": (), "allowed": ()})
    pins: dict[int, tuple[int, int | None]] = {}
    next_pinned_offset = 0
    last = case.memory_count
    for index in range(case.tensor_count):
        roll = rng.random()
        if roll < 0.3:
            pins[index] = (rng.randint(1, case.memory_count), None)
        elif roll < 0.4:  # pinned offsets stacked in the last memory: never overlapping
            pins[index] = (last, next_pinned_offset)
            next_pinned_offset += -(-case.sizes[index] // case.memory_alignments[last - 1]) * (
                case.memory_alignments[last - 1]
            )
    upstream_class, our_class = ALGORITHM_CLASSES[algorithm]
    upstream = run_plan_with_constraints(upstream_class, case, pins)
    ours = run_plan_with_constraints(our_class, case, pins)
    if isinstance(upstream, Raised):
        assert isinstance(ours, Raised), f"upstream raised {upstream.error!r}, ours planned"
        if isinstance(upstream.error, MemoryError):
            assert type(ours.error) is MemoryError
        else:
            assert isinstance(ours.error, MemoryPlanningAlgoFailure), repr(ours.error)
        return
    assert isinstance(ours, Planned), f"upstream planned, ours raised {ours.error!r}"
    assert ours.after == upstream.after
    assert_valid_plan(case, ours.after.placements)


def test_array_api_and_classes_agree_on_dtypes() -> None:
    plan = cadence_memplan.plan(
        np.array([0, 0], dtype=np.int32), np.array([1, 1], dtype=np.uint8), [5, 5], [10], [1]
    )
    assert plan.mem_ids.dtype == np.int64
    assert plan.offsets.tolist() == [0, 5]
