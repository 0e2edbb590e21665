"""Which tensors of a planned Cadence graph lie inside another tensor's storage.

The one definition of "shares storage on purpose". Cadence's memory constraints
(executorch/backends/cadence/aot/memory_constraints.py) place these ops' tensors inside
another tensor's storage: a slice/select nop's output, an idma_wait's output and a
memory.view's output lie inside their input; a cat nop's inputs lie inside its output,
and so does whatever such an input lies inside (a cat of views, as llama's rotary
embedding makes, puts the viewed tensors in the cat's output).
Such a tensor overlaps its source by design, so the validator and the peak-live lower
bound leave it out (counting it would count the same bytes twice). Reads only a graph's
nodes: importing it needs no executorch.

Cadence's constraint passes turn ``cat``, ``slice_copy`` and ``select_copy`` into those nops
while they plan, after any reordering (cadence_memplan.scheduling), so the reorder's rules
treat the ops they may become (:func:`may_share_storage_with`) as sharing already.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = [
    "may_lie_inside_another",
    "may_share_storage_with",
    "op_name",
    "storage_hosts",
    "storage_sharing_spec_ids",
]

_OUTPUT_INSIDE_INPUT = frozenset(
    {
        "aten._slice_copy_nop.Tensor_out",
        "aten._select_copy_nop.int_out",
        "cadence.idma_wait.out",
        "executorch.exir.memory.view",
    }
)
_INPUTS_INSIDE_OUTPUT = frozenset({"aten._cat_nop.out"})
# What Cadence's constraint passes may rewrite into the nops above.
_MAY_BECOME_OUTPUT_INSIDE_INPUT = frozenset(
    {"aten.slice_copy.Tensor_out", "aten.select_copy.int_out"}
)
_MAY_BECOME_INPUTS_INSIDE_OUTPUT = frozenset({"aten.cat.out"})


def op_name(target: object) -> str:
    """A node target's name as ``namespace.op.overload`` (module.function for Python ops)."""
    if inspect.isfunction(target):  # memory.view and other plain Python ops
        return f"{target.__module__}.{target.__qualname__}"
    return str(target)  # OpOverload / EdgeOpOverload: "namespace.op.overload"


def _cat_inputs(node: Any) -> list[Any]:
    inputs = node.args[0] if node.args else node.kwargs.get("tensors", ())
    return list(inputs)


def may_share_storage_with(node: Any) -> list[Any]:
    """The argument nodes whose storage ``node``'s result lies in (a slice, select,
    idma_wait or memory.view and their input) or that lie in its storage (a cat and its
    inputs), now or once Cadence's constraint passes make it a nop; empty for any other
    node."""
    if node.op != "call_function":
        return []
    name = op_name(node.target)
    if name in _OUTPUT_INSIDE_INPUT or name in _MAY_BECOME_OUTPUT_INSIDE_INPUT:
        return list(node.args[:1])
    if name in _INPUTS_INSIDE_OUTPUT or name in _MAY_BECOME_INPUTS_INSIDE_OUTPUT:
        return _cat_inputs(node)
    return []


def may_lie_inside_another(node: Any) -> list[Any]:
    """The nodes whose values Cadence may place inside another tensor's storage because
    of ``node``, now or once its constraint passes make ``node`` a nop: ``node`` itself
    (a slice, select, idma_wait or memory.view lies in its input) or its inputs (a cat's
    lie in its output); empty for any other node. Such a value lives where its host
    lives: it cannot be placed, nor pinned to a memory, on its own."""
    if node.op != "call_function":
        return []
    name = op_name(node.target)
    if name in _OUTPUT_INSIDE_INPUT or name in _MAY_BECOME_OUTPUT_INSIDE_INPUT:
        return [node]
    if name in _INPUTS_INSIDE_OUTPUT or name in _MAY_BECOME_INPUTS_INSIDE_OUTPUT:
        return _cat_inputs(node)
    return []


def _inside_its_input(node: Any) -> bool:
    return node.op == "call_function" and op_name(node.target) in _OUTPUT_INSIDE_INPUT


def storage_sharing_spec_ids(graph_module: object) -> set[int]:
    """``id()`` of every TensorSpec in a planned graph that lies inside another's storage.

    Reads only ``graph_module.graph.nodes`` (op, target, args, meta["spec"]).
    """
    shared: set[int] = set()
    for node in graph_module.graph.nodes:  # type: ignore[attr-defined]
        if _inside_its_input(node):
            shared.add(id(node.meta.get("spec")))
        elif node.op == "call_function" and op_name(node.target) in _INPUTS_INSIDE_OUTPUT:
            for source in _cat_inputs(node):
                shared.add(id(source.meta.get("spec")))
                while _inside_its_input(source) and source.args:  # the view's own source
                    source = source.args[0]
                    shared.add(id(source.meta.get("spec")))
    return shared


def storage_hosts(graph_module: object) -> dict[int, Any]:
    """For each TensorSpec that :func:`storage_sharing_spec_ids` names, by ``id()``, the
    spec of the tensor whose storage holds it, followed to the outermost (a slice of a
    cat's input lies in the cat's output): the planners count such a tensor as its
    host's bytes, and so does the scheduler (cadence_memplan.scheduling)."""
    direct: dict[int, Any] = {}
    for node in graph_module.graph.nodes:  # type: ignore[attr-defined]
        if _inside_its_input(node) and node.args:
            direct[id(node.meta.get("spec"))] = node.args[0].meta.get("spec")
        elif node.op == "call_function" and op_name(node.target) in _INPUTS_INSIDE_OUTPUT:
            host = node.meta.get("spec")
            for source in _cat_inputs(node):
                direct[id(source.meta.get("spec"))] = host
                while _inside_its_input(source) and source.args:  # the view's own source
                    source = source.args[0]
                    direct[id(source.meta.get("spec"))] = host
    hosts: dict[int, Any] = {}
    for key, host in direct.items():
        seen = {key}
        while id(host) in direct and id(host) not in seen:  # no loop on a malformed graph
            seen.add(id(host))
            host = direct[id(host)]
        hosts[key] = host
    return hosts
