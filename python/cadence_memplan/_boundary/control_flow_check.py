"""The check of a planned program's control flow: no submodule overwrites a tensor its
parent still needs, and no tensor of the parent overwrites a submodule's output that the
parent still needs.

It reads the finished plan against :mod:`.control_flow`'s model of the runtime (what a
higher-order op's submodules write, which of their specs hold its outputs afterwards),
and shares none of the code that places the arenas. In each graph, for each higher-order
node ``h`` at node ``i``, it compares:

- what ``h``'s submodules write (at node ``i``) with the graph's own tensors alive at
  ``i`` and with the outputs of earlier higher-order nodes still alive at ``i``;
- the specs holding ``h``'s outputs with the graph's own tensors alive while they are.

Then it checks each submodule the same way, in the submodule's own time. A pair of
tensors of one graph is not its business (exir's ``verify_storage_reuse`` and the
package's ``validate`` check those).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch
from executorch.exir import memory
from executorch.exir.memory_planning import get_node_tensor_specs
from executorch.exir.tensor import TensorSpec

from .control_flow import (
    HigherOrderNode,
    PlannedBytes,
    escaped,
    footprint,
    higher_order_nodes,
    output_ends,
    planned_bytes,
    scope_specs,
)

__all__ = ["validate_control_flow"]


class _Names:
    """Where each spec of a program comes from, for messages: the node that produces it
    (not its ``alloc``) and the graph that node is in; read on the first message."""

    def __init__(self, graph_module: torch.fx.GraphModule) -> None:
        self._graph_module = graph_module
        self._where: dict[int, tuple[str, str]] | None = None

    def _read(self) -> dict[int, tuple[str, str]]:
        where: dict[int, tuple[str, str]] = {}
        from_alloc: set[int] = set()
        for path, module in self._graph_module.named_modules():
            if not isinstance(module, torch.fx.GraphModule):
                continue
            for node in module.graph.nodes:
                if node.op in ("get_attr", "output"):
                    continue
                for spec in get_node_tensor_specs(node):
                    if id(spec) in where and id(spec) not in from_alloc:
                        continue
                    where[id(spec)] = (node.name, path or "the graph")
                    if node.target is memory.alloc:
                        from_alloc.add(id(spec))
                    else:
                        from_alloc.discard(id(spec))
        return where

    def of(self, spec: object) -> str:
        if self._where is None:
            self._where = self._read()
        name, graph = self._where.get(id(spec), ("?", "?"))
        return f"`{name}` of {graph}"


def _op(hop: HigherOrderNode, graph: str) -> str:
    return f"{hop.kind} `{hop.node.name}` (node {hop.index} of {graph})"


def _first_clash(
    writers: PlannedBytes, others: PlannedBytes, among: npt.NDArray[np.bool_]
) -> tuple[int, int] | None:
    """The first (writer, other) pair, ``other`` among ``among``, whose bytes meet."""
    chosen = np.flatnonzero(among)
    if not len(writers.specs) or not len(chosen):
        return None
    clash = (
        (writers.mem_ids[:, None] == others.mem_ids[None, chosen])
        & (writers.lows[:, None] < others.highs[None, chosen])
        & (others.lows[None, chosen] < writers.highs[:, None])
    )
    pairs = np.argwhere(clash)
    if not len(pairs):
        return None
    writer, other = pairs[0].tolist()
    return writer, int(chosen[other])


def _bytes(first: PlannedBytes, i: int, second: PlannedBytes, j: int) -> str:
    low = max(int(first.lows[i]), int(second.lows[j]))
    high = min(int(first.highs[i]), int(second.highs[j]))
    return f"bytes [{low}, {high}) of memory {int(first.mem_ids[i])}"


def _check_graph(
    graph_module: torch.fx.GraphModule, written: range | None, graph: str, names: _Names
) -> str | None:
    hops = higher_order_nodes(graph_module)
    if not hops:
        return None
    own = planned_bytes(scope_specs(graph_module, written))
    # Outputs of the higher-order nodes met so far: the spec holding each, and until when.
    held_specs: list[TensorSpec] = []
    held_by: list[tuple[HigherOrderNode, int]] = []
    held_until: list[int] = []
    for hop in hops:
        writes = planned_bytes(footprint(hop))
        at_call = (own.starts <= hop.index) & (hop.index <= own.ends)
        found = _first_clash(writes, own, at_call)
        if found is not None:
            w, x = found
            return (
                f"{names.of(writes.specs[w])}, written when {_op(hop, graph)} runs,"
                f" overwrites {_bytes(writes, w, own, x)}, which hold"
                f" {names.of(own.specs[x])}, alive in {graph} over nodes"
                f" [{int(own.starts[x])}, {int(own.ends[x])}]"
            )
        held = planned_bytes(held_specs)
        by = {id(spec): index for index, spec in enumerate(held_specs)}
        order = [by[id(spec)] for spec in held.specs]
        still_alive = np.array([held_until[index] >= hop.index for index in order], dtype=bool)
        found = _first_clash(writes, held, still_alive)
        if found is not None:
            w, y = found
            earlier, k = held_by[order[y]]
            return (
                f"{names.of(writes.specs[w])}, written when {_op(hop, graph)} runs,"
                f" overwrites {_bytes(writes, w, held, y)}, which hold output {k} of"
                f" {_op(earlier, graph)} (in {names.of(held.specs[y])}), alive in"
                f" {graph} until node {held_until[order[y]]}"
            )
        ends = output_ends(hop)
        for k, spec in escaped(hop):
            held_specs.append(spec)
            held_by.append((hop, k))
            held_until.append(ends[k])
        outputs = planned_bytes([spec for k, spec in escaped(hop)])
        outputs_until = {id(spec): ends[k] for k, spec in escaped(hop)}
        for y, spec in enumerate(outputs.specs):
            until = outputs_until[id(spec)]
            meanwhile = (own.starts <= until) & (hop.index <= own.ends)
            found = _first_clash(outputs, own, meanwhile)
            if found is not None and found[0] == y:
                x = found[1]
                return (
                    f"{names.of(own.specs[x])}, alive in {graph} over nodes"
                    f" [{int(own.starts[x])}, {int(own.ends[x])}], overwrites"
                    f" {_bytes(outputs, y, own, x)}, which hold an output of"
                    f" {_op(hop, graph)} (in {names.of(spec)}), alive until node {until}"
                )
    for hop in hops:
        for name, submodule in hop.submodules:
            problem = _check_graph(submodule, hop.written_placeholders, _path(graph, name), names)
            if problem is not None:
                return problem
    return None


def _path(graph: str, name: str) -> str:
    return name if graph == "the graph" else f"{graph}.{name}"


def validate_control_flow(graph_module: torch.fx.GraphModule) -> str | None:
    """Check a planned program's control flow; return the first violation, in words, or
    None. A violation is a tensor some submodule (of a cond, while, map or scan, at any
    depth) writes while the bytes hold a tensor its parent still needs (the parent's own,
    or an output of an earlier higher-order op, which cond and while leave in their
    submodule's memory), or a tensor of the parent that overwrites such an output while
    it is still needed. ``graph_module`` is the planned program's top graph
    (``ExecutorchProgramManager.exported_program().graph_module``, or the graph a memory
    planning pass has just planned)."""
    return _check_graph(graph_module, None, "the graph", _Names(graph_module))
