"""Tight memory: ``algorithm="best"`` plans from the capacities (fit first), keeps the most
bytes in memory 1 that it can, and proves how many any plan can keep (``kept_bound``),
held against brute force on small problems and against packings known by construction."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from cases import brute_force_bufsize, cut_rectangle
from cli_support import SMALL_CSV, TWO_MEMORIES, error_line, number, run

import cadence_memplan

UNBOUNDED = 1 << 40
SMALL_SIZES = [int(line.split(",")[3]) for line in SMALL_CSV.splitlines()[1:]]


def assert_valid(starts, ends, sizes, result, memory_sizes, alignments) -> None:
    problem = cadence_memplan.validate(
        starts, ends, sizes, result.mem_ids, result.offsets, memory_sizes, alignments
    )
    assert problem is None, problem


@pytest.mark.parametrize("seed", range(12))
def test_one_memory_of_exactly_the_optimum_plans(seed: int) -> None:
    # A rectangle cut into tensors packs at exactly its height and no lower; with a memory of
    # exactly that size the placers spill or fail, and fit first must find the packing.
    rng = random.Random(seed)
    alignment = [1, 3, 16, 48][seed % 4]
    height = rng.randint(8, 48)
    starts, ends, sizes = cut_rectangle(
        rng, height, rng.randint(4, 30), rng.randint(6, 50), alignment
    )
    memory = ([height * alignment], [alignment])
    result = cadence_memplan.plan(
        starts, ends, sizes, *memory, algorithm="best", work_budget=1_000_000
    )
    assert_valid(starts, ends, sizes, result, *memory)
    assert int(result.bufsizes[1]) == height * alignment
    assert result.proved_optimal


@pytest.mark.parametrize("seed", range(12))
def test_a_fast_memory_of_exactly_the_optimum_keeps_everything(seed: int) -> None:
    rng = random.Random(100 + seed)
    alignment = [1, 3, 16, 48][seed % 4]
    height = rng.randint(8, 48)
    starts, ends, sizes = cut_rectangle(
        rng, height, rng.randint(4, 30), rng.randint(6, 50), alignment
    )
    memory = ([height * alignment, UNBOUNDED], [alignment, 64])
    result = cadence_memplan.plan(
        starts, ends, sizes, *memory, algorithm="best", work_budget=1_000_000
    )
    assert_valid(starts, ends, sizes, result, *memory)
    assert (result.mem_ids == 1).all()
    assert result.kept_bound == sum(sizes)


def test_no_plan_says_it_is_proved() -> None:
    # 48 + 32 bytes alive at once in one memory of 64: no plan exists, and the error says so.
    with pytest.raises(cadence_memplan.PlanningError, match="no plan exists"):
        cadence_memplan.plan([0, 1], [3, 2], [48, 32], [64], [16], algorithm="best")


def test_no_plan_within_the_budget_says_so() -> None:
    # A rectangle the placers cannot pack at its height, with too few nodes to find it.
    rng = random.Random(7)
    for _ in range(50):
        height = rng.randint(20, 48)
        starts, ends, sizes = cut_rectangle(rng, height, 30, 40, 1)
        try:
            cadence_memplan.plan(starts, ends, sizes, [height], [1], algorithm="heuristic")
            cadence_memplan.plan(starts, ends, sizes, [height], [1], algorithm="position")
        except cadence_memplan.PlanningError:
            break
    else:
        pytest.fail("no rectangle that upstream's placers cannot pack at its height")
    with pytest.raises(cadence_memplan.PlanningError, match="no plan found within the budget"):
        cadence_memplan.plan(starts, ends, sizes, [height], [1], algorithm="best", work_budget=1)
    # With the nodes it needs, the same call plans.
    result = cadence_memplan.plan(
        starts, ends, sizes, [height], [1], algorithm="best", work_budget=10**6
    )
    assert_valid(starts, ends, sizes, result, [height], [1])


def most_kept_by_brute_force(starts, ends, sizes, capacity: int, alignment: int, weights) -> int:
    """The most weight any valid plan keeps in memory 1: over every subset, whether it packs
    (every aligned offset of every tensor tried)."""
    best = 0
    for count in range(len(sizes), 0, -1):
        for subset in itertools.combinations(range(len(sizes)), count):
            kept = sum(weights[i] for i in subset)
            if kept <= best:
                continue
            packed = brute_force_bufsize(
                [starts[i] for i in subset],
                [ends[i] for i in subset],
                [sizes[i] for i in subset],
                capacity,
                alignment,
            )
            if packed is not None:
                best = kept
    return best


@pytest.mark.parametrize("weighted", [False, True], ids=["bytes", "weights"])
@pytest.mark.parametrize("seed", range(30))
def test_kept_weight_and_its_bound_hold_against_brute_force(seed: int, weighted: bool) -> None:
    rng = random.Random(seed)
    count = rng.randint(2, 6)
    starts = [rng.randint(0, 5) for _ in range(count)]
    ends = [start + rng.randint(0, 4) for start in starts]
    sizes = [rng.choice([0, *range(1, 13)]) for _ in range(count)]
    weights = [rng.randint(0, 50) for _ in range(count)] if weighted else sizes
    alignment = rng.choice([1, 2, 4])
    capacity = rng.randint(4, 20)
    memory = ([capacity, UNBOUNDED], [alignment, 8])
    result = cadence_memplan.plan(
        starts,
        ends,
        sizes,
        *memory,
        algorithm="best",
        work_budget=100_000,
        weights=weights if weighted else None,
    )
    assert_valid(starts, ends, sizes, result, *memory)
    optimum = most_kept_by_brute_force(starts, ends, sizes, capacity, alignment, weights)
    kept = int(np.asarray(weights)[result.mem_ids == 1].sum())
    assert result.kept_bound is not None
    assert kept <= optimum <= result.kept_bound
    if result.proved_optimal:
        assert kept == optimum
    # Small problems: the selection and the exact search always finish.
    assert kept == optimum


def test_upstream_placers_report_no_kept_bound() -> None:
    for algorithm in ("position", "heuristic"):
        result = cadence_memplan.plan(
            [0, 1], [3, 2], [48, 32], [64, 1024], [16, 16], algorithm=algorithm
        )
        assert result.kept_bound is None


def test_blocked_tensors_stay_out_and_out_of_the_bound() -> None:
    # Tensor 0 may not go to memory 1; the bound counts only what may.
    blocked = np.array([[True, False], [False, False], [False, False]])
    result = cadence_memplan.plan(
        [0, 0, 0], [2, 2, 2], [40, 30, 20], [64, 1024], [1, 1], algorithm="best", blocked=blocked
    )
    assert result.mem_ids[0] == 2
    assert int(np.asarray([40, 30, 20])[result.mem_ids == 1].sum()) == 50
    assert result.kept_bound == 50
    assert result.proved_optimal


def test_weights_keep_the_heavier_tensor_in_fast_memory() -> None:
    # Two tensors alive together, room for one: by bytes the larger stays, by weight the
    # one read most.
    by_bytes = cadence_memplan.plan(
        [0, 0], [3, 3], [48, 32], [64, 1024], [16, 16], algorithm="best"
    )
    assert by_bytes.mem_ids.tolist() == [1, 2]
    by_traffic = cadence_memplan.plan(
        [0, 0], [3, 3], [48, 32], [64, 1024], [16, 16], algorithm="best", weights=[48, 320]
    )
    assert by_traffic.mem_ids.tolist() == [2, 1]
    assert by_traffic.kept_bound == 320
    assert by_traffic.proved_optimal


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"weights": [1, 2, 3]}, "weights has 3 entries for 2 tensors"),
        ({"weights": [1, -1]}, "weights must be >= 0"),
        ({"weights": [1, 1], "algorithm": "position"}, "weights apply to algorithm='best' only"),
    ],
)
def test_bad_weights_are_refused(options, match) -> None:
    arguments = {"algorithm": "best", **options}
    with pytest.raises(ValueError, match=match):
        cadence_memplan.plan([0, 0], [3, 3], [48, 32], [64, 1024], [16, 16], **arguments)


def test_the_command_line_prints_what_memory_1_keeps_against_its_bound(small_csv) -> None:
    # SMALL_CSV peaks at 8,880 B alive at once; a 4 KiB memory 1 keeps part of it.
    result = run(small_csv, "--algo", "best", "--memory", TWO_MEMORIES)
    assert result.returncode == 0, result.stderr
    kept = next(line for line in result.stdout.splitlines() if "can be kept" in line)
    name, rest = kept.split(": keeps ")
    kept_bytes, bound = (number(part.split()[0]) for part in rest.split("; at most "))
    assert name == "mem1"
    assert 0 < kept_bytes <= bound <= sum(SMALL_SIZES)
    if kept_bytes == bound:
        assert "proved as full as it can be" in result.stdout


def test_a_sweep_says_whether_smaller_sizes_were_proved_not_to_fit(small_csv) -> None:
    result = run(
        "sweep", small_csv, "--algo", "best", "--memory", TWO_MEMORIES, "--vary", "mem1",
        "--sizes", "4KiB:16KiB:4",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    every = next(line for line in lines if line.startswith("every tensor in mem1: from"))
    below = lines[lines.index(every) + 1]
    # Below the size that keeps every tensor, the peak-live bound alone proves it.
    assert below.startswith("  below it: proved not to keep every tensor at ")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--algo", "best", "--objective", "traffic"), "--objective: for models only"),
        (("--objective", "traffic"), "--objective applies to --algo best only"),
    ],
)
def test_objective_is_refused_where_it_cannot_apply(small_csv, options, message) -> None:
    result = run(small_csv, *options)
    assert result.returncode == 2
    assert message in error_line(result)


@pytest.mark.parametrize(
    "budget",
    [{"work_budget": 0}, {"work_budget": 1000}, {"budget_ms": 0}, {"budget_ms": 1}],
)
def test_a_tiny_budget_still_plans_a_hierarchy(budget: dict) -> None:
    # Memory 1 holds about half of what is alive at once: the capacity-first path runs,
    # and must return the core's plan whatever the budget left after the program.
    rng = random.Random(3)
    starts, ends, sizes = cut_rectangle(rng, 40, 30, 60, 1)
    memory = ([20, UNBOUNDED], [1, 1])
    result = cadence_memplan.plan(starts, ends, sizes, *memory, algorithm="best", **budget)
    assert_valid(starts, ends, sizes, result, *memory)
    kept = int(np.asarray(sizes)[result.mem_ids == 1].sum())
    assert result.kept_bound is not None
    assert kept <= result.kept_bound
