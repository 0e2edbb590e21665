"""Control flow in a planned program: what a higher-order op's submodules write, what
escapes them into the parent, and where their memory goes there.

ExecuTorch 1.5.x runs the submodules of ``cond``, ``while``, ``map`` and ``scan`` inline,
in the parent's memory. exir's ``apply_algo`` plans each submodule on its own from offset
0 and starts the parent's own tensors after the largest (``input_mem_buffer_sizes``), so
the submodules of a graph share one region. A cond branch's outputs leave it by
``MoveCall``, a pointer move: the parent's value then points into the branch's memory,
where the output stays as long as the parent uses it, and a later submodule of the region
overwrites it (executorch #21490). ``map`` and ``scan`` copy their outputs into the
parent's tensors, so nothing of theirs outlives the call.

The model, for a higher-order node ``h`` at node index ``i`` of a graph (its *scope*):

- ``h``'s *footprint* (:func:`footprint`): the planned tensors its submodules write,
  nested submodules included: their specs but the placeholders bound to the parent's
  values (every placeholder of a cond or while branch; a map's or scan's operands) and
  the outputs of nested conds and whiles (moved into, never written). It is alive at
  node ``i`` only.
- ``h``'s *escaped* storage (:func:`escaped`; cond and while): the specs that hold its
  branches' outputs (a nested cond's output resolved to that cond's branches'), each
  alive in the scope from node ``i`` to the last use of the output it holds. Both
  branches' count, and may share bytes: only one of them runs.

:func:`arrange_submodules` places each ``h``'s submodules, as they were planned, at the
lowest offset per memory where no byte of the footprint meets escaped storage of an
earlier op of the scope still alive at ``i``, nested arenas moving with their enclosing
one; the scope's own tensors start after the highest arena, as in exir. Where every
offset is 0, which is exactly where exir's plan leaves every escaped output intact, the
plan is exir's. :mod:`.control_flow_check` checks a finished plan against the same
model with code of its own.

Specs are read and moved through :mod:`.tensorspecs`.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import torch
from executorch.exir.control_flow import while_loop as exir_while
from executorch.exir.memory_planning import get_node_tensor_specs
from executorch.exir.tensor import TensorSpec

from . import upstream
from .tensorspecs import allocated_sizes, placed_mask, read_placements, shift_offsets

__all__ = [
    "ArenaDoesNotFit",
    "ArenaPlacer",
    "Arenas",
    "HigherOrderNode",
    "PlannedBytes",
    "Reserved",
    "arrange_submodules",
    "escaped",
    "footprint",
    "has_control_flow",
    "higher_order_nodes",
    "output_ends",
    "output_nodes",
    "planned_bytes",
    "reserved_bytes",
    "reserving",
    "scope_specs",
]


@dataclass(frozen=True)
class _Op:
    """What the emitter does with one kind of higher-order op."""

    name: str
    submodule_args: tuple[int, ...]  # the node's arguments that name its submodules
    moves_outputs: bool  # outputs leave by MoveCall (cond, while), not by a copy


_OPS: dict[Any, _Op] = {
    torch.ops.higher_order.cond: _Op("cond", (1, 2), True),
    exir_while: _Op("while", (0, 1), True),
    torch.ops.higher_order.map_impl: _Op("map", (0,), False),
    torch.ops.higher_order.scan: _Op("scan", (0,), False),
}

# A graph module's meta entry, set only while Cadence's placer plans that graph
# (reserving): the bytes its submodules hold (Reserved), which the placer plans around.
_RESERVED = "cadence_memplan_reserved"


class ArenaDoesNotFit(ValueError):
    """A submodule's arena, moved past the outputs it must not overwrite, would end past
    its memory, or would move although an earlier op, which shares the submodule, placed
    it already."""


def _op_of(node: torch.fx.Node) -> _Op | None:
    if node.op != "call_function":
        return None
    try:
        return _OPS.get(node.target)
    except TypeError:  # an unhashable target is no higher-order op
        return None


@dataclass(frozen=True)
class HigherOrderNode:
    """A cond, while, map or scan node of a graph: its index among the graph's nodes (the
    lifetimes' clock) and its distinct submodules, by attribute name."""

    node: torch.fx.Node
    index: int
    kind: str
    moves_outputs: bool
    submodules: tuple[tuple[str, torch.fx.GraphModule], ...]

    @property
    def allocates_inputs(self) -> bool:
        """Whether exir plans the submodules' placeholders (map's and scan's: exir's
        ``_apply_algo_to_submodules`` plans them with ``alloc_graph_input=True``)."""
        return self.kind in ("map", "scan")

    @property
    def written_placeholders(self) -> range:
        """Indices of the submodules' placeholders the op writes (a map's slice of its
        mapped input, a scan's slices of ``xs``); the others hold the parent's values."""
        if self.kind == "map":
            return range(len(self.node.args[1]))  # type: ignore[arg-type]
        if self.kind == "scan":
            carried = len(self.node.args[1])  # type: ignore[arg-type]
            return range(carried, carried + len(self.node.args[2]))  # type: ignore[arg-type]
        return range(0)


def has_control_flow(graph_module: torch.fx.GraphModule) -> bool:
    """Whether any node is one whose submodules exir's ``apply_algo`` plans first."""
    return any(_op_of(node) is not None for node in graph_module.graph.nodes)


def _higher_order_node(
    node: torch.fx.Node, index: int, op: _Op, graph_module: torch.fx.GraphModule
) -> HigherOrderNode:
    submodules: dict[str, torch.fx.GraphModule] = {}
    for position in op.submodule_args:
        name = node.args[position].target  # type: ignore[union-attr]
        submodules.setdefault(name, getattr(graph_module, name))  # type: ignore[arg-type]
    return HigherOrderNode(node, index, op.name, op.moves_outputs, tuple(submodules.items()))


def higher_order_nodes(graph_module: torch.fx.GraphModule) -> list[HigherOrderNode]:
    """The graph's higher-order nodes, in graph order."""
    return [
        _higher_order_node(node, index, op, graph_module)
        for index, node in enumerate(graph_module.graph.nodes)
        if (op := _op_of(node)) is not None
    ]


def output_nodes(graph_module: torch.fx.GraphModule) -> list[Any]:
    """What the graph returns, flattened (nested lists and tuples)."""
    flat: list[Any] = []
    pending = [graph_module.graph.output_node().args[0]]
    while pending:
        value = pending.pop()
        if isinstance(value, (list, tuple)):
            pending.extend(reversed(value))
        else:
            flat.append(value)
    return flat


def _unique(specs: Iterable[TensorSpec]) -> list[TensorSpec]:
    return list({id(spec): spec for spec in specs}.values())


def scope_specs(graph_module: torch.fx.GraphModule, written: range | None) -> list[TensorSpec]:
    """The specs a graph's own nodes hold (exir's holders: a view's base), once each, but
    those of placeholders bound to the parent's values (all but ``written``; None: a top
    graph, whose placeholders are its own) and the outputs of conds and whiles (the
    values they move into are never written)."""
    left_out: set[int] = set()
    held: list[TensorSpec] = []
    placeholder = 0
    for node in graph_module.graph.nodes:
        if node.op == "get_attr":
            continue
        specs = get_node_tensor_specs(node)
        if node.op == "placeholder":
            if written is not None and placeholder not in written:
                left_out.update(map(id, specs))
            placeholder += 1
        op = _op_of(node)
        if op is not None and op.moves_outputs:
            left_out.update(map(id, specs))
        held.extend(specs)
    return [spec for spec in _unique(held) if id(spec) not in left_out]


def footprint(hop: HigherOrderNode) -> list[TensorSpec]:
    """The specs ``hop``'s submodules write, nested submodules included."""
    written = hop.written_placeholders
    specs: list[TensorSpec] = []
    for _, submodule in hop.submodules:
        specs.extend(scope_specs(submodule, written))
        for nested in higher_order_nodes(submodule):
            specs.extend(footprint(nested))
    return _unique(specs)


def _holders_of(value: Any, graph_module: torch.fx.GraphModule) -> list[TensorSpec]:
    """The specs whose storage a returned value's data is in after the graph returns."""
    if not isinstance(value, torch.fx.Node) or value.op == "placeholder":
        return []  # a bound placeholder's storage is the parent's
    source = value.args[0] if value.target is operator.getitem else None
    op = _op_of(source) if isinstance(source, torch.fx.Node) else None
    if op is None or not op.moves_outputs:
        return list(get_node_tensor_specs(value))
    # An output of a nested cond (or while): in its branches' storage.
    nested = _higher_order_node(source, -1, op, graph_module)  # type: ignore[arg-type]
    return [
        spec
        for _, submodule in nested.submodules
        for spec in _holders_of(output_nodes(submodule)[value.args[1]], submodule)  # type: ignore[index]
    ]


def escaped(hop: HigherOrderNode) -> list[tuple[int, TensorSpec]]:
    """``(k, spec)`` for each spec that holds ``hop``'s k-th output after it returns
    (none for map and scan, which copy their outputs)."""
    if not hop.moves_outputs:
        return []
    found: list[tuple[int, TensorSpec]] = []
    seen: set[tuple[int, int]] = set()
    for _, submodule in hop.submodules:
        for k, value in enumerate(output_nodes(submodule)):
            for spec in _holders_of(value, submodule):
                if (k, id(spec)) not in seen:
                    seen.add((k, id(spec)))
                    found.append((k, spec))
    return found


def output_ends(hop: HigherOrderNode) -> list[int]:
    """The last node of the scope that uses each of ``hop``'s outputs (its output spec's
    lifetime end; -1 for an output that is not a tensor)."""
    specs = hop.node.meta.get("spec")
    outputs = list(specs) if isinstance(specs, (list, tuple)) else [specs]
    tensors = [spec for spec in outputs if isinstance(spec, TensorSpec)]
    ends = iter(read_placements(tensors).ends.tolist())
    return [next(ends) if isinstance(spec, TensorSpec) else -1 for spec in outputs]


class PlannedBytes(NamedTuple):
    """Specs that hold bytes (a ``mem_id`` and ``mem_offset`` set, a size above 0), and
    their bytes ``[lows, highs)`` of memory ``mem_ids`` and lifetimes."""

    specs: list[TensorSpec]
    mem_ids: npt.NDArray[np.int64]
    lows: npt.NDArray[np.int64]
    highs: npt.NDArray[np.int64]
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]


def planned_bytes(specs: list[TensorSpec]) -> PlannedBytes:
    placed = [spec for spec, is_placed in zip(specs, placed_mask(specs), strict=True) if is_placed]
    placements = read_placements(placed)
    sizes = allocated_sizes(placed)
    keep = np.flatnonzero(sizes > 0)
    return PlannedBytes(
        [placed[index] for index in keep.tolist()],
        placements.mem_ids[keep],
        placements.offsets[keep],
        placements.offsets[keep] + sizes[keep],
        placements.starts[keep],
        placements.ends[keep],
    )


# --------------------------------------------------------------------------- placing


class Reserved(NamedTuple):
    """Bytes a graph's submodules hold in the graph's time: ``[offsets, offsets + sizes)``
    of memory ``mem_ids`` over the inclusive lifetimes ``[starts, ends]``; disjoint where
    lifetimes overlap."""

    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    mem_ids: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]


@dataclass(frozen=True)
class Arenas:
    """Where a graph's submodules went: ``ends[m]``, the end of the highest arena in
    memory m (where the graph's own tensors start, as exir's ``input_mem_buffer_sizes``),
    and ``reserved``, the bytes the submodules hold and when, for placers that plan the
    graph's tensors around them (Cadence's)."""

    ends: list[int]
    reserved: Reserved


def _merged_runs(lows: npt.NDArray[np.int64], highs: npt.NDArray[np.int64]) -> list[list[int]]:
    runs: list[list[int]] = []
    for low, high in sorted(zip(lows.tolist(), highs.tolist(), strict=True)):
        if runs and low <= runs[-1][1]:
            runs[-1][1] = max(runs[-1][1], high)
        else:
            runs.append([low, high])
    return runs


def _lowest_offset(runs: list[list[int]], obstacles: list[tuple[int, int]], alignment: int) -> int:
    """The lowest multiple of ``alignment`` by which ``runs`` move clear of every obstacle:
    0, or one that puts some run just past some obstacle (rounded up)."""
    if not obstacles:
        return 0
    run_array = np.array(runs, dtype=np.int64)
    obstacle_array = np.array(obstacles, dtype=np.int64)
    raw = (obstacle_array[:, None, 1] - run_array[None, :, 0]).ravel()
    candidates = sorted({0, *(-(-raw[raw > 0] // alignment) * alignment).tolist()})
    for offset in candidates:
        clash = (run_array[None, :, 0] + offset < obstacle_array[:, None, 1]) & (
            obstacle_array[:, None, 0] < run_array[None, :, 1] + offset
        )
        if not clash.any():
            return int(offset)
    raise AssertionError("past the last obstacle nothing clashes")  # pragma: no cover


def _reserved_segments(
    hop_index: int,
    lows: list[int],
    highs: list[int],
    ends: list[int],
) -> list[tuple[int, int, int]]:
    """Byte ranges (one memory) with the last node they are needed at, cut where ranges
    start and end so that each byte is kept until the latest of its ranges, and merged
    where neighbours end together: ``(low, high, end)``."""
    cuts = sorted(set(lows) | set(highs))
    segments: list[tuple[int, int, int]] = []
    for low, high in itertools.pairwise(cuts):
        covering = [
            end
            for range_low, range_high, end in zip(lows, highs, ends, strict=True)
            if range_low <= low and high <= range_high
        ]
        if not covering:
            continue
        end = max(hop_index, *covering)
        if segments and segments[-1][1] == low and segments[-1][2] == end:
            segments[-1] = (segments[-1][0], high, end)
        else:
            segments.append((low, high, end))
    return segments


def _arena_specs(hop: HigherOrderNode, parent_ids: set[int]) -> list[TensorSpec]:
    """Every spec of ``hop``'s submodules and theirs: what moves with its arena."""
    specs: list[TensorSpec] = []
    for _, submodule in hop.submodules:
        for module in submodule.modules():
            if isinstance(module, torch.fx.GraphModule):
                for node in module.graph.nodes:
                    if node.op != "get_attr":
                        specs.extend(get_node_tensor_specs(node))
    return [spec for spec in _unique(specs) if id(spec) not in parent_ids]


def _submodule_sizes(hop: HigherOrderNode) -> list[int]:
    """The bufsizes of ``hop``'s arena: the largest of its submodules', per memory."""
    sizes: list[int] = []
    for _, submodule in hop.submodules:
        planned = submodule.meta.get("non_const_buffer_sizes") or []
        sizes.extend([0] * (len(planned) - len(sizes)))
        sizes[: len(planned)] = [max(a, int(b)) for a, b in zip(sizes, planned, strict=False)]
    return sizes


class ArenaPlacer:
    """Places the arenas of one graph's higher-order ops, in graph order (the module's
    docstring): :meth:`place` each op once its submodules are planned; :meth:`live_at`
    says which bytes an op's submodules must not write, for a planner that can avoid them
    (Cadence's); :meth:`arenas` is the result. ``alignment_of(mem_id)`` is the memory's
    alignment (arenas move by multiples of it), ``capacity_of(mem_id)`` its size (None:
    unbounded); ``outside``, ``(mem_id, low, high)`` bytes that the graph's enclosing
    graphs need while it runs, which nothing in it may write."""

    def __init__(
        self,
        graph_module: torch.fx.GraphModule,
        alignment_of: Callable[[int], int],
        capacity_of: Callable[[int], int] | None = None,
        outside: Iterable[tuple[int, int, int]] = (),
    ) -> None:
        self._alignment_of = alignment_of
        self._capacity_of = capacity_of
        self._parent_ids = {id(spec) for spec in scope_specs(graph_module, None)}
        last = len(graph_module.graph.nodes) - 1
        # mem_id, low, high, and the last node that needs them: outputs of the ops placed
        # so far, and what the enclosing graphs need (all along).
        self._live = [(m, low, high, last) for m, low, high in outside]
        self._ends: list[int] = []
        # start, end, size, mem_id, offset
        self._reserved = [(0, last, high - low, m, low) for m, low, high, _ in self._live]
        self._placed_by: dict[int, HigherOrderNode] = {}  # id(submodule) -> the op placing it

    def live_at(self, hop: HigherOrderNode) -> list[tuple[int, int, int]]:
        """``(mem_id, low, high)``: bytes that ``hop``'s submodules must not write: the
        outputs of ops placed so far still alive when it runs, and ``outside``."""
        return [(m, low, high) for m, low, high, end in self._live if end >= hop.index]

    def place(self, hop: HigherOrderNode) -> None:
        """Move ``hop``'s arena, per memory, to the lowest offset where what it writes
        meets no live byte of :meth:`live_at`; raises :class:`ArenaDoesNotFit` where that
        ends past the memory, or where a submodule an earlier op placed would move."""
        written = planned_bytes(footprint(hop))
        ends = output_ends(hop)
        escaping = escaped(hop)
        held = planned_bytes(_unique(spec for _, spec in escaping))
        held_ends: dict[int, int] = {}  # id(spec) -> the last use of an output it holds
        for k, spec in escaping:
            held_ends[id(spec)] = max(held_ends.get(id(spec), hop.index), ends[k])
        shared = [
            self._placed_by[id(module)]
            for _, module in hop.submodules
            if id(module) in self._placed_by
        ]
        sizes = _submodule_sizes(hop)
        obstacles = self.live_at(hop)
        shifts: dict[int, int] = {}
        for mem_id in sorted(set(written.mem_ids.tolist())):
            in_memory = written.mem_ids == mem_id
            runs = _merged_runs(written.lows[in_memory], written.highs[in_memory])
            blocked = [(low, high) for m, low, high in obstacles if m == mem_id]
            shift = _lowest_offset(runs, blocked, self._alignment_of(mem_id))
            if shift and shared:
                raise ArenaDoesNotFit(
                    f"{hop.node.name} (node {hop.index}) shares a submodule with"
                    f" {shared[0].node.name} (node {shared[0].index}), whose outputs it would"
                    " overwrite: one submodule cannot sit at two places"
                )
            size = sizes[mem_id] if mem_id < len(sizes) else 0
            if self._capacity_of is not None and shift + size > self._capacity_of(mem_id):
                raise ArenaDoesNotFit(
                    f"the submodules of {hop.node.name} (node {hop.index}) need"
                    f" {size:,} bytes of memory {mem_id} past the {shift:,} bytes where"
                    f" outputs of earlier higher-order ops are still alive, and memory"
                    f" {mem_id} has {self._capacity_of(mem_id):,}"
                )
            shifts[mem_id] = shift
        if any(shifts.values()):
            arena = planned_bytes(_arena_specs(hop, self._parent_ids))
            shift_offsets(
                arena.specs,
                np.array([shifts.get(m, 0) for m in arena.mem_ids.tolist()], dtype=np.int64),
            )
        for _, module in hop.submodules:
            self._placed_by.setdefault(id(module), hop)
        self._ends.extend([0] * (len(sizes) - len(self._ends)))
        for mem_id, size in enumerate(sizes):
            self._ends[mem_id] = max(self._ends[mem_id], shifts.get(mem_id, 0) + size)
        for mem_id in sorted(set(written.mem_ids.tolist()) | set(held.mem_ids.tolist())):
            shift = shifts.get(mem_id, 0)
            in_memory = written.mem_ids == mem_id
            runs = _merged_runs(written.lows[in_memory], written.highs[in_memory])
            lows = [low + shift for low, _ in runs]
            highs = [high + shift for _, high in runs]
            needed_until = [hop.index] * len(runs)
            for spec, m, low, high in zip(
                held.specs, held.mem_ids.tolist(), held.lows.tolist(), held.highs.tolist(),
                strict=True,
            ):  # fmt: skip
                if m == mem_id:
                    lows.append(low + shift)
                    highs.append(high + shift)
                    needed_until.append(held_ends[id(spec)])
                    self._live.append((m, low + shift, high + shift, held_ends[id(spec)]))
            for low, high, end in _reserved_segments(hop.index, lows, highs, needed_until):
                self._reserved.append((hop.index, end, high - low, mem_id, low))

    def arenas(self) -> Arenas:
        """The arenas' ends per memory, and the bytes held in the graph (``outside``
        included); ``reserved`` is empty where nothing is held."""
        columns = np.array(self._reserved, dtype=np.int64).reshape(-1, 5).T
        return Arenas(
            list(self._ends), Reserved(*(np.ascontiguousarray(column) for column in columns))
        )


def arrange_submodules(graph_module: torch.fx.GraphModule, alignment: int) -> Arenas | None:
    """Place the arenas of ``graph_module``'s higher-order ops (the module's docstring),
    whose submodules exir's ``apply_algo`` has planned, and set the graph's
    ``input_mem_buffer_sizes`` past them: exir's flow. Call it where ``apply_algo`` calls
    the planning algorithm for the graph, once its lifetimes are known; arenas move by
    multiples of ``alignment``.

    Returns None, and does nothing, for a graph without control flow, for a call that
    plans no submodule space (exir's partitions of non-CPU devices, a direct call), and
    with an executorch outside the tested range (upstream's plan, as everywhere there).
    Raises :class:`ArenaDoesNotFit` for a submodule that two ops share and that would
    have to move."""
    if not upstream.fast_paths_supported():
        return None
    sizes = getattr(graph_module, "input_mem_buffer_sizes", None)
    if not isinstance(sizes, list) or not sizes:
        return None
    hops = higher_order_nodes(graph_module)
    if not hops:
        return None
    placer = ArenaPlacer(graph_module, lambda mem_id: alignment)
    for hop in hops:
        placer.place(hop)
    arenas = placer.arenas()
    length = max(len(sizes), len(arenas.ends))
    graph_module.input_mem_buffer_sizes = [  # type: ignore[assignment]
        max(sizes[m] if m < len(sizes) else 0, arenas.ends[m] if m < len(arenas.ends) else 0)
        for m in range(length)
    ]
    return arenas


@contextmanager
def reserving(graph_module: torch.fx.GraphModule, reserved: Reserved) -> Iterator[None]:
    """Within the block, :func:`reserved_bytes` of ``graph_module`` is ``reserved``."""
    graph_module.meta[_RESERVED] = reserved
    try:
        yield
    finally:
        del graph_module.meta[_RESERVED]


def reserved_bytes(graph_module: Any) -> Reserved | None:
    """The bytes a placer planning ``graph_module`` must leave to its submodules (set by
    :func:`reserving`), or None."""
    meta = getattr(graph_module, "meta", None)
    reserved: Reserved | None = meta.get(_RESERVED) if isinstance(meta, dict) else None
    return reserved
