"""Differential tests: cadence_memplan's placers against upstream ExecuTorch's Python ones.

Every case builds the same problem from scratch for each run, runs upstream's class and
ours, and requires the same (mem_id, mem_offset) for every tensor, the same bufsizes and
the same ``state.allocated_buffers`` order; or, where upstream raises, that ours raises
MemoryPlanningAlgoFailure on the same tensor and changes nothing. Ours runs once per
occupancy (the core's four ways to find overlapping tensors, which must all give the
same plan). Successful plans are checked by ``cadence_memplan.validate`` and replayed
through the array API.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import torch
from cases import (
    Case,
    HypothesisChooser,
    PreplacedTensor,
    RandomChooser,
    assert_valid_plan,
    generate_case,
    plan_with_array_api,
    validate_slots,
)
from executorch.backends.cadence.aot.memory_constraints import MemConstraints
from executorch.backends.cadence.aot.memory_planning_algo import MemoryPlanningState
from executorch.backends.cadence.aot.utils import MemoryPlanningAlgoFailure
from executorch.exir.tensor import TensorSpec
from hypothesis import event, given, settings
from hypothesis import strategies as st
from upstream_runs import (
    ALGORITHM_CLASSES,
    SPEC_CONTAINERS,
    Outcome,
    Planned,
    Raised,
    assert_array_api_agrees,
    assert_same_outcome,
    assert_unchanged,
    build_problem,
    capture_outcome,
    is_place_spec_assertion,
    make_memory_config,
    make_spec,
    run_algorithm,
)

import cadence_memplan
from cadence_memplan import reference

pytestmark = pytest.mark.executorch

ALGORITHMS = ("position", "heuristic")
SWEEP_SEEDS = range(400)
REFERENCE_SEEDS = range(250)


def check_matches_upstream(case: Case, algorithm: str, container: str = "list") -> Outcome:
    """The whole differential check for one case (see the module docstring), under every
    occupancy; returns upstream's outcome."""
    upstream_class, our_class = ALGORITHM_CLASSES[algorithm]
    upstream = run_algorithm(upstream_class, case)
    for occupancy in cadence_memplan.OCCUPANCIES:
        ours = run_algorithm(our_class, case, container, occupancy=occupancy)
        assert_same_outcome(upstream, ours, case)
        if isinstance(ours, Planned):
            assert_valid_plan(case, ours.after.placements)
        assert_array_api_agrees(case, algorithm, upstream, occupancy)
    return upstream


def outcome_kind(outcome: Outcome) -> str:
    if isinstance(outcome, Raised):
        return "conflict" if is_place_spec_assertion(outcome.error) else "no room"
    if any(mem_id != 1 for mem_id, _ in outcome.after.placements):
        return "spilled"
    return "fastest memory only"


# --------------------------------------------------------------------------- generated


@st.composite
def planning_cases(draw: st.DrawFn) -> Case:
    return generate_case(HypothesisChooser(draw))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@settings(max_examples=600, deadline=None, derandomize=True)
@given(case=planning_cases(), container=st.sampled_from(SPEC_CONTAINERS))
def test_generated_cases_match_upstream(algorithm: str, case: Case, container: str) -> None:
    event(outcome_kind(check_matches_upstream(case, algorithm, container)))


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
            seen.add(f"{algorithm}: {outcome_kind(run_algorithm(upstream_class, case))}")
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
    # 90 -> m2@0 (too big for m1); 80 -> m3@0 (m2@111 would end at 191 -> 222 > 200);
    # 70 -> m2@111 (181 -> 185); 60 -> m1@0 (60 -> 64); 5 -> m3@128 (m1@64 ends past 64,
    # m2@185 ends at 190 -> 222 > 200).
    assert ours.after.placements == ((1, 0), (2, 111), (3, 0), (2, 0), (3, 128))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_nothing_fits_fails_alike_and_changes_nothing(algorithm: str) -> None:
    case = Case(
        memory_sizes=(100, 100),
        memory_alignments=(1, 16),
        lifetimes=((0, 1),) * 3,
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
        blocked=(frozenset({1}), frozenset({3}), frozenset(), frozenset({1, 3})),
        allowed=(True, False, True),  # memory 2 is closed to every tensor
    )
    upstream = run_algorithm(ALGORITHM_CLASSES[algorithm][0], case)
    assert isinstance(upstream, Raised)  # tensor 3 has no memory left
    assert upstream.failing_slot == 3
    check_matches_upstream(case, algorithm)

    unblocked = replace(case, blocked=(*case.blocked[:3], frozenset({1})))
    check_matches_upstream(unblocked, algorithm)
    ours = run_algorithm(ALGORITHM_CLASSES[algorithm][1], unblocked)
    assert isinstance(ours, Planned)
    assert ours.after.placements == ((3, 0), (1, 0), (1, 100), (3, 128))


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
                [s for s, _ in case.lifetimes],
                [e for _, e in case.lifetimes],
                case.sizes,
                case.memory_sizes,
                case.memory_alignments,
                algorithm=algorithm,
            )
            full = plan_with_array_api(case, algorithm)
            assert bare.mem_ids.tolist() == full.mem_ids.tolist()
            assert bare.offsets.tolist() == full.offsets.tolist()
        assert_array_api_agrees(case, algorithm, upstream)


# --------------------------------------------------------------------------- constraints


def run_plan_with_constraints(
    algo_class: type, case: Case, pins: dict[int, tuple[int, int | None]]
):
    """Upstream's plan_with_constraints with tensor i pinned to pins[i] = (mem_id, offset)."""
    problem = build_problem(algo_class, case)
    graph = torch.fx.Graph()  # constraints are keyed by the spec in a node's meta
    for index, (mem_id, offset) in pins.items():
        node = graph.placeholder(f"t{index}")
        node.meta["spec"] = problem.specs[index]
        problem.constraints.add_absolute_placement_constraint(node, mem_id, offset)
    return capture_outcome(
        problem,
        lambda: problem.algo.plan_with_constraints(
            problem.specs, None, None, problem.state, problem.constraints
        ),
    )


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_plan_with_constraints_with_pinned_specs_matches_upstream(
    algorithm: str, seed: int
) -> None:
    rng = random.Random(1000 + seed)
    case = generate_case(RandomChooser(rng), max_tensors=25)
    case = replace(case, incoming_offsets=(), allowed=())
    pins: dict[int, tuple[int, int | None]] = {}
    next_pinned_offset = 0
    last = case.memory_count
    for index in range(case.tensor_count):
        roll = rng.random()
        if roll < 0.3:
            pins[index] = (rng.randint(1, case.memory_count), None)
        elif roll < 0.4 and next_pinned_offset + case.sizes[index] <= case.memory_sizes[last - 1]:
            # Pinned offsets stacked in the last memory: never overlapping, always inside.
            pins[index] = (last, next_pinned_offset)
            alignment = case.memory_alignments[last - 1]
            next_pinned_offset += -(-case.sizes[index] // alignment) * alignment
    upstream_class, our_class = ALGORITHM_CLASSES[algorithm]
    upstream = run_plan_with_constraints(upstream_class, case, pins)
    ours = run_plan_with_constraints(our_class, case, pins)
    if isinstance(upstream, Raised):
        # Earlier plan() calls have placed specs by then, so only the error is compared.
        assert isinstance(ours, Raised), f"upstream raised {upstream.error!r}, ours planned"
        if type(upstream.error) is MemoryError:  # a pinned spec ended up elsewhere
            assert type(ours.error) is MemoryError, repr(ours.error)
        else:
            assert isinstance(upstream.error, MemoryPlanningAlgoFailure) or (
                is_place_spec_assertion(upstream.error)
            ), repr(upstream.error)
            assert isinstance(ours.error, MemoryPlanningAlgoFailure), repr(ours.error)
        return
    assert isinstance(ours, Planned), f"upstream planned, ours raised {ours.error!r}"
    assert ours.after == upstream.after
    assert_valid_plan(case, ours.after.placements)


# --------------------------------------------------------------------------- bufsizes


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


# --------------------------------------------------------------------------- the reference


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_reference_matches_upstream_on_random_cases(algorithm: str) -> None:
    """cadence_memplan.reference, the pure-Python oracle, against upstream's classes."""
    upstream_class, _ = ALGORITHM_CLASSES[algorithm]
    failures = 0
    for seed in REFERENCE_SEEDS:
        case = generate_case(RandomChooser(random.Random(seed)))
        upstream = run_algorithm(upstream_class, case)
        planned = upstream.after.placements[len(case.preplaced) :]
        if isinstance(upstream, Raised):
            failures += 1
            with pytest.raises(cadence_memplan.PlanningError) as raised:
                plan_with_array_api(case, algorithm, planner=reference.plan)
            assert len(case.preplaced) + raised.value.tensor_index == upstream.failing_slot, case
            continue
        result = plan_with_array_api(case, algorithm, planner=reference.plan)
        assert result.mem_ids.tolist() == [mem_id for mem_id, _ in planned], case
        assert result.offsets.tolist() == [offset for _, offset in planned], case
        assert tuple(result.bufsizes.tolist()) == upstream.after.bufsizes, case
        assert (
            tuple(tuple(order.tolist()) for order in result.memory_order)
            == upstream.after.allocated_buffers
        ), case
    # The generator must exercise failures as well as plans.
    assert 0 < failures < len(REFERENCE_SEEDS)


class _SubclassedSpec(TensorSpec):
    """A TensorSpec subclass, which may size itself differently: the drop-in classes read
    it attribute by attribute rather than by arrays."""


def _varied_specs(spec_type: type[TensorSpec], seed: int) -> list[TensorSpec]:
    """Specs of several dtypes, shapes (empty dims included) and alignments, some with an
    incoming mem_offset: what exported graphs hand the placers, beyond uint8 vectors."""
    rng = random.Random(seed)
    dtypes = (torch.float32, torch.float16, torch.int8, torch.bool, torch.int64, torch.uint8)
    specs = []
    for _ in range(60):
        shape = [rng.choice((0, 1, 3, 7, 16)) for _ in range(rng.randint(0, 3))]
        spec = spec_type(rng.choice(dtypes), torch.Size(shape))
        spec.alignment = rng.choice((1, 16, 37, 64))
        start = rng.randint(0, 30)
        spec.lifetime = [start, start + rng.randint(0, 8)]
        if rng.random() < 0.2:
            spec.mem_offset = 64 * rng.randint(0, 4)
        specs.append(spec)
    return specs


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("spec_type", [TensorSpec, _SubclassedSpec])
def test_specs_of_any_dtype_shape_and_alignment_match_upstream(
    algorithm: str, spec_type: type[TensorSpec]
) -> None:
    """allocated_memory as upstream computes it, whether the drop-in reads plain specs as
    arrays or a subclass spec by spec."""
    upstream_class, our_class = ALGORITHM_CLASSES[algorithm]
    config = make_memory_config((512, 4096, 1 << 20), (16, 64, 64))
    for seed in range(8):
        placements = []
        for algo_class in (upstream_class, our_class):
            specs = _varied_specs(spec_type, seed)
            state = MemoryPlanningState(config)
            try:
                algo_class(config).plan(specs, None, None, state, MemConstraints())
            except (AssertionError, MemoryPlanningAlgoFailure) as error:
                placements.append(type(error).__name__)
                continue
            placements.append(
                [(spec.mem_id, spec.mem_offset) for spec in specs]
                + [tuple(state.bufsizes)]
                + [tuple(map(specs.index, buffers)) for buffers in state.allocated_buffers]
            )
        upstream, ours = placements
        if upstream == "AssertionError":  # upstream's kept-offset assertion: ours fails alike
            assert ours == "MemoryPlanningAlgoFailure", seed
        else:
            assert ours == upstream, seed
