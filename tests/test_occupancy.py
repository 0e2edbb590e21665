"""The core's four occupancies (how a memory finds the tensors alive with the one being
placed) give one plan, and ``occupancy="auto"`` picks the one its cost model says.

Exactness against upstream on every occupancy is in the test_differential_*.py files
(they need executorch); here the pure-Python reference is the oracle, so this runs with numpy alone.
"""

from __future__ import annotations

import numpy as np
import pytest

import cadence_memplan
from cadence_memplan import reference
from cadence_memplan.synthetic import synthetic_graph

HIERARCHY = ([256 << 10, 4 << 20, 1 << 34], [16, 64, 37])


def plans_by_occupancy(graph: tuple, algorithm: str) -> dict[str, cadence_memplan.PlanResult]:
    return {
        occupancy: cadence_memplan.plan(
            *graph, *HIERARCHY, algorithm=algorithm, occupancy=occupancy
        )
        for occupancy in cadence_memplan.OCCUPANCIES
    }


@pytest.mark.parametrize("algorithm", cadence_memplan.UPSTREAM_ALGORITHMS)
@pytest.mark.parametrize("live_tensors", [2, 40, 400])
def test_every_occupancy_gives_the_reference_plan(algorithm: str, live_tensors: int) -> None:
    graph = synthetic_graph(1500, live_tensors=live_tensors, seed=live_tensors)
    expected = reference.plan(*graph, *HIERARCHY, algorithm=algorithm)
    for occupancy, result in plans_by_occupancy(graph, algorithm).items():
        assert result.mem_ids.tolist() == expected.mem_ids.tolist(), occupancy
        assert result.offsets.tolist() == expected.offsets.tolist(), occupancy
        assert result.bufsizes.tolist() == expected.bufsizes.tolist(), occupancy
        assert cadence_memplan.validate(*graph, result.mem_ids, result.offsets, *HIERARCHY) is None
        if occupancy != "auto":
            assert result.occupancy == occupancy


@pytest.mark.parametrize(
    ("tensor_count", "live_tensors", "expected"),
    [
        (300, 32, "scan"),  # A few hundred tensors: scanning them all is cheapest.
        (20_000, 8, "interval"),  # Long graph, few alive at once.
        (12_000, 600, "tree"),  # Hundreds alive at once.
    ],
)
def test_auto_picks_by_tensor_count_and_overlap(
    tensor_count: int, live_tensors: int, expected: str
) -> None:
    graph = synthetic_graph(tensor_count, live_tensors=live_tensors, seed=1)
    auto = cadence_memplan.plan(*graph, *HIERARCHY, algorithm="heuristic")
    assert auto.occupancy == expected
    forced = cadence_memplan.plan(*graph, *HIERARCHY, algorithm="heuristic", occupancy="scan")
    assert np.array_equal(auto.offsets, forced.offsets)
    assert np.array_equal(auto.mem_ids, forced.mem_ids)


def test_unknown_occupancy_is_refused() -> None:
    with pytest.raises(ValueError, match="occupancy must be one of"):
        cadence_memplan.plan([0], [1], [8], [64], [1], occupancy="fast")  # type: ignore[arg-type]
