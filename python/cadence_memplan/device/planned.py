"""The plan a ``.pte`` carries, per method, in the package's terms: each planned tensor's
placement (read by :mod:`.pte`) with a lifetime inferred from the instructions, as a
:class:`~cadence_memplan.stats.TensorTable`, and the method's arenas as the memories it
was planned for, for the validator and the reports (``plan x.pte``).

A ``.pte`` keeps where each tensor is, not when it is alive, so the lifetimes are
inferred from the instructions, inclusive ``[first, last]`` over instruction indices in
execution order (ExecuTorch's convention, the one exir's TensorSpec lifetimes use):

- the instructions of every chain, one after another, are the execution order; a jump is
  not followed (a method with control flow is checked in its serialized order);
- a tensor an instruction names, as any argument (inside a tensor list too), is alive at
  that instruction: a delegate call's arguments all live at its instruction, a kernel's
  outputs at the instruction that writes them (a kernel writes its last argument);
- the method's inputs are alive from the first instruction, its outputs to the last;
- a tensor read before any instruction writes it is a view of the tensor written earlier
  at its placement (exir gives a view its base's memory, offset and bytes), alive from
  that write; with none, it is state (a mutable buffer) and alive through the method, as
  is a planned tensor that carries initial data.

Tensors at one placement whose lifetimes overlap are taken as one storage, a base and its
views (:func:`method_plan`).

What is conservative: a tensor is alive wherever any instruction names it, from the
first to the last, including instructions that only read part of it or none of it (a
delegate's), and state is alive throughout. What is not: a plan that reuses bytes across
a jump is judged in the serialized order only, and two distinct tensors put at one
placement while both are alive cannot be told from a view and its base.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..request.hierarchy import Hierarchy, Memory
from ..stats import TensorTable
from .layout import Instruction, ListValue, MethodLayout, Placement, TensorValue

__all__ = ["method_memories", "method_plan", "planned_lifetimes"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def planned_lifetimes(method: MethodLayout) -> dict[int, tuple[int, int]]:
    """Each planned tensor's inclusive lifetime ``[first, last]`` over the method's
    instructions (the module's docstring says how it is inferred), by value index. A
    planned tensor no instruction names, and neither an input nor an output, is left out."""
    planned = {
        index: value.placement
        for index, value in enumerate(method.values)
        if isinstance(value, TensorValue) and value.placement is not None
    }
    last = max(sum(len(chain) for chain in method.chains) - 1, 0)
    first_use: dict[int, int] = {}
    last_use: dict[int, int] = {}
    read_first: set[int] = set()  # named first by an instruction that does not write it
    instructions = (instruction for chain in method.chains for instruction in chain)
    for position, instruction in enumerate(instructions):
        written = set(_tensors_named(method, _written_arguments(instruction)))
        for index in _tensors_named(method, instruction.args):
            if index not in first_use and index not in written:
                read_first.add(index)
            first_use.setdefault(index, position)
            last_use[index] = position
    for index in method.input_values:
        first_use[index] = 0
        last_use.setdefault(index, 0)
        read_first.discard(index)
    for index in method.output_values:
        first_use.setdefault(index, last)
        last_use[index] = last
    # What is read before any instruction writes it is a view of a tensor written earlier
    # at its placement (alive from that write), or else state: alive through the method.
    written_at: dict[Placement, int] = {}
    for index, placement in planned.items():
        if index in first_use and index not in read_first:
            written_at[placement] = min(written_at.get(placement, last), first_use[index])
    for index, placement in planned.items():
        value = method.values[index]
        state = isinstance(value, TensorValue) and value.initial_data
        if index in read_first and placement in written_at and not state:
            first_use[index] = min(first_use[index], written_at[placement])
        elif index in read_first or state:
            first_use[index], last_use[index] = 0, last
    return {
        index: (first_use[index], last_use[index])
        for index in sorted(planned)
        if index in first_use
    }


def _written_arguments(instruction: Instruction) -> tuple[int, ...]:
    """The arguments an instruction may write: a kernel's last (its out, or the list of
    its outs), a move's destination, every argument of a delegate call (which of them it
    writes the program does not say)."""
    if instruction.kind == "kernel":
        return instruction.args[-1:]
    if instruction.kind == "delegate":
        return instruction.args
    if len(instruction.args) == 2:  # a move: from, to
        return instruction.args[1:]
    return ()


def _tensors_named(method: MethodLayout, indices: tuple[int, ...]) -> list[int]:
    """The value indices ``indices`` name, a tensor list's items in its place."""
    named: list[int] = []
    for index in indices:
        if not 0 <= index < len(method.values):
            continue
        value = method.values[index]
        if isinstance(value, ListValue):
            named.extend(item for item in value.items if item >= 0)
        else:
            named.append(index)
    return named


def method_plan(method: MethodLayout) -> TensorTable:
    """The method's plan as the ``.pte`` has it: a row per planned tensor with a lifetime
    (labelled ``v`` and its value index), its memory id, offset, bytes and inferred
    inclusive lifetime."""
    lifetimes = planned_lifetimes(method)
    placements = []
    for index in lifetimes:
        value = method.values[index]
        assert isinstance(value, TensorValue)
        assert value.placement is not None
        placements.append(value.placement)
    starts = np.array([start for start, _ in lifetimes.values()], dtype=np.int64)
    ends = np.array([end for _, end in lifetimes.values()], dtype=np.int64)
    return TensorTable(
        labels=[f"v{index}" for index in lifetimes],
        mem_ids=np.array([p.memory_id for p in placements], dtype=np.int64),
        offsets=np.array([p.offset for p in placements], dtype=np.int64),
        sizes=np.array([p.nbytes for p in placements], dtype=np.int64),
        starts=starts,
        ends=ends,
        shares_storage=_views(placements, starts, ends),
    )


def _views(placements: list[Placement], starts: IntArray, ends: IntArray) -> BoolArray:
    """The rows taken as views of another: exir gives a view its base's placement (same
    memory, offset and bytes), so of the tensors at one placement whose lifetimes overlap,
    the first is the storage, alive over them all (``ends`` extended), and the others lie
    inside it (marked). Two distinct tensors put at one placement while both are alive
    cannot be told from a view: that one collision is not reported."""
    views = np.zeros(len(placements), dtype=bool)
    by_placement: dict[Placement, list[int]] = {}
    for row, placement in enumerate(placements):
        by_placement.setdefault(placement, []).append(row)
    for rows in by_placement.values():
        storage = -1
        for row in sorted(rows, key=lambda r: int(starts[r])):
            if storage >= 0 and starts[row] <= ends[storage]:
                views[row] = True
                ends[storage] = max(ends[storage], ends[row])
            else:
                storage = row
    return views


def method_memories(method: MethodLayout) -> Hierarchy:
    """The memories the method was planned for: one per memory id from 1, named by its
    id, sized as the program's arena (its non-const buffer size), aligned as every offset
    in it already is."""
    alignments = method.arena_alignments or (1,) * len(method.arenas)
    return Hierarchy(
        Memory(str(memory_id), size, alignment)
        for memory_id, (size, alignment) in enumerate(
            zip(method.arenas, alignments, strict=True), start=1
        )
    )
