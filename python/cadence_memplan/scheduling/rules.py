"""The legal-order rules: which orders of a planned exir graph compute what its given
order computes. Written once, here; :mod:`.problem` and :mod:`.reordering` only use them.

A graph at memory planning (after exir's ``ToOutVarPass``) is a list of nodes:
placeholders, ``memory.alloc`` nodes, out-variant ops that write into them, views
(``memory.view``) and ``getitem``\\ s of what other nodes computed, in-place ops, delegate
calls, higher-order ops (``cond``, ``map``...) with their ``get_attr`` submodules, and the
output node. :func:`unit_graph` cuts it into **units**, the things an order moves:

- **an op together with the alloc nodes it writes** (rule ``"units"``): an alloc starts
  its tensor's lifetime, so it stays right before the op that fills it;
- **views and getitem follow their source** (rule ``"follow source"``): they compute
  nothing (static views are elided, a dynamic one only points at its base), so each
  stays right after the node it reads, in that node's unit, or with the placeholders.

Placeholders stay first, the output node last, each ``get_attr`` right before the first
unit that reads it. Between units, :func:`unit_graph` lists the orderings every legal
order keeps, each rule a function of :data:`ORDER_RULES`:

- ``"data"``: a unit after every unit whose result it reads (through views too);
- ``"storage order"``: storage written by more than one node keeps its access order.
  A *storage* is a spec with everything that lies in it: views and in-place results
  (their spec is their base's), ``storage_base`` aliases (exir's shared allocations),
  and Cadence's storage sharing, the nops and the ops its constraint passes may make
  nops (:func:`~cadence_memplan._boundary.storage_sharing.may_share_storage_with`). It is
  written more than once when a node writes a tensor that already holds a value: a
  mutable buffer's write-back (``copy_``), an in-place op (a ``Tensor(a!)`` argument
  that is not the unit's own alloc: exir's and Cadence's in-place ops alike), an
  out-variant writing into an input, a spec placed inside another's storage. Every
  access to such a storage (read, write, or the first write of one of its tensors)
  keeps its order against each such write;
- ``"side effects"``: side-effecting ops, delegate calls and higher-order ops keep
  their relative order (a chain in the given order). Side-effecting: torch's
  side-effectful functions, ops tagged ``nondeterministic_seeded`` (random numbers),
  Cadence's idma transfers, ``memory.free``, and any call whose target is not an
  operator with a schema (nothing says what it touches).

Edges always point forward in the given order, so the given order is legal.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field

import torch
from executorch.exir import memory
from executorch.exir.tensor import TensorSpec

from .._boundary.storage_sharing import may_share_storage_with, op_name
from .._boundary.upstream import (
    aten_overload,
    has_side_effects,
    is_higher_order_operator,
    schema_of,
    spec_holder,
)

__all__ = [
    "ALL_RULES",
    "GROUPING_RULES",
    "ORDER_RULES",
    "UnitGraph",
    "is_write_back",
    "node_specs",
    "storage_root",
    "unit_graph",
]

GROUPING_RULES = ("units", "follow source")
ORDER_RULES: dict[str, Callable[[UnitGraph], Iterable[tuple[int, int]]]] = {}
ALL_RULES: frozenset[str] = frozenset()  # filled in below, once the rules are defined

_ALIASES = (memory.view, operator.getitem)


@dataclass
class UnitGraph:
    """A graph cut into units, with the orderings between them.

    ``prologue``: the nodes kept first (placeholders, and what follows them: their views,
    allocs no op writes, ``get_attr`` nodes no unit reads); ``units[u]``: unit u's nodes
    in the given order (its allocs, its head op, the views and getitems that follow it);
    ``heads[u]``: its op; ``attrs[u]``: the ``get_attr`` nodes it reads; ``epilogue``: the
    output node (and anything after it). ``edges[rule]``: the (before, after) unit pairs
    each order rule asks for, before < after (units are numbered in the given order)."""

    graph_module: torch.fx.GraphModule
    prologue: list[torch.fx.Node]
    units: list[list[torch.fx.Node]]
    heads: list[torch.fx.Node]
    unit_of: dict[torch.fx.Node, int]
    attrs: list[list[torch.fx.Node]]
    epilogue: list[torch.fx.Node]
    rules: frozenset[str]
    edges: dict[str, set[tuple[int, int]]] = field(default_factory=dict)

    def all_edges(self) -> set[tuple[int, int]]:
        return set().union(*self.edges.values()) if self.edges else set()

    def node_order(self, order: Iterable[int]) -> list[torch.fx.Node]:
        """Every node of the graph with the units in ``order``: the prologue, each unit
        after the ``get_attr`` nodes it is the first to read, the epilogue."""
        nodes = list(self.prologue)
        placed: set[torch.fx.Node] = set()
        for unit in order:
            for attr in self.attrs[unit]:
                if attr not in placed:
                    placed.add(attr)
                    nodes.append(attr)
            nodes.extend(self.units[unit])
        nodes.extend(self.epilogue)
        return nodes


# --------------------------------------------------------------------------- specs


def node_specs(node: torch.fx.Node) -> list[TensorSpec]:
    """The TensorSpecs in a node's metadata (a view's is its base's), None and scalars
    left out."""
    specs = node.meta.get("spec")
    listed = specs if isinstance(specs, (list, tuple)) else [specs]
    return [spec for spec in listed if isinstance(spec, TensorSpec)]


def storage_root(spec: TensorSpec) -> TensorSpec:
    """The spec whose storage ``spec`` lies in: a view's base, down ``storage_base``."""
    spec = spec_holder(spec)
    seen = {id(spec)}
    while spec.storage_base is not None:
        spec = spec_holder(spec.storage_base)
        if id(spec) in seen:  # exir refuses a cycle; here it only must not loop
            break
        seen.add(id(spec))
    return spec


def _written_arguments(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The argument nodes an operator writes (its ``Tensor(a!)`` arguments: out=
    arguments and in-place ``self``)."""
    overload = aten_overload(node.target)
    if overload is None:
        return []
    schema = schema_of(overload)
    written: list[torch.fx.Node] = []
    for index, argument in enumerate(schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        if argument.kwarg_only or index >= len(node.args):
            value = node.kwargs.get(argument.name)
        else:
            value = node.args[index]
        values = value if isinstance(value, (list, tuple)) else [value]
        written.extend(item for item in values if isinstance(item, torch.fx.Node))
    return written


def is_write_back(graph: UnitGraph, unit: int, mutable_buffers: Collection[int]) -> bool:
    """Whether a unit is a mutable buffer's write-back: a ``copy_`` into a buffer (by the
    ``id`` of its storage root, in ``mutable_buffers``)."""
    head = graph.heads[unit]
    if op_name(head.target) != "aten.copy_.default" or not head.args:
        return False
    destination = head.args[0]
    return isinstance(destination, torch.fx.Node) and any(
        id(storage_root(spec)) in mutable_buffers for spec in node_specs(destination)
    )


# --------------------------------------------------------------------------- units


def unit_graph(
    graph_module: torch.fx.GraphModule, rules: Collection[str] | None = None
) -> UnitGraph:
    """``graph_module``'s units and the orderings between them under ``rules`` (default:
    every rule, :data:`ALL_RULES`; tests drop one to see it matter)."""
    chosen = ALL_RULES if rules is None else frozenset(rules)
    unknown = chosen - ALL_RULES
    if unknown:
        raise ValueError(f"unknown rules {sorted(unknown)}; the rules are {sorted(ALL_RULES)}")
    nodes = list(graph_module.graph.nodes)
    prologue: list[torch.fx.Node] = []
    epilogue: list[torch.fx.Node] = []
    heads: list[torch.fx.Node] = []
    unit_of: dict[torch.fx.Node, int] = {}
    in_prologue: set[torch.fx.Node] = set()
    writer: dict[torch.fx.Node, torch.fx.Node] = {}  # alloc -> the first op writing it
    if "units" in chosen:
        for node in nodes:
            if node.op == "call_function" and node.target is not memory.alloc:
                for written in _written_arguments(node):
                    if written.target is memory.alloc:
                        writer.setdefault(written, node)
    for node in nodes:
        if node.op == "placeholder":
            prologue.append(node)
            in_prologue.add(node)
        elif node.op == "output" or epilogue:
            epilogue.append(node)
        elif node.op == "get_attr":
            continue  # placed before its first reader (node_order)
        elif node.target is memory.alloc and node in writer:
            continue  # joins its writer's unit
        elif node.target in _ALIASES and "follow source" in chosen:
            source = node.args[0] if node.args else None
            if isinstance(source, torch.fx.Node) and source in unit_of:
                unit_of[node] = unit_of[source]
            else:
                prologue.append(node)
                in_prologue.add(node)
        else:
            unit_of[node] = len(heads)
            heads.append(node)
    for alloc, op in writer.items():
        unit_of[alloc] = unit_of[op]
    units: list[list[torch.fx.Node]] = [[] for _ in heads]
    attrs: list[list[torch.fx.Node]] = [[] for _ in heads]
    for node in nodes:
        unit = unit_of.get(node)
        if unit is not None:
            units[unit].append(node)
    for node in nodes:
        if node.op != "get_attr":
            continue
        readers = sorted({unit_of[user] for user in node.users if user in unit_of})
        if not readers:
            prologue.append(node)
        for unit in readers:
            attrs[unit].append(node)
    graph = UnitGraph(graph_module, prologue, units, heads, unit_of, attrs, epilogue, chosen)
    for name, rule in ORDER_RULES.items():
        if name in chosen:
            graph.edges[name] = {(a, b) for a, b in rule(graph) if a != b}
    return graph


def _input_units(graph: UnitGraph, unit: int) -> Iterator[int]:
    for node in graph.units[unit]:
        for source in node.all_input_nodes:
            source_unit = graph.unit_of.get(source)
            if source_unit is not None and source_unit != unit:
                yield source_unit


def data_edges(graph: UnitGraph) -> Iterator[tuple[int, int]]:
    """A unit after every unit whose nodes its nodes read."""
    for unit in range(len(graph.units)):
        for source in _input_units(graph, unit):
            yield source, unit


class _Storages:
    """Union-find over storage roots (by id): what may share bytes."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, key: int) -> int:
        root = key
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while key != root:  # path compression
            self.parent[key], key = root, self.parent[key]
        return root

    def union(self, first: int, second: int) -> None:
        self.parent[self.find(first)] = self.find(second)


def _roots(node: torch.fx.Node) -> list[int]:
    return [id(storage_root(spec)) for spec in node_specs(node)]


def storage_order_edges(graph: UnitGraph) -> Iterator[tuple[int, int]]:
    """Storage written by more than one node keeps its access order (the module's
    docstring says what a storage is and what counts as a second write)."""
    storages = _Storages()
    for nodes in (graph.prologue, *graph.units):
        for node in nodes:
            roots = _roots(node)
            for other in may_share_storage_with(node):
                if isinstance(other, torch.fx.Node):
                    for root in roots:
                        for other_root in _roots(other):
                            storages.union(root, other_root)
    # Per unit, in the given order: the storages it touches, and those it writes again.
    mutated: set[int] = set()
    accesses: list[tuple[set[int], set[int]]] = []
    for nodes in graph.units:
        touched: set[int] = set()
        rewritten: set[int] = set()
        own = set(nodes)
        for node in nodes:
            for spec in node_specs(node):
                storage = storages.find(id(storage_root(spec)))
                touched.add(storage)
                if spec_holder(spec).storage_base is not None:
                    rewritten.add(storage)  # its first write lands in another's storage
            for source in node.all_input_nodes:
                if source not in own:
                    touched.update(storages.find(root) for root in _roots(source))
            for written in _written_arguments(node):
                if written in own and written.target is memory.alloc:
                    continue  # the unit's own output, written for the first time
                rewritten.update(storages.find(root) for root in _roots(written))
        touched |= rewritten
        accesses.append((touched, rewritten))
        mutated |= rewritten
    # Mutable buffers: the caller wrote them before this call; their write-back, again.
    last_write: dict[int, int] = {}
    since_write: dict[int, list[int]] = {}
    for unit, (touched, rewritten) in enumerate(accesses):
        for storage in touched & mutated:
            if storage in rewritten:
                yield from ((reader, unit) for reader in since_write.get(storage, ()))
                if storage in last_write:
                    yield last_write[storage], unit
                last_write[storage] = unit
                since_write[storage] = []
            else:
                if storage in last_write:
                    yield last_write[storage], unit
                since_write.setdefault(storage, []).append(unit)


def is_side_effecting(node: torch.fx.Node) -> bool:
    """Whether an op's relative order is kept (the module's docstring lists them)."""
    target = node.target
    if node.op != "call_function":
        return node.op not in ("placeholder", "output", "get_attr")
    if is_higher_order_operator(target) or target is memory.free or has_side_effects(target):
        return True
    overload = aten_overload(target)
    if overload is None:  # a Python function: nothing says what it touches
        return target not in (memory.alloc, memory.view, operator.getitem)
    if has_side_effects(overload) or torch.Tag.nondeterministic_seeded in overload.tags:
        return True
    return op_name(overload).startswith("cadence.idma_")


def side_effect_edges(graph: UnitGraph) -> Iterator[tuple[int, int]]:
    """Side-effecting ops, delegate calls and higher-order ops in their given order."""
    previous = None
    for unit, head in enumerate(graph.heads):
        if is_side_effecting(head):
            if previous is not None:
                yield previous, unit
            previous = unit


ORDER_RULES.update(
    {"data": data_edges, "storage order": storage_order_edges, "side effects": side_effect_edges}
)
ALL_RULES = frozenset((*GROUPING_RULES, *ORDER_RULES))
