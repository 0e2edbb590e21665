"""``CadenceMemoryPlanning(share_mutable_buffers=True)``: a program's methods planned
together on the hierarchy, their mutable state placed once (issue 51).

exir's ``to_executorch`` runs the pass's ``run`` on each method, then its
``run_multimethod`` once. With sharing, ``run`` only records the method (its graph module,
signature and buffers; the list the program keeps as its buffer sizes), and
``run_multimethod`` plans them all:

- the state, every buffer some method mutates (as exir's ``share_mutable_buffers``), is
  laid out once, in name order, each buffer at the memory's alignment;
- it goes in the fastest memory where it fits beside every method's own tensors: for each
  memory in order (fastest first) that is large enough, the state is put at its offset 0
  and every method is planned around it (the bytes held for the whole graph, as the
  bytes an enclosing graph holds, ``_plan_scope``'s ``outside``); the placers spill what
  does not fit to slower memories, so the first such memory where every method plans is
  kept; a memory where some method does not fit puts everything back and the next is
  tried;
- every method then has the state at the same ``(mem_id, offset)``, and each memory's
  size is the largest method's (every method's buffer sizes, so a runtime sizes each
  memory for all of them whichever method it loads first).

The runtime's side (docs/cadence.md): every method must get the same buffer for each
memory id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from executorch.backends.cadence.aot.utils import MemoryConfig, MemoryPlanningAlgoFailure
from executorch.exir.tensor import TensorSpec

from .._boundary.mutable_state import MethodBuffers, shared_state
from .._boundary.tensorspecs import allocated_sizes, write_placements

__all__ = ["PendingMethod", "StateLayout", "plan_sharing_state", "state_layout"]

# Plans one method: (graph module, signature, bytes held outside it, spec ids not planned).
PlanMethod = Callable[[Any, Any, list[tuple[int, int, int]], frozenset[int]], None]


@dataclass
class PendingMethod:
    """A method ``run`` recorded: its buffers, and the buffer-size list its program keeps
    (the program copied the graph module's meta when ``run`` returned, so the list is
    filled in place)."""

    buffers: MethodBuffers
    sizes: list[int]


@dataclass(frozen=True)
class StateLayout:
    """The state's specs (every method's), each one's offset from the state's start, and
    the state's size, its end aligned."""

    specs: list[TensorSpec]
    offsets: list[int]
    size: int


def _round_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def state_layout(methods: Sequence[MethodBuffers], alignment: int) -> StateLayout:
    """The state laid out in name order at ``alignment``; ``ValueError`` when two methods
    give one buffer different sizes (then they are not the same tensor)."""
    specs: list[TensorSpec] = []
    offsets: list[int] = []
    offset = 0
    for fqn, buffer_specs in shared_state(methods).items():
        sizes = set(allocated_sizes(buffer_specs).tolist())
        if len(sizes) != 1:
            raise ValueError(
                f"mutable buffer {fqn!r} has different sizes in the program's methods"
                f" ({sorted(sizes)} bytes): it cannot be shared between them"
            )
        specs.extend(buffer_specs)
        offsets.extend([offset] * len(buffer_specs))
        offset = _round_up(offset + sizes.pop(), alignment)
    return StateLayout(specs, offsets, offset)


def _place_state(layout: StateLayout, mem_id: int) -> None:
    write_placements(
        layout.specs,
        np.full(len(layout.specs), mem_id, dtype=np.int64),
        np.array(layout.offsets, dtype=np.int64),
    )


def _plan_all(
    pending: Sequence[PendingMethod], layout: StateLayout, mem_id: int, plan_method: PlanMethod
) -> None:
    _place_state(layout, mem_id)
    outside = [(mem_id, 0, layout.size)] if layout.size else []
    unplanned = frozenset(map(id, layout.specs))
    for method in pending:
        plan_method(method.buffers.graph_module, method.buffers.signature, outside, unplanned)


def plan_sharing_state(
    pending: Sequence[PendingMethod],
    memory_config: MemoryConfig,
    plan_method: PlanMethod,
    restore: Callable[[], None],
) -> int | None:
    """Plan every pending method with their state shared (the module's docstring); returns
    the memory id the state went to (None: no state). ``restore`` puts back every spec of
    every method; when no memory works the last failure is raised, everything put back."""
    methods = [method.buffers for method in pending]
    sizes = list(memory_config.memory_sizes)
    alignments = list(memory_config.memory_alignments or [1] * len(sizes))
    if not shared_state(methods):
        _plan_all(pending, StateLayout([], [], 0), 1, plan_method)
        _size_for_largest(pending, 1, 0)
        return None
    failure: Exception | None = None
    for mem_id in range(1, len(sizes) + 1):
        layout = state_layout(methods, int(alignments[mem_id - 1]))
        if layout.size > int(sizes[mem_id - 1]):
            continue
        try:
            _plan_all(pending, layout, mem_id, plan_method)
        except MemoryPlanningAlgoFailure as error:
            restore()
            failure = error
            continue
        _size_for_largest(pending, mem_id, layout.size)
        return mem_id
    if failure is not None:
        raise failure
    largest = state_layout(methods, 1).size
    raise MemoryPlanningAlgoFailure(
        f"the program's shared mutable state ({largest:,} B) fits in no memory:"
        f" memory sizes {sizes}"
    )


def _size_for_largest(pending: Sequence[PendingMethod], mem_id: int, state_size: int) -> None:
    """Every method's buffer sizes become the largest method's, memory by memory, in the
    list its program keeps; memory ``mem_id`` holds the state's ``state_size`` bytes at
    least (the placers size a memory by what they place, and the state is placed
    already)."""
    planned = [
        list(method.buffers.graph_module.meta["non_const_buffer_sizes"]) for method in pending
    ]
    width = max(map(len, planned), default=0)
    width = max(width, mem_id + 1)
    largest = [max((row[m] if m < len(row) else 0) for row in planned) for m in range(width)]
    largest[mem_id] = max(largest[mem_id], state_size)
    for method in pending:
        method.sizes[:] = largest
        method.buffers.graph_module.meta["non_const_buffer_sizes"] = method.sizes
