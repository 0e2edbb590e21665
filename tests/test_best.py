"""``algorithm="best"``: a valid plan that is never worse than both upstream placers under
its documented objective, and the same plan every time.

The objective, compared as a tuple (smaller is better): the tensor bytes outside memory 1,
then outside memories 1-2, ..., then the total of all bufsizes. Written out here rather
than taken from the core, so that the test shares no code with what it checks.
"""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

import numpy as np
import pytest
from cases import RandomChooser, generate_case, plan_with_array_api

import cadence_memplan
from cadence_memplan.io.minimalloc import read_minimalloc_csv

INSTANCES = Path(__file__).resolve().parents[2] / "shared" / "data" / "planning-instances"


def cost(result: cadence_memplan.PlanResult, sizes: list[int] | np.ndarray) -> tuple[int, ...]:
    mem_ids = np.asarray(result.mem_ids)
    sizes = np.asarray(sizes, dtype=np.int64)
    memory_count = len(result.bufsizes) - 1
    outside = [int(sizes[mem_ids > m].sum()) for m in range(1, memory_count)]
    return (*outside, int(result.bufsizes[1:].sum()))


def upstream_costs(plan_once, sizes) -> list[tuple[int, ...]]:
    costs = []
    for algorithm in cadence_memplan.UPSTREAM_ALGORITHMS:
        with contextlib.suppress(cadence_memplan.PlanningError):
            costs.append(cost(plan_once(algorithm), sizes))
    return costs


@pytest.mark.parametrize("seed", range(150))
def test_never_worse_than_upstream_on_random_cases(seed: int) -> None:
    case = generate_case(RandomChooser(random.Random(20_000 + seed)), max_tensors=60)
    # Plans that keep an unaligned incoming offset (an upstream quirk) are not valid, and
    # best keeps only valid plans: compare without incoming offsets.
    case = type(case)(**{**case.__dict__, "incoming_offsets": ()})
    rivals = upstream_costs(lambda algorithm: plan_with_array_api(case, algorithm), case.sizes)
    try:
        best = plan_with_array_api(case, "best")
    except cadence_memplan.PlanningError:
        assert not rivals, "best failed where an upstream placer planned"
        return
    assert best.strategy is not None
    starts = [start for start, _ in case.lifetimes]
    ends = [end for _, end in case.lifetimes]
    assert (
        cadence_memplan.validate(
            starts,
            ends,
            case.sizes,
            best.mem_ids,
            best.offsets,
            case.memory_sizes,
            case.memory_alignments,
        )
        is None
    )
    for rival in rivals:
        assert cost(best, case.sizes) <= rival


CHALLENGING = sorted((INSTANCES / "challenging").glob("*.csv"))


@pytest.mark.skipif(not CHALLENGING, reason=f"{INSTANCES} is not present")
@pytest.mark.parametrize("path", CHALLENGING[:4], ids=lambda path: path.stem)
def test_smaller_than_upstream_on_hard_instances(path: Path) -> None:
    """One memory as large as all buffers: the cost is the bufsize alone. MiniMalloc's
    challenging instances leave greedy placers 30-40% above the peak-live bound; best must
    beat both, and be deterministic."""
    instance = read_minimalloc_csv(path)
    memory = ([int(instance.sizes.sum())], [1])
    best = cadence_memplan.plan(*instance[1:], *memory, algorithm="best")
    rivals = upstream_costs(
        lambda algorithm: cadence_memplan.plan(*instance[1:], *memory, algorithm=algorithm),
        instance.sizes,
    )
    assert cost(best, instance.sizes) < min(rivals)
    again = cadence_memplan.plan(*instance[1:], *memory, algorithm="best")
    assert np.array_equal(again.offsets, best.offsets)
    assert again.strategy == best.strategy


def test_budget_zero_still_plans_with_upstream_placers() -> None:
    sizes = [64, 48, 32, 16]
    result = cadence_memplan.plan(
        [0, 1, 2, 3], [2, 3, 4, 5], sizes, [256], [16], algorithm="best", budget_ms=0
    )
    assert result.strategy is not None
    assert "size" in result.strategy
    assert (
        cadence_memplan.validate(
            [0, 1, 2, 3], [2, 3, 4, 5], sizes, result.mem_ids, result.offsets, [256], [16]
        )
        is None
    )


@pytest.mark.parametrize("budget", [-1, float("nan"), "soon", None])
def test_bad_budget_is_refused(budget: object) -> None:
    with pytest.raises(ValueError, match="budget_ms must be a number >= 0"):
        cadence_memplan.plan([0], [1], [8], [64], [1], algorithm="best", budget_ms=budget)  # type: ignore[arg-type]


def test_upstream_placers_report_no_strategy() -> None:
    for algorithm in cadence_memplan.UPSTREAM_ALGORITHMS:
        assert cadence_memplan.plan([0], [1], [8], [64], [1], algorithm=algorithm).strategy is None
