"""Every bound ``plan --reorder`` prints bounds the plan printed beside it (issue 52), on
every built-in model, the programs with control flow and both lowerings: the scheduler's
lower bound over every legal order is never above the kept order's peak live, which is
never above the plan's arena; and the peak live printed is the plan's own (its tensors
alive at once, a tensor inside another's storage counted as its host's bytes, as the
report's overall peak counts them). The bound is reported as computed: a wrong one shows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

from cadence_memplan.io import Memory, parse_memory_spec
from cadence_memplan.models import BUILTIN_INPUTS
from cadence_memplan.request.inputs import InputPlan
from cadence_memplan.scheduling import reordering
from cadence_memplan.stats import overall_peak, peak_live_bytes
from cadence_memplan.workflow.plan import PlanningOptions, load_input, plan_input

pytestmark = [
    pytest.mark.executorch,
    pytest.mark.filterwarnings("ignore:Mutation on a buffer in the model is detected"),
]

MODELS = [name for name in BUILTIN_INPUTS if not name.startswith("synthetic")]
SMALL = ("cnn", "mlp", "depthwise-cnn", "chain-cnn")
ALIGNMENT = 16  # the pass's: what the reorder rounds its peak live to
CASES = [
    pytest.param(name, lowering, marks=() if name in SMALL else pytest.mark.slow)
    for name in MODELS
    for lowering in ("cadence", "exir")
]


MEMORIES = "fast=256KiB:16,near=4MiB:16,far=1GiB:16"


@pytest.mark.parametrize(("name", "lowering"), CASES)
def test_reorder_bounds_bound_the_plan(name: str, lowering: str) -> None:
    planned = plan_input(
        name,
        parse_memory_spec(MEMORIES),
        PlanningOptions("position", lowering=lowering, reorder=True),
    )
    assert_bounds_bound(planned)


def assert_bounds_bound(planned: InputPlan) -> None:
    reorder = planned.reorder
    assert reorder is not None
    table = planned.table
    own = ~table.shares_storage
    aligned = (table.sizes + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
    plan_peak_live = peak_live_bytes(table.starts[own], table.ends[own], aligned[own])
    assert reorder.peak_live == plan_peak_live
    assert overall_peak(table)[0] <= reorder.peak_live
    assert reorder.lower_bound <= reorder.peak_live <= reorder.arena
    assert reorder.lower_bound <= reorder.given_peak_live
    if reorder.proved_optimal:
        assert reorder.peak_live == reorder.lower_bound
    assert int(np.sum(reorder.bufsizes[1:])) == reorder.arena


CONTROL_FLOW = [
    pytest.param(name, lowering, marks=() if name == "seed-1" else pytest.mark.slow)
    for name in ("seed-0", "seed-1", "seed-3", "consecutive-conds", "nested-cond",
                 "cond-then-map", "cond-over-buffer", "chain-of-five")
    for lowering in ("cadence", "exir")
]  # fmt: skip


@pytest.mark.parametrize(("name", "lowering"), CONTROL_FLOW)
def test_reorder_bounds_bound_the_plan_with_control_flow(
    name: str, lowering: str, tmp_path: Path
) -> None:
    """A graph with control flow keeps its order; its bound (the bytes alive at the end)
    still bounds the plan, and its peak live is its own tensors' (the submodules' rows lie
    in the bytes kept for their op)."""
    torch = pytest.importorskip("torch")
    from control_flow_programs import FAMILY, Generated, export, generate

    module = Generated(generate(int(name[5:]))) if name.startswith("seed-") else FAMILY[name]()
    archive = tmp_path / f"{name}.pt2"
    torch.export.save(export(module), archive)
    memories = [Memory("fast", 512, 16), Memory("slow", 1 << 20, 16)]
    options = PlanningOptions("position", lowering=lowering, reorder=True)
    planned = plan_input(load_input(archive, lowering=lowering), memories, options)
    assert planned.reorder is not None
    assert not planned.reorder.reordered
    assert_bounds_bound(planned)


def test_a_wrong_bound_shows_above_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound is reported as the scheduler computed it, never cut down to the kept
    order's peak live, and a bound above that peak live proves nothing: the scheduler's
    problem made without Cadence's storage sharing (issue 52's false bound on cnn, 131,072
    B beside a 110,592 B plan) shows above the plan, so the tests above would catch it."""
    made = reordering.schedule_problem

    def without_sharing(*arguments: object, **keywords: object) -> reordering.ScheduleProblem:
        return made(*arguments[:4], {})  # type: ignore[arg-type]

    monkeypatch.setattr(reordering, "schedule_problem", without_sharing)
    options = PlanningOptions("position", lowering="cadence", reorder=True)
    reorder = plan_input("cnn", parse_memory_spec(MEMORIES), options).reorder
    assert reorder is not None
    assert reorder.lower_bound > reorder.peak_live
    assert not reorder.proved_optimal
