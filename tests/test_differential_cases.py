"""Differential tests on hand-made cases, one rule of upstream's placers each: equal sizes
keep their input order, zero sizes and empty lifetimes sit at offset 0, touching lifetimes
overlap, spills honour each memory's alignment, blocklists and disallowed memories, and
already-placed tensors in either order; where nothing fits, both fail alike and ours
changes nothing. Each case runs through tests/upstream_runs.py's
``check_matches_upstream`` and states the plan it expects.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

from cases import Case, PreplacedTensor, assert_valid_plan
from executorch.backends.cadence.aot.utils import MemoryPlanningAlgoFailure
from upstream_runs import (
    ALGORITHM_CLASSES,
    ALGORITHMS,
    ONE_MEMORY,
    Planned,
    Raised,
    assert_array_api_agrees,
    assert_same_outcome,
    check_matches_upstream,
    run_algorithm,
)

pytestmark = pytest.mark.executorch


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


def test_assert_valid_plan_fails_on_an_overlap() -> None:
    case = Case(**ONE_MEMORY, lifetimes=((0, 2), (2, 4)), sizes=(10, 10))
    with pytest.raises(pytest.fail.Exception, match="invalid plan"):
        assert_valid_plan(case, [(1, 0), (1, 5)])
    assert_valid_plan(case, [(1, 0), (1, 10)])
