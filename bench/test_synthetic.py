"""Plan time of ours vs upstream's Python placers on synthetic graphs, side by side.

    python -m pytest bench/test_synthetic.py --benchmark-group-by=param:tensor_count,param:algorithm

Upstream takes minutes past a few thousand tensors, so its rounds are capped
(``UPSTREAM_ROUNDS``); pytest-benchmark reports the median of the rounds it ran.
Each benchmark checks that its plan is valid; none asserts a time.
"""

from __future__ import annotations

import pytest
from conftest import MEMORY_ALIGNMENTS, MEMORY_SIZES, memory_config, tensor_specs
from executorch.backends.cadence.aot import memory_planning as upstream
from executorch.backends.cadence.aot.memory_constraints import MemConstraints
from executorch.backends.cadence.aot.memory_planning_algo import MemoryPlanningState

import cadence_memplan
from cadence_memplan.synthetic import synthetic_graph

UPSTREAM_ROUNDS = {1_000: 3, 10_000: 1}
CLASSES = {
    "position": (
        upstream.PositionBasedGreedyWithHierarchy,
        cadence_memplan.PositionBasedGreedyWithHierarchy,
    ),
    "heuristic": (upstream.GreedyWithHeuristic, cadence_memplan.GreedyWithHeuristic),
}


def _plan_specs(algo_class, graph):
    """Fresh specs and state for each round; only ``plan()`` is timed."""
    specs = tensor_specs(graph)
    state = MemoryPlanningState(memory_config())
    return (algo_class(memory_config()), specs, state), {}


def _run_plan(algo, specs, state):
    algo.plan(specs, None, None, state, MemConstraints())
    return specs


def _assert_valid(graph, specs):
    problem = cadence_memplan.validate(
        *graph,
        [spec.mem_id for spec in specs],
        [spec.mem_offset for spec in specs],
        MEMORY_SIZES,
        MEMORY_ALIGNMENTS,
    )
    assert problem is None, problem


@pytest.mark.parametrize("tensor_count", [1_000, 10_000])
@pytest.mark.parametrize("algorithm", ["position", "heuristic"])
@pytest.mark.parametrize("implementation", ["upstream", "drop-in", "core"])
def test_plan(benchmark, implementation, algorithm, tensor_count):
    graph = synthetic_graph(tensor_count)
    upstream_class, our_class = CLASSES[algorithm]
    if implementation == "core":
        result = benchmark(
            cadence_memplan.plan, *graph, MEMORY_SIZES, MEMORY_ALIGNMENTS, algorithm=algorithm
        )
        problem = cadence_memplan.validate(
            *graph, result.mem_ids, result.offsets, MEMORY_SIZES, MEMORY_ALIGNMENTS
        )
        assert problem is None, problem
        return
    algo_class = upstream_class if implementation == "upstream" else our_class
    rounds = UPSTREAM_ROUNDS[tensor_count] if implementation == "upstream" else 20
    specs = benchmark.pedantic(
        _run_plan, setup=lambda: _plan_specs(algo_class, graph), rounds=rounds
    )
    _assert_valid(graph, specs)
