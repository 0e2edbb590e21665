"""The staging simulator against a cycle-by-cycle brute force on small graphs, and the
cost model's file format."""

from __future__ import annotations

import json
from fractions import Fraction
from math import ceil
from pathlib import Path

import pytest
from hypothesis import given, settings
from staging_cases import SMALL_MODEL, staged

from cadence_memplan.staging.cost_model import DEFAULT_COST_MODEL, CostModel, load_cost_model
from cadence_memplan.staging.problem import Copy, StagingProblem
from cadence_memplan.staging.simulate import IllegalSchedule, simulate


def brute_force(
    problem: StagingProblem, model: CostModel, static: frozenset[int], schedule: list[Copy]
) -> tuple[int, int, int, list[tuple[int, int]], list[int]]:
    """Cycles, fast and slow access bytes, each copy's (begin, done), fast bytes held per
    op: one cycle at a time, from the definitions of docs/staging.md."""
    ops = problem.num_ops

    def fast_at(tensor: int, op: int, write: bool) -> bool:
        if tensor in static:
            return True
        for copy in schedule:
            if copy.tensor != tensor:
                continue
            # The write a store copies out: the last before it is issued.
            made = max((w for w in range(copy.start) if tensor in problem.writes[w]), default=-1)
            if copy.kind == "store" and (op == made if write else made < op <= copy.until):
                return True
            if copy.kind == "load" and not write and copy.start <= op <= copy.until:
                return True
        return False

    cost, fast_total, slow_total = [], 0, 0
    for op in range(ops):
        accesses = [(t, False) for t in problem.reads[op]] + [(t, True) for t in problem.writes[op]]
        fast = sum(problem.sizes[t] for t, w in accesses if fast_at(t, op, w))
        slow = sum(problem.sizes[t] for t, w in accesses if not fast_at(t, op, w))
        fast_total, slow_total = fast_total + fast, slow_total + slow
        memory = Fraction(fast, model.fast_bytes_per_cycle) + Fraction(
            slow, model.slow_bytes_per_cycle
        )
        compute = Fraction(problem.flops[op], model.flops_per_cycle)
        cost.append(model.op_overhead + max(ceil(compute), ceil(memory)))
    held = []
    for op in range(ops):
        size = 0
        for tensor in static:
            first, last = problem.lifetimes[tensor]
            size += problem.sizes[tensor] if first <= op <= last else 0
        for copy in schedule:
            made = max(
                (w for w in range(copy.start) if copy.tensor in problem.writes[w]), default=-1
            )
            low = copy.start if copy.kind == "load" else made
            high = copy.until if copy.kind == "load" else max(copy.until, copy.end - 1)
            size += problem.sizes[copy.tensor] if low <= op <= high else 0
        held.append(size)
    # The clock: a queue of issued copies, one transfer at a time, ops one at a time.
    queue: list[int] = []
    times: list[list[int]] = [[-1, -1] for _ in schedule]
    remaining_dma = 0
    current: int | None = None
    op, op_left, waiting, clock = 0, 0, True, 0
    issued_for = -1
    while True:
        if current is not None and remaining_dma == 0:
            times[current][1] = clock
            current = None
        if waiting and issued_for < op:
            queue += [i for i, c in enumerate(schedule) if c.start == op]
            issued_for = op
        if current is None and queue:
            current = queue.pop(0)
            times[current][0] = clock
            remaining_dma = model.dma_cycles(problem.sizes[schedule[current].tensor])
            continue  # a zero-length transfer could finish now
        if waiting:
            pending = [i for i, c in enumerate(schedule) if c.end == op and times[i][1] < 0]
            if not pending:
                if op == ops:
                    return clock, fast_total, slow_total, [tuple(t) for t in times], held  # type: ignore[misc]
                waiting, op_left = False, cost[op]
        clock += 1
        remaining_dma -= current is not None
        if not waiting:
            op_left -= 1
            if op_left == 0:
                op, waiting = op + 1, True


@settings(max_examples=300, deadline=None)
@given(staged())
def test_simulator_matches_the_clock(
    case: tuple[StagingProblem, frozenset[int], list[Copy]],
) -> None:
    problem, static, schedule = case
    result = simulate(problem, SMALL_MODEL, static, schedule)
    cycles, fast, slow, times, held = brute_force(problem, SMALL_MODEL, static, schedule)
    assert result.cycles == cycles
    assert (result.fast_access_bytes, result.slow_access_bytes) == (fast, slow)
    assert list(result.copy_times) == times
    assert list(result.fast_held) == held
    assert result.dma_bytes == sum(problem.sizes[c.tensor] for c in schedule)
    assert result.transfers == len(schedule)
    with pytest.raises(IllegalSchedule, match="needs"):
        simulate(problem, SMALL_MODEL, static, schedule, capacity=max(held) - 1)
    assert simulate(problem, SMALL_MODEL, static, schedule, capacity=max(held)).cycles == cycles


def chain() -> StagingProblem:
    """x (input) -> op0 -> a -> op1 -> b (output)."""
    return StagingProblem(
        flops=(0, 0),
        sizes=(64, 64, 64),
        producers=(-1, 0, 1),
        reads=((0,), (1,)),
        writes=((1,), (2,)),
        outlives=(False, False, True),
    )


def test_default_model_is_the_issues() -> None:
    model = DEFAULT_COST_MODEL
    # 100 + max(FLOPs/16, fast/16 + slow/2); the DMA 4 B a cycle plus 100 a transfer.
    assert model.op_cycles(1600, 0, 0) == 200
    assert model.op_cycles(0, 160, 20) == 100 + 10 + 10
    assert model.dma_cycles(400) == 200
    static = simulate(chain(), model, frozenset())
    assert static.cycles == 2 * (100 + 64)  # every access slow: 128 bytes at 2 a cycle
    fast = simulate(chain(), model, frozenset(range(3)))
    assert fast.cycles == 2 * (100 + 8)


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_cost_model_files(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"model{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps({"slow_bytes_per_cycle": 4, "dma_overhead": 50}))
    else:
        path.write_text("slow_bytes_per_cycle = 4\ndma_overhead = 50\n")
    model = load_cost_model(path)
    assert model == CostModel(slow_bytes_per_cycle=4, dma_overhead=50)
    path.write_text('{"slow_bytes": 4}' if suffix == ".json" else "slow_bytes = 4\n")
    with pytest.raises(ValueError, match="unknown slow_bytes"):
        load_cost_model(path)
    path.write_text(
        '{"slow_bytes_per_cycle": 0}' if suffix == ".json" else "slow_bytes_per_cycle = 0\n"
    )
    with pytest.raises(ValueError, match="must be positive"):
        load_cost_model(path)
    with pytest.raises(ValueError, match="cannot read"):
        load_cost_model(tmp_path / "missing.toml")
