"""Staging as a rewrite of an edge program: the chosen copies put into its graph, before
``to_executorch`` plans it (docs/staging.md, "The rewrite").

Each copy becomes one ``clone`` node per graph value it copies (the tensor, or a view of
it that the ops read), placed where the copy is issued: a **load** just before op
``start`` (or just after the value, if that comes later), the reads it serves then read
the clone; a **store** just before op ``start``, the reads after ``until`` then read the
clone. A clone computes its input exactly, so the program computes bit for bit what it did;
what changes is which tensors exist when, and so what the static planner can keep in fast
memory. Copies that the edge graph cannot carry are left out and counted: those of the
write-backs ``to_executorch`` adds for mutable buffers, and stores of graph outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .._boundary.upstream import edge_op
from .choice import DEFAULT_STAGING_WORK
from .cost_model import DEFAULT_COST_MODEL, CostModel, load_cost_model
from .graph import GraphProblem, problem_of
from .problem import Copy
from .report import StagingReport, stage_problem, staging_json

__all__ = ["Rewrite", "insert_copies", "stage_lowered", "stage_program"]


@dataclass(frozen=True)
class Rewrite:
    """``inserted`` clone nodes; ``skipped`` copies the edge graph cannot carry."""

    inserted: int
    skipped: int


def _served_ops(graph: GraphProblem, copy: Copy) -> list[int]:
    readers = graph.problem.readers[copy.tensor]
    if copy.kind == "load":
        return [op for op in readers if copy.start <= op <= copy.until]
    return [op for op in readers if op > copy.until]


def _clone_before(node: torch.fx.Node, value: torch.fx.Node) -> torch.fx.Node:
    """A clone of ``value`` inserted before ``node``, or right after ``value`` when
    ``value`` comes later in the graph."""
    order = {n: i for i, n in enumerate(node.graph.nodes)}
    anchor = node if order[value] < order[node] else value.next
    with node.graph.inserting_before(anchor):
        clone = node.graph.call_function(edge_op("aten", "clone.default"), (value,))
    clone.meta = {key: item for key, item in value.meta.items() if key in ("val", "tensor_meta")}
    return clone


def _idma_before(
    issue: torch.fx.Node, wait_at: torch.fx.Node, value: torch.fx.Node, kind: str
) -> torch.fx.Node:
    """Cadence's ``idma_load`` (or ``idma_store``) of ``value`` where the copy is issued
    and its ``idma_wait`` just before op ``wait_at``: the value the served reads read."""
    start = _clone_before(issue, value)
    start.target = edge_op("cadence", f"idma_{kind}.default")
    order = {n: i for i, n in enumerate(issue.graph.nodes)}
    anchor = wait_at if order[start] < order[wait_at] else start.next
    with issue.graph.inserting_before(anchor):
        wait = issue.graph.call_function(edge_op("cadence", "idma_wait.default"), (start,))
    wait.meta = dict(start.meta)
    return wait


def insert_copies(graph: GraphProblem, schedule: Sequence[Copy], dialect: str = "exir") -> Rewrite:
    """Put ``schedule``'s copies into the graph ``graph`` was read from: as clones
    (``dialect="exir"``, which the portable runtime runs), or as Cadence's ``idma_load``
    or ``idma_store`` and ``idma_wait`` (``"cadence"``: Cadence's constraints then pin a
    load's output and a store's source to memory 1)."""
    if dialect not in ("exir", "cadence"):
        raise ValueError(f"dialect must be 'exir' or 'cadence', not {dialect!r}")
    inserted = skipped = 0
    ops = graph.problem.num_ops
    for copy in schedule:
        served = [graph.ops[op] for op in _served_ops(graph, copy)]
        issue = graph.ops[copy.start] if copy.start < ops else None
        wait_at = graph.ops[copy.end] if copy.end < ops else None
        readers = [node for node in served if node is not None]
        if issue is None or wait_at is None or not served or len(readers) < len(served):
            skipped += 1
            continue
        copies: dict[torch.fx.Node, torch.fx.Node] = {}
        for node in readers:
            for value in node.all_input_nodes:
                if graph.tensor_of.get(value) != copy.tensor:
                    continue
                if value not in copies:
                    copies[value] = (
                        _clone_before(issue, value)
                        if dialect == "exir"
                        else _idma_before(issue, wait_at, value, copy.kind)
                    )
                    inserted += 1
                node.replace_input_with(value, copies[value])
    graph.graph_module.recompile()
    return Rewrite(inserted, skipped)


def stage_program(
    program: Any,
    model: CostModel,
    capacity: int,
    alignment: int = 16,
    work_budget: int = DEFAULT_STAGING_WORK,
    dialect: str = "exir",
) -> tuple[StagingReport, Rewrite]:
    """Stage an ``ExportedProgram`` (an edge program's, before ``to_executorch``) in place
    for a fast memory of ``capacity`` bytes: the choice of :func:`~.report.stage_problem`,
    its copies put into the graph (:func:`insert_copies`'s ``dialect``)."""
    graph = problem_of(program, model)
    report = stage_problem(graph.problem, model, capacity, alignment, work_budget)
    return report, insert_copies(graph, report.choice.schedule, dialect)


def stage_lowered(
    edge: Any, fast_bytes: int, alignment: int, cost_model: str | None
) -> tuple[StagingReport, dict[str, Any]]:
    """``plan --stage``: the staging report of a lowered model (an ``EdgeProgramManager``,
    left unchanged) for a fast memory of ``fast_bytes``, under the cost model in the file
    ``cost_model`` (None: the default), and the ``--stage-out`` document."""
    model = DEFAULT_COST_MODEL if cost_model is None else load_cost_model(cost_model)
    graph = problem_of(edge.exported_program(), model)
    report = stage_problem(graph.problem, model, fast_bytes, alignment)
    return report, staging_json(graph.problem, report, model)
