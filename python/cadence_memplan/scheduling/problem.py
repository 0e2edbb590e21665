"""A planned graph's units as the scheduler's arrays (:func:`cadence_memplan.api.schedule`),
the structural order the search starts from, and an order put back into the graph.

The arrays model exir's lifetimes (``update_all_tensors_lifetime``) on units: a unit's
step is its position; a buffer (a planned spec that owns its storage: the specs inside it,
``storage_base`` aliases and views, count as its own) is alive from the step of the unit
that writes it first (graph inputs: from the start) to the last step of a unit that
touches it, and to the end for graph outputs and mutable buffers. The specs only the
output node holds (exir plans one per mutated buffer, for its new value, that no node
writes) are alive at the output node alone, after every unit, whatever the order: they
are left out of the arrays, and :attr:`ScheduleProblem.end_bytes` counts them with what is
alive at the end, which no order changes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from executorch.exir.tensor import TensorSpec

from .._boundary.tensorspecs import allocated_sizes
from .._boundary.upstream import is_mutable_buffer
from .rules import UnitGraph, node_specs
from .rules import storage_root as view_root

__all__ = [
    "ScheduleProblem",
    "apply_node_order",
    "buffer_root",
    "schedule_problem",
    "structural_order",
]

IntArray = npt.NDArray[np.int64]


@dataclass
class ScheduleProblem:
    """The arrays :func:`cadence_memplan.api.schedule` takes, for units in the given
    order, and what the graph says about them: ``mutable_buffers``, the ``id`` of each
    mutable buffer's storage root; ``end_bytes``, the bytes alive at the output node in
    every order (graph outputs, mutable buffers, the output node's own specs)."""

    num_units: int
    edges: IntArray
    buffer_sizes: IntArray
    buffer_producers: IntArray
    buffer_user_offsets: IntArray
    buffer_users: IntArray
    buffer_live_to_end: npt.NDArray[np.bool_]
    mutable_buffers: frozenset[int]
    end_bytes: int

    def arguments(self, order: Sequence[int] | None = None) -> dict[str, Any]:
        """The keyword arguments of ``api.schedule``, with the units renumbered so that
        ``order`` (default: the given one) is 0, 1, 2..."""
        if order is None:
            rank = np.arange(self.num_units, dtype=np.int64)
        else:
            rank = np.empty(self.num_units, dtype=np.int64)
            rank[np.asarray(order, dtype=np.int64)] = np.arange(self.num_units, dtype=np.int64)
        edges = rank[self.edges] if len(self.edges) else self.edges
        producers = np.where(self.buffer_producers >= 0, rank[self.buffer_producers], -1)
        return {
            "num_units": self.num_units,
            "edges": edges.reshape(-1, 2),
            "buffer_sizes": self.buffer_sizes,
            "buffer_producers": producers,
            "buffer_user_offsets": self.buffer_user_offsets,
            "buffer_users": rank[self.buffer_users],
            "buffer_live_to_end": self.buffer_live_to_end,
        }

    def peak_live(self, order: Sequence[int]) -> int:
        """The most bytes alive at once under ``order`` in this model (the API's)."""
        step = np.empty(self.num_units, dtype=np.int64)
        step[np.asarray(order, dtype=np.int64)] = np.arange(self.num_units, dtype=np.int64)
        last = max(self.num_units - 1, 0)
        changes = np.zeros(self.num_units + 1, dtype=np.int64)
        for buffer, size in enumerate(self.buffer_sizes.tolist()):
            producer = int(self.buffer_producers[buffer])
            start = 0 if producer < 0 else int(step[producer])
            users = self.buffer_users[
                self.buffer_user_offsets[buffer] : self.buffer_user_offsets[buffer + 1]
            ]
            end = int(step[users].max()) if len(users) else start
            if self.buffer_live_to_end[buffer]:
                end = last
            end = max(end, start)
            changes[start] += size
            changes[end + 1] -= size
        return int(np.cumsum(changes).max(initial=0))


def _aligned(sizes: IntArray, alignment: int) -> IntArray:
    return (sizes + alignment - 1) // alignment * alignment


def buffer_root(spec: TensorSpec, hosts: Mapping[int, TensorSpec]) -> TensorSpec:
    """The spec whose storage holds ``spec``'s bytes: down ``storage_base`` (a view's
    base), then to its host where ``hosts`` (``id()`` -> spec, Cadence's storage sharing:
    :func:`~cadence_memplan._boundary.storage_sharing.storage_hosts`) names one, as the
    planners count it."""
    root = view_root(spec)
    seen: set[int] = set()
    while id(root) not in seen:
        seen.add(id(root))
        host = hosts.get(id(spec), hosts.get(id(root)))
        if host is None:
            break
        spec, root = host, view_root(host)
    return root


def schedule_problem(
    graph: UnitGraph,
    planned: Collection[TensorSpec],
    graph_signature: Any,
    alignment: int,
    hosts: Mapping[int, TensorSpec] | None = None,
) -> ScheduleProblem:
    """The scheduler's arrays for ``graph``'s units over the ``planned`` specs (what the
    memory planner places: their storage roots are the buffers, a tensor inside another's
    storage by ``hosts`` counted as its host's, as the planners count it), sizes rounded
    up to ``alignment``."""
    hosts = hosts or {}

    def storage_root(spec: TensorSpec) -> TensorSpec:
        return buffer_root(spec, hosts)

    planned_ids = {id(spec) for spec in planned}
    roots: dict[int, TensorSpec] = {}
    for spec in planned:
        root = storage_root(spec)
        if id(root) in planned_ids:
            roots.setdefault(id(root), root)
    index = {key: position for position, key in enumerate(roots)}
    count = len(index)
    producers = np.full(count, -2, dtype=np.int64)  # -2: no unit or input writes it
    users: list[set[int]] = [set() for _ in range(count)]
    mutable: set[int] = set()
    for node in graph.prologue:
        for spec in node_specs(node):
            buffer = index.get(id(storage_root(spec)))
            if buffer is not None and node.op == "placeholder":
                producers[buffer] = -1
        if node.op == "placeholder" and is_mutable_buffer(node, graph_signature):
            mutable.update(id(storage_root(spec)) for spec in node_specs(node))
    _record_units(graph, lambda spec: index.get(id(storage_root(spec))), producers, users)
    live_to_end = np.zeros(count, dtype=bool)
    for key in mutable:
        if key in index:
            live_to_end[index[key]] = True
    output_only = 0
    sizes = _aligned(allocated_sizes(list(roots.values())), alignment)
    for node in graph.epilogue:
        for source in node.all_input_nodes:
            for spec in node_specs(source):
                buffer = index.get(id(storage_root(spec)))
                if buffer is not None:
                    live_to_end[buffer] = True
        for spec in node_specs(node):  # the output node's own specs
            buffer = index.get(id(storage_root(spec)))
            if buffer is not None:
                if producers[buffer] == -2:
                    output_only += int(sizes[buffer])
                else:
                    live_to_end[buffer] = True
    keep = producers != -2
    offsets = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
    flat: list[int] = []
    for position, buffer in enumerate(np.flatnonzero(keep).tolist()):
        flat.extend(sorted(users[buffer] - {int(producers[buffer])}))
        offsets[position + 1] = len(flat)
    edges = np.array(sorted(graph.all_edges()), dtype=np.int64).reshape(-1, 2)
    end_bytes = int(sizes[keep][live_to_end[keep]].sum()) + output_only
    return ScheduleProblem(
        num_units=len(graph.units),
        edges=edges,
        buffer_sizes=sizes[keep],
        buffer_producers=producers[keep],
        buffer_user_offsets=offsets,
        buffer_users=np.array(flat, dtype=np.int64),
        buffer_live_to_end=live_to_end[keep],
        mutable_buffers=frozenset(mutable),
        end_bytes=end_bytes,
    )


def _record_units(
    graph: UnitGraph,
    buffer_of: Callable[[TensorSpec], int | None],
    producers: np.ndarray[Any, Any],
    users: list[set[int]],
) -> None:
    """Each unit as its buffers' producer (the first unit to write one) and user (any
    later writer, and every unit reading one from outside itself)."""
    for unit, nodes in enumerate(graph.units):
        own = set(nodes)
        for node in nodes:
            for spec in node_specs(node):
                buffer = buffer_of(spec)
                if buffer is None:
                    continue
                if producers[buffer] == -2:
                    producers[buffer] = unit
                elif producers[buffer] != unit:
                    users[buffer].add(unit)
            for source in node.all_input_nodes:
                if source in own:
                    continue
                for spec in node_specs(source):
                    buffer = buffer_of(spec)
                    if buffer is not None:
                        users[buffer].add(unit)


def structural_order(graph: UnitGraph, problem: ScheduleProblem) -> list[int]:
    """The given order with every unit that allocates nothing (a mutable buffer's
    write-back above all: a ``copy_`` into the buffer) moved up to just after the last
    unit it must follow. Such a move never raises the peak: the moved unit's step holds
    only what the step before it holds, and its inputs may die sooner."""
    allocates = np.zeros(problem.num_units, dtype=bool)
    allocates[problem.buffer_producers[problem.buffer_producers >= 0]] = True
    predecessors: list[list[int]] = [[] for _ in range(problem.num_units)]
    for before, after in problem.edges.tolist():
        predecessors[after].append(before)
    for buffer, producer in enumerate(problem.buffer_producers.tolist()):
        if producer < 0:
            continue
        start, end = problem.buffer_user_offsets[buffer : buffer + 2].tolist()
        for user in problem.buffer_users[start:end].tolist():
            predecessors[user].append(producer)
    # A unit moved up goes right after its last predecessor, after the units moved there
    # before it: keys that extend the predecessor's sort in the given order.
    keys: list[tuple[int, ...]] = []
    for unit in range(problem.num_units):
        if allocates[unit] or not predecessors[unit]:
            keys.append((unit,))
        else:
            keys.append((*max(keys[before] for before in predecessors[unit]), unit))
    return sorted(range(problem.num_units), key=keys.__getitem__)


def apply_node_order(graph_module: torch.fx.GraphModule, nodes: Sequence[torch.fx.Node]) -> None:
    """Put ``graph_module``'s nodes in the order ``nodes`` lists (every node, once)."""
    graph = graph_module.graph
    current = list(graph.nodes)
    if len(current) != len(nodes) or set(current) != set(nodes):
        raise ValueError("a node order must list every node of the graph once")
    if current == list(nodes):
        return
    previous = nodes[0]
    if current[0] is not previous:
        current[0].prepend(previous)
    for node in nodes[1:]:
        if previous.next is not node:
            previous.append(node)
        previous = node
