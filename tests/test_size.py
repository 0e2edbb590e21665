"""``cadence-memplan size`` and :mod:`cadence_memplan.sizing`.

The curve is held against brute force (every subset of a small instance packed in every
order), exactly, breakpoints included; ``all_fit_from`` against ``best`` alone with room
for everything; the shaping of the curve (monotone, points merged, ``all_fit_from``
lowered and proved by later plans) against plans made up by hand; the command line's
report against its JSON and the schema; the plot against the curve; failures that change
no file. Models (marked ``executorch``): the size found keeps every tensor in the first
memory in a whole ``to_executorch``.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pytest
from cases import PLANNING_INSTANCES

import cadence_memplan
from cadence_memplan import Budget
from cadence_memplan.io import parse_memory_spec, read_minimalloc_csv, size_document
from cadence_memplan.planning import Input, LoadedInput
from cadence_memplan.sizing import (
    CurvePoint,
    PlanAtSize,
    Sizing,
    memory_sizing,
    size_input,
)
from cadence_memplan.stats import peak_live_bytes

UNBOUNDED = 1 << 20


def align_up(count: int, alignment: int) -> int:
    return -(-count // alignment) * alignment


def least_bufsize(starts, ends, sizes, alignment: int) -> int:
    """The smallest bufsize of one memory that holds every given tensor: each order of
    them placed by first fit, each at the lowest aligned offset where it clashes with no
    tensor placed before it and alive at the same time. Every packing is matched by the
    order of its offsets (each tensor then lands at or below its offset there), so the
    least over the orders is the optimum."""
    best: int | None = None
    for order in itertools.permutations(range(len(sizes))):
        offsets: dict[int, int] = {}
        bufsize = 0
        for i in order:
            offset = 0
            while True:
                clash = next(
                    (
                        j
                        for j in offsets
                        if sizes[i]
                        and sizes[j]
                        and starts[i] <= ends[j]
                        and starts[j] <= ends[i]
                        and offset < offsets[j] + sizes[j]
                        and offsets[j] < offset + sizes[i]
                    ),
                    None,
                )
                if clash is None:
                    break
                offset = align_up(offsets[clash] + sizes[clash], alignment)
            offsets[i] = offset
            bufsize = max(bufsize, align_up(offset + sizes[i], alignment))
        best = bufsize if best is None else min(best, bufsize)
    return best or 0


def most_kept_by_brute_force(starts, ends, sizes, alignment: int):
    """(the least bufsize of every tensor, the most memory 1 keeps at a size): every
    subset packed in every order (:func:`least_bufsize`)."""
    everyone = range(len(sizes))
    packed = {}
    for count in range(len(sizes) + 1):
        for subset in itertools.combinations(everyone, count):
            columns = ([column[i] for i in subset] for column in (starts, ends, sizes))
            packed[subset] = least_bufsize(*columns, alignment)

    def most_kept(capacity: int) -> int:
        return max(sum(sizes[i] for i in s) for s, need in packed.items() if need <= capacity)

    return packed[tuple(everyone)], most_kept


def arrays_input(starts, ends, sizes, label: str = "case") -> LoadedInput:
    return LoadedInput(
        Input(label, "arrays"),
        "cadence",
        [f"t{i}" for i in range(len(sizes))],
        np.asarray(starts, dtype=np.int64),
        np.asarray(ends, dtype=np.int64),
        np.asarray(sizes, dtype=np.int64),
    )


def random_instance(seed: int, count: tuple[int, int] = (2, 6)):
    rng = random.Random(seed)
    tensors = rng.randint(*count)
    starts = [rng.randint(0, 5) for _ in range(tensors)]
    ends = [start + rng.randint(0, 4) for start in starts]
    sizes = [rng.choice([0, *range(1, 13)]) for _ in range(tensors)]
    return starts, ends, sizes, rng.choice([1, 2, 4])


def assert_curve_shape(sizing: Sizing) -> None:
    """What holds of every curve: sizes strictly falling, below all_fit_from, multiples of
    the alignment; kept and its bound never rising as the size falls; kept <= bound <=
    total; no point repeating the one above it; lower_bound <= all_fit_from."""
    (sized,) = sizing.sized
    alignment = sized.memory.alignment
    assert sized.all_fit_from % alignment == 0
    assert sized.lower_bound <= sized.all_fit_from
    above = CurvePoint(sized.all_fit_from, sized.total, sized.total)
    for point in sized.curve:
        assert point.capacity < above.capacity
        assert point.capacity % alignment == 0
        assert point.kept <= above.kept
        assert point.kept_bound is not None
        assert above.kept_bound is not None
        assert point.kept <= point.kept_bound <= above.kept_bound
        assert (point.kept, point.kept_bound) != (above.kept, above.kept_bound)
        above = point


# --------------------------------------------------------------------------- against brute force


@pytest.mark.parametrize("seed", range(30))
def test_curve_is_exactly_the_breakpoints_of_the_most_kept(seed: int) -> None:
    """On instances small enough for brute force, all_fit_from is the least bufsize of
    every tensor, proved, and the curve lists exactly the sizes where the most memory 1
    can keep changes, each with that most, proved."""
    starts, ends, sizes, alignment = random_instance(seed)
    memories = parse_memory_spec(f"fast=1KiB:{alignment},slow={UNBOUNDED}:8")
    sizing = size_input(arrays_input(starts, ends, sizes), memories, lowering="cadence", points=100)
    (sized,) = sizing.sized
    least, most_kept = most_kept_by_brute_force(starts, ends, sizes, alignment)
    assert (sized.all_fit_from, sized.lower_bound, sized.proved) == (least, least, True)
    assert sized.total == sum(sizes)
    changes = [
        (capacity, most_kept(capacity))
        for capacity in range(least - alignment, 0, -alignment)
        if most_kept(capacity) != most_kept(capacity - alignment)
    ]
    lowest = changes[-1][0] if changes else least
    if lowest > alignment:  # the size below it was asked too: from 0 B up, nothing kept
        changes.append((0, most_kept(0)))
    assert [(point.capacity, point.kept) for point in sized.curve] == changes
    assert all(point.proved for point in sized.curve)
    assert sized.curve_ends == "complete"
    assert_curve_shape(sizing)


@pytest.mark.parametrize("seed", range(10))
def test_curve_holds_against_brute_force_with_little_work(seed: int) -> None:
    """With almost no work, the plans need not be the best: each point still keeps no
    more than any plan can and bounds what every plan keeps, over its whole step."""
    starts, ends, sizes, alignment = random_instance(100 + seed, (5, 6))
    memories = parse_memory_spec(f"fast=1KiB:{alignment},slow={UNBOUNDED}:8")
    loaded = arrays_input(starts, ends, sizes)
    sizing = size_input(loaded, memories, lowering="cadence", budget=Budget(work=0), points=100)
    (sized,) = sizing.sized
    least, most_kept = most_kept_by_brute_force(starts, ends, sizes, alignment)
    assert sized.lower_bound <= least <= sized.all_fit_from
    top = sized.all_fit_from
    for point in sized.curve:
        assert point.kept <= most_kept(point.capacity)
        assert point.kept_bound is not None
        assert most_kept(top - alignment) <= point.kept_bound  # the step's largest size
        top = point.capacity
    assert_curve_shape(sizing)


# --------------------------------------------------------------------------- all_fit_from


def instance_files() -> list[Path]:
    found = sorted((PLANNING_INSTANCES / "challenging").glob("[AC].*.csv"))
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="no MiniMalloc instances"))]


@pytest.mark.parametrize("seed", range(8))
def test_all_fit_from_is_best_alone_with_room_for_everything(seed: int) -> None:
    """With no point below it, all_fit_from is best's bufsize in one memory with room for
    every tensor, at half the work; its lower bound is best's or the peak live."""
    rng = np.random.default_rng(seed)
    count = 60
    starts = rng.integers(0, 40, count)
    ends = starts + rng.integers(0, 12, count)
    sizes = rng.integers(1, 2000, count)
    alignment = int(rng.choice([1, 16, 64]))
    work = 20_000
    memories = parse_memory_spec(f"fast=1KiB:{alignment},slow=1GiB:64")
    loaded = arrays_input(starts, ends, sizes)
    (sized,) = size_input(
        loaded, memories, lowering="cadence", budget=Budget(work=work), points=0
    ).sized
    room = int(sum(align_up(int(size), alignment) for size in sizes))
    alone = cadence_memplan.plan(
        starts, ends, sizes, [room], [alignment], algorithm="best", work_budget=work // 2
    )
    assert sized.all_fit_from == alone.bufsizes[1]
    peak = peak_live_bytes(starts, ends, -(-sizes // alignment) * alignment)
    assert sized.lower_bound == max(align_up(alone.lower_bound or 0, alignment), peak)
    assert sized.proved == alone.proved_optimal
    assert (sized.curve, sized.curve_ends, sized.total) == ((), "points", int(sizes.sum()))


@pytest.mark.parametrize("path", instance_files())
def test_challenging_instances_fit_in_their_capacity(path: Path) -> None:
    """A and C fit in the 1 MiB of their file names, proved optimal (C below it), and the
    first point below proves that not every tensor fits there."""
    instance = read_minimalloc_csv(path)
    loaded = arrays_input(instance.starts, instance.ends, instance.sizes, path.name)
    memories = parse_memory_spec("fast=2MiB:1,far=64MiB:1")
    (sized,) = size_input(loaded, memories, lowering="cadence", points=1).sized
    alone = cadence_memplan.plan(
        instance.starts, instance.ends, instance.sizes, [sized.all_fit_from], [1],
        algorithm="best",
    )  # fmt: skip
    assert cadence_memplan.validate(
        instance.starts, instance.ends, instance.sizes, alone.mem_ids, alone.offsets,
        [sized.all_fit_from], [1],
    ) is None  # fmt: skip
    assert sized.all_fit_from <= 1 << 20
    assert sized.proved
    bound = sized.curve[0].kept_bound
    assert bound is not None
    assert bound < sized.total


# --------------------------------------------------------------------------- the shaping


def plan_at(capacity: int, used: int, kept: int, bound: int | None) -> PlanAtSize:
    return PlanAtSize(capacity, used, 0, kept, bound, None, 0, False)


FAST = parse_memory_spec("fast=1KiB:1")[0]


def test_a_plan_below_that_keeps_everything_lowers_all_fit_from() -> None:
    everything = PlanAtSize(2000, 100, 60, 50, 50, 70, 10, False)
    probes = [
        plan_at(99, 96, 40, 50),
        plan_at(95, 90, 50, 50),  # keeps every tensor in less
        plan_at(89, 80, 30, 45),  # not every tensor fits in 89 B: 90 B is the least
    ]
    sized = memory_sizing(FAST, everything, probes, "points", 89)
    assert (sized.all_fit_from, sized.lower_bound, sized.proved) == (90, 90, True)
    assert sized.curve == (CurvePoint(80, 30, 45),)


def test_the_curve_is_made_monotone_and_repeats_merged() -> None:
    everything = PlanAtSize(2000, 100, 100, 50, None, None, 10, False)
    probes = [
        plan_at(99, 98, 40, 48),
        plan_at(97, 95, 42, 49),  # a better plan at a smaller size holds above it too
        plan_at(94, 90, 41, 47),  # a bound proved above holds here: 48 at 95 B
        plan_at(89, 80, 41, 47),  # the same answer from 80 B up
    ]
    sized = memory_sizing(FAST, everything, probes, "complete", 89)
    assert sized.curve == (CurvePoint(95, 42, 48), CurvePoint(80, 41, 47))
    # The peak live (100 B) proves it, and so does the bound below the total at 99 B.
    assert (sized.all_fit_from, sized.lower_bound, sized.proved) == (100, 100, True)


def test_the_sizing_is_the_same_on_every_run() -> None:
    rng = np.random.default_rng(7)
    starts = rng.integers(0, 60, 120)
    ends = starts + rng.integers(0, 15, 120)
    sizes = rng.integers(1, 5000, 120) * 16
    memories = parse_memory_spec("fast=1KiB:64,slow=1GiB:64")
    documents = [
        size_document(size_input(arrays_input(starts, ends, sizes), memories,
                                 lowering="cadence", budget=Budget(work=30_000), points=6))
        for _ in range(2)
    ]  # fmt: skip
    assert documents[0] == documents[1]
    assert documents[0]["memories"][0]["curve"], "a curve to compare"
