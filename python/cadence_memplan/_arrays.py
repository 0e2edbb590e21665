"""The array API: plan and validate tensors given as numpy integer arrays."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from . import _core

Algorithm = Literal["position", "heuristic"]
ALGORITHMS: tuple[Algorithm, ...] = ("position", "heuristic")
Occupancy = Literal["auto", "interval", "tree", "scan"]
OCCUPANCIES: tuple[Occupancy, ...] = ("auto", "interval", "tree", "scan")

_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min


class Preplaced(NamedTuple):
    """Tensors already in a memory before the call (upstream's ``state.allocated_buffers``).

    The order of one memory's tensors here is that memory's list order, which the
    heuristic reads (see :func:`plan`).
    """

    starts: npt.ArrayLike
    ends: npt.ArrayLike
    sizes: npt.ArrayLike
    mem_ids: npt.ArrayLike
    offsets: npt.ArrayLike


@dataclass(frozen=True)
class PlanResult:
    """Where :func:`plan` put each tensor.

    ``bufsizes`` and ``memory_order`` are indexed by memory id ``0..N`` like
    upstream's ``MemoryPlanningState`` (id 0 is reserved and stays empty).
    ``memory_order[m]`` is memory m's list order after the call: entries below
    ``len(preplaced)`` name preplaced tensors, ``len(preplaced) + i`` names tensor i.
    ``occupancy`` is the structure that answered the placers (what ``"auto"`` chose), or
    None for a plan that did not come from the C++ core.
    """

    mem_ids: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]
    bufsizes: npt.NDArray[np.int64]
    memory_order: tuple[npt.NDArray[np.int64], ...]
    occupancy: Occupancy | None = None


def as_int64(name: str, values: Any) -> npt.NDArray[np.int64]:
    """Return ``values`` as a 1-D int64 array, or raise naming the first bad entry."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.dtype == object:
        for index, value in enumerate(array.tolist()):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{name}[{index}] is {value!r}, not an integer")
            if not _INT64_MIN <= value <= _INT64_MAX:
                raise ValueError(f"{name}[{index}] = {value} does not fit in int64")
        array = array.astype(np.int64)
    elif array.size == 0:
        return np.zeros(0, dtype=np.int64)
    elif array.dtype.kind not in "iu":
        raise TypeError(
            f"{name} must hold integers, got dtype {array.dtype} ({name}[0] = {array[0]!r})"
        )
    elif array.dtype.kind == "u" and array.max() > _INT64_MAX:
        index = int(np.argmax(array > _INT64_MAX))
        raise ValueError(f"{name}[{index}] = {array[index]} does not fit in int64")
    return np.ascontiguousarray(array, dtype=np.int64)


def blocked_masks(
    blocked: npt.ArrayLike, tensor_count: int, memory_count: int
) -> npt.NDArray[np.uint64]:
    """Turn a (tensors, memories) boolean matrix into one bit mask per tensor (bit m = memory id m)."""
    matrix = np.asarray(blocked)
    if matrix.dtype != np.bool_:
        raise TypeError(f"blocked must be a boolean array, got dtype {matrix.dtype}")
    if matrix.shape != (tensor_count, memory_count):
        raise ValueError(
            f"blocked must have shape (tensors, memories) = {(tensor_count, memory_count)},"
            f" got {matrix.shape}"
        )
    bits = np.left_shift(np.uint64(1), np.arange(1, memory_count + 1, dtype=np.uint64))
    return np.bitwise_or.reduce(np.where(matrix, bits, np.uint64(0)), axis=1).astype(np.uint64)


def allowed_mask(allowed: npt.ArrayLike | None, memory_count: int) -> int:
    """Turn a boolean per-memory vector (None: all allowed) into a bit mask of memory ids."""
    if allowed is None:
        return sum(1 << mem_id for mem_id in range(1, memory_count + 1))
    vector = np.asarray(allowed)
    if vector.dtype != np.bool_:
        raise TypeError(f"allowed must be a boolean array, got dtype {vector.dtype}")
    if vector.shape != (memory_count,):
        raise ValueError(
            f"allowed must have one entry per memory ({memory_count}), got shape {vector.shape}"
        )
    return sum(1 << (index + 1) for index, ok in enumerate(vector.tolist()) if ok)


_EMPTY = np.zeros(0, dtype=np.int64)


def plan(
    starts: npt.ArrayLike,
    ends: npt.ArrayLike,
    sizes: npt.ArrayLike,
    memory_sizes: Sequence[int] | npt.ArrayLike,
    memory_alignments: Sequence[int] | npt.ArrayLike,
    *,
    algorithm: Algorithm = "position",
    blocked: npt.ArrayLike | None = None,
    allowed: npt.ArrayLike | None = None,
    preplaced: Preplaced | None = None,
    incoming_offsets: npt.ArrayLike | None = None,
    keep_incoming_offset: bool = True,
    occupancy: Occupancy = "auto",
) -> PlanResult:
    """Place tensors in a hierarchy of memories, exactly as upstream's Cadence placers do.

    Tensor ``i`` lives over the inclusive node range ``[starts[i], ends[i]]`` (empty when
    start > end) and needs ``sizes[i]`` bytes. Memory id ``m`` (1 = fastest) has
    ``memory_sizes[m-1]`` bytes and alignment ``memory_alignments[m-1]`` (any positive
    value).

    ``algorithm``: ``"position"`` is upstream's PositionBasedGreedyWithHierarchy (first
    fit), ``"heuristic"`` its GreedyWithHeuristic (best fit, arXiv 2001.03288).
    ``blocked``: boolean (tensors, memories) matrix, True where a tensor must not go.
    ``allowed``: boolean per memory, False to keep every tensor out of it in this call.
    ``preplaced``: tensors already placed, which the new ones must avoid.
    ``incoming_offsets``: each tensor's ``mem_offset`` before the call, -1 for None. The
    heuristic keeps it when no gap fits (an upstream quirk); ``keep_incoming_offset=False``
    turns the quirk off.
    ``occupancy``: how each memory finds the tensors alive with the one being placed.
    Every choice gives the same plan. ``"auto"`` (the default) picks ``"tree"`` (merged
    free space in a segment tree over time) when tensors overlap on average with at
    least 256 others, as on large transformer graphs, else ``"interval"`` (time-bucketed
    interval index). ``"scan"`` checks every placed tensor, the naive baseline that the
    benchmarks compare against.

    Raises ValueError or TypeError for bad input and :class:`PlanningError` when a tensor
    fits nowhere; the error names the tensor and every memory tried.
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    if occupancy not in OCCUPANCIES:
        raise ValueError(f"occupancy must be one of {OCCUPANCIES}, got {occupancy!r}")
    starts_array = as_int64("starts", starts)
    tensor_count = len(starts_array)
    memory_sizes_array = as_int64("memory_sizes", memory_sizes)
    memory_count = len(memory_sizes_array)
    if not 1 <= memory_count <= _core.MAX_MEMORIES:
        raise ValueError(
            f"the number of memories must be in 1..{_core.MAX_MEMORIES}, got {memory_count}"
        )
    masks = (
        np.zeros(0, dtype=np.uint64)
        if blocked is None
        else blocked_masks(blocked, tensor_count, memory_count)
    )
    placed = Preplaced(_EMPTY, _EMPTY, _EMPTY, _EMPTY, _EMPTY) if preplaced is None else preplaced
    mem_ids, offsets, bufsizes, memory_order, chosen = _core.plan(
        algorithm,
        starts_array,
        as_int64("ends", ends),
        as_int64("sizes", sizes),
        memory_sizes_array,
        as_int64("memory_alignments", memory_alignments),
        masks,
        allowed_mask(allowed, memory_count),
        *(as_int64(f"preplaced.{field}", getattr(placed, field)) for field in Preplaced._fields),
        _EMPTY if incoming_offsets is None else as_int64("incoming_offsets", incoming_offsets),
        keep_incoming_offset,
        occupancy,
    )
    return PlanResult(mem_ids, offsets, bufsizes, tuple(memory_order), chosen)


def validate(
    starts: npt.ArrayLike,
    ends: npt.ArrayLike,
    sizes: npt.ArrayLike,
    mem_ids: npt.ArrayLike,
    offsets: npt.ArrayLike,
    memory_sizes: Sequence[int] | npt.ArrayLike,
    memory_alignments: Sequence[int] | npt.ArrayLike,
) -> str | None:
    """Check a finished plan independently of the placers; return the first violation or None.

    A plan is valid when each tensor sits in memory ``1..N`` at an aligned, non-negative
    offset, inside the memory, and shares no byte with a tensor of the same memory whose
    inclusive lifetime overlaps its own.
    """
    problem = _core.validate(
        as_int64("starts", starts),
        as_int64("ends", ends),
        as_int64("sizes", sizes),
        as_int64("mem_ids", mem_ids),
        as_int64("offsets", offsets),
        as_int64("memory_sizes", memory_sizes),
        as_int64("memory_alignments", memory_alignments),
    )
    return problem or None
