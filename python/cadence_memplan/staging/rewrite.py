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

The same copies can be put into the graph a memory-planning pass gets, inside
``to_executorch`` after its out-variant passes (:func:`stage_graph`, what the passes'
``stage=True`` runs): there each copy is the op's out variant (``aten.clone.out``,
``cadence.idma_load.out``...) writing a ``memory.alloc`` node of its own, with its
TensorSpec, as exir's ``ToOutVarPass`` would have made it; the pass then plans those specs
with the others. :func:`remove_copies` takes them out again (a plan that failed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from .._boundary.upstream import edge_op
from .choice import DEFAULT_STAGING_WORK
from .cost_model import CostModel
from .graph import GraphProblem, problem_of, problem_of_graph
from .problem import Copy
from .report import StagingReport, stage_problem

__all__ = [
    "Rewrite",
    "insert_copies",
    "remove_copies",
    "stage_graph",
    "stage_program",
]


@dataclass(frozen=True)
class Rewrite:
    """``inserted`` copies (one clone, or one load or store and its wait, per value);
    ``skipped`` copies the graph cannot carry; what :func:`remove_copies` undoes: the
    ``nodes`` added and the ``rewired`` reads (reader, value read before, copy read now)."""

    inserted: int
    skipped: int
    nodes: tuple[torch.fx.Node, ...] = field(default=(), repr=False, compare=False)
    rewired: tuple[tuple[torch.fx.Node, torch.fx.Node, torch.fx.Node], ...] = field(
        default=(), repr=False, compare=False
    )


def _served_ops(graph: GraphProblem, copy: Copy) -> list[int]:
    readers = graph.problem.readers[copy.tensor]
    if copy.kind == "load":
        return [op for op in readers if copy.start <= op <= copy.until]
    return [op for op in readers if op > copy.until]


class _Copier:
    """Makes the copy nodes of one graph: edge ops (``out_variant`` False), or out
    variants each writing a ``memory.alloc`` of its own, with a TensorSpec (the graph a
    memory-planning pass gets); ``added`` lists every node made."""

    def __init__(self, graph: torch.fx.Graph, out_variant: bool) -> None:
        self.graph = graph
        self.out_variant = out_variant
        self.added: list[torch.fx.Node] = []

    def op(
        self, namespace: str, name: str, source: torch.fx.Node, anchor: torch.fx.Node
    ) -> torch.fx.Node:
        """``namespace.name(source)`` inserted before ``anchor``."""
        value: Any = source.meta.get("val")
        with self.graph.inserting_before(anchor):
            if not self.out_variant:
                node = self.graph.call_function(edge_op(namespace, f"{name}.default"), (source,))
            else:
                from executorch.exir import memory
                from executorch.exir.tensor import TensorSpec

                shape = (tuple(int(size) for size in value.shape), value.dtype)
                alloc = self.graph.call_function(memory.alloc, (shape,))
                alloc.meta = {"val": value}
                self.added.append(alloc)
                target = getattr(getattr(torch.ops, namespace), name).out
                node = self.graph.call_function(target, (source,), {"out": alloc})
                node.meta["spec"] = TensorSpec.from_tensor(value)
        node.meta.update(
            {key: source.meta[key] for key in ("val", "tensor_meta") if key in source.meta}
        )
        self.added.append(node)
        return node

    def clone_before(self, node: torch.fx.Node, value: torch.fx.Node) -> torch.fx.Node:
        """A clone of ``value`` inserted before ``node``, or right after ``value`` when
        ``value`` comes later in the graph."""
        return self.op("aten", "clone", value, _anchor(node, value))

    def idma_before(
        self, issue: torch.fx.Node, wait_at: torch.fx.Node, value: torch.fx.Node, kind: str
    ) -> torch.fx.Node:
        """Cadence's ``idma_load`` (or ``idma_store``) of ``value`` where the copy is
        issued and its ``idma_wait`` just before op ``wait_at``: the value the served
        reads read."""
        start = self.op("cadence", f"idma_{kind}", value, _anchor(issue, value))
        return self.op("cadence", "idma_wait", start, _anchor(wait_at, start))


def _anchor(node: torch.fx.Node, value: torch.fx.Node) -> torch.fx.Node:
    """Where a copy of ``value`` meant to go before ``node`` goes: there, or right after
    ``value`` (and the ``memory.alloc`` of its out variant) when it comes later."""
    order = {n: i for i, n in enumerate(node.graph.nodes)}
    return node if order[value] < order[node] else value.next


def insert_copies(graph: GraphProblem, schedule: Sequence[Copy], dialect: str = "exir") -> Rewrite:
    """Put ``schedule``'s copies into the graph ``graph`` was read from: as clones
    (``dialect="exir"``, which the portable runtime runs), or as Cadence's ``idma_load``
    or ``idma_store`` and ``idma_wait`` (``"cadence"``: Cadence's constraints then pin a
    load's output and a store's source to memory 1)."""
    if dialect not in ("exir", "cadence"):
        raise ValueError(f"dialect must be 'exir' or 'cadence', not {dialect!r}")
    inserted = skipped = 0
    ops = graph.problem.num_ops
    copier = _Copier(graph.graph_module.graph, graph.out_variant)
    rewired: list[tuple[torch.fx.Node, torch.fx.Node, torch.fx.Node]] = []
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
                        copier.clone_before(issue, value)
                        if dialect == "exir"
                        else copier.idma_before(issue, wait_at, value, copy.kind)
                    )
                    # A later copy of the tensor (a load after a store) copies this one.
                    graph.tensor_of[copies[value]] = copy.tensor
                    inserted += 1
                node.replace_input_with(value, copies[value])
                rewired.append((node, value, copies[value]))
        skipped += not copies
    graph.graph_module.recompile()
    return Rewrite(inserted, skipped, tuple(copier.added), tuple(rewired))


def remove_copies(graph_module: torch.fx.GraphModule, rewrite: Rewrite) -> None:
    """Undo :func:`insert_copies`: every read back on the value it read, every node it
    added erased (the graph as it was, node for node)."""
    for reader, value, copy in reversed(rewrite.rewired):
        reader.replace_input_with(copy, value)
    for node in reversed(rewrite.nodes):
        graph_module.graph.erase_node(node)
    graph_module.recompile()


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


def stage_graph(
    graph_module: torch.fx.GraphModule,
    signature: Any,
    model: CostModel,
    capacity: int,
    alignment: int = 16,
    dialect: str = "exir",
    work_budget: int = DEFAULT_STAGING_WORK,
) -> tuple[StagingReport, Rewrite]:
    """Stage the graph a memory-planning pass gets (its ``run(graph_module,
    graph_signature)``, out-variant ops) in place, for a fast memory of ``capacity``
    bytes, before the pass plans it: the choice of :func:`~.report.stage_problem`, which
    is the static plan (no copy) unless it models fewer cycles, its copies put in as out
    variants with their allocations (:func:`insert_copies`'s ``dialect``)."""
    graph = problem_of_graph(graph_module, signature, model)
    report = stage_problem(graph.problem, model, capacity, alignment, work_budget)
    return report, insert_copies(graph, report.choice.schedule, dialect)
