"""Graphs for the reorder's rules (tests/test_schedule_rules.py), and the orders that test
them: hand-made exir graphs in the shape ``ToOutVarPass`` leaves (placeholders, allocs,
out-variant ops), and :func:`adversarial_order`, the legal order (under the rules given)
that moves every unit as late as it may, so a rule left out shows in the order or in what
the program computes. Needs torch and executorch.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Iterable
from typing import Any

import torch
from executorch.exir import memory
from executorch.exir.memory_planning import (
    MemoryPlanningAlgorithmSuite,
    update_all_tensors_lifetime,
)
from executorch.exir.passes import MemoryPlanningPass
from executorch.exir.tensor import TensorSpec

import cadence_memplan.exir
from cadence_memplan.scheduling.problem import apply_node_order
from cadence_memplan.scheduling.rules import ALL_RULES, UnitGraph, unit_graph


def adversarial_order(graph: UnitGraph) -> list[int]:
    """The legal order that runs, among the units whose predecessors ran, the one last in
    the given order first (the given order's reverse, as far as the edges allow)."""
    count = len(graph.units)
    successors: list[list[int]] = [[] for _ in range(count)]
    waiting = [0] * count
    for before, after in graph.all_edges():
        successors[before].append(after)
        waiting[after] += 1
    ready = [-unit for unit in range(count) if not waiting[unit]]
    heapq.heapify(ready)
    order = []
    while ready:
        unit = -heapq.heappop(ready)
        order.append(unit)
        for after in successors[unit]:
            waiting[after] -= 1
            if not waiting[after]:
                heapq.heappush(ready, -after)
    assert len(order) == count, "the rules' edges have a cycle"
    return order


def ordered_planning(rules: Collection[str] = ALL_RULES) -> Any:
    """A memory-planning pass that first puts the graph in :func:`adversarial_order`
    under ``rules``, then plans it as exir's default pass does."""

    def algorithm(
        alignment: int, specs: Any, graph_module: Any, signature: Any, padding: int = 0
    ) -> list[int]:
        graph = unit_graph(graph_module, rules)
        apply_node_order(graph_module, graph.node_order(adversarial_order(graph)))
        for node in graph_module.graph.nodes:  # fresh lifetimes, as exir's SpecPropPass
            for spec in _specs(node):
                spec.lifetime = [None, None]
        update_all_tensors_lifetime(graph_module, signature)
        suite = MemoryPlanningAlgorithmSuite([cadence_memplan.exir.greedy])
        result: list[int] = suite(alignment, list(specs), graph_module, signature, padding)
        return result

    return MemoryPlanningPass(memory_planning_algo=algorithm)


def _specs(node: torch.fx.Node) -> list[TensorSpec]:
    specs = node.meta.get("spec")
    listed = specs if isinstance(specs, (list, tuple)) else [specs]
    return [spec for spec in listed if type(spec) is TensorSpec]


class GraphBuilder:
    """An exir graph at memory planning, node by node; every tensor [4] float32."""

    def __init__(self) -> None:
        self.graph = torch.fx.Graph()

    def spec(self) -> TensorSpec:
        return TensorSpec.from_tensor(torch.zeros(4))

    def input(self, name: str) -> torch.fx.Node:
        node = self.graph.placeholder(name)
        node.meta["spec"] = self.spec()
        return node

    def alloc(self) -> torch.fx.Node:
        node = self.graph.call_function(memory.alloc, (((4,), torch.float32),))
        node.meta["spec"] = self.spec()
        return node

    def out(self, op: Any, *args: Any, **kwargs: Any) -> torch.fx.Node:
        """An out-variant op writing a new alloc."""
        alloc = self.alloc()
        node = self.graph.call_function(op, args, {**kwargs, "out": alloc})
        node.meta["spec"] = alloc.meta["spec"]
        return node

    def call(self, target: Any, *args: Any, spec_of: torch.fx.Node | None = None) -> torch.fx.Node:
        """A node whose result is ``spec_of``'s storage (in-place ops) or a new spec."""
        node = self.graph.call_function(target, args)
        node.meta["spec"] = spec_of.meta["spec"] if spec_of is not None else self.spec()
        return node

    def output(self, *nodes: torch.fx.Node) -> torch.fx.GraphModule:
        self.graph.output(tuple(nodes))
        return torch.fx.GraphModule(torch.nn.Module(), self.graph)


def position(graph: UnitGraph, order: Iterable[int]) -> dict[torch.fx.Node, int]:
    """Each node's index in the graph ``order`` makes."""
    return {node: index for index, node in enumerate(graph.node_order(order))}


def before_in_every_order(
    build: Callable[[], tuple[torch.fx.GraphModule, torch.fx.Node, torch.fx.Node]],
    rules: Collection[str] = ALL_RULES,
) -> bool:
    """Whether ``first`` comes before ``second`` in the given order and in the adversarial
    one under ``rules`` (``build`` returns the graph module and the two nodes)."""
    graph_module, first, second = build()
    graph = unit_graph(graph_module, rules)
    given = position(graph, range(len(graph.units)))
    assert given[first] < given[second], "the test graph's own order"
    moved = position(graph, adversarial_order(graph))
    return moved[first] < moved[second]
