"""The rules of staging (docs/staging.md), one test each: a schedule that breaks only that
rule is refused or charged, and the same schedule passes unnoticed when the simulator is
run without the rule, so each test fails if the rule is dropped."""

from __future__ import annotations

import pytest

from cadence_memplan.staging.cost_model import DEFAULT_COST_MODEL
from cadence_memplan.staging.problem import Copy, StagingProblem
from cadence_memplan.staging.simulate import RULES, IllegalSchedule, simulate

MODEL = DEFAULT_COST_MODEL


def without(rule: str) -> frozenset[str]:
    assert rule in RULES
    return RULES - {rule}


def residual() -> StagingProblem:
    """A residual stream: op 0 makes r (t0) from x (t3), ops 1-3 make a, b, c
    (t1, t2, t4) each from the one before, op 4 adds r back; r and the result outlive."""
    return StagingProblem(
        flops=(0, 4000, 4000, 4000, 0),
        sizes=(256, 64, 64, 16, 64, 256),
        producers=(0, 1, 2, -1, 3, 4),
        reads=((3,), (0,), (1,), (2,), (0, 4)),
        writes=((0,), (1,), (2,), (4,), (5,)),
        outlives=(True, False, False, False, False, True),
    )


def test_a_prefetch_finishes_before_its_op_starts() -> None:
    # Waited for at op 4, but op 1 reads r from the fast copy.
    late = Copy(0, "load", 1, 4, 4)
    with pytest.raises(IllegalSchedule, match="not waited for before op 1"):
        simulate(residual(), MODEL, (), [late])
    simulate(residual(), MODEL, (), [late], rules=without("prefetch_before_use"))


def test_a_prefetch_holds_its_space_from_its_start() -> None:
    # r (256 B) loaded for op 4 beside b and c (64 B each) in 320 B: only if issued at op 4.
    problem, static, capacity = residual(), (2, 4), 256 + 64
    on_time = simulate(problem, MODEL, static, [Copy(0, "load", 4, 4, 4)], capacity)
    assert on_time.fast_held[3:] == (128, 320)
    early = [Copy(0, "load", 2, 4, 4)]
    with pytest.raises(IllegalSchedule, match="op 3 needs 384 bytes"):
        simulate(problem, MODEL, static, early, capacity)
    rules = without("space_from_copy_start")
    simulate(problem, MODEL, static, early, capacity, rules=rules)


def test_dirty_data_is_written_back_before_its_space_is_reused() -> None:
    # r made in fast memory, read there by op 1, stored (waited for at op 3), loaded again
    # for op 4; b (64 B) is kept in fast memory over ops 2-3.
    problem, static, capacity = residual(), (2,), 300
    schedule = [Copy(0, "store", 1, 3, 1), Copy(0, "load", 4, 4, 4)]
    result = simulate(problem, MODEL, static, schedule)
    assert result.fast_held == (256, 256, 320, 64, 256)  # r held until its store is done
    with pytest.raises(IllegalSchedule, match="op 2 needs 320 bytes"):
        simulate(problem, MODEL, static, schedule, capacity)
    rules = without("write_back_before_reuse")
    assert simulate(problem, MODEL, static, schedule, capacity, rules=rules).fast_held[2] == 64


def test_dirty_data_is_written_back_before_a_slow_read() -> None:
    problem = residual()
    # Op 4 reads r from slow memory while the store is waited for only at the graph's end.
    store = Copy(0, "store", 1, 5, 1)
    with pytest.raises(IllegalSchedule, match="op 4 reads t0 from slow memory before"):
        simulate(problem, MODEL, (), [store])
    simulate(problem, MODEL, (), [store], rules=without("write_back_before_slow_read"))
    # A load of r issued before its store is waited for reads stale slow memory.
    early = [Copy(0, "store", 1, 4, 1), Copy(0, "load", 3, 4, 4)]
    with pytest.raises(IllegalSchedule, match="loads from slow memory before"):
        simulate(problem, MODEL, (), early)
    simulate(problem, MODEL, (), early, rules=without("write_back_before_slow_read"))


def test_an_output_made_in_fast_memory_is_home_before_the_graph_ends() -> None:
    problem = residual()
    store = Copy(5, "store", 5, 5, 4)  # the result, written back after the last op
    result = simulate(problem, MODEL, (0,), [store])
    begin, done = result.copy_times[0]
    assert begin == result.ends[-1]
    assert result.cycles == done == begin + MODEL.dma_cycles(256)


def test_one_dma_engine_runs_one_transfer_at_a_time() -> None:
    # r and c both loaded for op 4, issued together: the second waits for the first.
    problem = residual()
    both = [Copy(0, "load", 4, 4, 4), Copy(4, "load", 4, 4, 4)]
    queued = simulate(problem, MODEL, (), both)
    (_, first_done), (second_begin, second_done) = queued.copy_times
    assert second_begin == first_done
    assert (
        queued.begins[4]
        == second_done
        == queued.ends[3] + MODEL.dma_cycles(256) + MODEL.dma_cycles(64)
    )
    parallel = simulate(problem, MODEL, (), both, rules=without("one_dma_queue"))
    assert parallel.copy_times[1][0] == parallel.ends[3]
    assert queued.cycles > parallel.cycles
