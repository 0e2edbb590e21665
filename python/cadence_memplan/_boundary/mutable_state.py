"""Mutable buffers across a program's methods (issue 51): which buffers are state that
several methods share, and what to say when they are not planned as one.

A program with several methods (``to_edge({"prefill": ..., "decode": ...})``) names its
buffers by their fully qualified names (FQNs); a buffer that a method mutates is state.
exir's ``MemoryPlanningPass(share_mutable_buffers=True)`` places every mutable buffer
once, at the same place in every method that uses it; without it each method plans its
own copy, so what one method writes is not what the next one reads, and nothing says so.
:func:`check_unshared` says so, by name (:class:`UnsharedStateWarning`, or
:class:`UnsharedStateError` when asked to be strict).

Both exir's pass (``cadence_memplan.exir``) and Cadence's (``cadence_memplan.cadence``)
use this module, which reads graph signatures and the buffers' specs; placement fields
are written by ``tensorspecs`` only.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from executorch.exir.tensor import TensorSpec

__all__ = [
    "MethodBuffers",
    "UnsharedStateError",
    "UnsharedStateWarning",
    "alias_to_buffers",
    "check_unshared",
    "method_buffers",
    "shared_state",
    "unread_mutation_outputs",
    "unshared_buffers",
]


class UnsharedStateWarning(UserWarning):
    """Several methods of a program use a buffer that one of them mutates, and it is not
    shared between them: each method plans its own copy of that state."""


class UnsharedStateError(ValueError):
    """:class:`UnsharedStateWarning` raised as an error (a strict option)."""


@dataclass
class MethodBuffers:
    """One method's buffers: the FQNs it mutates, and its placeholders' specs by FQN."""

    graph_module: Any
    signature: Any
    mutated: frozenset[str] = frozenset()
    specs: dict[str, list[TensorSpec]] = field(default_factory=dict)


def method_buffers(graph_module: torch.fx.GraphModule, signature: Any) -> MethodBuffers:
    """The buffers of one method's graph, as its export signature names them (none
    without a signature)."""
    if signature is None:
        return MethodBuffers(graph_module, signature)
    to_buffer: dict[str, str] = dict(signature.inputs_to_buffers)
    mutated = frozenset(signature.buffers_to_mutate.values())
    specs: dict[str, list[TensorSpec]] = {}
    for node in graph_module.graph.find_nodes(op="placeholder"):
        fqn = to_buffer.get(str(node.target))
        spec = node.meta.get("spec")
        if fqn is not None and isinstance(spec, TensorSpec):
            specs.setdefault(fqn, []).append(spec)
    return MethodBuffers(graph_module, signature, mutated, specs)


def unshared_buffers(methods: Sequence[MethodBuffers]) -> dict[str, int]:
    """The buffers that some method mutates and that two or more methods use, with how
    many use them, in name order."""
    mutated = set().union(*(method.mutated for method in methods)) if methods else set()
    users: dict[str, int] = {}
    for method in methods:
        for fqn in set(method.specs) | set(method.mutated):
            if fqn in mutated:
                users[fqn] = users.get(fqn, 0) + 1
    return {fqn: count for fqn, count in sorted(users.items()) if count > 1}


def check_unshared(methods: Sequence[MethodBuffers], strict: bool, planner: str) -> None:
    """Warn (:class:`UnsharedStateWarning`), or raise :class:`UnsharedStateError` when
    ``strict``, when methods that ``planner`` planned without sharing mutable buffers use
    state one of them mutates."""
    found = unshared_buffers(methods)
    if not found:
        return
    names = ", ".join(f"{fqn!r} (used by {count} methods)" for fqn, count in found.items())
    message = (
        f"{planner}: mutable buffer{'s' if len(found) > 1 else ''} {names} "
        f"{'are' if len(found) > 1 else 'is'} not shared between the methods: each method"
        " plans its own copy, so the state one method writes is not what another reads."
        " Plan with share_mutable_buffers=True to place it once for every method."
    )
    if strict:
        raise UnsharedStateError(message)
    warnings.warn(message, UnsharedStateWarning, stacklevel=3)


def shared_state(methods: Sequence[MethodBuffers]) -> dict[str, list[TensorSpec]]:
    """Every buffer some method mutates (exir's ``share_mutable_buffers`` shares them all),
    with its placeholder specs in every method that uses it, in name order."""
    mutated = set().union(*(method.mutated for method in methods)) if methods else set()
    state: dict[str, list[TensorSpec]] = {}
    for fqn in sorted(mutated):
        specs = [spec for method in methods for spec in method.specs.get(fqn, [])]
        if specs:
            state[fqn] = specs
    return state


# --------------------------------------------------------------------------- dead bytes


def unread_mutation_outputs(
    graph_module: torch.fx.GraphModule, signature: Any
) -> list[tuple[TensorSpec, TensorSpec]]:
    """``(output spec, buffer spec)`` for each mutated buffer's new value that only the
    output node holds: exir plans a tensor for it, and nothing reads or writes it (the
    write-back, ``copy_`` into the buffer, is what the emitter and the runtime use).
    Empty for a graph the signature does not describe (a control-flow submodule)."""
    if signature is None or not hasattr(signature, "output_specs"):
        return []
    output = graph_module.graph.output_node()
    own = output.meta.get("spec")
    output_specs = list(signature.output_specs)
    if not isinstance(own, (list, tuple)) or len(own) != len(output_specs):
        return []
    held = {
        id(spec)
        for node in graph_module.graph.nodes
        if node.op != "output"
        for spec in _node_specs(node)
    }
    by_buffer = {
        fqn: specs[0] for fqn, specs in method_buffers(graph_module, signature).specs.items()
    }
    found = []
    for spec, output_spec in zip(own, output_specs, strict=True):
        if output_spec.kind.name != "BUFFER_MUTATION" or not isinstance(spec, TensorSpec):
            continue
        buffer = by_buffer.get(str(output_spec.target))
        if buffer is not None and id(spec) not in held and spec is not buffer:
            found.append((spec, buffer))
    return found


def _node_specs(node: torch.fx.Node) -> list[Any]:
    spec = node.meta.get("spec")
    return list(spec) if isinstance(spec, (list, tuple)) else [spec]


def alias_to_buffers(
    graph_module: torch.fx.GraphModule, pairs: Sequence[tuple[TensorSpec, TensorSpec]]
) -> None:
    """The output node holds each pair's buffer spec where it held the unread output spec
    (as exir's spec propagation aliases them in some flows): the value is the buffer's,
    nothing is allocated for it, and exir's checks of the graph's outputs, which leave
    mutable buffers' specs out, still hold."""
    if not pairs:
        return
    output = graph_module.graph.output_node()
    own = output.meta["spec"]
    buffer_of = {id(spec): buffer for spec, buffer in pairs}
    aliased = [buffer_of.get(id(spec), spec) for spec in own]
    output.meta["spec"] = type(own)(aliased) if isinstance(own, tuple) else aliased
