"""Every bound ``plan --reorder`` prints bounds the plan printed beside it (issue 52), on
every built-in model and both lowerings: the scheduler's lower bound over every legal
order is never above the kept order's peak live, which is never above the plan's arena;
and the peak live printed is the plan's own (its tensors alive at once, a tensor inside
another's storage counted as its host's bytes, as the report's overall peak counts them).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

from cadence_memplan.io import parse_memory_spec
from cadence_memplan.models import BUILTIN_INPUTS
from cadence_memplan.stats import overall_peak, peak_live_bytes
from cadence_memplan.workflow.plan import PlanningOptions, plan_input

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


@pytest.mark.parametrize(("name", "lowering"), CASES)
def test_reorder_bounds_bound_the_plan(name: str, lowering: str) -> None:
    memories = parse_memory_spec("fast=256KiB:16,near=4MiB:16,far=1GiB:16")
    planned = plan_input(
        name, memories, PlanningOptions("position", lowering=lowering, reorder=True)
    )
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
