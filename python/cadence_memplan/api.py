"""The array API: plan and validate tensors given as integer arrays. The only caller of the
C++ extension (``_core``): it checks and converts the input, calls the core with the GIL
released, and turns the core's failures into :class:`PlanningError` with the peak-live
bound attached."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from . import _core
from ._types import (
    ALGORITHMS,
    OCCUPANCIES,
    Algorithm,
    Occupancy,
    PlanningError,
    PlanResult,
    Preplaced,
)
from ._validation import MAX_MEMORIES, as_int64, check_budget_ms
from .stats import format_bytes, peak_live_bytes

__all__ = [
    "SharedObjectPacking",
    "allowed_mask",
    "blocked_masks",
    "check_storage_reuse",
    "pack_shared_objects",
    "plan",
    "plan_int64",
    "validate",
]

# algorithm="best": a cap on the search, not its expected length (see plan()).
DEFAULT_BUDGET_MS = 5000.0

_EMPTY = np.zeros(0, dtype=np.int64)
_NO_PREPLACED = Preplaced(_EMPTY, _EMPTY, _EMPTY, _EMPTY, _EMPTY)


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
    masks: npt.NDArray[np.uint64] = np.bitwise_or.reduce(
        np.where(matrix, bits, np.uint64(0)), axis=1
    ).astype(np.uint64)
    return masks


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


def _failure(
    error: _core.PlanningError,
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    preplaced: Preplaced,
    memory_sizes: npt.NDArray[np.int64],
) -> PlanningError:
    """The core's message, plus how many bytes must be alive at once (computed only now)."""
    bound = peak_live_bytes(
        np.concatenate([np.asarray(preplaced.starts, np.int64), starts]),
        np.concatenate([np.asarray(preplaced.ends, np.int64), ends]),
        np.concatenate([np.asarray(preplaced.sizes, np.int64), sizes]),
    )
    total = int(memory_sizes.sum())
    verdict = "more than" if bound > total else "within"
    holders = "the one memory holds" if len(memory_sizes) == 1 else "the memories hold in all"
    message = (
        f"{error}\n  peak-live lower bound: {format_bytes(bound)} ({bound:,} bytes) must be"
        f" alive at once, {verdict} the {format_bytes(total)} ({total:,} bytes) {holders}"
    )
    return PlanningError(message, error.tensor_index)


def plan_int64(
    algorithm: Algorithm,
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    memory_sizes: npt.NDArray[np.int64],
    memory_alignments: npt.NDArray[np.int64],
    blocked: npt.NDArray[np.uint64],
    allowed: int,
    preplaced: Preplaced,
    incoming_offsets: npt.NDArray[np.int64],
    keep_incoming_offset: bool,
    occupancy: Occupancy = "auto",
    budget_ms: float = DEFAULT_BUDGET_MS,
) -> PlanResult:
    """:func:`plan` on input already converted (int64 arrays, bit masks): the drop-in
    classes' way in. ``preplaced`` holds int64 arrays; ``incoming_offsets`` may be empty."""
    if occupancy not in OCCUPANCIES:
        raise ValueError(f"occupancy must be one of {OCCUPANCIES}, got {occupancy!r}")
    budget = check_budget_ms(budget_ms)
    try:
        mem_ids, offsets, bufsizes, memory_order, chosen, strategy = _core.plan(
            algorithm,
            starts,
            ends,
            sizes,
            memory_sizes,
            memory_alignments,
            blocked,
            allowed,
            np.asarray(preplaced.starts, dtype=np.int64),
            np.asarray(preplaced.ends, dtype=np.int64),
            np.asarray(preplaced.sizes, dtype=np.int64),
            np.asarray(preplaced.mem_ids, dtype=np.int64),
            np.asarray(preplaced.offsets, dtype=np.int64),
            incoming_offsets,
            keep_incoming_offset,
            occupancy,
            budget,
        )
    except _core.PlanningError as error:
        raise _failure(error, starts, ends, sizes, preplaced, memory_sizes) from None
    return PlanResult(mem_ids, offsets, bufsizes, tuple(memory_order), chosen, strategy or None)


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
    budget_ms: float = DEFAULT_BUDGET_MS,
) -> PlanResult:
    """Place tensors in a hierarchy of memories, exactly as upstream's Cadence placers do,
    or in less fast memory than they do (``algorithm="best"``).

    Tensor ``i`` lives over the inclusive node range ``[starts[i], ends[i]]`` (empty when
    start > end) and needs ``sizes[i]`` bytes. Memory id ``m`` (1 = fastest) has
    ``memory_sizes[m-1]`` bytes and alignment ``memory_alignments[m-1]`` (any positive
    value).

    ``algorithm``: ``"position"`` (the default, as upstream's ``mem_algo=0``) is upstream's
    PositionBasedGreedyWithHierarchy (first fit), ``"heuristic"`` its GreedyWithHeuristic
    (best fit, arXiv 2001.03288). ``"best"`` (``mem_algo=2``) tries both placers on
    several visit orders, then improves the best order (squeaky wheel), and keeps the plan
    with the fewest tensor bytes outside memory 1, then outside memories 1-2, and so on,
    then the smallest total bufsize; with one memory, the smallest bufsize. It is never
    worse than both upstream placers and deterministic; ``budget_ms`` caps its search
    (default 5 s: plans of a few thousand tensors take milliseconds and never reach it,
    graphs of tens of thousands use it up, and then the result depends on how far the
    search got), and ``PlanResult.strategy`` names the winner. Its candidates run in
    threads, with the GIL released, and give the same plan as one after another.
    ``blocked``: boolean (tensors, memories) matrix, True where a tensor must not go.
    ``allowed``: boolean per memory, False to keep every tensor out of it in this call.
    ``preplaced``: tensors already placed, which the new ones must avoid.
    ``incoming_offsets``: each tensor's ``mem_offset`` before the call, -1 for None. The
    heuristic keeps it when no gap fits (an upstream quirk); ``keep_incoming_offset=False``
    turns the quirk off.
    ``occupancy``: how each memory finds the tensors alive with the one being placed. Every
    choice gives the same plan, only the time differs. ``"scan"`` checks every tensor of
    the memory (the naive baseline, and the fastest for a few thousand tensors),
    ``"interval"`` lists the overlapping tensors from a time-bucketed index (long graphs
    with few tensors alive at once), ``"tree"`` keeps merged free space in a segment tree
    over time (thousands alive at once). ``"auto"``, the default, picks by a cost model
    from the tensor count and the number of lifetime-overlapping pairs;
    ``PlanResult.occupancy`` says which.

    Raises ValueError or TypeError for bad input and :class:`PlanningError` when a tensor
    fits nowhere; the error names the tensor, every memory tried, and the peak-live bound.
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    starts_array = as_int64("starts", starts)
    tensor_count = len(starts_array)
    memory_sizes_array = as_int64("memory_sizes", memory_sizes)
    memory_count = len(memory_sizes_array)
    if not 1 <= memory_count <= MAX_MEMORIES:
        raise ValueError(f"the number of memories must be in 1..{MAX_MEMORIES}, got {memory_count}")
    masks = (
        np.zeros(0, dtype=np.uint64)
        if blocked is None
        else blocked_masks(blocked, tensor_count, memory_count)
    )
    given = _NO_PREPLACED if preplaced is None else preplaced
    placed = Preplaced(
        *(as_int64(f"preplaced.{field}", getattr(given, field)) for field in Preplaced._fields)
    )
    return plan_int64(
        algorithm,
        starts_array,
        as_int64("ends", ends),
        as_int64("sizes", sizes),
        memory_sizes_array,
        as_int64("memory_alignments", memory_alignments),
        masks,
        allowed_mask(allowed, memory_count),
        placed,
        _EMPTY if incoming_offsets is None else as_int64("incoming_offsets", incoming_offsets),
        keep_incoming_offset,
        occupancy,
        budget_ms,
    )


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


class SharedObjectPacking(NamedTuple):
    """What the core's port of exir's ``greedy`` / ``BankedGreedy`` decided (arrays per
    tensor, in input order, except ``visit_order`` and the per-bank ``used``).

    ``error`` is "" on success, else the name of exir's failure (``csrc/core/shared_objects.h``,
    ``PackErrorKind``) with the tensor and value its message names."""

    error: str
    error_tensor: int
    error_value: int
    visit_order: npt.NDArray[np.int64]
    mem_ids: npt.NDArray[np.int64]
    objects: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]
    bufsizes: npt.NDArray[np.int64]
    final_alignment: npt.NDArray[np.int64]
    used: npt.NDArray[np.int64]


def pack_shared_objects(
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    sort_sizes: npt.NDArray[np.int64],
    nbytes: npt.NDArray[np.int64],
    mem_ids: npt.NDArray[np.int64],
    pinned: npt.NDArray[np.int64],
    bases: npt.NDArray[np.int64],
    base_offsets: npt.NDArray[np.int64],
    *,
    alignment: int,
    allow_overlapping_allocations: bool,
    extra_padding: int,
    input_sizes: npt.NDArray[np.int64],
    banks: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]] | None,
    occupancy: str,
) -> SharedObjectPacking:
    """exir's shared-object packing on int64 arrays: ``greedy`` when ``banks`` is None, else
    ``BankedGreedy`` over the banks' (mem_ids, sizes, alignments with 0 = the graph's), in
    preference order. ``bases[i]``: the index of tensor i's storage_base, -1 for none, -2
    for one outside the input. ``occupancy``: "auto", "index" (output-sensitive) or "scan" (exir's
    loops in C++). Raises ValueError for input exir could not have produced."""
    bank_arrays = (_EMPTY, _EMPTY, _EMPTY) if banks is None else banks
    return SharedObjectPacking(
        *_core.pack_shared_objects(
            starts,
            ends,
            sort_sizes,
            nbytes,
            mem_ids,
            pinned,
            bases,
            base_offsets,
            alignment,
            allow_overlapping_allocations,
            extra_padding,
            input_sizes,
            *bank_arrays,
            occupancy,
        )
    )


def check_storage_reuse(
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    mem_ids: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    mem_obj_ids: npt.NDArray[np.int64],
    parents: npt.NDArray[np.int64],
    *,
    allow_lifetime_and_storage_overlap: bool,
    occupancy: str,
) -> tuple[int, bool]:
    """exir's ``Verifier.verify_storage_reuse`` on int64 arrays: (pairs of tensors whose bytes
    overlap, whether a pair exir rejects exists). ``parents`` links tensors (nodes 0..n-1)
    and further storage bases to their storage_base, -1 at a root."""
    count, violation = _core.check_storage_reuse(
        starts,
        ends,
        mem_ids,
        offsets,
        sizes,
        mem_obj_ids,
        parents,
        allow_lifetime_and_storage_overlap,
        occupancy,
    )
    return int(count), bool(violation)
