"""cadence_memplan.reference, the pure-Python placers: same plans as upstream and as the core.

Random cases (tests/cases.py's generator: blocklists, disallowed memories, pre-placed
tensors, incoming offsets, failures) are compared with the C++ core through the array API
(numpy only); tests/test_differential_generated.py compares the reference with
upstream's classes.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from cases import Case, RandomChooser, generate_case, plan_with_array_api

import cadence_memplan
from cadence_memplan import reference
from cadence_memplan.synthetic import synthetic_graph

ALGORITHMS = cadence_memplan.UPSTREAM_ALGORITHMS
CORE_SEEDS = range(40)


def plan_with_reference(case: Case, algorithm: str, **options: Any) -> cadence_memplan.PlanResult:
    return plan_with_array_api(case, algorithm, planner=reference.plan, **options)


def as_lists(result: cadence_memplan.PlanResult) -> tuple[Any, ...]:
    return (
        result.mem_ids.tolist(),
        result.offsets.tolist(),
        result.bufsizes.tolist(),
        result.call_bufsizes.tolist(),
        [order.tolist() for order in result.memory_order],
    )


def assert_reference_matches_core(run_reference: Any, run_core: Any) -> None:
    """Same plan, or a PlanningError naming the same tensor."""
    outcomes = []
    for run in (run_core, run_reference):
        try:
            outcomes.append(as_lists(run()))
        except cadence_memplan.PlanningError as error:
            outcomes.append(("PlanningError", error.tensor_index))
    core_outcome, reference_outcome = outcomes
    assert reference_outcome == core_outcome


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("seed", CORE_SEEDS)
def test_matches_core_on_larger_random_cases(algorithm: str, seed: int) -> None:
    case = generate_case(RandomChooser(random.Random(10_000 + seed)), max_tensors=400)
    assert_reference_matches_core(
        lambda: plan_with_reference(case, algorithm),
        lambda: plan_with_array_api(case, algorithm),
    )


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("live_tensors", [2, 32, 300])
def test_matches_core_on_synthetic_graphs(algorithm: str, live_tensors: int) -> None:
    graph = synthetic_graph(1500, live_tensors=live_tensors, seed=live_tensors)
    memory_sizes, alignments = [256 << 10, 4 << 20, 1 << 34], [16, 64, 37]
    assert_reference_matches_core(
        lambda: reference.plan(*graph, memory_sizes, alignments, algorithm=algorithm),
        lambda: cadence_memplan.plan(*graph, memory_sizes, alignments, algorithm=algorithm),
    )


def test_keep_incoming_offset_false_matches_core() -> None:
    case = Case(
        memory_sizes=(64, 1000),
        memory_alignments=(16, 16),
        lifetimes=((0, 3), (1, 2), (2, 5)),
        sizes=(32, 16, 48),
        incoming_offsets=(512, None, 16),
    )
    for keep in (True, False):
        assert_reference_matches_core(
            lambda keep=keep: plan_with_reference(case, "heuristic", keep_incoming_offset=keep),
            lambda keep=keep: cadence_memplan.plan(
                [0, 1, 2],
                [3, 2, 5],
                [32, 16, 48],
                [64, 1000],
                [16, 16],
                algorithm="heuristic",
                incoming_offsets=[512, -1, 16],
                keep_incoming_offset=keep,
            ),
        )


def test_plans_are_valid_and_typed_like_the_array_api() -> None:
    graph = synthetic_graph(300)
    for algorithm in ALGORITHMS:
        result = reference.plan(*graph, [4096, 1 << 30], [16, 64], algorithm=algorithm)
        assert result.mem_ids.dtype == result.offsets.dtype == np.int64
        assert result.bufsizes.shape == (3,)
        problem = cadence_memplan.validate(
            *graph, result.mem_ids, result.offsets, [4096, 1 << 30], [16, 64]
        )
        assert problem is None, problem


@pytest.mark.parametrize(
    ("changes", "error", "words"),
    [
        ({"sizes": [1, -2]}, ValueError, "tensor 1"),
        ({"ends": [1]}, ValueError, "ends has 1 entries"),
        ({"starts": [0, 1.5]}, TypeError, "starts[1]"),
        ({"memory_alignments": [0]}, ValueError, "memory 1"),
        ({"algorithm": "best"}, ValueError, "algorithm"),
    ],
)
def test_bad_input_raises(changes: dict[str, Any], error: type[Exception], words: str) -> None:
    arguments: dict[str, Any] = {
        "starts": [0, 1],
        "ends": [1, 2],
        "sizes": [1, 2],
        "memory_sizes": [64],
        "memory_alignments": [16],
        **changes,
    }
    with pytest.raises(error) as raised:
        reference.plan(**arguments)
    assert words in str(raised.value)


def test_failure_names_the_tensor() -> None:
    with pytest.raises(cadence_memplan.PlanningError, match="tensor 1") as raised:
        reference.plan([0, 0], [1, 1], [8, 100], [64], [16])
    assert raised.value.tensor_index == 1


def test_reference_does_not_touch_the_extension() -> None:
    """The oracle must not be built on what it checks: no import of ``_core`` or ``api``."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(reference.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    assert not imported & {"_core", "api", "cadence_memplan._core", "cadence_memplan.api"}
