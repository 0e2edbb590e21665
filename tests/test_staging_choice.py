"""The staging choice: legal, never worse than the static plan, deterministic, within its
counted work; optimal where brute force over every small schedule says what optimal is."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import given, settings
from staging_cases import SMALL_MODEL, problems

from cadence_memplan.staging.choice import choose_staging
from cadence_memplan.staging.cost_model import DEFAULT_COST_MODEL
from cadence_memplan.staging.problem import Copy, StagingProblem
from cadence_memplan.staging.report import packs_in_fast, peak_live, stage_problem, static_fast_set
from cadence_memplan.staging.simulate import IllegalSchedule, simulate


@settings(max_examples=60, deadline=None)
@given(problems(max_ops=6, max_tensors=5))
def test_choice_is_legal_never_worse_and_deterministic(problem: StagingProblem) -> None:
    capacity = max(peak_live(problem) // 2, 1)
    static = static_fast_set(problem, capacity)
    choice = choose_staging(problem, SMALL_MODEL, static, capacity, work_budget=20_000)
    again = choose_staging(problem, SMALL_MODEL, static, capacity, work_budget=20_000)
    assert choice == again
    assert choice.staged.cycles <= choice.static.cycles
    assert choice.static == simulate(problem, SMALL_MODEL, static)
    rerun = simulate(problem, SMALL_MODEL, choice.kept, choice.schedule, capacity)
    assert rerun == choice.staged
    assert choice.work <= 20_000
    report = stage_problem(problem, SMALL_MODEL, capacity, work_budget=20_000)
    assert report.staged.cycles <= report.static.cycles
    assert packs_in_fast(problem, report.choice.kept, report.choice.schedule, capacity)
    assert report.all_in_fast.cycles <= report.ceiling.cycles


def stream() -> StagingProblem:
    """A residual stream r (made by op 0, read by op 5) beside a chain of heavy ops whose
    tensors fill the fast memory: keeping r there costs the chain its space."""
    return StagingProblem(
        flops=(0, 0, 0, 0, 0, 0),
        sizes=(512, 512, 512, 512, 512, 512, 64),
        producers=(0, 1, 2, 3, 4, 5, -1),
        reads=((6,), (6,), (1,), (2,), (3,), (0, 4)),
        writes=((0,), (1,), (2,), (3,), (4,), (5,)),
        outlives=(False, False, False, False, False, True, False),
    )


def test_choice_never_copies_what_lies_in_another_storage() -> None:
    """``no_copies`` (what Cadence's nops put inside another tensor's storage): the
    stream's store of r is not made once r is one, in the search or the report."""
    problem = stream()
    capacity = peak_live(problem) // 2
    free = stage_problem(problem, SMALL_MODEL, capacity, work_budget=20_000)
    copied = {copy.tensor for copy in free.choice.schedule}
    assert copied  # else the test shows nothing
    pinned = dataclasses.replace(problem, no_copies=frozenset(copied))
    report = stage_problem(pinned, SMALL_MODEL, capacity, work_budget=20_000)
    assert not {copy.tensor for copy in report.choice.schedule} & copied
    assert report.staged.cycles <= report.static.cycles
    with pytest.raises(ValueError, match="no_copies names an unknown tensor"):
        dataclasses.replace(problem, no_copies=frozenset({problem.num_tensors}))


def schedules(problem: StagingProblem, static: frozenset[int], copies: int) -> list[list[Copy]]:
    """Every schedule of at most ``copies`` copies (any tensor, kind and ops)."""
    ops = problem.num_ops
    singles = [
        Copy(tensor, kind, start, end, until)
        for tensor in range(problem.num_tensors)
        if tensor not in static
        for kind in ("load", "store")
        for start in range(ops + 1)
        for end in range(start, ops + 1)
        for until in range(ops)
    ]
    found: list[list[Copy]] = [[]]
    for count in range(1, copies + 1):
        found += [list(c) for c in itertools.combinations(singles, count)]
    return found


def test_choice_finds_the_best_small_schedule() -> None:
    problem, model = stream(), DEFAULT_COST_MODEL
    capacity = 1024 + 64
    static = static_fast_set(problem, capacity)
    best = simulate(problem, model, static).cycles
    for schedule in schedules(problem, static, 1):
        try:
            best = min(best, simulate(problem, model, static, schedule, capacity).cycles)
        except IllegalSchedule:
            continue
    choice = choose_staging(problem, model, static, capacity)
    assert choice.schedule  # r is staged: stored after op 0, loaded for op 5
    assert choice.staged.cycles <= best < choice.static.cycles


def test_no_work_no_copies() -> None:
    problem = stream()
    static = static_fast_set(problem, 1088)
    choice = choose_staging(problem, DEFAULT_COST_MODEL, static, 1088, work_budget=0)
    assert choice.schedule == ()
    assert choice.staged == choice.static
    assert choice.work == 0
    with pytest.raises(ValueError, match="work_budget"):
        choose_staging(problem, DEFAULT_COST_MODEL, static, 1088, work_budget=-1)


def first_pick_blocks() -> StagingProblem:
    """Op 0 reads an input i and writes o, of equal size, into a fast memory that holds one:
    a greedy pass takes i's load first (the same estimated gain, the lower id), whose stall
    it does not foresee, and then o's stay no longer fits; o's stay is the better plan."""
    return StagingProblem(
        flops=(0, 60_000, 0),
        sizes=(4096, 4096),
        producers=(-1, 0),
        reads=((0,), (), ()),
        writes=((1,), (), ()),
        outlives=(False, False),
    )


def test_ruin_and_recreate_undoes_a_greedy_pick() -> None:
    problem, model, capacity = first_pick_blocks(), DEFAULT_COST_MODEL, 4096
    best = simulate(problem, model, frozenset()).cycles
    for kept in (frozenset(), frozenset({0}), frozenset({1}), frozenset({0, 1})):
        for schedule in schedules(problem, kept, 1):
            try:
                best = min(best, simulate(problem, model, kept, schedule, capacity).cycles)
            except IllegalSchedule:
                continue
    choice = choose_staging(problem, model, frozenset(), capacity)
    assert choice.staged.cycles == best < choice.static.cycles
    assert simulate(problem, model, choice.kept, choice.schedule, capacity) == choice.staged
    assert packs_in_fast(problem, choice.kept, choice.schedule, capacity)
