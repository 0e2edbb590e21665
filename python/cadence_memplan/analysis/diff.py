"""How two plans differ: which tensors moved, and each memory's peak before and after.

Tensors are matched by name (the k-th tensor of a name in one plan with the k-th of that
name in the other, so repeated names still pair up). Two plans are identical when they
have the same memories (name, size, alignment, base address) and the same tensors, each
in the same memory at the same offset with the same size and lifetime; what a plan file
records about how it was made (input name, algorithm, timings) is not compared.
numpy only; returns data, prints nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..io.memories import Memory
from ..stats import TensorTable, memory_stats

__all__ = ["MemoryChange", "MemoryMoves", "PlanDiff", "TensorChange", "diff_plans"]


@dataclass(frozen=True)
class TensorChange:
    """A tensor in both plans whose placement, size or lifetime differ."""

    name: str
    before: tuple[int, int, int, int, int]  # mem_id, offset, size, start, end
    after: tuple[int, int, int, int, int]

    @property
    def moved(self) -> bool:
        """In another memory or at another offset."""
        return self.before[:2] != self.after[:2]


@dataclass(frozen=True)
class MemoryChange:
    """Memory ``mem_id`` in each plan (None: that plan has no such memory)."""

    mem_id: int
    before: Memory | None
    after: Memory | None
    peak_usage: tuple[int, int]  # the bufsize in each plan (0 where the memory is missing)
    peak_live_bytes: tuple[int, int]  # the peak live of the memory's tensors in each plan
    tensor_count: tuple[int, int]


@dataclass(frozen=True)
class MemoryMoves:
    """The tensors that moved from memory ``before`` to memory ``after`` (the same memory:
    they changed offset only), and their bytes (their size in the second plan)."""

    before: int
    after: int
    tensors: int
    size: int


@dataclass
class PlanDiff:
    changed: list[TensorChange] = field(default_factory=list)  # in the first plan's order
    only_before: list[str] = field(default_factory=list)
    only_after: list[str] = field(default_factory=list)
    memories: list[MemoryChange] = field(default_factory=list)
    tensor_counts: tuple[int, int] = (0, 0)

    @property
    def moved(self) -> list[TensorChange]:
        return [change for change in self.changed if change.moved]

    def moves_by_memory(self) -> list[MemoryMoves]:
        """The moved tensors summed per pair of memories, in (before, after) id order."""
        pairs: dict[tuple[int, int], tuple[int, int]] = {}
        for change in self.moved:
            key = (change.before[0], change.after[0])
            tensors, size = pairs.get(key, (0, 0))
            pairs[key] = (tensors + 1, size + change.after[2])
        return [MemoryMoves(*key, *pairs[key]) for key in sorted(pairs)]

    @property
    def memories_differ(self) -> bool:
        return any(memory.before != memory.after for memory in self.memories)

    @property
    def identical(self) -> bool:
        return not (self.changed or self.only_before or self.only_after or self.memories_differ)


def _keys(table: TensorTable) -> list[tuple[str, int]]:
    """(name, how many earlier rows have that name) per row."""
    seen: dict[str, int] = {}
    keys = []
    for label in table.labels:
        name = str(label)
        keys.append((name, seen.get(name, 0)))
        seen[name] = seen.get(name, 0) + 1
    return keys


def _row(table: TensorTable, index: int) -> tuple[int, int, int, int, int]:
    return (
        int(table.mem_ids[index]),
        int(table.offsets[index]),
        int(table.sizes[index]),
        int(table.starts[index]),
        int(table.ends[index]),
    )


def diff_plans(
    before: TensorTable,
    before_memories: Sequence[Memory] | None,
    after: TensorTable,
    after_memories: Sequence[Memory] | None,
) -> PlanDiff:
    """Compare two plans of (usually) the same graph; see the module's docstring. A plan
    whose memories are not known (None: a plan CSV lists none) takes the other's, so
    only its tensors are compared."""
    if before_memories is None:
        before_memories = after_memories or []
    if after_memories is None:
        after_memories = before_memories
    before_keys, after_keys = _keys(before), _keys(after)
    after_index = {key: index for index, key in enumerate(after_keys)}
    before_set = set(before_keys)
    result = PlanDiff(tensor_counts=(len(before), len(after)))
    for index, key in enumerate(before_keys):
        match = after_index.get(key)
        if match is None:
            result.only_before.append(key[0])
            continue
        old, new = _row(before, index), _row(after, match)
        if old != new:
            result.changed.append(TensorChange(key[0], old, new))
    result.only_after = [key[0] for key in after_keys if key not in before_set]

    tensor_memories = [int(table.mem_ids.max()) for table in (before, after) if len(table)]
    count = max(len(before_memories), len(after_memories), *tensor_memories)
    # Stats for ids past a plan's own memories are zeros (and catch tensors placed there).
    before_stats = memory_stats(before, count)
    after_stats = memory_stats(after, count)
    for mem_id in range(1, count + 1):
        old_stat, new_stat = before_stats[mem_id - 1], after_stats[mem_id - 1]
        result.memories.append(
            MemoryChange(
                mem_id,
                before_memories[mem_id - 1] if mem_id <= len(before_memories) else None,
                after_memories[mem_id - 1] if mem_id <= len(after_memories) else None,
                (old_stat.peak_usage, new_stat.peak_usage),
                (old_stat.peak_live_bytes, new_stat.peak_live_bytes),
                (old_stat.tensor_count, new_stat.tensor_count),
            )
        )
    return result
