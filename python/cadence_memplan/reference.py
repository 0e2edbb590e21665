"""A clean pure-Python implementation of the two placers, for comparison and as a test oracle.

``cadence_memplan.reference.plan`` takes and returns exactly what :func:`cadence_memplan.plan`
does and places every tensor where upstream's Cadence placers (executorch 1.5.x) would,
but it is plain Python over lists of ints: no executorch, no TensorSpec, no C++ (it
imports nothing of the package that touches the extension, so it can check the core).

It is written from the placers' rules (see ``csrc/core/placement/planner.h``), not translated from
upstream's code, and it is deliberately simple: every placement scans all tensors already
in a memory, so planning n tensors costs O(n^2). That makes it the fair Python baseline to
time the C++ core against (upstream's own cost is dominated by an f-string built inside
``Verifier.lifetime_overlap`` on every pair it compares), and an oracle independent of the
core's interval index.

The rules, shared by both placers: tensors are visited largest first, ties in input order;
memories are tried in id order 1..N (1 = fastest); a tensor fits in memory m at offset o
when m is allowed in this call, not blocked for the tensor, and
``align_up(o + size, alignment[m]) <= memory_size[m]``. Lifetimes are inclusive
``[start, end]`` (empty when start > end); storage is ``[offset, offset + size)``, so a
zero-size tensor overlaps nothing.

* ``"position"`` (PositionBasedGreedyWithHierarchy): first fit, the lowest aligned offset
  whose storage is free during the tensor's whole lifetime.
* ``"heuristic"`` (GreedyWithHeuristic, arXiv 2001.03288): walk the memory's tensors whose
  lifetimes overlap, in the memory's list order, tracking the aligned end of storage seen so
  far; the smallest gap before a tensor that holds the new one wins (strictly smaller
  replaces), else the tensor goes after all of them. Upstream quirks kept: the list is in
  the order tensors were given until the first placement in that memory and sorted by
  offset (stably) after it; an incoming offset is kept when no gap holds the tensor, and
  survives memories blocked for it. A kept offset can collide with another tensor, where
  upstream fails an assertion; here that is a :class:`~cadence_memplan.PlanningError`.

Alignment is exact integer arithmetic (upstream divides in floating point, which is inexact
above 2^53 bytes).
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Sequence, Sized
from typing import Any

import numpy as np
import numpy.typing as npt

from ._types import UPSTREAM_ALGORITHMS, Algorithm, PlanningError, PlanResult, Preplaced
from ._validation import as_int64, check_memories

__all__ = ["plan"]

_NO_OFFSET = -1  # An incoming offset that was None.


def _int_list(name: str, values: Any) -> list[int]:
    """``values`` as a list of Python ints, checked like the array API's input."""
    result: list[int] = as_int64(name, values).tolist()
    return result


def _require_length(name: str, values: Sized, expected: int) -> None:
    if len(values) != expected:
        raise ValueError(f"{name} has {len(values)} entries, expected {expected}")


def _align_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def _lifetimes_overlap(start: int, end: int, other_start: int, other_end: int) -> bool:
    """Inclusive lifetimes; an empty one (start > end) overlaps nothing."""
    return start <= end and other_start <= other_end and start <= other_end and other_start <= end


class _Memories:
    """What is in each memory so far: the memories' list orders, offsets and bufsizes.

    Tensors are numbered by *slot*: already-placed tensor j is slot j, tensor i to place is
    slot ``len(preplaced) + i`` (the numbering of ``PlanResult.memory_order``).
    """

    def __init__(
        self,
        starts: list[int],
        ends: list[int],
        sizes: list[int],
        memory_sizes: list[int],
        memory_alignments: list[int],
    ) -> None:
        self.starts, self.ends, self.sizes = starts, ends, sizes
        self.memory_sizes = [0, *memory_sizes]  # indexed by memory id; id 0 is reserved
        self.alignments = [1, *memory_alignments]
        self.offsets = [_NO_OFFSET] * len(sizes)
        self.members: list[list[int]] = [[] for _ in self.memory_sizes]  # list order per id
        self.bufsizes = [0] * len(self.memory_sizes)

    def fits(self, mem_id: int, offset: int, size: int) -> bool:
        return _align_up(offset + size, self.alignments[mem_id]) <= self.memory_sizes[mem_id]

    def lifetime_overlapping(self, mem_id: int, slot: int) -> list[int]:
        """Slots in memory ``mem_id`` alive at some node where ``slot`` is, in list order."""
        start, end = self.starts[slot], self.ends[slot]
        if start > end:
            return []
        starts, ends = self.starts, self.ends
        return [
            other
            for other in self.members[mem_id]
            if starts[other] <= end and ends[other] >= start and starts[other] <= ends[other]
        ]

    def add(self, slot: int, mem_id: int, offset: int, keep_sorted_by_offset: bool) -> None:
        self.offsets[slot] = offset
        members = self.members[mem_id]
        if keep_sorted_by_offset:
            # After its first placement in a memory the heuristic keeps the list stably
            # sorted by offset: a newcomer goes after tensors at the same offset.
            insort(members, slot, key=self.offsets.__getitem__)
        else:
            members.append(slot)
        aligned_end = _align_up(offset + self.sizes[slot], self.alignments[mem_id])
        self.bufsizes[mem_id] = max(self.bufsizes[mem_id], aligned_end)


def _lowest_free_offset(memories: _Memories, mem_id: int, slot: int) -> int:
    """First fit: the lowest aligned offset where ``slot``'s storage meets no tensor of
    ``mem_id`` that is alive at the same time."""
    size = memories.sizes[slot]
    if size == 0:
        return 0
    alignment = memories.alignments[mem_id]
    taken = sorted(
        (memories.offsets[other], memories.offsets[other] + memories.sizes[other])
        for other in memories.lifetime_overlapping(mem_id, slot)
        if memories.sizes[other] > 0
    )
    candidate = 0
    for begin, end in taken:
        if begin >= candidate + size:
            break  # Fits before this tensor, and before every later one.
        if end > candidate:
            candidate = _align_up(end, alignment)
    return candidate


def _describe_failure(index: int, size: int, lifetime: tuple[int, int], why: list[str]) -> str:
    lines = [f"cannot place tensor {index} (size {size} bytes, lifetime {list(lifetime)}):"]
    lines += [f"  memory {mem_id}: {reason}" for mem_id, reason in enumerate(why, start=1)]
    return "\n".join(lines)


def plan(
    starts: Sequence[int] | npt.ArrayLike,
    ends: Sequence[int] | npt.ArrayLike,
    sizes: Sequence[int] | npt.ArrayLike,
    memory_sizes: Sequence[int] | npt.ArrayLike,
    memory_alignments: Sequence[int] | npt.ArrayLike,
    *,
    algorithm: Algorithm = "position",
    blocked: npt.ArrayLike | None = None,
    allowed: npt.ArrayLike | None = None,
    preplaced: Preplaced | None = None,
    incoming_offsets: Sequence[int] | npt.ArrayLike | None = None,
    keep_incoming_offset: bool = True,
) -> PlanResult:
    """Place tensors exactly as :func:`cadence_memplan.plan` does, in pure Python.

    Same arguments and result (see there); raises :class:`~cadence_memplan.PlanningError`
    with ``tensor_index`` set when a tensor fits nowhere, ValueError/TypeError for bad input.
    """
    if algorithm not in UPSTREAM_ALGORITHMS:
        raise ValueError(f"algorithm must be one of {UPSTREAM_ALGORITHMS}, got {algorithm!r}")
    tensor_starts, tensor_ends, tensor_sizes = _tensor_lists(starts, ends, sizes)
    tensor_count = len(tensor_starts)
    memory_size_list = _int_list("memory_sizes", memory_sizes)
    memory_count = len(memory_size_list)
    alignment_list = _int_list("memory_alignments", memory_alignments)
    _require_length("memory_alignments", alignment_list, memory_count)
    check_memories(memory_size_list, alignment_list)
    blocked_ids, allowed_ids = _memory_choices(blocked, allowed, tensor_count, memory_count)
    incoming = [_NO_OFFSET] * tensor_count
    if incoming_offsets is not None and keep_incoming_offset:
        incoming = _int_list("incoming_offsets", incoming_offsets)
        _require_length("incoming_offsets", incoming, tensor_count)
    placed = [
        _int_list(f"preplaced.{field}", getattr(preplaced, field)) if preplaced else []
        for field in Preplaced._fields
    ]
    placed_count = len(placed[0])
    for field, values in zip(Preplaced._fields, placed, strict=True):
        _require_length(f"preplaced.{field}", values, placed_count)
    placed_starts, placed_ends, placed_sizes, placed_mem_ids, placed_offsets = placed
    memories = _Memories(
        placed_starts + tensor_starts,
        placed_ends + tensor_ends,
        placed_sizes + tensor_sizes,
        memory_size_list,
        alignment_list,
    )
    for slot in range(placed_count):
        mem_id, offset, size = placed_mem_ids[slot], placed_offsets[slot], placed_sizes[slot]
        if (
            not 1 <= mem_id <= memory_count
            or offset < 0
            or offset + size > memory_size_list[mem_id - 1]
        ):
            raise ValueError(
                f"placed tensor {slot}: storage [{offset}, {offset + size}) of memory {mem_id}"
                f" lies outside the memories 1..{memory_count}"
            )
        memories.add(slot, mem_id, offset, keep_sorted_by_offset=False)
    mem_ids, offsets = _place_all(
        memories, algorithm == "heuristic", placed_count, blocked_ids, allowed_ids, incoming
    )
    call_bufsizes = [0] * len(memories.bufsizes)
    for index, (mem_id, offset) in enumerate(zip(mem_ids, offsets, strict=True)):
        end = _align_up(offset + tensor_sizes[index], memories.alignments[mem_id])
        call_bufsizes[mem_id] = max(call_bufsizes[mem_id], end)
    return PlanResult(
        mem_ids=np.array(mem_ids, dtype=np.int64),
        offsets=np.array(offsets, dtype=np.int64),
        bufsizes=np.array(memories.bufsizes, dtype=np.int64),
        call_bufsizes=np.array(call_bufsizes, dtype=np.int64),
        memory_order=tuple(np.array(order, dtype=np.int64) for order in memories.members),
    )


def _tensor_lists(
    starts: Sequence[int] | npt.ArrayLike,
    ends: Sequence[int] | npt.ArrayLike,
    sizes: Sequence[int] | npt.ArrayLike,
) -> tuple[list[int], list[int], list[int]]:
    """The tensors' columns as lists of ints, of one length, none negative."""
    tensor_starts = _int_list("starts", starts)
    tensor_count = len(tensor_starts)
    tensor_ends = _int_list("ends", ends)
    tensor_sizes = _int_list("sizes", sizes)
    _require_length("ends", tensor_ends, tensor_count)
    _require_length("sizes", tensor_sizes, tensor_count)
    for index in range(tensor_count):
        if tensor_sizes[index] < 0 or tensor_starts[index] < 0 or tensor_ends[index] < 0:
            raise ValueError(
                f"tensor {index}: size {tensor_sizes[index]} and lifetime"
                f" [{tensor_starts[index]}, {tensor_ends[index]}] must not be negative"
            )
    return tensor_starts, tensor_ends, tensor_sizes


def _memory_choices(
    blocked: npt.ArrayLike | None,
    allowed: npt.ArrayLike | None,
    tensor_count: int,
    memory_count: int,
) -> tuple[list[set[int]], list[bool]]:
    """Per tensor, the memory ids it must not use; per memory id, whether this call may
    use it (index 0 unused)."""
    blocked_ids: list[set[int]] = [set() for _ in range(tensor_count)]
    if blocked is not None:
        matrix = np.asarray(blocked, dtype=bool).reshape(-1, memory_count)
        _require_length("blocked", matrix, tensor_count)
        for index, row in enumerate(matrix.tolist()):
            blocked_ids[index] = {mem_id for mem_id, bit in enumerate(row, start=1) if bit}
    allowed_ids = [True] * (memory_count + 1)
    if allowed is not None:
        allowed_list = [bool(ok) for ok in np.asarray(allowed, dtype=bool).tolist()]
        _require_length("allowed", allowed_list, memory_count)
        allowed_ids[1:] = allowed_list
    return blocked_ids, allowed_ids


def _place_all(
    memories: _Memories,
    heuristic: bool,
    placed_count: int,
    blocked_ids: list[set[int]],
    allowed_ids: list[bool],
    incoming: list[int],
) -> tuple[list[int], list[int]]:
    """Upstream's loop: largest tensor first, each in the first memory where the placer
    finds room; the tensors' (mem_ids, offsets), or :class:`PlanningError`."""
    tensor_count = len(incoming)
    memory_count = len(memories.members) - 1
    sizes = memories.sizes
    sorted_by_offset = [False] * (memory_count + 1)  # The heuristic's list order per memory.
    mem_ids = [0] * tensor_count
    offsets = [_NO_OFFSET] * tensor_count
    visiting_order = sorted(
        range(tensor_count), key=lambda index: sizes[placed_count + index], reverse=True
    )
    for index in visiting_order:
        slot = placed_count + index
        size = sizes[slot]
        why_not: list[str] = []  # Per memory tried, for the error message.
        carried = incoming[index]  # The heuristic's offset, carried from memory to memory.
        for mem_id in range(1, memory_count + 1):
            if mem_id in blocked_ids[index]:
                why_not.append("blocked for this tensor")
                continue
            if not allowed_ids[mem_id]:
                why_not.append("not allowed in this call")
                carried = _NO_OFFSET
                continue
            if heuristic:
                carried = _best_gap_offset(memories, mem_id, slot, carried)
                offset = carried
            else:
                offset = _lowest_free_offset(memories, mem_id, slot)
            if not memories.fits(mem_id, offset, size):
                why_not.append(f"no room, the best offset {offset} ends past its size")
                carried = _NO_OFFSET
                continue
            if heuristic:
                _check_no_collision(memories, mem_id, slot, offset, index, placed_count)
            memories.add(slot, mem_id, offset, keep_sorted_by_offset=sorted_by_offset[mem_id])
            if heuristic and not sorted_by_offset[mem_id]:
                sorted_by_offset[mem_id] = True
                memories.members[mem_id].sort(key=memories.offsets.__getitem__)
            mem_ids[index], offsets[index] = mem_id, offset
            break
        else:
            lifetime = (memories.starts[slot], memories.ends[slot])
            raise PlanningError(_describe_failure(index, size, lifetime, why_not), index)
    return mem_ids, offsets


def _best_gap_offset(memories: _Memories, mem_id: int, slot: int, carried: int) -> int:
    """The heuristic's offset in ``mem_id``: the start of the smallest gap that holds the
    tensor between lifetime-overlapping tensors (in list order), else ``carried`` when it is
    an offset, else the aligned end of all of them."""
    size = memories.sizes[slot]
    alignment = memories.alignments[mem_id]
    offsets, sizes = memories.offsets, memories.sizes
    running_end = 0
    smallest_gap = None
    for other in memories.lifetime_overlapping(mem_id, slot):
        gap = offsets[other] - running_end
        if gap >= size and (smallest_gap is None or gap < smallest_gap):
            smallest_gap = gap
            carried = running_end
        running_end = max(running_end, _align_up(offsets[other] + sizes[other], alignment))
    return running_end if carried == _NO_OFFSET else carried


def _check_no_collision(
    memories: _Memories, mem_id: int, slot: int, offset: int, index: int, placed_count: int
) -> None:
    """Raise where upstream's heuristic would fail its no-overlap assertion."""
    size = memories.sizes[slot]
    if size == 0:
        return
    for other in memories.lifetime_overlapping(mem_id, slot):
        other_offset, other_size = memories.offsets[other], memories.sizes[other]
        if other_size > 0 and offset < other_offset + other_size and other_offset < offset + size:
            who = (
                f"placed tensor {other}"
                if other < placed_count
                else f"tensor {other - placed_count}"
            )
            raise PlanningError(
                f"placing tensor {index} (size {size} bytes) at offset {offset} of memory"
                f" {mem_id} would overlap {who} at offset {other_offset} (upstream's heuristic"
                " keeps an incoming offset, or scans placed tensors in their given order, and"
                " then fails its assertion)",
                index,
            )
