"""``objective="traffic"``: the Cadence drop-in's ``best`` keeps the most traffic (a tensor's
size times 1 + its readers) in fast memory, never less than upstream's first fit keeps."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("executorch", reason="needs torch and executorch")

from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import get_default_memory_config
from executorch.exir.tensor import TensorSpec
from lowered_models import (
    assert_valid,
    capture_constraints,
    edge_program,
    memory_config_for,
    to_executorch,
)

from cadence_memplan.cadence.algorithms import BestOfHierarchy, spec_readers
from cadence_memplan.cadence.memory_planning import CadenceMemoryPlanning

pytestmark = pytest.mark.executorch
MODEL = "transformer_encoder"


def traffic_in_memory_1(program: Any) -> int:
    """Size times (1 + readers) of every spec in memory 1, counted from the graph here."""
    graph_module = program.exported_program().graph_module
    total = 0
    seen: set[int] = set()
    for node in graph_module.graph.nodes:
        spec = node.meta.get("spec")
        if isinstance(spec, TensorSpec) and spec.mem_id == 1 and id(spec) not in seen:
            seen.add(id(spec))
            readers = sum(
                len(other.users)
                for other in graph_module.graph.nodes
                if other.meta.get("spec") is spec
            )
            total += spec.allocated_memory * (1 + readers)
    return total


def plan(lowered: dict[str, Any], mem_algo: int, objective: str | None) -> Any:
    memory_config = memory_config_for("three_level_tight", lowered, MODEL)
    planning = CadenceMemoryPlanning(memory_config, mode=CompileMode.DEFAULT, mem_algo=mem_algo)
    if objective is not None:
        planning.algo.objective = objective
    captured = capture_constraints(planning)
    program = to_executorch(edge_program(lowered, MODEL), planning)
    assert_valid(program, memory_config, captured[0], True)
    return program, planning.algo


def test_traffic_objective_keeps_no_less_traffic_than_first_fit(lowered) -> None:
    first_fit, _ = plan(lowered, 0, None)
    by_traffic, algo = plan(lowered, 2, "traffic")
    assert traffic_in_memory_1(by_traffic) >= traffic_in_memory_1(first_fit)
    assert algo.last_result is not None
    assert algo.last_result.kept_bound is not None
    # The report's "keeps X; at most Y" for a model: one call placed every spec here.
    assert algo.calls == 1
    assert 0 < algo.last_kept <= algo.last_result.kept_bound


def test_spec_readers_counts_the_nodes_that_read_each_spec(lowered) -> None:
    program, _ = plan(lowered, 0, None)
    graph_module = program.exported_program().graph_module
    readers = spec_readers(graph_module)
    for node in graph_module.graph.nodes:
        spec = node.meta.get("spec")
        if isinstance(spec, TensorSpec):
            holders = [n for n in graph_module.graph.nodes if n.meta.get("spec") is spec]
            assert readers[id(spec)] == sum(len(n.users) for n in holders)


def test_an_unknown_objective_is_refused() -> None:
    with pytest.raises(ValueError, match="objective"):
        BestOfHierarchy(get_default_memory_config(), objective="speed")
