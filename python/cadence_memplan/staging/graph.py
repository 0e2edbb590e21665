"""A lowered graph as a :class:`~.problem.StagingProblem` (needs torch).

Reads an edge program's graph (exir's ``to_edge`` or Cadence's lowering, before
``to_executorch`` plans it): every ``call_function`` node is an op and each tensor it
makes is a tensor of the problem; the program's user inputs and mutable buffers exist
before the first op; parameters and constants are not planned and are left out. A
mutable buffer's new value is written back by one op at the end of the graph, as
``to_executorch`` does (``copy_``), and the graph's outputs and mutable buffers outlive it.
``view_copy`` (a view once exir lowers it) and ``getitem`` make no tensor: they alias
their source. FLOPs are counted as docs/staging.md says, from the op's name and the shapes.

It also reads the graph a memory-planning pass sees (:func:`problem_of_graph`, inside
``to_executorch``, after its out-variant passes): there ``memory.alloc`` nodes make no
op (the op they are the ``out=`` of makes the tensor), ``memory.view`` aliases its
source, and the write-backs are ``copy_`` nodes, each an op writing the buffer in place.
The problem is the same as the edge program's, op for op.

For a graph Cadence's pass plans (``cadence_nops=True``), the tensors its constraints may
place inside another's storage (a slice or select output, a cat's inputs:
:func:`~cadence_memplan._boundary.storage_sharing.may_lie_inside_another`) are the
problem's ``no_copies``: Cadence cannot pin such a tensor to fast memory on its own.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any

import torch

from .._boundary.storage_sharing import may_lie_inside_another, op_name
from .cost_model import CostModel
from .problem import StagingProblem

__all__ = ["GraphProblem", "op_flops", "problem_of", "problem_of_graph"]

_ALIASES = ("view_copy", "unsafe_view", "alias_copy", "aten.view.", "memory.view")
_ALLOC = "memory.alloc"  # an out-variant graph's allocation: no op, no tensor of its own
_WRITE_BACK = "aten.copy_."  # an out-variant graph's write-back of a mutable buffer
_MOVES = (
    "clone", "copy", "permute", "transpose", "expand", "cat", "slice", "select", "squeeze",
    "unsqueeze", "embedding", "index", "full", "zeros", "ones", "arange", "alias", "split",
    "unbind", "repeat", "pad", "stack", "t_copy", "idma", "scalar_tensor", "to_dim_order",
)  # fmt: skip
_NORMALIZATIONS = ("softmax", "norm")
_TRANSCENDENTAL = (
    "exp", "tanh", "gelu", "sigmoid", "sqrt", "log", "pow", "erf", "silu", "cos", "sin",
    "reciprocal",
)  # fmt: skip


@dataclass(frozen=True)
class GraphProblem:
    """The problem, and which node makes each op and each tensor (``None``: the write-back
    of a mutable buffer, ``ops``; ``tensors`` the node whose value the tensor is), and
    the graph module read."""

    problem: StagingProblem
    ops: tuple[torch.fx.Node | None, ...]
    tensors: tuple[torch.fx.Node, ...]
    tensor_of: dict[torch.fx.Node, int]  # every value node's tensor, views' included
    graph_module: torch.fx.GraphModule
    out_variant: bool = False  # read after to_executorch's out-variant passes


def _tensors_of(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [item for item in value if isinstance(item, torch.Tensor)]
    return []


def _numel(node: Any) -> int:
    values = _tensors_of(node.meta.get("val")) if isinstance(node, torch.fx.Node) else []
    return sum(value.numel() for value in values)


def op_flops(node: torch.fx.Node, model: CostModel) -> int:
    """FLOPs of one op: 2 per MAC for convolutions, linear layers and matrix products."""
    name = op_name(node.target)
    outputs = _numel(node)
    shapes = [
        arg.meta["val"].shape
        for arg in node.args
        if isinstance(arg, torch.fx.Node) and isinstance(arg.meta.get("val"), torch.Tensor)
    ]
    if "conv" in name and len(shapes) >= 2:
        return 2 * outputs * int(math.prod(shapes[1][1:]))
    if ("linear" in name or "addmm" in name) and len(shapes) >= 2:
        inner = shapes[1][0] if "addmm" in name else shapes[1][-1]
        return 2 * outputs * int(inner)
    if ("mm" in name or "matmul" in name) and shapes:
        return 2 * outputs * int(shapes[0][-1])
    if any(word in name for word in _MOVES):
        return 0
    if any(word in name for word in _NORMALIZATIONS):
        return model.normalization_flops * outputs
    if any(word in name for word in _TRANSCENDENTAL):
        return model.transcendental_flops * outputs
    return model.elementwise_flops * outputs


def _sizes(node: torch.fx.Node) -> list[int]:
    return [value.numel() * value.element_size() for value in _tensors_of(node.meta.get("val"))]


class _Builder:
    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.producers: list[int] = []
        self.nodes: list[torch.fx.Node] = []
        self.names: list[str] = []
        self.of: dict[torch.fx.Node, int] = {}
        self.parts: dict[torch.fx.Node, list[int]] = {}  # a tuple's tensors, for getitem

    def add(self, node: torch.fx.Node, producer: int) -> tuple[int, ...]:
        """The tensors ``node`` makes: one, or one per element of a tuple it returns."""
        sizes = _sizes(node)
        made = []
        for index, size in enumerate(sizes):
            made.append(len(self.sizes))
            self.sizes.append(size)
            self.producers.append(producer)
            self.nodes.append(node)
            self.names.append(node.name if len(sizes) == 1 else f"{node.name}[{index}]")
        if isinstance(node.meta.get("val"), (list, tuple)):
            self.parts[node] = made
        elif made:
            self.of[node] = made[0]
        return tuple(made)

    def alias(self, node: torch.fx.Node, source: torch.fx.Node) -> None:
        if node.target is operator.getitem and source in self.parts:
            index = node.args[1]
            if isinstance(index, int) and index < len(self.parts[source]):
                self.of[node] = self.parts[source][index]
        elif source in self.of:
            self.of[node] = self.of[source]

    def read(self, arguments: Any) -> tuple[int, ...]:
        found: list[int] = []
        for node in _flat(arguments):
            tensor = self.of.get(node)
            if tensor is not None and tensor not in found:
                found.append(tensor)
        return tuple(found)


def _flat(arguments: Any) -> list[torch.fx.Node]:
    found: list[torch.fx.Node] = []
    torch.fx.node.map_arg(arguments, found.append)
    return found


def problem_of(program: Any, model: CostModel, cadence_nops: bool = False) -> GraphProblem:
    """The staging problem of an ``ExportedProgram``'s graph (docs/staging.md)."""
    return problem_of_graph(program.graph_module, program.graph_signature, model, cadence_nops)


def problem_of_graph(
    graph_module: torch.fx.GraphModule, signature: Any, model: CostModel, cadence_nops: bool = False
) -> GraphProblem:
    """The staging problem of a graph and its ``ExportGraphSignature``: an edge
    program's, or the one a memory-planning pass gets (out-variant ops); with
    ``cadence_nops``, for Cadence's pass (no copy of what its nops put in another's
    storage)."""
    graph = graph_module.graph
    mutated = set(signature.buffers_to_mutate.values())
    kept_inputs = set(signature.user_inputs) | {
        name for name, buffer in signature.inputs_to_buffers.items() if buffer in mutated
    }
    builder = _Builder()
    flops: list[int] = []
    reads: list[tuple[int, ...]] = []
    writes: list[tuple[int, ...]] = []
    ops: list[torch.fx.Node | None] = []
    outputs: list[torch.fx.Node] = []
    out_variant = False
    for node in graph.nodes:
        if node.op == "placeholder" and node.name in kept_inputs:
            builder.add(node, -1)
        elif node.op == "output":
            outputs = _flat(node.args)
        elif node.op == "call_function":
            name = op_name(node.target)
            source = _flat(node.args[:1])
            if _ALLOC in name:
                out_variant = True
                continue
            if (node.target is operator.getitem or any(a in name for a in _ALIASES)) and source:
                builder.alias(node, source[0])
                continue
            if name.startswith(_WRITE_BACK) and source and source[0] in builder.of:
                builder.alias(node, source[0])  # the buffer, written in place
                made: tuple[int, ...] = (builder.of[source[0]],)
                read = builder.read(node.args[1:])
            else:
                made = builder.add(node, len(flops))
                read = builder.read((node.args, node.kwargs))  # out= allocs are no tensor
            flops.append(op_flops(node, model))
            reads.append(read)
            writes.append(made)
            ops.append(node)
    buffers = {node.name: node for node in graph.nodes if node.op == "placeholder"}
    by_buffer = {buffer: name for name, buffer in signature.inputs_to_buffers.items()}
    for output in outputs:  # the write-backs, after the last op
        buffer = signature.buffers_to_mutate.get(output.name)
        if buffer is None or output not in builder.of:
            continue
        target = builder.of[buffers[by_buffer[buffer]]]
        if builder.of[output] == target:  # an out-variant graph's own copy_
            continue
        flops.append(0)
        reads.append((builder.of[output],))
        writes.append((target,))
        ops.append(None)
    outliving = {builder.of[node] for node in outputs if node in builder.of}
    outliving |= {
        t
        for t, p in enumerate(builder.producers)
        if p < 0
        and builder.nodes[t].name in kept_inputs
        and builder.nodes[t].name not in signature.user_inputs
    }
    inside = [inner for node in graph.nodes for inner in may_lie_inside_another(node)]
    no_copies = {builder.of[node] for node in inside if node in builder.of} if cadence_nops else ()
    problem = StagingProblem(
        flops=tuple(flops),
        sizes=tuple(builder.sizes),
        producers=tuple(builder.producers),
        reads=tuple(reads),
        writes=tuple(writes),
        outlives=tuple(t in outliving for t in range(len(builder.sizes))),
        names=tuple(builder.names),
        no_copies=frozenset(no_copies),
    )
    return GraphProblem(
        problem, tuple(ops), tuple(builder.nodes), dict(builder.of), graph_module, out_variant
    )
