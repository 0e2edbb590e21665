"""``size --reorder`` and the note without it (issue 52): the KV-cache decoder's memory 1
needs less in the node order ``plan --reorder`` keeps (its write-backs moved up), so
``size`` says so, and ``size --reorder`` sizes that order, to the same answer."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

from cadence_memplan.io import parse_memory_spec
from cadence_memplan.workflow.plan import PlanningOptions, load_input, plan_input
from cadence_memplan.workflow.size import size_input

pytestmark = [
    pytest.mark.executorch,
    pytest.mark.filterwarnings("ignore:Mutation on a buffer in the model is detected"),
]


@pytest.mark.slow
def test_size_notes_and_sizes_the_reordered_order() -> None:
    memories = parse_memory_spec("fast=256KiB:16,slow=4MiB:16")
    loaded = load_input("decoder", lowering="cadence")
    plain = size_input(loaded, memories, PlanningOptions("best"), points=0)
    reordered = size_input(loaded, memories, PlanningOptions("best", reorder=True), points=0)
    assert not plain.reorder
    assert reordered.reorder
    assert reordered.reordered_fits_from is None  # already that order: no note
    assert plain.reordered_fits_from is not None
    assert plain.reordered_fits_from < plain.sized[0].all_fit_from
    assert reordered.sized[0].all_fit_from == plain.reordered_fits_from
    # plan --reorder --algo best with memory 1 at that size keeps every tensor there.
    size = plain.reordered_fits_from
    tight = parse_memory_spec(f"fast={size}:16,slow=4MiB:16")
    planned = plan_input(loaded, tight, PlanningOptions("best", reorder=True))
    assert planned.table.mem_ids.tolist() == [1] * len(planned.table)


def test_size_reorder_is_for_models(small_csv: object) -> None:
    with pytest.raises(ValueError, match="reorder"):
        size_input(
            small_csv,  # type: ignore[arg-type]
            parse_memory_spec("1KiB:16,1MiB:16"),
            PlanningOptions("best", reorder=True),
        )
