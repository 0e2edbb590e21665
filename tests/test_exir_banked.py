"""``cadence_memplan.exir.BankedGreedy`` against exir's ``BankedGreedy`` (executorch 1.5.x,
``executorch.exir.banked_memory_planning``).

As in tests/test_exir_greedy.py: the same case on deep copies of the same specs, every
spec's (mem_id, mem_offset, mem_obj_id), the bufsizes, the spec fields afterwards and
the bank report (``format_placement_report`` of the plan) must be exir's; where exir raises
(``BankPlacementError`` and the errors it shares with greedy), ours raises the same type
with the same message and leaves the specs as they were.
"""

from __future__ import annotations

import copy
import functools
import random
from collections import Counter
from dataclasses import replace

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

from cases import HypothesisChooser, RandomChooser
from executorch.exir.banked_memory_planning import BankedGreedy as ExirBankedGreedy
from executorch.exir.banked_memory_planning import BankPlacementError, TargetMemoryMap
from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite
from executorch.exir.memory_planning import greedy as exir_greedy
from exir_cases import (
    EXTERNAL_BASE,
    BankDescription,
    BankedCase,
    GreedyCase,
    build_specs,
    generate_banked_case,
    graph_module_with,
    spec,
    without_inverted_lifetimes,
)
from exir_runs import Planned, Raised, assert_same_outcome, run_banked, run_greedy, spec_fields
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cadence_memplan.exir

pytestmark = pytest.mark.executorch

SWEEP_SEEDS = range(300)


def check_banked(case: BankedCase) -> Planned | Raised:
    """The differential check of one case, under each of our object searches; returns
    exir's outcome."""
    specs = build_specs(case.greedy.specs)
    exir = run_banked(ExirBankedGreedy, case, specs)
    for search in cadence_memplan.OCCUPANCIES:
        banked = functools.partial(cadence_memplan.exir.BankedGreedy, occupancy=search)
        assert_same_outcome(exir, run_banked(banked, case, specs), case)
    return exir


def banks(*sizes_and_ids: tuple[int, int], alignment: int | None = None) -> tuple:
    return tuple(BankDescription(f"b{m}", size, m, alignment) for size, m in sizes_and_ids)


SPILLING = (
    spec(256, (0, 3)), spec(128, (1, 4)), spec(128, (2, 5)), spec(64, (0, 9)),
    spec(64, (6, 7)), spec(32, (3, 8)), spec(0, (2, 2)),
)  # fmt: skip

NAMED_CASES: dict[str, BankedCase] = {
    "no specs": BankedCase(GreedyCase(()), banks((64, 1))),
    "one bank, as greedy": BankedCase(GreedyCase(SPILLING), banks((1 << 20, 1))),
    "spills to the next bank": BankedCase(GreedyCase(SPILLING), banks((400, 1), (1 << 20, 2))),
    "declared order, not mem_id order": BankedCase(
        GreedyCase(SPILLING), banks((400, 3), (300, 1), (1 << 20, 2))
    ),
    "rides free in a full bank": BankedCase(
        GreedyCase((spec(256, (0, 1)), spec(256, (2, 3)), spec(64, (4, 5)))), banks((256, 1), (1024, 2))
    ),
    "second pass inside an object": BankedCase(
        GreedyCase((spec(256, (0, 1)), spec(64, (2, 5)), spec(64, (3, 6)))), banks((256, 1), (512, 2))
    ),
    "overlapping allocations off": BankedCase(
        GreedyCase((spec(256, (0, 1)), spec(64, (2, 5)), spec(64, (3, 6))),
                   allow_overlapping_allocations=False),
        banks((256, 1), (512, 2)),
    ),
    "no bank can hold it": BankedCase(GreedyCase(SPILLING), banks((200, 1), (300, 2))),
    "pins go first": BankedCase(
        GreedyCase((spec(64, (0, 9)), spec(256, (0, 9), mem_id=1), spec(128, (0, 9), mem_id=2))),
        banks((320, 1), (1024, 2)),
    ),
    "a pin that does not fit": BankedCase(
        GreedyCase((spec(64, (0, 9), mem_id=1), spec(256, (0, 9), mem_id=1))), banks((128, 1), (1024, 2))
    ),
    "a pin to an undeclared mem_id": BankedCase(
        GreedyCase((spec(64, (0, 9), mem_id=4), spec(256, (0, 9)), spec(32, (3, 4), mem_id=4))),
        banks((1024, 1)),
    ),
    "unpinned specs share a pin's object": BankedCase(
        GreedyCase((spec(256, (0, 1), mem_id=1), spec(64, (2, 3)), spec(64, (2, 4)))), banks((256, 1), (1024, 2))
    ),
    "bank alignments": BankedCase(
        GreedyCase((spec(10, (0, 1)), spec(20, (0, 1)), spec(40, (2, 3)), spec(5, (1, 2), mem_id=2))),
        (BankDescription("fast", 48, 1, 32), BankDescription("slow", 1024, 2, 64)),
    ),
    "a bank alignment that is not a multiple": BankedCase(
        GreedyCase(SPILLING), (BankDescription("fast", 512, 1, 24),)
    ),
    "extra_padding on the banks used": BankedCase(
        GreedyCase(SPILLING, extra_padding=8), banks((400, 1), (1 << 20, 2), (1 << 20, 3))
    ),
    "extra_padding makes it spill": BankedCase(
        GreedyCase((spec(256, (0, 1)),), extra_padding=8), banks((260, 1), (1 << 20, 2))
    ),
    "input_mem_buffer_sizes reserve bank room": BankedCase(
        GreedyCase(SPILLING, input_mem_buffer_sizes=(0, 200, 16)), banks((450, 1), (1 << 20, 2))
    ),
    "storage-backed spec in its base's bank": BankedCase(
        GreedyCase((spec(256, (0, 4)), spec(128, (1, 3)), spec(64, (1, 2), storage_base=1,
                    storage_base_offset=64))),
        banks((300, 1), (1024, 2)),
    ),
    "storage chain": BankedCase(
        GreedyCase(
            (spec(2, (0, 1), storage_base=1, storage_base_offset=4),
             spec(6, (0, 1), storage_base=2, storage_base_offset=8), spec(16, (0, 1))),
            alignment=1,
        ),
        banks((1024, 1)),
    ),
    "unresolvable storage base": BankedCase(
        GreedyCase((spec(64, (0, 4)), spec(16, (1, 2), storage_base=EXTERNAL_BASE))), banks((1024, 1))
    ),
    "a spec on another device": BankedCase(
        GreedyCase((spec(64, (0, 4)), spec(16, (1, 2), device="CUDA"))), banks((1024, 1))
    ),
    "input_mem_buffer_sizes over a bank: the capacity backstop": BankedCase(
        GreedyCase(SPILLING, input_mem_buffer_sizes=(0, 1000)), banks((500, 1), (1 << 20, 2))
    ),
    "sparse bank ids": BankedCase(GreedyCase(SPILLING), banks((300, 7), (1 << 20, 3))),
    "extra_padding charged to a pin's bank": BankedCase(
        GreedyCase((spec(64, (0, 3), mem_id=1), spec(64, (0, 3), mem_id=1)), extra_padding=10),
        banks((138, 1), (1024, 2)),
    ),
    "storage-backed spec inside a pinned base": BankedCase(
        GreedyCase((spec(64, (0, 3), mem_id=2), spec(16, (0, 3), storage_base=0, storage_base_offset=16))),
        banks((40, 1), (1024, 2)),
    ),
    "realign reorders pins: exir's 'not sorted' assertion": BankedCase(
        GreedyCase((spec(1, (0, 1), alignment=64, mem_id=1), spec(40, (2, 3), alignment=1, mem_id=1))),
        banks((1024, 1)),
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", NAMED_CASES)
def test_named_case_matches_exir(name: str) -> None:
    check_banked(NAMED_CASES[name])


EXPECTED_ERRORS = {
    "no bank can hold it": "BankPlacementError",
    "a pin that does not fit": "BankPlacementError",
    "a bank alignment that is not a multiple": "BankPlacementError",
    "a spec on another device": "BankPlacementError",
    "unresolvable storage base": "InternalError",
    "input_mem_buffer_sizes over a bank: the capacity backstop": "BankPlacementError",
    "realign reorders pins: exir's 'not sorted' assertion": "AssertionError",
}


@pytest.mark.parametrize("name", EXPECTED_ERRORS)
def test_named_error_cases_do_raise_in_exir(name: str) -> None:
    case = NAMED_CASES[name]
    outcome = run_banked(ExirBankedGreedy, case, build_specs(case.greedy.specs))
    assert isinstance(outcome, Raised)
    assert outcome.summary[0] == EXPECTED_ERRORS[name]


def test_spilling_cases_use_several_banks() -> None:
    """The spill cases above do put tensors in more than one bank."""
    for name in ("spills to the next bank", "declared order, not mem_id order", "pins go first"):
        case = NAMED_CASES[name]
        outcome = run_banked(ExirBankedGreedy, case, build_specs(case.greedy.specs))
        assert isinstance(outcome, Planned)
        assert len({mem_id for mem_id, _, _ in outcome.placements.values()}) >= 2, name


def test_one_bank_is_greedy() -> None:
    """exir's promise, held by ours too: one bank that is big enough plans as greedy."""
    case = NAMED_CASES["one bank, as greedy"]
    specs = build_specs(case.greedy.specs)
    banked = run_banked(cadence_memplan.exir.BankedGreedy, case, specs)
    plain = run_greedy(exir_greedy, case.greedy, specs)
    assert isinstance(banked, Planned)
    assert isinstance(plain, Planned)
    assert banked.placements == plain.placements
    assert banked.bufsizes == plain.bufsizes


@pytest.mark.parametrize("seed", SWEEP_SEEDS)
def test_random_case_matches_exir(seed: int) -> None:
    check_banked(generate_banked_case(RandomChooser(random.Random(seed)), max_specs=60))


@pytest.mark.parametrize("seed", range(100))
def test_random_case_of_intervals_matches_exir(seed: int) -> None:
    """Without inverted lifetimes, occupancy="tree" searches its tree in every bank."""
    case = generate_banked_case(RandomChooser(random.Random(20_000 + seed)), max_specs=60)
    check_banked(replace(case, greedy=without_inverted_lifetimes(case.greedy)))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_large_random_case_matches_exir(seed: int) -> None:
    """Cases of up to 2,000 specs, where the core's index has many objects to search
    (seconds each: exir is quadratic)."""
    check_banked(generate_banked_case(RandomChooser(random.Random(10_000 + seed)), max_specs=2_000))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_hypothesis_case_matches_exir(data: st.DataObject) -> None:
    check_banked(generate_banked_case(HypothesisChooser(data.draw)))


def test_random_cases_reach_every_path() -> None:
    """The seeded sweep plans across several banks and reaches each of exir's errors."""
    seen: Counter[str] = Counter()
    for seed in SWEEP_SEEDS:
        case = generate_banked_case(RandomChooser(random.Random(seed)), max_specs=60)
        outcome = run_banked(ExirBankedGreedy, case, build_specs(case.greedy.specs))
        if isinstance(outcome, Raised):
            message = str(outcome.error)
            seen[outcome.summary[0]] += 1
            for reason in ("No declared bank", "is pinned to bank", "declares alignment",
                           "CPU specs only"):  # fmt: skip
                seen[reason] += reason in message
            continue
        seen["planned"] += 1
        seen["several banks"] += len({m for m, _, _ in outcome.placements.values()}) >= 2
        seen["pins"] += any(s.mem_id is not None for s in case.greedy.specs)
    for kind in ("planned", "several banks", "pins", "BankPlacementError", "InternalError",
                 "No declared bank", "is pinned to bank", "declares alignment",
                 "CPU specs only"):  # fmt: skip
        assert seen[kind] >= 2, f"the sweep reaches {kind!r} only {seen[kind]} times: {seen}"


def test_drop_in_surface() -> None:
    """What exir's suite and users read off the planner: its name (the suite reports it),
    its target and flag; its errors are exir's ``BankPlacementError``."""
    target = NAMED_CASES["no bank can hold it"].target()
    ours = cadence_memplan.exir.BankedGreedy(target, allow_overlapping_allocations=False)
    exir = ExirBankedGreedy(target, allow_overlapping_allocations=False)
    assert ours.__name__ == exir.__name__
    assert ours.target is target
    assert ours.allow_overlapping_allocations is False
    specs = build_specs(SPILLING)
    with pytest.raises(BankPlacementError):
        ours(16, specs, graph_module_with(None), None, 0)


def test_suite_writes_the_same_fields() -> None:
    """Inside MemoryPlanningAlgorithmSuite, as ``banked_memory_planning_pass`` wraps it."""
    case = NAMED_CASES["spills to the next bank"]
    specs = build_specs(case.greedy.specs)
    fields = []
    for planner_class in (ExirBankedGreedy, cadence_memplan.exir.BankedGreedy):
        copies = copy.deepcopy(specs)
        suite = MemoryPlanningAlgorithmSuite(algo_list=[planner_class(case.target())])
        bufsizes = suite(16, copies, graph_module_with(None), None, 0)
        fields.append((bufsizes, spec_fields(copies)))
    assert fields[1] == fields[0]
    assert {f[3] for f in fields[0][1]} == {1, 2}


def test_target_is_exirs_class() -> None:
    """Ours takes exir's own TargetMemoryMap (a drop-in needs no new vocabulary)."""
    case = NAMED_CASES["bank alignments"]
    assert isinstance(case.target(), TargetMemoryMap)
    check_banked(replace(case, greedy=replace(case.greedy, extra_padding=3)))
