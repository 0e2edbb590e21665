"""The DMA-aware bound (report.dma_bound): no legal schedule beats it, and it is never
below the free-DMA ceiling it tightens."""

from __future__ import annotations

from hypothesis import given, settings
from staging_cases import SMALL_MODEL, staged

from cadence_memplan.staging.choice import choose_staging
from cadence_memplan.staging.problem import Copy, StagingProblem
from cadence_memplan.staging.report import (
    dma_bound,
    free_dma_ceiling,
    peak_live,
    static_fast_set,
)
from cadence_memplan.staging.simulate import simulate


@settings(max_examples=150, deadline=None)
@given(staged())
def test_no_legal_schedule_beats_the_bound(
    case: tuple[StagingProblem, frozenset[int], list[Copy]],
) -> None:
    problem, static, schedule = case
    result = simulate(problem, SMALL_MODEL, static, schedule)
    capacity = max(result.fast_held, default=0)  # the schedule's own size: legal there
    bound = dma_bound(problem, SMALL_MODEL, capacity)
    assert free_dma_ceiling(problem, SMALL_MODEL, capacity).cycles <= bound
    assert bound <= simulate(problem, SMALL_MODEL, static, schedule, capacity).cycles


@settings(max_examples=40, deadline=None)
@given(staged())
def test_the_choice_does_not_beat_the_bound(
    case: tuple[StagingProblem, frozenset[int], list[Copy]],
) -> None:
    problem = case[0]
    capacity = max(peak_live(problem) // 2, 1)
    static = static_fast_set(problem, capacity)
    choice = choose_staging(problem, SMALL_MODEL, static, capacity, work_budget=20_000)
    assert dma_bound(problem, SMALL_MODEL, capacity) <= choice.staged.cycles


def test_a_read_from_fast_memory_costs_space_or_a_wait() -> None:
    """Op 0 makes a, op 1 makes c, op 2 reads a; fast memory holds one of them. The
    free-DMA ceiling serves all three accesses from fast memory; a schedule must hold a
    over op 1 (c then goes to slow memory), or store it at op 1 and wait, or write it to
    slow memory and load it at op 2 and wait: the bound counts each, and here it is the
    optimum, which the choice finds."""
    problem = StagingProblem(
        flops=(0, 0, 0),
        sizes=(4096, 4096),
        producers=(0, 1),
        reads=((), (), (0,)),
        writes=((0,), (1,), ()),
        outlives=(False, False),
    )
    capacity = 4096
    bound = dma_bound(problem, SMALL_MODEL, capacity)
    choice = choose_staging(problem, SMALL_MODEL, frozenset(), capacity)
    assert free_dma_ceiling(problem, SMALL_MODEL, capacity).cycles < bound
    assert bound == choice.staged.cycles


def test_a_prefetch_beside_a_long_op_costs_no_wait() -> None:
    """Op 0 reads a large input w and writes x, and fast memory holds w or x; op 1 only
    computes, long enough to hide x's load, and op 2 reads x. Serving w and loading x
    during op 1 waits for nothing: the bound may not count that load."""
    problem = StagingProblem(
        flops=(0, 400, 0),
        sizes=(32, 16),
        producers=(-1, 0),
        reads=((0,), (), (1,)),
        writes=((1,), (), ()),
        outlives=(False, False),
    )
    capacity = 32
    schedule = [Copy(1, "load", 1, 2, 2)]
    staged = simulate(problem, SMALL_MODEL, frozenset({0}), schedule, capacity)
    assert staged.stall_cycles == 0
    assert dma_bound(problem, SMALL_MODEL, capacity) <= staged.cycles
