"""``least_fitting``, the search behind ``size --share-mutable-buffers`` on a program of
several methods (``workflow/size_shared.py``), on made-up answers (numpy only): what it
returns is always a size where a plan was found, never below the bound, and on an answer
that holds from one size up it is that size; then ``size_shared`` on the KV-cache program
told too small a start, which must climb and come back down to the same answer. The
command itself is tested in ``tests/test_cli_multimethod.py``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from cadence_memplan.workflow.size_shared import least_fitting

ALIGNMENT = 16


@dataclass(frozen=True)
class Plan:
    capacity: int
    used: int


def planner(
    fits: Callable[[int], bool], used: Callable[[int], int], asked: list[int]
) -> Callable[[int, str], Plan | None]:
    def fitting(size: int, why: str) -> Plan | None:
        assert size % ALIGNMENT == 0, why
        assert size not in asked, f"{size} asked twice"
        asked.append(size)
        return Plan(size, used(size)) if fits(size) else None

    return fitting


@pytest.mark.parametrize("threshold", [16, 32, 48, 400, 1008, 4096])
@pytest.mark.parametrize("bound", [16, 64, 400])
def test_a_threshold_is_found_exactly(threshold: int, bound: int) -> None:
    bound = min(bound, threshold)  # a bound holds: nothing below it fits
    asked: list[int] = []
    fitting = planner(lambda size: size >= threshold, lambda size: size, asked)
    first = Plan(8192, 8192)
    least = least_fitting(fitting, first, bound, ALIGNMENT)
    assert least.capacity == threshold
    assert all(size >= bound for size in asked)
    assert len(asked) <= 12  # halves, not a walk over every size


def test_the_size_where_the_last_plan_ends_is_asked_first_and_the_bound_next() -> None:
    asked: list[int] = []
    fitting = planner(lambda size: size >= 320, lambda size: min(size, 336), asked)
    least = least_fitting(fitting, Plan(8192, 336), 320, ALIGNMENT)
    assert asked == [336, 320]
    assert least == Plan(320, 320)


def test_no_plan_between_two_fitting_sizes_keeps_the_least_found() -> None:
    # best's plan at one size says nothing of another: sizes that fit need not be a range
    found = {1024, 640}
    asked: list[int] = []
    fitting = planner(lambda size: size in found, lambda size: size, asked)
    least = least_fitting(fitting, Plan(1024, 1024), 256, ALIGNMENT)
    assert least.capacity in found
    assert all(size not in found or size >= least.capacity for size in asked)


# --------------------------------------------------------------------------- on a model
MEMORY_SPECS = ["fast=4KiB:16,near=1MiB:16", "fast=4KiB:16"]


@pytest.fixture(scope="module")
def kv_cache(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The KV-cache program of ``tests/stateful_programs.py`` as a ``.pt2`` of two methods,
    loaded as ``size`` loads it."""
    pytest.importorskip("executorch", reason="needs torch and executorch")
    from stateful_programs import KV_CACHE, export_methods
    from torch.export.pt2_archive._package import package_pt2

    from cadence_memplan.request import PlanningOptions
    from cadence_memplan.workflow.plan import load_input

    archive = tmp_path_factory.mktemp("shared") / "kv-cache.pt2"
    package_pt2(str(archive), exported_programs=export_methods(KV_CACHE))
    return load_input(archive, lowering=PlanningOptions().lowering)


def in_fast_everywhere(loaded: Any, spec: str, size: int) -> bool:
    """Whether the program planned whole at ``size`` of fast, state shared, keeps every
    tensor of every method in fast (each method's plan through the validator)."""
    from cadence_memplan.io.memories import parse_memory_spec
    from cadence_memplan.request import Hierarchy, PlanningOptions
    from cadence_memplan.workflow.plan import DoesNotFit, check_plan, plan_program

    memories = Hierarchy(parse_memory_spec(spec)).with_size(0, size)
    options = PlanningOptions(algorithm="best", share_mutable_buffers=True)
    try:
        planned = plan_program(loaded, memories, options)
    except DoesNotFit:
        return False
    for plan in planned.methods.values():
        assert check_plan(plan.table, memories) is None
    assert all(buffer.shared for buffer in planned.state)
    return all(bool((plan.table.mem_ids == 1).all()) for plan in planned.methods.values())


@pytest.mark.executorch
@pytest.mark.filterwarnings("ignore:Mutation on a buffer in the model is detected:UserWarning")
@pytest.mark.parametrize("spec", MEMORY_SPECS)
def test_the_search_from_too_small_a_start_finds_what_the_methods_sizes_give(
    kv_cache: Any, spec: str
) -> None:
    """Each method alone said to fit from one alignment (and bound nowhere): the search
    must go up from there, then down, and still find the program's size, a size where
    every tensor is in fast, with nothing at one alignment less when it says proved."""
    from cadence_memplan.io.memories import parse_memory_spec
    from cadence_memplan.request import PlanningOptions
    from cadence_memplan.workflow.size import size_methods
    from cadence_memplan.workflow.size_shared import size_shared

    memories = parse_memory_spec(spec)
    options = PlanningOptions(algorithm="best", share_mutable_buffers=True)
    sizings, warnings = size_methods(kv_cache, memories, options, points=0)
    assert warnings == []  # the state is shared
    truth = size_shared(kv_cache, memories, options, sizings)
    for sizing in sizings.values():  # each method alone needs no more than the program
        assert truth.fits_from >= sizing.sized[0].lower_bound
        if sizing.sized[0].proved:
            assert truth.fits_from >= sizing.sized[0].all_fit_from
    told_small = {
        name: replace(
            sizing,
            sized=(replace(sizing.sized[0], all_fit_from=16, lower_bound=16),),
            program=None,
        )
        for name, sizing in sizings.items()
    }
    found = size_shared(kv_cache, memories, options, told_small)
    assert found.tried[0] == (16, False)
    assert found.fits_from == truth.fits_from
    assert found.lower_bound <= found.fits_from
    assert in_fast_everywhere(kv_cache, spec, found.fits_from)
    assert (found.fits_from, True) in found.tried
    if found.proved:
        assert not in_fast_everywhere(kv_cache, spec, found.fits_from - 16)
