"""A graph as staging's cost model sees it, and the copies of a staging schedule.

Ops run one after another, numbered from 0. Tensor ``t`` has ``sizes[t]`` bytes and is
made by op ``producers[t]`` (``-1``: it exists before the first op: a graph input, a
mutable buffer). Op ``i`` reads the tensors ``reads[i]`` and writes ``writes[i]`` (its
outputs, and any tensor it changes in place), each access moving the tensor's bytes.
A tensor that ``outlives`` the graph (an output, a mutable buffer) is alive to the end
and must then be in its home memory. No copy may move a tensor of ``no_copies``: it lies
inside another tensor's storage (Cadence's cat, slice and select nops), so it lives
where that tensor lives and cannot be loaded, stored or pinned on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

__all__ = ["Copy", "CopyKind", "StagingProblem"]

CopyKind = Literal["load", "store"]


@dataclass(frozen=True)
class Copy:
    """One DMA transfer. Both kinds are issued when op ``start`` may begin (when op
    ``start - 1`` ends) and must be done before op ``end`` begins (``end`` may be the
    number of ops: before the graph ends), where the runtime waits for them.

    - ``load``: ``tensor`` lives in slow memory; its fast copy holds space over ops
      ``[start, until]`` and serves every read of the tensor at those ops.
    - ``store``: the last op that writes ``tensor`` before ``start`` (its producer, or an
      op that changes it in place) writes it into fast memory, which serves its reads up
      to op ``until``; the store writes it back to its slow home, and its space is held
      until then (ops ``[that write, max(until, end - 1)]``).
    """

    tensor: int
    kind: CopyKind
    start: int
    end: int
    until: int


@dataclass(frozen=True)
class StagingProblem:
    """``flops[i]`` of op ``i``; per tensor ``sizes``, ``producers``, ``outlives``; per op
    ``reads`` and ``writes`` (tuples of tensor ids); ``names`` of the tensors, for reports;
    ``no_copies``, the tensors no load or store may move (they may stay whole)."""

    flops: tuple[int, ...]
    sizes: tuple[int, ...]
    producers: tuple[int, ...]
    reads: tuple[tuple[int, ...], ...]
    writes: tuple[tuple[int, ...], ...]
    outlives: tuple[bool, ...]
    names: tuple[str, ...] = ()
    no_copies: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        ops, tensors = len(self.flops), len(self.sizes)
        if len(self.reads) != ops or len(self.writes) != ops:
            raise ValueError("reads and writes need one entry per op")
        if len(self.producers) != tensors or len(self.outlives) != tensors:
            raise ValueError("producers and outlives need one entry per tensor")
        if self.names and len(self.names) != tensors:
            raise ValueError("names needs one entry per tensor")
        if any(size < 0 for size in self.sizes) or any(flop < 0 for flop in self.flops):
            raise ValueError("sizes and flops must be >= 0")
        if any(not 0 <= tensor < tensors for tensor in self.no_copies):
            raise ValueError("no_copies names an unknown tensor")
        for op, accessed in enumerate(self.reads + self.writes):
            if any(not 0 <= tensor < tensors for tensor in accessed):
                raise ValueError(f"op {op % max(ops, 1)} accesses an unknown tensor")
        for tensor, producer in enumerate(self.producers):
            if not -1 <= producer < ops or (producer >= 0 and tensor not in self.writes[producer]):
                raise ValueError(f"tensor {tensor}: producer {producer} does not write it")

    @property
    def num_ops(self) -> int:
        return len(self.flops)

    @property
    def num_tensors(self) -> int:
        return len(self.sizes)

    @cached_property
    def readers(self) -> tuple[tuple[int, ...], ...]:
        """Per tensor, the ops that read it, in order."""
        found: list[list[int]] = [[] for _ in self.sizes]
        for op, tensors in enumerate(self.reads):
            for tensor in tensors:
                found[tensor].append(op)
        return tuple(tuple(ops) for ops in found)

    @cached_property
    def writers(self) -> tuple[tuple[int, ...], ...]:
        """Per tensor, the ops that write it, in order (its producer first)."""
        found: list[list[int]] = [[] for _ in self.sizes]
        for op, tensors in enumerate(self.writes):
            for tensor in tensors:
                found[tensor].append(op)
        return tuple(tuple(ops) for ops in found)

    @cached_property
    def lifetimes(self) -> tuple[tuple[int, int], ...]:
        """Per tensor, the inclusive ops ``(first, last)`` over which a static plan holds
        it: from its producer (op 0 when it exists before) to its last access, or to the
        last op when it outlives the graph."""
        last_op = self.num_ops - 1
        spans = []
        for tensor, producer in enumerate(self.producers):
            first = max(producer, 0)
            accesses = self.readers[tensor] + self.writers[tensor]
            last = last_op if self.outlives[tensor] else max((first, *accesses))
            spans.append((first, last))
        return tuple(spans)

    @cached_property
    def access_bytes(self) -> tuple[int, ...]:
        """Per tensor, the bytes its reads and writes move."""
        return tuple(
            size * (len(self.readers[tensor]) + len(self.writers[tensor]))
            for tensor, size in enumerate(self.sizes)
        )

    def name(self, tensor: int) -> str:
        return self.names[tensor] if self.names else f"t{tensor}"
